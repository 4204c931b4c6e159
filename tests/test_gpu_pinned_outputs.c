/* tests/test_gpu_pinned_outputs.c: on a pipeline with a GPU, a CPU output's dense batch tensor
 * comes from the pinned pool (so the iterators' copy of a .gpu() output is an asynchronous DMA),
 * and from malloc with STOKER_PINNED_OUTPUTS=0 or without a GPU. readers.file over 2 classes x 4
 * records of 65,536 bytes (each record's byte i is (file * 31 + i) & 255): every batch's bytes are
 * checked through the host view, then copied to the GPU from the batch tensor and back, in both
 * modes, written in place and copied (STOKER_DENSE_IN_PLACE=0); a batch held past the pipeline's
 * destroy frees its pinned tensor on release. Skips without a CUDA device. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/engine.h"
#include "gpu_testutil.h"
#include "case_list.h"
#include "testutil.h"

#define RECORD 65536
#define FILES  8
static char root[512];

static void make_records(void) {
  char *dir = stk_test_tmpdir("gpu-pinned-outputs");
  snprintf(root, sizeof root, "%s", dir);
  free(dir);
  static uint8_t bytes[RECORD];
  for (int f = 0; f < FILES; f++) {
    char path[700];
    snprintf(path, sizeof path, "%s/c%d", root, f / 4);
    CHECK(mkdir(path, 0755) == 0 || access(path, F_OK) == 0);
    snprintf(path, sizeof path, "%s/c%d/r%d.jpg", root, f / 4, f);
    for (int i = 0; i < RECORD; i++) bytes[i] = (uint8_t)((f * 31 + i) & 255);
    FILE *out = fopen(path, "wb");
    CHECK(out && fwrite(bytes, 1, RECORD, out) == RECORD);
    if (out) fclose(out);
  }
}

/* One epoch of batches of 4 on device_id; every batch's bytes checked, its base's kind compared
 * with want_pinned, and (on a GPU pipeline) the batch tensor copied to the device and back. */
/* readers.file over the records in batches of 4 on device_id, built; NULL (and a failed check) if not. */
static stk_pipeline *records_pipeline(int device_id) {
  stk_pipeline_options o;
  stk_pipeline_options_default(&o);
  o.batch_size = 4;
  o.num_threads = 2;
  o.pin_threads = 0;
  o.device_id = device_id;
  stk_pipeline *p = NULL;
  stk_args *a = NULL;
  CHECK(stk_pipeline_new(&o, &p) == STK_OK && stk_args_new(&a) == STK_OK);
  if (!p || !a) {
    stk_pipeline_destroy(p);
    return NULL;
  }
  stk_args_set_string(a, "file_root", root);
  const char *outs[2] = {"r[0]", "r[1]"};
  stk_status st = stk_pipeline_add_op(p, "readers.file", "r", NULL, 0, a);
  if (st == STK_OK) st = stk_pipeline_set_outputs(p, outs, 2);
  if (st == STK_OK) st = stk_pipeline_build(p);
  CHECK_MSG(st == STK_OK, "%s", stk_pipeline_last_error(p));
  stk_args_destroy(a);
  if (st != STK_OK) {
    stk_pipeline_destroy(p);
    return NULL;
  }
  return p;
}

