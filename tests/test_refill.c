/* tests/test_refill.c: skip_bad_files refills a batch from the reader (docs/pipeline.md, "Bad
 * samples"): a bad sample is replaced by the next good sample of the epoch's order, so every batch
 * holds distinct good samples, each good sample appears once per epoch, and runs of bad samples
 * (at an epoch's start, middle and end, a whole batch of them, or most of the data set) only cost
 * time. Also: the same bytes with 1 and 4 worker threads, the quarantine record (each bad file once
 * per run, with its reason; stats.skipped_files = distinct bad files) and its JSON lines, names
 * with a newline, a quote and a non-UTF-8 byte escaped. Uses the fake reader of
 * tests/pipeline_fake_ops.h (bad_ids). Run under TSan by `make tsan`. */
#include <unistd.h>

#include "pipeline_fake_ops.h"
#include "testutil.h"

static stk_pipeline_options options(int batch, int threads, int prefetch) {
  stk_pipeline_options o;
  stk_pipeline_options_default(&o);
  o.batch_size = batch;
  o.num_threads = threads;
  o.prefetch_queue_depth = prefetch;
  o.seed = 99;
  o.skip_bad_files = 1;
  return o;
}

/* reader -> fill; outputs: reader[0] (4 bytes: the sample id), fill (float [3,3]), reader[1]. */
static stk_pipeline *refill_pipeline(const stk_pipeline_options *o, int num_samples, const int64_t *bad, size_t nbad,
                                     int odd_names) {
  stk_pipeline *p = NULL;
  if (stk_pipeline_new(o, &p) != STK_OK) return NULL;
  stk_args *ra, *fa;
  stk_args_new(&ra);
  stk_args_new(&fa);
  stk_args_set_int(ra, "num_samples", num_samples);
  if (nbad) stk_args_set_int_list(ra, "bad_ids", bad, nbad);
  stk_args_set_bool(ra, "odd_names", odd_names);
  const char *fin[1] = {"reader"};
  const char *outs[3] = {"reader[0]", "fill", "reader[1]"};
  stk_status st = stk_pipeline_add_op(p, "test.reader", "reader", NULL, 0, ra);
  if (st == STK_OK) st = stk_pipeline_add_op(p, "test.fill", "fill", fin, 1, fa);
  if (st == STK_OK) st = stk_pipeline_set_outputs(p, outs, 3);
  if (st == STK_OK) st = stk_pipeline_build(p);
  stk_args_destroy(ra);
  stk_args_destroy(fa);
  if (st != STK_OK) {
    fprintf(stderr, "refill_pipeline: %s: %s\n", stk_status_name(st), stk_pipeline_last_error(p));
    stk_pipeline_destroy(p);
    return NULL;
  }
  return p;
}

static int is_bad(int64_t id, const int64_t *bad, size_t nbad) {
  for (size_t i = 0; i < nbad; i++)
    if (bad[i] == id) return 1;
  return 0;
}

static int g_first_epoch; /* the epoch run_epochs starts at */

/* Runs `epochs` epochs; checks each epoch holds every good id exactly once (valid samples first,
 * fill samples after them copying valid ones), no bad id, and full batches but for the epoch's
 * last P + 1. Returns a hash of every byte delivered. */
static uint64_t run_epochs(stk_pipeline *p, int epochs, int num_samples, const int64_t *bad, size_t nbad, int batch,
                           int *batches_out) {
  uint64_t h = 1469598103934665603ull;
  int64_t good = 0;
  for (int64_t i = 0; i < num_samples; i++) good += !is_bad(i, bad, nbad);
  char *seen = calloc((size_t)num_samples, 1);
  for (int e = 0; e < epochs; e++) {
    memset(seen, 0, (size_t)num_samples);
    int64_t delivered = 0;
    int batches = 0;
    for (;;) {
      stk_batch *b = NULL;
      stk_status st = stk_pipeline_next(p, &b);
      if (st == STK_EOF_EPOCH) break;
      CHECK_MSG(st == STK_OK, "epoch %d batch %d: %s", e, batches, stk_pipeline_last_error(p));
      if (st != STK_OK) break;
      stk_tensor_view ids, x;
      CHECK(stk_batch_tensor(b, 0, &ids) == STK_OK && stk_batch_tensor(b, 1, &x) == STK_OK);
      CHECK(stk_batch_size(b) == batch && stk_batch_epoch(b) == g_first_epoch + e);
      int valid = stk_batch_valid_samples(b);
      CHECK_MSG(valid >= 1 && valid <= batch, "valid %d", valid);
      for (int s = 0; s < batch; s++) {
        uint32_t id;
        memcpy(&id, (const char *)ids.data + 4 * s, 4);
        CHECK_MSG(id < (uint32_t)num_samples && !is_bad(id, bad, nbad), "epoch %d batch %d sample %d: id %u", e,
                  batches, s, id);
        if (id >= (uint32_t)num_samples) continue;
        if (s < valid) {
          CHECK_MSG(!seen[id], "epoch %d: id %u delivered twice", e, id);
          seen[id] = 1;
          delivered++;
        } else {
          CHECK_MSG(seen[id], "epoch %d: fill sample %d (id %u) is not a valid sample of the epoch", e, s, id);
        }
      }
      h = fnv1a(h, ids.data, ids.nbytes);
      h = fnv1a(h, x.data, x.nbytes);
      stk_batch_release(b);
      batches++;
    }
    CHECK_MSG(delivered == good, "epoch %d: %lld distinct good samples, want %lld", e, (long long)delivered,
              (long long)good);
    if (batches_out) *batches_out = batches;
    CHECK(stk_pipeline_reset(p) == STK_OK);
  }
  free(seen);
  return h;
}

