/* tests/test_pipeline.c: the engine end to end with test-only operators (tests/pipeline_fake_ops.h):
 * dense and ragged outputs, argument inputs, epochs and reset, reader metadata, stats (zero
 * allocations after warm-up), error propagation naming file/operator/sample, skip_bad_files,
 * DLPack export, destroy mid-epoch with batches held and in flight. Run under TSan by `make tsan`. */
#include <time.h>

#include "pipeline_fake_ops.h"
#include "stoker/dlpack.h"
#include "case_list.h"
#include "testutil.h"

static stk_pipeline_options options(int batch, int threads, int prefetch) {
  stk_pipeline_options o;
  stk_pipeline_options_default(&o);
  o.batch_size = batch;
  o.num_threads = threads;
  o.prefetch_queue_depth = prefetch;
  o.seed = 1234;
  return o;
}

static void test_epochs_and_values(void) {
  stk_pipeline_options o = options(4, 3, 2);
  stk_pipeline *p = NULL;
  CHECK(fake_pipeline(&o, 10, 0, NULL, 0, 0, &p) == STK_OK);
  if (!p) return;
  stk_reader_meta meta;
  CHECK(stk_pipeline_reader_meta(p, NULL, &meta) == STK_OK && meta.epoch_size == 10);
  CHECK(stk_pipeline_reader_meta(p, "fill", &meta) == STK_ENOENT);
  for (int epoch = 0; epoch < 3; epoch++) {
    int batches = 0;
    for (;;) {
      stk_batch *b = NULL;
      stk_status st = stk_pipeline_next(p, &b);
      if (st == STK_EOF_EPOCH) break;
      CHECK_MSG(st == STK_OK, "%s", stk_pipeline_last_error(p));
      if (st != STK_OK) break;
      CHECK(stk_batch_num_outputs(b) == 2 && stk_batch_size(b) == 4 && stk_batch_epoch(b) == epoch);
      CHECK(stk_batch_valid_samples(b) == (batches == 2 ? 2 : 4));
      stk_tensor_view v, labels;
      CHECK(stk_batch_tensor(b, 0, &v) == STK_OK);
      CHECK(v.dense && v.ndim == 3 && v.shape[0] == 4 && v.shape[1] == 3 && v.shape[2] == 3);
      CHECK_STR(v.layout, "NHW");
      CHECK(v.dtype == STK_DTYPE_FLOAT32 && v.nbytes == 4 * 9 * 4 && v.device_type == STK_DEVICE_CPU);
      CHECK(stk_batch_tensor(b, 1, &labels) == STK_OK && labels.shape[0] == 4 && labels.shape[1] == 1);
      for (int s = 0; s < 4; s++) {
        int64_t id = (batches * 4 + s) % 10;
        const float *x = (const float *)v.data + s * 9;
        int32_t label = ((const int32_t *)labels.data)[s];
        CHECK(label == id % 3);
        /* value = id + 1000*u + coin, so floor(x - id) in [0, 1001) */
        CHECK(x[0] >= id && x[0] < id + 1001.0f);
        stk_tensor_view sv;
        CHECK(stk_batch_sample(b, 0, s, &sv) == STK_OK && sv.data == (const void *)x && sv.ndim == 2);
      }
      CHECK(stk_batch_sample(b, 0, 4, &v) == STK_EINVAL);
      stk_batch_release(b);
      batches++;
    }
    CHECK_MSG(batches == 3, "epoch %d had %d batches", epoch, batches);
    stk_batch *b = NULL;
    CHECK(stk_pipeline_next(p, &b) == STK_EOF_EPOCH && b == NULL); /* stays at EOF until reset */
    CHECK(stk_pipeline_reset(p) == STK_OK);
  }
  /* resets at the epoch's end keep the prefetch: nothing discarded */
  stk_pipeline_stats stats;
  CHECK(stk_pipeline_stats_get(p, &stats) == STK_OK && stats.batches_discarded == 0);
  /* reset mid-epoch discards what is in flight and starts the next epoch at its first batch */
  stk_batch *b = NULL;
  CHECK(stk_pipeline_next(p, &b) == STK_OK);
  stk_batch_release(b);
  struct timespec settle = {0, 100000000}; /* the scheduler plans the epoch's next batches meanwhile */
  nanosleep(&settle, NULL);
  CHECK(stk_pipeline_reset(p) == STK_OK);
  CHECK(stk_pipeline_stats_get(p, &stats) == STK_OK);
  CHECK_MSG(stats.batches_discarded >= 1, "%llu batches discarded by a mid-epoch reset",
            (unsigned long long)stats.batches_discarded);
  CHECK(stk_pipeline_next(p, &b) == STK_OK && b && stk_batch_epoch(b) == 4);
  if (b) {
    stk_tensor_view labels;
    CHECK(stk_batch_tensor(b, 1, &labels) == STK_OK && ((const int32_t *)labels.data)[1] == 1);
  }
  stk_batch_release(b);
  CHECK(stk_pipeline_stats_get(p, &stats) == STK_OK);
  CHECK(stats.batches == 11 && stats.images == 3 * 10 + 8);
  CHECK(stats.num_nodes == 3 && stats.num_threads == 3);
  CHECK(stats.bytes_read > 0);
  CHECK_STR(stk_pipeline_node_name(p, 2), "fill");
  CHECK(stk_pipeline_node_name(p, 3) == NULL);
  stk_pipeline_destroy(p);
}