static void run(int device_id, int want_pinned) {
  stk_pipeline *p = records_pipeline(device_id);
  if (!p) return;
  uint8_t *back = malloc(4 * RECORD);
  void *dev = NULL, *stream = NULL;
  if (device_id >= 0) {
    CHECK(stk__gpu_malloc(&dev, 4 * RECORD, NULL) == STK_OK);
    CHECK(stk__gpu_stream_create(&stream, 0) == STK_OK);
  }
  stk_batch *b;
  int batches = 0;
  while (back && stk_pipeline_next(p, &b) == STK_OK) {
    batches++;
    stk_tensor_view v;
    CHECK(stk_batch_tensor(b, 0, &v) == STK_OK && v.nbytes == 4 * RECORD && v.device_type == STK_DEVICE_CPU);
    const stk__tensor_list *l = stk__batch_output(b, 0);
    CHECK_MSG(l->base && l->base_pinned == want_pinned, "batch %d: base %p pinned %d, want %d", batches, l->base,
              l->base_pinned, want_pinned);
    for (int s = 0; s < 4 && v.nbytes == 4 * RECORD; s++) {
      stk_tensor_view label;
      CHECK(stk_batch_sample(b, 1, s, &label) == STK_OK);
      const uint8_t *rec = (const uint8_t *)v.data + (size_t)s * RECORD;
      /* the label says the class; the first byte names the file within it (f * 31 & 255 is unique) */
      int f = -1;
      for (int k = 0; k < FILES; k++)
        if (rec[0] == (uint8_t)((k * 31) & 255)) f = k;
      CHECK_MSG(f >= 0 && f / 4 == *(const int32_t *)label.data, "batch %d sample %d: first byte %u label %d", batches,
                s, rec[0], *(const int32_t *)label.data);
      int bad = 0;
      for (int i = 0; f >= 0 && i < RECORD; i++) bad += rec[i] != (uint8_t)((f * 31 + i) & 255);
      CHECK_MSG(bad == 0, "batch %d sample %d: %d bytes differ", batches, s, bad);
    }
    if (dev && stream) { /* the batch tensor as a copy source, as torch's .to(non_blocking=True) uses it */
      CHECK(stk__gpu_memcpy_h2d_async(dev, v.data, v.nbytes, stream) == STK_OK);
      CHECK(stk__gpu_memcpy_d2h(back, dev, v.nbytes, stream) == STK_OK); /* waits for the stream */
      CHECK(memcmp(back, v.data, v.nbytes) == 0);
    }
    stk_batch_release(b);
  }
  CHECK_MSG(batches == 2, "%d batches (want 2)", batches);
  if (dev) stk__gpu_free(dev, NULL);
  if (stream) stk__gpu_stream_destroy(stream);
  free(back);
  stk_pipeline_destroy(p);
}

static void test_pinned_on_gpu(void) {
  run(0, 1);
  setenv("STOKER_DENSE_IN_PLACE", "0", 1);
  run(0, 1);
  unsetenv("STOKER_DENSE_IN_PLACE");
}

static void test_malloc_when_off(void) {
  setenv("STOKER_PINNED_OUTPUTS", "0", 1);
  run(0, 0);
  unsetenv("STOKER_PINNED_OUTPUTS");
}

static void test_malloc_without_gpu(void) { run(-1, 0); }

/* A batch its consumer holds outlives the pipeline: its pinned batch tensor goes back to the pool
 * when it is released (test_gpu_pipeline's destroy-mid-epoch case aborted in free() before that). */
static void test_held_past_destroy(void) {
  stk_pipeline *p = records_pipeline(0);
  if (!p) return;
  stk_batch *held = NULL;
  CHECK_MSG(stk_pipeline_next(p, &held) == STK_OK, "%s", stk_pipeline_last_error(p));
  stk_pipeline_destroy(p);
  stk_tensor_view v;
  CHECK(held && stk_batch_tensor(held, 0, &v) == STK_OK && stk__batch_output(held, 0)->base_pinned == 1);
  if (held) {
    const uint8_t first = ((const uint8_t *)v.data)[0];
    CHECK(((const uint8_t *)v.data)[1] == (uint8_t)(first + 1)); /* still the record's bytes */
    stk_batch_release(held);
  }
}

/* one STK_TEST_CASE per line: tests/CMakeLists.txt reads them */
// clang-format off
static const stk_test_case cases[] = {
    STK_TEST_CASE(test_pinned_on_gpu),
    STK_TEST_CASE(test_malloc_when_off),
    STK_TEST_CASE(test_malloc_without_gpu),
    STK_TEST_CASE(test_held_past_destroy),
};
// clang-format on

int main(int argc, char **argv) {
  make_records();
  gpu_test_require_device(0);
  return stk_test_run_cases("test_gpu_pinned_outputs", cases, sizeof cases / sizeof cases[0], argc, argv);
}
