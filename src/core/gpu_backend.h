/* src/core/gpu_backend.h: the engine's only door to the GPU. Implemented by
 * src/ops/gpu/backend.cu when the library is built with CUDA, and by src/ops/gpu/nocuda.c (every
 * call returns STK_ENOTSUP with a message saying the build has no CUDA) otherwise. The engine in
 * src/core never includes a CUDA header; it calls these. CUDA handles are passed as void *.
 *
 * Pools: device and pinned host buffers come from per-pipeline pools (stk__gpu_pool) that keep
 * what they allocate and hand it out again; each real allocation bumps *alloc_count, so steady
 * state is checkable. Pinned host memory is allocated with the calling thread's memory policy
 * bound to the GPU's NUMA node (stk__gpu_pinned_alloc) and its placement is checked afterwards. */
#ifndef STOKER_CORE_GPU_BACKEND_H
#define STOKER_CORE_GPU_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#include "core/op.h"

/* 1 when the library was built with CUDA kernels. */
STK_INTERNAL int stk__gpu_built(void);
/* Checks that device_id exists and can be used; message in err otherwise. */
STK_INTERNAL stk_status stk__gpu_open(int device_id, char *err, size_t err_size);
STK_INTERNAL stk_status stk__gpu_set_device(int device_id);
/* NUMA node of CUDA device device_id from sysfs (its PCI bus id), or -1 when unknown. */
STK_INTERNAL int stk__gpu_device_numa_node(int device_id);

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

/* Raw device / pinned allocations (each counts in *alloc_count when non-NULL). */
STK_INTERNAL stk_status stk__gpu_malloc(void **ptr, size_t bytes, uint64_t *alloc_count);
/* Gives ptr back once the work queued so far on `stream` is done (NULL: nothing uses it any
 * more). Waits for nothing: no cudaFree, which would wait for every kernel on the device. */
STK_INTERNAL void stk__gpu_free(void *ptr, void *stream);
/* Pinned host memory placed on numa_node (-1 = no placement); reports the node the first page
 * landed on in *placed_node (-1 unknown). */
STK_INTERNAL stk_status stk__gpu_pinned_alloc(void **ptr, size_t bytes, int numa_node, int *placed_node,
                                              uint64_t *alloc_count);
STK_INTERNAL void stk__gpu_pinned_free(void *ptr);
/* Pinned blocks for host tensors, from a process-wide pool per NUMA node: *bytes is rounded up to
 * its stk__size_class and a free block of that class is reused, else carved from the node's
 * current chunk (64 MiB, each next one twice as large up to 1 GiB), or allocated alone when
 * larger than a quarter of 64 MiB; only new chunks/blocks count in *alloc_count. Blocks go back
 * with stk__gpu_pinned_block_put and are kept for reuse until the process exits. Thread-safe. */
STK_INTERNAL stk_status stk__gpu_pinned_block_get(void **ptr, size_t *bytes, int numa_node, uint64_t *alloc_count);
STK_INTERNAL void stk__gpu_pinned_block_put(void *ptr, size_t bytes, int numa_node);
STK_INTERNAL stk_status stk__gpu_memcpy_h2d_async(void *dst, const void *src, size_t bytes, void *stream);
STK_INTERNAL stk_status stk__gpu_memcpy_d2h(void *dst, const void *src, size_t bytes, void *stream);
/* Bytes of device memory currently held by stoker's allocations in this process. */
STK_INTERNAL uint64_t stk__gpu_bytes_held(void);

/* Makes a GPU tensor list dense with room for count samples of `sample_bytes` each (grow-only,
 * counted); sets device/base/samples[i].data. */
STK_INTERNAL stk_status stk__gpu_tensor_list_reserve(stk__tensor_list *list, int count, size_t sample_bytes,
                                                     uint64_t *alloc_count);
STK_INTERNAL void stk__gpu_tensor_list_free(stk__tensor_list *list);

#endif
