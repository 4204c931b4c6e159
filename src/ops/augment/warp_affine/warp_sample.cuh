/* src/ops/augment/warp_affine/warp_sample.cuh: the warp sampler on the device -- one output pixel
 * of a warp descriptor (warp.h), every channel, each step the CPU reference's (warp.c) float
 * operation rounded alone (__fmul_rn / __fadd_rn: no contraction). Shared by the warp kernels
 * (warp_gpu.cu) and the AutoAugment kernels (auto_aug/auto_aug_gpu.cu). Hot path (per pixel). */
#ifndef STOKER_OPS_AUGMENT_WARP_AFFINE_WARP_SAMPLE_CUH
#define STOKER_OPS_AUGMENT_WARP_AFFINE_WARP_SAMPLE_CUH

extern "C" {
#include "ops/augment/warp_affine/warp.h"
}

__device__ static inline float stk__warp_fetch(const stk__warp_desc &d, int x, int y, int c) {
  if (x < 0 || y < 0 || x >= d.src_w || y >= d.src_h) {
    if (d.has_fill) return d.fill;
    x = x < 0 ? 0 : (x >= d.src_w ? d.src_w - 1 : x);
    y = y < 0 ? 0 : (y >= d.src_h ? d.src_h - 1 : y);
  }
  const size_t at = ((size_t)y * d.src_w + x) * d.channels + c;
  return d.dtype == STK_DTYPE_UINT8 ? (float)((const uint8_t *)d.src)[at] : ((const float *)d.src)[at];
}

__device__ static inline float stk__warp_bounded(float v) { return !(v > -1e7f) ? -1e7f : (v > 1e7f ? 1e7f : v); }

/* Output pixel (x, y) of d (inside its destination): every channel written to d.dst. */
__device__ static inline void stk__warp_pixel(const stk__warp_desc &d, int x, int y) {
  const float cx = (float)x + 0.5f, cy = (float)y + 0.5f;
  const float sx = stk__warp_bounded(__fadd_rn(__fadd_rn(__fmul_rn(d.m[0], cx), __fmul_rn(d.m[1], cy)), d.m[2]));
  const float sy = stk__warp_bounded(__fadd_rn(__fadd_rn(__fmul_rn(d.m[3], cx), __fmul_rn(d.m[4], cy)), d.m[5]));
  const size_t out = ((size_t)y * d.dst_w + x) * d.channels;
  for (int c = 0; c < d.channels; c++) {
    float v;
    if (d.nearest) {
      v = stk__warp_fetch(d, (int)floorf(sx), (int)floorf(sy), c);
    } else {
      const float fx = __fadd_rn(sx, -0.5f), fy = __fadd_rn(sy, -0.5f), x0 = floorf(fx), y0 = floorf(fy);
      const float wx = __fadd_rn(fx, -x0), wy = __fadd_rn(fy, -y0);
      const int ix = (int)x0, iy = (int)y0;
      const float t0 = __fmul_rn(stk__warp_fetch(d, ix, iy, c), __fadd_rn(1.0f, -wx));
      const float t1 = __fmul_rn(stk__warp_fetch(d, ix + 1, iy, c), wx);
      const float b0 = __fmul_rn(stk__warp_fetch(d, ix, iy + 1, c), __fadd_rn(1.0f, -wx));
      const float b1 = __fmul_rn(stk__warp_fetch(d, ix + 1, iy + 1, c), wx);
      v = __fadd_rn(__fmul_rn(__fadd_rn(t0, t1), __fadd_rn(1.0f, -wy)), __fmul_rn(__fadd_rn(b0, b1), wy));
    }
    if (d.out_dtype == STK_DTYPE_UINT8) {
      float r = __fadd_rn(v, 0.5f);
      r = r < 0.0f ? 0.0f : (r > 255.0f ? 255.0f : r);
      ((uint8_t *)d.dst)[out + c] = (uint8_t)(int)r;
    } else {
      ((float *)d.dst)[out + c] = v;
    }
  }
}

#endif
