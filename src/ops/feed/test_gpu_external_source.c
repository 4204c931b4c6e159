/* src/ops/feed/test_gpu_external_source.c: exec_dynamic batches of 3, 7, 1 and 256 samples fed to GPU
 * operators, which must size every launch by the batch they get:
 *   - external_source -> crop_mirror_normalize (gpu): each value equal to the one computed here
 *     from the fed pixels (|diff| <= 1e-4);
 *   - external_source -> resize (gpu) -> crop_mirror_normalize (gpu), which runs as the fused
 *     resize+normalize kernel: equal to the same graph on the CPU within one uint8 step of the
 *     resize (|diff| <= 1 / std + 1e-3), mean difference <= 0.02;
 * and no allocation after warm-up at the largest size. Skips (77) without CUDA or a device. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_testutil.h"
#include "stoker/stoker.h"
#include "case_list.h"

enum { H = 20, W = 24, C = 3, CROP = 12 };
static const double kMean[C] = {100.0, 110.0, 120.0};
static const double kStd[C] = {50.0, 55.0, 60.0};

static uint8_t pixel(int batch, int i, int y, int x, int c) {
  return (uint8_t)((batch * 13 + i * 7 + y * 11 + x * 3 + c * 5 + (x * y) % 17) % 256);
}

static stk_pipeline *make(int device_id, int with_resize) {
  stk_pipeline_options o;
  stk_pipeline_options_default(&o);
  o.batch_size = 256;
  o.num_threads = 2;
  o.pin_threads = 0;
  o.exec_dynamic = 1;
  o.device_id = device_id;
  stk_pipeline *p = NULL;
  CHECK(stk_pipeline_new(&o, &p) == STK_OK);
  const char *dev = device_id >= 0 ? "gpu" : "cpu";
  stk_args *a = NULL;
  stk_args_new(&a);
  const char *layout[] = {"HWC"};
  stk_args_set_string_list(a, "layout", layout, 1);
  CHECK(stk_pipeline_add_op(p, "external_source", "src", NULL, 0, a) == STK_OK);
  stk_args_destroy(a);
  const char *prev[] = {"src"};
  if (with_resize) {
    stk_args_new(&a);
    double size[2] = {16, 16};
    stk_args_set_float_list(a, "size", size, 2);
    stk_args_set_string(a, "device", dev);
    CHECK_MSG(stk_pipeline_add_op(p, "resize", "rs", prev, 1, a) == STK_OK, "%s", stk_pipeline_last_error(p));
    stk_args_destroy(a);
    prev[0] = "rs";
  }
  stk_args_new(&a);
  double crop[2] = {CROP, CROP};
  stk_args_set_float_list(a, "crop", crop, 2);
  stk_args_set_float_list(a, "mean", kMean, C);
  stk_args_set_float_list(a, "std", kStd, C);
  stk_args_set_string(a, "device", dev);
  CHECK_MSG(stk_pipeline_add_op(p, "crop_mirror_normalize", "cmn", prev, 1, a) == STK_OK, "%s",
            stk_pipeline_last_error(p));
  stk_args_destroy(a);
  const char *outs[] = {"cmn"};
  CHECK(stk_pipeline_set_outputs(p, outs, 1) == STK_OK);
  CHECK_MSG(stk_pipeline_build(p) == STK_OK, "%s", stk_pipeline_last_error(p));
  return p;
}

static void feed(stk_pipeline *p, int batch, int count) {
  stk_tensor_view *views = calloc((size_t)count, sizeof *views);
  uint8_t *pixels = malloc((size_t)count * H * W * C);
  for (int i = 0; i < count; i++) {
    for (int y = 0; y < H; y++)
      for (int x = 0; x < W; x++)
        for (int c = 0; c < C; c++) pixels[(((size_t)i * H + y) * W + x) * C + c] = pixel(batch, i, y, x, c);
    views[i] = (stk_tensor_view){.data = pixels + (size_t)i * H * W * C,
                                 .dtype = STK_DTYPE_UINT8,
                                 .ndim = 3,
                                 .shape = {H, W, C},
                                 .nbytes = H * W * C};
  }
  CHECK_MSG(stk_pipeline_feed_input(p, "src", views, count, 0) == STK_OK, "%s", stk_pipeline_last_error(p));
  free(views);
  free(pixels);
}

/* The next batch's output copied to the host (count * C * CROP * CROP floats), or NULL. */
static float *next_host(stk_pipeline *p, int count) {
  stk_batch *b = NULL;
  if (stk_pipeline_next(p, &b) != STK_OK) {
    CHECK_MSG(0, "next: %s", stk_pipeline_last_error(p));
    return NULL;
  }
  CHECK_MSG(stk_batch_size(b) == count, "size %d, fed %d", stk_batch_size(b), count);
  stk_tensor_view v;
  float *host = NULL;
  if (stk_batch_tensor(b, 0, &v) == STK_OK && v.shape[0] == count && v.nbytes == (size_t)count * C * CROP * CROP * 4) {
    host = malloc(v.nbytes);
    CHECK(stk_batch_copy_to_host(b, &v, host, v.nbytes) == STK_OK);
  } else {
    CHECK_MSG(0, "output of %d samples: shape[0] %lld, %zu bytes", count, (long long)v.shape[0], v.nbytes);
  }
  stk_batch_release(b);
  return host;
}

