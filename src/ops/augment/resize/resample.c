/* src/ops/augment/resize/resample.c: the separable resampling filters (nearest, linear, cubic, antialiased)
 * and their per-axis weight tables. One definition for every consumer: the CPU resize reference
 * (resize_reference.c) reads these tables, and the GPU implementations compute them on the host
 * with the same function and upload them (src/ops/augment/resize/resize_kernels.cu, cmn_kernels.cu). Hot
 * path: once per sample and axis; allocates nothing. */
#include <math.h>
#include <string.h>

#include "ops/augment/resize/resample.h"

stk_status stk__interp_parse(const char *text, stk__interp *out) {
  static const struct {
    const char *name;
    stk__interp value;
  } names[] = {
      {"INTERP_NN", STK__INTERP_NN},         {"nearest", STK__INTERP_NN},    {"nn", STK__INTERP_NN},
      {"INTERP_LINEAR", STK__INTERP_LINEAR}, {"linear", STK__INTERP_LINEAR}, {"INTERP_CUBIC", STK__INTERP_CUBIC},
      {"cubic", STK__INTERP_CUBIC},
  };
  if (!text) return STK_EINVAL;
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    if (strcmp(text, names[i].name) == 0) {
      *out = names[i].value;
      return STK_OK;
    }
  return STK_EINVAL;
}

/* ---- Resampling weights --------------------------------------------------------------------- */
/* Definition (the tests re-implement it in 2-D, in double):
 *   scale s = (roi_end - roi_start) / out_size    (source pixels per output pixel)
 *   output pixel o is centred at source coordinate c = roi_start + (o + 0.5) * s, where source
 *   pixel i covers [i, i + 1) and is centred at i + 0.5;
 *   NN: the single source pixel clamp(floor(c), 0, in_size - 1);
 *   linear: triangle f(t) = max(0, 1 - |t|), radius 1; cubic: Keys with a = -0.5 (Catmull-Rom),
 *   radius 2; with antialias and s > 1 the filter is stretched: f(t / s), radius r * s;
 *   w_i = f((i + 0.5) - c) for every i with |i + 0.5 - c| < radius, normalised to sum 1;
 *   pixels outside [0, in_size) are replaced by the nearest edge pixel (clamp-to-edge). */

double stk__resample_filter_radius(stk__interp interp, double scale, int antialias) {
  double radius = interp == STK__INTERP_CUBIC ? 2.0 : 1.0;
  if (antialias && scale > 1.0) radius *= scale;
  return radius;
}

static double filter_value(stk__interp interp, double t) {
  t = fabs(t);
  if (interp == STK__INTERP_CUBIC) {
    const double a = -0.5;
    if (t < 1.0) return ((a + 2.0) * t - (a + 3.0)) * t * t + 1.0;
    if (t < 2.0) return ((a * t - 5.0 * a) * t + 8.0 * a) * t - 4.0 * a;
    return 0.0;
  }
  return t < 1.0 ? 1.0 - t : 0.0;
}

static int raw_tap_count(stk__interp interp, double scale, int antialias) {
  if (interp == STK__INTERP_NN) return 1;
  /* An open interval of length 2r holds at most ceil(2r) pixel centres. */
  double width = 2.0 * stk__resample_filter_radius(interp, scale, antialias);
  int taps = (int)ceil(width - 1e-9);
  return taps < 1 ? 1 : taps;
}

int stk__resample_max_taps(int in_size, int out_size, double roi_start, double roi_end, stk__interp interp,
                           int antialias) {
  if (in_size <= 0 || out_size <= 0) return 0;
  double scale = (roi_end - roi_start) / (double)out_size;
  int taps = raw_tap_count(interp, scale, antialias);
  return taps > in_size ? in_size : taps;
}

int stk__resample_weights(int in_size, int out_size, double roi_start, double roi_end, stk__interp interp,
                          int antialias, int32_t *first, float *weights) {
  if (in_size <= 0 || out_size <= 0) return 0;
  const double scale = (roi_end - roi_start) / (double)out_size;
  const int raw_taps = raw_tap_count(interp, scale, antialias);
  const int taps = raw_taps > in_size ? in_size : raw_taps;
  if (interp == STK__INTERP_NN) {
    for (int o = 0; o < out_size; o++) {
      double c = roi_start + ((double)o + 0.5) * scale;
      long i = (long)floor(c);
      first[o] = (int32_t)(i < 0 ? 0 : (i >= in_size ? in_size - 1 : i));
      weights[o] = 1.0f;
    }
    return 1;
  }
  const double radius = stk__resample_filter_radius(interp, scale, antialias);
  const double stretch = (antialias && scale > 1.0) ? scale : 1.0;
  for (int o = 0; o < out_size; o++) {
    const double c = roi_start + ((double)o + 0.5) * scale;
    const long lo = (long)floor(c - radius - 0.5) + 1; /* first centre inside the support */
    long start = lo;
    if (start > in_size - taps) start = in_size - taps;
    if (start < 0) start = 0;
    /* The filter values are computed once: the first HELD of them are kept for the second loop
     * (any wider filter recomputes the rest, which gives the same doubles). */
    enum { HELD = 64 };
    double held[HELD];
    double sum = 0.0;
    for (int k = 0; k < raw_taps; k++) {
      const double w = filter_value(interp, ((double)(lo + k) + 0.5 - c) / stretch);
      if (k < HELD) held[k] = w;
      sum += w;
    }
    float *out_w = weights + (size_t)o * (size_t)taps;
    for (int k = 0; k < taps; k++) out_w[k] = 0.0f;
    if (sum > 0.0) {
      for (int k = 0; k < raw_taps; k++) {
        long i = lo + k;
        double w = k < HELD ? held[k] : filter_value(interp, ((double)i + 0.5 - c) / stretch);
        if (w == 0.0) continue;
        long clamped = i < 0 ? 0 : (i >= in_size ? in_size - 1 : i);
        out_w[clamped - start] += (float)(w / sum);
      }
    } else {
      /* Cannot happen for radius >= 0.5 (the nearest centre is within 0.5); kept defined. */
      long nearest = (long)floor(c);
      nearest = nearest < 0 ? 0 : (nearest >= in_size ? in_size - 1 : nearest);
      out_w[nearest - start] = 1.0f;
    }
    first[o] = (int32_t)start;
  }
  return taps;
}
