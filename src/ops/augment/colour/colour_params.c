/* src/ops/augment/colour/colour_params.c: the colour family's argument parse and per-sample affine
 * maps (colour_params.h). Hue, saturation and value act in YIQ space (luma Y kept on the grey axis,
 * the chroma plane I/Q rotated by the hue and scaled by the saturation, all three by the value),
 * folded into one RGB matrix as DALI's hsv does. Parse: build time; the maps: per sample. */
#include <math.h>
#include <string.h>

#include "ops/augment/colour/colour_params.h"
#include "ops/common/dtype.h"

const char *const stk__colour_arg_names[STK__COLOUR_NUM_ARGS] = {
    "brightness", "brightness_shift", "contrast", "contrast_center", "hue", "saturation", "value"};

static const struct {
  const char *name;
  stk__colour_kind kind;
} kinds[] = {{"brightness", STK__COLOUR_BRIGHTNESS},
             {"contrast", STK__COLOUR_CONTRAST},
             {"brightness_contrast", STK__COLOUR_BRIGHTNESS_CONTRAST},
             {"hue", STK__COLOUR_HUE},
             {"saturation", STK__COLOUR_SATURATION},
             {"hsv", STK__COLOUR_HSV},
             {"color_twist", STK__COLOUR_TWIST},
             {"color_space_conversion", STK__COLOUR_SPACE_CONVERSION}};

static stk_status space_parse(const char *text, const char *arg, stk__colour_space *out, char *err, size_t err_size) {
  static const char *const names[] = {"RGB", "BGR", "YCbCr", "GRAY"};
  if (strncmp(text, "DALIImageType.", 14) == 0) text += 14;
  for (int k = 0; k < 4; k++)
    if (strcasecmp(text, names[k]) == 0) {
      *out = (stk__colour_space)k;
      return STK_OK;
    }
  stk__errorf(err, err_size, "argument '%s' expects \"RGB\", \"BGR\", \"YCbCr\" or \"GRAY\", got \"%s\"", arg, text);
  return STK_EINVAL;
}

stk_status stk__colour_params_get(const stk__op *op, stk__colour_params *out, char *err, size_t err_size) {
  memset(out, 0, sizeof *out);
  size_t k = 0;
  while (k < sizeof kinds / sizeof kinds[0] && strcmp(op->schema->name, kinds[k].name) != 0) k++;
  if (k == sizeof kinds / sizeof kinds[0]) {
    stk__errorf(err, err_size, "operator %s is not a colour operator", op->schema->name);
    return STK_EINVAL;
  }
  out->kind = kinds[k].kind;
  const char *dtype = stk__arg_string(op, "dtype");
  out->has_dtype = dtype[0] != '\0';
  if (out->has_dtype && stk__dtype_parse(dtype, &out->dtype) != STK_OK) {
    stk__errorf(err, err_size, "argument 'dtype' expects " STK__DTYPE_NAMES ", got \"%s\"", dtype);
    return STK_EINVAL;
  }
  out->center_given = stk__arg_is_set(op, "contrast_center");
  out->image_type = out->output_type = STK__CS_RGB;
  stk_status s = STK_OK;
  if (stk__arg(op, "image_type")) s = space_parse(stk__arg_string(op, "image_type"), "image_type", &out->image_type, err, err_size);
  if (s == STK_OK && stk__arg(op, "output_type"))
    s = space_parse(stk__arg_string(op, "output_type"), "output_type", &out->output_type, err, err_size);
  if (s == STK_OK && out->kind == STK__COLOUR_TWIST && out->image_type != STK__CS_RGB && out->image_type != STK__CS_BGR) {
    stk__errorf(err, err_size, "argument 'image_type' of color_twist must be \"RGB\" or \"BGR\"");
    s = STK_EINVAL;
  }
  return s;
}

void stk__colour_values_default(stk__colour_values *v) {
  v->brightness = 1.0;
  v->brightness_shift = 0.0;
  v->contrast = 1.0;
  v->contrast_center = -1.0; /* unset: half the input range */
  v->hue = 0.0;
  v->saturation = 1.0;
  v->value = 1.0;
}

double *stk__colour_value_slot(stk__colour_values *v, int k) {
  double *slots[STK__COLOUR_NUM_ARGS] = {&v->brightness, &v->brightness_shift, &v->contrast, &v->contrast_center,
                                         &v->hue,        &v->saturation,       &v->value};
  return k >= 0 && k < STK__COLOUR_NUM_ARGS ? slots[k] : NULL;
}

static int output_channels(const stk__colour_params *p, int channels) {
  if (p->kind != STK__COLOUR_SPACE_CONVERSION) return channels;
  return p->output_type == STK__CS_GRAY ? 1 : 3;
}

