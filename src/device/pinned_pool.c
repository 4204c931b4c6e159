/* src/device/pinned_pool.c: the pinned block pool of src/device/device.h
 * (stk__gpu_pinned_block_get/put), plain C over stk__gpu_pinned_alloc, shared by both builds
 * (without CUDA the first allocation fails with STK_ENOTSUP). Pinned host tensors
 * (src/core/tensor.c) take their memory here.
 * Hot path: get/put run when a pinned host tensor grows or is freed; one lock, no allocation
 * once the pool holds blocks of the sizes in use. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device/device.h"

/* ---- Allocation trace (STOKER_TRACE_ALLOC=1) ------------------------------------------------- */
/* Read at every allocation (they are off the hot path), so setting it later in a process counts. */
static int trace_on(void) {
  const char *env = getenv("STOKER_TRACE_ALLOC");
  return env && env[0] && strcmp(env, "0") != 0;
}

double stk__alloc_trace_clock(void) { return trace_on() ? stk__now() : 0.0; }

void stk__alloc_trace(const char *what, size_t bytes, double started) {
  static int64_t first_ns; /* the first traced allocation's start: the lines' time base (0: none yet) */
  if (!trace_on()) return;
  int64_t expected = 0, started_ns = (int64_t)(started * 1e9);
  __atomic_compare_exchange_n(&first_ns, &expected, started_ns, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
  double base = (double)__atomic_load_n(&first_ns, __ATOMIC_RELAXED) * 1e-9;
  fprintf(stderr, "stoker: alloc: %s %.1f MiB in %.1f ms at +%.2f s\n", what, (double)bytes / 1048576.0,
          (stk__now() - started) * 1e3, started - base);
}

/* ---- Pinned block pool ---------------------------------------------------------------------- */
/* Free blocks are kept in one list per (NUMA node, size class), linked through their first bytes;
 * new blocks are carved from the node's current chunk. cudaHostAlloc pins every page as it
 * allocates, so pinning per sample buffer would stall the workers; and it waits for the device
 * (page-locked allocation is one of CUDA's implicit synchronizations: with a training loop on the
 * GPU each one stalled the loader behind the queued training kernels; bench/RESULTS.md).
 * Chunks therefore double, 64 MiB up to 1 GiB, so ragged outputs whose buffers keep growing
 * through a run cost a few allocations instead of one per 64 MiB. */
#define PIN_CHUNK     ((size_t)64 << 20)
#define PIN_CHUNK_MAX ((size_t)1 << 30)
#define PIN_NODES     9 /* node -1 (no placement) and 0..7; higher nodes share the last list */
#define PIN_CLASSES   96
typedef struct pin_block {
  struct pin_block *next;
} pin_block;
static struct {
  pthread_mutex_t lock;
  pin_block *free_list[PIN_NODES][PIN_CLASSES];
  uint8_t *chunk[PIN_NODES];
  size_t chunk_left[PIN_NODES];
  size_t chunk_next[PIN_NODES]; /* size of the node's next chunk (0: PIN_CHUNK) */
  uint64_t pinned;              /* bytes page-locked by the pool (chunks and large blocks), never
                                   given back before the process exits: stk__gpu_pinned_bytes_held */
} pin_pool = {PTHREAD_MUTEX_INITIALIZER, {{NULL}}, {NULL}, {0}, {0}, 0};

uint64_t stk__gpu_pinned_bytes_held(void) { return __atomic_load_n(&pin_pool.pinned, __ATOMIC_RELAXED); }

/* The pool's list index of a NUMA node (-1, no placement: 0). */
static int pin_node(int numa_node) {
  return numa_node < 0 ? 0 : numa_node + 1 < PIN_NODES ? numa_node + 1 : PIN_NODES - 1;
}

/* The node's current chunk becomes p (size bytes, just pinned); the rest of the old one stays
 * unused. Lock held. */
static void pin_chunk_install(int node, void *p, size_t size) {
  pin_pool.chunk[node] = (uint8_t *)p;
  pin_pool.chunk_left[node] = size;
  __atomic_add_fetch(&pin_pool.pinned, (uint64_t)size, __ATOMIC_RELAXED);
}

static int pin_class_index(size_t cls) {
  int i = stk__size_class_index(cls);
  return i < PIN_CLASSES ? i : PIN_CLASSES - 1;
}

stk_status stk__gpu_pinned_block_get(void **ptr, size_t *bytes, int numa_node, uint64_t *alloc_count) {
  size_t cls = stk__size_class(*bytes);
  int node = pin_node(numa_node);
  int k = pin_class_index(cls);
  *ptr = NULL;
  pthread_mutex_lock(&pin_pool.lock);
  pin_block *b = pin_pool.free_list[node][k];
  if (b) {
    pin_pool.free_list[node][k] = b->next;
  } else if (cls <= PIN_CHUNK / 4) {
    if (pin_pool.chunk_left[node] < cls) { /* the rest of the old chunk stays unused */
      size_t size = pin_pool.chunk_next[node] ? pin_pool.chunk_next[node] : PIN_CHUNK;
      void *p = NULL;
      stk_status st = stk__gpu_pinned_alloc(&p, size, numa_node, NULL, alloc_count);
      if (st != STK_OK && size > PIN_CHUNK) { /* short of pinnable memory: the small size again */
        size = PIN_CHUNK;
        st = stk__gpu_pinned_alloc(&p, size, numa_node, NULL, alloc_count);
      }
      if (st != STK_OK) {
        pthread_mutex_unlock(&pin_pool.lock);
        return st;
      }
      pin_chunk_install(node, p, size);
      pin_pool.chunk_next[node] = size * 2 < PIN_CHUNK_MAX ? size * 2 : PIN_CHUNK_MAX;
    }
    b = (pin_block *)pin_pool.chunk[node];
    pin_pool.chunk[node] += cls;
    pin_pool.chunk_left[node] -= cls;
  }
  pthread_mutex_unlock(&pin_pool.lock);
  if (!b) { /* a block larger than a quarter chunk: on its own (kept in the pool once put back) */
    void *p = NULL;
    stk_status st = stk__gpu_pinned_alloc(&p, cls, numa_node, NULL, alloc_count);
    if (st != STK_OK) return st;
    __atomic_add_fetch(&pin_pool.pinned, (uint64_t)cls, __ATOMIC_RELAXED);
    b = (pin_block *)p;
  }
  *ptr = b;
  *bytes = cls;
  return STK_OK;
}

stk_status stk__gpu_pinned_reserve(size_t bytes, int numa_node, uint64_t *alloc_count) {
  int node = pin_node(numa_node);
  stk_status st = STK_OK;
  pthread_mutex_lock(&pin_pool.lock);
  if (pin_pool.chunk_left[node] < bytes) {
    void *p = NULL;
    st = stk__gpu_pinned_alloc(&p, bytes, numa_node, NULL, alloc_count);
    if (st == STK_OK) pin_chunk_install(node, p, bytes);
  }
  pthread_mutex_unlock(&pin_pool.lock);
  return st;
}

void stk__gpu_pinned_block_put(void *ptr, size_t bytes, int numa_node) {
  if (!ptr) return;
  int node = pin_node(numa_node);
  int k = pin_class_index(bytes);
  pthread_mutex_lock(&pin_pool.lock);
  pin_block *b = (pin_block *)ptr;
  b->next = pin_pool.free_list[node][k];
  pin_pool.free_list[node][k] = b;
  pthread_mutex_unlock(&pin_pool.lock);
}