static void normalize_matches_the_fed_pixels(void) {
  stk_pipeline *gpu = make(0, 0);
  const int sizes[] = {3, 7, 1, 256};
  for (int k = 0; k < 4; k++) feed(gpu, k, sizes[k]);
  const int y0 = (H - CROP) / 2, x0 = (W - CROP) / 2;
  for (int k = 0; k < 4; k++) {
    float *out = next_host(gpu, sizes[k]);
    int wrong = 0;
    for (int i = 0; out && i < sizes[k]; i++)
      for (int c = 0; c < C; c++)
        for (int y = 0; y < CROP; y++)
          for (int x = 0; x < CROP; x++) {
            double want = (pixel(k, i, y + y0, x + x0, c) - kMean[c]) / kStd[c];
            wrong += fabs(out[(((size_t)i * C + c) * CROP + y) * CROP + x] - want) > 1e-4;
          }
    CHECK_MSG(wrong == 0, "batch of %d: %d values differ", sizes[k], wrong);
    free(out);
  }
  stk_pipeline_destroy(gpu);
}

static void fused_resize_matches_the_cpu(void) {
  stk_pipeline *gpu = make(0, 1), *cpu = make(-1, 1);
  const int sizes[] = {3, 7, 1, 256, 256, 256, 256, 256, 256, 256, 3, 7, 1, 100};
  const int n = (int)(sizeof sizes / sizeof sizes[0]);
  stk_pipeline_stats warm = {0}, end = {0};
  for (int k = 0; k < n; k++) {
    if (k == 10) stk_pipeline_stats_get(gpu, &warm); /* every slot has seen a full batch */
    feed(gpu, k, sizes[k]);
    feed(cpu, k, sizes[k]);
    float *g = next_host(gpu, sizes[k]), *c = next_host(cpu, sizes[k]);
    double worst = 0, sum = 0;
    size_t values = (size_t)sizes[k] * C * CROP * CROP;
    for (size_t e = 0; g && c && e < values; e++) {
      double d = fabs((double)g[e] - c[e]);
      worst = d > worst ? d : worst;
      sum += d;
    }
    CHECK_MSG(g && c && worst <= 1.0 / kStd[0] + 1e-3 && sum / (double)values <= 0.02,
              "batch %d of %d: max |diff| %.4f, mean %.5f", k, sizes[k], worst, sum / (double)values);
    free(g);
    free(c);
  }
  stk_pipeline_stats_get(gpu, &end);
  CHECK_MSG(end.allocations == warm.allocations, "%llu allocations after warm-up at the largest size",
            (unsigned long long)(end.allocations - warm.allocations));
  stk_pipeline_destroy(gpu);
  stk_pipeline_destroy(cpu);
}

/* one STK_TEST_CASE per line: tests/CMakeLists.txt reads them */
// clang-format off
static const stk_test_case cases[] = {
    STK_TEST_CASE(normalize_matches_the_fed_pixels),
    STK_TEST_CASE(fused_resize_matches_the_cpu),
};
// clang-format on

int main(int argc, char **argv) {
  if (stk_test_list_cases(cases, STK_TEST_COUNT(cases), argc, argv)) return 0;
  gpu_test_require_device(0);
  return stk_test_run_cases("test_gpu_external_source", cases, STK_TEST_COUNT(cases), argc, argv);
}