/* Bad runs at the start (a whole first batch and more), in the middle, and at the end. */
static int64_t runs_bad[64];
static size_t runs_nbad;
static void make_runs(void) {
  runs_nbad = 0;
  for (int64_t i = 0; i < 6; i++) runs_bad[runs_nbad++] = i;
  for (int64_t i = 17; i < 22; i++) runs_bad[runs_nbad++] = i;
  for (int64_t i = 34; i < 40; i++) runs_bad[runs_nbad++] = i;
}

static void test_runs_and_threads(void) {
  make_runs();
  uint64_t hash[2] = {0, 0};
  int threads[2] = {1, 4};
  for (int t = 0; t < 2; t++) {
    for (int prefetch = 1; prefetch <= 3; prefetch += 2) {
      stk_pipeline_options o = options(4, threads[t], prefetch);
      stk_pipeline *p = refill_pipeline(&o, 40, runs_bad, runs_nbad, 0);
      CHECK(p != NULL);
      if (!p) return;
      int batches = 0;
      uint64_t h = run_epochs(p, 3, 40, runs_bad, runs_nbad, 4, &batches);
      CHECK_MSG(batches >= 6 && batches <= 6 + prefetch, "%d batches for 23 good samples", batches);
      if (prefetch == 3) hash[t] = h;
      stk_pipeline_stats stats;
      CHECK(stk_pipeline_stats_get(p, &stats) == STK_OK);
      CHECK_MSG(stats.skipped_files == runs_nbad, "skipped %llu, want %zu distinct bad files",
                (unsigned long long)stats.skipped_files, runs_nbad);
      char *names = NULL;
      CHECK(stk_pipeline_skipped_files(p, &names) == STK_OK && names);
      int lines = 0;
      for (const char *c = names; c && *c; c++) lines += *c == '\n';
      CHECK_MSG(lines == (int)runs_nbad, "%d names: %s", lines, names ? names : "");
      CHECK(names && strstr(names, "dir/file_0.jpg\n") && strstr(names, "dir/file_39.jpg\n"));
      free(names);
      stk_pipeline_destroy(p);
    }
  }
  CHECK_MSG(hash[0] == hash[1], "1 thread %016llx != 4 threads %016llx", (unsigned long long)hash[0],
            (unsigned long long)hash[1]);
}

/* 10 good then 300 bad: 10 distinct samples an epoch, not 310; 300 good then 600 bad: the run goes
 * on past the bad tail into the next epochs. */
static void test_mostly_bad(void) {
  static int64_t bad[600];
  for (int64_t i = 0; i < 300; i++) bad[i] = 10 + i;
  stk_pipeline_options o = options(4, 2, 2);
  stk_pipeline *p = refill_pipeline(&o, 310, bad, 300, 0);
  CHECK(p != NULL);
  if (p) {
    int batches = 0;
    run_epochs(p, 2, 310, bad, 300, 4, &batches);
    CHECK_MSG(batches == 3, "%d batches for 10 good samples", batches);
    stk_pipeline_stats stats;
    stk_pipeline_stats_get(p, &stats);
    CHECK_MSG(stats.skipped_files == 300 && stats.images == 20, "skipped %llu images %llu",
              (unsigned long long)stats.skipped_files, (unsigned long long)stats.images);
    stk_pipeline_destroy(p);
  }
  for (int64_t i = 0; i < 600; i++) bad[i] = 300 + i;
  o = options(32, 2, 2);
  p = refill_pipeline(&o, 900, bad, 600, 0);
  CHECK(p != NULL);
  if (p) {
    run_epochs(p, 2, 900, bad, 600, 32, NULL);
    stk_pipeline_destroy(p);
  }
}

