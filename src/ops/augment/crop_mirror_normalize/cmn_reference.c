/* src/ops/augment/crop_mirror_normalize/cmn_reference.c: crop, mirror, normalize and convert one HWC u8 image
 * (stk__crop_mirror_normalize_ex): the crop_mirror_normalize CPU implementation and the reference
 * the CUDA kernels (src/ops/augment/crop_mirror_normalize/cmn_kernels.cu) are tested against (src/ops/augment/crop_mirror_normalize/test_cmn.c,
 * tests/test_gpu_ops.c). Hot path: once per sample; allocates nothing. */
#include <stddef.h>
#include <string.h>

#include "ops/augment/crop_mirror_normalize/cmn_reference.h"
#include "ops/common/dtype.h"

#define ALWAYS_INLINE static inline __attribute__((always_inline))

ALWAYS_INLINE void store_value(void *dst, size_t index, float value, const stk_dtype dtype) {
  if (dtype == STK_DTYPE_FLOAT32) ((float *)dst)[index] = value;
  else if (dtype == STK_DTYPE_FLOAT16) ((uint16_t *)dst)[index] = stk__half_from_float_inline(value);
  else ((uint8_t *)dst)[index] = stk__u8_from_float(value);
}

typedef struct cmn_args {
  const uint8_t *src;
  int src_w, src_h;
  size_t src_stride;
  int crop_x, crop_y, crop_w, crop_h, mirror;
  const float *mean, *inv_std;
  float shift;
  float fill[5];
  size_t plane; /* elements between channel planes of a CHW output */
} cmn_args;

/* One instantiation per (dtype, layout, channel count, pad): the constants fold after inlining
 * so the inner loops are straight-line per pixel. */
ALWAYS_INLINE void cmn_kernel(const cmn_args *a, void *dst, const int channels, const int pad, const int chw,
                              const stk_dtype dtype) {
  const int out_channels = channels + pad;
  const size_t plane = a->plane;
  float mean[4] = {0, 0, 0, 0}, inv_std[4] = {1, 1, 1, 1};
  for (int c = 0; c < channels; c++) {
    mean[c] = a->mean[c];
    inv_std[c] = a->inv_std[c];
  }
  const float shift = a->shift;
  /* Output columns whose source column lies inside the image: [x_begin, x_end). */
  int x_begin, x_end;
  if (a->mirror) {
    x_begin = a->crop_x + a->crop_w - a->src_w; /* source x = crop_x + crop_w - 1 - x */
    x_end = a->crop_x + a->crop_w;
  } else {
    x_begin = -a->crop_x;
    x_end = a->src_w - a->crop_x;
  }
  if (x_begin < 0) x_begin = 0;
  if (x_begin > a->crop_w) x_begin = a->crop_w;
  if (x_end > a->crop_w) x_end = a->crop_w;
  if (x_end < x_begin) x_end = x_begin;
  const ptrdiff_t step = a->mirror ? -(ptrdiff_t)channels : (ptrdiff_t)channels;

#define OUT_INDEX(row_base, x, c) \
  (chw ? (size_t)(c)*plane + (row_base) + (size_t)(x) : ((row_base) + (size_t)(x)) * (size_t)out_channels + (size_t)(c))

  for (int y = 0; y < a->crop_h; y++) {
    const int sy = a->crop_y + y;
    const size_t row_base = (size_t)y * (size_t)a->crop_w;
    int fill_to = x_begin, fill_from = x_end;
    if (sy < 0 || sy >= a->src_h) {
      fill_to = a->crop_w;
      fill_from = a->crop_w;
    }
    for (int x = 0; x < fill_to; x++)
      for (int c = 0; c < out_channels; c++) store_value(dst, OUT_INDEX(row_base, x, c), a->fill[c], dtype);
    if (fill_to < fill_from) {
      const int first_sx = a->mirror ? a->crop_x + a->crop_w - 1 - x_begin : a->crop_x + x_begin;
      const uint8_t *p = a->src + (size_t)sy * a->src_stride + (size_t)first_sx * (size_t)channels;
      for (int x = x_begin; x < x_end; x++, p += step) {
        for (int c = 0; c < channels; c++)
          store_value(dst, OUT_INDEX(row_base, x, c), ((float)p[c] - mean[c]) * inv_std[c] + shift, dtype);
        if (pad) store_value(dst, OUT_INDEX(row_base, x, channels), a->fill[channels], dtype);
      }
    }
    for (int x = fill_from; x < a->crop_w; x++)
      for (int c = 0; c < out_channels; c++) store_value(dst, OUT_INDEX(row_base, x, c), a->fill[c], dtype);
  }
#undef OUT_INDEX
}

