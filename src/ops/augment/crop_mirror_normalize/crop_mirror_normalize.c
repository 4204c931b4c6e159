/* src/ops/augment/crop_mirror_normalize/crop_mirror_normalize.c: the `crop_mirror_normalize` operator (DALI's
 * fn.crop_mirror_normalize) -- schema and CPU implementation. Crop placement follows DALI
 * (stk__crop_start: floor(crop_pos * (in - crop) + 0.5)). Its parameters and per-sample crop
 * placement (src/ops/augment/crop_mirror_normalize/cmn_params.c), the output shape of images and FHWC sequences (frame by
 * frame, CFHW through the reference's channel-plane stride) and the per-pixel work (stk__crop_mirror_normalize_ex,
 * src/ops/augment/crop_mirror_normalize/cmn_reference.c) are shared with the GPU implementation. Hot path: run_sample
 * per sample, no allocation after the output buffer has grown once. */
#include <stdlib.h>

#include "ops/augment/crop_mirror_normalize/cmn_params.h"
#include "ops/augment/crop_mirror_normalize/cmn_reference.h"
#include "ops/op_impls.h"

static stk_status cmn_init(stk__op *op, char *err, size_t err_size) {
  stk__cmn_params params;
  stk_status s = stk__cmn_params_get(op, &params, err, err_size);
  return s == STK_OK ? stk__op_keep_state(op, &params, sizeof params) : s;
}

static stk_status cmn_run(stk__op *op, stk__sample_ctx *ctx, stk__tensor *const *inputs, stk__tensor *const *outputs) {
  const stk__cmn_params *st = op->state;
  const stk__tensor *in = inputs[0];
  stk__u8_frames f;
  stk_status s = stk__check_u8_frames(in, &f, ctx->err, ctx->err_size);
  if (s == STK_OK) s = stk__cmn_check_layout(st, f.sequence, ctx->err, ctx->err_size);
  if (s == STK_OK) s = stk__cmn_check_channels(st, f.c, ctx->err, ctx->err_size);
  if (s != STK_OK) return s;
  const int h = f.h, w = f.w, c = f.c;
  const stk__tensor *mirror_input = stk__arg_input(op, inputs, "mirror");
  const int mirror = mirror_input ? stk__tensor_scalar(mirror_input) != 0.0 : st->mirror_constant;
  stk__window crop;
  s = stk__cmn_crop(st, w, h, &crop, ctx->err, ctx->err_size);
  if (s != STK_OK) return s;
  /* A sequence: one crop window and mirror flag for all its frames (DALI's per-sample arguments). */
  const int out_c = stk__cmn_out_channels(st, c);
  const stk__cmn_output o = stk__cmn_output_shape(st, f.sequence, f.frames, crop.h, crop.w, out_c);
  s = stk__tensor_resize(outputs[0], st->dtype, o.ndim, o.shape, o.layout);
  if (s != STK_OK) return s;
  const size_t in_frame = (size_t)w * (size_t)h * (size_t)c, out_bytes = stk_dtype_size(st->dtype);
  for (int frame = 0; s == STK_OK && frame < f.frames; frame++)
    s = stk__crop_mirror_normalize_planes(
        (const uint8_t *)in->data + (size_t)frame * in_frame, w, h, (size_t)w * (size_t)c, c, crop.x, crop.y, crop.w,
        crop.h, mirror, st->mean, st->inv_std, st->shift, st->fill, st->layout, o.plane_stride, st->dtype, out_c != c,
        (uint8_t *)outputs[0]->data + (size_t)frame * o.frame_step * out_bytes);
  if (s != STK_OK) stk__errorf(ctx->err, ctx->err_size, "crop_mirror_normalize failed on a %dx%dx%d image", w, h, c);
  return s;
}

const stk__op_impl stk__cpu_impl_crop_mirror_normalize = {
    .init = cmn_init, .destroy = stk__op_free_state, .run_sample = cmn_run};

static const stk__arg_schema cmn_args[] = {
    {"crop", STK_ARG_FLOAT_LIST, NULL, 0, 0, "crop size [height, width] (one value = square); none = no crop"},
    {"crop_h", STK_ARG_FLOAT, "0", 0, 0, "crop height (with crop_w; instead of crop)"},
    {"crop_w", STK_ARG_FLOAT, "0", 0, 0, "crop width (with crop_h; instead of crop)"},
    {"crop_pos_x", STK_ARG_FLOAT, "0.5", 0, 0,
     "horizontal position in [0, 1]: x = floor(crop_pos_x * (W - crop_w) + 0.5)"},
    {"crop_pos_y", STK_ARG_FLOAT, "0.5", 0, 0,
     "vertical position in [0, 1]: y = floor(crop_pos_y * (H - crop_h) + 0.5)"},
    {"mean", STK_ARG_FLOAT_LIST, "[0.0]", 0, 0, "per-channel mean (one value = all channels)"},
    {"std", STK_ARG_FLOAT_LIST, "[1.0]", 0, 0, "per-channel standard deviation (one value = all channels)"},
    {"scale", STK_ARG_FLOAT, "1.0", 0, 0, "out = scale * (in - mean) / std + shift"},
    {"shift", STK_ARG_FLOAT, "0.0", 0, 0, "out = scale * (in - mean) / std + shift"},
    {"mirror", STK_ARG_INT, "0", 0, 1, "flip horizontally when non-zero; may be bound per sample (mirror=coin)"},
    {"output_layout", STK_ARG_STRING, "CHW", 0, 0,
     "CHW | HWC for images; FCHW | CFHW | FHWC for FHWC sequences (default: CHW, FCHW for a sequence)"},
    {"dtype", STK_ARG_STRING, "float", 0, 0, "float | float16 | uint8 (rounded half up, clamped)"},
    {"pad_output", STK_ARG_BOOL, "False", 0, 0, "pad 3-channel output to 4 channels (value: fill_values[3])"},
    {"fill_values", STK_ARG_FLOAT_LIST, "[0.0]", 0, 0,
     "output values for pixels outside the image (pad policy) and the padded channel"},
    {"out_of_bounds_policy", STK_ARG_STRING, "error", 0, 0,
     "error | pad | trim_to_shape: what a crop reaching outside the image does"},
};

const stk__op_schema stk__op_crop_mirror_normalize = {
    .name = "crop_mirror_normalize",
    .doc =
        "Fused crop, horizontal mirror, normalisation ((x - mean) / std * scale + shift), layout change (HWC -> "
        "CHW) and conversion to float / float16 / uint8, on HWC uint8 images and FHWC uint8 sequences (one window "
        "and mirror flag for all frames of a sample; output FCHW, CFHW or FHWC).",
    .min_inputs = 1,
    .max_inputs = 1,
    .num_outputs = 1,
    .devices = STK_OPDEV_CPU | STK_OPDEV_GPU,
    .args = cmn_args,
    .num_args = (int)(sizeof cmn_args / sizeof cmn_args[0]),
    .is_reader = 0,
    .array_outputs = 1u << 0, /* images */
};
