/* src/device/pinned_pool.c: the pinned block pool of src/device/device.h
 * (stk__gpu_pinned_block_get/put), plain C over stk__gpu_pinned_alloc, shared by both builds
 * (without CUDA the first allocation fails with STK_ENOTSUP). Pinned host tensors
 * (src/base/tensor.c) take their memory here.
 * Hot path: get/put run when a pinned host tensor grows or is freed; one lock, no allocation
 * once the pool holds blocks of the sizes in use. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device/device.h"
#include "base/tuning.h"

/* ---- Allocation trace (STOKER_TRACE_ALLOC=1) ------------------------------------------------- */
/* Read at every allocation (they are off the hot path), so setting it later in a process counts. */
static int trace_on(void) {
  return stk__tuning_int(STK__KNOB_TRACE_ALLOC) != 0;
}

double stk__alloc_trace_clock(void) { return trace_on() ? stk__now() : 0.0; }

void stk__alloc_trace(const char *what, size_t bytes, double started) {
  static int64_t first_ns; /* the first traced allocation's start: the lines' time base (0: none yet) */
  if (!trace_on()) return;
  int64_t expected = 0, started_ns = (int64_t)(started * 1e9);
  __atomic_compare_exchange_n(&first_ns, &expected, started_ns, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
  double base = (double)__atomic_load_n(&first_ns, __ATOMIC_RELAXED) * 1e-9;
  double at = started - base > 0 ? started - base : 0.0; /* the first: rounding made it "-0.00" */
  fprintf(stderr, "stoker: alloc: %s %.1f MiB in %.1f ms at +%.2f s\n", what, (double)bytes / 1048576.0,
          (stk__now() - started) * 1e3, at);
}

/* ---- Pinned block pool ---------------------------------------------------------------------- */
/* Free blocks are kept in one list per (NUMA node, size class), linked through their first bytes;
 * new blocks are carved from the node's current chunk. cudaHostAlloc pins every page as it
 * allocates, so pinning per sample buffer would stall the workers; and it waits for the device
 * (page-locked allocation is one of CUDA's implicit synchronizations: with a training loop on the
 * GPU each one stalled the loader behind the queued training kernels; bench/RESULTS.md).
 * Chunks therefore double, 64 MiB up to 1 GiB, so ragged outputs whose buffers keep growing
 * through a run cost a few allocations instead of one per 64 MiB.
 * Three rules keep a run from pinning more mid-run than it must (a 1 GiB chunk pinned mid-run
 * takes 400-1,000 ms with every other worker waiting on the lock, and holds up the training
 * thread's next()):
 *  - a request whose class has no free block takes one of the next PIN_FIT_UP classes (at most
 *    twice its size) before carving: ragged sizes reuse what larger samples gave back;
 *  - a chunk's unused end is cut into free blocks of the largest classes that fit when the next
 *    chunk replaces it, instead of being left unused;
 *  - the pinning of a new chunk runs without the pool's lock: other threads take free blocks and
 *    carve meanwhile; a thread that needs a chunk while one is being pinned waits for that one. */
#define PIN_CHUNK     ((size_t)64 << 20)
#define PIN_CHUNK_MAX ((size_t)1 << 30)
#define PIN_NODES     9 /* node -1 (no placement) and 0..7; higher nodes share the last list */
#define PIN_CLASSES   96
#define PIN_FIT_UP    2 /* classes step 4/3 and 3/2: two steps up is twice the size */
typedef struct pin_block {
  struct pin_block *next;
} pin_block;
static struct {
  pthread_mutex_t lock;
  pthread_cond_t grown; /* a chunk's pinning finished (growing[node] back to 0) */
  pin_block *free_list[PIN_NODES][PIN_CLASSES];
  uint8_t *chunk[PIN_NODES];
  size_t chunk_left[PIN_NODES];
  size_t chunk_next[PIN_NODES]; /* size of the node's next chunk (0: PIN_CHUNK) */
  int growing[PIN_NODES];       /* a thread is pinning the node's next chunk (lock released) */
  uint64_t pinned;              /* bytes page-locked by the pool (chunks and large blocks), never
                                   given back before the process exits: stk__gpu_pinned_bytes_held */
  stk__pinned_backing backing;  /* NULL: stk__gpu_pinned_alloc */
} pin_pool = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, {{NULL}}, {NULL}, {0}, {0}, {0}, 0, NULL};

uint64_t stk__gpu_pinned_bytes_held(void) { return __atomic_load_n(&pin_pool.pinned, __ATOMIC_RELAXED); }

void stk__gpu_pinned_pool_backing(stk__pinned_backing backing) {
  pthread_mutex_lock(&pin_pool.lock);
  pin_pool.backing = backing;
  pthread_mutex_unlock(&pin_pool.lock);
}

/* Pins `bytes` for the pool (the backing read under the lock by the caller). Lock NOT held. */
static stk_status pin_alloc(stk__pinned_backing backing, void **p, size_t bytes, int numa_node, uint64_t *alloc_count) {
  if (backing) return backing(p, bytes, numa_node, alloc_count);
  return stk__gpu_pinned_alloc(p, bytes, numa_node, NULL, alloc_count);
}

/* The pool's list index of a NUMA node (-1, no placement: 0). */
static int pin_node(int numa_node) {
  return numa_node < 0 ? 0 : numa_node + 1 < PIN_NODES ? numa_node + 1 : PIN_NODES - 1;
}

