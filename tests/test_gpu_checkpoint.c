/* tests/test_gpu_checkpoint.c: exact checkpoint/resume on the GPU: rn50-train and rn50-val with the
 * mixed decoder (and rn50-train with the CPU decoder on a GPU pipeline) on `stoker datagen`
 * JPEGs; a resume after 3 batches delivers the same bytes (copied to the host) as the
 * uninterrupted run, across the epoch boundary, with another thread count. Skips (77) without
 * CUDA or a device. The CPU-only twin is tests/test_checkpoint.c. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_testutil.h"
#include "stoker/stoker.h"
#include "testutil.h"

static uint64_t fnv(uint64_t h, const void *data, size_t n) {
  const unsigned char *p = data;
  for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 1099511628211ull;
  return h;
}

/* Digest of every sample of every output, GPU data copied to the host. */
static uint64_t digest(const stk_batch *b) {
  uint64_t h = 0xcbf29ce484222325ull;
  int64_t epoch = stk_batch_epoch(b);
  h = fnv(h, &epoch, sizeof epoch);
  for (int o = 0; o < stk_batch_num_outputs(b); o++)
    for (int s = 0; s < stk_batch_size(b); s++) {
      stk_tensor_view v;
      if (stk_batch_sample(b, o, s, &v) != STK_OK) continue;
      void *host = malloc(v.nbytes ? v.nbytes : 1);
      if (host && stk_batch_copy_to_host(b, &v, host, v.nbytes) == STK_OK) h = fnv(h, host, v.nbytes);
      else CHECK_MSG(0, "copy to host of output %d sample %d failed", o, s);
      free(host);
    }
  return h;
}

static int take(stk_pipeline *p, int n, uint64_t *out) {
  int got = 0;
  for (int guard = 0; got < n && guard < 4 * n + 4; guard++) {
    stk_batch *b = NULL;
    stk_status st = stk_pipeline_next(p, &b);
    if (st == STK_EOF_EPOCH) {
      CHECK(stk_pipeline_reset(p) == STK_OK);
      continue;
    }
    CHECK_MSG(st == STK_OK, "next: %s", stk_pipeline_last_error(p));
    if (st != STK_OK) break;
    out[got++] = digest(b);
    stk_batch_release(b);
  }
  return got;
}

static stk_pipeline *make(const char *name, const char *decoder, const char *dir, int threads, const char *ckpt) {
  stk_pipeline_options o;
  stk_pipeline_options_default(&o);
  o.batch_size = 8, o.num_threads = threads, o.pin_threads = 0, o.device_id = 0, o.checkpoint = ckpt;
  stk_pipeline *p = NULL;
  if (stk_pipeline_new(&o, &p) != STK_OK) return NULL;
  stk_status st = stk_pipeline_add_builtin_on(p, name, dir, decoder);
  if (st == STK_OK) st = stk_pipeline_build(p);
  CHECK_MSG(st == STK_OK, "%s (%s): %s", name, decoder, stk_pipeline_last_error(p));
  if (st != STK_OK) {
    stk_pipeline_destroy(p);
    return NULL;
  }
  return p;
}

int main(void) {
  gpu_test_require_device(0);
  char cmd[800], *out = NULL, *dir = stk_test_tmpdir("gpu-ckpt"), data[600];
  snprintf(data, sizeof data, "%s/data", dir);
  snprintf(cmd, sizeof cmd, "'%s' datagen '%s' --count 40 --classes 2 2>&1", stk_test_cli(), data);
  int rc = stk_test_run(cmd, &out);
  free(out);
  if (rc != 0) TEST_SKIP("stoker datagen failed");
  const char *names[][2] = {{"rn50-train", "mixed"}, {"rn50-val", "mixed"}, {"rn50-train", "cpu"}};
  for (int n = 0; n < 3; n++) {
    uint64_t ref[8], got[8];
    char *text = NULL;
    stk_pipeline *p = make(names[n][0], names[n][1], data, 2, NULL);
    if (!p) continue;
    CHECK(take(p, 8, ref) == 8);
    stk_pipeline_destroy(p);
    if (!(p = make(names[n][0], names[n][1], data, 4, NULL))) continue;
    CHECK(take(p, 3, got) == 3);
    CHECK(stk_pipeline_checkpoint(p, &text) == STK_OK);
    stk_pipeline_destroy(p);
    if (text && (p = make(names[n][0], names[n][1], data, 1, text))) {
      CHECK(take(p, 5, got) == 5);
      for (int i = 0; i < 5; i++)
        CHECK_MSG(got[i] == ref[3 + i], "%s (%s): batch %d differs after resume", names[n][0], names[n][1], 3 + i);
      stk_pipeline_destroy(p);
    }
    stk_free(text);
  }
  stk_test_remove_tree(dir);
  free(dir);
  return stk_test_finish("test_gpu_checkpoint");
}
