/* src/ops/augment/resize_crop_mirror/resize_crop_mirror.c: the `resize_crop_mirror` operator
 * (DALI's fn.resize_crop_mirror) -- schema, parse and CPU implementation: resize (resize's
 * arguments and size rules, src/ops/augment/resize/), then a crop of the resized image placed at
 * crop_pos_x/y (crop_mirror_normalize's rule), mirrored horizontally when `mirror` is non-zero (per
 * sample). HWC uint8 images and FHWC uint8 sequences (every frame alike), output HWC / FHWC uint8:
 * the same bytes as resize followed by crop and flip. The GPU implementation
 * (resize_crop_mirror_gpu.cu) runs the fused resize+crop_mirror_normalize kernel. Hot path: per
 * sample; the resized frame lives in per-thread scratch. */
#include <math.h>
#include <string.h>

#include "ops/augment/crop_mirror_normalize/cmn_reference.h"
#include "ops/augment/resize/resize_params.h"
#include "ops/augment/resize/resize_reference.h"
#include "ops/augment/resize_crop_mirror/resize_crop_mirror.h"
#include "ops/op_impls.h"

typedef struct rcm_state {
  stk__resize_op_params resize;
  stk__cmn_params crop;
} rcm_state;

stk_status stk__rcm_crop_params(const stk__op *op, stk__cmn_params *p, char *err, size_t err_size) {
  memset(p, 0, sizeof *p);
  size_t count = 0;
  const double *crop = stk__arg_float_list(op, "crop", &count);
  if (count > 2 || (count > 0 && (stk__arg_is_set(op, "crop_h") || stk__arg_is_set(op, "crop_w")))) {
    stk__errorf(err, err_size, "give 'crop' as [height, width] (or one value), or 'crop_h'/'crop_w', not both");
    return STK_EINVAL;
  }
  double ch = count ? crop[0] : stk__arg_float(op, "crop_h"),
         cw = count ? crop[count - 1] : stk__arg_float(op, "crop_w");
  p->pos_x = stk__arg_float(op, "crop_pos_x");
  p->pos_y = stk__arg_float(op, "crop_pos_y");
  if (!(ch >= 0 && ch <= 65535 && cw >= 0 && cw <= 65535) || !(p->pos_x >= 0 && p->pos_x <= 1) ||
      !(p->pos_y >= 0 && p->pos_y <= 1)) {
    stk__errorf(err, err_size, "the crop size must lie in 0..65535 and crop_pos_x/crop_pos_y in [0, 1]");
    return STK_EINVAL;
  }
  p->crop_h = (int)(ch + 0.5);
  p->crop_w = (int)(cw + 0.5);
  p->mean_count = p->std_count = 1;
  for (int c = 0; c < 4; c++) p->inv_std[c] = 1.0f;
  const double *fill = stk__arg_float_list(op, "fill_values", &p->fill_count);
  if (p->fill_count > 4) {
    stk__errorf(err, err_size, "argument 'fill_values' takes one value or one per channel (at most 4)");
    return STK_EINVAL;
  }
  for (int c = 0; c < 5; c++)
    p->fill[c] = p->fill_count ? (float)fill[p->fill_count == 1 ? 0 : (c < (int)p->fill_count ? c : 0)] : 0.0f;
  p->mirror_constant = stk__arg_int(op, "mirror") != 0;
  p->layout = STK__LAYOUT_HWC;
  p->layout_default = 1;
  p->dtype = STK_DTYPE_UINT8;
  const char *oob = stk__arg_string(op, "out_of_bounds_policy");
  if (strcmp(oob, "error") == 0) p->oob = STK__OOB_ERROR;
  else if (strcmp(oob, "pad") == 0) p->oob = STK__OOB_PAD;
  else if (strcmp(oob, "trim_to_shape") == 0) p->oob = STK__OOB_TRIM;
  else {
    stk__errorf(err, err_size, "argument 'out_of_bounds_policy' expects error, pad or trim_to_shape, got \"%s\"", oob);
    return STK_EINVAL;
  }
  return STK_OK;
}

static stk_status rcm_init(stk__op *op, char *err, size_t err_size) {
  rcm_state st;
  stk_status s = stk__resize_op_params_get(op, &st.resize, err, err_size);
  if (s == STK_OK) s = stk__rcm_crop_params(op, &st.crop, err, err_size);
  return s == STK_OK ? stk__op_keep_state(op, &st, sizeof st) : s;
}

