/* src/ops/augment/cat/cat.c: the `cat` and `stack` operators (DALI's fn.cat, fn.stack) -- schemas,
 * parses, per-sample plans and CPU implementations: cat joins its inputs' samples along an existing
 * axis (`axis`, or `axis_name` of the layout; the other extents must match), stack along a new axis
 * inserted at `axis` (extent = the number of inputs; named axis_name when the inputs have a layout;
 * every extent must match). Up to 16 inputs of one dtype. Each input is one part of the plan
 * (written at its offset along the axis), shared with the GPU implementations (cat_gpu.cu).
 * Hot path: plan + copy per sample. */
#include <stdio.h>
#include <string.h>

#include "ops/common/nd_kinds.h"
#include "ops/op_impls.h"

/* Checks that every input has in[0]'s dtype and rank and, but for axis `skip` (-1: none), its
 * extents. */
static stk_status check_inputs(stk__tensor *const *inputs, int n, int skip, char *err, size_t err_size) {
  const stk__tensor *a = inputs[0];
  for (int k = 1; k < n; k++) {
    const stk__tensor *b = inputs[k];
    int same = b->dtype == a->dtype && b->ndim == a->ndim;
    for (int d = 0; same && d < a->ndim; d++) same = d == skip || b->shape[d] == a->shape[d];
    if (!same) {
      stk__errorf(err, err_size, "input %d differs from input 0 in dtype, rank or an extent that must match", k);
      return STK_EINVAL;
    }
  }
  return n > STK__ND_PARTS ? (stk__errorf(err, err_size, "at most %d inputs", STK__ND_PARTS), STK_EINVAL) : STK_OK;
}

/* The axis: axis_name's position in the layout when given, else `axis` (negative: from the back)
 * in [0, ndim). */
static stk_status pick_axis(const stk__op *op, const char *layout, int ndim, int *axis, char *err, size_t err_size) {
  const char *name = stk__arg_string(op, "axis_name");
  int64_t a = stk__arg_int(op, "axis");
  if (name[0]) a = stk__nd_axis(layout, name[0]);
  else if (a < 0) a += ndim;
  if (a < 0 || a >= ndim || strlen(name) > 1) {
    stk__errorf(err, err_size, "the axis (axis=%lld, axis_name=\"%s\") is not one of the %d axes (layout \"%s\")",
                (long long)stk__arg_int(op, "axis"), name, ndim, layout);
    return STK_EINVAL;
  }
  *axis = (int)a;
  return STK_OK;
}

static stk_status cat_plan(const stk__op *op, const void *params, stk__tensor *const *inputs, int num_inputs,
                           stk__nd_plan *plan, char *err, size_t err_size) {
  (void)params;
  const stk__tensor *in = inputs[0];
  int axis;
  stk_status s = pick_axis(op, in->layout, in->ndim, &axis, err, err_size);
  if (s == STK_OK) s = check_inputs(inputs, num_inputs, axis, err, err_size);
  if (s != STK_OK) return s;
  stk__nd_plan_identity(plan, in);
  plan->shape[axis] = 0;
  for (int k = 0; k < num_inputs; k++) plan->shape[axis] += inputs[k]->shape[axis];
  int64_t out_strides[STK__ND_DIMS], offset = 0;
  stk__nd_packed_strides(in->ndim, plan->shape, out_strides);
  plan->parts = num_inputs;
  for (int k = 0; k < num_inputs; k++) {
    stk__nd_copy *c = &plan->part[k];
    stk__nd_identity(c, in->ndim, inputs[k]->shape, (int)stk_dtype_size(in->dtype));
    c->src = inputs[k]->data;
    memcpy(c->dst_stride, out_strides, sizeof out_strides);
    c->dst_offset = offset * out_strides[axis];
    offset += inputs[k]->shape[axis];
  }
  return STK_OK;
}

