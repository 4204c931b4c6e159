/* src/ops/augment/transpose/transpose.c: the `transpose` operator (DALI's fn.transpose) -- schema,
 * parse, per-sample plan and CPU implementation: output axis d is input axis perm[d] (any dtype and
 * rank); the layout is permuted the same way (transpose_layout; else copied) unless output_layout
 * names it. The
 * plan is shared with the GPU implementation (transpose_gpu.cu). Hot path: plan + copy per sample. */
#include <stdio.h>
#include <string.h>

#include "ops/common/nd_kinds.h"
#include "ops/op_impls.h"

typedef struct transpose_params {
  int perm[STK__ND_DIMS];
  int ndim;
  int transpose_layout;
  char output_layout[8];
} transpose_params;

static stk_status transpose_parse(const stk__op *op, void *params, char *err, size_t err_size) {
  transpose_params *p = params;
  size_t n = 0;
  const int64_t *perm = stk__arg_int_list(op, "perm", &n);
  unsigned seen = 0;
  for (size_t d = 0; d < n; d++) {
    if (n > STK__ND_DIMS || perm[d] < 0 || perm[d] >= (int64_t)n || (seen >> perm[d]) & 1u) {
      stk__errorf(err, err_size, "argument 'perm' must be a permutation of 0..%zu (at most %d axes)", n - 1,
                  STK__ND_DIMS);
      return STK_EINVAL;
    }
    seen |= 1u << perm[d];
    p->perm[d] = (int)perm[d];
  }
  p->ndim = (int)n;
  p->transpose_layout = stk__arg_bool(op, "transpose_layout");
  const char *layout = stk__arg_string(op, "output_layout");
  if (strlen(layout) >= sizeof p->output_layout) {
    stk__errorf(err, err_size, "argument 'output_layout' is longer than %zu letters", sizeof p->output_layout - 1);
    return STK_EINVAL;
  }
  snprintf(p->output_layout, sizeof p->output_layout, "%s", layout);
  return STK_OK;
}

static stk_status transpose_plan(const stk__op *op, const void *params, stk__tensor *const *inputs, int num_inputs,
                                 stk__nd_plan *plan, char *err, size_t err_size) {
  (void)op;
  (void)num_inputs;
  const transpose_params *p = params;
  const stk__tensor *in = inputs[0];
  if (in->ndim != p->ndim) {
    stk__errorf(err, err_size, "argument 'perm' has %d axes but the sample has %d", p->ndim, in->ndim);
    return STK_EINVAL;
  }
  stk__nd_plan_identity(plan, in);
  stk__nd_copy *c = &plan->part[0];
  int64_t in_strides[STK__ND_DIMS];
  stk__nd_packed_strides(in->ndim, in->shape, in_strides);
  for (int d = 0; d < in->ndim; d++) {
    plan->shape[d] = c->shape[d] = c->src_extent[d] = in->shape[p->perm[d]];
    c->src_stride[d] = in_strides[p->perm[d]];
  }
  stk__nd_packed_strides(in->ndim, plan->shape, c->dst_stride);
  if (p->output_layout[0]) {
    snprintf(plan->layout, sizeof plan->layout, "%s", p->output_layout);
  } else if (p->transpose_layout && (int)strlen(in->layout) == in->ndim) {
    for (int d = 0; d < in->ndim; d++) plan->layout[d] = in->layout[p->perm[d]];
    plan->layout[in->ndim] = '\0';
  } /* else the input's layout, copied */
  return STK_OK;
}

const stk__nd_kind stk__nd_kind_transpose = {transpose_parse, transpose_plan, sizeof(transpose_params)};

static stk_status transpose_init(stk__op *op, char *err, size_t err_size) {
  return stk__nd_cpu_init(op, &stk__nd_kind_transpose, err, err_size);
}

const stk__op_impl stk__cpu_impl_transpose = {
    .init = transpose_init, .destroy = stk__nd_cpu_destroy, .run_sample = stk__nd_run_sample};

static const stk__arg_schema transpose_args[] = {
    {"perm", STK_ARG_INT_LIST, NULL, 1, 0, "output axis d is input axis perm[d]"},
    {"transpose_layout", STK_ARG_BOOL, "True", 0, 0,
     "permute the layout letters too (else the input layout is copied)"},
    {"output_layout", STK_ARG_STRING, "", 0, 0, "the output's layout (overrides transpose_layout)"},
};

const stk__op_schema stk__op_transpose = {
    .name = "transpose",
    .doc = "Permutes the axes of each sample (output axis d = input axis perm[d]); any dtype and rank.",
    .min_inputs = 1,
    .max_inputs = 1,
    .num_outputs = 1,
    .devices = STK_OPDEV_CPU | STK_OPDEV_GPU,
    .args = transpose_args,
    .num_args = (int)(sizeof transpose_args / sizeof transpose_args[0]),
    .array_outputs = 1u << 0,
};
