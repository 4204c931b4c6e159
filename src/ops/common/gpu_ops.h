/* src/ops/common/gpu_ops.h: internal declarations shared by the CUDA operator files under
 * src/ops/gpu: the declarations of their implementations (ops/op_impls.h, named by the operator
 * table src/ops/op_table.c), tensor-list settling and the per-operator upload arena (pinned host
 * staging + device copy) used to ship per-sample parameters and resampling weights with one copy
 * per batch.
 * Included from C and CUDA files; no CUDA types here. Hot path: the arena is used per batch. */
#ifndef STOKER_OPS_GPU_GPU_OPS_H
#define STOKER_OPS_GPU_GPU_OPS_H

#include <stddef.h>
#include <stdint.h>

#include "core/op.h"
#include "ops/op_impls.h" /* the mixed/GPU implementations these files define */

#ifdef __cplusplus
extern "C" {
#endif

/* After the samples' shapes are set: list->dense = 1 only when every sample has the same shape
 * and dtype and they lie back to back from list->base (one [N, ...] tensor), else 0 (ragged:
 * per-sample views only). stk__gpu_tensor_list_reserve places samples sample_bytes apart. */
STK_INTERNAL void stk__gpu_tensor_list_settle(stk__tensor_list *list);

/* Upload arena: pinned host buffers (on the GPU's NUMA node) and device buffers of the same size,
 * STK__GPU_ARENA_RING of each used in turn; a batch reserves (taking the next pair), pushes its
 * parameter blocks on the host side, then uploads them with one asynchronous copy. Reserving
 * waits for the copy made from that pair STK__GPU_ARENA_RING batches ago (an event), so the pinned
 * bytes are never rewritten while a copy still reads them, and a batch does not wait for the
 * GPU work queued before the last batch's copy (the engines' decode of the batch before). The
 * device side is reused in stream order (kernels reading it were queued before the next copy on
 * the same stream). Grow-only, counted. host/device/capacity are the current pair's. */
#define STK__GPU_ARENA_RING 4
typedef struct stk__gpu_arena {
  uint8_t *host; /* the current pair (after reserve) */
  uint8_t *device;
  size_t capacity;
  size_t used;
  void *stream;  /* where the last upload went, and so the kernels reading it */
  int numa_node; /* where host lives (-1 unknown) */
  int turn;      /* index of the current pair */
  uint8_t *ring_host[STK__GPU_ARENA_RING];
  uint8_t *ring_device[STK__GPU_ARENA_RING];
  size_t ring_capacity[STK__GPU_ARENA_RING];
  void *ring_event[STK__GPU_ARENA_RING]; /* cudaEvent_t recorded after the pair's last upload */
} stk__gpu_arena;

STK_INTERNAL stk_status stk__gpu_arena_reserve(stk__gpu_arena *arena, size_t bytes, int numa_node,
                                               uint64_t *alloc_count);
/* Returns the offset of a fresh block of `bytes` aligned to 16 (reserve enough first). */
STK_INTERNAL size_t stk__gpu_arena_push(stk__gpu_arena *arena, size_t bytes);
STK_INTERNAL stk_status stk__gpu_arena_upload(stk__gpu_arena *arena, void *stream);
STK_INTERNAL void stk__gpu_arena_free(stk__gpu_arena *arena);

/* Makes the op's CUDA device (options->device_id; 0 when unset) current for the calling thread and
 * gives its NUMA node in *numa_node (0 when unknown, as the topology code resolves it): the set-up
 * of every GPU operator's state. STK_ENODEV, with err naming the device, when it cannot be used. */
STK_INTERNAL stk_status stk__gpu_op_device(const stk__op *op, int *numa_node, char *err, size_t err_size);

#ifdef __cplusplus
}
#endif
#endif
