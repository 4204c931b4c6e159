/* src/ops/augment/resize/resize_kernels.cu: batched separable resize of HWC u8 images with host-computed
 * weights (the CPU reference's stk__resample_weights), and the batched u8 window copy used by the
 * mixed random-crop decoder. One launch per batch: grid (tiles of the largest output, batch).
 * Tensor shapes: src[i] = [src_h, src_w, C] u8 (row stride src_stride bytes), dst[i] = [dst_h,
 * dst_w, C] u8 packed. Hot path. Tolerance vs CPU: <= 1 u8 level (float summation order). */
#include <cuda_runtime.h>

#include "ops/common/kernels.h"
#include "ops/augment/resize/resample_device.cuh"

static const int kTileX = 32, kTileY = 8;

__global__ void stk_resize_kernel(const stk__gpu_resize_desc *__restrict__ descs) {
  const stk__gpu_resize_desc d = descs[blockIdx.z];
  const int x = blockIdx.x * blockDim.x + threadIdx.x;
  const int y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= d.dst_w || y >= d.dst_h) return;
  float v[4];
  stk_resample_pixel(d.src, d.src_stride, d.channels, d.x, d.y, x, y, v);
  uint8_t *out = d.dst + ((size_t)y * d.dst_w + x) * d.channels;
  for (int c = 0; c < d.channels; c++) out[c] = (uint8_t)stk_round_u8(v[c]);
}

__global__ void stk_crop_u8_kernel(const stk__gpu_crop_desc *__restrict__ descs) {
  const stk__gpu_crop_desc d = descs[blockIdx.z];
  const int x = blockIdx.x * blockDim.x + threadIdx.x;
  const int y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= d.w || y >= d.h) return;
  const uint8_t *in = d.src + (size_t)(d.y + y) * d.src_stride + (size_t)(d.x + x) * d.channels;
  uint8_t *out = d.dst + ((size_t)y * d.w + x) * d.channels;
  for (int c = 0; c < d.channels; c++) out[c] = in[c];
}

static stk_status launch_status(void) {
  cudaError_t rc = cudaGetLastError();
  return rc == cudaSuccess ? STK_OK : STK_ECUDA;
}

static dim3 batch_grid(int max_w, int max_h, int count) {
  return dim3((unsigned)((max_w + kTileX - 1) / kTileX), (unsigned)((max_h + kTileY - 1) / kTileY), (unsigned)count);
}

extern "C" stk_status stk__gpu_resize_batch(const stk__gpu_resize_desc *descs_device, int count, int max_dst_w,
                                            int max_dst_h, cudaStream_t stream) {
  if (count <= 0 || max_dst_w <= 0 || max_dst_h <= 0) return STK_OK;
  if (count > 65535) return STK_EINVAL;
  stk_resize_kernel<<<batch_grid(max_dst_w, max_dst_h, count), dim3(kTileX, kTileY), 0, stream>>>(descs_device);
  return launch_status();
}

extern "C" stk_status stk__gpu_crop_u8_batch(const stk__gpu_crop_desc *descs_device, int count, int max_w, int max_h,
                                             cudaStream_t stream) {
  if (count <= 0 || max_w <= 0 || max_h <= 0) return STK_OK;
  if (count > 65535) return STK_EINVAL;
  stk_crop_u8_kernel<<<batch_grid(max_w, max_h, count), dim3(kTileX, kTileY), 0, stream>>>(descs_device);
  return launch_status();
}
