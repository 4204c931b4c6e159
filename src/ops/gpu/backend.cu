/* src/ops/gpu/backend.cu: the CUDA implementation of src/core/gpu_backend.h -- streams, events,
 * counted device and pinned allocations, NUMA-placed pinned host memory and the grow-only GPU
 * tensor lists the engine and the GPU operators write batches into.
 * Hot path: memcpy/event/stream calls run per batch; allocations only during warm-up (every real
 * allocation bumps the caller's counter so "no cudaMalloc after warm-up" is checkable). */
#include <cuda_runtime_api.h>

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

/* The core headers are C without extern "C" guards: give them C linkage here. */
extern "C" {
#include "core/gpu_backend.h"
}
#include "ops/gpu/gpu_ops.h"

/* Linux memory-policy modes (linux/mempolicy.h); declared here so no numactl headers are needed. */
#define STK_MPOL_DEFAULT 0
#define STK_MPOL_PREFERRED 1
#define STK_MPOL_BIND 2
#define STK_MAX_NUMA_NODES 1024

static void count_alloc(uint64_t *alloc_count) {
  if (alloc_count) __atomic_fetch_add(alloc_count, 1, __ATOMIC_RELAXED);
}

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
      else
        cudaMemPoolDestroy(p->pool);
    }
    cudaGetLastError();
  }
  pthread_mutex_unlock(&g_pools_lock);
  return p;
}