static stk_status rcm_run(stk__op *op, stk__sample_ctx *ctx, stk__tensor *const *inputs, stk__tensor *const *outputs) {
  const rcm_state *st = op->state;
  const stk__tensor *in = inputs[0];
  stk__u8_frames f;
  stk_status s = stk__check_u8_frames(in, &f, ctx->err, ctx->err_size);
  if (s != STK_OK) return s;
  int out_w, out_h;
  double roi[4];
  if (stk__resize_plan(&st->resize.size, f.w, f.h, &out_w, &out_h, roi) != STK_OK) {
    stk__errorf(ctx->err, ctx->err_size, "cannot resize a %dx%d image with these arguments", f.w, f.h);
    return STK_EINVAL;
  }
  stk__window crop;
  s = stk__cmn_crop(&st->crop, out_w, out_h, &crop, ctx->err, ctx->err_size);
  if (s != STK_OK) return s;
  const stk__tensor *mirror_input = stk__arg_input(op, inputs, "mirror");
  const int mirror = mirror_input ? stk__tensor_scalar(mirror_input) != 0.0 : st->crop.mirror_constant;
  const stk__cmn_output o = stk__cmn_output_shape(&st->crop, f.sequence, f.frames, crop.h, crop.w, f.c);
  s = stk__tensor_resize(outputs[0], STK_DTYPE_UINT8, o.ndim, o.shape, o.layout);
  if (s != STK_OK) return s;
  const size_t resized_bytes = (size_t)out_w * out_h * f.c, in_frame = (size_t)f.w * f.h * f.c;
  const size_t work =
      stk__resize_roi_scratch_bytes(f.w, f.h, f.c, roi, out_w, out_h, st->resize.interp, st->resize.antialias);
  void *scratch = stk__scratch_get(ctx, 0, work), *resized = stk__scratch_get(ctx, 1, resized_bytes);
  if (!scratch || !resized) return STK_ENOMEM;
  for (int frame = 0; s == STK_OK && frame < f.frames; frame++) {
    s = stk__resize_u8_roi((const uint8_t *)in->data + (size_t)frame * in_frame, f.w, f.h, (size_t)f.w * f.c, f.c, roi,
                           resized, out_w, out_h, st->resize.interp, st->resize.antialias, scratch);
    if (s == STK_OK)
      s = stk__crop_mirror_normalize_planes(resized, out_w, out_h, (size_t)out_w * f.c, f.c, crop.x, crop.y, crop.w,
                                            crop.h, mirror, st->crop.mean, st->crop.inv_std, 0.0f, st->crop.fill,
                                            STK__LAYOUT_HWC, 0, STK_DTYPE_UINT8, 0,
                                            (uint8_t *)outputs[0]->data + (size_t)frame * o.frame_step);
  }
  if (s != STK_OK) stk__errorf(ctx->err, ctx->err_size, "resize_crop_mirror failed on a %dx%d image", f.w, f.h);
  return s;
}

const stk__op_impl stk__cpu_impl_resize_crop_mirror = {
    .init = rcm_init, .destroy = stk__op_free_state, .run_sample = rcm_run};

static const stk__arg_schema rcm_args[] = {
    /* resize's arguments (src/ops/augment/resize/resize.c), read by the same parse */
    {"resize_x", STK_ARG_FLOAT, "0", 0, 0, "output width of the resize; 0 = derived (aspect kept)"},
    {"resize_y", STK_ARG_FLOAT, "0", 0, 0, "output height of the resize; 0 = derived (aspect kept)"},
    {"resize_shorter", STK_ARG_FLOAT, "0", 0, 0, "shorter side of the resize becomes this"},
    {"resize_longer", STK_ARG_FLOAT, "0", 0, 0, "longer side of the resize becomes this"},
    {"size", STK_ARG_FLOAT_LIST, NULL, 0, 0, "resize output [height, width] (one value = both)"},
    {"mode", STK_ARG_STRING, "default", 0, 0, "default | stretch | not_larger | not_smaller"},
    {"interp_type", STK_ARG_STRING, "INTERP_LINEAR", 0, 0, "INTERP_LINEAR | INTERP_NN | INTERP_CUBIC"},
    {"antialias", STK_ARG_BOOL, "True", 0, 0, "widen linear/cubic filters by the scale when downscaling"},
    {"max_size", STK_ARG_FLOAT_LIST, NULL, 0, 0, "cap on the resize output [height, width]"},
    {"subpixel_scale", STK_ARG_BOOL, "True", 0, 0, "keep the exact fractional scale"},
    /* the crop and mirror of the resized image */
    {"crop", STK_ARG_FLOAT_LIST, NULL, 0, 0, "crop size [height, width] (one value = square); none = no crop"},
    {"crop_h", STK_ARG_FLOAT, "0", 0, 0, "crop height (0: whole)"},
    {"crop_w", STK_ARG_FLOAT, "0", 0, 0, "crop width (0: whole)"},
    {"crop_pos_x", STK_ARG_FLOAT, "0.5", 0, 0, "horizontal position in [0, 1]"},
    {"crop_pos_y", STK_ARG_FLOAT, "0.5", 0, 0, "vertical position in [0, 1]"},
    {"mirror", STK_ARG_INT, "0", 0, 1, "flip horizontally when non-zero; per sample"},
    {"out_of_bounds_policy", STK_ARG_STRING, "error", 0, 0, "error | pad | trim_to_shape"},
    {"fill_values", STK_ARG_FLOAT_LIST, "[0.0]", 0, 0, "the pad policy's value (one, or one per channel)"},
};

const stk__op_schema stk__op_resize_crop_mirror = {
    .name = "resize_crop_mirror",
    .doc =
        "Resizes HWC uint8 images (resize's size rules), crops the result at crop_pos_x/y and mirrors it "
        "horizontally when mirror is set (per sample); FHWC sequences frame by frame.",
    .min_inputs = 1,
    .max_inputs = 1,
    .num_outputs = 1,
    .devices = STK_OPDEV_CPU | STK_OPDEV_GPU,
    .args = rcm_args,
    .num_args = (int)(sizeof rcm_args / sizeof rcm_args[0]),
    .array_outputs = 1u << 0,
};
