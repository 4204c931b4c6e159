/* src/ops/decode/decoders_roi.c: decoders.image_crop and decoders.image_slice, CPU
 * implementation: a window chosen per sample from the arguments (DALI's CropAttr and SliceAttr
 * semantics) and the header's oriented size, then stk__image_decode of that window -- JPEG decodes
 * the window only (libjpeg-turbo's ROI decode), the other formats decode whole and cut.
 *
 * image_crop: the window is (crop_h, crop_w) from `crop` = [h, w] or crop_w + crop_h (per-sample
 * inputs allowed), at x = rounding(crop_pos_x * (W - crop_w)), y = rounding(crop_pos_y * (H -
 * crop_h)), rounding "round" (half away from zero) or "truncate"; no crop arguments: the whole
 * image. A window larger than the image is an error naming both sizes.
 * image_slice: start/end per axis from the positional inputs anchor and shape (normalized floats
 * when normalized_anchor/normalized_shape, else absolute; integer inputs are absolute) or from the
 * arguments start/rel_start, end/rel_end, shape/rel_shape; axes by axis_names ("WH" default) or
 * axes (default [1, 0]) over the HWC image; ends rounded to the nearest integer (start and end
 * each), so the slice is [round(start), round(end)). A slice outside the image is an error.
 * Windows are in oriented coordinates (after JPEG's EXIF orientation). Device "mixed" runs this
 * same decode in its CPU pre-stage and uploads the window (decoders_roi_mixed.c).
 * Hot path: run_sample once per sample. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops/common/dali_hints.h"
#include "ops/decode/decoders.h"
#include "ops/op_impls.h"

typedef struct roi_state {
  stk__decoder_params params;
  int slice;    /* 1: image_slice, 0: image_crop */
  int truncate; /* image_crop rounding = "truncate" */
  int axes[2];  /* image_slice: HWC axis of each coordinate (0 = H, 1 = W) */
  int num_axes;
} roi_state;

/* ---- Arguments ------------------------------------------------------------------------------- */
static stk_status slice_axes(const stk__op *op, roi_state *s, char *err, size_t err_size) {
  const char *names =
      stk__arg_is_set(op, "axis_names") || !stk__arg_is_set(op, "axes") ? stk__arg_string(op, "axis_names") : NULL;
  if (names) {
    if (!names[0]) names = "WH";
    s->num_axes = (int)strlen(names);
    for (int i = 0; i < s->num_axes && s->num_axes <= 2; i++)
      s->axes[i] = names[i] == 'H' ? 0 : names[i] == 'W' ? 1 : -1;
  } else {
    size_t n;
    const int64_t *axes = stk__arg_int_list(op, "axes", &n);
    s->num_axes = (int)n;
    for (size_t i = 0; i < n && n <= 2; i++) s->axes[i] = axes[i] < 0 ? (int)(axes[i] + 3) : (int)axes[i];
  }
  int ok = s->num_axes >= 1 && s->num_axes <= 2;
  for (int i = 0; ok && i < s->num_axes; i++) ok = s->axes[i] == 0 || s->axes[i] == 1;
  if (ok && s->num_axes == 2) ok = s->axes[0] != s->axes[1];
  if (!ok) {
    stk__errorf(err, err_size,
                "axis_names / axes must name H and/or W of the HWC image, each once (e.g. \"WH\", "
                "[1, 0])");
    return STK_EINVAL;
  }
  return STK_OK;
}

static stk_status roi_init(stk__op *op, int slice, char *err, size_t err_size) {
  roi_state s;
  memset(&s, 0, sizeof s);
  s.slice = slice;
  stk_status st = stk__decoder_params_get(op, &s.params, err, err_size);
  if (st != STK_OK) return st;
  if (slice) {
    st = slice_axes(op, &s, err, err_size);
    if (st != STK_OK) return st;
    const int positional = op->num_inputs > 1;
    static const char *const named[] = {"start", "rel_start", "end", "rel_end", "shape", "rel_shape"};
    for (size_t i = 0; i < sizeof named / sizeof named[0]; i++)
      if (stk__arg_is_set(op, named[i]) && positional) {
        stk__errorf(err, err_size, "argument %s cannot be combined with the anchor and shape inputs", named[i]);
        return STK_EINVAL;
      }
    if (op->num_inputs == 2) {
      stk__errorf(err, err_size, "the anchor input needs the shape input too (3 inputs: data, anchor, shape)");
      return STK_EINVAL;
    }
  } else {
    const char *rounding = stk__arg_string(op, "rounding");
    if (rounding[0] && strcmp(rounding, "round") && strcmp(rounding, "truncate")) {
      stk__errorf(err, err_size, "rounding \"%s\" is not one of round, truncate", rounding);
      return STK_EINVAL;
    }
    s.truncate = !strcmp(rounding, "truncate");
    size_t n;
    (void)stk__arg_float_list(op, "crop", &n);
    const int has_crop = stk__arg_is_set(op, "crop"), has_w = stk__arg_is_set(op, "crop_w"),
              has_h = stk__arg_is_set(op, "crop_h");
    if ((has_crop && n != 2) || (has_crop && (has_w || has_h)) || has_w != has_h) {
      stk__errorf(err, err_size, "give the window as crop = [height, width], or as crop_w and crop_h together");
      return STK_EINVAL;
    }
  }
  /* both devices decode the window on the CPU (stk__decoders_roi_run_sample): the set of JPEG files
   * already checked (decoders.h), freed by stk__decoders_roi_destroy */
  st = stk__decoder_verified_open(&s.params, err, err_size);
  if (st == STK_OK) st = stk__op_keep_state(op, &s, sizeof s);
  if (st != STK_OK) stk__decoder_verified_close(&s.params);
  return st;
}

