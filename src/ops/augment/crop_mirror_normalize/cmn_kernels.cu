/* src/ops/augment/crop_mirror_normalize/cmn_kernels.cu: batched crop_mirror_normalize and the fused
 * resize -> crop -> mirror -> normalize kernel. One launch per batch: grid (tiles of the largest
 * crop, batch); one thread per output pixel writes all its channels. The fused kernel first
 * resamples horizontally, per block, the source rows its tile reads (shared memory).
 * Shapes: src[i] = [H, W, C] u8 (row stride bytes); dst[i] = [out_C, crop_h, crop_w] (CHW, channel
 * planes plane_stride elements apart: a frame of a [C, F, H, W] output) or [crop_h, crop_w, out_C] (HWC) in float / float16 / uint8; out_C = C (+1 zero pad channel).
 * Hot path. Arithmetic matches stk__crop_mirror_normalize_ex step for step (explicitly rounded
 * intrinsics, no FMA), so results are expected bit-identical to the CPU on x86-64; the tests still
 * allow float <= 1e-3 relative, uint8 <= 1 level, float16 = RNE of the float result. */
#include <cuda_runtime.h>

#include "ops/common/kernels.h"
#include "ops/augment/resize/resample_device.cuh"

static const int kTileX = 32, kTileY = 8;

/* (x - mean) * inv_std + shift, rounded step by step like the CPU (no FMA); fill values outside
 * the image and for the pad channel. */
__device__ __forceinline__ void store_pixel(void *dst, const stk__gpu_normalize &n, int w, size_t plane, int x, int y,
                                            const float v[4], int inside) {
  for (int c = 0; c < n.out_channels; c++) {
    float value = n.fill[c];
    if (inside && c < n.channels) value = __fadd_rn(__fmul_rn(__fsub_rn(v[c], n.mean[c]), n.inv_std[c]), n.shift);
    stk_store_normalized(dst, n, w, plane, x, y, c, value);
  }
}

/* A descriptor's channel-plane stride; 0 means packed (crop_w * crop_h). */
template <typename Desc>
__device__ __forceinline__ size_t plane_of(const Desc &d) {
  return d.plane_stride ? d.plane_stride : (size_t)d.crop_w * (size_t)d.crop_h;
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
  store_pixel(d.dst, norm, d.crop_w, plane_of(d), x, y, v, inside);
}

/* Rows of horizontally resampled source a block keeps in shared memory: a tile of kTileY output
 * rows reads about kTileY * scale + taps source rows; a block whose window is taller (a downscale
 * of more than ~6x) computes its pixels directly instead. */
static const int kFusedRows = 56;

/* The fused kernel. Separable, like the CPU reference: each block first resamples horizontally
 * the source rows its tile of output rows reads (one float per channel per row and column, in
 * shared memory), then combines them vertically. Each horizontal value is computed exactly as
 * stk_resample_pixel computes it (same taps, same order, same rounding), so the result is the same
 * bits, with taps_x + taps_y instead of taps_x * taps_y multiply-adds per output pixel and each
 * source pixel read once per block instead of once per output row. */
typedef float fused_rows[kFusedRows][4][kTileX]; /* [row][channel][column]: no bank conflicts */

/* One tile (tile_x, tile_y) of sample d: what a block of the fused kernel computes. Every thread
 * of the block calls it (it has a barrier); a thread's return ends its part of the tile. */
