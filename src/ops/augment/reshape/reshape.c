/* src/ops/augment/reshape/reshape.c: the `reshape` operator (DALI's fn.reshape) -- schema, parse,
 * per-sample plan and CPU implementation: the same elements in the same order under a new shape --
 * `shape` (one extent may be -1: inferred) or `rel_shape` (extent d = rel_shape[d] * the input's,
 * rounded; -1 inferred) -- and/or a new `layout` (kept when the rank is, else none). The element
 * count must not change. Both may be bound per sample. Any dtype. The plan (one flat copy) is
 * shared with the GPU implementation (reshape_gpu.cu). Hot path: plan + copy per sample. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "ops/common/nd_kinds.h"
#include "ops/op_impls.h"

typedef struct reshape_params {
  char layout[8];
  int layout_set;
} reshape_params;

static stk_status reshape_parse(const stk__op *op, void *params, char *err, size_t err_size) {
  reshape_params *p = params;
  if (stk__arg_is_set(op, "shape") && stk__arg_is_set(op, "rel_shape")) {
    stk__errorf(err, err_size, "give either 'shape' or 'rel_shape', not both");
    return STK_EINVAL;
  }
  const char *layout = stk__arg_string(op, "layout");
  if (strlen(layout) > STK__ND_DIMS) {
    stk__errorf(err, err_size, "argument 'layout' has more than %d letters", STK__ND_DIMS);
    return STK_EINVAL;
  }
  snprintf(p->layout, sizeof p->layout, "%s", layout);
  p->layout_set = stk__arg_is_set(op, "layout");
  return STK_OK;
}

/* The output extents: values[n] with at most one -1, inferred from the element count. */
static stk_status infer(const double *values, int n, const stk__tensor *in, int relative, int64_t *out, char *err,
                        size_t err_size) {
  int64_t known = 1, total = (int64_t)stk__tensor_numel(in);
  int unknown = -1;
  for (int d = 0; d < n; d++) {
    if (values[d] == -1) {
      if (unknown >= 0) {
        stk__errorf(err, err_size, "at most one extent may be -1");
        return STK_EINVAL;
      }
      unknown = d;
      continue;
    }
    double v = relative ? values[d] * (double)(d < in->ndim ? in->shape[d] : 1) : values[d];
    if (!(v >= 0) || v > 9e15) {
      stk__errorf(err, err_size, "extent %d of the new shape (%g) is not a size", d, v);
      return STK_EINVAL;
    }
    out[d] = (int64_t)llround(v);
    known *= out[d];
  }
  if (unknown >= 0) out[unknown] = known > 0 ? total / known : 0;
  int64_t count = 1;
  for (int d = 0; d < n; d++) count *= out[d];
  if (count != total) {
    stk__errorf(err, err_size, "the new shape holds %lld elements but the sample has %lld", (long long)count,
                (long long)total);
    return STK_EINVAL;
  }
  return STK_OK;
}

static stk_status reshape_plan(const stk__op *op, const void *params, stk__tensor *const *inputs, int num_inputs,
                               stk__nd_plan *plan, char *err, size_t err_size) {
  (void)num_inputs;
  const reshape_params *p = params;
  const stk__tensor *in = inputs[0];
  stk__nd_plan_identity(plan, in);
  double values[STK__ND_DIMS];
  int n = 0, relative = 0;
  stk_status s = stk__nd_arg_list(op, inputs, "shape", values, STK__ND_DIMS, &n, err, err_size);
  if (s == STK_OK && n == 0) {
    s = stk__nd_arg_list(op, inputs, "rel_shape", values, STK__ND_DIMS, &n, err, err_size);
    relative = n > 0;
  }
  if (s != STK_OK) return s;
  if (n > 0) {
    s = infer(values, n, in, relative, plan->shape, err, err_size);
    if (s != STK_OK) return s;
    if (n != in->ndim) plan->layout[0] = '\0';
    plan->ndim = n;
  }
  if (p->layout_set) {
    if (p->layout[0] && (int)strlen(p->layout) != plan->ndim) {
      stk__errorf(err, err_size, "argument 'layout' (\"%s\") does not have one letter per axis (%d)", p->layout,
                  plan->ndim);
      return STK_EINVAL;
    }
    snprintf(plan->layout, sizeof plan->layout, "%s", p->layout);
  }
  const int64_t count = (int64_t)stk__tensor_numel(in);
  stk__nd_identity(&plan->part[0], 1, &count, (int)stk_dtype_size(in->dtype)); /* the bytes, in order */
  plan->part[0].src = in->data;
  return STK_OK;
}

const stk__nd_kind stk__nd_kind_reshape = {reshape_parse, reshape_plan, sizeof(reshape_params)};

static stk_status reshape_init(stk__op *op, char *err, size_t err_size) {
  return stk__nd_cpu_init(op, &stk__nd_kind_reshape, err, err_size);
}

const stk__op_impl stk__cpu_impl_reshape = {
    .init = reshape_init, .destroy = stk__nd_cpu_destroy, .run_sample = stk__nd_run_sample};

static const stk__arg_schema reshape_args[] = {
    {"shape", STK_ARG_INT_LIST, NULL, 0, 1, "the new extents (one may be -1: inferred); per sample"},
    {"rel_shape", STK_ARG_FLOAT_LIST, NULL, 0, 1, "the new extents relative to the input's (one may be -1)"},
    {"layout", STK_ARG_STRING, "", 0, 0, "the new layout (default: the input's when the rank is kept, else none)"},
};

const stk__op_schema stk__op_reshape = {
    .name = "reshape",
    .doc = "Gives each sample a new shape (shape or rel_shape; same element count) and/or layout; any dtype.",
    .min_inputs = 1,
    .max_inputs = 1,
    .num_outputs = 1,
    .devices = STK_OPDEV_CPU | STK_OPDEV_GPU,
    .args = reshape_args,
    .num_args = (int)(sizeof reshape_args / sizeof reshape_args[0]),
    .array_outputs = 1u << 0,
};
