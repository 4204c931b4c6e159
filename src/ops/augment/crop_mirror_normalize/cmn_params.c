/* src/ops/augment/crop_mirror_normalize/cmn_params.c: the `crop_mirror_normalize` argument parse shared by its CPU and
 * GPU implementations, and the per-sample crop placement and channel check. Parse: build time;
 * crop and check: per sample, cheap. */
#include <math.h>
#include <string.h>

#include "ops/augment/crop_mirror_normalize/cmn_params.h"
#include "ops/common/dtype.h"

static stk_status fail(char *err, size_t err_size, const char *what) {
  stk__errorf(err, err_size, "%s", what);
  return STK_EINVAL;
}

/* Crop size: crop=[h, w] (one value = square) or crop_h/crop_w, not both; and its position. */
static stk_status crop_args(const stk__op *op, stk__cmn_params *p, char *err, size_t err_size) {
  size_t count;
  const double *crop = stk__arg_float_list(op, "crop", &count);
  int have_hw = stk__arg_is_set(op, "crop_h") || stk__arg_is_set(op, "crop_w");
  if (count > 0 && have_hw) return fail(err, err_size, "give either 'crop' or 'crop_h'/'crop_w', not both");
  if (count > 2) return fail(err, err_size, "argument 'crop' expects [height, width] (or one value)");
  double ch = 0, cw = 0;
  if (count > 0) {
    ch = crop[0];
    cw = count == 2 ? crop[1] : crop[0];
  } else {
    ch = stk__arg_float(op, "crop_h");
    cw = stk__arg_float(op, "crop_w");
  }
  if (ch < 0 || cw < 0 || ch > 65535 || cw > 65535)
    return fail(err, err_size, "the crop size must be between 0 and 65535");
  p->crop_h = (int)(ch + 0.5);
  p->crop_w = (int)(cw + 0.5);
  p->pos_x = stk__arg_float(op, "crop_pos_x");
  p->pos_y = stk__arg_float(op, "crop_pos_y");
  if (p->pos_x < 0 || p->pos_x > 1 || p->pos_y < 0 || p->pos_y > 1)
    return fail(err, err_size, "crop_pos_x and crop_pos_y must lie in [0, 1]");
  return STK_OK;
}

/* Normalisation: out = scale * (x - mean) / std + shift, as (x - mean) * (scale / std) + shift. */
static stk_status normalize_args(const stk__op *op, stk__cmn_params *p, char *err, size_t err_size) {
  const double *mean = stk__arg_float_list(op, "mean", &p->mean_count);
  const double *std = stk__arg_float_list(op, "std", &p->std_count);
  if (p->mean_count < 1 || p->mean_count > 4 || p->std_count < 1 || p->std_count > 4) {
    stk__errorf(err, err_size, "'mean' and 'std' need 1 to 4 values (one per channel), got %zu and %zu", p->mean_count,
                p->std_count);
    return STK_EINVAL;
  }
  double scale = stk__arg_float(op, "scale");
  for (int c = 0; c < 4; c++) {
    double m = mean[p->mean_count == 1 ? 0 : (c < (int)p->mean_count ? c : 0)];
    double s = std[p->std_count == 1 ? 0 : (c < (int)p->std_count ? c : 0)];
    if (s == 0 || !isfinite(s)) return fail(err, err_size, "'std' values must be finite and non-zero");
    p->mean[c] = (float)m;
    p->inv_std[c] = (float)(scale / s);
  }
  p->shift = (float)stk__arg_float(op, "shift");
  const double *fill = stk__arg_float_list(op, "fill_values", &p->fill_count);
  if (p->fill_count > 5) return fail(err, err_size, "'fill_values' takes one value or one per output channel");
  for (int c = 0; c < 5; c++)
    p->fill[c] = p->fill_count ? (float)fill[p->fill_count == 1 ? 0 : (c < (int)p->fill_count ? c : 0)] : 0.0f;
  return STK_OK;
}

/* Output layout, dtype, padding and the out-of-bounds policy. */
static stk_status output_args(const stk__op *op, stk__cmn_params *p, char *err, size_t err_size) {
  static const struct {
    const char *name;
    stk__out_layout frame;
    int sequence, channels_outer;
  } layouts[] = {{"CHW", STK__LAYOUT_CHW, 0, 0},
                 {"HWC", STK__LAYOUT_HWC, 0, 0},
                 {"FCHW", STK__LAYOUT_CHW, 1, 0},
                 {"CFHW", STK__LAYOUT_CHW, 1, 1},
                 {"FHWC", STK__LAYOUT_HWC, 1, 0}};
  const char *layout = stk__arg_string(op, "output_layout");
  size_t k = 0;
  while (k < sizeof layouts / sizeof layouts[0] && strcmp(layout, layouts[k].name) != 0) k++;
  if (k == sizeof layouts / sizeof layouts[0]) {
    stk__errorf(err, err_size,
                "argument 'output_layout' expects \"CHW\" or \"HWC\" (images), \"FCHW\", \"CFHW\" or \"FHWC\" "
                "(sequences), got \"%s\"",
                layout);
    return STK_EINVAL;
  }
  p->layout = layouts[k].frame;
  p->sequence_layout = layouts[k].sequence;
  p->channels_outer = layouts[k].channels_outer;
  p->layout_default = !stk__arg_is_set(op, "output_layout");
  const char *dtype = stk__arg_string(op, "dtype");
  if (stk__dtype_parse(dtype, &p->dtype) != STK_OK ||
      (p->dtype != STK_DTYPE_FLOAT32 && p->dtype != STK_DTYPE_FLOAT16 && p->dtype != STK_DTYPE_UINT8)) {
    stk__errorf(err, err_size, "argument 'dtype' expects \"float\", \"float16\" or \"uint8\", got \"%s\"", dtype);
    return STK_EINVAL;
  }
  p->pad_output = stk__arg_bool(op, "pad_output");
  const char *oob = stk__arg_string(op, "out_of_bounds_policy");
  if (strcmp(oob, "error") == 0) p->oob = STK__OOB_ERROR;
  else if (strcmp(oob, "pad") == 0) p->oob = STK__OOB_PAD;
  else if (strcmp(oob, "trim_to_shape") == 0) p->oob = STK__OOB_TRIM;
  else {
    stk__errorf(err, err_size,
                "argument 'out_of_bounds_policy' expects \"error\", \"pad\" or \"trim_to_shape\", got \"%s\"", oob);
    return STK_EINVAL;
  }
  return STK_OK;
}

