/* src/base/tensor.h: the engine's tensor types -- one sample's tensor (stk__tensor) and one node
 * output for a whole batch (stk__tensor_list) -- and the host tensor helpers (src/base/tensor.c).
 *
 * Where it sits: beside base/common.h on the ground floor. It includes only the public types
 * (stoker/pipeline.h) and base/common.h; the device runtime (src/device/device.h) includes it for
 * the two structs and calls none of its functions. tensor.c itself stands on the device runtime
 * (pinned host memory comes from its pool), so the layering is
 *     base/common.h  <-  base/tensor.h (types)  <-  device/device.h  <-  base/tensor.c, core/op.h, ...
 * Hot path: stk__tensor_resize is called per sample per operator. */
#ifndef STOKER_CORE_TENSOR_H
#define STOKER_CORE_TENSOR_H

#include <stddef.h>
#include <stdint.h>

#include "base/common.h"
#include "stoker/pipeline.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A pipeline's host memory budget for its slot buffers (options.host_memory_budget): bytes held by
 * every host sample buffer that points here, kept with atomic adds/subs on each (re)allocation and
 * free, so checking it costs one atomic add per growth and nothing per steady-state sample. */
typedef struct stk__host_budget {
  size_t held;  /* atomic: capacity of all counted buffers (pinned blocks at their block size) */
  size_t limit; /* a growth that would take held above this is refused (SIZE_MAX: unlimited) */
} stk__host_budget;

/* Takes `more` bytes from the budget (NULL: always granted); 0, taking nothing, when that would
 * pass its limit. What the pipeline holds beside the slots' sample buffers goes through these too:
 * the dense batch tensors (taken, so refused past the limit: exec/cpu_stage.c) and the workers'
 * scratch buffers (counted, never refused: exec/pool.c). docs/pipeline.md, "Host memory". */
STK_INTERNAL int stk__host_budget_take(stk__host_budget *budget, size_t more);
/* Adds `more` bytes held whatever the limit (a buffer that must exist, counted so stats see it). */
STK_INTERNAL void stk__host_budget_count(stk__host_budget *budget, size_t more);

/* A host memory block of `*capacity` bytes at *data (capacity 0: none) grown to at least `bytes`:
 * from the pinned pool on numa_node when `pinned` (the block may come larger: *capacity says what
 * is held), else realloc; its first `keep` bytes are kept. On failure nothing changes (pinned: the
 * pool's status; else STK_ENOMEM). A block keeps its kind: pass the kind it was made with. Shared
 * by stk__tensor_reserve and the executor's dense batch tensors. Budgets are the caller's. */
STK_INTERNAL stk_status stk__host_block_grow(void **data, size_t *capacity, size_t keep, size_t bytes, int pinned,
                                             int numa_node, uint64_t *alloc_count);
/* Gives a block of stk__host_block_grow back (capacity 0: nothing to give). */
STK_INTERNAL void stk__host_block_free(void *data, size_t capacity, int pinned, int numa_node);
/* Gives back `less` bytes taken or counted before. NULL-safe. */
STK_INTERNAL void stk__host_budget_give(stk__host_budget *budget, size_t less);

typedef struct stk__tensor {
  void *data;
  size_t nbytes;   /* bytes of the current contents */
  size_t capacity; /* bytes allocated at data (0 when data is borrowed) */
  stk_dtype dtype;
  int ndim;
  int64_t shape[STK_MAX_DIMS];
  char layout[8];
  stk_device_type device;
  uint64_t *alloc_count;    /* pipeline counter bumped (atomically) on each (re)allocation; may be NULL */
  size_t *high_water;       /* shared by all samples of one node output: the largest capacity any of
                            them needed; a growing buffer grows straight to it, so every slot reaches
                            steady state (no allocation) after a few batches; may be NULL */
  int pinned;               /* 1: host memory is page-locked (stk__gpu_pinned_block_get on numa_node), so
                            the GPU reads it by DMA; set by the engine on lists a mixed op reads */
  int numa_node;            /* where pinned memory is placed (-1: anywhere) */
  stk__host_budget *budget; /* the pipeline's budget this buffer counts in (slot buffers); NULL = none */
  size_t peak;              /* largest byte size asked of this buffer since the slot was last recycled
                            (the slot's shrink-back reads and clears it: stk__exec_slot_recycle) */
  size_t refused;           /* bytes of the last growth the budget refused (0: none); the executor reads
                            it to name the size in the sample's error, and clears it */
  uint64_t stage_record[8]; /* a mixed op's CPU pre-stage writes here what it decided for the
                               sample (e.g. the parsed JPEG header and route: jpeg_route.h) for its
                               run_batch, so a stage with no pixels (nbytes 0) still carries it
                               and needs no buffer; the engine never reads it */
  int placed;               /* 1: data is this sample's place in its batch's dense output tensor, not a
                               buffer of its own (stk__tensor_place, for stk__sample_output_resize);
                               the own buffer waits in own_data/own_capacity and comes back with the
                               next resize, reserve, shrink, free or stk__tensor_unplace */
  void *own_data;
  size_t own_capacity;
} stk__tensor;

