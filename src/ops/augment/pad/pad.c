/* src/ops/augment/pad/pad.c: the `pad` operator (DALI's fn.pad) -- schema, parse, per-sample plan
 * and CPU implementation: extends each sample at the end of the axes named by axis_names or axes
 * (default: all) to `shape` (an extent per axis; -1 or absent: the sample's own) rounded up to a
 * multiple of `align`, the new elements fill_value. Any dtype. The plan is per sample (the CPU runs
 * samples one at a time), so an axis without a shape keeps the sample's extent: DALI pads it to the
 * batch's largest (docs/operators-geometry.md). Shared with the GPU implementation (pad_gpu.cu).
 * Hot path: plan + copy per sample. */
#include <stdio.h>

#include "ops/common/nd_kinds.h"
#include "ops/op_impls.h"

typedef struct pad_params {
  int64_t shape[STK__ND_DIMS], align[STK__ND_DIMS];
  size_t shape_count, align_count;
  double fill;
} pad_params;

static stk_status pad_parse(const stk__op *op, void *params, char *err, size_t err_size) {
  pad_params *p = params;
  const int64_t *shape = stk__arg_int_list(op, "shape", &p->shape_count);
  const int64_t *align = stk__arg_int_list(op, "align", &p->align_count);
  if (p->shape_count > STK__ND_DIMS || p->align_count > STK__ND_DIMS) {
    stk__errorf(err, err_size, "arguments 'shape' and 'align' take at most %d values", STK__ND_DIMS);
    return STK_EINVAL;
  }
  for (size_t k = 0; k < p->shape_count; k++) p->shape[k] = shape[k];
  for (size_t k = 0; k < p->align_count; k++) {
    if (align[k] < 1) {
      stk__errorf(err, err_size, "argument 'align' values must be >= 1, got %lld", (long long)align[k]);
      return STK_EINVAL;
    }
    p->align[k] = align[k];
  }
  p->fill = stk__arg_float(op, "fill_value");
  return STK_OK;
}

static stk_status pad_plan(const stk__op *op, const void *params, stk__tensor *const *inputs, int num_inputs,
                           stk__nd_plan *plan, char *err, size_t err_size) {
  (void)num_inputs;
  const pad_params *p = params;
  const stk__tensor *in = inputs[0];
  stk__nd_plan_identity(plan, in);
  int axes[STK__ND_DIMS], n = 0;
  stk_status s = stk__nd_pick_axes(op, stk__nd_layout(in), in->ndim, axes, &n, err, err_size);
  if (s != STK_OK) return s;
  if (n == 0)
    for (n = 0; n < in->ndim; n++) axes[n] = n;
  if ((p->shape_count > 1 && (int)p->shape_count != n) || (p->align_count > 1 && (int)p->align_count != n)) {
    stk__errorf(err, err_size, "'shape' has %zu and 'align' %zu values but %d axes are padded", p->shape_count,
                p->align_count, n);
    return STK_EINVAL;
  }
  for (int k = 0; k < n; k++) {
    const int ax = axes[k];
    int64_t extent = in->shape[ax];
    int64_t target = p->shape_count ? p->shape[p->shape_count == 1 ? 0 : k] : -1;
    if (target >= 0 && target < extent) {
      stk__errorf(err, err_size, "argument 'shape' asks for %lld along axis %d but the sample has %lld there",
                  (long long)target, ax, (long long)extent);
      return STK_EINVAL;
    }
    if (target < 0) target = extent;
    int64_t align = p->align_count ? p->align[p->align_count == 1 ? 0 : k] : 1;
    target = (target + align - 1) / align * align;
    s = stk__nd_plan_window(plan, ax, 0, target, STK__ND_OOB_PAD, err, err_size);
    if (s != STK_OK) return s;
  }
  return stk__nd_plan_fill(plan, &p->fill, 1, err, err_size);
}

const stk__nd_kind stk__nd_kind_pad = {pad_parse, pad_plan, sizeof(pad_params)};

static stk_status pad_init(stk__op *op, char *err, size_t err_size) {
  return stk__nd_cpu_init(op, &stk__nd_kind_pad, err, err_size);
}

const stk__op_impl stk__cpu_impl_pad = {
    .init = pad_init, .destroy = stk__nd_cpu_destroy, .run_sample = stk__nd_run_sample};

static const stk__arg_schema pad_args[] = {
    {"axes", STK_ARG_INT_LIST, "[]", 0, 0, "padded axes as indices (none and no axis_names: all)"},
    {"axis_names", STK_ARG_STRING, "", 0, 0, "padded axes as layout letters (wins over axes)"},
    {"shape", STK_ARG_INT_LIST, "[]", 0, 0, "output extent per padded axis (-1: the sample's own)"},
    {"align", STK_ARG_INT_LIST, "[]", 0, 0, "round the padded extents up to a multiple of this (one value: all)"},
    {"fill_value", STK_ARG_FLOAT, "0.0", 0, 0, "value of the new elements"},
};

const stk__op_schema stk__op_pad = {
    .name = "pad",
    .doc =
        "Pads each sample at the end of the given axes to `shape`, rounded up to `align`, with fill_value; any "
        "dtype. Without shape an axis keeps the sample's extent (then aligned).",
    .min_inputs = 1,
    .max_inputs = 1,
    .num_outputs = 1,
    .devices = STK_OPDEV_CPU | STK_OPDEV_GPU,
    .args = pad_args,
    .num_args = (int)(sizeof pad_args / sizeof pad_args[0]),
    .array_outputs = 1u << 0,
};
