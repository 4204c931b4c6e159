/* src/ops/augment/resize/resample.h: the separable resampling filters and their weight tables, computed
 * once on the host for CPU and GPU alike (the GPU implementations upload these tables).
 * C-callable from .cu files. Hot path: per sample and axis. */
#ifndef STOKER_OPS_COMMON_RESAMPLE_H
#define STOKER_OPS_COMMON_RESAMPLE_H

#include <stdint.h>

#include "core/op.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum stk__interp { STK__INTERP_NN = 0, STK__INTERP_LINEAR, STK__INTERP_CUBIC } stk__interp;

/* "nearest"/"INTERP_NN", "linear"/"INTERP_LINEAR", "cubic"/"INTERP_CUBIC" -> enum. */
STK_INTERNAL stk_status stk__interp_parse(const char *text, stk__interp *out);

/* Support radius of the filter in source pixels at `scale` source pixels per output pixel
 * (widened by the scale when antialiasing a downscale). */
STK_INTERNAL double stk__resample_filter_radius(stk__interp interp, double scale, int antialias);

/* Separable resampling filter for one axis: output pixel o reads input pixels
 * first[o] .. first[o]+taps-1 with weights[o*taps + k] (weights sum to 1; indices already clamped
 * into [0, in_size)). roi_start/roi_end select the source interval (in pixels, may be fractional).
 * With antialias and downscaling, linear/cubic filters are widened by the scale (DALI's default).
 * Returns the tap count; first/weights must hold out_size and out_size*max_taps entries, where
 * max_taps = stk__resample_max_taps(...). */
STK_INTERNAL int stk__resample_max_taps(int in_size, int out_size, double roi_start, double roi_end, stk__interp interp,
                                        int antialias);
STK_INTERNAL int stk__resample_weights(int in_size, int out_size, double roi_start, double roi_end, stk__interp interp,
                                       int antialias, int32_t *first, float *weights);

#ifdef __cplusplus
}
#endif
#endif