/* Every file bad: the epoch is empty (STK_EOF_EPOCH at once), nothing hangs. */
static void test_all_bad(void) {
  int64_t bad[8] = {0, 1, 2, 3, 4, 5, 6, 7};
  stk_pipeline_options o = options(4, 2, 2);
  stk_pipeline *p = refill_pipeline(&o, 8, bad, 8, 0);
  CHECK(p != NULL);
  if (!p) return;
  for (int e = 0; e < 2; e++) {
    stk_batch *b = NULL;
    stk_status st = stk_pipeline_next(p, &b);
    CHECK_MSG(st == STK_EOF_EPOCH && !b, "%s: %s", stk_status_name(st), stk_pipeline_last_error(p));
    if (b) stk_batch_release(b);
    CHECK(stk_pipeline_reset(p) == STK_OK);
  }
  stk_pipeline_stats stats;
  stk_pipeline_stats_get(p, &stats);
  CHECK_MSG(stats.skipped_files == 8, "skipped %llu", (unsigned long long)stats.skipped_files);
  stk_pipeline_destroy(p);
}

/* The quarantine record as JSON lines: one per distinct bad file, with the reason; names with a
 * newline, a quote and a non-UTF-8 byte escaped; the same lines in options.bad_files_log. */
static void test_json_log(void) {
  char path[] = "/tmp/stoker_test_refill_XXXXXX";
  int fd = mkstemp(path);
  CHECK(fd >= 0);
  if (fd < 0) return;
  close(fd);
  int64_t bad[3] = {1, 2, 9};
  stk_pipeline_options o = options(4, 2, 2);
  o.bad_files_log = path;
  stk_pipeline *p = refill_pipeline(&o, 12, bad, 3, 1);
  CHECK(p != NULL);
  if (!p) return;
  run_epochs(p, 2, 12, bad, 3, 4, NULL);
  char *json = NULL;
  CHECK(stk_pipeline_bad_files_json(p, &json) == STK_OK && json);
  int lines = 0;
  for (const char *c = json; c && *c; c++) lines += *c == '\n';
  CHECK_MSG(lines == 3, "%s", json ? json : "");
  /* "dir/odd\n\"\xff_1.jpg" */
  CHECK_MSG(json && strstr(json, "{\"file\": \"dir/odd\\n\\\"\\udcff_1.jpg\", ") && strstr(json, "\"reason\": \"") &&
                strstr(json, "cannot decode (test: bad id 9)"),
            "%s", json ? json : "");
  stk_pipeline_destroy(p); /* closes the log */
  FILE *f = fopen(path, "rb");
  CHECK(f != NULL);
  if (f && json) {
    char buf[4096];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = '\0';
    CHECK_MSG(strcmp(buf, json) == 0, "log:\n%s\napi:\n%s", buf, json);
    fclose(f);
  }
  free(json);
  /* A log that cannot be opened fails the build, naming the path. */
  o.bad_files_log = "/nonexistent-dir/x/bad.jsonl";
  stk_pipeline *q = NULL;
  CHECK(stk_pipeline_new(&o, &q) == STK_OK);
  if (q) {
    stk_args *ra;
    stk_args_new(&ra);
    CHECK(stk_pipeline_add_op(q, "test.reader", "reader", NULL, 0, ra) == STK_OK);
    const char *outs[1] = {"reader[0]"};
    CHECK(stk_pipeline_set_outputs(q, outs, 1) == STK_OK);
    CHECK(stk_pipeline_build(q) != STK_OK && strstr(stk_pipeline_last_error(q), "/nonexistent-dir/x/bad.jsonl"));
    stk_args_destroy(ra);
    stk_pipeline_destroy(q);
  }
  unlink(path);
}

/* A reset mid-epoch while batches wait for replacements discards them and the next epoch is whole;
 * destroying the pipeline with such batches in flight does not hang. */
static void test_reset_and_destroy_mid_epoch(void) {
  static int64_t bad[200];
  size_t nbad = 0;
  for (int64_t i = 0; i < 400; i++)
    if (i % 2 == 1) bad[nbad++] = i;
  for (int round = 0; round < 4; round++) {
    stk_pipeline_options o = options(8, 3, 2);
    stk_pipeline *p = refill_pipeline(&o, 400, bad, nbad, 0);
    CHECK(p != NULL);
    if (!p) return;
    stk_batch *b = NULL;
    CHECK(stk_pipeline_next(p, &b) == STK_OK);
    if (b) stk_batch_release(b);
    if (round % 2 == 0) {
      CHECK(stk_pipeline_reset(p) == STK_OK); /* mid-epoch: epoch 1 starts whole */
      g_first_epoch = 1;
      run_epochs(p, 1, 400, bad, nbad, 8, NULL);
      g_first_epoch = 0;
    }
    stk_pipeline_destroy(p);
  }
}

int main(void) {
  fake_ops_register();
  test_runs_and_threads();
  test_mostly_bad();
  test_all_bad();
  test_json_log();
  test_reset_and_destroy_mid_epoch();
  return stk_test_finish("test_refill");
}
