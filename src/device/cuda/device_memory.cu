/* src/device/cuda/device_memory.cu: the CUDA side of src/device/device.h for device memory:
 * counted allocations from a stream-ordered pool per device (cudaMallocFromPoolAsync /
 * cudaFreeAsync), and the table of live allocations behind stk__gpu_bytes_held.
 * Hot path: none after warm-up (allocations and frees happen when a buffer grows). */
#include <cuda_runtime_api.h>

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "device/device.h"

/* ---- Device bytes held: a small table of live device allocations (allocations are rare). ---- */
typedef struct live_alloc {
  void *ptr;
  size_t bytes;
  int device;
  int pooled; /* from the device's stream-ordered pool (else cudaMalloc) */
} live_alloc;

static pthread_mutex_t g_live_lock = PTHREAD_MUTEX_INITIALIZER;
static live_alloc *g_live = NULL;
static size_t g_live_count = 0, g_live_cap = 0;
static uint64_t g_device_bytes = 0;

static int live_add(const live_alloc *entry) {
  pthread_mutex_lock(&g_live_lock);
  if (g_live_count == g_live_cap) {
    size_t cap = g_live_cap ? g_live_cap * 2 : 64;
    live_alloc *bigger = (live_alloc *)realloc(g_live, cap * sizeof *bigger);
    if (!bigger) {
      pthread_mutex_unlock(&g_live_lock);
      return -1;
    }
    g_live = bigger;
    g_live_cap = cap;
  }
  g_live[g_live_count++] = *entry;
  g_device_bytes += entry->bytes;
  pthread_mutex_unlock(&g_live_lock);
  return 0;
}

/* Removes ptr's entry into *out; 0 when ptr was not allocated here. */
static int live_take(void *ptr, live_alloc *out) {
  int found = 0;
  pthread_mutex_lock(&g_live_lock);
  for (size_t i = 0; i < g_live_count; i++) {
    if (g_live[i].ptr == ptr) {
      *out = g_live[i];
      g_device_bytes -= g_live[i].bytes;
      g_live[i] = g_live[--g_live_count];
      found = 1;
      break;
    }
  }
  pthread_mutex_unlock(&g_live_lock);
  return found;
}

/* ---- Device memory: a stream-ordered pool per device ----------------------------------------
 * cudaFree waits for the whole device, that is for every kernel a training loop has queued: a
 * buffer that grows mid-run (ragged decodes reach a new largest batch now and then) stalled the
 * loader for about one training step. Buffers come instead from a pool of our own
 * (cudaMallocFromPoolAsync) and go back with cudaFreeAsync, ordered after the last work that used
 * them and waiting for nothing else. The pool keeps the default release threshold (freed memory
 * goes back at the next synchronization) and never lets an allocation wait for a free still
 * pending on another stream (it maps a fresh block instead). Devices without memory pools use
 * cudaMalloc/cudaFree. */
#define STK_MAX_DEVICES 64

typedef struct device_pool {
  int state; /* 0: not set up yet, 1: pool, -1: plain cudaMalloc */
  cudaMemPool_t pool;
  cudaStream_t stream; /* allocations, and frees whose buffer nothing uses any more */
} device_pool;

static device_pool g_pools[STK_MAX_DEVICES];
static pthread_mutex_t g_pools_lock = PTHREAD_MUTEX_INITIALIZER;

