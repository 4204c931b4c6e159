/* src/ops/augment/resize/resize_params.c: the `resize` operator's argument parse (one for its CPU and GPU
 * implementations) and DALI's output-size rules. Parse: build time; stk__resize_plan: per sample. */
#include <math.h>
#include <string.h>

#include "ops/augment/resize/resize_params.h"

stk_status stk__output_size_check(const char *what, double width, double height, char *err, size_t err_size) {
  if (width * height > STK__OUTPUT_MAX_PIXELS) {
    stk__errorf(err, err_size,
                "%s ask for %.0fx%.0f = %.0f pixels per image: the limit is %.0f (8K UHD, 7680x4320, fits)", what,
                width, height, width * height, STK__OUTPUT_MAX_PIXELS);
    return STK_EINVAL;
  }
  if (width > STK__OUTPUT_MAX_SIDE || height > STK__OUTPUT_MAX_SIDE) {
    stk__errorf(err, err_size, "%s ask for an output side of %.0f pixels: the largest allowed is %d", what,
                width > height ? width : height, STK__OUTPUT_MAX_SIDE);
    return STK_EINVAL;
  }
  return STK_OK;
}

stk_status stk__resize_mode_parse(const char *text, stk__resize_mode *out) {
  static const char *const names[] = {"default", "stretch", "not_larger", "not_smaller"};
  if (!text) return STK_EINVAL;
  for (int i = 0; i < 4; i++)
    if (strcmp(text, names[i]) == 0) {
      *out = (stk__resize_mode)i;
      return STK_OK;
    }
  return STK_EINVAL;
}

/* ---- Output size rules ---------------------------------------------------------------------- */

stk_status stk__resize_plan(const stk__resize_params *params, int in_w, int in_h, int *out_w, int *out_h,
                            double roi[4]) {
  if (in_w <= 0 || in_h <= 0) return STK_EINVAL;
  double want_x = params->resize_x, want_y = params->resize_y;
  stk__resize_mode mode = params->mode;
  if (params->resize_shorter > 0) {
    want_x = want_y = params->resize_shorter;
    mode = STK__RESIZE_NOT_SMALLER;
  } else if (params->resize_longer > 0) {
    want_x = want_y = params->resize_longer;
    mode = STK__RESIZE_NOT_LARGER;
  }
  double fx = in_w, fy = in_h; /* fractional output size */
  int keeps_aspect = 1;
  if (want_x > 0 && want_y > 0) {
    if (mode == STK__RESIZE_NOT_LARGER || mode == STK__RESIZE_NOT_SMALLER) {
      double sx = want_x / in_w, sy = want_y / in_h;
      double s = mode == STK__RESIZE_NOT_LARGER ? (sx < sy ? sx : sy) : (sx > sy ? sx : sy);
      fx = in_w * s;
      fy = in_h * s;
    } else {
      fx = want_x;
      fy = want_y;
      keeps_aspect = 0;
    }
  } else if (want_x > 0) {
    fx = want_x;
    if (mode == STK__RESIZE_STRETCH) keeps_aspect = 0;
    else fy = in_h * (want_x / in_w);
  } else if (want_y > 0) {
    fy = want_y;
    if (mode == STK__RESIZE_STRETCH) keeps_aspect = 0;
    else fx = in_w * (want_y / in_h);
  }
  /* max_size: shrink both extents together when the aspect ratio is kept, each alone otherwise. */
  double cap = 1.0;
  if (params->max_size_x > 0 && fx > params->max_size_x) {
    if (keeps_aspect) cap = params->max_size_x / fx < cap ? params->max_size_x / fx : cap;
    else fx = params->max_size_x;
  }
  if (params->max_size_y > 0 && fy > params->max_size_y) {
    if (keeps_aspect) cap = params->max_size_y / fy < cap ? params->max_size_y / fy : cap;
    else fy = params->max_size_y;
  }
  fx *= cap;
  fy *= cap;
  if (!(fx >= 0.5 && fy >= 0.5) || fx > STK__OUTPUT_MAX_SIDE || fy > STK__OUTPUT_MAX_SIDE ||
      fx * fy > STK__OUTPUT_MAX_PIXELS)
    return STK_EINVAL;
  int ox = (int)floor(fx + 0.5), oy = (int)floor(fy + 0.5);
  *out_w = ox;
  *out_h = oy;
  if (params->subpixel_scale) {
    /* Keep the exact scale fx / in_w: the rounded output covers a slightly smaller or larger
     * source interval, centred on the image. */
    double len_x = (double)in_w * (double)ox / fx, len_y = (double)in_h * (double)oy / fy;
    roi[0] = ((double)in_w - len_x) * 0.5;
    roi[1] = ((double)in_h - len_y) * 0.5;
    roi[2] = roi[0] + len_x;
    roi[3] = roi[1] + len_y;
  } else {
    roi[0] = 0.0;
    roi[1] = 0.0;
    roi[2] = in_w;
    roi[3] = in_h;
  }
  return STK_OK;
}

int stk__resize_fixed_size(const stk__resize_params *params, int *out_w, int *out_h) {
  if (!(params->resize_x > 0 && params->resize_y > 0) || params->resize_shorter > 0 || params->resize_longer > 0 ||
      params->mode == STK__RESIZE_NOT_LARGER || params->mode == STK__RESIZE_NOT_SMALLER)
    return 0;
  double roi[4]; /* this branch of stk__resize_plan reads nothing of the image but that it is not empty */
  return stk__resize_plan(params, 1, 1, out_w, out_h, roi) == STK_OK;
}