void stk__decoders_roi_destroy(stk__op *op) {
  if (op->state) stk__decoder_verified_close(&((roi_state *)op->state)->params);
  stk__op_free_state(op);
}

stk_status stk__decoders_crop_init(stk__op *op, char *err, size_t err_size) { return roi_init(op, 0, err, err_size); }
stk_status stk__decoders_slice_init(stk__op *op, char *err, size_t err_size) { return roi_init(op, 1, err, err_size); }

/* A scalar argument: its per-sample input when bound, else its value. */
static double scalar_arg(const stk__op *op, stk__tensor *const *inputs, const char *name) {
  const stk__tensor *t = stk__arg_input(op, inputs, name);
  return t ? stk__tensor_scalar(t) : stk__arg_float(op, name);
}

/* ---- image_crop's window ----------------------------------------------------------------------- */
static stk_status crop_window(const stk__op *op, const roi_state *s, stk__tensor *const *inputs, int width, int height,
                              stk__window *win, char *err, size_t err_size) {
  double cw = width, ch = height;
  size_t n;
  const double *crop = stk__arg_float_list(op, "crop", &n);
  if (stk__arg_is_set(op, "crop") && n == 2) ch = crop[0], cw = crop[1];
  else if (stk__arg_is_set(op, "crop_w")) cw = scalar_arg(op, inputs, "crop_w"), ch = scalar_arg(op, inputs, "crop_h");
  const double px = scalar_arg(op, inputs, "crop_pos_x"), py = scalar_arg(op, inputs, "crop_pos_y");
  if (!(px >= 0.0 && px <= 1.0 && py >= 0.0 && py <= 1.0)) {
    stk__errorf(err, err_size, "crop_pos_x %g / crop_pos_y %g must be in [0, 1]", px, py);
    return STK_EINVAL;
  }
  if (!(cw >= 1.0 && ch >= 1.0) || cw > width || ch > height) {
    stk__errorf(err, err_size, "crop window %gx%g (w x h) does not fit the %dx%d image", cw, ch, width, height);
    return STK_EINVAL;
  }
  win->w = (int)cw, win->h = (int)ch;
  const double x = px * (width - win->w), y = py * (height - win->h);
  win->x = (int)(s->truncate ? trunc(x) : round(x));
  win->y = (int)(s->truncate ? trunc(y) : round(y));
  return STK_OK;
}

/* ---- image_slice's window ---------------------------------------------------------------------- */
/* A 1-D positional input's values (at most 2) and whether they are integers. */
static stk_status vector_input(const stk__tensor *t, const char *what, int want, double *out, int *integer, char *err,
                               size_t err_size) {
  const size_t count = t->ndim == 0 ? 1 : t->ndim == 1 ? (size_t)t->shape[0] : 0;
  if (count != (size_t)want) {
    stk__errorf(err, err_size, "the %s input must hold %d numbers (one per axis), got %zu", what, want, count);
    return STK_EINVAL;
  }
  *integer = 1;
  for (int i = 0; i < want; i++) {
    switch (t->dtype) {
      case STK_DTYPE_FLOAT32:
        out[i] = ((const float *)t->data)[i], *integer = 0;
        break;
      case STK_DTYPE_FLOAT64:
        out[i] = ((const double *)t->data)[i], *integer = 0;
        break;
      case STK_DTYPE_INT32:
        out[i] = ((const int32_t *)t->data)[i];
        break;
      case STK_DTYPE_INT64:
        out[i] = (double)((const int64_t *)t->data)[i];
        break;
      default:
        stk__errorf(err, err_size, "the %s input must be float32, float64, int32 or int64, got %s", what,
                    stk_dtype_name(t->dtype));
        return STK_EINVAL;
    }
  }
  return STK_OK;
}