/* The pool of the calling thread's current device (set up on first use), or NULL. */
static device_pool *current_pool(int *device_out) {
  int device = -1;
  if (cudaGetDevice(&device) != cudaSuccess || device < 0 || device >= STK_MAX_DEVICES) {
    cudaGetLastError();
    return NULL;
  }
  *device_out = device;
  device_pool *p = &g_pools[device];
  pthread_mutex_lock(&g_pools_lock);
  if (p->state == 0) {
    p->state = -1;
    int supported = 0;
    cudaMemPoolProps props;
    memset(&props, 0, sizeof props);
    props.allocType = cudaMemAllocationTypePinned;
    props.handleTypes = cudaMemHandleTypeNone;
    props.location.type = cudaMemLocationTypeDevice;
    props.location.id = device;
    if (cudaDeviceGetAttribute(&supported, cudaDevAttrMemoryPoolsSupported, device) == cudaSuccess && supported &&
        cudaMemPoolCreate(&p->pool, &props) == cudaSuccess) {
      int no = 0;
      if (cudaMemPoolSetAttribute(p->pool, cudaMemPoolReuseAllowInternalDependencies, &no) == cudaSuccess &&
          cudaStreamCreateWithFlags(&p->stream, cudaStreamNonBlocking) == cudaSuccess)
        p->state = 1;
      else cudaMemPoolDestroy(p->pool);
    }
    cudaGetLastError();
  }
  pthread_mutex_unlock(&g_pools_lock);
  return p;
}

int stk__gpu_trim_pools(void) {
  int trimmed = 0;
  pthread_mutex_lock(&g_pools_lock);
  for (int d = 0; d < STK_MAX_DEVICES; d++) {
    device_pool *p = &g_pools[d];
    if (p->state != 1) continue;
    /* the frees queued on the pool's stream complete first: then the pool holds them */
    if (cudaStreamSynchronize(p->stream) == cudaSuccess && cudaMemPoolTrimTo(p->pool, 0) == cudaSuccess) trimmed = 1;
    cudaGetLastError();
  }
  pthread_mutex_unlock(&g_pools_lock);
  return trimmed;
}

/* One allocation of entry->bytes from the pool when entry->pooled, else from the driver.
 * Pooled blocks are usable on any stream at once: the block is fresh or its free has completed
 * (internal dependencies are off), and what is freed onto pool->stream is memory nothing uses. */
static cudaError_t allocate(live_alloc *entry, const device_pool *pool) {
  return entry->pooled ? cudaMallocFromPoolAsync(&entry->ptr, entry->bytes, pool->pool, pool->stream)
                       : cudaMalloc(&entry->ptr, entry->bytes);
}

stk_status stk__gpu_malloc(void **ptr, size_t bytes, uint64_t *alloc_count) {
  *ptr = NULL;
  if (bytes == 0) bytes = 1;
  live_alloc entry = {NULL, bytes, 0, 0};
  device_pool *pool = current_pool(&entry.device);
  entry.pooled = pool && pool->state == 1;
  const double traced = stk__alloc_trace_clock();
  cudaError_t rc = allocate(&entry, pool);
  if (rc == cudaErrorMemoryAllocation && stk__gpu_trim_pools()) { /* memory freed but still cached: once more */
    cudaGetLastError();
    rc = allocate(&entry, pool);
  }
  if (rc != cudaSuccess) {
    cudaGetLastError(); /* clear the sticky-free error so later calls are not poisoned */
    return rc == cudaErrorMemoryAllocation ? STK_ENOMEM : STK_ECUDA;
  }
  if (live_add(&entry) != 0) {
    if (entry.pooled) cudaFreeAsync(entry.ptr, pool->stream);
    else cudaFree(entry.ptr);
    return STK_ENOMEM;
  }
  stk__alloc_trace(entry.pooled ? "device (pool)" : "device", bytes, traced);
  stk__count_alloc(alloc_count);
  *ptr = entry.ptr;
  return STK_OK;
}

void stk__gpu_free(void *ptr, void *stream) {
  if (!ptr) return;
  live_alloc entry;
  if (live_take(ptr, &entry) && entry.pooled) {
    cudaFreeAsync(ptr, stream ? (cudaStream_t)stream : g_pools[entry.device].stream);
    return;
  }
  cudaFree(ptr);
}

uint64_t stk__gpu_bytes_held(void) {
  pthread_mutex_lock(&g_live_lock);
  uint64_t bytes = g_device_bytes;
  pthread_mutex_unlock(&g_live_lock);
  return bytes;
}
