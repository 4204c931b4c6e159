/* src/ops/common/kernels.h: the batched CUDA augmentation kernels and their launchers (one .cu per
 * group: resize_kernels.cu; cmn_kernels.cu, which also holds the fused kernel). Each launcher
 * takes a cudaStream_t, launches ONE kernel for the whole batch (blockIdx.z = sample; per-sample
 * parameters in a device array), checks the launch and returns a status. Included by .cu files only. Hot path.
 *
 * Layouts: source images are HWC uint8 with a row stride in bytes (src_stride); resize writes HWC
 * uint8 packed; crop_mirror_normalize and the fused kernel write CHW or HWC in float / float16 /
 * uint8, out_channels = channels (+1 fill channel when pad_output). The resampling weights are the
 * host-computed tables of stk__resample_weights (src/ops/augment/resize/resample.h), uploaded per batch.
 * CPU references: src/ops/augment/resize/resize_reference.c and cmn_reference.c. */
#ifndef STOKER_OPS_GPU_KERNELS_H
#define STOKER_OPS_GPU_KERNELS_H

#include <cuda_runtime_api.h>
#include <stdint.h>

extern "C" {
#include "core/op.h"

/* One axis of a separable resampling: output o reads first[o] .. first[o]+taps-1. */
typedef struct stk__gpu_axis {
  const int32_t *first; /* device, out_size entries */
  const float *weights; /* device, out_size * taps entries */
  int taps;
} stk__gpu_axis;

/* resize: src region -> dst_w x dst_h, HWC u8 packed, rounded to nearest and clamped. */
typedef struct stk__gpu_resize_desc {
  const uint8_t *src;
  int src_w, src_h, src_stride, channels;
  uint8_t *dst;
  int dst_w, dst_h;
  stk__gpu_axis x, y;
} stk__gpu_resize_desc;

stk_status stk__gpu_resize_batch(const stk__gpu_resize_desc *descs_device, int count, int max_dst_w, int max_dst_h,
                                 cudaStream_t stream);

/* Normalization shared by the batch, exactly as stk__crop_mirror_normalize_ex computes it:
 * out = (x - mean[c]) * inv_std[c] + shift (inv_std = scale / std), each step rounded as in
 * IEEE single precision (no FMA contraction); pixels outside the image get fill[c], the padded
 * 4th channel gets fill[channels]. */
typedef struct stk__gpu_normalize {
  float mean[4];
  float inv_std[4];
  float shift;
  float fill[5];
  int channels;     /* input channels (1..4) */
  int out_channels; /* channels, or 4 when a pad channel is added to RGB */
  int layout_chw;   /* 1: CHW, 0: HWC */
  int dtype;        /* stk_dtype: FLOAT32, FLOAT16 or UINT8 */
} stk__gpu_normalize;

/* crop_mirror_normalize on one sample: crop window in source pixels (may reach outside: those
 * pixels are fill[c] in the output), horizontal mirror of the window when mirror != 0. dst holds
 * crop_w * crop_h * out_channels elements. */
typedef struct stk__gpu_cmn_desc {
  const uint8_t *src;
  int src_w, src_h, src_stride;
  int crop_x, crop_y, crop_w, crop_h;
  int mirror;
  void *dst;
  size_t plane_stride; /* elements between CHW channel planes: 0 = crop_w * crop_h; a CFHW frame's F * that */
} stk__gpu_cmn_desc;

stk_status stk__gpu_crop_mirror_normalize_batch(const stk__gpu_cmn_desc *descs_device, int count, int max_crop_w,
                                                int max_crop_h, const stk__gpu_normalize *norm, cudaStream_t stream);

/* Fused resize -> crop -> mirror -> normalize: the virtual resized image (resized_w x resized_h,
 * the resize of the source window described by the x/y axes) is never stored; each output pixel
 * (x, y) of the crop reads resized pixel (crop_x + (mirror ? crop_w-1-x : x), crop_y + y), rounded
 * to u8 exactly like the unfused resize, then normalized. Pixels of the crop outside the resized
 * image are fill[c]. One launch for the batch, each source byte read through L1/L2 once per tap. */
typedef struct stk__gpu_fused_desc {
  const uint8_t *src;
  int src_w, src_h, src_stride;
  int resized_w, resized_h;
  stk__gpu_axis x, y;
  int crop_x, crop_y, crop_w, crop_h;
  int mirror;
  void *dst;
  size_t plane_stride; /* elements between channel planes (CHW), as in stk__gpu_cmn_desc */
} stk__gpu_fused_desc;

/* max_blocks > 0: at most that many blocks, each looping over the batch's tiles (the same pixels,
 * the same bits); 0: one block a tile (tiles of the largest crop, times count). launches >= 1: the
 * batch's samples in that many launches one after the other on stream (the same bits; at most
 * count), so a kernel of another stream waits at most one launch's time for the SMs. */
stk_status stk__gpu_fused_resize_cmn_batch(const stk__gpu_fused_desc *descs_device, int count, int max_crop_w,
                                           int max_crop_h, const stk__gpu_normalize *norm, int max_blocks, int launches,
                                           cudaStream_t stream);
/* The fused kernel's default grid on the current device: kFusedBlocksPerSm looping blocks per SM
 * (fewer when fewer fit), or 0 (one block a tile) when the device cannot be asked. 4 per SM is the
 * fastest of 3 to 8 on an H100 for a ResNet-50 batch and beats one block a tile (50,176 short
 * blocks), with the same bits each way (bench/fused_kernel_cost.cu measures it). */
int stk__gpu_fused_default_blocks(void);

/* Crop (no normalization): copies a window of HWC u8 sources into packed HWC u8 outputs; used by
 * the mixed random-crop decoder when a backend cannot decode only the window. */
typedef struct stk__gpu_crop_desc {
  const uint8_t *src;
  int src_stride;
  int x, y, w, h, channels;
  uint8_t *dst;
} stk__gpu_crop_desc;

stk_status stk__gpu_crop_u8_batch(const stk__gpu_crop_desc *descs_device, int count, int max_w, int max_h,
                                  cudaStream_t stream);

} /* extern "C" */
#endif
