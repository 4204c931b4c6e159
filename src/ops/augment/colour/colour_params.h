/* src/ops/augment/colour/colour_params.h: the per-pixel colour operators -- brightness, contrast,
 * brightness_contrast, hue, saturation, hsv, color_twist, color_space_conversion -- as one family:
 * every one is, per sample, an affine map of each pixel's channels (a per-channel scale and
 * offset, or a 3x3 matrix and offset), computed on the host from the sample's argument values
 * (constants or per-sample inputs) in double and rounded to float once, so the CPU loop
 * (colour.c) and the GPU kernel (colour_gpu.cu) apply the same float coefficients in the same
 * order: y = ((m0 * x0 + m1 * x1) + m2 * x2) + offset, single precision, no FMA contraction.
 * Output: u8 rounds half up and clamps (stk__u8_from_float); other types as cast stores them.
 * C-callable from .cu files. Parse: build time; the transform: per sample. */
#ifndef STOKER_OPS_AUGMENT_COLOUR_COLOUR_PARAMS_H
#define STOKER_OPS_AUGMENT_COLOUR_COLOUR_PARAMS_H

#include "core/op.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum stk__colour_kind {
  STK__COLOUR_BRIGHTNESS = 0,
  STK__COLOUR_CONTRAST,
  STK__COLOUR_BRIGHTNESS_CONTRAST,
  STK__COLOUR_HUE,
  STK__COLOUR_SATURATION,
  STK__COLOUR_HSV,
  STK__COLOUR_TWIST,
  STK__COLOUR_SPACE_CONVERSION
} stk__colour_kind;

typedef enum stk__colour_space { STK__CS_RGB = 0, STK__CS_BGR, STK__CS_YCBCR, STK__CS_GRAY } stk__colour_space;

typedef struct stk__colour_params {
  stk__colour_kind kind;
  int has_dtype;   /* dtype given: the output type; else the input's */
  stk_dtype dtype;
  stk__colour_space image_type, output_type; /* color_space_conversion; color_twist's image_type (RGB/BGR) */
  int center_given; /* contrast_center given (else half the input type's range) */
} stk__colour_params;

/* The argument values of one sample (names the operator lacks keep their neutral defaults). */
typedef struct stk__colour_values {
  double brightness, brightness_shift, contrast, contrast_center, hue, saturation, value;
} stk__colour_values;

/* The numeric arguments of the family, in this order (stk__colour_values' fields). */
#define STK__COLOUR_NUM_ARGS 7
STK_INTERNAL extern const char *const stk__colour_arg_names[STK__COLOUR_NUM_ARGS];

/* One sample's map: per_channel: y_c = x_c * scale + offset[0] for every channel (in_c = out_c);
 * else y_r = sum_k m[r * 3 + k] * x_k + offset[r] for r < out_c, k < in_c. */
typedef struct stk__colour_transform {
  int per_channel;
  int in_c, out_c;
  float scale;
  float m[9];
  float offset[3];
} stk__colour_transform;

/* The operator's kind (from its schema name) and arguments; STK_EINVAL naming the argument. */
STK_INTERNAL stk_status stk__colour_params_get(const stk__op *op, stk__colour_params *out, char *err, size_t err_size);
/* A value setter: v with each argument the operator has read through get(name) (the constant or
 * the sample's input), the others neutral. */
STK_INTERNAL void stk__colour_values_default(stk__colour_values *v);
STK_INTERNAL double *stk__colour_value_slot(stk__colour_values *v, int k);
/* Checks the input (u8 or float, `channels` last) and the output type; STK_EINVAL with a message. */
STK_INTERNAL stk_status stk__colour_check(const stk__colour_params *p, stk_dtype in, int channels, stk_dtype *out_dtype,
                                          char *err, size_t err_size);
/* The sample's map for an input of type `in` with `channels` channels, output type `out`. */
STK_INTERNAL stk_status stk__colour_transform_make(const stk__colour_params *p, const stk__colour_values *v,
                                                   stk_dtype in, stk_dtype out, int channels,
                                                   stk__colour_transform *t, char *err, size_t err_size);

#ifdef __cplusplus
}
#endif
#endif
