/* bench/nvjpeg_batched_probe.c: whether nvJPEG's batched GPU decoder (a GPU_HYBRID handle, whose
 * nvjpegDecodeBatched decodes baseline interleaved JPEGs with the Huffman stage on the SMs when a
 * batch holds more than 50 images) adds images per second BESIDE the JPEG engines, and at what
 * CPU cost. The engines are the limit of the mixed decoder at 8 CPUs (94-95% busy) while the SMs
 * are mostly idle, and nvJPEG's decoupled CUDA decoder costs too much CPU per image to use them
 * (docs/gpu.md): this measures the batched one before anything is built on it.
 * A diagnostic, not a protocol row. Each worker thread owns a handle of its backend, a state, a
 * stream and output buffers, and decodes batches of its size over the files (baseline,
 * 3-component, unrotated only: what the engines take) for SECONDS, synchronizing after each
 * batch. Printed per worker: images/s and its thread CPU time per image; then the total and the
 * process's busy cores.
 *   nvjpeg_batched_probe SECONDS WORKERS FILE...
 * WORKERS: comma-separated backend:batch, e.g. hw:256  gpu:128  hw:256,gpu:128  gpu:64,gpu:64
 * Built on the build machine against a CUDA build's libstoker.a (bench/nvjpeg-batched-probe.sh) and
 * carried. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include <cuda_runtime.h>

#include "device/cuda/nvjpeg_api.h"
#include "ops/decode/jpeg.h"

typedef struct {
  unsigned char *data;
  size_t size;
  int width, height;
} probe_file;

typedef struct {
  const stk__nvjpeg_api *api;
  const probe_file *files;
  int file_count;
  int hardware; /* 1 engines, 0 GPU_HYBRID */
  int batch;
  int first;
  double seconds;
  atomic_int *start;
  long images;
  double wall, cpu;
  char error[256];
} probe_worker;