static int pin_class_index(size_t cls) {
  int i = stk__size_class_index(cls);
  return i < PIN_CLASSES ? i : PIN_CLASSES - 1;
}

static void pin_push(int node, void *p, size_t cls) {
  pin_block *b = (pin_block *)p;
  int k = pin_class_index(cls);
  b->next = pin_pool.free_list[node][k];
  pin_pool.free_list[node][k] = b;
}

/* The largest size class <= bytes (0: below the smallest). */
static size_t class_at_most(size_t bytes) {
  if (bytes < stk__size_class(1)) return 0;
  size_t c = stk__size_class(1), next;
  while ((next = stk__size_class(c + 1)) <= bytes) c = next;
  return c;
}

/* The node's current chunk becomes p (size bytes, just pinned); what is left of the old one is
 * cut into free blocks, largest classes first. Lock held. */
static void pin_chunk_install(int node, void *p, size_t size) {
  size_t cls;
  while ((cls = class_at_most(pin_pool.chunk_left[node])) != 0) {
    pin_push(node, pin_pool.chunk[node], cls);
    pin_pool.chunk[node] += cls;
    pin_pool.chunk_left[node] -= cls;
  }
  pin_pool.chunk[node] = (uint8_t *)p;
  pin_pool.chunk_left[node] = size;
  __atomic_add_fetch(&pin_pool.pinned, (uint64_t)size, __ATOMIC_RELAXED);
}

/* A free block of class index k, else of one of the next PIN_FIT_UP classes; its size in *cls.
 * Lock held. */
static pin_block *pin_take(int node, int k, size_t *cls) {
  size_t c = *cls;
  for (int i = k; i <= k + PIN_FIT_UP && i < PIN_CLASSES; i++, c = stk__size_class(c + 1)) {
    pin_block *b = pin_pool.free_list[node][i];
    if (b) {
      pin_pool.free_list[node][i] = b->next;
      *cls = c;
      return b;
    }
  }
  return NULL;
}

/* The node's current chunk has fewer than `need` bytes left: pins the next one (lock released
 * meanwhile) unless another thread is pinning one, then waits for that. Lock held on entry and
 * return; on STK_OK the caller looks again (free blocks may have come back too). */
static stk_status pin_chunk_grow(int node, int numa_node, size_t need, uint64_t *alloc_count) {
  if (pin_pool.growing[node]) {
    while (pin_pool.growing[node]) pthread_cond_wait(&pin_pool.grown, &pin_pool.lock);
    return STK_OK;
  }
  size_t size = pin_pool.chunk_next[node] ? pin_pool.chunk_next[node] : PIN_CHUNK;
  if (size < need) size = need;
  stk__pinned_backing backing = pin_pool.backing;
  pin_pool.growing[node] = 1;
  pthread_mutex_unlock(&pin_pool.lock);
  void *p = NULL;
  stk_status st = pin_alloc(backing, &p, size, numa_node, alloc_count);
  if (st != STK_OK && size > PIN_CHUNK) { /* short of pinnable memory: the small size again */
    size = PIN_CHUNK > need ? PIN_CHUNK : need;
    st = pin_alloc(backing, &p, size, numa_node, alloc_count);
  }
  pthread_mutex_lock(&pin_pool.lock);
  pin_pool.growing[node] = 0;
  pthread_cond_broadcast(&pin_pool.grown);
  if (st != STK_OK) return st;
  pin_chunk_install(node, p, size);
  pin_pool.chunk_next[node] = size * 2 < PIN_CHUNK_MAX ? size * 2 : PIN_CHUNK_MAX;
  return STK_OK;
}

stk_status stk__gpu_pinned_block_get(void **ptr, size_t *bytes, int numa_node, uint64_t *alloc_count) {
  size_t cls = stk__size_class(*bytes);
  int node = pin_node(numa_node);
  int k = pin_class_index(cls);
  *ptr = NULL;
  pin_block *b = NULL;
  pthread_mutex_lock(&pin_pool.lock);
  stk_status st = STK_OK;
  while (!(b = pin_take(node, k, &cls)) && cls <= PIN_CHUNK / 4) {
    if (pin_pool.chunk_left[node] >= cls) {
      b = (pin_block *)pin_pool.chunk[node];
      pin_pool.chunk[node] += cls;
      pin_pool.chunk_left[node] -= cls;
      break;
    }
    if ((st = pin_chunk_grow(node, numa_node, cls, alloc_count)) != STK_OK) break;
  }
  stk__pinned_backing backing = pin_pool.backing;
  pthread_mutex_unlock(&pin_pool.lock);
  if (st != STK_OK) return st;
  if (!b) { /* a block larger than a quarter chunk: on its own (kept in the pool once put back) */
    void *p = NULL;
    st = pin_alloc(backing, &p, cls, numa_node, alloc_count);
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
    stk__pinned_backing backing = pin_pool.backing;
    void *p = NULL;
    st = pin_alloc(backing, &p, bytes, numa_node, alloc_count);
    if (st == STK_OK) pin_chunk_install(node, p, bytes);
  }
  pthread_mutex_unlock(&pin_pool.lock);
  return st;
}

void stk__gpu_pinned_block_put(void *ptr, size_t bytes, int numa_node) {
  if (!ptr) return;
  int node = pin_node(numa_node);
  pthread_mutex_lock(&pin_pool.lock);
  pin_push(node, ptr, bytes);
  pthread_mutex_unlock(&pin_pool.lock);
}
