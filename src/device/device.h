/* src/device/device.h: the device runtime -- the library's only door to the GPU. Streams,
 * events, counted device memory from a stream-ordered pool, NUMA-placed pinned host memory and
 * its block pool, copies, and the grow-only GPU tensor lists batches are written into.
 *
 * One interface, two implementations chosen by the build (as libuv keeps src/unix and src/win
 * behind uv.h): src/device/cuda/ (*.cu, a CUDA build) or src/device/nocuda/ (every call returns
 * STK_ENOTSUP, saying the build has no CUDA). The files directly in src/device/ are plain C built
 * on the calls below and shared by both (the pinned block pool, the GPU tensor lists). The
 * run-time loaded nvJPEG table lives beside them (src/device/cuda/nvjpeg_api.h, CUDA files only).
 *
 * Where it sits: the ground floor, beside src/core. It includes only the public status/types
 * headers, base/common.h and base/tensor.h (for the stk__tensor / stk__tensor_list structs), and
 * calls nothing in src/core but base/common.c; src/core (executor, pipeline, tensor.c) and
 * src/ops/gpu stand on it. No CUDA header here: CUDA handles are passed as void *.
 *
 * Ownership: every allocation is returned to the caller, who gives it back with the matching
 * free/put; each real allocation bumps *alloc_count (when non-NULL) so "no allocation after
 * warm-up" is checkable. Thread contract: every call may be made from any thread (the pools
 * lock; the CUDA runtime is thread-safe); a stream or event is destroyed by its owner once no
 * other thread uses it. Hot path: copies, events and stream calls run per batch; allocations
 * only in warm-up. */
#ifndef STOKER_DEVICE_DEVICE_H
#define STOKER_DEVICE_DEVICE_H

#include <stddef.h>
#include <stdint.h>

#include "base/common.h"
#include "base/tensor.h"
#include "stoker/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Devices (cuda/runtime.cu) ---------------------------------------------------------------- */
/* 1 when the library was built with CUDA kernels. */
STK_INTERNAL int stk__gpu_built(void);
/* Checks that device_id exists and can be used (and creates its primary context now, not
 * mid-batch); message in err otherwise. */
STK_INTERNAL stk_status stk__gpu_open(int device_id, char *err, size_t err_size);
STK_INTERNAL stk_status stk__gpu_set_device(int device_id);
/* The calling thread's current device (to restore it after working on another). */
STK_INTERNAL stk_status stk__gpu_get_device(int *device_id);
/* The ordinal of the GPU whose memory ptr points into (device or managed memory), or -1 for host
 * memory, an unknown pointer, or a build without CUDA. */
STK_INTERNAL int stk__gpu_pointer_device(const void *ptr);
/* NUMA node of CUDA device device_id from sysfs (its PCI bus id), or -1 when unknown. */
STK_INTERNAL int stk__gpu_device_numa_node(int device_id);
/* PCI bus id of CUDA device device_id ("0000:07:00.0", lower case, as sysfs spells it) into out;
 * STK_ENOTSUP without CUDA, STK_ECUDA when CUDA does not know the device. */
STK_INTERNAL stk_status stk__gpu_pci_bus_id(int device_id, char *out, size_t out_size);

/* ---- Streams and events (cuda/runtime.cu) ---------------------------------------------------- */
/* A non-blocking stream at priority (an stk_stream_priority; the current device's range). */
STK_INTERNAL stk_status stk__gpu_stream_create(void **stream, int priority);
STK_INTERNAL void stk__gpu_stream_destroy(void *stream);
STK_INTERNAL stk_status stk__gpu_stream_synchronize(void *stream);
/* Events are made with blocking sync: a host wait on one sleeps instead of spinning a core, which
 * a training step's own thread needs more than the loader needs the wake-up microseconds. */
STK_INTERNAL stk_status stk__gpu_event_create(void **event);
STK_INTERNAL void stk__gpu_event_destroy(void *event);
STK_INTERNAL stk_status stk__gpu_event_record(void *event, void *stream);
STK_INTERNAL stk_status stk__gpu_event_synchronize(void *event);
/* 1 when the work before the event's last record is done (or it was never recorded), 0 while it
 * is pending, -1 on an error. */
STK_INTERNAL int stk__gpu_event_done(void *event);
STK_INTERNAL stk_status stk__gpu_stream_wait_event(void *stream, void *event);
/* Host -> device, queued on stream (src must be pinned for the copy to be asynchronous). */
STK_INTERNAL stk_status stk__gpu_memcpy_h2d_async(void *dst, const void *src, size_t bytes, void *stream);
/* Device -> host on stream (NULL: the legacy default stream), waiting until it is done. */
STK_INTERNAL stk_status stk__gpu_memcpy_d2h(void *dst, const void *src, size_t bytes, void *stream);