/* ---- Argument parse ------------------------------------------------------------------------- */

stk_status stk__interp_arg(const stk__op *op, stk__interp *out, char *err, size_t err_size) {
  const char *text = stk__arg_string(op, "interp_type");
  if (stk__interp_parse(text, out) == STK_OK) return STK_OK;
  stk__errorf(err, err_size,
              "argument 'interp_type' expects INTERP_LINEAR, INTERP_NN, INTERP_CUBIC (or linear, nearest, cubic), "
              "got \"%s\"",
              text);
  return STK_EINVAL;
}

/* A float list argument given as one value (both extents) or [height, width]. */
static stk_status extents_arg(const stk__op *op, const char *name, double *height, double *width, char *err,
                              size_t err_size) {
  size_t count;
  const double *v = stk__arg_float_list(op, name, &count);
  if (count == 0) return STK_OK;
  if (count > 2) {
    stk__errorf(err, err_size, "argument '%s' expects one value or [height, width], got %zu values", name, count);
    return STK_EINVAL;
  }
  *height = v[0];
  *width = count == 2 ? v[1] : v[0];
  if (*height < 0 || *width < 0) {
    stk__errorf(err, err_size, "argument '%s' must not be negative", name);
    return STK_EINVAL;
  }
  return STK_OK;
}

/* What the arguments alone say about the output size, against STK__OUTPUT_MAX_*: each extent
 * given (capped by max_size), both when both are given, the square of resize_shorter (the
 * output is at least that). An extent that follows the image's aspect ratio is checked per
 * sample (stk__resize_plan). */
static double capped(double extent, double cap) { return cap > 0 && cap < extent ? cap : extent; }

static stk_status check_output_bounds(const stk__resize_params *p, char *err, size_t err_size) {
  const double x = capped(p->resize_x, p->max_size_x), y = capped(p->resize_y, p->max_size_y);
  stk_status s = STK_OK;
  if (x > 0 && y > 0)
    s = stk__output_size_check("arguments 'resize_x' and 'resize_y' (or 'size')", x, y, err, err_size);
  else if (x > 0) s = stk__output_size_check("argument 'resize_x'", x, 0, err, err_size);
  else if (y > 0) s = stk__output_size_check("argument 'resize_y'", 0, y, err, err_size);
  if (s == STK_OK && p->resize_shorter > 0) {
    const double side = capped(p->resize_shorter, p->max_size_x > p->max_size_y ? p->max_size_x : p->max_size_y);
    s = stk__output_size_check("argument 'resize_shorter'", side, side, err, err_size);
  }
  if (s == STK_OK && p->resize_longer > 0)
    s = stk__output_size_check("argument 'resize_longer'", p->resize_longer, 0, err, err_size);
  return s;
}

/* Exactly one way of giving the output size. */
static stk_status check_size_groups(const stk__resize_params *p, char *err, size_t err_size) {
  if (p->resize_x < 0 || p->resize_y < 0 || p->resize_shorter < 0 || p->resize_longer < 0) {
    stk__errorf(err, err_size, "resize_x, resize_y, resize_shorter and resize_longer must not be negative");
    return STK_EINVAL;
  }
  int explicit_size = p->resize_x > 0 || p->resize_y > 0;
  int groups = explicit_size + (p->resize_shorter > 0) + (p->resize_longer > 0);
  if (groups == 0) {
    stk__errorf(err, err_size, "give an output size: resize_x/resize_y, size, resize_shorter or resize_longer");
    return STK_EINVAL;
  }
  if (groups > 1) {
    stk__errorf(err, err_size, "resize_x/resize_y (or size), resize_shorter and resize_longer are mutually exclusive");
    return STK_EINVAL;
  }
  return check_output_bounds(p, err, err_size);
}

stk_status stk__resize_op_params_get(const stk__op *op, stk__resize_op_params *out, char *err, size_t err_size) {
  memset(out, 0, sizeof *out);
  stk__resize_params *p = &out->size;
  stk_status s = stk__interp_arg(op, &out->interp, err, err_size);
  if (s != STK_OK) return s;
  if (stk__resize_mode_parse(stk__arg_string(op, "mode"), &p->mode) != STK_OK) {
    stk__errorf(err, err_size,
                "argument 'mode' expects \"default\", \"stretch\", \"not_larger\" or \"not_smaller\", got \"%s\"",
                stk__arg_string(op, "mode"));
    return STK_EINVAL;
  }
  out->antialias = stk__arg_bool(op, "antialias");
  p->subpixel_scale = stk__arg_bool(op, "subpixel_scale");
  p->resize_x = stk__arg_float(op, "resize_x");
  p->resize_y = stk__arg_float(op, "resize_y");
  p->resize_shorter = stk__arg_float(op, "resize_shorter");
  p->resize_longer = stk__arg_float(op, "resize_longer");
  s = extents_arg(op, "size", &p->resize_y, &p->resize_x, err, err_size);
  if (s == STK_OK) s = extents_arg(op, "max_size", &p->max_size_y, &p->max_size_x, err, err_size);
  if (s == STK_OK) s = check_size_groups(p, err, err_size);
  return s;
}
