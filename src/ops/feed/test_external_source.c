/* src/ops/feed/test_external_source.c: external_source fed through stk_pipeline_feed_input.
 *   - exec_dynamic: batches of 3, 7, 1 and 256 samples in one run come back with exactly those
 *     sizes, each sample's crop_mirror_normalize output equal to the value computed here from
 *     the fed pixels, labels passed through; after warm-up at the largest size, varying sizes
 *     allocate nothing;
 *   - the end mark ends the epoch (STK_EOF_EPOCH), data fed after it forms the next epoch;
 *   - a mid-epoch reset drops what was fed for the abandoned epoch and keeps the next epoch's;
 *   - no_copy: a ragged output is a view of the caller's memory (same pointer);
 *   - errors: a wrong size without exec_dynamic, wrong dtype / ndim / layout name the node, the
 *     output and the sample; next() with nothing fed fails instead of waiting forever; a node
 *     that is not an external source cannot be fed; skip_bad_files is refused at build. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stoker/stoker.h"
#include "case_list.h"
#include "testutil.h"

enum { H = 4, W = 5, C = 3, CROP_H = 2, CROP_W = 3 };
static const double kMean[C] = {10.0, 20.0, 30.0};
static const double kStd[C] = {2.0, 4.0, 5.0};

static uint8_t pixel(int batch, int i, int y, int x, int c) {
  return (uint8_t)((batch * 13 + i * 7 + y * 11 + x * 3 + c * 5) % 256);
}

static size_t host_budget; /* options.host_memory_budget of the next make_pipeline (0: default) */

/* external_source "src" (image HWC uint8 + label int32) -> crop_mirror_normalize "cmn". */
static stk_pipeline *make_pipeline(int batch_size, int dynamic, int prefetch) {
  stk_pipeline_options o;
  stk_pipeline_options_default(&o);
  o.batch_size = batch_size;
  o.num_threads = 2;
  o.pin_threads = 0;
  o.exec_dynamic = dynamic;
  o.prefetch_queue_depth = prefetch;
  o.host_memory_budget = host_budget;
  stk_pipeline *p = NULL;
  CHECK(stk_pipeline_new(&o, &p) == STK_OK);
  stk_args *a = NULL;
  stk_args_new(&a);
  stk_args_set_int(a, "num_outputs", 2);
  const char *dtypes[] = {"uint8", "int32"};
  const char *layouts[] = {"HWC", "C"};
  stk_args_set_string_list(a, "dtype", dtypes, 2);
  stk_args_set_string_list(a, "layout", layouts, 2);
  CHECK_MSG(stk_pipeline_add_op(p, "external_source", "src", NULL, 0, a) == STK_OK, "%s", stk_pipeline_last_error(p));
  stk_args_destroy(a);
  stk_args_new(&a);
  double crop[2] = {CROP_H, CROP_W};
  stk_args_set_float_list(a, "crop", crop, 2);
  stk_args_set_float_list(a, "mean", kMean, C);
  stk_args_set_float_list(a, "std", kStd, C);
  const char *in[] = {"src"};
  CHECK_MSG(stk_pipeline_add_op(p, "crop_mirror_normalize", "cmn", in, 1, a) == STK_OK, "%s",
            stk_pipeline_last_error(p));
  stk_args_destroy(a);
  const char *outs[] = {"cmn", "src[1]"};
  CHECK(stk_pipeline_set_outputs(p, outs, 2) == STK_OK);
  CHECK_MSG(stk_pipeline_build(p) == STK_OK, "%s", stk_pipeline_last_error(p));
  return p;
}

/* Feeds batch number `batch` of `count` samples (images + labels 1000 * batch + i). */
static stk_status feed(stk_pipeline *p, int batch, int count) {
  stk_tensor_view *views = calloc((size_t)count * 2, sizeof *views);
  uint8_t *pixels = malloc((size_t)count * H * W * C);
  int32_t *labels = malloc((size_t)count * sizeof *labels);
  for (int i = 0; i < count; i++) {
    for (int y = 0; y < H; y++)
      for (int x = 0; x < W; x++)
        for (int c = 0; c < C; c++) pixels[(((size_t)i * H + y) * W + x) * C + c] = pixel(batch, i, y, x, c);
    labels[i] = 1000 * batch + i;
    stk_tensor_view *v = &views[i];
    v->data = pixels + (size_t)i * H * W * C;
    v->dtype = STK_DTYPE_UINT8;
    v->ndim = 3;
    v->shape[0] = H, v->shape[1] = W, v->shape[2] = C;
    v->nbytes = H * W * C;
    v = &views[count + i];
    v->data = &labels[i];
    v->dtype = STK_DTYPE_INT32;
    v->ndim = 1;
    v->shape[0] = 1;
    v->nbytes = 4;
  }
  stk_status st = stk_pipeline_feed_input(p, "src", views, count, 0);
  free(views); /* copied: the caller's memory can go at once */
  free(pixels);
  free(labels);
  return st;
}

