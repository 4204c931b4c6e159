/* src/ops/augment/warp_affine/warp_gpu.cu: the GPU implementations of `warp_affine` and `rotate`:
 * the batched warp kernel and its launcher, and run_batch: every sample planned on the host by the
 * operator's own plan (warp_affine.c, rotate.c: the CPU implementation's), the outputs reserved
 * with one grow-only ragged reservation, the descriptors uploaded with one copy, ONE launch for the
 * batch: grid (32x8 tiles of the largest output, images: samples, or the frames of FHWC
 * sequences). The sampler (warp_sample.cuh) repeats each of the CPU reference's (warp.c) float
 * operations rounded alone, so the two agree to the bit but for floorf/u8 ties
 * (tests/test_gpu_geometry.c allows one level on 0.5%). Hot path; no allocation after warm-up. */
#include <cuda_runtime.h>
#include <stdlib.h>
#include <string.h>

#include "ops/augment/warp_affine/warp_sample.cuh"
#include "ops/common/image_gpu.h"

static const int kTileX = 32, kTileY = 8;

__global__ void stk_warp_kernel(const stk__warp_desc *__restrict__ descs) {
  const stk__warp_desc d = descs[blockIdx.z];
  const int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= d.dst_w || y >= d.dst_h) return;
  stk__warp_pixel(d, x, y);
}

/* Launches the warp of count images (descs_device: device copies) whose largest output is
 * max_w x max_h. */
static stk_status warp_batch(const stk__warp_desc *descs_device, int count, int max_w, int max_h, cudaStream_t stream) {
  if (count <= 0 || max_w <= 0 || max_h <= 0) return STK_OK;
  if (count > 65535) return STK_EINVAL;
  dim3 grid((unsigned)((max_w + kTileX - 1) / kTileX), (unsigned)((max_h + kTileY - 1) / kTileY), (unsigned)count);
  stk_warp_kernel<<<grid, dim3(kTileX, kTileY), 0, stream>>>(descs_device);
  return cudaGetLastError() == cudaSuccess ? STK_OK : STK_ECUDA;
}

typedef struct warp_gpu_state {
  stk__warp_state warp;
  stk__gpu_arena arena;
  int numa_node;
  stk__warp_desc *descs; /* grow-only, one per sample */
  size_t *sizes;
  int capacity;
} warp_gpu_state;

static stk_status warp_gpu_init(stk__op *op, const stk__warp_kind *kind, char *err, size_t err_size) {
  warp_gpu_state *s = (warp_gpu_state *)calloc(1, sizeof *s);
  if (!s) return STK_ENOMEM;
  stk_status dev = stk__gpu_op_device(op, &s->numa_node, err, err_size);
  if (dev != STK_OK) {
    free(s);
    return dev;
  }
  stk_status st = stk__warp_state_init(&s->warp, op, kind, err, err_size);
  if (st != STK_OK) {
    free(s);
    return st;
  }
  op->state = s;
  return STK_OK;
}

static void warp_gpu_destroy(stk__op *op) {
  warp_gpu_state *s = (warp_gpu_state *)op->state;
  if (!s) return;
  stk__gpu_arena_free(&s->arena);
  free(s->warp.params);
  free(s->descs);
  free(s->sizes);
  free(s);
  op->state = NULL;
}

static stk_status plan_all(stk__op *op, warp_gpu_state *s, stk__batch_ctx *ctx, stk__tensor_list *const *inputs, int n,
                           int *max_w, int *max_h, int *frames) {
  if (n > s->capacity) {
    stk__warp_desc *descs = (stk__warp_desc *)realloc(s->descs, (size_t)n * sizeof *descs);
    if (descs) s->descs = descs;
    size_t *sizes = (size_t *)realloc(s->sizes, (size_t)n * sizeof *sizes);
    if (sizes) s->sizes = sizes;
    if (!descs || !sizes) return STK_ENOMEM;
    s->capacity = n;
    if (ctx->alloc_count) __atomic_fetch_add(ctx->alloc_count, 1, __ATOMIC_RELAXED);
  }
  int all_inputs = op->num_inputs;
  for (int a = 0; a < op->schema->num_args; a++)
    if (op->args[a].input_slot >= all_inputs) all_inputs = op->args[a].input_slot + 1;
  *max_w = *max_h = *frames = 0;
  /* The matrix input (or an argument bound to a GPU node) is read back on the legacy stream: first
   * let this batch's uploads land. */
  int wait = op->num_inputs > 1;
  for (int k = op->num_inputs; k < all_inputs; k++) wait |= inputs[k] && inputs[k]->device == STK_DEVICE_GPU;
  if (wait && stk__gpu_stream_synchronize(ctx->cuda_stream) != STK_OK) {
    stk__errorf(ctx->err, ctx->err_size, "waiting for the per-sample inputs on the GPU failed");
    return STK_ECUDA;
  }
  for (int i = 0; i < n; i++) {
    stk__tensor *ins[32];
    for (int k = 0; k < all_inputs && k < 32; k++) {
      if (!inputs[k] || i >= inputs[k]->count) {
        stk__errorf(ctx->err, ctx->err_size, "input %d has fewer samples than the batch's %d", k, n);
        return STK_EINVAL;
      }
      ins[k] = &inputs[k]->samples[i];
    }
    char why[512] = "";
    stk__warp_desc *d = &s->descs[i];
    stk_status st = stk__warp_plan_sample(op, &s->warp, ins, op->num_inputs, d, why, sizeof why);
    if (st != STK_OK) {
      stk__errorf(ctx->err, ctx->err_size, "sample %d: %s", i, why);
      return st;
    }
    s->sizes[i] = (stk__warp_out_frame(d) * (size_t)d->frames + 255) & ~(size_t)255;
    *frames += d->frames;
    if (s->sizes[i] == 0) s->sizes[i] = 256;
    if (d->dst_w > *max_w) *max_w = d->dst_w;
    if (d->dst_h > *max_h) *max_h = d->dst_h;
  }
  return STK_OK;
}