/* Hash of a batch's two outputs (values and labels); 0 when there is no batch. */
static uint64_t batch_hash(stk_batch *b) {
  uint64_t h = 1469598103934665603ull;
  for (int o = 0; b && o < 2; o++) {
    stk_tensor_view v;
    if (stk_batch_tensor(b, o, &v) != STK_OK) return 0;
    h = fnv1a(h, v.data, v.nbytes);
  }
  return b ? h : 0;
}

/* One epoch's batches (at most 4) hashed into h[]; returns how many came before STK_EOF_EPOCH. */
static int epoch_hashes(stk_pipeline *p, uint64_t expect_epoch, uint64_t *h) {
  int n = 0;
  for (;;) {
    stk_batch *b = NULL;
    stk_status st = stk_pipeline_next(p, &b);
    if (st != STK_OK) {
      CHECK_MSG(st == STK_EOF_EPOCH, "%s", stk_pipeline_last_error(p));
      return n;
    }
    stk_tensor_view labels;
    CHECK(stk_batch_epoch(b) == (int64_t)expect_epoch);
    CHECK(stk_batch_tensor(b, 1, &labels) == STK_OK && ((const int32_t *)labels.data)[0] == (4 * n) % 3); /* in order */
    if (n < 4) h[n] = batch_hash(b);
    n++;
    stk_batch_release(b);
  }
}

/* The scheduler plans into the next epoch before the consumer resets, so the queue does not drain
 * at the boundary; the prefetched batches are the same as an epoch started by a mid-epoch reset,
 * and a mid-epoch reset after the scheduler moved on still starts the next epoch at its start. */