static double now_s(clockid_t clock) {
  struct timespec t;
  clock_gettime(clock, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int nv_failed(probe_worker *w, nvjpegStatus_t st, const char *what) {
  if (st == NVJPEG_STATUS_SUCCESS) return 0;
  snprintf(w->error, sizeof w->error, "%s: %s", what, stk__nvjpeg_status_name(st));
  return 1;
}

static void *probe_run(void *arg) {
  probe_worker *w = arg;
  const stk__nvjpeg_api *a = w->api;
  nvjpegHandle_t handle = NULL;
  nvjpegJpegState_t state = NULL;
  cudaStream_t stream = NULL;
  const unsigned char **data = calloc((size_t)w->batch, sizeof *data);
  size_t *lengths = calloc((size_t)w->batch, sizeof *lengths);
  nvjpegImage_t *out = calloc((size_t)w->batch, sizeof *out);
  unsigned char *device = NULL;
  size_t slot = 0;
  for (int i = 0; i < w->file_count; i++) {
    size_t bytes = (size_t)w->files[i].width * (size_t)w->files[i].height * 3;
    if (bytes > slot) slot = bytes;
  }
  if (!data || !lengths || !out) {
    snprintf(w->error, sizeof w->error, "out of memory");
    goto done;
  }
  if (nv_failed(w, a->CreateEx(w->hardware ? NVJPEG_BACKEND_HARDWARE : NVJPEG_BACKEND_GPU_HYBRID, NULL, NULL, 0,
                               &handle),
                "nvjpegCreateEx") ||
      nv_failed(w, a->JpegStateCreate(handle, &state), "nvjpegJpegStateCreate") ||
      nv_failed(w, a->DecodeBatchedInitialize(handle, state, w->batch, 1, NVJPEG_OUTPUT_RGBI),
                "nvjpegDecodeBatchedInitialize"))
    goto done;
  if (cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) != cudaSuccess ||
      cudaMalloc((void **)&device, slot * (size_t)w->batch) != cudaSuccess) {
    snprintf(w->error, sizeof w->error, "CUDA stream / %zu MB of device memory", slot * (size_t)w->batch >> 20);
    goto done;
  }
  int next = w->first % w->file_count;
  int warm = 2;
  double t0 = 0, c0 = 0, end = 0;
  while (!atomic_load(w->start)) {
  }
  for (;;) {
    for (int i = 0; i < w->batch; i++) {
      const probe_file *f = &w->files[next];
      next = (next + 1) % w->file_count;
      data[i] = f->data;
      lengths[i] = f->size;
      memset(&out[i], 0, sizeof out[i]);
      out[i].channel[0] = device + slot * (size_t)i;
      out[i].pitch[0] = (size_t)f->width * 3;
    }
    if (nv_failed(w, a->DecodeBatched(handle, state, data, lengths, out, stream), "nvjpegDecodeBatched")) break;
    if (cudaStreamSynchronize(stream) != cudaSuccess) {
      snprintf(w->error, sizeof w->error, "cudaStreamSynchronize: %s", cudaGetErrorString(cudaGetLastError()));
      break;
    }
    if (warm > 0) {
      if (--warm == 0) {
        t0 = now_s(CLOCK_MONOTONIC);
        c0 = now_s(CLOCK_THREAD_CPUTIME_ID);
        end = t0 + w->seconds;
      }
      continue;
    }
    w->images += w->batch;
    if (now_s(CLOCK_MONOTONIC) >= end) break;
  }
  w->wall = now_s(CLOCK_MONOTONIC) - t0;
  w->cpu = now_s(CLOCK_THREAD_CPUTIME_ID) - c0;
done:
  if (device) cudaFree(device);
  if (stream) cudaStreamDestroy(stream);
  if (state) a->JpegStateDestroy(state);
  if (handle) a->Destroy(handle);
  free(data);
  free(lengths);
  free(out);
  return NULL;
}

static int load_file(const char *path, probe_file *f) {
  FILE *in = fopen(path, "rb");
  if (!in) return 0;
  fseek(in, 0, SEEK_END);
  long size = ftell(in);
  fseek(in, 0, SEEK_SET);
  f->data = size > 0 ? malloc((size_t)size) : NULL;
  int ok = f->data && fread(f->data, 1, (size_t)size, in) == (size_t)size;
  fclose(in);
  stk__jpeg_info info;
  char err[256];
  if (ok) ok = stk__jpeg_peek(f->data, (size_t)size, &info, err, sizeof err) == STK_OK;
  /* what the engines take: baseline, 3 components (or gray), no rotation, no CMYK, no 4:1:1 */
  if (ok) ok = !info.progressive && !info.cmyk && info.orientation == 1 && info.components == 3 && info.subsampling != 411;
  if (!ok) {
    free(f->data);
    return 0;
  }
  f->size = (size_t)size;
  f->width = info.width;
  f->height = info.height;
  return 1;
}

int main(int argc, char **argv) {
  if (argc < 4) {
    fprintf(stderr, "usage: %s SECONDS WORKERS FILE...  (WORKERS e.g. hw:256,gpu:128)\n", argv[0]);
    return 2;
  }
  double seconds = atof(argv[1]);
  char err[256];
  const stk__nvjpeg_api *api = stk__nvjpeg_load(err, sizeof err);
  if (!api) {
    fprintf(stderr, "nvJPEG: %s\n", err);
    return 1;
  }
  probe_file *files = calloc((size_t)(argc - 3), sizeof *files);
  int count = 0;
  double pixels = 0;
  for (int i = 3; i < argc; i++)
    if (load_file(argv[i], &files[count])) {
      pixels += (double)files[count].width * files[count].height;
      count++;
    }
  if (count == 0) {
    fprintf(stderr, "no baseline 3-component JPEG among the %d files\n", argc - 3);
    return 1;
  }
  probe_worker workers[16];
  int n = 0;
  atomic_int start = 0;
  char *spec = strdup(argv[2]);
  for (char *save = NULL, *tok = strtok_r(spec, ",", &save); tok && n < 16; tok = strtok_r(NULL, ",", &save)) {
    probe_worker *w = &workers[n];
    memset(w, 0, sizeof *w);
    w->api = api;
    w->files = files;
    w->file_count = count;
    w->hardware = strncmp(tok, "hw", 2) == 0;
    const char *colon = strchr(tok, ':');
    w->batch = colon ? atoi(colon + 1) : 128;
    w->first = n * 997;
    w->seconds = seconds;
    w->start = &start;
    if (w->batch < 1 || (!w->hardware && strncmp(tok, "gpu", 3) != 0)) {
      fprintf(stderr, "bad worker '%s' (hw:N or gpu:N)\n", tok);
      return 2;
    }
    n++;
  }
  pthread_t threads[16];
  struct rusage r0, r1;
  for (int i = 0; i < n; i++) pthread_create(&threads[i], NULL, probe_run, &workers[i]);
  getrusage(RUSAGE_SELF, &r0);
  double t0 = now_s(CLOCK_MONOTONIC);
  atomic_store(&start, 1);
  for (int i = 0; i < n; i++) pthread_join(threads[i], NULL);
  double wall = now_s(CLOCK_MONOTONIC) - t0;
  getrusage(RUSAGE_SELF, &r1);
  double cpu = (double)(r1.ru_utime.tv_sec - r0.ru_utime.tv_sec + r1.ru_stime.tv_sec - r0.ru_stime.tv_sec) +
               (double)(r1.ru_utime.tv_usec - r0.ru_utime.tv_usec + r1.ru_stime.tv_usec - r0.ru_stime.tv_usec) * 1e-6;
  printf("files %d (baseline 3-component of %d), mean %.2f MP; workers %s; %.0f s each\n", count, argc - 3,
         pixels / count / 1e6, argv[2], seconds);
  double total = 0;
  int failed = 0;
  for (int i = 0; i < n; i++) {
    probe_worker *w = &workers[i];
    if (w->error[0]) {
      printf("  worker %d %s:%d FAILED: %s\n", i, w->hardware ? "hw" : "gpu", w->batch, w->error);
      failed = 1;
      continue;
    }
    double rate = w->wall > 0 ? (double)w->images / w->wall : 0;
    total += rate;
    printf("  worker %d %s:%-4d %9.0f img/s  thread CPU %.1f us/image\n", i, w->hardware ? "hw" : "gpu", w->batch, rate,
           w->images ? w->cpu / (double)w->images * 1e6 : 0.0);
  }
  printf("  total %9.0f img/s  process busy cores %.2f (including the load and warm-up)\n", total, cpu / wall);
  return failed;
}