static stk_status stack_plan(const stk__op *op, const void *params, stk__tensor *const *inputs, int num_inputs,
                             stk__nd_plan *plan, char *err, size_t err_size) {
  (void)params;
  const stk__tensor *in = inputs[0];
  const int ndim = in->ndim + 1;
  int64_t axis = stk__arg_int(op, "axis");
  if (axis < 0) axis += ndim;
  if (axis < 0 || axis >= ndim || ndim > STK__ND_DIMS) {
    stk__errorf(err, err_size, "argument 'axis' (%lld) is out of range for a %d-D output",
                (long long)stk__arg_int(op, "axis"), ndim);
    return STK_EINVAL;
  }
  stk_status s = check_inputs(inputs, num_inputs, -1, err, err_size);
  if (s != STK_OK) return s;
  const char *name = stk__arg_string(op, "axis_name");
  const int has_layout = in->layout[0] && (int)strlen(in->layout) == in->ndim && name[0];
  stk__nd_plan_identity(plan, in);
  int64_t in_shape[STK__ND_DIMS], in_strides[STK__ND_DIMS];
  stk__nd_packed_strides(in->ndim, in->shape, in_strides);
  for (int d = 0, src = 0; d < ndim; d++) {
    const int new_axis = d == axis;
    plan->shape[d] = new_axis ? num_inputs : in->shape[src];
    in_shape[d] = new_axis ? 1 : in->shape[src];
    plan->layout[d] = has_layout ? (new_axis ? name[0] : in->layout[src]) : '\0';
    src += !new_axis;
  }
  plan->ndim = ndim;
  plan->layout[has_layout ? ndim : 0] = '\0';
  int64_t out_strides[STK__ND_DIMS];
  stk__nd_packed_strides(ndim, plan->shape, out_strides);
  plan->parts = num_inputs;
  for (int k = 0; k < num_inputs; k++) {
    stk__nd_copy *c = &plan->part[k];
    stk__nd_identity(c, ndim, in_shape, (int)stk_dtype_size(in->dtype));
    for (int d = 0, src = 0; d < ndim; d++) {
      c->src_stride[d] = d == axis ? 0 : in_strides[src];
      src += d != axis;
    }
    c->src = inputs[k]->data;
    memcpy(c->dst_stride, out_strides, sizeof out_strides);
    c->dst_offset = k * out_strides[axis];
  }
  return STK_OK;
}

const stk__nd_kind stk__nd_kind_cat = {NULL, cat_plan, 0};
const stk__nd_kind stk__nd_kind_stack = {NULL, stack_plan, 0};

static stk_status cat_init(stk__op *op, char *err, size_t err_size) {
  return stk__nd_cpu_init(op, &stk__nd_kind_cat, err, err_size);
}
static stk_status stack_init(stk__op *op, char *err, size_t err_size) {
  return stk__nd_cpu_init(op, &stk__nd_kind_stack, err, err_size);
}

const stk__op_impl stk__cpu_impl_cat = {
    .init = cat_init, .destroy = stk__nd_cpu_destroy, .run_sample = stk__nd_run_sample};
const stk__op_impl stk__cpu_impl_stack = {
    .init = stack_init, .destroy = stk__nd_cpu_destroy, .run_sample = stk__nd_run_sample};

static const stk__arg_schema cat_args[] = {
    {"axis", STK_ARG_INT, "0", 0, 0, "the axis to join along (negative: from the back)"},
    {"axis_name", STK_ARG_STRING, "", 0, 0, "the axis to join along, as a layout letter (wins over axis)"},
};
static const stk__arg_schema stack_args[] = {
    {"axis", STK_ARG_INT, "0", 0, 0, "position of the new axis in the output (negative: from the back)"},
    {"axis_name", STK_ARG_STRING, "", 0, 0, "layout letter of the new axis"},
};

const stk__op_schema stk__op_cat = {
    .name = "cat",
    .doc = "Joins the inputs' samples along an existing axis (up to 16 inputs of one dtype).",
    .min_inputs = 1,
    .max_inputs = STK__ND_PARTS,
    .num_outputs = 1,
    .devices = STK_OPDEV_CPU | STK_OPDEV_GPU,
    .args = cat_args,
    .num_args = (int)(sizeof cat_args / sizeof cat_args[0]),
    .array_outputs = 1u << 0,
};

const stk__op_schema stk__op_stack = {
    .name = "stack",
    .doc = "Stacks the inputs' samples along a new axis (up to 16 inputs of one dtype and shape).",
    .min_inputs = 1,
    .max_inputs = STK__ND_PARTS,
    .num_outputs = 1,
    .devices = STK_OPDEV_CPU | STK_OPDEV_GPU,
    .args = stack_args,
    .num_args = (int)(sizeof stack_args / sizeof stack_args[0]),
    .array_outputs = 1u << 0,
};
