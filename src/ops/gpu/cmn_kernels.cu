/* src/ops/gpu/cmn_kernels.cu: batched crop_mirror_normalize and the fused
 * resize -> crop -> mirror -> normalize kernel. One launch per batch: grid (tiles of the largest
 * crop, batch); one thread per output pixel writes all its channels.
 * Shapes: src[i] = [H, W, C] u8 (row stride bytes); dst[i] = [out_C, crop_h, crop_w] (CHW) or
 * [crop_h, crop_w, out_C] (HWC) in float / float16 / uint8; out_C = C (+1 zero pad channel).
 * Hot path. Tolerance vs the CPU reference: float <= 1e-3 relative (identical arithmetic order
 * except FMA contraction), uint8 <= 1 level, float16 = RNE of the float result. */
#include <cuda_runtime.h>

#include "ops/gpu/kernels.h"
#include "ops/gpu/resample_device.cuh"

static const int kTileX = 32, kTileY = 8;

__device__ __forceinline__ void store_pixel(void *dst, const stk__gpu_normalize &n, int w, int h, int x, int y,
                                            const float v[4], int inside) {
  for (int c = 0; c < n.out_channels; c++) {
    float value = 0.f; /* outside the image, and the pad channel, are 0 */
    if (inside && c < n.channels) value = (v[c] - n.mean[c]) * n.inv_std[c];
    stk_store_normalized(dst, n, w, h, x, y, c, value);
  }
}

__global__ void stk_cmn_kernel(const stk__gpu_cmn_desc *__restrict__ descs, stk__gpu_normalize norm) {
  const stk__gpu_cmn_desc d = descs[blockIdx.z];
  const int x = blockIdx.x * blockDim.x + threadIdx.x;
  const int y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= d.crop_w || y >= d.crop_h) return;
  const int sx = d.crop_x + (d.mirror ? d.crop_w - 1 - x : x);
  const int sy = d.crop_y + y;
  const int inside = sx >= 0 && sx < d.src_w && sy >= 0 && sy < d.src_h;
  float v[4] = {0.f, 0.f, 0.f, 0.f};
  if (inside) {
    const uint8_t *px = d.src + (size_t)sy * d.src_stride + (size_t)sx * norm.channels;
    for (int c = 0; c < norm.channels; c++) v[c] = (float)px[c];
  }
  store_pixel(d.dst, norm, d.crop_w, d.crop_h, x, y, v, inside);
}

__global__ void stk_fused_kernel(const stk__gpu_fused_desc *__restrict__ descs, stk__gpu_normalize norm) {
  const stk__gpu_fused_desc d = descs[blockIdx.z];
  const int x = blockIdx.x * blockDim.x + threadIdx.x;
  const int y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= d.crop_w || y >= d.crop_h) return;
  const int rx = d.crop_x + (d.mirror ? d.crop_w - 1 - x : x);
  const int ry = d.crop_y + y;
  const int inside = rx >= 0 && rx < d.resized_w && ry >= 0 && ry < d.resized_h;
  float v[4] = {0.f, 0.f, 0.f, 0.f};
  if (inside) {
    stk_resample_pixel(d.src, d.src_stride, norm.channels, d.x, d.y, rx, ry, v);
    for (int c = 0; c < norm.channels; c++) v[c] = stk_round_u8(v[c]); /* same u8 rounding as resize */
  }
  store_pixel(d.dst, norm, d.crop_w, d.crop_h, x, y, v, inside);
}

static dim3 batch_grid(int max_w, int max_h, int count) {
  return dim3((unsigned)((max_w + kTileX - 1) / kTileX), (unsigned)((max_h + kTileY - 1) / kTileY), (unsigned)count);
}

static stk_status check_norm(const stk__gpu_normalize *n) {
  if (n->channels < 1 || n->channels > 4 || n->out_channels < n->channels || n->out_channels > 4) return STK_EINVAL;
  if (n->dtype != STK_DTYPE_FLOAT32 && n->dtype != STK_DTYPE_FLOAT16 && n->dtype != STK_DTYPE_UINT8) return STK_EINVAL;
  return STK_OK;
}

extern "C" stk_status stk__gpu_crop_mirror_normalize_batch(const stk__gpu_cmn_desc *descs_device, int count,
                                                           int max_crop_w, int max_crop_h,
                                                           const stk__gpu_normalize *norm, cudaStream_t stream) {
  if (check_norm(norm) != STK_OK || count > 65535) return STK_EINVAL;
  if (count <= 0 || max_crop_w <= 0 || max_crop_h <= 0) return STK_OK;
  stk_cmn_kernel<<<batch_grid(max_crop_w, max_crop_h, count), dim3(kTileX, kTileY), 0, stream>>>(descs_device, *norm);
  return cudaGetLastError() == cudaSuccess ? STK_OK : STK_ECUDA;
}

extern "C" stk_status stk__gpu_fused_resize_cmn_batch(const stk__gpu_fused_desc *descs_device, int count,
                                                      int max_crop_w, int max_crop_h, const stk__gpu_normalize *norm,
                                                      cudaStream_t stream) {
  if (check_norm(norm) != STK_OK || count > 65535) return STK_EINVAL;
  if (count <= 0 || max_crop_w <= 0 || max_crop_h <= 0) return STK_OK;
  stk_fused_kernel<<<batch_grid(max_crop_w, max_crop_h, count), dim3(kTileX, kTileY), 0, stream>>>(descs_device,
                                                                                                   *norm);
  return cudaGetLastError() == cudaSuccess ? STK_OK : STK_ECUDA;
}
