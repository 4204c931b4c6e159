/* src/ops/feed/test_gpu_external_gpu.c: samples fed to external_source in GPU memory
 * (stk_pipeline_feed_input_stream), no host copy on the way:
 *   - a GPU external_source (device "gpu") fed exec_dynamic batches of 3, 7, 1 and 256 float
 *     samples of varying shapes, written on a producer stream: every batch comes back on the GPU
 *     with exactly the fed sizes, shapes and values, although the producer's buffers are
 *     overwritten right after each feed returns (the feed copied them);
 *   - the same with STK_FEED_NO_COPY (the buffers are left alone until the batch is released);
 *   - a CPU external_source fed the same GPU memory gets host copies of it;
 *   - a sample claiming another GPU, or a host pointer claiming to be GPU memory, is refused with
 *     a message naming the node and the sample.
 * Skips (77) without CUDA or a device. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_testutil.h"
#include "stoker/stoker.h"

enum { MAX_BATCH = 256, COLS = 5 };

static float value(int batch, int i, int e) { return (float)(batch * 100000 + i * 100 + e) * 0.5f; }
static int rows_of(int batch, int i) { return 1 + (batch + i) % 4; }

static stk_pipeline *make(const char *device) {
  stk_pipeline_options o;
  stk_pipeline_options_default(&o);
  o.batch_size = MAX_BATCH;
  o.num_threads = 2;
  o.pin_threads = 0;
  o.exec_dynamic = 1;
  o.device_id = 0;
  stk_pipeline *p = NULL;
  CHECK(stk_pipeline_new(&o, &p) == STK_OK);
  stk_args *a = NULL;
  stk_args_new(&a);
  stk_args_set_string(a, "device", device);
  CHECK_MSG(stk_pipeline_add_op(p, "external_source", "src", NULL, 0, a) == STK_OK, "%s", stk_pipeline_last_error(p));
  stk_args_destroy(a);
  const char *outs[] = {"src"};
  CHECK(stk_pipeline_set_outputs(p, outs, 1) == STK_OK);
  CHECK_MSG(stk_pipeline_build(p) == STK_OK, "%s", stk_pipeline_last_error(p));
  return p;
}

/* count samples of batch `batch` written into dev[] on `stream` (not waited for), and their views. */
static void produce(void **dev, stk_tensor_view *views, int batch, int count, void *stream, float *host) {
  for (int i = 0; i < count; i++) {
    int rows = rows_of(batch, i);
    for (int e = 0; e < rows * COLS; e++) host[(size_t)i * 4 * COLS + e] = value(batch, i, e);
    CHECK(stk__gpu_memcpy_h2d_async(dev[i], host + (size_t)i * 4 * COLS, (size_t)rows * COLS * 4, stream) == STK_OK);
    views[i] = (stk_tensor_view){.data = dev[i],
                                 .dtype = STK_DTYPE_FLOAT32,
                                 .ndim = 2,
                                 .shape = {rows, COLS},
                                 .nbytes = (size_t)rows * COLS * 4,
                                 .device_type = STK_DEVICE_GPU,
                                 .device_id = 0};
  }
}

/* Checks the next batch against batch `batch` of `count` samples; on_gpu: where it must be. */
static void expect(stk_pipeline *p, int batch, int count, int on_gpu) {
  stk_batch *b = NULL;
  if (stk_pipeline_next(p, &b) != STK_OK) {
    CHECK_MSG(0, "next: %s", stk_pipeline_last_error(p));
    return;
  }
  CHECK_MSG(stk_batch_size(b) == count, "size %d, fed %d", stk_batch_size(b), count);
  int wrong = 0;
  float got[4 * COLS];
  for (int i = 0; i < count && i < stk_batch_size(b); i++) {
    stk_tensor_view v;
    int rows = rows_of(batch, i);
    if (stk_batch_sample(b, 0, i, &v) != STK_OK || v.ndim != 2 || v.shape[0] != rows || v.shape[1] != COLS ||
        (v.device_type == STK_DEVICE_GPU) != on_gpu || stk_batch_copy_to_host(b, &v, got, sizeof got) != STK_OK) {
      wrong++;
      continue;
    }
    for (int e = 0; e < rows * COLS; e++) wrong += got[e] != value(batch, i, e);
  }
  CHECK_MSG(wrong == 0, "batch %d of %d samples (%s): %d samples or values differ", batch, count,
            on_gpu ? "gpu" : "cpu", wrong);
  stk_batch_release(b);
}

