/* src/ops/decode/decoder_mixed_alloc.cu: nvJPEG's memory from stoker's pools (STOKER_MIXED_ALLOC=1,
 * an A/B knob of src/base/tuning.c; default off). With the library's default allocators nvJPEG grows its
 * buffers through cudaMalloc/cudaFree and cudaHostAlloc/cudaFreeHost: cudaFree waits for the whole
 * device and page-locking holds up the process's other CUDA calls, so in a training loop a buffer
 * growing mid-run stalls the training thread's launches. The extended (V2, stream-ordered)
 * allocators take device memory from the stream-ordered pool (stk__gpu_malloc / stk__gpu_free on the
 * stream nvJPEG names: nothing waits) and pinned memory from the pinned block pool; a pinned block
 * nvJPEG frees on a stream goes back to the pool once an event recorded there has completed (its
 * copies may still read it), never by cudaFreeHost. Hot path: none (nvJPEG allocates when its
 * buffers grow, mostly in the first batches). */
#include <stdlib.h>
#include <string.h>

#include "ops/decode/decoder_mixed.h"

typedef struct nv_pinned_block {
  void *ptr;
  size_t bytes; /* the pool's size class: what block_put wants back */
  void *event;  /* pending only: recorded on the stream nvJPEG freed it on */
} nv_pinned_block;

struct mixed_nv_alloc {
  nvjpegDevAllocatorV2_t dev;
  nvjpegPinnedAllocatorV2_t pinned;
  int numa_node;
  pthread_mutex_t lock;     /* the two lists (nvJPEG calls from the workers' and the GPU stage's threads) */
  nv_pinned_block *live;    /* blocks nvJPEG holds */
  nv_pinned_block *pending; /* blocks nvJPEG freed whose stream may still read them */
  int num_live, cap_live, num_pending, cap_pending;
};

static int push(nv_pinned_block **list, int *num, int *cap, nv_pinned_block b) {
  if (*num == *cap) {
    int grown = *cap ? *cap * 2 : 16;
    nv_pinned_block *p = (nv_pinned_block *)realloc(*list, (size_t)grown * sizeof *p);
    if (!p) return 0;
    *list = p, *cap = grown;
  }
  (*list)[(*num)++] = b;
  return 1;
}

/* Pending blocks whose event has completed go back to the pool (lock held). */
static void reap(mixed_nv_alloc *a, int wait) {
  int kept = 0;
  for (int i = 0; i < a->num_pending; i++) {
    nv_pinned_block *b = &a->pending[i];
    if (wait) stk__gpu_event_synchronize(b->event);
    if (wait || stk__gpu_event_done(b->event) != 0) { /* done, or an error: nothing waits on it any more */
      stk__gpu_event_destroy(b->event);
      stk__gpu_pinned_block_put(b->ptr, b->bytes, a->numa_node);
    } else {
      a->pending[kept++] = *b;
    }
  }
  a->num_pending = kept;
}

static int dev_malloc(void *ctx, void **ptr, size_t size, cudaStream_t stream) {
  (void)ctx, (void)stream; /* pool blocks are usable on any stream at once (device_memory.cu) */
  return stk__gpu_malloc(ptr, size, NULL) == STK_OK ? 0 : 1;
}

static int dev_free(void *ctx, void *ptr, size_t size, cudaStream_t stream) {
  (void)ctx, (void)size;
  stk__gpu_free(ptr, (void *)stream); /* ordered after that stream's work; NULL: nothing uses it */
  return 0;
}

static int pinned_malloc(void *ctx, void **ptr, size_t size, cudaStream_t stream) {
  mixed_nv_alloc *a = (mixed_nv_alloc *)ctx;
  (void)stream;
  size_t bytes = size ? size : 1;
  pthread_mutex_lock(&a->lock);
  reap(a, 0);
  pthread_mutex_unlock(&a->lock);
  if (stk__gpu_pinned_block_get(ptr, &bytes, a->numa_node, NULL) != STK_OK) return 1;
  pthread_mutex_lock(&a->lock);
  nv_pinned_block b = {*ptr, bytes, NULL};
  int ok = push(&a->live, &a->num_live, &a->cap_live, b);
  pthread_mutex_unlock(&a->lock);
  if (!ok) {
    stk__gpu_pinned_block_put(*ptr, bytes, a->numa_node);
    *ptr = NULL;
    return 1;
  }
  return 0;
}