__device__ __forceinline__ void fused_tile(const stk__gpu_fused_desc &d, const stk__gpu_normalize &norm, int tile_x,
                                           int tile_y, fused_rows &hs) {
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int x0 = tile_x * kTileX, y0 = tile_y * kTileY;
  if (x0 >= d.crop_w || y0 >= d.crop_h) return; /* the whole block: no thread reaches the barrier */
  const int x = x0 + tx, y = y0 + ty;
  const int channels = norm.channels;
  /* Resized rows this tile reads, clamped to the resized image (rows outside are fill). */
  const int ry_lo = max(d.crop_y + y0, 0);
  const int ry_hi = min(d.crop_y + min(y0 + kTileY, d.crop_h) - 1, d.resized_h - 1);
  int row0 = 0, rows = 0;
  if (ry_lo <= ry_hi) {
    row0 = d.y.first[ry_lo];
    rows = d.y.first[ry_hi] + d.y.taps - row0;
  }
  if (rows > kFusedRows) { /* block-uniform: the direct path, one pixel per thread */
    if (x >= d.crop_w || y >= d.crop_h) return;
    const int rx = d.crop_x + (d.mirror ? d.crop_w - 1 - x : x);
    const int ry = d.crop_y + y;
    const int inside = rx >= 0 && rx < d.resized_w && ry >= 0 && ry < d.resized_h;
    float v[4] = {0.f, 0.f, 0.f, 0.f};
    if (inside) {
      stk_resample_pixel(d.src, d.src_stride, channels, d.x, d.y, rx, ry, v);
      for (int c = 0; c < channels; c++) v[c] = stk_round_u8(v[c]);
    }
    store_pixel(d.dst, norm, d.crop_w, plane_of(d), x, y, v, inside);
    return;
  }
  /* Horizontal pass: column tx of the tile, source rows row0 + ty, + kTileY, ... */
  const int rx = d.crop_x + (d.mirror ? d.crop_w - 1 - x : x);
  const int col_inside = x < d.crop_w && rx >= 0 && rx < d.resized_w;
  if (col_inside) {
    const int sx0 = d.x.first[rx];
    const float *wx = d.x.weights + (size_t)rx * d.x.taps;
    for (int r = ty; r < rows; r += kTileY) {
      const uint8_t *row = d.src + (size_t)(row0 + r) * d.src_stride + (size_t)sx0 * channels;
      float h[4] = {0.f, 0.f, 0.f, 0.f};
      for (int kx = 0; kx < d.x.taps; kx++) {
        const float w = wx[kx];
        const uint8_t *px = row + kx * channels;
        for (int c = 0; c < channels; c++) h[c] = __fadd_rn(h[c], __fmul_rn(w, (float)px[c]));
      }
      for (int c = 0; c < channels; c++) hs[r][c][tx] = h[c];
    }
  }
  __syncthreads();
  if (x >= d.crop_w || y >= d.crop_h) return;
  const int ry = d.crop_y + y;
  const int inside = col_inside && ry >= 0 && ry < d.resized_h;
  float v[4] = {0.f, 0.f, 0.f, 0.f};
  if (inside) {
    const int r0 = d.y.first[ry] - row0;
    const float *wy = d.y.weights + (size_t)ry * d.y.taps;
    for (int ky = 0; ky < d.y.taps; ky++) {
      const float wyk = wy[ky];
      if (wyk != 0.f) /* the CPU adds 0 * row: the same sum */
        for (int c = 0; c < channels; c++) v[c] = __fadd_rn(v[c], __fmul_rn(wyk, hs[r0 + ky][c][tx]));
    }
    for (int c = 0; c < channels; c++) v[c] = stk_round_u8(v[c]); /* same u8 rounding as resize */
  }
  store_pixel(d.dst, norm, d.crop_w, plane_of(d), x, y, v, inside);
}

/* One block a tile: grid (tiles_x, tiles_y, count). */
__global__ void stk_fused_kernel(const stk__gpu_fused_desc *__restrict__ descs, stk__gpu_normalize norm) {
  __shared__ fused_rows hs;
  fused_tile(descs[blockIdx.z], norm, blockIdx.x, blockIdx.y, hs);
}

/* gridDim.x blocks, each taking tiles t = blockIdx.x, + gridDim.x, ... of the tiles_x x tiles_y x
 * count tiles (a sample's tiles in a row, so a block's next tile is usually the same image's). */
__global__ void stk_fused_kernel_loop(const stk__gpu_fused_desc *__restrict__ descs, stk__gpu_normalize norm,
                                      int tiles_x, int tiles_y, long long tiles) {
  __shared__ fused_rows hs;
  for (long long t = blockIdx.x; t < tiles; t += gridDim.x) {
    const int tile_x = (int)(t % tiles_x);
    const long long rest = t / tiles_x;
    fused_tile(descs[rest / tiles_y], norm, tile_x, (int)(rest % tiles_y), hs);
    __syncthreads(); /* the next tile's horizontal pass overwrites hs */
  }
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

extern "C" int stk__gpu_fused_default_blocks(void) {
  const int kFusedBlocksPerSm = 4; /* the fastest of 3 to 8 per SM on an H100 (kernels.h) */
  int device = 0, sms = 0, per_sm = 0;
  if (cudaGetDevice(&device) != cudaSuccess ||
      cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device) != cudaSuccess ||
      cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, stk_fused_kernel_loop, kTileX * kTileY, 0) !=
          cudaSuccess ||
      sms <= 0 || per_sm <= 0) {
    (void)cudaGetLastError(); /* a failed query is not the next launch's error */
    return 0;
  }
  return sms * (per_sm < kFusedBlocksPerSm ? per_sm : kFusedBlocksPerSm);
}

extern "C" stk_status stk__gpu_fused_resize_cmn_batch(const stk__gpu_fused_desc *descs_device, int count,
                                                      int max_crop_w, int max_crop_h, const stk__gpu_normalize *norm,
                                                      int max_blocks, int launches, cudaStream_t stream) {
  if (check_norm(norm) != STK_OK || count > 65535 || max_blocks < 0 || launches < 1) return STK_EINVAL;
  if (count <= 0 || max_crop_w <= 0 || max_crop_h <= 0) return STK_OK;
  if (launches > count) launches = count;
  for (int k = 0; k < launches; k++) { /* samples [first, end) of the batch, in stream order */
    const int first = (int)((long long)count * k / launches), end = (int)((long long)count * (k + 1) / launches);
    const dim3 grid = batch_grid(max_crop_w, max_crop_h, end - first);
    const long long tiles = (long long)grid.x * grid.y * grid.z;
    if (max_blocks > 0 && max_blocks < tiles)
      stk_fused_kernel_loop<<<max_blocks, dim3(kTileX, kTileY), 0, stream>>>(descs_device + first, *norm, (int)grid.x,
                                                                             (int)grid.y, tiles);
    else stk_fused_kernel<<<grid, dim3(kTileX, kTileY), 0, stream>>>(descs_device + first, *norm);
  }
  return cudaGetLastError() == cudaSuccess ? STK_OK : STK_ECUDA;
}
