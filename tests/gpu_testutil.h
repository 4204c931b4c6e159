/* tests/gpu_testutil.h: shared by the tests/test_gpu_*.c files: skip (exit 77, with the reason)
 * unless this build has CUDA and a CUDA device can be opened. Not on any hot path. */
#ifndef STOKER_GPU_TESTUTIL_H
#define STOKER_GPU_TESTUTIL_H
#include "device/device.h"
#include "testutil.h"

static inline void gpu_test_require_device(int device_id) {
  char err[256] = "";
  if (!stk__gpu_built()) TEST_SKIP("this stoker was built without CUDA (-DSTOKER_CUDA=OFF or no nvcc)");
  if (stk__gpu_open(device_id, err, sizeof err) != STK_OK) {
    char reason[320];
    snprintf(reason, sizeof reason, "no CUDA device: %s", err);
    TEST_SKIP(reason);
  }
}

/* The start of a GPU test's main: skips without device 0 (gpu_test_require_device), else makes it
 * current and opens *stream at normal priority. */
static inline void gpu_test_open(void **stream) {
  gpu_test_require_device(0);
  CHECK(stk__gpu_set_device(0) == STK_OK);
  CHECK(stk__gpu_stream_create(stream, STK_STREAM_PRIORITY_NORMAL) == STK_OK);
}

#if defined(STOKER_HAVE_CUDA)
#include <cuda_runtime_api.h>
#include <pthread.h>
#include <string.h>
#include <time.h>

/* A GPU copy of n host samples in `in` (one grow-only reservation sized for the largest), each
 * with its host sample's dtype, shape, layout and size; the copies are queued on `stream` (the
 * caller synchronizes when it needs them done). */
static inline void gpu_test_upload(stk__tensor_list *in, const stk__tensor *host, int n, void *stream,
                                   uint64_t *allocs) {
  size_t max = 0;
  for (int i = 0; i < n; i++)
    if (host[i].nbytes > max) max = host[i].nbytes;
  in->device = STK_DEVICE_GPU;
  CHECK(stk__gpu_tensor_list_reserve(in, n, max, allocs) == STK_OK);
  for (int i = 0; i < n; i++) {
    stk__tensor *t = &in->samples[i];
    const stk__tensor *h = &host[i];
    t->dtype = h->dtype;
    t->ndim = h->ndim;
    memcpy(t->shape, h->shape, sizeof t->shape);
    strcpy(t->layout, h->layout);
    t->nbytes = h->nbytes;
    t->device = STK_DEVICE_GPU;
    CHECK(stk__gpu_memcpy_h2d_async(t->data, h->data, t->nbytes, stream) == STK_OK);
  }
}

/* A gate that holds a CUDA stream: work queued there after gpu_gate_close waits until
 * gpu_gate_open. A watchdog opens it after `seconds` all the same, so code that wrongly waits for
 * the held stream makes its test fail (gpu_gate_forced) instead of hanging it. */
typedef struct gpu_gate {
  pthread_mutex_t lock;
  pthread_cond_t cond;
  int open, forced, seconds;
  pthread_t watchdog;
} gpu_gate;

static void CUDART_CB gpu_gate_hold(void *arg) {
  gpu_gate *g = (gpu_gate *)arg;
  pthread_mutex_lock(&g->lock);
  while (!g->open) pthread_cond_wait(&g->cond, &g->lock);
  pthread_mutex_unlock(&g->lock);
}

static void *gpu_gate_watch(void *arg) {
  gpu_gate *g = (gpu_gate *)arg;
  struct timespec until;
  clock_gettime(CLOCK_REALTIME, &until);
  until.tv_sec += g->seconds;
  pthread_mutex_lock(&g->lock);
  while (!g->open)
    if (pthread_cond_timedwait(&g->cond, &g->lock, &until) != 0 && !g->open) {
      g->open = g->forced = 1;
      pthread_cond_broadcast(&g->cond);
    }
  pthread_mutex_unlock(&g->lock);
  return NULL;
}

static inline int gpu_gate_close(gpu_gate *g, void *stream, int seconds) {
  pthread_mutex_init(&g->lock, NULL);
  pthread_cond_init(&g->cond, NULL);
  g->open = g->forced = 0;
  g->seconds = seconds;
  if (pthread_create(&g->watchdog, NULL, gpu_gate_watch, g) != 0) return -1;
  return cudaLaunchHostFunc((cudaStream_t)stream, gpu_gate_hold, g) == cudaSuccess ? 0 : -1;
}

/* 1 when the watchdog had to open the gate (someone waited for the held stream). */
static inline int gpu_gate_forced(gpu_gate *g) {
  pthread_mutex_lock(&g->lock);
  int forced = g->forced;
  pthread_mutex_unlock(&g->lock);
  return forced;
}

static inline void gpu_gate_open(gpu_gate *g, void *stream) {
  pthread_mutex_lock(&g->lock);
  g->open = 1;
  pthread_cond_broadcast(&g->cond);
  pthread_mutex_unlock(&g->lock);
  pthread_join(g->watchdog, NULL);
  cudaStreamSynchronize((cudaStream_t)stream); /* the host function is done with g */
  pthread_cond_destroy(&g->cond);
  pthread_mutex_destroy(&g->lock);
}
#endif
#endif