static void test_prefetch_across_epochs(void) {
  stk_pipeline_options o = options(4, 2, 2);
  stk_pipeline *a = NULL, *c = NULL;
  CHECK(fake_pipeline(&o, 8, 0, NULL, 0, 0, &a) == STK_OK); /* 2 batches per epoch */
  if (!a) return;
  uint64_t h0[4] = {0}, ha[4] = {0}, hc[4] = {0};
  const uint64_t base = __atomic_load_n(&fake_fill_runs[1], __ATOMIC_RELAXED); /* earlier tests' */
  CHECK(epoch_hashes(a, 0, h0) == 2);
  /* Without a reset, epoch 1's two batches (the prefetch depth) are made. */
  for (int i = 0; i < 2000 && __atomic_load_n(&fake_fill_runs[1], __ATOMIC_RELAXED) - base < 8; i++) {
    struct timespec ts = {0, 5000000};
    nanosleep(&ts, NULL);
  }
  CHECK_MSG(__atomic_load_n(&fake_fill_runs[1], __ATOMIC_RELAXED) - base == 8,
            "%llu samples of epoch 1 before the reset",
            (unsigned long long)(__atomic_load_n(&fake_fill_runs[1], __ATOMIC_RELAXED) - base));
  stk_reader_meta meta;
  CHECK(stk_pipeline_reader_meta(a, NULL, &meta) == STK_OK && meta.epoch_size == 8);
  CHECK(stk_pipeline_reset(a) == STK_OK);
  CHECK(epoch_hashes(a, 1, ha) == 2);
  CHECK(__atomic_load_n(&fake_fill_runs[1], __ATOMIC_RELAXED) - base == 8); /* delivered, not made again */
  CHECK(ha[0] != h0[0] && ha[1] != h0[1]);                                  /* epoch 1's own random values */
  CHECK(stk_pipeline_reset(a) == STK_OK);
  CHECK(epoch_hashes(a, 2, hc) == 2);
  stk_pipeline_destroy(a);

  /* A mid-epoch reset once epoch 1 is being prefetched: epoch 1 again from its first batch. */
  CHECK(fake_pipeline(&o, 8, 0, NULL, 0, 0, &c) == STK_OK);
  if (!c) return;
  stk_batch *b = NULL;
  CHECK(stk_pipeline_next(c, &b) == STK_OK && stk_batch_epoch(b) == 0);
  stk_batch_release(b);
  for (int i = 0; i < 2000 && __atomic_load_n(&fake_fill_runs[1], __ATOMIC_RELAXED) - base < 12; i++) {
    struct timespec ts = {0, 5000000};
    nanosleep(&ts, NULL);
  }
  CHECK(stk_pipeline_reset(c) == STK_OK);
  memset(hc, 0, sizeof hc);
  CHECK(epoch_hashes(c, 1, hc) == 2);
  CHECK(hc[0] == ha[0] && hc[1] == ha[1]);
  stk_pipeline_destroy(c);
}

/* prefetch_queue_depth 0 (the default) is decided at build: 2 without a prepare stage (no mixed
 * decoder here); a depth given is kept; a negative one is refused. */
static void test_default_prefetch_depth(void) {
  stk_pipeline_options o;
  stk_pipeline_options_default(&o);
  CHECK(o.prefetch_queue_depth == 0);
  o.batch_size = 4;
  o.num_threads = 2;
  for (int given = 0; given <= 3; given += 3) {
    o.prefetch_queue_depth = given;
    stk_pipeline *p = NULL;
    CHECK(fake_pipeline(&o, 8, 0, NULL, 0, 0, &p) == STK_OK);
    if (!p) return;
    stk_pipeline_stats st;
    CHECK(stk_pipeline_stats_get(p, &st) == STK_OK);
    CHECK_MSG(st.prefetch_queue_depth == (given ? given : 2), "given %d, resolved %d", given, st.prefetch_queue_depth);
    stk_pipeline_destroy(p);
  }
  o.prefetch_queue_depth = -1;
  stk_pipeline *bad = NULL;
  CHECK(stk_pipeline_new(&o, &bad) == STK_EINVAL && bad == NULL);
}

static void test_no_allocations_after_warmup(void) {
  stk_pipeline_options o = options(8, 4, 2);
  stk_pipeline *p = NULL;
  CHECK(fake_pipeline(&o, 1000, 0, NULL, 0, 0, &p) == STK_OK);
  if (!p) return;
  stk_pipeline_stats stats;
  uint64_t at20 = 0;
  for (int i = 0; i < 60; i++) {
    stk_batch *b;
    CHECK(stk_pipeline_next(p, &b) == STK_OK);
    stk_batch_release(b);
    if (i == 19) {
      CHECK(stk_pipeline_stats_get(p, &stats) == STK_OK);
      at20 = stats.allocations;
    }
  }
  CHECK(stk_pipeline_stats_get(p, &stats) == STK_OK);
  CHECK(stats.allocations > 0);
  /* Flat once every slot and every worker's scratch has been used (a worker that got no sample
   * during the first batches allocates its scratch once later: at most one per worker). */
  CHECK_MSG(stats.allocations - at20 <= 4, "%llu allocations between batch 20 and 60",
            (unsigned long long)(stats.allocations - at20));
  CHECK_MSG(stats.allocations_after_warmup <= 4, "%llu allocations after warm-up",
            (unsigned long long)stats.allocations_after_warmup);
  stk_pipeline_destroy(p);
}