static stk_status warp_run_batch(stk__op *op, stk__batch_ctx *ctx, stk__tensor_list *const *inputs,
                                 stk__tensor_list *const *outputs) {
  warp_gpu_state *s = (warp_gpu_state *)op->state;
  const int n = inputs[0]->count;
  stk__tensor_list *out = outputs[0];
  int max_w, max_h, frames;
  stk_status st = plan_all(op, s, ctx, inputs, n, &max_w, &max_h, &frames);
  if (st != STK_OK || n == 0) return stk__gpu_failure(ctx, st, "planning the batch");
  st = stk__gpu_tensor_list_reserve_sizes(out, n, s->sizes, ctx->alloc_count);
  if (st != STK_OK) return stk__gpu_failure(ctx, st, "reserving the output batch on the GPU");
  const size_t desc_bytes = (size_t)frames * sizeof(stk__warp_desc);
  st = stk__gpu_arena_reserve(&s->arena, desc_bytes + 64, s->numa_node, ctx->alloc_count);
  if (st != STK_OK) return stk__gpu_failure(ctx, st, "reserving the parameter upload buffer");
  const size_t at = stk__gpu_arena_push(&s->arena, desc_bytes);
  stk__warp_desc *descs = (stk__warp_desc *)(s->arena.host + at);
  for (int i = 0, k = 0; i < n; i++) { /* one descriptor per frame: a sequence's frames warped alike */
    const stk__warp_desc *d = &s->descs[i];
    const int sequence = inputs[0]->samples[i].ndim == 4;
    const int64_t shape[4] = {d->frames, d->dst_h, d->dst_w, d->channels};
    stk__gpu_set_sample_shape(&out->samples[i], (stk_dtype)d->out_dtype, 3 + sequence, shape + !sequence,
                              sequence ? "FHWC" : "HWC");
    for (int f = 0; f < d->frames; f++, k++) {
      descs[k] = *d;
      descs[k].src = (const uint8_t *)d->src + (size_t)f * stk__warp_in_frame(d);
      descs[k].dst = (uint8_t *)out->samples[i].data + (size_t)f * stk__warp_out_frame(d);
    }
  }
  stk__gpu_tensor_list_settle(out);
  cudaStream_t stream = (cudaStream_t)ctx->cuda_stream;
  st = stk__gpu_arena_upload(&s->arena, stream);
  if (st != STK_OK) return stk__gpu_failure(ctx, st, "uploading per-sample parameters");
  st = warp_batch((const stk__warp_desc *)(s->arena.device + at), frames, max_w, max_h, stream);
  return stk__gpu_failure(ctx, st, "the batched warp kernel launch");
}

static stk_status affine_gpu_init(stk__op *op, char *err, size_t err_size) {
  return warp_gpu_init(op, &stk__warp_kind_affine, err, err_size);
}
static stk_status rotate_gpu_init(stk__op *op, char *err, size_t err_size) {
  return warp_gpu_init(op, &stk__warp_kind_rotate, err, err_size);
}

extern "C" {
const stk__op_impl stk__gpu_impl_warp_affine = {affine_gpu_init, warp_gpu_destroy, NULL, NULL, NULL, NULL,
                                                warp_run_batch};
const stk__op_impl stk__gpu_impl_rotate = {rotate_gpu_init, warp_gpu_destroy, NULL, NULL, NULL, NULL, warp_run_batch};
}