/* One node output for a whole batch. When dense, samples[i].data points into base. */
typedef struct stk__tensor_list {
  int count;
  stk__tensor *samples;
  int dense;
  void *base; /* dense storage (host or device) */
  size_t base_capacity;
  int base_pinned;    /* a host base from the pinned pool (stk__gpu_pinned_block_get), else malloc */
  int base_numa_node; /* the pinned base's NUMA node (the pool's key when it is put back) */
  stk_device_type device;
  int samples_capacity; /* entries allocated at samples when larger than count (0: exactly count);
                           kept by stk__gpu_tensor_list_reserve so shrinking then regrowing a
                           batch does not reallocate */
} stk__tensor_list;

/* t's metadata: dtype, shape, layout, nbytes = bytes, on the CPU (its storage is the caller's). */
STK_INTERNAL void stk__tensor_set_shape(stk__tensor *t, stk_dtype dtype, int ndim, const int64_t *shape,
                                        const char *layout, size_t bytes);
/* Memory (resize, reserve, shrink, free) is implemented in src/core/tensor_memory.c, above the
 * device runtime whose pinned pool it draws on; the types and bookkeeping are here.
 * Sets dtype/shape/layout and makes sure capacity >= the byte size, growing (never shrinking)
 * host memory (pinned when t->pinned; growing keeps the old contents either way). Shrinking is the
 * slots' business (stk__tensor_shrink, when a slot is recycled). GPU tensor lists are sized by
 * stk__gpu_tensor_list_reserve (src/device/device.h). STK_ERANGE (t->refused set) when the growth
 * would take t->budget over its limit. */
/* dst describes what src holds (dtype, shape, layout, nbytes) on `device`; data and buffers stay
 * dst's own (the caller copies the bytes). */
STK_INTERNAL void stk__tensor_take_shape(stk__tensor *dst, const stk__tensor *src, stk_device_type device);
STK_INTERNAL stk_status stk__tensor_resize(stk__tensor *t, stk_dtype dtype, int ndim, const int64_t *shape,
                                           const char *layout);
/* Makes sure capacity >= bytes (keeps the contents); counted like a resize's growth. Pinned
 * tensors take blocks from the pinned pool (stk__gpu_pinned_block_get). */
STK_INTERNAL stk_status stk__tensor_reserve(stk__tensor *t, size_t bytes);
/* Gives the buffer back and takes one of `bytes` instead (contents lost; for a recycled slot whose
 * buffer grew far above what its output needs now). Counted like a growth. */
STK_INTERNAL stk_status stk__tensor_shrink(stk__tensor *t, size_t bytes);
STK_INTERNAL size_t stk__tensor_numel(const stk__tensor *t);
/* t describes a sample of (dtype, ndim, shape, layout) whose bytes live at `place` (borrowed: its
 * slot in the batch's dense output tensor, valid while the batch is; capacity 0); t's own buffer is
 * kept aside, untouched and still counted, and comes back with stk__tensor_unplace or the next
 * resize/reserve/shrink/free. The shape has been checked by the caller (no negative extents, no
 * overflow), and `bytes` is its size, computed there. */
STK_INTERNAL void stk__tensor_place(stk__tensor *t, void *place, stk_dtype dtype, int ndim, const int64_t *shape,
                                    const char *layout, size_t bytes);
/* A placed tensor gets its own buffer back (contents: whatever that buffer held; nbytes 0). */
STK_INTERNAL void stk__tensor_unplace(stk__tensor *t);
STK_INTERNAL void stk__tensor_free(stk__tensor *t);
/* 1 when the first n samples of l form one [n, ...] tensor (what stk_batch_tensor and DLPack
 * export for a list marked dense): the same dtype and shape, back to back from l->base (or from
 * sample 0 without one) at the first sample's byte size. A GPU list is laid out when it is
 * reserved, before its samples have shapes: whoever sets them marks the list with this
 * (stk__gpu_tensor_list_settle for the GPU operators, the GPU stage for its uploads). */
STK_INTERNAL int stk__tensor_list_is_dense(const stk__tensor_list *l, int n);

#ifdef __cplusplus
}
#endif
#endif