static void fed_gpu_memory_comes_back(const char *device, unsigned flags) {
  stk_pipeline *p = make(device);
  void *stream = NULL, *dev[MAX_BATCH];
  CHECK(stk__gpu_stream_create(&stream, 0) == STK_OK);
  for (int i = 0; i < MAX_BATCH; i++) CHECK(stk__gpu_malloc(&dev[i], 4 * COLS * 4, NULL) == STK_OK);
  float *host = malloc((size_t)MAX_BATCH * 4 * COLS * 4), *junk = calloc(4 * COLS, 4);
  stk_tensor_view *views = calloc(MAX_BATCH, sizeof *views);
  const int sizes[] = {3, 7, 1, 256};
  for (int k = 0; k < 4; k++) {
    produce(dev, views, k, sizes[k], stream, host);
    CHECK_MSG(stk_pipeline_feed_input_stream(p, "src", views, sizes[k], flags, stream) == STK_OK, "%s",
              stk_pipeline_last_error(p));
    if (!(flags & STK_FEED_NO_COPY)) /* copied: the producer may reuse its memory at once */
      for (int i = 0; i < sizes[k]; i++) stk__gpu_memcpy_h2d_async(dev[i], junk, 4 * COLS * 4, stream);
    stk__gpu_stream_synchronize(stream);
    expect(p, k, sizes[k], !strcmp(device, "gpu"));
  }
  for (int i = 0; i < MAX_BATCH; i++) stk__gpu_free(dev[i], NULL);
  stk__gpu_stream_destroy(stream);
  free(host);
  free(junk);
  free(views);
  stk_pipeline_destroy(p);
}

static void wrong_memory_is_refused(void) {
  stk_pipeline *p = make("gpu");
  float host[COLS] = {0};
  void *dev = NULL;
  CHECK(stk__gpu_malloc(&dev, sizeof host, NULL) == STK_OK);
  stk_tensor_view v = {.data = dev,
                       .dtype = STK_DTYPE_FLOAT32,
                       .ndim = 1,
                       .shape = {COLS},
                       .nbytes = sizeof host,
                       .device_type = STK_DEVICE_GPU,
                       .device_id = 1};
  CHECK(stk_pipeline_feed_input_stream(p, "src", &v, 1, 0, NULL) == STK_EINVAL);
  CHECK_MSG(strstr(stk_pipeline_last_error(p), "src") && strstr(stk_pipeline_last_error(p), "sample 0") &&
                strstr(stk_pipeline_last_error(p), "wrong GPU"),
            "%s", stk_pipeline_last_error(p));
  v.device_id = 0;
  v.data = host;
  CHECK(stk_pipeline_feed_input_stream(p, "src", &v, 1, 0, NULL) == STK_EINVAL);
  CHECK_MSG(strstr(stk_pipeline_last_error(p), "not in the pipeline's GPU memory"), "%s", stk_pipeline_last_error(p));
  stk__gpu_free(dev, NULL);
  stk_pipeline_destroy(p);
}

int main(void) {
  gpu_test_require_device(0);
  fed_gpu_memory_comes_back("gpu", 0);
  fed_gpu_memory_comes_back("gpu", STK_FEED_NO_COPY);
  fed_gpu_memory_comes_back("cpu", 0);
  wrong_memory_is_refused();
  return stk_test_finish("test_gpu_external_gpu");
}