extern "C" {

int stk__gpu_built(void) { return 1; }

stk_status stk__gpu_open(int device_id, char *err, size_t err_size) {
  int count = 0;
  cudaError_t rc = cudaGetDeviceCount(&count);
  if (rc != cudaSuccess) {
    stk__errorf(err, err_size, "device_id %d requested, but no CUDA device is usable: %s", device_id,
                cudaGetErrorString(rc));
    cudaGetLastError();
    return STK_ENODEV;
  }
  if (device_id < 0 || device_id >= count) {
    stk__errorf(err, err_size, "device_id %d requested, but this machine has %d CUDA device(s) (valid: 0..%d)",
                device_id, count, count - 1);
    return STK_ENODEV;
  }
  rc = cudaSetDevice(device_id);
  if (rc == cudaSuccess) rc = cudaFree(0); /* creates the primary context now, not mid-batch */
  if (rc != cudaSuccess) {
    stk__errorf(err, err_size, "CUDA device %d could not be initialised: %s", device_id, cudaGetErrorString(rc));
    cudaGetLastError();
    return STK_ECUDA;
  }
  return STK_OK;
}

stk_status stk__gpu_set_device(int device_id) {
  return cudaSetDevice(device_id) == cudaSuccess ? STK_OK : STK_ECUDA;
}

stk_status stk__gpu_stream_create(void **stream, int priority) {
  /* CUDA: lower numbers are higher priorities; the default (0) is also the least. */
  int least = 0, greatest = 0;
  if (cudaDeviceGetStreamPriorityRange(&least, &greatest) != cudaSuccess) greatest = 0;
  const int cuda_priority = priority == STK_STREAM_PRIORITY_HIGH ? greatest : 0;
  cudaStream_t s = NULL;
  if (cudaStreamCreateWithPriority(&s, cudaStreamNonBlocking, cuda_priority) != cudaSuccess) {
    *stream = NULL;
    return STK_ECUDA;
  }
  *stream = (void *)s;
  return STK_OK;
}

void stk__gpu_stream_destroy(void *stream) {
  if (stream) cudaStreamDestroy((cudaStream_t)stream);
}

stk_status stk__gpu_stream_synchronize(void *stream) {
  return cudaStreamSynchronize((cudaStream_t)stream) == cudaSuccess ? STK_OK : STK_ECUDA;
}

stk_status stk__gpu_event_create(void **event) {
  cudaEvent_t e = NULL;
  if (cudaEventCreateWithFlags(&e, cudaEventDisableTiming | cudaEventBlockingSync) != cudaSuccess) {
    *event = NULL;
    return STK_ECUDA;
  }
  *event = (void *)e;
  return STK_OK;
}

void stk__gpu_event_destroy(void *event) {
  if (event) cudaEventDestroy((cudaEvent_t)event);
}

stk_status stk__gpu_event_record(void *event, void *stream) {
  return cudaEventRecord((cudaEvent_t)event, (cudaStream_t)stream) == cudaSuccess ? STK_OK : STK_ECUDA;
}

stk_status stk__gpu_event_synchronize(void *event) {
  return cudaEventSynchronize((cudaEvent_t)event) == cudaSuccess ? STK_OK : STK_ECUDA;
}

int stk__gpu_event_done(void *event) {
  cudaError_t rc = cudaEventQuery((cudaEvent_t)event);
  if (rc == cudaSuccess) return 1;
  if (rc == cudaErrorNotReady) return 0;
  cudaGetLastError();
  return -1;
}

stk_status stk__gpu_stream_wait_event(void *stream, void *event) {
  return cudaStreamWaitEvent((cudaStream_t)stream, (cudaEvent_t)event, 0) == cudaSuccess ? STK_OK : STK_ECUDA;
}

stk_status stk__gpu_malloc(void **ptr, size_t bytes, uint64_t *alloc_count) {
  *ptr = NULL;
  if (bytes == 0) bytes = 1;
  live_alloc entry = {NULL, bytes, 0, 0};
  device_pool *pool = current_pool(&entry.device);
  cudaError_t rc;
  if (pool && pool->state == 1) {
    entry.pooled = 1;
    /* Usable on any stream at once: the block is fresh or its free has completed (internal
     * dependencies are off), and what is freed onto pool->stream is memory nothing uses. */
    rc = cudaMallocFromPoolAsync(&entry.ptr, bytes, pool->pool, pool->stream);
  } else {
    rc = cudaMalloc(&entry.ptr, bytes);
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
  count_alloc(alloc_count);
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

/* Saves the calling thread's memory policy, binds it to numa_node, and restores it afterwards. */
typedef struct saved_policy {
  int valid;
  int mode;
  unsigned long mask[STK_MAX_NUMA_NODES / (8 * sizeof(unsigned long))];
} saved_policy;

static int policy_bind(int numa_node, int mode, saved_policy *saved) {
  saved->valid = 0;
  if (numa_node < 0 || numa_node >= STK_MAX_NUMA_NODES) return -1;
  memset(saved->mask, 0, sizeof saved->mask);
  if (syscall(SYS_get_mempolicy, &saved->mode, saved->mask, (unsigned long)STK_MAX_NUMA_NODES, NULL, 0UL) != 0)
    return -1;
  saved->valid = 1;
  unsigned long mask[STK_MAX_NUMA_NODES / (8 * sizeof(unsigned long))];
  memset(mask, 0, sizeof mask);
  mask[numa_node / (8 * sizeof(unsigned long))] |= 1UL << (numa_node % (8 * sizeof(unsigned long)));
  if (syscall(SYS_set_mempolicy, mode, mask, (unsigned long)STK_MAX_NUMA_NODES + 1) != 0) return -1;
  return 0;
}

static void policy_restore(const saved_policy *saved) {
  if (!saved->valid) return;
  /* MPOL_DEFAULT takes an empty mask; other modes get back the saved one. */
  if (saved->mode == STK_MPOL_DEFAULT)
    syscall(SYS_set_mempolicy, STK_MPOL_DEFAULT, NULL, 0UL);
  else
    syscall(SYS_set_mempolicy, saved->mode, saved->mask, (unsigned long)STK_MAX_NUMA_NODES + 1);
}

/* NUMA node of the page holding addr, via move_pages(2) with nodes == NULL (query only). */
static int page_node(void *addr) {
  void *page = (void *)((uintptr_t)addr & ~(uintptr_t)(sysconf(_SC_PAGESIZE) - 1));
  int status = -1;
  if (syscall(SYS_move_pages, 0, 1UL, &page, NULL, &status, 0) != 0) return -1;
  return status >= 0 ? status : -1;
}

stk_status stk__gpu_pinned_alloc(void **ptr, size_t bytes, int numa_node, int *placed_node, uint64_t *alloc_count) {
  *ptr = NULL;
  if (placed_node) *placed_node = -1;
  if (bytes == 0) bytes = 1;
  saved_policy saved;
  saved.valid = 0;
  int bound = 0;
  if (numa_node >= 0) bound = policy_bind(numa_node, STK_MPOL_BIND, &saved) == 0;
  void *p = NULL;
  /* cudaHostAlloc pins (and so faults in) every page now, under the bound policy. */
  cudaError_t rc = cudaHostAlloc(&p, bytes, cudaHostAllocPortable);
  if (rc != cudaSuccess && bound) {
    /* A strict bind can fail when that node is full: retry preferring the node. */
    cudaGetLastError();
    policy_restore(&saved);
    bound = policy_bind(numa_node, STK_MPOL_PREFERRED, &saved) == 0;
    rc = cudaHostAlloc(&p, bytes, cudaHostAllocPortable);
  }
  if (bound || saved.valid) policy_restore(&saved);
  if (rc != cudaSuccess) {
    cudaGetLastError();
    return rc == cudaErrorMemoryAllocation ? STK_ENOMEM : STK_ECUDA;
  }
  if (placed_node) *placed_node = page_node(p);
  count_alloc(alloc_count);
  *ptr = p;
  return STK_OK;
}

void stk__gpu_pinned_free(void *ptr) {
  if (ptr) cudaFreeHost(ptr);
}

/* ---- Pinned block pool ---------------------------------------------------------------------- */
/* Free blocks are kept in one list per (NUMA node, size class), linked through their first bytes;
 * new blocks are carved from the node's current chunk. cudaHostAlloc costs about a millisecond per
 * MiB, so pinning per sample buffer would stall the workers for seconds; and it waits for the
 * device (page-locked allocation is one of CUDA's implicit synchronizations: with a training loop
 * on the GPU each one stalled the loader ~115 ms, measured on the H100 in session 4). Chunks
 * therefore double, 64 MiB up to 1 GiB, so ragged outputs whose buffers keep growing through a
 * run cost a few allocations instead of one per 64 MiB. */
#define PIN_CHUNK ((size_t)64 << 20)
#define PIN_CHUNK_MAX ((size_t)1 << 30)
#define PIN_NODES 9   /* node -1 (no placement) and 0..7; higher nodes share the last list */
#define PIN_CLASSES 96
typedef struct pin_block { struct pin_block *next; } pin_block;
static struct {
  pthread_mutex_t lock;
  pin_block *free_list[PIN_NODES][PIN_CLASSES];
  uint8_t *chunk[PIN_NODES];
  size_t chunk_left[PIN_NODES];
  size_t chunk_next[PIN_NODES]; /* size of the node's next chunk (0: PIN_CHUNK) */
} pin_pool = {PTHREAD_MUTEX_INITIALIZER, {{NULL}}, {NULL}, {0}, {0}};

static int pin_class_index(size_t cls) {
  int i = stk__size_class_index(cls);
  return i < PIN_CLASSES ? i : PIN_CLASSES - 1;
}

stk_status stk__gpu_pinned_block_get(void **ptr, size_t *bytes, int numa_node, uint64_t *alloc_count) {
  size_t cls = stk__size_class(*bytes);
  int node = numa_node < 0 ? 0 : numa_node + 1 < PIN_NODES ? numa_node + 1 : PIN_NODES - 1;
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
      pin_pool.chunk[node] = (uint8_t *)p;
      pin_pool.chunk_left[node] = size;
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
    b = (pin_block *)p;
  }
  *ptr = b;
  *bytes = cls;
  return STK_OK;
}

void stk__gpu_pinned_block_put(void *ptr, size_t bytes, int numa_node) {
  if (!ptr) return;
  int node = numa_node < 0 ? 0 : numa_node + 1 < PIN_NODES ? numa_node + 1 : PIN_NODES - 1;
  int k = pin_class_index(bytes);
  pthread_mutex_lock(&pin_pool.lock);
  pin_block *b = (pin_block *)ptr;
  b->next = pin_pool.free_list[node][k];
  pin_pool.free_list[node][k] = b;
  pthread_mutex_unlock(&pin_pool.lock);
}

stk_status stk__gpu_memcpy_h2d_async(void *dst, const void *src, size_t bytes, void *stream) {
  if (bytes == 0) return STK_OK;
  return cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, (cudaStream_t)stream) == cudaSuccess ? STK_OK
                                                                                                      : STK_ECUDA;
}

stk_status stk__gpu_memcpy_d2h(void *dst, const void *src, size_t bytes, void *stream) {
  if (bytes == 0) return STK_OK;
  if (cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, (cudaStream_t)stream) != cudaSuccess) return STK_ECUDA;
  return cudaStreamSynchronize((cudaStream_t)stream) == cudaSuccess ? STK_OK : STK_ECUDA;
}

