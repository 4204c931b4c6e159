/* src/ops/augment/gaussian_blur/blur_params.c: gaussian_blur's parameter parse, per-sample plan
 * (spatial axes, radius and sigma per axis) and weights (blur_params.h). Build time (parse) and
 * once per sample (plan, weights: O(taps)). */
#include <math.h>
#include <string.h>

#include "ops/augment/gaussian_blur/blur_params.h"
#include "ops/common/dtype.h"

stk_status stk__blur_parse(const stk__op *op, stk__blur_params *p, char *err, size_t err_size) {
  memset(p, 0, sizeof *p);
  const char *dtype = stk__arg_string(op, "dtype");
  if (dtype[0]) {
    if (stk__dtype_parse(dtype, &p->dtype) != STK_OK) {
      stk__errorf(err, err_size, "argument 'dtype' expects " STK__DTYPE_NAMES ", got \"%s\"", dtype);
      return STK_EINVAL;
    }
    p->dtype_given = 1;
  }
  return STK_OK;
}

/* The spatial axes of `in` into axes[]; their count, or -1 with a message. */
static int spatial_axes(const stk__tensor *in, int *axes, char *err, size_t err_size) {
  int count = 0;
  if (!in->layout[0]) {
    if (in->ndim != 2 && in->ndim != 3) {
      stk__errorf(err, err_size, "a %d-d input without a layout: give one (e.g. \"HWC\", \"DHW\")", in->ndim);
      return -1;
    }
    axes[count++] = 0;
    axes[count++] = 1; /* HW or HWC */
    return count;
  }
  for (int d = 0; d < in->ndim && in->layout[d]; d++) {
    char c = in->layout[d];
    if (c == 'C' || c == 'F') continue;
    if (count == STK__BLUR_MAX_AXES) {
      stk__errorf(err, err_size, "layout \"%s\" has more than %d spatial axes", in->layout, STK__BLUR_MAX_AXES);
      return -1;
    }
    axes[count++] = d;
  }
  if (count == 0) stk__errorf(err, err_size, "layout \"%s\" has no spatial axis to blur", in->layout);
  return count ? count : -1;
}

/* Up to max values of `name` for this sample: the bound tensor's elements or the constant list. */
static size_t values_of(const stk__op *op, const stk__tensor *t, const char *name, double *out, size_t max) {
  if (t) {
    size_t n = stk__tensor_numel(t);
    for (size_t k = 0; k < n && k < max; k++) out[k] = stk__dtype_load(t->data, t->dtype, k);
    return n;
  }
  const stk__arg_value *v = stk__arg(op, name);
  if (!v || !v->has_value) return 0;
  if (v->type == STK_ARG_FLOAT_LIST || v->type == STK_ARG_INT_LIST) {
    for (size_t k = 0; k < v->count && k < max; k++)
      out[k] = v->type == STK_ARG_FLOAT_LIST ? v->flist[k] : (double)v->ilist[k];
    return v->count;
  }
  out[0] = v->type == STK_ARG_INT ? (double)v->i : v->f;
  return 1;
}

/* Radius and sigma of one axis from its sigma and window_size values. */
static stk_status axis_window(double sigma, double window, int *radius, double *sigma_out, char *err,
                              size_t err_size) {
  if (!(sigma >= 0) || !(window >= 0) || window != floor(window)) {
    stk__errorf(err, err_size, "sigma (%g) must be >= 0 and window_size (%g) a whole number >= 0", sigma, window);
    return STK_EINVAL;
  }
  if (sigma == 0 && window == 0) {
    stk__errorf(err, err_size, "give sigma or window_size (> 0) for every blurred axis");
    return STK_EINVAL;
  }
  if (window > 0 && ((long long)window % 2 == 0 || window > 2 * STK__BLUR_MAX_RADIUS + 1)) {
    stk__errorf(err, err_size, "window_size %g must be odd and at most %d", window, 2 * STK__BLUR_MAX_RADIUS + 1);
    return STK_EINVAL;
  }
  if (window > 0) {
    *radius = (int)((window - 1) / 2);
    *sigma_out = sigma > 0 ? sigma : (*radius - 1) * 0.3 + 0.8;
  } else {
    double r = ceil(3 * sigma);
    if (r > STK__BLUR_MAX_RADIUS) {
      stk__errorf(err, err_size, "sigma %g asks for a window of %.0f taps; at most %d", sigma, 2 * r + 1,
                  2 * STK__BLUR_MAX_RADIUS + 1);
      return STK_EINVAL;
    }
    *radius = (int)r;
    *sigma_out = sigma;
  }
  return STK_OK;
}

stk_status stk__blur_make_plan(const stk__op *op, const stk__tensor *in, const stk__tensor *sigma_t,
                               const stk__tensor *window_t, stk__blur_plan *plan, char *err, size_t err_size) {
  memset(plan, 0, sizeof *plan);
  int axes[STK__BLUR_MAX_AXES];
  int count = spatial_axes(in, axes, err, err_size);
  if (count < 0) return STK_EINVAL;
  double sigma[STK__BLUR_MAX_AXES] = {0}, window[STK__BLUR_MAX_AXES] = {0};
  size_t ns = values_of(op, sigma_t, "sigma", sigma, STK__BLUR_MAX_AXES);
  size_t nw = values_of(op, window_t, "window_size", window, STK__BLUR_MAX_AXES);
  if ((ns != 1 && ns != (size_t)count) || (nw != 1 && nw != (size_t)count)) {
    stk__errorf(err, err_size, "sigma and window_size take 1 value or %d (one per spatial axis of \"%s\"), got %zu and %zu",
                count, in->layout, ns, nw);
    return STK_EINVAL;
  }
  plan->num_axes = count;
  for (int k = 0; k < count; k++) {
    stk_status st = axis_window(sigma[ns == 1 ? 0 : k], window[nw == 1 ? 0 : k], &plan->radius[k], &plan->sigma[k],
                                err, err_size);
    if (st != STK_OK) return st;
    const int a = axes[k];
    plan->axis[k] = a;
    plan->outer[k] = 1;
    plan->inner[k] = 1;
    for (int d = 0; d < a; d++) plan->outer[k] *= in->shape[d];
    for (int d = a + 1; d < in->ndim; d++) plan->inner[k] *= in->shape[d];
    plan->extent[k] = in->shape[a];
    plan->total_taps += 2 * plan->radius[k] + 1;
  }
  return STK_OK;
}

void stk__blur_weights(const stk__blur_plan *plan, float *weights) {
  for (int k = 0; k < plan->num_axes; k++) {
    const int r = plan->radius[k];
    const double s = plan->sigma[k];
    double sum = 0;
    for (int t = -r; t <= r; t++) sum += exp(-(double)t * t / (2 * s * s));
    for (int t = -r; t <= r; t++) weights[t + r] = (float)(exp(-(double)t * t / (2 * s * s)) / sum);
    weights += 2 * r + 1;
  }
}