stk_status stk__cmn_params_get(const stk__op *op, stk__cmn_params *out, char *err, size_t err_size) {
  memset(out, 0, sizeof *out);
  stk_status s = crop_args(op, out, err, err_size);
  if (s == STK_OK) s = normalize_args(op, out, err, err_size);
  if (s == STK_OK) s = output_args(op, out, err, err_size);
  if (s != STK_OK) return s;
  out->mirror_constant = stk__arg_int(op, "mirror") != 0;
  return STK_OK;
}

stk_status stk__cmn_check_channels(const stk__cmn_params *p, int channels, char *err, size_t err_size) {
  if ((p->mean_count > 1 && (int)p->mean_count != channels) || (p->std_count > 1 && (int)p->std_count != channels)) {
    stk__errorf(err, err_size, "the image has %d channels but mean has %zu and std %zu values", channels, p->mean_count,
                p->std_count);
    return STK_EINVAL;
  }
  return STK_OK;
}

stk_status stk__cmn_crop(const stk__cmn_params *p, int w, int h, stk__window *crop, char *err, size_t err_size) {
  int crop_w = p->crop_w ? p->crop_w : w, crop_h = p->crop_h ? p->crop_h : h;
  int x = stk__crop_start(p->pos_x, w, crop_w), y = stk__crop_start(p->pos_y, h, crop_h);
  if (x < 0 || y < 0 || x + crop_w > w || y + crop_h > h) {
    if (p->oob == STK__OOB_ERROR) {
      stk__errorf(err, err_size,
                  "the %dx%d crop at (%d, %d) does not fit the %dx%d image (out_of_bounds_policy=\"error\"; use "
                  "\"pad\" or \"trim_to_shape\")",
                  crop_w, crop_h, x, y, w, h);
      return STK_EINVAL;
    }
    if (p->oob == STK__OOB_TRIM) {
      int x1 = x + crop_w > w ? w : x + crop_w, y1 = y + crop_h > h ? h : y + crop_h;
      x = x < 0 ? 0 : x;
      y = y < 0 ? 0 : y;
      crop_w = x1 - x;
      crop_h = y1 - y;
    }
  }
  crop->x = x;
  crop->y = y;
  crop->w = crop_w;
  crop->h = crop_h;
  return STK_OK;
}

stk_status stk__cmn_check_layout(const stk__cmn_params *p, int sequence, char *err, size_t err_size) {
  if (p->layout_default || p->sequence_layout == sequence) return STK_OK;
  if (sequence)
    stk__errorf(err, err_size,
                "argument 'output_layout' is an image layout but the input is an FHWC sequence: use \"FCHW\", "
                "\"CFHW\" or \"FHWC\"");
  else
    stk__errorf(err, err_size,
                "argument 'output_layout' is a sequence layout but the input is an HWC image: use \"CHW\" or \"HWC\"");
  return STK_EINVAL;
}

stk__cmn_output stk__cmn_output_shape(const stk__cmn_params *p, int sequence, int frames, int crop_h, int crop_w,
                                      int out_channels) {
  stk__cmn_output o;
  const int chw = p->layout == STK__LAYOUT_CHW;
  const size_t frame = (size_t)crop_h * (size_t)crop_w * (size_t)out_channels, plane = (size_t)crop_h * crop_w;
  const int64_t image[3] = {chw ? out_channels : crop_h, chw ? crop_h : crop_w, chw ? crop_w : out_channels};
  o.frame_step = frame;
  o.plane_stride = plane;
  if (!sequence) {
    o.ndim = 3;
    memcpy(o.shape, image, sizeof image);
    o.shape[3] = 0;
    o.layout = chw ? "CHW" : "HWC";
    return o;
  }
  o.ndim = 4;
  o.shape[0] = frames;
  memcpy(o.shape + 1, image, sizeof image);
  o.layout = chw ? "FCHW" : "FHWC";
  if (chw && p->channels_outer) { /* [C, F, H, W]: frame f is plane f of each channel */
    o.shape[0] = out_channels;
    o.shape[1] = frames;
    o.layout = "CFHW";
    o.frame_step = plane;
    o.plane_stride = plane * (size_t)frames;
  }
  return o;
}