static void test_ragged(void) {
  stk_pipeline_options o = options(3, 2, 1);
  stk_pipeline *p = NULL;
  CHECK(fake_pipeline(&o, 6, 1, NULL, 0, 0, &p) == STK_OK);
  if (!p) return;
  stk_batch *b;
  CHECK(stk_pipeline_next(p, &b) == STK_OK);
  stk_tensor_view v;
  CHECK(stk_batch_tensor(b, 0, &v) == STK_ESTATE);
  for (int s = 0; s < 3; s++) {
    CHECK(stk_batch_sample(b, 0, s, &v) == STK_OK && v.ndim == 2 && v.shape[0] == 1 + s % 3 && !v.dense);
  }
  CHECK(stk_batch_tensor(b, 1, &v) == STK_OK); /* labels still dense */
  DLManagedTensor *dl = NULL;
  CHECK(stk_batch_to_dlpack(b, 0, &dl) == STK_ESTATE && dl == NULL);
  stk_batch_release(b);
  stk_pipeline_destroy(p);
}

static void test_errors_propagate(void) {
  stk_pipeline_options o = options(4, 2, 2);
  stk_pipeline *p = NULL;
  int64_t bad[1] = {5};
  CHECK(fake_pipeline(&o, 12, 0, bad, 1, 0, &p) == STK_OK);
  if (!p) return;
  stk_batch *b;
  CHECK(stk_pipeline_next(p, &b) == STK_OK);
  stk_batch_release(b);
  CHECK(stk_pipeline_next(p, &b) == STK_EBADIMAGE && b == NULL);
  const char *e = stk_pipeline_last_error(p);
  CHECK_MSG(strstr(e, "dir/file_5.jpg") && strstr(e, "reader") && strstr(e, "test.reader") && strstr(e, "sample 1") &&
                strstr(e, "cannot decode"),
            "%s", e);
  CHECK(stk_pipeline_next(p, &b) == STK_OK); /* the next batch is fine */
  stk_batch_release(b);
  stk_pipeline_destroy(p);
}

static void test_skip_bad_files(void) {
  stk_pipeline_options o = options(4, 2, 2);
  stk_pipeline *p = NULL;
  int64_t bad[2] = {1, 6};
  const uint64_t base = __atomic_load_n(&fake_fill_runs[1], __ATOMIC_RELAXED); /* earlier tests' */
  CHECK(fake_pipeline(&o, 8, 0, bad, 2, 1, &p) == STK_OK);
  if (!p) return;
  for (int i = 0; i < 2; i++) {
    stk_batch *b;
    CHECK_MSG(stk_pipeline_next(p, &b) == STK_OK, "%s", stk_pipeline_last_error(p));
    if (!b) continue;
    stk_tensor_view v, labels;
    CHECK(stk_batch_tensor(b, 0, &v) == STK_OK && stk_batch_tensor(b, 1, &labels) == STK_OK);
    const float *x = v.data;
    const int32_t *l = labels.data;
    /* Refill (docs/pipeline.md): a bad sample takes the next good one of the epoch; here the
     * epoch has none left (both batches were planned: prefetch 2), so each batch keeps its 3 good
     * samples first and its 4th is a fill copy of its first. tests/test_refill.c has the rest. */
    CHECK_MSG(stk_batch_valid_samples(b) == 3, "valid %d", stk_batch_valid_samples(b));
    const int32_t want[2][3] = {{0, 2, 0}, {1, 2, 1}}; /* labels: id % 3 of 0,2,3 and 4,5,7 */
    for (int s = 0; s < 3; s++) CHECK_MSG(l[s] == want[i][s], "batch %d sample %d label %d", i, s, l[s]);
    CHECK(memcmp(x + 3 * 9, x, 9 * sizeof(float)) == 0 && l[3] == l[0]);
    stk_batch_release(b);
  }
  /* Epoch 1 (the same two bad files) is prefetched meanwhile: stats count delivered batches only. */
  for (int i = 0; i < 2000 && __atomic_load_n(&fake_fill_runs[1], __ATOMIC_RELAXED) - base < 6; i++) {
    struct timespec ts = {0, 5000000};
    nanosleep(&ts, NULL);
  }
  CHECK(__atomic_load_n(&fake_fill_runs[1], __ATOMIC_RELAXED) - base == 6);
  stk_pipeline_stats stats;
  stk_pipeline_stats_get(p, &stats);
  CHECK_MSG(stats.skipped_files == 2, "skipped %llu", (unsigned long long)stats.skipped_files);
  char *names = NULL;
  CHECK(stk_pipeline_skipped_files(p, &names) == STK_OK);
  /* the quarantine record: each bad file once, in the order the consumer met them */
  CHECK_MSG(names && strlen(names) == 30 && strstr(names, "dir/file_1.jpg\n") && strstr(names, "dir/file_6.jpg\n"),
            "%s", names ? names : "");
  free(names); /* stk_free is free() */
  stk_pipeline_destroy(p);
}