/* Takes the next batch and checks it is batch number `batch` of `count` samples. */
static void expect_batch(stk_pipeline *p, int batch, int count) {
  stk_batch *b = NULL;
  stk_status st = stk_pipeline_next(p, &b);
  CHECK_MSG(st == STK_OK, "batch %d: %s: %s", batch, stk_status_name(st), stk_pipeline_last_error(p));
  if (st != STK_OK) return;
  CHECK_MSG(stk_batch_size(b) == count, "batch %d: size %d, fed %d", batch, stk_batch_size(b), count);
  stk_tensor_view img, lab;
  CHECK(stk_batch_tensor(b, 0, &img) == STK_OK);
  CHECK(stk_batch_tensor(b, 1, &lab) == STK_OK);
  CHECK(img.shape[0] == count && img.shape[1] == C && img.shape[2] == CROP_H && img.shape[3] == CROP_W);
  CHECK(lab.shape[0] == count);
  int wrong = 0;
  const float *out = img.data;
  const int y0 = (H - CROP_H) / 2, x0 = (W - CROP_W) / 2; /* crop_pos 0.5, even margins */
  for (int i = 0; i < count && img.dtype == STK_DTYPE_FLOAT32; i++) {
    wrong += ((const int32_t *)lab.data)[i] != 1000 * batch + i;
    for (int c = 0; c < C; c++)
      for (int y = 0; y < CROP_H; y++)
        for (int x = 0; x < CROP_W; x++) {
          double want = (pixel(batch, i, y + y0, x + x0, c) - kMean[c]) / kStd[c];
          float got = out[(((size_t)i * C + c) * CROP_H + y) * CROP_W + x];
          wrong += fabs(got - want) > 1e-4;
        }
  }
  CHECK_MSG(wrong == 0, "batch %d: %d values differ from the fed data", batch, wrong);
  stk_batch_release(b);
}

static void dynamic_sizes_come_back_exactly(void) {
  stk_pipeline *p = make_pipeline(256, 1, 2);
  const int sizes[] = {3, 7, 1, 256};
  for (int k = 0; k < 4; k++) CHECK_MSG(feed(p, k, sizes[k]) == STK_OK, "%s", stk_pipeline_last_error(p));
  for (int k = 0; k < 4; k++) expect_batch(p, k, sizes[k]);
  /* the end mark ends the epoch; what is fed after it is the next epoch */
  CHECK(stk_pipeline_feed_end(p, "src") == STK_OK);
  CHECK(feed(p, 50, 5) == STK_OK);
  stk_batch *b = NULL;
  CHECK(stk_pipeline_next(p, &b) == STK_EOF_EPOCH && b == NULL);
  CHECK(stk_pipeline_reset(p) == STK_OK);
  expect_batch(p, 50, 5);
  /* warm-up at the largest size, then varying sizes allocate nothing */
  for (int k = 0; k < 8; k++) {
    CHECK(feed(p, 100 + k, 256) == STK_OK);
    expect_batch(p, 100 + k, 256);
  }
  stk_pipeline_stats before, after;
  stk_pipeline_stats_get(p, &before);
  const int varying[] = {3, 256, 7, 1, 100, 255, 2, 256, 64};
  for (int k = 0; k < 9; k++) {
    CHECK(feed(p, 200 + k, varying[k]) == STK_OK);
    expect_batch(p, 200 + k, varying[k]);
  }
  stk_pipeline_stats_get(p, &after);
  CHECK_MSG(after.allocations == before.allocations, "%llu allocations after warm-up at the largest size",
            (unsigned long long)(after.allocations - before.allocations));
  CHECK(after.images - before.images == 3 + 256 + 7 + 1 + 100 + 255 + 2 + 256 + 64);
  stk_pipeline_destroy(p);
}

static void reset_mid_epoch_drops_the_abandoned_epoch(void) {
  stk_pipeline *p = make_pipeline(4, 0, 1);
  CHECK(feed(p, 1, 4) == STK_OK);
  CHECK(feed(p, 2, 4) == STK_OK);
  CHECK(feed(p, 3, 4) == STK_OK);
  CHECK(stk_pipeline_feed_end(p, "src") == STK_OK);
  CHECK(feed(p, 10, 4) == STK_OK); /* epoch 1 */
  expect_batch(p, 1, 4);
  CHECK(stk_pipeline_reset(p) == STK_OK); /* batches 2 and 3 are dropped, 10 stays */
  expect_batch(p, 10, 4);
  stk_batch *b = NULL;
  stk_status st = stk_pipeline_next(p, &b); /* nothing fed: an error, not a hang */
  CHECK_MSG(st == STK_ESTATE && strstr(stk_pipeline_last_error(p), "src"), "%s: %s", stk_status_name(st),
            stk_pipeline_last_error(p));
  CHECK(feed(p, 11, 4) == STK_OK);
  expect_batch(p, 11, 4);
  stk_pipeline_destroy(p);
}