/* start and end of every axis (in its extent's pixels, not rounded yet). */
static stk_status slice_bounds(const stk__op *op, const roi_state *s, stk__tensor *const *inputs, const double *extent,
                               double *start, double *end, char *err, size_t err_size) {
  const int k = s->num_axes;
  if (op->num_inputs >= 3) {
    double anchor[2], shape[2];
    int anchor_int, shape_int;
    stk_status st = vector_input(inputs[1], "anchor", k, anchor, &anchor_int, err, err_size);
    if (st == STK_OK) st = vector_input(inputs[2], "shape", k, shape, &shape_int, err, err_size);
    if (st != STK_OK) return st;
    const int norm_a = !anchor_int && stk__arg_bool(op, "normalized_anchor"),
              norm_s = !shape_int && stk__arg_bool(op, "normalized_shape");
    for (int i = 0; i < k; i++) {
      start[i] = norm_a ? anchor[i] * extent[i] : anchor[i];
      end[i] = start[i] + (norm_s ? shape[i] * extent[i] : shape[i]);
    }
    return STK_OK;
  }
  static const char *const names[6] = {"start", "rel_start", "end", "rel_end", "shape", "rel_shape"};
  const double *values[6] = {NULL};
  double converted[6][2]; /* the integer arguments as doubles */
  for (int a = 0; a < 6; a++) {
    if (!stk__arg_is_set(op, names[a])) continue;
    size_t n;
    const int64_t *ints = a % 2 == 0 ? stk__arg_int_list(op, names[a], &n) : NULL;
    const double *floats = a % 2 == 1 ? stk__arg_float_list(op, names[a], &n) : NULL;
    if (n != (size_t)k) {
      stk__errorf(err, err_size, "%s must have %d values (one per axis), got %zu", names[a], k, n);
      return STK_EINVAL;
    }
    for (int i = 0; ints && i < k; i++) converted[a][i] = (double)ints[i];
    values[a] = ints ? converted[a] : floats;
  }
  if ((values[2] || values[3]) && (values[4] || values[5])) {
    stk__errorf(err, err_size, "give the slice's end (end/rel_end) or its shape (shape/rel_shape), not both");
    return STK_EINVAL;
  }
  for (int i = 0; i < k; i++) {
    const double e = extent[i];
    start[i] = values[0] ? values[0][i] : values[1] ? values[1][i] * e : 0.0;
    end[i] = values[2]   ? values[2][i]
             : values[3] ? values[3][i] * e
             : values[4] ? start[i] + values[4][i]
             : values[5] ? start[i] + values[5][i] * e
                         : e;
  }
  return STK_OK;
}

static stk_status slice_window(const stk__op *op, const roi_state *s, stk__tensor *const *inputs, int width, int height,
                               stk__window *win, char *err, size_t err_size) {
  double extent[2], start[2], end[2];
  for (int i = 0; i < s->num_axes; i++) extent[i] = s->axes[i] == 0 ? height : width;
  stk_status st = slice_bounds(op, s, inputs, extent, start, end, err, err_size);
  if (st != STK_OK) return st;
  *win = (stk__window){0, 0, width, height};
  for (int i = 0; i < s->num_axes; i++) {
    const double lo = round(start[i]), hi = round(end[i]);
    if (!(lo >= 0.0 && hi <= extent[i] && hi - lo >= 1.0)) {
      stk__errorf(err, err_size, "slice [%g, %g) of axis %c is not inside its extent %g (out of bounds)", start[i],
                  end[i], s->axes[i] == 0 ? 'H' : 'W', extent[i]);
      return STK_EINVAL;
    }
    if (s->axes[i] == 0) win->y = (int)lo, win->h = (int)(hi - lo);
    else win->x = (int)lo, win->w = (int)(hi - lo);
  }
  return STK_OK;
}

/* ---- CPU implementation ---------------------------------------------------------------------- */
stk_status stk__decoders_roi_run_sample(stk__op *op, stk__sample_ctx *ctx, stk__tensor *const *inputs,
                                        stk__tensor *const *outputs) {
  const roi_state *s = (const roi_state *)op->state;
  const stk__tensor *in = inputs[0];
  if (in->dtype != STK_DTYPE_UINT8 || in->ndim != 1) {
    stk__errorf(ctx->err, ctx->err_size, "input must be encoded bytes (uint8, 1-D), got %s with %d dimensions",
                stk_dtype_name(in->dtype), in->ndim);
    return STK_EINVAL;
  }
  const uint8_t *data = (const uint8_t *)in->data;
  int width, height;
  stk_status st = stk__image_oriented_size(data, in->nbytes, &width, &height, ctx->err, ctx->err_size);
  if (st != STK_OK) return st;
  stk__window win;
  st = s->slice ? slice_window(op, s, inputs, width, height, &win, ctx->err, ctx->err_size)
                : crop_window(op, s, inputs, width, height, &win, ctx->err, ctx->err_size);
  if (st != STK_OK) return st;
  const stk__image_spec spec = stk__decoder_spec(&s->params);
  return stk__image_decode(data, in->nbytes, &spec, &win, 0, 0, op->host_budget, ctx, outputs[0], ctx->err,
                           ctx->err_size);
}