uint64_t stk__gpu_bytes_held(void) {
  pthread_mutex_lock(&g_live_lock);
  uint64_t bytes = g_device_bytes;
  pthread_mutex_unlock(&g_live_lock);
  return bytes;
}

/* Samples lie back to back at exactly sample_bytes each, so a batch of equal-shaped samples is
 * one dense [N, ...] tensor (stk_batch_tensor / DLPack read it as such). cudaMalloc aligns the base
 * to 256 bytes and every sample's byte size is a multiple of its element size, so each sample
 * stays aligned for its dtype. Callers wanting wider alignment (the decoder) round up themselves. */
static size_t sample_stride(size_t sample_bytes) { return sample_bytes; }

stk_status stk__gpu_tensor_list_reserve(stk__tensor_list *list, int count, size_t sample_bytes,
                                        uint64_t *alloc_count) {
  if (count < 0) return STK_EINVAL;
  size_t stride = sample_stride(sample_bytes);
  size_t need = stride * (size_t)count;
  if (need > list->base_capacity || !list->base) {
    /* Grow-only with headroom so slowly growing batches (ragged decodes) settle quickly. */
    size_t want = need + need / 4 + 256;
    void *fresh = NULL;
    stk_status st = stk__gpu_malloc(&fresh, want, alloc_count);
    if (st != STK_OK) return st;
    /* Nothing reads the old storage any more: its slot is replanned only after its batch's and
     * its consumer's events. */
    if (list->base) stk__gpu_free(list->base, NULL);
    list->base = fresh;
    list->base_capacity = want;
  }
  /* Whoever filled samples (the executor's calloc, or an earlier reserve) left count <= the entries
   * allocated, so the larger of the two is a safe lower bound on what samples holds. Only growing
   * past that reallocates: a smaller batch (a short last batch, skipped files) followed by a full
   * one reuses the array. */
  int held = list->samples ? (list->samples_capacity > list->count ? list->samples_capacity : list->count) : 0;
  if (count > held || !list->samples) {
    int want_entries = count ? count : 1;
    stk__tensor *grown = (stk__tensor *)realloc(list->samples, (size_t)want_entries * sizeof *grown);
    if (!grown) return STK_ENOMEM;
    for (int i = held; i < want_entries; i++) memset(&grown[i], 0, sizeof grown[i]);
    list->samples = grown;
    held = want_entries;
    count_alloc(alloc_count);
  }
  list->samples_capacity = held;
  list->count = count;
  list->dense = 1;
  list->device = STK_DEVICE_GPU;
  for (int i = 0; i < count; i++) {
    stk__tensor *t = &list->samples[i];
    t->data = (uint8_t *)list->base + stride * (size_t)i;
    t->capacity = 0; /* borrowed from list->base */
    t->device = STK_DEVICE_GPU;
    t->alloc_count = alloc_count;
  }
  return STK_OK;
}

