/* src/ops/gpu/gpu_ops.h: internal declarations shared by the CUDA operator files under
 * src/ops/gpu: the operator implementation tables the registry (gpu_registry.c) hands out, the
 * GPU's NUMA node lookup and the per-operator upload arena (pinned host staging + device copy)
 * used to ship per-sample parameters and resampling weights with one copy per batch.
 * Included from C and CUDA files; no CUDA types here. Hot path: the arena is used per batch. */
#ifndef STOKER_OPS_GPU_GPU_OPS_H
#define STOKER_OPS_GPU_GPU_OPS_H

#include <stddef.h>
#include <stdint.h>

#include "core/op.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Implementations (defined in the .cu files). */
extern const stk__op_impl stk__gpu_impl_resize;                /* resize, device "gpu" */
extern const stk__op_impl stk__gpu_impl_random_resized_crop;   /* random_resized_crop, "gpu" */
extern const stk__op_impl stk__gpu_impl_crop_mirror_normalize; /* crop_mirror_normalize, "gpu" */
extern const stk__op_impl stk__gpu_impl_fused_resize_cmn;      /* (random_resized_crop|resize) + cmn */
extern const stk__op_impl stk__gpu_impl_decoders_image;        /* decoders.image, "mixed" */
extern const stk__op_impl stk__gpu_impl_decoders_image_random_crop; /* decoders.image_random_crop, "mixed" */
extern const stk__op_impl stk__gpu_impl_readers_video;         /* readers.video, "gpu" (NVDEC) */

/* After the samples' shapes are set: list->dense = 1 only when every sample has the same shape
 * and dtype and they lie back to back from list->base (one [N, ...] tensor), else 0 (ragged:
 * per-sample views only). stk__gpu_tensor_list_reserve places samples sample_bytes apart. */
STK_INTERNAL void stk__gpu_tensor_list_settle(stk__tensor_list *list);

/* Upload arena: a pinned host buffer (on the GPU's NUMA node) and a device buffer of the same
 * size; a batch reserves, pushes its parameter blocks on the host side, then uploads them with
 * one asynchronous copy. Reserving waits for the previous batch's copy (an event), so the
 * pinned bytes are never rewritten while a copy still reads them. Grow-only, counted. */
typedef struct stk__gpu_arena {
  uint8_t *host;
  uint8_t *device;
  size_t capacity;
  size_t used;
  void *copied_event; /* cudaEvent_t recorded after the last upload */
  void *stream;       /* where the last upload went, and so the kernels reading it */
  int numa_node;      /* where host lives (-1 unknown) */
} stk__gpu_arena;

STK_INTERNAL stk_status stk__gpu_arena_reserve(stk__gpu_arena *arena, size_t bytes, int numa_node,
                                               uint64_t *alloc_count);
/* Returns the offset of a fresh block of `bytes` aligned to 16 (reserve enough first). */
STK_INTERNAL size_t stk__gpu_arena_push(stk__gpu_arena *arena, size_t bytes);
STK_INTERNAL stk_status stk__gpu_arena_upload(stk__gpu_arena *arena, void *stream);
STK_INTERNAL void stk__gpu_arena_free(stk__gpu_arena *arena);

#ifdef __cplusplus
}
#endif
#endif
