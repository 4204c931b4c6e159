/* src/ops/augment/crop_mirror_normalize/cmn_reference.h: crop_mirror_normalize on one HWC u8 image, the implementation
 * of the CPU operator and the reference of the CUDA kernels (src/ops/augment/crop_mirror_normalize/cmn_kernels.cu).
 * C-callable from .cu files. Hot path: per sample. */
#ifndef STOKER_OPS_COMMON_CMN_REFERENCE_H
#define STOKER_OPS_COMMON_CMN_REFERENCE_H

#include <stddef.h>
#include <stdint.h>

#include "ops/common/image.h"

#ifdef __cplusplus
extern "C" {
#endif

/* crop_mirror_normalize on one image: takes the crop (crop_x, crop_y, crop_w, crop_h; parts outside
 * the image are filled with 0 after normalization is skipped, as DALI's out-of-bounds fill), mirrors
 * horizontally when mirror != 0, computes (x - mean[c]) * inv_std[c], writes dtype
 * (FLOAT32 / FLOAT16 / UINT8 with rounding and clamping) in layout; pad_output adds a 4th channel of 0
 * for 3-channel input. dst must hold crop_w*crop_h*(channels + pad)*dtype_size bytes. */
STK_INTERNAL stk_status stk__crop_mirror_normalize(const uint8_t *src, int src_w, int src_h, size_t src_stride,
                                                   int channels, int crop_x, int crop_y, int crop_w, int crop_h,
                                                   int mirror, const float *mean, const float *inv_std,
                                                   stk__out_layout layout, stk_dtype dtype, int pad_output, void *dst);

/* stk__crop_mirror_normalize with DALI's extra knobs: out = (x - mean[c]) * inv_std[c] + shift
 * (inv_std already holds scale / std), out-of-image pixels get fill[c] and the padded 4th channel
 * gets fill[channels] (fill: channels + pad_output entries, NULL = all 0). The function above is
 * this with shift = 0 and fill = NULL. channels <= 4. */
STK_INTERNAL stk_status stk__crop_mirror_normalize_ex(const uint8_t *src, int src_w, int src_h, size_t src_stride,
                                                      int channels, int crop_x, int crop_y, int crop_w, int crop_h,
                                                      int mirror, const float *mean, const float *inv_std, float shift,
                                                      const float *fill, stk__out_layout layout, stk_dtype dtype,
                                                      int pad_output, void *dst);

/* stk__crop_mirror_normalize_ex writing a CHW layout's channel planes plane_stride elements apart
 * (0 = crop_w * crop_h, packed; otherwise at least that): one frame of a [C, F, H, W] sequence
 * output has plane_stride = F * crop_h * crop_w. HWC ignores it. */
STK_INTERNAL stk_status stk__crop_mirror_normalize_planes(const uint8_t *src, int src_w, int src_h, size_t src_stride,
                                                          int channels, int crop_x, int crop_y, int crop_w, int crop_h,
                                                          int mirror, const float *mean, const float *inv_std,
                                                          float shift, const float *fill, stk__out_layout layout,
                                                          size_t plane_stride, stk_dtype dtype, int pad_output,
                                                          void *dst);

#ifdef __cplusplus
}
#endif
#endif