void stk__gpu_tensor_list_settle(stk__tensor_list *list) {
  if (!list || !list->samples || list->count <= 0) return;
  const stk__tensor *first = &list->samples[0];
  int dense = list->base != NULL && first->data == list->base;
  for (int i = 1; i < list->count && dense; i++) {
    const stk__tensor *t = &list->samples[i];
    dense = t->dtype == first->dtype && t->ndim == first->ndim && t->nbytes == first->nbytes &&
            t->data == (const uint8_t *)list->base + first->nbytes * (size_t)i;
    for (int d = 0; d < t->ndim && dense; d++) dense = t->shape[d] == first->shape[d];
  }
  list->dense = dense;
}

/* Frees the device storage and the samples array (the list is left empty; free(list->samples)
 * afterwards, as the executor does, is a no-op). */
void stk__gpu_tensor_list_free(stk__tensor_list *list) {
  if (!list) return;
  if (list->base && list->device == STK_DEVICE_GPU) stk__gpu_free(list->base, NULL);
  list->base = NULL;
  list->base_capacity = 0;
  free(list->samples);
  list->samples = NULL;
  list->samples_capacity = 0;
  list->count = 0;
}

int stk__gpu_device_numa_node(int device_id) {
  char bus_id[32];
  if (cudaDeviceGetPCIBusId(bus_id, (int)sizeof bus_id, device_id) != cudaSuccess) {
    cudaGetLastError();
    return -1;
  }
  for (char *c = bus_id; *c; c++) *c = (char)tolower((unsigned char)*c); /* sysfs spells hex in lower case */
  char path[128];
  snprintf(path, sizeof path, "/sys/bus/pci/devices/%s/numa_node", bus_id);
  FILE *f = fopen(path, "r");
  if (!f) return -1;
  int node = -1;
  if (fscanf(f, "%d", &node) != 1) node = -1;
  fclose(f);
  return node;
}

