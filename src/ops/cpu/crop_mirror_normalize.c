/* src/ops/cpu/crop_mirror_normalize.c: the `crop_mirror_normalize` operator (DALI's
 * fn.crop_mirror_normalize) -- schema and CPU implementation. Crop placement follows DALI
 * (stk__crop_start: floor(crop_pos * (in - crop) + 0.5)); the fused per-pixel work is
 * stk__crop_mirror_normalize_ex (image_ops.c). Hot path: run_sample per sample, no allocation
 * after the output buffer has grown once. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/cpu/image_ops.h"

typedef enum oob_policy { OOB_ERROR = 0, OOB_PAD, OOB_TRIM } oob_policy;

typedef struct cmn_state {
  int crop_h, crop_w; /* 0 = no crop in that dimension (whole extent) */
  double pos_x, pos_y;
  size_t mean_count, std_count, fill_count;
  float mean[4], inv_std[4], fill[5];
  float shift;
  int mirror_constant;
  stk__out_layout layout;
  stk_dtype dtype;
  int pad_output;
  oob_policy oob;
} cmn_state;

static stk_status fail(stk__op *op, char *err, size_t err_size, const char *what) {
  stk__errorf(err, err_size, "%s: %s", op->name, what);
  return STK_EINVAL;
}

static stk_status cmn_init(stk__op *op, char *err, size_t err_size) {
  cmn_state st;
  memset(&st, 0, sizeof st);
  char msg[256];
  /* Crop size: crop=[h, w] (one value = square) or crop_h/crop_w, not both. */
  size_t count;
  const double *crop = stk__arg_float_list(op, "crop", &count);
  int have_hw = stk__arg_is_set(op, "crop_h") || stk__arg_is_set(op, "crop_w");
  if (count > 0 && have_hw) return fail(op, err, err_size, "give either 'crop' or 'crop_h'/'crop_w', not both");
  if (count > 2) return fail(op, err, err_size, "argument 'crop' expects [height, width] (or one value)");
  double ch = 0, cw = 0;
  if (count > 0) {
    ch = crop[0];
    cw = count == 2 ? crop[1] : crop[0];
  } else {
    ch = stk__arg_float(op, "crop_h");
    cw = stk__arg_float(op, "crop_w");
  }
  if (ch < 0 || cw < 0 || ch > 65535 || cw > 65535)
    return fail(op, err, err_size, "the crop size must be between 0 and 65535");
  st.crop_h = (int)(ch + 0.5);
  st.crop_w = (int)(cw + 0.5);
  st.pos_x = stk__arg_float(op, "crop_pos_x");
  st.pos_y = stk__arg_float(op, "crop_pos_y");
  if (st.pos_x < 0 || st.pos_x > 1 || st.pos_y < 0 || st.pos_y > 1)
    return fail(op, err, err_size, "crop_pos_x and crop_pos_y must lie in [0, 1]");

  /* Normalisation: out = scale * (x - mean) / std + shift, as (x - mean) * (scale / std) + shift. */
  const double *mean = stk__arg_float_list(op, "mean", &st.mean_count);
  const double *std = stk__arg_float_list(op, "std", &st.std_count);
  if (st.mean_count < 1 || st.mean_count > 4 || st.std_count < 1 || st.std_count > 4) {
    snprintf(msg, sizeof msg, "'mean' and 'std' need 1 to 4 values (one per channel), got %zu and %zu",
             st.mean_count, st.std_count);
    return fail(op, err, err_size, msg);
  }
  double scale = stk__arg_float(op, "scale");
  for (int c = 0; c < 4; c++) {
    double m = mean[st.mean_count == 1 ? 0 : (c < (int)st.mean_count ? c : 0)];
    double s = std[st.std_count == 1 ? 0 : (c < (int)st.std_count ? c : 0)];
    if (s == 0 || !isfinite(s)) return fail(op, err, err_size, "'std' values must be finite and non-zero");
    st.mean[c] = (float)m;
    st.inv_std[c] = (float)(scale / s);
  }
  st.shift = (float)stk__arg_float(op, "shift");
  const double *fill = stk__arg_float_list(op, "fill_values", &st.fill_count);
  if (st.fill_count > 5) return fail(op, err, err_size, "'fill_values' takes one value or one per output channel");
  for (int c = 0; c < 5; c++) st.fill[c] = st.fill_count ? (float)fill[st.fill_count == 1 ? 0 : (c < (int)st.fill_count ? c : 0)] : 0.0f;

  const char *layout = stk__arg_string(op, "output_layout");
  if (strcmp(layout, "CHW") == 0)
    st.layout = STK__LAYOUT_CHW;
  else if (strcmp(layout, "HWC") == 0)
    st.layout = STK__LAYOUT_HWC;
  else {
    snprintf(msg, sizeof msg, "argument 'output_layout' expects \"CHW\" or \"HWC\", got \"%s\"", layout);
    return fail(op, err, err_size, msg);
  }
  const char *dtype = stk__arg_string(op, "dtype");
  if (stk__dtype_parse(dtype, &st.dtype) != STK_OK ||
      (st.dtype != STK_DTYPE_FLOAT32 && st.dtype != STK_DTYPE_FLOAT16 && st.dtype != STK_DTYPE_UINT8)) {
    snprintf(msg, sizeof msg, "argument 'dtype' expects \"float\", \"float16\" or \"uint8\", got \"%s\"", dtype);
    return fail(op, err, err_size, msg);
  }
  st.pad_output = stk__arg_bool(op, "pad_output");
  const char *oob = stk__arg_string(op, "out_of_bounds_policy");
  if (strcmp(oob, "error") == 0)
    st.oob = OOB_ERROR;
  else if (strcmp(oob, "pad") == 0)
    st.oob = OOB_PAD;
  else if (strcmp(oob, "trim_to_shape") == 0)
    st.oob = OOB_TRIM;
  else {
    snprintf(msg, sizeof msg, "argument 'out_of_bounds_policy' expects \"error\", \"pad\" or \"trim_to_shape\", got \"%s\"",
             oob);
    return fail(op, err, err_size, msg);
  }
  st.mirror_constant = stk__arg_int(op, "mirror") != 0;
  return stk__op_keep_state(op, &st, sizeof st);
}