const stk__op_impl stk__cpu_impl_decoders_image_crop = {
    .init = stk__decoders_crop_init,
    .destroy = stk__decoders_roi_destroy,
    .run_sample = stk__decoders_roi_run_sample,
};
const stk__op_impl stk__cpu_impl_decoders_image_slice = {
    .init = stk__decoders_slice_init,
    .destroy = stk__decoders_roi_destroy,
    .run_sample = stk__decoders_roi_run_sample,
};

/* ---- Schemas --------------------------------------------------------------------------------- */
static const stk__arg_schema crop_args[] = {
    STK__DECODER_COMMON_ARGS,
    STK__DALI_DECODER_HINT_ARGS,
    {"crop", STK_ARG_FLOAT_LIST, NULL, 0, 0, "Window [height, width] in pixels (not with crop_w/crop_h)."},
    {"crop_w", STK_ARG_FLOAT, "0", 0, 1, "Window width in pixels (with crop_h; may be a per-sample input)."},
    {"crop_h", STK_ARG_FLOAT, "0", 0, 1, "Window height in pixels (with crop_w; may be a per-sample input)."},
    {"crop_pos_x", STK_ARG_FLOAT, "0.5", 0, 1,
     "Normalized horizontal position of the window: x = crop_pos_x * (W - crop_w), rounded by `rounding`."},
    {"crop_pos_y", STK_ARG_FLOAT, "0.5", 0, 1,
     "Normalized vertical position of the window: y = crop_pos_y * (H - crop_h), rounded by `rounding`."},
    {"rounding", STK_ARG_STRING, "round", 0, 0,
     "How the window's start becomes an integer: round (half away from zero) or truncate."},
};

static const stk__arg_schema slice_args[] = {
    STK__DECODER_COMMON_ARGS,
    STK__DALI_DECODER_HINT_ARGS,
    {"axis_names", STK_ARG_STRING, "WH", 0, 0, "Axes the slice coordinates are given for, as layout letters."},
    {"axes", STK_ARG_INT_LIST, "[1, 0]", 0, 0, "Axes as indices of the HWC image (used when axis_names is not given)."},
    {"start", STK_ARG_INT_LIST, NULL, 0, 0, "Start of the slice per axis, in pixels."},
    {"rel_start", STK_ARG_FLOAT_LIST, NULL, 0, 0, "Start of the slice per axis, relative to the extent (0..1)."},
    {"end", STK_ARG_INT_LIST, NULL, 0, 0, "End (exclusive) per axis, in pixels."},
    {"rel_end", STK_ARG_FLOAT_LIST, NULL, 0, 0, "End per axis, relative (0..1)."},
    {"shape", STK_ARG_INT_LIST, NULL, 0, 0, "Size of the slice per axis, in pixels."},
    {"rel_shape", STK_ARG_FLOAT_LIST, NULL, 0, 0, "Size of the slice per axis, relative (0..1)."},
    {"normalized_anchor", STK_ARG_BOOL, "true", 0, 0, "A float anchor input is relative (0..1), else in pixels."},
    {"normalized_shape", STK_ARG_BOOL, "true", 0, 0, "A float shape input is relative (0..1), else in pixels."},
};

const stk__op_schema stk__op_decoders_image_crop = {
    .name = "decoders.image_crop",
    .doc =
        "Decodes images (the formats of decoders.image) and extracts a fixed-size window at a relative "
        "position (crop / crop_w, crop_h; crop_pos_x, crop_pos_y). JPEG decodes the window only. Output: HWC.",
    .min_inputs = 1,
    .max_inputs = 1,
    .num_outputs = 1,
    .devices = STK_OPDEV_CPU | STK_OPDEV_MIXED,
    .args = crop_args,
    .num_args = (int)(sizeof crop_args / sizeof crop_args[0]),
    .array_outputs = 1u << 0,
};

const stk__op_schema stk__op_decoders_image_slice = {
    .name = "decoders.image_slice",
    .doc =
        "Decodes images (the formats of decoders.image) and extracts a slice given by the inputs anchor and "
        "shape, or by start/end/shape arguments (absolute or rel_*). JPEG decodes the slice only. Inputs: "
        "encoded bytes [, anchor, shape]. Output: HWC.",
    .min_inputs = 1,
    .max_inputs = 3,
    .num_outputs = 1,
    .devices = STK_OPDEV_CPU | STK_OPDEV_MIXED,
    .args = slice_args,
    .num_args = (int)(sizeof slice_args / sizeof slice_args[0]),
    .array_outputs = 1u << 0,
};