/* Device -> device on stream, asynchronous (any two GPUs' memory: unified addressing). */
STK_INTERNAL stk_status stk__gpu_memcpy_d2d_async(void *dst, const void *src, size_t bytes, void *stream);

/* One device -> device copy of a batch (stk__gpu_copy_parts_async). */
typedef struct stk__gpu_copy_part {
  void *dst;
  const void *src;
  size_t bytes;
} stk__gpu_copy_part;
/* count copies within the current device's memory on stream, asynchronous, in one kernel launch
 * per 160 parts (the table travels as the kernel's parameters: nothing allocated, nothing to keep
 * alive after the call) instead of one cudaMemcpyAsync each, whose launch cost on the caller's
 * thread, paid per sample, outweighs the copy of an image. Parts may have any size and alignment
 * (16-byte aligned pairs copy 16 bytes a thread, others a byte). Not for peer memory:
 * stk__gpu_memcpy_d2d_async. */
STK_INTERNAL stk_status stk__gpu_copy_parts_async(const stk__gpu_copy_part *parts, int count, void *stream);

/* ---- Device memory (cuda/device_memory.cu) ---------------------------------------------------- */
/* Raw device allocation on the current device, counted in *alloc_count when non-NULL. */
STK_INTERNAL stk_status stk__gpu_malloc(void **ptr, size_t bytes, uint64_t *alloc_count);
/* Gives ptr back once the work queued so far on `stream` is done (NULL: nothing uses it any
 * more). Waits for nothing: no cudaFree, which would wait for every kernel on the device. */
STK_INTERNAL void stk__gpu_free(void *ptr, void *stream);
/* Gives the device memory our pools keep cached (freed buffers, released at a synchronization
 * otherwise) back to the driver, after the frees queued on the pools' streams: for an allocation
 * outside the pools (nvJPEG's, cudaStreamCreate's) that failed for memory. Returns 1 when a pool
 * was trimmed (worth one more try), 0 when there is none. Not on a hot path. */
STK_INTERNAL int stk__gpu_trim_pools(void);
/* Bytes of device memory currently held by stoker's allocations in this process. */
STK_INTERNAL uint64_t stk__gpu_bytes_held(void);

/* ---- Allocation trace (pinned_pool.c) -------------------------------------------------------- */
/* STOKER_TRACE_ALLOC=1: one stderr line per page-locked or device allocation (what, MiB, the ms it
 * took, seconds since the first traced one), to tell which allocation held a training step up:
 * t = stk__alloc_trace_clock() before the call (0 when tracing is off), stk__alloc_trace after. */
STK_INTERNAL double stk__alloc_trace_clock(void);
STK_INTERNAL void stk__alloc_trace(const char *what, size_t bytes, double started);

/* ---- Pinned host memory (cuda/pinned.cu; the block pool: pinned_pool.c) ----------------------- */
/* Pinned host memory placed on numa_node (-1 = no placement); reports the node the first page
 * landed on in *placed_node (-1 unknown). Counted in *alloc_count. */
STK_INTERNAL stk_status stk__gpu_pinned_alloc(void **ptr, size_t bytes, int numa_node, int *placed_node,
                                              uint64_t *alloc_count);
STK_INTERNAL void stk__gpu_pinned_free(void *ptr);
/* Wall seconds this process has spent in stk__gpu_pinned_alloc so far (calls that overlap count
 * once): pinning faults in every page and holds up the process's other CUDA calls, a cost paid once
 * per buffer that the mixed decoder's router leaves out of its trial's times. 0 without CUDA. */
STK_INTERNAL double stk__gpu_pinning_seconds(void);
/* Pinned blocks for host tensors, from a process-wide pool per NUMA node: *bytes is rounded up to
 * its stk__size_class and a free block of that class is reused, else one of the next two classes
 * (at most twice the size: *bytes says which), else carved from the node's current chunk (64 MiB,
 * each next one twice as large up to 1 GiB; the old chunk's end becomes free blocks), or
 * allocated alone when larger than a quarter of 64 MiB; only new chunks/blocks count in
 * *alloc_count. A chunk is pinned without holding up other threads' gets and puts. Blocks go back
 * with stk__gpu_pinned_block_put (with the *bytes the get gave) and are kept for reuse until the
 * process exits. Thread-safe. */
