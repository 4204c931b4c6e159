/* src/ops/augment/random_resized_crop/random_resized_crop_params.c: the `random_resized_crop` argument parse shared by
 * its CPU and GPU implementations, and the per-sample window draw. Parse: build time; window: per
 * sample. */
#include <string.h>

#include "ops/augment/random_resized_crop/random_resized_crop_params.h"
#include "ops/augment/resize/resize_params.h"

static stk_status range_arg(const stk__op *op, const char *name, double *lo, double *hi, char *err, size_t err_size) {
  size_t count;
  const double *v = stk__arg_float_list(op, name, &count);
  if (count != 2 && count != 1) {
    stk__errorf(err, err_size, "argument '%s' expects [min, max], got %zu values", name, count);
    return STK_EINVAL;
  }
  *lo = v[0];
  *hi = count == 2 ? v[1] : v[0];
  if (!(*lo > 0) || *hi < *lo) {
    stk__errorf(err, err_size, "argument '%s' expects 0 < min <= max, got [%g, %g]", name, *lo, *hi);
    return STK_EINVAL;
  }
  return STK_OK;
}

static stk_status size_arg(const stk__op *op, stk__random_resized_crop_params *p, char *err, size_t err_size) {
  size_t count;
  const double *size = stk__arg_float_list(op, "size", &count);
  if (count != 1 && count != 2) {
    stk__errorf(err, err_size, "argument 'size' expects one value or [height, width], got %zu values", count);
    return STK_EINVAL;
  }
  double h = size[0], w = count == 2 ? size[1] : size[0];
  if (!(h >= 1 && w >= 1)) {
    stk__errorf(err, err_size, "argument 'size' must be at least 1, got [%g, %g]", h, w);
    return STK_EINVAL;
  }
  stk_status s = stk__output_size_check("argument 'size'", w, h, err, err_size);
  if (s != STK_OK) return s;
  p->out_h = (int)(h + 0.5);
  p->out_w = (int)(w + 0.5);
  return STK_OK;
}

stk_status stk__random_resized_crop_params_get(const stk__op *op, stk__random_resized_crop_params *out, char *err,
                                               size_t err_size) {
  memset(out, 0, sizeof *out);
  stk_status s = size_arg(op, out, err, err_size);
  if (s == STK_OK) s = range_arg(op, "random_area", &out->area_min, &out->area_max, err, err_size);
  if (s != STK_OK) return s;
  if (out->area_max > 1.0) {
    stk__errorf(err, err_size, "argument 'random_area' must lie in (0, 1], got max %g", out->area_max);
    return STK_EINVAL;
  }
  s = range_arg(op, "random_aspect_ratio", &out->ratio_min, &out->ratio_max, err, err_size);
  if (s != STK_OK) return s;
  int64_t attempts = stk__arg_int(op, "num_attempts");
  if (attempts < 0 || attempts > 1000000) {
    stk__errorf(err, err_size, "argument 'num_attempts' must be in [0, 1000000], got %lld", (long long)attempts);
    return STK_EINVAL;
  }
  out->attempts = (int)attempts;
  s = stk__interp_arg(op, &out->interp, err, err_size);
  if (s != STK_OK) return s;
  out->antialias = stk__arg_bool(op, "antialias");
  return STK_OK;
}

stk__window stk__random_resized_crop_window(const stk__random_resized_crop_params *p, const stk__op *op, uint64_t epoch,
                                            int64_t sample_id, int width, int height) {
  stk__rng rng;
  stk__rng_init(&rng, op->seed, (uint32_t)op->id, epoch, sample_id);
  return stk__random_crop_window(&rng, width, height, p->area_min, p->area_max, p->ratio_min, p->ratio_max,
                                 p->attempts);
}
