/* src/ops/common/image_batch.cuh: the setup every GPU image operator repeats around its one kernel
 * launch (resize_gpu.cu, cmn_gpu.cu, fused_resize_cmn_gpu.cu): the operator state installed at
 * init, the batch's geometry and sources read at the start of run_batch, and the upload arena
 * reserved, its descriptors placed first, and uploaded with one copy before the launch. Each
 * operator keeps only what is its own: its parameters, its descriptors and its kernel. Included
 * by .cu files only, after image_gpu.h. Hot path (per batch); no allocation except the arena's and
 * the geometry's grow-only ones. */
#ifndef STOKER_OPS_GPU_IMAGE_BATCH_CUH
#define STOKER_OPS_GPU_IMAGE_BATCH_CUH

#include "ops/common/image_gpu.h"

/* op->state = a new image state on the op's device holding the parsed steps given (either may be
 * NULL: that operator does not have the step). */
static inline stk_status stk__gpu_image_state_install(stk__op *op, const stk__gpu_resize_step *resize,
                                                      const stk__cmn_params *cmn, char *err, size_t err_size) {
  stk__gpu_image_state *s = NULL;
  stk_status st = stk__gpu_image_state_new(op, err, err_size, &s);
  if (st != STK_OK) return st;
  if (resize) s->resize = *resize;
  if (resize && !stk__gpu_resize_fixed_size(resize, &s->fixed_w, &s->fixed_h)) s->fixed_w = s->fixed_h = 0;
  if (cmn) s->cmn = *cmn;
  op->state = s;
  return STK_OK;
}

/* The start of run_batch: *geom = one zeroed entry per image of the batch (*count: a sample, or
 * each frame of an FHWC sequence sample) with its source read and checked (u8 on the GPU). */
static inline stk_status stk__gpu_batch_sources(stk__gpu_image_state *s, const stk__batch_ctx *ctx,
                                                const stk__tensor_list *in, stk__gpu_sample_geom **geom, int *count) {
  *count = stk__gpu_count_frames(ctx, in);
  if (*count < 0) return STK_EINVAL;
  *geom = stk__gpu_geom_get(s, *count > 0 ? *count : 1, ctx->alloc_count);
  if (!*geom) return STK_ENOMEM;
  stk__gpu_read_sources(in, *geom);
  return STK_OK;
}

/* The upload arena for one batch: arena_bytes reserved, then desc_bytes of descriptors pushed
 * first; *descs_at is their offset (host: s->arena.host + *descs_at, device: s->arena.device +
 * *descs_at). What the operator pushes after them (axis tables) must fit in arena_bytes. */
static inline stk_status stk__gpu_batch_descs(stk__gpu_image_state *s, const stk__batch_ctx *ctx, size_t arena_bytes,
                                              size_t desc_bytes, size_t *descs_at) {
  stk_status st = stk__gpu_arena_reserve(&s->arena, arena_bytes, s->numa_node, ctx->alloc_count);
  if (st != STK_OK) return stk__gpu_failure(ctx, st, "reserving the parameter upload buffer");
  *descs_at = stk__gpu_arena_push(&s->arena, desc_bytes);
  return STK_OK;
}

/* Uploads everything pushed into the arena with one copy on the batch's stream (*stream). */
static inline stk_status stk__gpu_batch_upload(stk__gpu_image_state *s, const stk__batch_ctx *ctx,
                                               cudaStream_t *stream) {
  *stream = (cudaStream_t)ctx->cuda_stream;
  stk_status st = stk__gpu_arena_upload(&s->arena, *stream);
  if (st != STK_OK) return stk__gpu_failure(ctx, st, "uploading per-sample parameters");
  return STK_OK;
}

#endif