stk_status stk__gpu_arena_reserve(stk__gpu_arena *arena, size_t bytes, int numa_node, uint64_t *alloc_count) {
  if (arena->copied_event) {
    /* The previous batch's upload must be done before its pinned bytes are rewritten. */
    if (cudaEventSynchronize((cudaEvent_t)arena->copied_event) != cudaSuccess) return STK_ECUDA;
  } else {
    stk_status st = stk__gpu_event_create(&arena->copied_event);
    if (st != STK_OK) return st;
  }
  arena->used = 0;
  if (bytes <= arena->capacity) return STK_OK;
  size_t want = bytes + bytes / 2 + 4096;
  void *host = NULL, *device = NULL;
  int placed = -1;
  stk_status st = stk__gpu_pinned_alloc(&host, want, numa_node, &placed, alloc_count);
  if (st != STK_OK) return st;
  st = stk__gpu_malloc(&device, want, alloc_count);
  if (st != STK_OK) {
    stk__gpu_pinned_free(host);
    return st;
  }
  stk__gpu_pinned_free(arena->host);
  stk__gpu_free(arena->device, arena->stream); /* after the kernels that read it */
  arena->host = (uint8_t *)host;
  arena->device = (uint8_t *)device;
  arena->capacity = want;
  arena->numa_node = placed;
  return STK_OK;
}

size_t stk__gpu_arena_push(stk__gpu_arena *arena, size_t bytes) {
  size_t offset = (arena->used + 15) & ~(size_t)15;
  arena->used = offset + bytes;
  return offset;
}

stk_status stk__gpu_arena_upload(stk__gpu_arena *arena, void *stream) {
  if (arena->used > arena->capacity) return STK_EINTERNAL;
  stk_status st = stk__gpu_memcpy_h2d_async(arena->device, arena->host, arena->used, stream);
  if (st != STK_OK) return st;
  arena->stream = stream;
  return stk__gpu_event_record(arena->copied_event, stream);
}

void stk__gpu_arena_free(stk__gpu_arena *arena) {
  if (arena->copied_event) {
    cudaEventSynchronize((cudaEvent_t)arena->copied_event);
    stk__gpu_event_destroy(arena->copied_event);
  }
  stk__gpu_pinned_free(arena->host);
  /* Teardown: the work that read it is done (its stream may already be destroyed). */
  stk__gpu_free(arena->device, NULL);
  memset(arena, 0, sizeof *arena);
}

} /* extern "C" */