static void bad_input_names_the_source_and_sample(void) {
  stk_pipeline *p = make_pipeline(8, 0, 2);
  CHECK(feed(p, 0, 7) == STK_EINVAL);
  CHECK_MSG(strstr(stk_pipeline_last_error(p), "src") && strstr(stk_pipeline_last_error(p), "exec_dynamic"), "%s",
            stk_pipeline_last_error(p));
  uint8_t px[8][H * W * C] = {{0}};
  float fl[H * W * C] = {0};
  int32_t labels[8] = {0};
  stk_tensor_view v[16];
  memset(v, 0, sizeof v);
  for (int i = 0; i < 8; i++) {
    v[i] =
        (stk_tensor_view){.data = px[i], .dtype = STK_DTYPE_UINT8, .ndim = 3, .shape = {H, W, C}, .nbytes = H * W * C};
    v[8 + i] = (stk_tensor_view){.data = &labels[i], .dtype = STK_DTYPE_INT32, .ndim = 1, .shape = {1}, .nbytes = 4};
  }
  v[5] = (stk_tensor_view){.data = fl, .dtype = STK_DTYPE_FLOAT32, .ndim = 3, .shape = {H, W, C}, .nbytes = sizeof fl};
  CHECK(stk_pipeline_feed_input(p, "src", v, 8, 0) == STK_EINVAL);
  const char *e = stk_pipeline_last_error(p);
  CHECK_MSG(strstr(e, "src") && strstr(e, "sample 5 of output 0") && strstr(e, "dtype"), "%s", e);
  v[5] = v[4];
  v[8 + 2].ndim = 2;
  v[8 + 2].shape[1] = 1;
  CHECK(stk_pipeline_feed_input(p, "src", v, 8, 0) == STK_EINVAL);
  e = stk_pipeline_last_error(p);
  CHECK_MSG(strstr(e, "sample 2 of output 1"), "%s", e);
  v[8 + 2] = v[8 + 3];
  snprintf(v[6].layout, sizeof v[6].layout, "CHW");
  CHECK(stk_pipeline_feed_input(p, "src", v, 8, 0) == STK_EINVAL);
  e = stk_pipeline_last_error(p);
  CHECK_MSG(strstr(e, "sample 6 of output 0") && strstr(e, "layout"), "%s", e);
  v[6].layout[0] = '\0';
  CHECK(stk_pipeline_feed_input(p, "cmn", v, 8, 0) == STK_EINVAL);
  CHECK(stk_pipeline_feed_input(p, "nope", v, 8, 0) == STK_ENOENT);
  CHECK_MSG(stk_pipeline_feed_input(p, "src", v, 8, 0) == STK_OK, "%s", stk_pipeline_last_error(p));
  stk_batch *b = NULL;
  CHECK(stk_pipeline_next(p, &b) == STK_OK && stk_batch_size(b) == 8);
  stk_batch_release(b);
  stk_pipeline_destroy(p);
}

/* A ragged output of a no_copy source is the caller's memory itself. */
static void no_copy_borrows(void) {
  stk_pipeline_options o;
  stk_pipeline_options_default(&o);
  o.batch_size = 3;
  o.num_threads = 1;
  o.pin_threads = 0;
  stk_pipeline *p = NULL;
  CHECK(stk_pipeline_new(&o, &p) == STK_OK);
  stk_args *a = NULL;
  stk_args_new(&a);
  stk_args_set_bool(a, "no_copy", 1);
  CHECK(stk_pipeline_add_op(p, "external_source", "src", NULL, 0, a) == STK_OK);
  stk_args_destroy(a);
  const char *outs[] = {"src"};
  CHECK(stk_pipeline_set_outputs(p, outs, 1) == STK_OK);
  CHECK_MSG(stk_pipeline_build(p) == STK_OK, "%s", stk_pipeline_last_error(p));
  for (int round = 0; round < 3; round++) {
    int64_t data[3][4];
    stk_tensor_view v[3];
    memset(v, 0, sizeof v);
    for (int i = 0; i < 3; i++) {
      for (int k = 0; k < 4; k++) data[i][k] = round * 100 + i * 10 + k;
      v[i] = (stk_tensor_view){
          .data = data[i], .dtype = STK_DTYPE_INT64, .ndim = 1, .shape = {i + 2}, .nbytes = (size_t)(i + 2) * 8};
    }
    CHECK(stk_pipeline_feed_input(p, "src", v, 3, 0) == STK_OK);
    stk_batch *b = NULL;
    CHECK_MSG(stk_pipeline_next(p, &b) == STK_OK, "%s", stk_pipeline_last_error(p));
    for (int i = 0; b && i < 3; i++) {
      stk_tensor_view s;
      CHECK(stk_batch_sample(b, 0, i, &s) == STK_OK);
      CHECK(s.data == (void *)data[i] && s.shape[0] == i + 2);
      CHECK(((const int64_t *)s.data)[i + 1] == round * 100 + i * 10 + i + 1);
    }
    stk_batch_release(b); /* data may go now */
  }
  stk_pipeline_destroy(p);
}