STK_INTERNAL stk_status stk__gpu_pinned_block_get(void **ptr, size_t *bytes, int numa_node, uint64_t *alloc_count);
STK_INTERNAL void stk__gpu_pinned_block_put(void *ptr, size_t bytes, int numa_node);
/* Makes the node's current chunk at least `bytes` (one page-locked allocation now, when the one
 * it has is smaller), so blocks carved later cost no cudaHostAlloc until it is used up: that call
 * pins every page and holds up the process's other CUDA calls, a training thread's launches
 * included (STOKER_MIXED_PIN_RESERVE: an A/B knob). Not on a hot path. */
STK_INTERNAL stk_status stk__gpu_pinned_reserve(size_t bytes, int numa_node, uint64_t *alloc_count);
/* Bytes of page-locked host memory the block pool holds (process-wide: blocks in use and free
 * ones; the pool keeps them until exit). 0 without CUDA. */
STK_INTERNAL uint64_t stk__gpu_pinned_bytes_held(void);
/* What pins the pool's chunks and large blocks (NULL, the default: stk__gpu_pinned_alloc). Set by
 * the pool's CPU tests (tests/test_pinned_pool.c) to check its rules without a GPU; set it before
 * the pool's first block, as memory it pinned goes back only at exit. */
typedef stk_status (*stk__pinned_backing)(void **ptr, size_t bytes, int numa_node, uint64_t *alloc_count);
STK_INTERNAL void stk__gpu_pinned_pool_backing(stk__pinned_backing backing);

/* ---- GPU tensor lists (gpu_tensor_list.c) ----------------------------------------------------- */
/* Makes a GPU tensor list dense with room for count samples of `sample_bytes` each (grow-only,
 * counted); sets device/base/samples[i].data. */
STK_INTERNAL stk_status stk__gpu_tensor_list_reserve(stk__tensor_list *list, int count, size_t sample_bytes,
                                                     uint64_t *alloc_count);
/* As reserve, without reserve's quarter of headroom on the first storage: for samples that are at
 * most sample_bytes whatever the data (a size the operator's arguments fix), so that no later batch
 * of as many samples needs more (a batch of more samples grows it, then with the headroom).
 * The headroom would otherwise hold device memory in every slot that no batch could use (18.4 MiB
 * a slot for the fused node's output in the ResNet-50 view). */
STK_INTERNAL stk_status stk__gpu_tensor_list_reserve_exact(stk__tensor_list *list, int count, size_t sample_bytes,
                                                           uint64_t *alloc_count);
/* As reserve, but sample i gets sample_bytes[i] bytes, back to back in order (callers round each
 * up to the alignment they need): a ragged batch holds the sum of its samples, not count times the
 * largest. Equal sizes lay out as reserve's do. */
STK_INTERNAL stk_status stk__gpu_tensor_list_reserve_sizes(stk__tensor_list *list, int count,
                                                           const size_t *sample_bytes, uint64_t *alloc_count);
/* As reserve_sizes, for a list that outlives one batch (the shared upload copy, exec/gpu_stage.c):
 * storage it replaces goes back only once the work queued on free_stream is done, since that work
 * may still read it (reserve_sizes gives it back at once). */
STK_INTERNAL stk_status stk__gpu_tensor_list_reserve_sizes_on(stk__tensor_list *list, int count,
                                                              const size_t *sample_bytes, void *free_stream,
                                                              uint64_t *alloc_count);
/* As reserve, but the list takes *storage (*capacity bytes from stk__gpu_malloc, holding count
 * samples of sample_bytes back to back) as its storage instead of copying from it, and hands its
 * previous storage back in *storage / *capacity (NULL / 0 when it had none) for the caller to fill
 * next: a producer that decoded a batch into a buffer of its own gives it to the output without a
 * copy. STK_EINVAL when *storage is too small (nothing changes). */
STK_INTERNAL stk_status stk__gpu_tensor_list_adopt(stk__tensor_list *list, int count, size_t sample_bytes,
                                                   void **storage, size_t *capacity, uint64_t *alloc_count);
/* list's first count sample views point at from's samples (the same addresses; shapes are the
 * caller's): list takes none of from's storage and keeps its own, if it has any, unused. For a slot
 * whose device copy is one shared by every slot (exec/gpu_stage.c, STOKER_SHARED_UPLOAD). */
STK_INTERNAL stk_status stk__gpu_tensor_list_borrow(stk__tensor_list *list, const stk__tensor_list *from, int count,
                                                    uint64_t *alloc_count);
/* Frees the device storage and the samples array; the list is left empty (count 0). */
STK_INTERNAL void stk__gpu_tensor_list_free(stk__tensor_list *list);

#ifdef __cplusplus
}
#endif
#endif
