/* src/ops/augment/resize/resize_reference.h: the CPU resize of HWC u8 images, the implementation of the
 * CPU operators and the reference of the CUDA kernel (src/ops/augment/resize/resize_kernels.cu).
 * C-callable from .cu files. Hot path: per sample. */
#ifndef STOKER_OPS_COMMON_RESIZE_REFERENCE_H
#define STOKER_OPS_COMMON_RESIZE_REFERENCE_H

#include <stddef.h>
#include <stdint.h>

#include "ops/common/image.h"
#include "ops/augment/resize/resample.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Resizes the region `roi` of src (HWC u8) to dst_w x dst_h (HWC u8, tightly packed), separable:
 * horizontal pass of each needed source row (float, once per row, into a ring of taps_y rows),
 * then the vertical pass into u8, round half up and clamp -- the same float operations in the
 * same order as the GPU kernel (resample_device.cuh). scratch must hold
 * stk__resize_scratch_bytes(...) bytes. */
STK_INTERNAL size_t stk__resize_scratch_bytes(int src_w, int src_h, int channels, stk__window roi, int dst_w, int dst_h,
                                              stk__interp interp, int antialias);
STK_INTERNAL stk_status stk__resize_u8(const uint8_t *src, int src_w, int src_h, size_t src_stride, int channels,
                                       stk__window roi, uint8_t *dst, int dst_w, int dst_h, stk__interp interp,
                                       int antialias, void *scratch);

/* stk__resize_u8 with a fractional source interval roi = {x0, y0, x1, y1}. */
STK_INTERNAL size_t stk__resize_roi_scratch_bytes(int src_w, int src_h, int channels, const double roi[4], int dst_w,
                                                  int dst_h, stk__interp interp, int antialias);
STK_INTERNAL stk_status stk__resize_u8_roi(const uint8_t *src, int src_w, int src_h, size_t src_stride, int channels,
                                           const double roi[4], uint8_t *dst, int dst_w, int dst_h, stk__interp interp,
                                           int antialias, void *scratch);

#ifdef __cplusplus
}
#endif
#endif
