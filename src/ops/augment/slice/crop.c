/* src/ops/augment/slice/crop.c: the `crop` operator (DALI's fn.crop) -- schema, parse, per-sample
 * plan and CPU implementation: a window of crop_w x crop_h (x crop_d) elements along the layout's
 * W, H (and D) axes of each sample (other axes whole: channels, frames), placed at
 * crop_pos_{x,y,z} in [0, 1] as DALI places it (start = round(pos * (extent - crop))), and
 * out_of_bounds_policy for a window larger than the input (error / pad with fill_values / trim).
 * Any dtype. Every size and position may be bound per sample. The plan is shared with the GPU
 * implementation (slice_gpu.cu). Hot path: plan + copy per sample. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "ops/common/nd_kinds.h"
#include "ops/op_impls.h"

typedef struct crop_params {
  stk__nd_oob oob;
  int truncate; /* rounding="truncate" */
  size_t fill_count;
  double fill[STK__ND_FILLS];
} crop_params;

static stk_status crop_parse(const stk__op *op, void *params, char *err, size_t err_size) {
  crop_params *p = params;
  size_t crop_count = 0;
  stk__arg_float_list(op, "crop", &crop_count);
  if (stk__arg_is_set(op, "crop") &&
      (stk__arg_is_set(op, "crop_h") || stk__arg_is_set(op, "crop_w") || stk__arg_is_set(op, "crop_d"))) {
    stk__errorf(err, err_size, "give either 'crop' or 'crop_h'/'crop_w'/'crop_d', not both");
    return STK_EINVAL;
  }
  const char *rounding = stk__arg_string(op, "rounding");
  if (strcmp(rounding, "round") != 0 && strcmp(rounding, "truncate") != 0) {
    stk__errorf(err, err_size, "argument 'rounding' expects \"round\" or \"truncate\", got \"%s\"", rounding);
    return STK_EINVAL;
  }
  p->truncate = strcmp(rounding, "truncate") == 0;
  const double *fill = stk__arg_float_list(op, "fill_values", &p->fill_count);
  if (p->fill_count > STK__ND_FILLS) {
    stk__errorf(err, err_size, "argument 'fill_values' takes at most %d values", STK__ND_FILLS);
    return STK_EINVAL;
  }
  for (size_t k = 0; k < p->fill_count; k++) p->fill[k] = fill[k];
  return stk__nd_oob_parse(op, &p->oob, err, err_size);
}

/* The crop sizes for D, H, W (0 = whole extent): crop=[H, W] or [D, H, W] (one value: square), or
 * crop_d/crop_h/crop_w. */
static stk_status crop_sizes(const stk__op *op, stk__tensor *const *inputs, double size[3], char *err,
                             size_t err_size) {
  double list[3];
  int n = 0;
  stk_status s = stk__nd_arg_list(op, inputs, "crop", list, 3, &n, err, err_size);
  if (s != STK_OK) return s;
  size[0] = size[1] = size[2] = 0;
  if (n == 1) size[1] = size[2] = list[0];
  else if (n == 2) size[1] = list[0], size[2] = list[1];
  else if (n == 3) size[0] = list[0], size[1] = list[1], size[2] = list[2];
  if (n > 0) return STK_OK;
  s = stk__nd_arg_scalar(op, inputs, "crop_d", &size[0], err, err_size);
  if (s == STK_OK) s = stk__nd_arg_scalar(op, inputs, "crop_h", &size[1], err, err_size);
  if (s == STK_OK) s = stk__nd_arg_scalar(op, inputs, "crop_w", &size[2], err, err_size);
  return s;
}