#define CMN_FOR_DTYPE(channels, pad, chw)                                                            \
  do {                                                                                               \
    if (dtype == STK_DTYPE_FLOAT32) cmn_kernel(&a, dst, channels, pad, chw, STK_DTYPE_FLOAT32);      \
    else if (dtype == STK_DTYPE_FLOAT16) cmn_kernel(&a, dst, channels, pad, chw, STK_DTYPE_FLOAT16); \
    else cmn_kernel(&a, dst, channels, pad, chw, STK_DTYPE_UINT8);                                   \
  } while (0)

stk_status stk__crop_mirror_normalize_planes(const uint8_t *src, int src_w, int src_h, size_t src_stride, int channels,
                                             int crop_x, int crop_y, int crop_w, int crop_h, int mirror,
                                             const float *mean, const float *inv_std, float shift, const float *fill,
                                             stk__out_layout layout, size_t plane_stride, stk_dtype dtype,
                                             int pad_output, void *dst) {
  if (!src || !dst || !mean || !inv_std || src_w <= 0 || src_h <= 0 || channels < 1 || channels > 4 || crop_w <= 0 ||
      crop_h <= 0 || src_stride < (size_t)src_w * (size_t)channels)
    return STK_EINVAL;
  if (dtype != STK_DTYPE_FLOAT32 && dtype != STK_DTYPE_FLOAT16 && dtype != STK_DTYPE_UINT8) return STK_ENOTSUP;
  const int pad = (pad_output && channels == 3) ? 1 : 0;
  cmn_args a = {src,    src_w,       src_h, src_stride, crop_x, crop_y,          crop_w,
                crop_h, mirror != 0, mean,  inv_std,    shift,  {0, 0, 0, 0, 0}, plane_stride};
  if (plane_stride == 0) a.plane = (size_t)crop_w * (size_t)crop_h;
  else if (plane_stride < (size_t)crop_w * (size_t)crop_h) return STK_EINVAL;
  if (fill)
    for (int c = 0; c < channels + pad; c++) a.fill[c] = fill[c];
  const int chw = layout == STK__LAYOUT_CHW;
  if (channels == 3 && !pad && chw) CMN_FOR_DTYPE(3, 0, 1);
  else if (channels == 3 && !pad) CMN_FOR_DTYPE(3, 0, 0);
  else if (channels == 3 && chw) CMN_FOR_DTYPE(3, 1, 1);
  else if (channels == 3) CMN_FOR_DTYPE(3, 1, 0);
  else if (channels == 1 && chw) CMN_FOR_DTYPE(1, 0, 1);
  else if (channels == 1) CMN_FOR_DTYPE(1, 0, 0);
  else if (chw) CMN_FOR_DTYPE(channels, 0, 1);
  else CMN_FOR_DTYPE(channels, 0, 0);
  return STK_OK;
}

stk_status stk__crop_mirror_normalize_ex(const uint8_t *src, int src_w, int src_h, size_t src_stride, int channels,
                                         int crop_x, int crop_y, int crop_w, int crop_h, int mirror, const float *mean,
                                         const float *inv_std, float shift, const float *fill, stk__out_layout layout,
                                         stk_dtype dtype, int pad_output, void *dst) {
  return stk__crop_mirror_normalize_planes(src, src_w, src_h, src_stride, channels, crop_x, crop_y, crop_w, crop_h,
                                           mirror, mean, inv_std, shift, fill, layout, 0, dtype, pad_output, dst);
}

stk_status stk__crop_mirror_normalize(const uint8_t *src, int src_w, int src_h, size_t src_stride, int channels,
                                      int crop_x, int crop_y, int crop_w, int crop_h, int mirror, const float *mean,
                                      const float *inv_std, stk__out_layout layout, stk_dtype dtype, int pad_output,
                                      void *dst) {
  return stk__crop_mirror_normalize_ex(src, src_w, src_h, src_stride, channels, crop_x, crop_y, crop_w, crop_h, mirror,
                                       mean, inv_std, 0.0f, NULL, layout, dtype, pad_output, dst);
}