/* skip_bad_files replaces bad samples from the reader's later ones: not from fed batches. */
static void skip_bad_files_is_refused(void) {
  stk_pipeline_options o;
  stk_pipeline_options_default(&o);
  o.batch_size = 2;
  o.num_threads = 1;
  o.pin_threads = 0;
  o.skip_bad_files = 1;
  stk_pipeline *p = NULL;
  CHECK(stk_pipeline_new(&o, &p) == STK_OK);
  CHECK(stk_pipeline_add_op(p, "external_source", "src", NULL, 0, NULL) == STK_OK);
  const char *outs[] = {"src"};
  CHECK(stk_pipeline_set_outputs(p, outs, 1) == STK_OK);
  CHECK(stk_pipeline_build(p) == STK_EINVAL);
  CHECK_MSG(strstr(stk_pipeline_last_error(p), "skip_bad_files"), "%s", stk_pipeline_last_error(p));
  stk_pipeline_destroy(p);
}

/* A sample that declares 3 GiB under a 64 MiB budget is refused by its declared size before a byte
 * is copied (it was copied twice, 6.2 GB of RSS, before the budget refused it): the view points
 * at 64 real bytes, so a copy would crash the test. A shape that its nbytes do not back is refused
 * before anything is allocated from it. */
static void oversized_feed_refused_before_copying(void) {
  host_budget = (size_t)64 << 20;
  stk_pipeline *p = make_pipeline(2, 1, 1);
  host_budget = 0;
  static uint8_t small[64];
  static int32_t labels[2];
  stk_tensor_view v[4];
  memset(v, 0, sizeof v);
  v[0] = (stk_tensor_view){.data = small, .dtype = STK_DTYPE_UINT8, .ndim = 3, .shape = {32768, 32768, 3},
                           .nbytes = (size_t)32768 * 32768 * 3};
  v[1] = (stk_tensor_view){.data = small, .dtype = STK_DTYPE_UINT8, .ndim = 3, .shape = {4, 4, 3}, .nbytes = 48};
  v[2] = (stk_tensor_view){.data = &labels[0], .dtype = STK_DTYPE_INT32, .ndim = 1, .shape = {1}, .nbytes = 4};
  v[3] = (stk_tensor_view){.data = &labels[1], .dtype = STK_DTYPE_INT32, .ndim = 1, .shape = {1}, .nbytes = 4};
  CHECK(stk_pipeline_feed_input(p, "src", v, 2, 0) == STK_ERANGE);
  const char *e = stk_pipeline_last_error(p);
  CHECK_MSG(strstr(e, "src") && strstr(e, "host memory budget") && strstr(e, "sample 0 of output 0"), "%s", e);
  v[0].nbytes = 48; /* the shape still says 3 GiB */
  CHECK(stk_pipeline_feed_input(p, "src", v, 2, 0) == STK_EINVAL);
  e = stk_pipeline_last_error(p);
  CHECK_MSG(strstr(e, "sample 0 of output 0") && strstr(e, "byte size"), "%s", e);
  v[0] = v[1];
  CHECK_MSG(stk_pipeline_feed_input(p, "src", v, 2, 0) == STK_OK, "%s", stk_pipeline_last_error(p));
  stk_batch *b = NULL;
  CHECK(stk_pipeline_next(p, &b) == STK_OK && stk_batch_size(b) == 2);
  stk_batch_release(b);
  stk_pipeline_destroy(p);
}

/* one STK_TEST_CASE per line: tests/CMakeLists.txt reads them */
// clang-format off
static const stk_test_case cases[] = {
    STK_TEST_CASE(dynamic_sizes_come_back_exactly),
    STK_TEST_CASE(reset_mid_epoch_drops_the_abandoned_epoch),
    STK_TEST_CASE(bad_input_names_the_source_and_sample),
    STK_TEST_CASE(no_copy_borrows),
    STK_TEST_CASE(skip_bad_files_is_refused),
    STK_TEST_CASE(oversized_feed_refused_before_copying),
};
// clang-format on

int main(int argc, char **argv) {
  if (stk_test_list_cases(cases, STK_TEST_COUNT(cases), argc, argv)) return 0;
  return stk_test_run_cases("test_external_source", cases, STK_TEST_COUNT(cases), argc, argv);
}
