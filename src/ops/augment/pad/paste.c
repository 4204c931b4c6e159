/* src/ops/augment/pad/paste.c: the `paste` operator (DALI's fn.paste) -- schema, parse, per-sample
 * plan and CPU implementation: each HWC sample pasted on a canvas `ratio` times its size (at least
 * min_canvas_size a side), at paste_x / paste_y in [0, 1] of the free room (x = floor(paste_x *
 * (canvas_w - w))), the rest fill_value (one, or one per channel). Any dtype; ratio, positions and
 * min_canvas_size may be bound per sample. The plan is shared with the GPU implementation
 * (pad_gpu.cu). Hot path: plan + copy per sample. */
#include <math.h>

#include "ops/common/nd_kinds.h"
#include "ops/op_impls.h"

typedef struct paste_params {
  int64_t channels;
  size_t fill_count;
  double fill[STK__ND_FILLS];
} paste_params;

static stk_status paste_parse(const stk__op *op, void *params, char *err, size_t err_size) {
  paste_params *p = params;
  const int64_t *fill = stk__arg_int_list(op, "fill_value", &p->fill_count);
  if (p->fill_count > STK__ND_FILLS) {
    stk__errorf(err, err_size, "argument 'fill_value' takes at most %d values", STK__ND_FILLS);
    return STK_EINVAL;
  }
  for (size_t k = 0; k < p->fill_count; k++) p->fill[k] = (double)fill[k];
  p->channels = stk__arg_int(op, "n_channels");
  return STK_OK;
}

static stk_status paste_plan(const stk__op *op, const void *params, stk__tensor *const *inputs, int num_inputs,
                             stk__nd_plan *plan, char *err, size_t err_size) {
  (void)num_inputs;
  const paste_params *p = params;
  const stk__tensor *in = inputs[0];
  stk__nd_plan_identity(plan, in);
  const char *layout = stk__nd_layout(in);
  const int ax_h = stk__nd_axis(layout, 'H'), ax_w = stk__nd_axis(layout, 'W');
  if (ax_h < 0 || ax_w < 0 || ax_h >= in->ndim || ax_w >= in->ndim) {
    stk__errorf(err, err_size, "paste needs H and W axes (layout \"%s\")", layout);
    return STK_EINVAL;
  }
  const int ax_c = stk__nd_axis(layout, 'C');
  if (ax_c >= 0 && ax_c < in->ndim && in->shape[ax_c] != p->channels) {
    stk__errorf(err, err_size, "the image has %lld channels but n_channels is %lld", (long long)in->shape[ax_c],
                (long long)p->channels);
    return STK_EINVAL;
  }
  double ratio = 0, min_canvas = 0, pos_x = 0.5, pos_y = 0.5;
  stk_status s = stk__nd_arg_scalar(op, inputs, "ratio", &ratio, err, err_size);
  if (s == STK_OK) s = stk__nd_arg_scalar(op, inputs, "min_canvas_size", &min_canvas, err, err_size);
  if (s == STK_OK) s = stk__nd_arg_scalar(op, inputs, "paste_x", &pos_x, err, err_size);
  if (s == STK_OK) s = stk__nd_arg_scalar(op, inputs, "paste_y", &pos_y, err, err_size);
  if (s != STK_OK) return s;
  if (!(ratio >= 1.0 && ratio < 1e6) || !(pos_x >= 0 && pos_x <= 1) || !(pos_y >= 0 && pos_y <= 1)) {
    stk__errorf(err, err_size, "'ratio' must be >= 1 and paste_x, paste_y in [0, 1] (got %g, %g, %g)", ratio, pos_x,
                pos_y);
    return STK_EINVAL;
  }
  const int axes[2] = {ax_h, ax_w};
  const double pos[2] = {pos_y, pos_x};
  for (int k = 0; s == STK_OK && k < 2; k++) {
    const int64_t extent = in->shape[axes[k]];
    int64_t canvas = (int64_t)floor((double)extent * ratio);
    if ((double)canvas < min_canvas) canvas = (int64_t)ceil(min_canvas);
    if (canvas < extent) canvas = extent;
    const int64_t at = (int64_t)floor(pos[k] * (double)(canvas - extent));
    s = stk__nd_plan_window(plan, axes[k], -at, canvas, STK__ND_OOB_PAD, err, err_size);
  }
  if (s == STK_OK) s = stk__nd_plan_fill(plan, p->fill, p->fill_count, err, err_size);
  return s;
}

const stk__nd_kind stk__nd_kind_paste = {paste_parse, paste_plan, sizeof(paste_params)};

static stk_status paste_init(stk__op *op, char *err, size_t err_size) {
  return stk__nd_cpu_init(op, &stk__nd_kind_paste, err, err_size);
}

const stk__op_impl stk__cpu_impl_paste = {
    .init = paste_init, .destroy = stk__nd_cpu_destroy, .run_sample = stk__nd_run_sample};

static const stk__arg_schema paste_args[] = {
    {"ratio", STK_ARG_FLOAT, NULL, 1, 1, "canvas size / input size (>= 1); per sample"},
    {"paste_x", STK_ARG_FLOAT, "0.5", 0, 1, "horizontal position in [0, 1] of the free room; per sample"},
    {"paste_y", STK_ARG_FLOAT, "0.5", 0, 1, "vertical position in [0, 1] of the free room; per sample"},
    {"min_canvas_size", STK_ARG_FLOAT, "0.0", 0, 1, "smallest canvas side; per sample"},
    {"fill_value", STK_ARG_INT_LIST, "[0]", 0, 0, "canvas value (one, or one per channel)"},
    {"n_channels", STK_ARG_INT, "3", 0, 0, "the images' channel count (checked)"},
};

const stk__op_schema stk__op_paste = {
    .name = "paste",
    .doc =
        "Pastes each HWC sample on a larger canvas (ratio times its size) at paste_x/paste_y, the rest "
        "fill_value; any dtype.",
    .min_inputs = 1,
    .max_inputs = 1,
    .num_outputs = 1,
    .devices = STK_OPDEV_CPU | STK_OPDEV_GPU,
    .args = paste_args,
    .num_args = (int)(sizeof paste_args / sizeof paste_args[0]),
    .array_outputs = 1u << 0,
};