static int pinned_free(void *ctx, void *ptr, size_t size, cudaStream_t stream) {
  mixed_nv_alloc *a = (mixed_nv_alloc *)ctx;
  (void)size;
  if (!ptr) return 0;
  pthread_mutex_lock(&a->lock);
  int i = 0;
  while (i < a->num_live && a->live[i].ptr != ptr) i++;
  if (i == a->num_live) { /* not ours: nothing to give back */
    pthread_mutex_unlock(&a->lock);
    return 1;
  }
  nv_pinned_block b = a->live[i];
  a->live[i] = a->live[--a->num_live];
  void *event = NULL;
  if (stream && stk__gpu_event_create(&event) == STK_OK) {
    if (stk__gpu_event_record(event, (void *)stream) == STK_OK) {
      b.event = event;
      if (push(&a->pending, &a->num_pending, &a->cap_pending, b)) {
        pthread_mutex_unlock(&a->lock);
        return 0;
      }
    }
    stk__gpu_event_destroy(event);
  }
  pthread_mutex_unlock(&a->lock);
  /* no stream (nothing reads it any more), or no event to wait on: the stream's work first */
  if (stream) stk__gpu_stream_synchronize((void *)stream);
  stk__gpu_pinned_block_put(b.ptr, b.bytes, a->numa_node);
  return 0;
}

void stk__mixed_alloc_open(mixed_state *s) {
  const stk__nvjpeg_api *api = s->api;
  if (!s->tuning.alloc || !api || !api->CreateExV2 || !api->BufferPinnedCreateV2 || !api->BufferDeviceCreateV2) return;
  mixed_nv_alloc *a = (mixed_nv_alloc *)calloc(1, sizeof *a);
  if (!a || pthread_mutex_init(&a->lock, NULL) != 0) {
    free(a);
    return;
  }
  a->dev.dev_malloc = dev_malloc, a->dev.dev_free = dev_free, a->dev.dev_ctx = a;
  a->pinned.pinned_malloc = pinned_malloc, a->pinned.pinned_free = pinned_free, a->pinned.pinned_ctx = a;
  a->numa_node = s->numa_node;
  s->nv_alloc = a;
}

void stk__mixed_alloc_close(mixed_state *s) {
  mixed_nv_alloc *a = s->nv_alloc;
  if (!a) return;
  pthread_mutex_lock(&a->lock);
  reap(a, 1);
  /* what nvJPEG never freed (it should have: every handle and buffer is destroyed by now) */
  for (int i = 0; i < a->num_live; i++) stk__gpu_pinned_block_put(a->live[i].ptr, a->live[i].bytes, a->numa_node);
  pthread_mutex_unlock(&a->lock);
  pthread_mutex_destroy(&a->lock);
  free(a->live);
  free(a->pending);
  free(a);
  s->nv_alloc = NULL;
}

nvjpegStatus_t stk__mixed_handle_create(mixed_state *s, nvjpegBackend_t backend, nvjpegHandle_t *handle) {
  if (s->nv_alloc)
    return s->api->CreateExV2(backend, &s->nv_alloc->dev, &s->nv_alloc->pinned, NVJPEG_FLAGS_DEFAULT, handle);
  return s->api->CreateEx(backend, NULL, NULL, NVJPEG_FLAGS_DEFAULT, handle);
}

nvjpegStatus_t stk__mixed_buffers_create(mixed_state *s, nvjpegBufferPinned_t *pinned, nvjpegBufferDevice_t *device) {
  const stk__nvjpeg_api *api = s->api;
  nvjpegStatus_t st = s->nv_alloc ? api->BufferPinnedCreateV2(s->handle, &s->nv_alloc->pinned, pinned)
                                  : api->BufferPinnedCreate(s->handle, NULL, pinned);
  if (st != NVJPEG_STATUS_SUCCESS) return st;
  return s->nv_alloc ? api->BufferDeviceCreateV2(s->handle, &s->nv_alloc->dev, device)
                     : api->BufferDeviceCreate(s->handle, NULL, device);
}
