/* src/ops/augment/random_resized_crop/random_resized_crop.c: the `random_resized_crop` operator (DALI's
 * fn.random_resized_crop / torchvision's RandomResizedCrop) -- schema and CPU implementation: a
 * window of random area and aspect ratio (stk__random_resized_crop_window, keyed by seed,
 * operator, epoch and sample), resized to `size` with stk__resize_u8. Parameters: one parse
 * shared with the GPU implementation (src/ops/augment/random_resized_crop/random_resized_crop_params.c). Hot path: run_sample per sample. */
#include <stdlib.h>
#include <string.h>

#include "ops/augment/random_resized_crop/random_resized_crop_params.h"
#include "ops/augment/resize/resize_reference.h"
#include "ops/op_impls.h"

static stk_status rrc_init(stk__op *op, char *err, size_t err_size) {
  stk__random_resized_crop_params params;
  stk_status s = stk__random_resized_crop_params_get(op, &params, err, err_size);
  return s == STK_OK ? stk__op_keep_state(op, &params, sizeof params) : s;
}

static stk_status rrc_run(stk__op *op, stk__sample_ctx *ctx, stk__tensor *const *inputs, stk__tensor *const *outputs) {
  const stk__random_resized_crop_params *st = op->state;
  const stk__tensor *in = inputs[0];
  stk_status checked = stk__check_hwc_u8_image(in, ctx->err, ctx->err_size);
  if (checked != STK_OK) return checked;
  const int h = (int)in->shape[0], w = (int)in->shape[1], c = (int)in->shape[2];
  stk__window win = stk__random_resized_crop_window(st, op, ctx->epoch, ctx->sample_id, w, h);
  const int64_t shape[3] = {st->out_h, st->out_w, c};
  stk_status s = stk__tensor_resize(outputs[0], STK_DTYPE_UINT8, 3, shape, "HWC");
  if (s != STK_OK) return s;
  size_t bytes = stk__resize_scratch_bytes(w, h, c, win, st->out_w, st->out_h, st->interp, st->antialias);
  void *scratch = stk__scratch_get(ctx, 0, bytes);
  if (!scratch) return STK_ENOMEM;
  s = stk__resize_u8(in->data, w, h, (size_t)w * (size_t)c, c, win, outputs[0]->data, st->out_w, st->out_h, st->interp,
                     st->antialias, scratch);
  if (s != STK_OK)
    stk__errorf(ctx->err, ctx->err_size, "resizing the %dx%d window of a %dx%d image failed", win.w, win.h, w, h);
  return s;
}

const stk__op_impl stk__cpu_impl_random_resized_crop = {
    .init = rrc_init, .destroy = stk__op_free_state, .run_sample = rrc_run};

static const stk__arg_schema rrc_args[] = {
    {"size", STK_ARG_FLOAT_LIST, NULL, 1, 0, "output size [height, width] (one value = square)"},
    {"random_area", STK_ARG_FLOAT_LIST, "[0.08, 1.0]", 0, 0,
     "range of the window's area as a fraction of the image's, drawn uniformly"},
    {"random_aspect_ratio", STK_ARG_FLOAT_LIST, "[0.75, 1.3333333333333333]", 0, 0,
     "range of the window's width/height, drawn log-uniformly"},
    {"num_attempts", STK_ARG_INT, "10", 0, 0,
     "tries before falling back to the central crop with the aspect ratio clamped into range"},
    {"interp_type", STK_ARG_STRING, "INTERP_LINEAR", 0, 0,
     "INTERP_LINEAR | INTERP_NN | INTERP_CUBIC (also linear | nearest | cubic)"},
    {"antialias", STK_ARG_BOOL, "True", 0, 0, "widen linear/cubic filters by the scale when downscaling"},
};

const stk__op_schema stk__op_random_resized_crop = {
    .name = "random_resized_crop",
    .doc =
        "Crops a random window (area fraction uniform in random_area, aspect ratio log-uniform in "
        "random_aspect_ratio, up to num_attempts tries, then a central fallback) and resizes it to size. "
        "The window is keyed by (seed, operator, epoch, sample).",
    .min_inputs = 1,
    .max_inputs = 1,
    .num_outputs = 1,
    .devices = STK_OPDEV_CPU | STK_OPDEV_GPU,
    .args = rrc_args,
    .num_args = (int)(sizeof rrc_args / sizeof rrc_args[0]),
    .is_reader = 0,
    .array_outputs = 1u << 0, /* HWC images */
};
