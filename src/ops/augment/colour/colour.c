/* src/ops/augment/colour/colour.c: DALI's brightness, contrast, brightness_contrast, hue,
 * saturation, hsv, color_twist and color_space_conversion -- schemas and the CPU implementation
 * they share: per sample, the affine map of colour_params.c (from constants or per-sample argument
 * inputs) applied to every pixel of a channels-last uint8 or float image, sequence or volume (HWC,
 * FHWC, DHWC), written as `dtype` (default: the input's). The GPU implementation (colour_gpu.cu)
 * applies the same float coefficients. Hot path: run_sample per sample, one pass, no allocation
 * after the output buffer has grown. */
#include <string.h>

#include "ops/augment/colour/colour_params.h"
#include "ops/common/dtype.h"
#include "ops/common/image.h"
#include "ops/op_impls.h"

static stk_status colour_init(stk__op *op, char *err, size_t err_size) {
  stk__colour_params p;
  stk_status s = stk__colour_params_get(op, &p, err, err_size);
  return s == STK_OK ? stk__op_keep_state(op, &p, sizeof p) : s;
}

/* uint8 to uint8 with one scale and offset for every channel (brightness, contrast,
 * brightness_contrast): a 256-entry table of the general loop's own expression, so the bytes are
 * the same, then one lookup per byte. */
static void colour_apply_u8_table(const stk__colour_transform *t, const uint8_t *src, uint8_t *dst, size_t n) {
  uint8_t table[256];
  for (int v = 0; v < 256; v++) table[v] = stk__u8_from_float((float)v * t->scale + t->offset[0]);
  for (size_t i = 0; i < n; i++) dst[i] = table[src[i]];
}

/* uint8 RGB to uint8 RGB through the 3x3 matrix (hue, saturation, hsv, color_twist): the general
 * loop's arithmetic in the same order, without its per-pixel type and channel branches. */
static void colour_apply_u8_rgb(const stk__colour_transform *t, const uint8_t *src, uint8_t *dst, size_t pixels) {
  const float *m = t->m, *o = t->offset;
  for (size_t p = 0; p < pixels; p++) {
    const float x0 = (float)src[3 * p], x1 = (float)src[3 * p + 1], x2 = (float)src[3 * p + 2];
    for (int r = 0; r < 3; r++) {
      float acc = m[r * 3] * x0;
      acc = acc + m[r * 3 + 1] * x1;
      acc = acc + m[r * 3 + 2] * x2;
      dst[3 * p + (size_t)r] = stk__u8_from_float(acc + o[r]);
    }
  }
}

/* One pixel run: `pixels` pixels of t->in_c channels from src (u8 or float) to t->out_c of `out`. */
static void colour_apply(const stk__colour_transform *t, const void *src, stk_dtype in, void *dst, stk_dtype out,
                         size_t pixels) {
  const int ic = t->in_c, oc = t->out_c;
  if (in == STK_DTYPE_UINT8 && out == STK_DTYPE_UINT8) {
    if (t->per_channel && ic == oc) {
      colour_apply_u8_table(t, src, dst, pixels * (size_t)ic);
      return;
    }
    if (!t->per_channel && ic == 3 && oc == 3) {
      colour_apply_u8_rgb(t, src, dst, pixels);
      return;
    }
  }
  const uint8_t *s8 = src;
  const float *sf = src;
  for (size_t p = 0; p < pixels; p++) {
    float x[4] = {0}, y[4] = {0};
    for (int k = 0; k < ic; k++) x[k] = in == STK_DTYPE_UINT8 ? (float)s8[p * ic + k] : sf[p * ic + k];
    if (t->per_channel) {
      for (int k = 0; k < ic; k++) y[k] = x[k] * t->scale + t->offset[0];
    } else {
      for (int r = 0; r < oc; r++) {
        float acc = t->m[r * 3] * x[0];
        if (ic > 1) acc = acc + t->m[r * 3 + 1] * x[1];
        if (ic > 2) acc = acc + t->m[r * 3 + 2] * x[2];
        y[r] = acc + t->offset[r];
      }
    }
    for (int r = 0; r < oc; r++) {
      size_t i = p * (size_t)oc + (size_t)r;
      if (out == STK_DTYPE_UINT8) ((uint8_t *)dst)[i] = stk__u8_from_float(y[r]);
      else if (out == STK_DTYPE_FLOAT32) ((float *)dst)[i] = y[r];
      else stk__dtype_store(dst, out, i, y[r]);
    }
  }
}

static stk_status colour_run(stk__op *op, stk__sample_ctx *ctx, stk__tensor *const *inputs,
                             stk__tensor *const *outputs) {
  const stk__colour_params *p = op->state;
  const stk__tensor *in = inputs[0];
  if (in->ndim < 3 || in->ndim > STK_MAX_DIMS) {
    stk__errorf(ctx->err, ctx->err_size, "the input must be a channels-last image (HWC, FHWC or DHWC), got %d dims",
                in->ndim);
    return STK_EINVAL;
  }
  const int channels = (int)in->shape[in->ndim - 1];
  stk_dtype out_dtype;
  stk_status s = stk__colour_check(p, in->dtype, channels, &out_dtype, ctx->err, ctx->err_size);
  if (s != STK_OK) return s;
  stk__colour_values v;
  stk__colour_values_default(&v);
  for (int k = 0; k < STK__COLOUR_NUM_ARGS; k++)
    if (stk__arg(op, stk__colour_arg_names[k]))
      *stk__colour_value_slot(&v, k) = stk__arg_sample_float(op, inputs, stk__colour_arg_names[k]);
  stk__colour_transform t;
  s = stk__colour_transform_make(p, &v, in->dtype, out_dtype, channels, &t, ctx->err, ctx->err_size);
  if (s != STK_OK) return s;
  int64_t shape[STK_MAX_DIMS];
  memcpy(shape, in->shape, sizeof shape);
  shape[in->ndim - 1] = t.out_c;
  s = stk__sample_output_resize(ctx, outputs, 0, out_dtype, in->ndim, shape, in->layout);
  if (s != STK_OK) return s;
  colour_apply(&t, in->data, in->dtype, outputs[0]->data, out_dtype, stk__tensor_numel(in) / (size_t)channels);
  return STK_OK;
}

