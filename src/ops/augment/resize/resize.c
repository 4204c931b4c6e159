/* src/ops/augment/resize/resize.c: the `resize` operator (DALI's fn.resize) -- schema and CPU implementation.
 * Its parameters (stk__resize_op_params_get), output size rules (stk__resize_plan) and resampling
 * (stk__resize_u8_roi) live beside it (resize_reference.c), shared with the GPU implementation. Hot path:
 * run_sample once per sample (an FHWC sequence: each frame with the same plan and scratch); it allocates only when a sample needs more scratch than any before
 * on that thread. */
#include <stdlib.h>
#include <string.h>

#include "ops/augment/resize/resize_params.h"
#include "ops/augment/resize/resize_reference.h"
#include "ops/op_impls.h"

static stk_status resize_init(stk__op *op, char *err, size_t err_size) {
  stk__resize_op_params params;
  stk_status s = stk__resize_op_params_get(op, &params, err, err_size);
  return s == STK_OK ? stk__op_keep_state(op, &params, sizeof params) : s;
}

static stk_status resize_run(stk__op *op, stk__sample_ctx *ctx, stk__tensor *const *inputs,
                             stk__tensor *const *outputs) {
  const stk__resize_op_params *st = op->state;
  const stk__tensor *in = inputs[0];
  stk__u8_frames f;
  stk_status s = stk__check_u8_frames(in, &f, ctx->err, ctx->err_size);
  if (s != STK_OK) return s;
  const int h = f.h, w = f.w, c = f.c;
  int out_w, out_h;
  double roi[4];
  if (stk__resize_plan(&st->size, w, h, &out_w, &out_h, roi) != STK_OK) {
    stk__errorf(ctx->err, ctx->err_size, "cannot resize a %dx%d image with these arguments (empty or over 65535 px)", w,
                h);
    return STK_EINVAL;
  }
  /* A sequence: every frame resized the same way (DALI: per-sample arguments apply to all frames). */
  const int64_t image_shape[3] = {out_h, out_w, c}, sequence_shape[4] = {f.frames, out_h, out_w, c};
  s = f.sequence ? stk__tensor_resize(outputs[0], STK_DTYPE_UINT8, 4, sequence_shape, "FHWC")
                 : stk__tensor_resize(outputs[0], STK_DTYPE_UINT8, 3, image_shape, "HWC");
  if (s != STK_OK) return s;
  const size_t in_frame = (size_t)w * (size_t)h * (size_t)c, out_frame = (size_t)out_w * (size_t)out_h * (size_t)c;
  if (out_w == w && out_h == h && roi[0] == 0.0 && roi[1] == 0.0 && roi[2] == w && roi[3] == h) {
    memcpy(outputs[0]->data, in->data, in_frame * (size_t)f.frames); /* exact identity */
    return STK_OK;
  }
  size_t bytes = stk__resize_roi_scratch_bytes(w, h, c, roi, out_w, out_h, st->interp, st->antialias);
  void *scratch = stk__scratch_get(ctx, 0, bytes);
  if (!scratch) return STK_ENOMEM;
  for (int frame = 0; s == STK_OK && frame < f.frames; frame++)
    s = stk__resize_u8_roi((const uint8_t *)in->data + (size_t)frame * in_frame, w, h, (size_t)w * (size_t)c, c, roi,
                           (uint8_t *)outputs[0]->data + (size_t)frame * out_frame, out_w, out_h, st->interp,
                           st->antialias, scratch);
  if (s != STK_OK) stk__errorf(ctx->err, ctx->err_size, "resize %dx%d -> %dx%d failed", w, h, out_w, out_h);
  return s;
}

const stk__op_impl stk__cpu_impl_resize = {
    .init = resize_init, .destroy = stk__op_free_state, .run_sample = resize_run};

static const stk__arg_schema resize_args[] = {
    {"resize_x", STK_ARG_FLOAT, "0", 0, 0, "output width; 0 = derived from the other extent (aspect kept)"},
    {"resize_y", STK_ARG_FLOAT, "0", 0, 0, "output height; 0 = derived from the other extent (aspect kept)"},
    {"resize_shorter", STK_ARG_FLOAT, "0", 0, 0,
     "shorter side becomes this, longer side scaled alike (mode not_smaller; capped by max_size)"},
    {"resize_longer", STK_ARG_FLOAT, "0", 0, 0, "longer side becomes this, shorter side scaled alike (not_larger)"},
    {"size", STK_ARG_FLOAT_LIST, NULL, 0, 0, "output size [height, width] (one value = both); alias of resize_y/x"},
    {"mode", STK_ARG_STRING, "default", 0, 0,
     "default | stretch | not_larger | not_smaller: how missing or conflicting extents are chosen"},
    {"interp_type", STK_ARG_STRING, "INTERP_LINEAR", 0, 0,
     "INTERP_LINEAR | INTERP_NN | INTERP_CUBIC (also linear | nearest | cubic)"},
    {"antialias", STK_ARG_BOOL, "True", 0, 0, "widen linear/cubic filters by the scale when downscaling"},
    {"max_size", STK_ARG_FLOAT_LIST, NULL, 0, 0, "cap on the output size [height, width] (one value = both)"},
    {"subpixel_scale", STK_ARG_BOOL, "True", 0, 0,
     "keep the exact fractional scale by adjusting the source region to the rounded output size"},
};

const stk__op_schema stk__op_resize = {
    .name = "resize",
    .doc =
        "Resizes HWC uint8 images and FHWC uint8 sequences (every frame alike; separable linear / cubic / nearest "
        "resampling, antialiased when "
        "downscaling), with DALI's size rules: resize_x/resize_y, size, resize_shorter, resize_longer, mode, "
        "max_size.",
    .min_inputs = 1,
    .max_inputs = 1,
    .num_outputs = 1,
    .devices = STK_OPDEV_CPU | STK_OPDEV_GPU,
    .args = resize_args,
    .num_args = (int)(sizeof resize_args / sizeof resize_args[0]),
    .is_reader = 0,
    .array_outputs = 1u << 0, /* HWC images, FHWC sequences */
};
