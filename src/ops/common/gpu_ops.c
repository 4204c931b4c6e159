/* src/ops/common/gpu_ops.c: the helpers src/ops/common/gpu_ops.h declares for the GPU operators, in
 * plain C on the device runtime (src/device/device.h): the dense-or-ragged check of an output
 * list, and the upload arena that ships a batch's per-sample parameters with one copy.
 * Hot path: both run per batch; the arena allocates only when a batch needs more room. */
#include <stdlib.h>
#include <string.h>

#include "device/device.h"
#include "ops/common/gpu_ops.h"
#include "base/tuning.h"

void stk__gpu_tensor_list_settle(stk__tensor_list *list) {
  if (!list || !list->samples || list->count <= 0) return;
  list->dense =
      list->base != NULL && list->samples[0].data == list->base && stk__tensor_list_is_dense(list, list->count);
}

/* The number of pairs in use: STK__GPU_ARENA_RING, or STOKER_ARENA_RING (1..4) for A/B runs. */
static int ring_size(void) {
  static int size = 0; /* read once; threads racing to set it store the same value */
  int n = __atomic_load_n(&size, __ATOMIC_RELAXED);
  if (!n) {
    n = (int)stk__tuning_int(STK__KNOB_ARENA_RING); /* 1..STK__GPU_ARENA_RING */
    __atomic_store_n(&size, n, __ATOMIC_RELAXED);
  }
  return n;
}

/* Grows every pair to `want` bytes (rare: the first batch, or a larger one): waits for each pair's
 * last upload first, so no copy reads a buffer being replaced. */
static stk_status grow_all(stk__gpu_arena *arena, size_t want, int numa_node, uint64_t *alloc_count) {
  for (int k = 0; k < ring_size(); k++) {
    if (arena->ring_event[k]) {
      stk_status st = stk__gpu_event_synchronize(arena->ring_event[k]);
      if (st != STK_OK) return st;
    }
    void *host = NULL, *device = NULL;
    int placed = -1;
    stk_status st = stk__gpu_pinned_alloc(&host, want, numa_node, &placed, alloc_count);
    if (st != STK_OK) return st;
    st = stk__gpu_malloc(&device, want, alloc_count);
    if (st != STK_OK) {
      stk__gpu_pinned_free(host);
      return st;
    }
    stk__gpu_pinned_free(arena->ring_host[k]);
    stk__gpu_free(arena->ring_device[k], arena->stream); /* after the kernels that read it */
    arena->ring_host[k] = (uint8_t *)host;
    arena->ring_device[k] = (uint8_t *)device;
    arena->ring_capacity[k] = want;
    arena->numa_node = placed;
  }
  return STK_OK;
}

stk_status stk__gpu_arena_reserve(stk__gpu_arena *arena, size_t bytes, int numa_node, uint64_t *alloc_count) {
  int k = arena->ring_event[0] ? (arena->turn + 1) % ring_size() : 0;
  if (arena->ring_event[k]) {
    /* This pair's last upload (ring_size() batches ago) must be done before its pinned bytes are
     * rewritten. */
    stk_status st = stk__gpu_event_synchronize(arena->ring_event[k]);
    if (st != STK_OK) return st;
  } else {
    stk_status st = stk__gpu_event_create(&arena->ring_event[k]);
    if (st != STK_OK) return st;
  }
  arena->turn = k;
  arena->used = 0;
  if (bytes > arena->ring_capacity[k]) {
    stk_status st = grow_all(arena, bytes + bytes / 2 + 4096, numa_node, alloc_count);
    if (st != STK_OK) return st;
  }
  arena->host = arena->ring_host[k];
  arena->device = arena->ring_device[k];
  arena->capacity = arena->ring_capacity[k];
  return STK_OK;
}

size_t stk__gpu_arena_push(stk__gpu_arena *arena, size_t bytes) {
  size_t offset = (arena->used + 15) & ~(size_t)15;
  arena->used = offset + bytes;
  return offset;
}

stk_status stk__gpu_arena_upload(stk__gpu_arena *arena, void *stream) {
  if (arena->used > arena->capacity || !arena->ring_event[arena->turn]) return STK_EINTERNAL;
  stk_status st = stk__gpu_memcpy_h2d_async(arena->device, arena->host, arena->used, stream);
  if (st != STK_OK) return st;
  arena->stream = stream;
  return stk__gpu_event_record(arena->ring_event[arena->turn], stream);
}

void stk__gpu_arena_free(stk__gpu_arena *arena) {
  for (int k = 0; k < STK__GPU_ARENA_RING; k++) {
    if (arena->ring_event[k]) {
      stk__gpu_event_synchronize(arena->ring_event[k]);
      stk__gpu_event_destroy(arena->ring_event[k]);
    }
    stk__gpu_pinned_free(arena->ring_host[k]);
    /* Teardown: the work that read it is done (its stream may already be destroyed). */
    stk__gpu_free(arena->ring_device[k], NULL);
  }
  memset(arena, 0, sizeof *arena);
}

stk_status stk__gpu_op_device(const stk__op *op, int *numa_node, char *err, size_t err_size) {
  const int device = op->options && op->options->device_id >= 0 ? op->options->device_id : 0;
  if (stk__gpu_set_device(device) != STK_OK) {
    stk__errorf(err, err_size, "CUDA device %d cannot be used", device);
    return STK_ENODEV;
  }
  const int node = stk__gpu_device_numa_node(device);
  *numa_node = node < 0 ? 0 : node;
  return STK_OK;
}
