/* src/ops/augment/gaussian_blur/blur_params.h: the one parameter parse of `gaussian_blur` (DALI's
 * fn.gaussian_blur) and its per-sample plan, shared by the CPU (gaussian_blur.c) and GPU
 * (gaussian_blur_gpu.cu) implementations, with the border rule both use.
 *
 * The blurred axes are the spatial ones: every axis of the layout but channels 'C' and frames
 * 'F' (no layout: HW for 2-d, HWC for 3-d inputs), at most 3. Per axis, outermost first, sigma
 * and window_size (one value for every axis or one per axis; per-sample inputs allowed): sigma
 * alone gives radius ceil(3 sigma); window_size alone (odd) gives sigma = (radius - 1) * 0.3 +
 * 0.8 with radius = (window_size - 1) / 2. Weights exp(-k^2 / (2 sigma^2)) normalised to sum 1.
 * Borders reflect without repeating the edge (reflect-101: -1 -> 1, n -> n - 2). Build time
 * (parse) and per sample (plan, weights). */
#ifndef STOKER_OPS_AUGMENT_GAUSSIAN_BLUR_BLUR_PARAMS_H
#define STOKER_OPS_AUGMENT_GAUSSIAN_BLUR_BLUR_PARAMS_H

#include "core/op.h"
#include "ops/common/elem_access.h"

#ifdef __cplusplus
extern "C" {
#endif

#define STK__BLUR_MAX_AXES 3
#define STK__BLUR_MAX_RADIUS 4096 /* a window beyond 8193 taps is refused (a clear error, no huge tables) */

typedef struct stk__blur_params {
  stk_dtype dtype; /* output type */
  int dtype_given; /* 0: the input's */
} stk__blur_params;

/* One sample's blur: per spatial axis (outermost first) its index in the tensor, radius and sigma,
 * and the tensor split around it (outer x extent x inner elements). */
typedef struct stk__blur_plan {
  int num_axes;
  int axis[STK__BLUR_MAX_AXES];
  int radius[STK__BLUR_MAX_AXES];
  double sigma[STK__BLUR_MAX_AXES];
  int64_t outer[STK__BLUR_MAX_AXES], extent[STK__BLUR_MAX_AXES], inner[STK__BLUR_MAX_AXES];
  int total_taps; /* sum of the windows (2 radius + 1) */
} stk__blur_plan;

STK_INTERNAL stk_status stk__blur_parse(const stk__op *op, stk__blur_params *p, char *err, size_t err_size);

/* The plan of input `in` with this sample's sigma / window_size: the bound per-sample tensors
 * (sigma_t, window_t) or, when NULL, the constants. STK_EINVAL with a message (no spatial axis,
 * wrong number of values, even or negative window, negative sigma, both 0). */
STK_INTERNAL stk_status stk__blur_make_plan(const stk__op *op, const stk__tensor *in, const stk__tensor *sigma_t,
                                            const stk__tensor *window_t, stk__blur_plan *plan, char *err,
                                            size_t err_size);

/* The normalised weights of every axis of the plan, axis after axis (plan->total_taps floats). */
STK_INTERNAL void stk__blur_weights(const stk__blur_plan *plan, float *weights);

/* Index i of an axis of n elements under reflect-101 (any i; n >= 1). */
STK_ELEM_HD static inline int64_t stk__blur_reflect(int64_t i, int64_t n) {
  if (n <= 1) return 0;
  const int64_t period = 2 * (n - 1);
  i %= period;
  if (i < 0) i += period;
  return i < n ? i : period - i;
}

#ifdef __cplusplus
}
#endif
#endif