const stk__op_impl stk__cpu_impl_colour = {.init = colour_init, .destroy = stk__op_free_state, .run_sample = colour_run};

#define ARG_DTYPE {"dtype", STK_ARG_STRING, "", 0, 0, "output type (default: the input's): " STK__DTYPE_NAMES}
#define ARG_BRIGHTNESS {"brightness", STK_ARG_FLOAT, "1.0", 0, 1, "brightness multiplier; may be bound per sample"}
#define ARG_SHIFT                                                                                                     \
  {"brightness_shift", STK_ARG_FLOAT, "0.0", 0, 1,                                                                    \
   "brightness shift, in units of the output type's range (1.0 = 255 for uint8); may be bound per sample"}
#define ARG_CONTRAST {"contrast", STK_ARG_FLOAT, "1.0", 0, 1, "contrast multiplier (0 = uniform grey); may be bound per sample"}
#define ARG_CENTER                                                                                                    \
  {"contrast_center", STK_ARG_FLOAT, NULL, 0, 1,                                                                      \
   "intensity contrast keeps (default: half the input type's range, 128 for uint8, 0.5 for float); may be bound "    \
   "per sample"}
#define ARG_HUE {"hue", STK_ARG_FLOAT, "0.0", 0, 1, "hue rotation in degrees; may be bound per sample"}
#define ARG_SATURATION {"saturation", STK_ARG_FLOAT, "1.0", 0, 1, "saturation multiplier (0 = grey); may be bound per sample"}

static const stk__arg_schema brightness_args[] = {ARG_BRIGHTNESS, ARG_SHIFT, ARG_DTYPE};
static const stk__arg_schema contrast_args[] = {ARG_CONTRAST, ARG_CENTER, ARG_DTYPE};
static const stk__arg_schema brightness_contrast_args[] = {ARG_BRIGHTNESS, ARG_SHIFT, ARG_CONTRAST, ARG_CENTER,
                                                           ARG_DTYPE};
static const stk__arg_schema hue_args[] = {ARG_HUE, ARG_DTYPE};
static const stk__arg_schema saturation_args[] = {ARG_SATURATION, ARG_DTYPE};
static const stk__arg_schema hsv_args[] = {
    ARG_HUE, ARG_SATURATION, {"value", STK_ARG_FLOAT, "1.0", 0, 1, "value (brightness) multiplier; may be bound per sample"},
    ARG_DTYPE};
static const stk__arg_schema color_twist_args[] = {
    ARG_BRIGHTNESS, ARG_CONTRAST, ARG_HUE, ARG_SATURATION, ARG_DTYPE,
    {"image_type", STK_ARG_STRING, "RGB", 0, 0, "colour space of input and output: RGB or BGR"}};
static const stk__arg_schema csc_args[] = {
    {"image_type", STK_ARG_STRING, NULL, 1, 0, "input colour space: RGB, BGR, YCbCr or GRAY"},
    {"output_type", STK_ARG_STRING, NULL, 1, 0, "output colour space: RGB, BGR, YCbCr or GRAY"}};

#define COLOUR_SCHEMA(ident, opname, text, table)                                                                     \
  const stk__op_schema ident = {.name = opname,                                                                       \
                                .doc = text,                                                                          \
                                .min_inputs = 1,                                                                      \
                                .max_inputs = 1,                                                                      \
                                .num_outputs = 1,                                                                     \
                                .devices = STK_OPDEV_CPU | STK_OPDEV_GPU,                                             \
                                .args = table,                                                                        \
                                .num_args = (int)(sizeof table / sizeof table[0]),                                    \
                                .array_outputs = 1u << 0}

COLOUR_SCHEMA(stk__op_brightness, "brightness",
              "out = brightness_shift * range(dtype) + brightness * in, on uint8 or float images (HWC, FHWC, DHWC).",
              brightness_args);
COLOUR_SCHEMA(stk__op_contrast, "contrast",
              "out = contrast_center + contrast * (in - contrast_center), on uint8 or float images.", contrast_args);
COLOUR_SCHEMA(stk__op_brightness_contrast, "brightness_contrast",
              "out = brightness_shift * range(dtype) + brightness * (contrast_center + contrast * (in - "
              "contrast_center)), on uint8 or float images.",
              brightness_contrast_args);
COLOUR_SCHEMA(stk__op_hue, "hue", "Rotates the hue of RGB images by `hue` degrees (in YIQ space).", hue_args);
COLOUR_SCHEMA(stk__op_saturation, "saturation", "Scales the saturation of RGB images (in YIQ space; 0 = grey).",
              saturation_args);
COLOUR_SCHEMA(stk__op_hsv, "hsv",
              "Hue rotation (degrees), saturation and value multipliers of RGB images, as one linear map in YIQ "
              "space.",
              hsv_args);
COLOUR_SCHEMA(stk__op_color_twist, "color_twist",
              "Hue, saturation (YIQ), then out = brightness * (half + contrast * (x - half)), half = half the "
              "input range; RGB or BGR images.",
              color_twist_args);
COLOUR_SCHEMA(stk__op_color_space_conversion, "color_space_conversion",
              "Converts uint8 images between RGB, BGR, YCbCr (ITU-R BT.601, studio range) and GRAY (BT.601 luma).",
              csc_args);