stk_status stk__colour_check(const stk__colour_params *p, stk_dtype in, int channels, stk_dtype *out_dtype, char *err,
                             size_t err_size) {
  if (in != STK_DTYPE_UINT8 && in != STK_DTYPE_FLOAT32) {
    stk__errorf(err, err_size, "the input must be uint8 or float (channels last), got dtype %d", (int)in);
    return STK_EINVAL;
  }
  const int matrix = p->kind >= STK__COLOUR_HUE;
  if (p->kind == STK__COLOUR_SPACE_CONVERSION) {
    int want = p->image_type == STK__CS_GRAY ? 1 : 3;
    if (channels != want) {
      stk__errorf(err, err_size, "image_type %s needs %d channel(s), the input has %d",
                  p->image_type == STK__CS_GRAY ? "GRAY" : "RGB/BGR/YCbCr", want, channels);
      return STK_EINVAL;
    }
  } else if (matrix && channels != 3) {
    stk__errorf(err, err_size, "the input must have 3 channels (RGB), it has %d", channels);
    return STK_EINVAL;
  } else if (channels < 1 || channels > 4) {
    stk__errorf(err, err_size, "the input must have 1 to 4 channels (last dimension), it has %d", channels);
    return STK_EINVAL;
  }
  *out_dtype = p->has_dtype ? p->dtype : in;
  (void)output_channels;
  return STK_OK;
}

/* ---- 3x3 helpers (double) ------------------------------------------------------------------- */
static void mat_mul(const double a[9], const double b[9], double out[9]) {
  double r[9];
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 3; j++) r[i * 3 + j] = a[i * 3] * b[j] + a[i * 3 + 1] * b[3 + j] + a[i * 3 + 2] * b[6 + j];
  memcpy(out, r, sizeof r);
}

static void mat_inverse(const double m[9], double out[9]) {
  double det = m[0] * (m[4] * m[8] - m[5] * m[7]) - m[1] * (m[3] * m[8] - m[5] * m[6]) + m[2] * (m[3] * m[7] - m[4] * m[6]);
  out[0] = (m[4] * m[8] - m[5] * m[7]) / det;
  out[1] = (m[2] * m[7] - m[1] * m[8]) / det;
  out[2] = (m[1] * m[5] - m[2] * m[4]) / det;
  out[3] = (m[5] * m[6] - m[3] * m[8]) / det;
  out[4] = (m[0] * m[8] - m[2] * m[6]) / det;
  out[5] = (m[2] * m[3] - m[0] * m[5]) / det;
  out[6] = (m[3] * m[7] - m[4] * m[6]) / det;
  out[7] = (m[1] * m[6] - m[0] * m[7]) / det;
  out[8] = (m[0] * m[4] - m[1] * m[3]) / det;
}

static const double RGB_TO_YIQ[9] = {0.299, 0.587, 0.114, 0.596, -0.274, -0.322, 0.211, -0.523, 0.312};

/* RGB -> RGB matrix of a hue rotation (degrees), saturation and value in YIQ space. */
static void hsv_matrix(double hue_deg, double saturation, double value, double out[9]) {
  double yiq_to_rgb[9], h = hue_deg * M_PI / 180.0;
  mat_inverse(RGB_TO_YIQ, yiq_to_rgb);
  const double c = value * saturation * cos(h), s = value * saturation * sin(h);
  const double adjust[9] = {value, 0, 0, 0, c, -s, 0, s, c};
  double tmp[9];
  mat_mul(adjust, RGB_TO_YIQ, tmp);
  mat_mul(yiq_to_rgb, tmp, out);
}

/* BT.601 studio-range YCbCr from RGB (u8 scale): y = A x + b. */
static const double RGB_TO_YCBCR[9] = {65.481 / 255, 128.553 / 255, 24.966 / 255, -37.797 / 255, -74.203 / 255,
                                       112.0 / 255,  112.0 / 255,   -93.786 / 255, -18.214 / 255};
static const double YCBCR_OFFSET[3] = {16, 128, 128};
static const double GRAY_FROM_RGB[3] = {0.299, 0.587, 0.114};

/* The affine map of `space` (in_c channels) to RGB: 3 x in_c matrix a (rows of 3) and offset b. */
static void to_rgb(stk__colour_space space, double a[9], double b[3]) {
  memset(a, 0, 9 * sizeof *a);
  memset(b, 0, 3 * sizeof *b);
  if (space == STK__CS_RGB) a[0] = a[4] = a[8] = 1;
  else if (space == STK__CS_BGR) a[2] = a[4] = a[6] = 1;
  else if (space == STK__CS_GRAY) a[0] = a[3] = a[6] = 1; /* one input channel */
  else {
    mat_inverse(RGB_TO_YCBCR, a);
    for (int r = 0; r < 3; r++) b[r] = -(a[r * 3] * YCBCR_OFFSET[0] + a[r * 3 + 1] * YCBCR_OFFSET[1] + a[r * 3 + 2] * YCBCR_OFFSET[2]);
  }
}