static stk_status cmn_run(stk__op *op, stk__sample_ctx *ctx, stk__tensor *const *inputs, stk__tensor *const *outputs) {
  const cmn_state *st = op->state;
  const stk__tensor *in = inputs[0];
  stk_status checked = stk__check_hwc_u8_image(in, ctx->err, ctx->err_size);
  if (checked != STK_OK) return checked;
  const int h = (int)in->shape[0], w = (int)in->shape[1], c = (int)in->shape[2];
  if ((st->mean_count > 1 && (int)st->mean_count != c) || (st->std_count > 1 && (int)st->std_count != c)) {
    stk__errorf(ctx->err, ctx->err_size, "the image has %d channels but mean has %zu and std %zu values", c,
                st->mean_count, st->std_count);
    return STK_EINVAL;
  }
  const stk__tensor *mirror_input = stk__arg_input(op, inputs, "mirror");
  const int mirror = mirror_input ? stk__tensor_scalar(mirror_input) != 0.0 : st->mirror_constant;
  int crop_w = st->crop_w ? st->crop_w : w, crop_h = st->crop_h ? st->crop_h : h;
  int x = stk__crop_start(st->pos_x, w, crop_w), y = stk__crop_start(st->pos_y, h, crop_h);
  if (x < 0 || y < 0 || x + crop_w > w || y + crop_h > h) {
    if (st->oob == OOB_ERROR) {
      stk__errorf(ctx->err, ctx->err_size,
                  "the %dx%d crop at (%d, %d) does not fit the %dx%d image (out_of_bounds_policy=\"error\"; use "
                  "\"pad\" or \"trim_to_shape\")",
                  crop_w, crop_h, x, y, w, h);
      return STK_EINVAL;
    }
    if (st->oob == OOB_TRIM) {
      int x1 = x + crop_w > w ? w : x + crop_w, y1 = y + crop_h > h ? h : y + crop_h;
      x = x < 0 ? 0 : x;
      y = y < 0 ? 0 : y;
      crop_w = x1 - x;
      crop_h = y1 - y;
    }
  }
  const int pad = st->pad_output && c == 3;
  const int out_c = c + pad;
  int64_t shape[3];
  if (st->layout == STK__LAYOUT_CHW) {
    shape[0] = out_c;
    shape[1] = crop_h;
    shape[2] = crop_w;
  } else {
    shape[0] = crop_h;
    shape[1] = crop_w;
    shape[2] = out_c;
  }
  stk_status s =
      stk__tensor_resize(outputs[0], st->dtype, 3, shape, st->layout == STK__LAYOUT_CHW ? "CHW" : "HWC");
  if (s != STK_OK) return s;
  s = stk__crop_mirror_normalize_ex(in->data, w, h, (size_t)w * (size_t)c, c, x, y, crop_w, crop_h, mirror, st->mean,
                                    st->inv_std, st->shift, st->fill, st->layout, st->dtype, pad, outputs[0]->data);
  if (s != STK_OK) stk__errorf(ctx->err, ctx->err_size, "crop_mirror_normalize failed on a %dx%dx%d image", w, h, c);
  return s;
}

static const stk__op_impl cmn_cpu = {.init = cmn_init, .destroy = stk__op_free_state, .run_sample = cmn_run};

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
    {"output_layout", STK_ARG_STRING, "CHW", 0, 0, "CHW | HWC"},
    {"dtype", STK_ARG_STRING, "float", 0, 0, "float | float16 | uint8 (rounded half up, clamped)"},
    {"pad_output", STK_ARG_BOOL, "False", 0, 0, "pad 3-channel output to 4 channels (value: fill_values[3])"},
    {"fill_values", STK_ARG_FLOAT_LIST, "[0.0]", 0, 0,
     "output values for pixels outside the image (pad policy) and the padded channel"},
    {"out_of_bounds_policy", STK_ARG_STRING, "error", 0, 0,
     "error | pad | trim_to_shape: what a crop reaching outside the image does"},
};

const stk__op_schema stk__op_crop_mirror_normalize = {
    .name = "crop_mirror_normalize",
    .doc = "Fused crop, horizontal mirror, normalisation ((x - mean) / std * scale + shift), layout change (HWC -> "
           "CHW) and conversion to float / float16 / uint8, on HWC uint8 images.",
    .min_inputs = 1,
    .max_inputs = 1,
    .num_outputs = 1,
    .devices = STK_OPDEV_CPU | STK_OPDEV_GPU,
    .args = cmn_args,
    .num_args = (int)(sizeof cmn_args / sizeof cmn_args[0]),
    .is_reader = 0,
    .cpu = &cmn_cpu,
};
