/* src/ops/augment/resize/resample_device.cuh: device helpers shared by the resize and fused kernels: one
 * resampled pixel from host-computed separable weights, in the same order as the CPU reference
 * (horizontal taps per source row first, then the vertical combination), rounded like it. Every
 * multiply and add uses the explicitly rounded intrinsics (__fmul_rn/__fadd_rn), which nvcc never
 * contracts into FMA, so on an x86-64 host (no FMA in the CPU build) GPU and CPU compute the same
 * floats in the same order and the u8 results are expected to be bit-identical. Hot. */
#ifndef STOKER_OPS_GPU_RESAMPLE_DEVICE_CUH
#define STOKER_OPS_GPU_RESAMPLE_DEVICE_CUH

#include <cuda_fp16.h>

#include "ops/common/kernels.h"

/* Resampled value of output pixel (ox, oy), all channels (<= 4), as floats before rounding. */
__device__ __forceinline__ void stk_resample_pixel(const uint8_t *__restrict__ src, int src_stride, int channels,
                                                   const stk__gpu_axis &ax, const stk__gpu_axis &ay, int ox, int oy,
                                                   float out[4]) {
  out[0] = out[1] = out[2] = out[3] = 0.f;
  const int x0 = ax.first[ox];
  const int y0 = ay.first[oy];
  const float *wx = ax.weights + (size_t)ox * ax.taps;
  const float *wy = ay.weights + (size_t)oy * ay.taps;
  for (int ky = 0; ky < ay.taps; ky++) {
    const float wyk = wy[ky];
    const uint8_t *row = src + (size_t)(y0 + ky) * src_stride + (size_t)x0 * channels;
    float h[4] = {0.f, 0.f, 0.f, 0.f};
    for (int kx = 0; kx < ax.taps; kx++) {
      const float w = wx[kx];
      const uint8_t *px = row + kx * channels;
      for (int c = 0; c < channels; c++) h[c] = __fadd_rn(h[c], __fmul_rn(w, (float)px[c]));
    }
    if (wyk != 0.f) /* the CPU adds 0 * row: the same sum */
      for (int c = 0; c < channels; c++) out[c] = __fadd_rn(out[c], __fmul_rn(wyk, h[c]));
  }
}

/* stk__u8_from_float on the device: v + 0.5, clamped into [0, 255], truncated (round half up),
 * the one u8 rounding rule of the CPU code. Returned as a float holding an integer. */
__device__ __forceinline__ float stk_round_u8(float v) {
  float r = __fadd_rn(v, 0.5f);
  r = r < 0.f ? 0.f : (r > 255.f ? 255.f : r);
  return truncf(r);
}

/* Writes one normalized element at (c, y, x) of an output of w x h x out_channels; CHW channel
 * planes lie plane elements apart (w * h when packed). */
__device__ __forceinline__ void stk_store_normalized(void *dst, const stk__gpu_normalize &n, int w, size_t plane, int x,
                                                     int y, int c, float value) {
  const size_t idx = n.layout_chw ? (size_t)c * plane + (size_t)y * w + x : ((size_t)y * w + x) * n.out_channels + c;
  if (n.dtype == STK_DTYPE_FLOAT32) {
    ((float *)dst)[idx] = value;
  } else if (n.dtype == STK_DTYPE_FLOAT16) {
    ((__half *)dst)[idx] = __float2half_rn(value);
  } else {
    ((uint8_t *)dst)[idx] = (uint8_t)stk_round_u8(value);
  }
}

#endif