/* The affine map of RGB to `space` (out_c rows). */
static void from_rgb(stk__colour_space space, double a[9], double b[3]) {
  memset(a, 0, 9 * sizeof *a);
  memset(b, 0, 3 * sizeof *b);
  if (space == STK__CS_RGB) a[0] = a[4] = a[8] = 1;
  else if (space == STK__CS_BGR) a[2] = a[4] = a[6] = 1;
  else if (space == STK__CS_GRAY) memcpy(a, GRAY_FROM_RGB, sizeof GRAY_FROM_RGB);
  else {
    memcpy(a, RGB_TO_YCBCR, sizeof RGB_TO_YCBCR);
    memcpy(b, YCBCR_OFFSET, sizeof YCBCR_OFFSET);
  }
}

static void space_conversion(const stk__colour_params *p, stk__colour_transform *t) {
  double ai[9], bi[3], ao[9], bo[3], m[9];
  t->in_c = p->image_type == STK__CS_GRAY ? 1 : 3;
  t->out_c = p->output_type == STK__CS_GRAY ? 1 : 3;
  if (p->image_type == p->output_type) { /* identity, exactly */
    memset(t->m, 0, sizeof t->m);
    for (int r = 0; r < t->in_c; r++) t->m[r * 3 + r] = 1.0f;
    return;
  }
  to_rgb(p->image_type, ai, bi);
  from_rgb(p->output_type, ao, bo);
  mat_mul(ao, ai, m);
  for (int r = 0; r < 3; r++) {
    t->m[r * 3] = (float)m[r * 3];
    t->m[r * 3 + 1] = (float)m[r * 3 + 1];
    t->m[r * 3 + 2] = (float)m[r * 3 + 2];
    t->offset[r] = (float)(ao[r * 3] * bi[0] + ao[r * 3 + 1] * bi[1] + ao[r * 3 + 2] * bi[2] + bo[r]);
  }
}

stk_status stk__colour_transform_make(const stk__colour_params *p, const stk__colour_values *v, stk_dtype in,
                                      stk_dtype out, int channels, stk__colour_transform *t, char *err,
                                      size_t err_size) {
  memset(t, 0, sizeof *t);
  const double in_half = in == STK_DTYPE_UINT8 ? 128.0 : 0.5;
  const double center = p->center_given ? v->contrast_center : in_half;
  const double out_range = stk__dtype_range_max(out);
  double b = v->brightness, c = v->contrast;
  if (!isfinite(b) || !isfinite(c) || !isfinite(v->brightness_shift) || !isfinite(center) || !isfinite(v->hue) ||
      !isfinite(v->saturation) || !isfinite(v->value)) {
    stk__errorf(err, err_size, "an argument value of this sample is not finite");
    return STK_EINVAL;
  }
  t->in_c = t->out_c = channels;
  switch (p->kind) {
    case STK__COLOUR_BRIGHTNESS:
    case STK__COLOUR_CONTRAST:
    case STK__COLOUR_BRIGHTNESS_CONTRAST:
      /* out = shift * range + b * (center + c * (in - center)) = (b c) in + (shift range + b center (1 - c)) */
      t->per_channel = 1;
      t->scale = (float)(b * c);
      t->offset[0] = (float)(v->brightness_shift * out_range + b * center * (1.0 - c));
      return STK_OK;
    case STK__COLOUR_SPACE_CONVERSION:
      space_conversion(p, t);
      return STK_OK;
    default:
      break;
  }
  double m[9];
  hsv_matrix(v->hue, v->saturation, p->kind == STK__COLOUR_HSV ? v->value : 1.0, m);
  double bc = 1.0, offset = 0.0;
  if (p->kind == STK__COLOUR_TWIST) { /* out = b (center + c (M in - center)) */
    if (b < 0 || c < 0) {
      stk__errorf(err, err_size, "color_twist needs brightness and contrast >= 0, got %g and %g", b, c);
      return STK_EINVAL;
    }
    bc = b * c;
    offset = b * in_half * (1.0 - c);
    if (p->image_type == STK__CS_BGR) { /* the same map on swapped channels: P M P */
      double swapped[9];
      for (int r = 0; r < 3; r++)
        for (int k = 0; k < 3; k++) swapped[r * 3 + k] = m[(2 - r) * 3 + (2 - k)];
      memcpy(m, swapped, sizeof m);
    }
  }
  for (int k = 0; k < 9; k++) t->m[k] = (float)(bc * m[k]);
  for (int r = 0; r < 3; r++) t->offset[r] = (float)offset;
  return STK_OK;
}