static stk_status crop_plan(const stk__op *op, const void *params, stk__tensor *const *inputs, int num_inputs,
                            stk__nd_plan *plan, char *err, size_t err_size) {
  (void)num_inputs;
  const crop_params *p = params;
  const stk__tensor *in = inputs[0];
  stk__nd_plan_identity(plan, in);
  const char *layout = stk__nd_layout(in);
  snprintf(plan->layout, sizeof plan->layout, "%s", in->layout);
  double size[3];
  stk_status s = crop_sizes(op, inputs, size, err, err_size);
  static const char letters[3] = {'D', 'H', 'W'};
  static const char *const pos_args[3] = {"crop_pos_z", "crop_pos_y", "crop_pos_x"};
  for (int k = 0; s == STK_OK && k < 3; k++) {
    const int ax = stk__nd_axis(layout, letters[k]);
    if (ax < 0 || ax >= in->ndim || size[k] <= 0) continue;
    double pos = 0.5;
    s = stk__nd_arg_scalar(op, inputs, pos_args[k], &pos, err, err_size);
    if (s == STK_OK && (pos < 0 || pos > 1 || !isfinite(size[k]))) {
      stk__errorf(err, err_size, "argument '%s' must lie in [0, 1], got %g", pos_args[k], pos);
      s = STK_EINVAL;
    }
    if (s != STK_OK) break;
    const int64_t crop = (int64_t)llround(size[k]), extent = in->shape[ax];
    const double at = pos * (double)(extent - crop);
    const int64_t start = p->truncate ? (int64_t)at : (int64_t)floor(at + 0.5);
    s = stk__nd_plan_window(plan, ax, start, crop, p->oob, err, err_size);
  }
  if (s == STK_OK) s = stk__nd_plan_fill(plan, p->fill, p->fill_count, err, err_size);
  return s;
}

const stk__nd_kind stk__nd_kind_crop = {crop_parse, crop_plan, sizeof(crop_params)};

static stk_status crop_init(stk__op *op, char *err, size_t err_size) {
  return stk__nd_cpu_init(op, &stk__nd_kind_crop, err, err_size);
}

const stk__op_impl stk__cpu_impl_crop = {
    .init = crop_init, .destroy = stk__nd_cpu_destroy, .run_sample = stk__nd_run_sample};

static const stk__arg_schema crop_args[] = {
    {"crop", STK_ARG_FLOAT_LIST, NULL, 0, 1, "window size [H, W] or [D, H, W] (one value: square); per sample"},
    {"crop_h", STK_ARG_FLOAT, "0", 0, 1, "window height (0: whole); per sample"},
    {"crop_w", STK_ARG_FLOAT, "0", 0, 1, "window width (0: whole); per sample"},
    {"crop_d", STK_ARG_FLOAT, "0", 0, 1, "window depth of volumes (0: whole); per sample"},
    {"crop_pos_x", STK_ARG_FLOAT, "0.5", 0, 1, "horizontal position in [0, 1]: x = round(pos * (W - crop_w))"},
    {"crop_pos_y", STK_ARG_FLOAT, "0.5", 0, 1, "vertical position in [0, 1]: y = round(pos * (H - crop_h))"},
    {"crop_pos_z", STK_ARG_FLOAT, "0.5", 0, 1, "depth position in [0, 1]: z = round(pos * (D - crop_d))"},
    {"rounding", STK_ARG_STRING, "round", 0, 0, "round | truncate: how the window start is rounded"},
    {"out_of_bounds_policy", STK_ARG_STRING, "error", 0, 0,
     "error | pad | trim_to_shape: what a window reaching outside the input does"},
    {"fill_values", STK_ARG_FLOAT_LIST, "[0.0]", 0, 0, "the pad policy's value (one, or one per channel)"},
};

const stk__op_schema stk__op_crop = {
    .name = "crop",
    .doc =
        "Crops a window along the W, H (and D) axes of each sample (HWC, CHW, FHWC, DHWC, ...; any dtype), placed "
        "at crop_pos_x/y/z; out_of_bounds_policy says what a window outside the input does.",
    .min_inputs = 1,
    .max_inputs = 1,
    .num_outputs = 1,
    .devices = STK_OPDEV_CPU | STK_OPDEV_GPU,
    .args = crop_args,
    .num_args = (int)(sizeof crop_args / sizeof crop_args[0]),
    .array_outputs = 1u << 0,
};