static void test_shutdown_mid_epoch(void) {
  for (int round = 0; round < 5; round++) {
    stk_pipeline_options o = options(16, 4, 3);
    stk_pipeline *p = NULL;
    CHECK(fake_pipeline(&o, 100000, 0, NULL, 0, 0, &p) == STK_OK);
    if (!p) return;
    stk_batch *held = NULL, *held2 = NULL;
    if (round > 0) CHECK(stk_pipeline_next(p, &held) == STK_OK);
    if (round > 1) CHECK(stk_pipeline_next(p, &held2) == STK_OK);
    DLManagedTensor *dl = NULL;
    if (held) CHECK(stk_batch_to_dlpack(held, 0, &dl) == STK_OK);
    stk_pipeline_destroy(p); /* batches in flight dropped; held ones stay valid */
    if (held) {
      stk_tensor_view v;
      CHECK(stk_batch_tensor(held, 0, &v) == STK_OK);
      volatile float sum = 0;
      for (size_t i = 0; i < v.nbytes / 4; i++) sum += ((const float *)v.data)[i];
      CHECK(dl && dl->dl_tensor.ndim == 3 && dl->dl_tensor.shape[0] == 16 && dl->dl_tensor.dtype.code == kDLFloat &&
            dl->dl_tensor.data == v.data);
      stk_batch_release(held);
      if (dl) dl->deleter(dl); /* last reference frees the orphaned batch */
    }
    stk_batch_release(held2);
  }
  /* Destroy without build, and right after build. */
  stk_pipeline *p = NULL;
  CHECK(stk_pipeline_new(NULL, &p) == STK_OK);
  stk_pipeline_destroy(p);
  stk_pipeline_destroy(NULL);
}

static void test_many_held_batches(void) {
  /* The consumer holds more batches than there are slots: the pipeline makes more, no deadlock. */
  stk_pipeline_options o = options(2, 2, 1);
  stk_pipeline *p = NULL;
  CHECK(fake_pipeline(&o, 40, 0, NULL, 0, 0, &p) == STK_OK);
  if (!p) return;
  stk_batch *b[6] = {0};
  for (int i = 0; i < 6; i++) CHECK(stk_pipeline_next(p, &b[i]) == STK_OK);
  for (int i = 0; i < 6; i++) {
    stk_tensor_view v;
    CHECK(b[i] && stk_batch_tensor(b[i], 1, &v) == STK_OK && ((const int32_t *)v.data)[0] == (2 * i) % 3);
  }
  for (int i = 0; i < 6; i++) stk_batch_release(b[i]);
  stk_pipeline_destroy(p);
}

/* one STK_TEST_CASE per line: tests/CMakeLists.txt reads them */
// clang-format off
static const stk_test_case cases[] = {
    STK_TEST_CASE(test_epochs_and_values),
    STK_TEST_CASE(test_prefetch_across_epochs),
    STK_TEST_CASE(test_default_prefetch_depth),
    STK_TEST_CASE(test_no_allocations_after_warmup),
    STK_TEST_CASE(test_ragged),
    STK_TEST_CASE(test_errors_propagate),
    STK_TEST_CASE(test_skip_bad_files),
    STK_TEST_CASE(test_shutdown_mid_epoch),
    STK_TEST_CASE(test_many_held_batches),
};
// clang-format on

int main(int argc, char **argv) {
  if (stk_test_list_cases(cases, STK_TEST_COUNT(cases), argc, argv)) return 0;
  fake_ops_register();
  return stk_test_run_cases("test_pipeline", cases, STK_TEST_COUNT(cases), argc, argv);
}
