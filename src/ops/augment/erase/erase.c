/* src/ops/augment/erase/erase.c: the `erase` operator (DALI's fn.erase) -- schema, parse,
 * per-sample plan and CPU implementation: sets regions of each sample to fill_value (one, or one
 * per channel). A region spans the axes named by axis_names (default "HW") or axes: `anchor` and
 * `shape` hold one value per axis for each region, back to back (absolute, or relative to the
 * extent with normalized / normalized_anchor / normalized_shape; centered_anchor: the anchor is
 * the region's centre); bounds are rounded to the nearest element and clipped to the sample; the
 * other axes are covered whole. Any dtype; anchor and shape may be bound per sample. The plan
 * (a copy with erase boxes) is shared with the GPU implementation (erase_gpu.cu). Hot path: plan +
 * copy per sample. */
#include <math.h>

#include "ops/common/nd_kinds.h"
#include "ops/op_impls.h"

typedef struct erase_params {
  int normalized_anchor, normalized_shape, centered;
  size_t fill_count;
  double fill[STK__ND_FILLS];
} erase_params;

static stk_status erase_parse(const stk__op *op, void *params, char *err, size_t err_size) {
  erase_params *p = params;
  const int normalized = stk__arg_bool(op, "normalized");
  p->normalized_anchor = normalized || stk__arg_bool(op, "normalized_anchor");
  p->normalized_shape = normalized || stk__arg_bool(op, "normalized_shape");
  p->centered = stk__arg_bool(op, "centered_anchor");
  const double *fill = stk__arg_float_list(op, "fill_value", &p->fill_count);
  if (p->fill_count > STK__ND_FILLS) {
    stk__errorf(err, err_size, "argument 'fill_value' takes at most %d values", STK__ND_FILLS);
    return STK_EINVAL;
  }
  for (size_t k = 0; k < p->fill_count; k++) p->fill[k] = fill[k];
  return STK_OK;
}

static stk_status erase_plan(const stk__op *op, const void *params, stk__tensor *const *inputs, int num_inputs,
                             stk__nd_plan *plan, char *err, size_t err_size) {
  (void)num_inputs;
  const erase_params *p = params;
  const stk__tensor *in = inputs[0];
  stk__nd_plan_identity(plan, in);
  int axes[STK__ND_DIMS], n = 0;
  stk_status s = stk__nd_pick_axes(op, stk__nd_layout(in), in->ndim, axes, &n, err, err_size);
  if (s != STK_OK) return s;
  double anchor[STK__ND_BOXES * STK__ND_DIMS], shape[STK__ND_BOXES * STK__ND_DIMS];
  int na = 0, ns = 0;
  s = stk__nd_arg_list(op, inputs, "anchor", anchor, STK__ND_BOXES * STK__ND_DIMS, &na, err, err_size);
  if (s == STK_OK) s = stk__nd_arg_list(op, inputs, "shape", shape, STK__ND_BOXES * STK__ND_DIMS, &ns, err, err_size);
  if (s != STK_OK) return s;
  if (n == 0 || na != ns || na % n != 0) {
    stk__errorf(err, err_size, "'anchor' (%d values) and 'shape' (%d) need the same count, a multiple of the %d axes",
                na, ns, n);
    return STK_EINVAL;
  }
  plan->num_boxes = na / n;
  for (int b = 0; b < plan->num_boxes; b++) {
    int64_t *box = plan->boxes + (size_t)b * in->ndim * 2;
    for (int d = 0; d < in->ndim; d++) box[2 * d] = 0, box[2 * d + 1] = in->shape[d];
    for (int k = 0; k < n; k++) {
      const double extent = (double)in->shape[axes[k]];
      double size = shape[b * n + k] * (p->normalized_shape ? extent : 1.0);
      double lo = anchor[b * n + k] * (p->normalized_anchor ? extent : 1.0);
      if (p->centered) lo -= size / 2;
      if (!isfinite(lo) || !isfinite(size) || size < 0) {
        stk__errorf(err, err_size, "region %d: anchor and shape must be finite and the shape >= 0", b);
        return STK_EINVAL;
      }
      box[2 * axes[k]] = (int64_t)floor(lo + 0.5);
      box[2 * axes[k] + 1] = (int64_t)floor(lo + size + 0.5);
    }
  }
  return stk__nd_plan_fill(plan, p->fill, p->fill_count, err, err_size);
}

const stk__nd_kind stk__nd_kind_erase = {erase_parse, erase_plan, sizeof(erase_params)};

static stk_status erase_init(stk__op *op, char *err, size_t err_size) {
  return stk__nd_cpu_init(op, &stk__nd_kind_erase, err, err_size);
}

const stk__op_impl stk__cpu_impl_erase = {
    .init = erase_init, .destroy = stk__nd_cpu_destroy, .run_sample = stk__nd_run_sample};

static const stk__arg_schema erase_args[] = {
    {"anchor", STK_ARG_FLOAT_LIST, "[]", 0, 1, "region starts, one value per axis per region; per sample"},
    {"shape", STK_ARG_FLOAT_LIST, "[]", 0, 1, "region extents, one value per axis per region; per sample"},
    {"axes", STK_ARG_INT_LIST, "[1, 0]", 0, 0, "the region axes as indices (used when axis_names is not given)"},
    {"axis_names", STK_ARG_STRING, "HW", 0, 0, "the region axes as layout letters"},
    {"fill_value", STK_ARG_FLOAT_LIST, "[0.0]", 0, 0, "value of the erased elements (one, or one per channel)"},
    {"centered_anchor", STK_ARG_BOOL, "False", 0, 0, "the anchor is the region's centre"},
    {"normalized", STK_ARG_BOOL, "False", 0, 0, "anchor and shape are relative to the extents"},
    {"normalized_anchor", STK_ARG_BOOL, "False", 0, 0, "the anchor is relative to the extents"},
    {"normalized_shape", STK_ARG_BOOL, "False", 0, 0, "the shape is relative to the extents"},
};

const stk__op_schema stk__op_erase = {
    .name = "erase",
    .doc =
        "Sets regions of each sample (anchor/shape per region along axis_names or axes) to fill_value; any "
        "dtype.",
    .min_inputs = 1,
    .max_inputs = 1,
    .num_outputs = 1,
    .devices = STK_OPDEV_CPU | STK_OPDEV_GPU,
    .args = erase_args,
    .num_args = (int)(sizeof erase_args / sizeof erase_args[0]),
    .array_outputs = 1u << 0,
};
