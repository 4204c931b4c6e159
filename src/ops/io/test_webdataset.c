/* src/ops/io/test_webdataset.c: readers.webdataset on tar shards written here with Python's tarfile
 * (tests/wds_make_shards.py): an index-free start over 10,000 shard paths; 4 ranks covering every
 * sample exactly once per epoch (by files without an index, by samples with one; plain and
 * shuffled; stick_to_shard); the two-level shuffle's determinism; missing_component_behavior;
 * text labels; dtypes; long names; truncated shards with and without skip_bad_files; a shard cut
 * short after planning (its members are read by run_sample); large components byte for byte; pipe:
 * shards; and the operator inside a whole pipeline over two epochs. HTTP shards are in
 * test_webdataset_http.c. Skips (77) when python3 is missing. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ops/io/wds_index.h"
#include "stoker/stoker.h"
#include "wds_testutil.h"
#include "case_list.h"

static char dir[512];

static void make_shards(const char *sub, const char *flags) {
  char cmd[2048];
  snprintf(cmd, sizeof cmd, "mkdir -p %s/%s && python3 %s --out %s/%s %s", dir, sub,
           stk_test_source_path("tests/wds_make_shards.py"), dir, sub, flags);
  if (system(cmd) != 0) {
    fprintf(stderr, "cannot make shards: %s\n", cmd);
    exit(1);
  }
}

/* 8 shards of 20..27 samples: 188 samples, ids 0..187. */
#define NUM_SHARDS 8
#define TOTAL      188

static void test_ranks_cover_once(int with_index, int shuffle, int stick) {
  char *paths[NUM_SHARDS], *index[NUM_SHARDS];
  wds_paths(dir, "plain", NUM_SHARDS, paths, with_index ? index : NULL);
  for (uint64_t epoch = 0; epoch < 3; epoch++) {
    int seen[TOTAL] = {0};
    int64_t total = 0;
    for (int rank = 0; rank < 4; rank++) {
      wds_case c = wds_case_default();
      c.paths = paths, c.num_paths = NUM_SHARDS, c.index_paths = with_index ? index : NULL;
      c.shard_id = rank, c.num_shards = 4, c.random_shuffle = shuffle, c.stick_to_shard = stick;
      c.initial_fill = 16, c.batch_size = 5;
      wds_epoch e;
      stk_status st = wds_read_epoch(&c, epoch, &e);
      CHECK_MSG(st == STK_OK, "rank %d epoch %llu: %s", rank, (unsigned long long)epoch, e.err);
      for (int64_t i = 0; i < e.count; i++)
        if (e.ids[i] >= 0 && e.ids[i] < TOTAL) seen[e.ids[i]]++;
      total += e.count;
      if (with_index) CHECK(e.count >= TOTAL / 4 && e.count <= TOTAL / 4 + 1);
      wds_epoch_free(&e);
    }
    int once = 1;
    for (int i = 0; i < TOTAL; i++) once &= seen[i] == 1;
    CHECK_MSG(once && total == TOTAL, "index=%d shuffle=%d stick=%d epoch %llu: %lld samples, each once: %d",
              with_index, shuffle, stick, (unsigned long long)epoch, (long long)total, once);
  }
  wds_paths_free(paths, with_index ? index : NULL, NUM_SHARDS);
}

static void test_shuffle_determinism(void) {
  char *paths[NUM_SHARDS];
  wds_paths(dir, "plain", NUM_SHARDS, paths, NULL);
  wds_case c = wds_case_default();
  c.paths = paths, c.num_paths = NUM_SHARDS, c.random_shuffle = 1, c.initial_fill = 32, c.batch_size = 8;
  c.parallel_shards = 2;
  wds_epoch a, b, other_seed, other_epoch, plain;
  CHECK(wds_read_epoch(&c, 0, &a) == STK_OK);
  CHECK(wds_read_epoch(&c, 0, &b) == STK_OK);
  CHECK(wds_read_epoch(&c, 1, &other_epoch) == STK_OK);
  /* One reader through epochs 0 and 1 (epoch 1's lanes start when epoch 0's stream ends, before
   * the reset): epoch 1 is what a fresh reader reset to it gives. */
  wds_reader_handle h;
  wds_epoch second = {0};
  stk_status st = wds_open(&c, &h);
  while (st == STK_OK && (st = wds_next_batch(&h)) == STK_OK && !h.plan.last_in_epoch) {
  }
  if (st == STK_OK) st = h.op->impl->reset(h.op, 1);
  while (st == STK_OK && (st = wds_next_batch_into(&h, &second)) == STK_OK && !h.plan.last_in_epoch) {
  }
  CHECK_MSG(st == STK_OK && second.count == TOTAL, "%s", h.err);
  CHECK_MSG(second.count == TOTAL && memcmp(second.ids, other_epoch.ids, sizeof(int64_t) * TOTAL) == 0,
            "epoch 1 after epoch 0 = epoch 1 of a fresh reader");
  wds_close(&h);
  wds_epoch_free(&second);
  c.seed = 99;
  CHECK(wds_read_epoch(&c, 0, &other_seed) == STK_OK);
  c.random_shuffle = 0, c.parallel_shards = 1;
  CHECK(wds_read_epoch(&c, 0, &plain) == STK_OK);
  CHECK(a.count == TOTAL && b.count == TOTAL && plain.count == TOTAL);
  CHECK_MSG(memcmp(a.ids, b.ids, sizeof(int64_t) * TOTAL) == 0, "same seed and epoch: same order");
  CHECK(memcmp(a.ids, other_seed.ids, sizeof(int64_t) * TOTAL) != 0);
  CHECK(memcmp(a.ids, other_epoch.ids, sizeof(int64_t) * TOTAL) != 0);
  int in_order = 1, permutation = 1, seen[TOTAL] = {0};
  for (int i = 0; i < TOTAL; i++) {
    in_order &= plain.ids[i] == i;
    if (a.ids[i] >= 0 && a.ids[i] < TOTAL) seen[a.ids[i]]++;
  }
  for (int i = 0; i < TOTAL; i++) permutation &= seen[i] == 1;
  CHECK_MSG(in_order, "no shuffle: the tar order");
  CHECK_MSG(permutation, "shuffled: every sample once");
  /* Mixing: the first batch of a shuffled epoch draws from more than one shard. */
  int first_shard = -1, shards_in_batch = 0;
  for (int i = 0; i < 8; i++) {
    int s = (int)(a.sample_ids[i] >> 32);
    if (s != first_shard) shards_in_batch++, first_shard = s;
  }
  CHECK(shards_in_batch > 1);
  wds_epoch_free(&a), wds_epoch_free(&b), wds_epoch_free(&other_seed), wds_epoch_free(&other_epoch);
  wds_epoch_free(&plain);
  wds_paths_free(paths, NULL, NUM_SHARDS);
}

static void test_missing_and_labels(void) {
  char *paths[2];
  wds_paths(dir, "missing", 2, paths, NULL); /* 2 shards, 10 + 11 samples, no cls on ids % 4 == 0 */
  const char *behaviors[] = {"empty", "skip", "error"};
  for (int b = 0; b < 3; b++) {
    wds_case c = wds_case_default();
    c.paths = paths, c.num_paths = 2, c.batch_size = 4, c.missing = behaviors[b];
    c.ext1 = "cls";
    wds_epoch e;
    stk_status st = wds_read_epoch(&c, 0, &e);
    if (b == 0) {
      CHECK_MSG(st == STK_OK && e.count == 21, "%s", e.err);
      int ok = 1;
      for (int i = 0; i < e.count; i++) ok &= (e.ids[i] % 4 == 0) == (e.out1_bytes[i] == 0);
      CHECK_MSG(ok, "empty: samples without cls give an empty output 1");
    } else if (b == 1) {
      CHECK_MSG(st == STK_OK && e.count == 21 - 6, "skip: %lld samples: %s", (long long)e.count, e.err);
      int ok = 1;
      for (int i = 0; i < e.count; i++) ok &= e.ids[i] % 4 != 0;
      CHECK(ok);
    } else {
      CHECK_MSG(st == STK_EPARSE && strstr(e.err, "dir/s00000") && strstr(e.err, "shard-000.tar"), "%s", e.err);
    }
    wds_epoch_free(&e);
  }
  /* label_ext: the text label as int32, in the output and in the plan; dtypes reinterpretation. */
  char *plain[NUM_SHARDS];
  wds_paths(dir, "plain", NUM_SHARDS, plain, NULL);
  wds_case c = wds_case_default();
  c.paths = plain, c.num_paths = NUM_SHARDS, c.ext1 = "cls", c.label_ext = "cls", c.batch_size = 7;
  wds_epoch e;
  CHECK_MSG(wds_read_epoch(&c, 0, &e) == STK_OK, "%s", e.err);
  int ok = e.count == TOTAL;
  for (int i = 0; ok && i < e.count; i++) ok = e.labels[i] == e.ids[i] % 7 && e.plan_labels[i] == e.ids[i] % 7;
  CHECK_MSG(ok, "labels are id %% 7");
  wds_epoch_free(&e);
  c.label_ext = NULL, c.ext1 = "json", c.dtype1 = "int32"; /* "{}" is 2 bytes: not a multiple of 4 */
  CHECK(wds_read_epoch(&c, 0, &e) == STK_EPARSE && strstr(e.err, "multiple"));
  wds_epoch_free(&e);
  wds_paths_free(paths, NULL, 2);
  wds_paths_free(plain, NULL, NUM_SHARDS);
}

static void test_long_names_and_pipe(void) {
  const char *formats[] = {"long_gnu", "long_pax"};
  for (int f = 0; f < 2; f++) {
    char *paths[2];
    wds_paths(dir, formats[f], 2, paths, NULL);
    wds_case c = wds_case_default();
    c.paths = paths, c.num_paths = 2, c.batch_size = 3, c.ext1 = "cls", c.label_ext = "cls";
    wds_epoch e;
    CHECK_MSG(wds_read_epoch(&c, 0, &e) == STK_OK && e.count == 7, "%s: %s", formats[f], e.err);
    wds_epoch_free(&e);
    /* The same shards through pipe:cat. */
    for (int i = 0; i < 2; i++) {
      char *p = malloc(strlen(paths[i]) + 16);
      sprintf(p, "pipe:cat '%s'", paths[i]);
      free(paths[i]);
      paths[i] = p;
    }
    CHECK_MSG(wds_read_epoch(&c, 0, &e) == STK_OK && e.count == 7, "pipe %s: %s", formats[f], e.err);
    wds_epoch_free(&e);
    wds_paths_free(paths, NULL, 2);
  }
}

static void test_truncated(void) {
  char *paths[NUM_SHARDS];
  wds_paths(dir, "plain", NUM_SHARDS, paths, NULL);
  char cmd[4096];
  snprintf(cmd, sizeof cmd,
           "mkdir -p %s/trunc && cp %s/plain/*.tar %s/trunc/ && truncate -s 5000 %s/trunc/shard-002.tar", dir, dir, dir,
           dir);
  CHECK(system(cmd) == 0);
  wds_paths_free(paths, NULL, NUM_SHARDS);
  wds_paths(dir, "trunc", NUM_SHARDS, paths, NULL);
  wds_case c = wds_case_default();
  c.paths = paths, c.num_paths = NUM_SHARDS, c.batch_size = 8;
  wds_epoch e;
  CHECK(wds_read_epoch(&c, 0, &e) == STK_EIO);
  CHECK_MSG(strstr(e.err, "shard-002.tar") && strstr(e.err, "truncated"), "%s", e.err);
  wds_epoch_free(&e);
  c.skip_bad_files = 1;
  CHECK_MSG(wds_read_epoch(&c, 0, &e) == STK_OK, "%s", e.err);
  /* shard 2 holds ids 41..62; its first 5000 bytes hold its first few samples. */
  int before = 0, after = 0, inside = 0;
  for (int i = 0; i < e.count; i++) {
    before += e.ids[i] < 41;
    after += e.ids[i] > 62;
    inside += e.ids[i] >= 41 && e.ids[i] <= 62;
  }
  CHECK_MSG(before == 41 && after == TOTAL - 63 && inside > 0 && inside < 22, "%d %d %d", before, after, inside);
  CHECK(e.skipped == 1);
  wds_epoch_free(&e);
  wds_paths_free(paths, NULL, NUM_SHARDS);
}

/* A local shard's members are read by run_sample from the file (planning read only the headers):
 * a shard cut short after planning fails the sample's read with a message naming it. */
static void test_shrunk_after_planning(void) {
  char cmd[2048], *paths[1];
  snprintf(cmd, sizeof cmd, "mkdir -p %s/shrink && cp %s/plain/shard-000.tar %s/shrink/", dir, dir, dir);
  CHECK(system(cmd) == 0);
  wds_paths(dir, "shrink", 1, paths, NULL);
  wds_case c = wds_case_default();
  c.paths = paths, c.num_paths = 1, c.batch_size = 4;
  wds_reader_handle h;
  CHECK_MSG(wds_open(&c, &h) == STK_OK, "%s", h.err);
  CHECK_MSG(h.op->impl->plan_batch(h.op, &h.plan, h.err, sizeof h.err) == STK_OK, "%s", h.err);
  CHECK(truncate(paths[0], 0) == 0);
  stk__tensor *outs[8];
  for (int i = 0; i < 8; i++) outs[i] = &h.out[i];
  char err[512] = "";
  stk__sample_ctx ctx = {.plan = &h.plan.samples[0], .err = err, .err_size = sizeof err};
  CHECK(h.op->impl->run_sample(h.op, &ctx, NULL, outs) == STK_EIO);
  CHECK_MSG(strstr(err, "shard-000.tar:") && strstr(err, "shrank"), "%s", err);
  wds_close(&h);
  wds_paths_free(paths, NULL, 1);
}

static int big_payload_ok(const uint8_t *d, size_t n) {
  int id = wds_parse_id(d, n);
  if (id < 0 || n != (size_t)(20000 + (id % 37) * 1000)) return 0;
  char head[32];
  int j = snprintf(head, sizeof head, "JPG:%d:", id);
  for (; (size_t)j < n; j++)
    if (d[j] != (uint8_t)((id * 7 + j) & 255)) return 0;
  return 1;
}

/* Components of 20-56 KB, every byte checked: read from a local shard by run_sample (pread into the
 * output) and from a pipe: by the lane (its buffer handed to the sample, then copied out). */
static void test_big_components(void) {
  for (int pipe = 0; pipe < 2; pipe++) {
    char *paths[2];
    wds_paths(dir, "big", 2, paths, NULL);
    for (int i = 0; pipe && i < 2; i++) {
      char *p = malloc(strlen(paths[i]) + 16);
      sprintf(p, "pipe:cat '%s'", paths[i]);
      free(paths[i]);
      paths[i] = p;
    }
    wds_case c = wds_case_default();
    c.paths = paths, c.num_paths = 2, c.batch_size = 4, c.ext1 = "cls", c.label_ext = "cls";
    wds_reader_handle h;
    stk_status st = wds_open(&c, &h);
    int good = 0, bad = 0;
    while (st == STK_OK && (st = h.op->impl->plan_batch(h.op, &h.plan, h.err, sizeof h.err)) == STK_OK) {
      for (int k = 0; k < h.plan.batch_size && st == STK_OK; k++) {
        stk__tensor *outs[8];
        for (int i = 0; i < 8; i++) outs[i] = &h.out[i];
        stk__sample_ctx ctx = {.plan = &h.plan.samples[k], .err = h.err, .err_size = sizeof h.err};
        st = h.op->impl->run_sample(h.op, &ctx, NULL, outs);
        if (st == STK_OK && !h.plan.samples[k].is_fill) big_payload_ok(h.out[0].data, h.out[0].nbytes) ? good++ : bad++;
      }
      if (h.plan.last_in_epoch) break;
    }
    CHECK_MSG(st == STK_OK && good == 21 && bad == 0, "pipe=%d: %s; %d good, %d bad", pipe, h.err, good, bad);
    wds_close(&h);
    wds_paths_free(paths, NULL, 2);
  }
}

/* 10,000 shard paths (the same small shard): building the reader reads nothing up front. */
static void test_index_free_start(void) {
  enum { MANY = 10000 };
  char **paths = malloc(MANY * sizeof *paths);
  char one[1024];
  snprintf(one, sizeof one, "%s/plain/shard-000.tar", dir);
  for (int i = 0; i < MANY; i++) paths[i] = one;
  wds_case c = wds_case_default();
  c.paths = paths, c.num_paths = MANY, c.num_shards = 4, c.shard_id = 1, c.random_shuffle = 1, c.batch_size = 32;
  double t0 = wds_now();
  wds_reader_handle h;
  CHECK_MSG(wds_open(&c, &h) == STK_OK, "%s", h.err);
  double built = wds_now() - t0;
  stk_status st = wds_next_batch(&h);
  double first = wds_now() - t0;
  CHECK_MSG(st == STK_OK, "%s", h.err);
  CHECK_MSG(built < 0.5 && first < 5.0, "build %.3f s, first batch %.3f s", built, first);
  printf("10,000 shards: built in %.4f s, first batch after %.4f s\n", built, first);
  wds_close(&h);
  free(paths);
}

static void test_in_pipeline(void) {
  char *paths[NUM_SHARDS];
  wds_paths(dir, "plain", NUM_SHARDS, paths, NULL);
  stk_pipeline_options o;
  stk_pipeline_options_default(&o);
  o.batch_size = 16, o.num_threads = 2, o.device_id = -1;
  stk_pipeline *p;
  stk_args *a;
  CHECK(stk_pipeline_new(&o, &p) == STK_OK && stk_args_new(&a) == STK_OK);
  const char *exts[] = {"jpg", "cls"};
  stk_args_set_string_list(a, "paths", (const char *const *)paths, NUM_SHARDS);
  stk_args_set_string_list(a, "ext", exts, 2);
  stk_args_set_string(a, "label_ext", "cls");
  stk_args_set_bool(a, "random_shuffle", 1);
  CHECK_MSG(stk_pipeline_add_op(p, "readers.webdataset", "wds", NULL, 0, a) == STK_OK, "%s",
            stk_pipeline_last_error(p));
  const char *outs[] = {"wds[0]", "wds[1]"};
  CHECK(stk_pipeline_set_outputs(p, outs, 2) == STK_OK);
  CHECK_MSG(stk_pipeline_build(p) == STK_OK, "%s", stk_pipeline_last_error(p));
  for (int epoch = 0; epoch < 2; epoch++) {
    int seen[TOTAL] = {0}, labels_ok = 1, valid = 0;
    stk_batch *b;
    stk_status st;
    while ((st = stk_pipeline_next(p, &b)) == STK_OK) {
      for (int s = 0; s < stk_batch_valid_samples(b); s++) {
        stk_tensor_view v, l;
        stk_batch_sample(b, 0, s, &v);
        stk_batch_sample(b, 1, s, &l);
        int id = wds_parse_id(v.data, v.nbytes);
        if (id >= 0 && id < TOTAL) seen[id]++;
        labels_ok &= l.nbytes == 4 && *(const int32_t *)l.data == id % 7;
        valid++;
      }
      stk_batch_release(b);
    }
    CHECK_MSG(st == STK_EOF_EPOCH, "epoch %d: %s", epoch, stk_pipeline_last_error(p));
    int once = 1;
    for (int i = 0; i < TOTAL; i++) once &= seen[i] == 1;
    CHECK_MSG(once && valid == TOTAL && labels_ok, "pipeline epoch %d: %d samples", epoch, valid);
    stk_pipeline_reset(p);
  }
  stk_args_destroy(a);
  stk_pipeline_destroy(p);
  wds_paths_free(paths, NULL, NUM_SHARDS);
}

/* With and without index, shuffled or not, sticky or not. */
static void ranks_cover_every_sample_once(void) {
  for (int idx = 0; idx < 2; idx++)
    for (int shuffle = 0; shuffle < 2; shuffle++)
      for (int stick = 0; stick < 2; stick++) test_ranks_cover_once(idx, shuffle, stick);
}

/* one STK_TEST_CASE per line: tests/CMakeLists.txt reads them */
// clang-format off
static const stk_test_case cases[] = {
    STK_TEST_CASE(test_index_free_start),
    STK_TEST_CASE(ranks_cover_every_sample_once),
    STK_TEST_CASE(test_shuffle_determinism),
    STK_TEST_CASE(test_missing_and_labels),
    STK_TEST_CASE(test_long_names_and_pipe),
    STK_TEST_CASE(test_truncated),
    STK_TEST_CASE(test_shrunk_after_planning),
    STK_TEST_CASE(test_big_components),
    STK_TEST_CASE(test_in_pipeline),
};
// clang-format on

int main(int argc, char **argv) {
  if (stk_test_list_cases(cases, STK_TEST_COUNT(cases), argc, argv)) return 0;
  if (system("python3 -c 'import tarfile' >/dev/null 2>&1") != 0) TEST_SKIP("python3 (tarfile) is not installed");
  char *tmp = stk_test_tmpdir("webdataset");
  snprintf(dir, sizeof dir, "%s", tmp);
  free(tmp);
  make_shards("plain", "--shards 8 --base 20");
  make_shards("missing", "--shards 2 --base 10 --missing-every 4");
  make_shards("long_gnu", "--shards 2 --base 3 --long-names --format gnu");
  make_shards("long_pax", "--shards 2 --base 3 --long-names --format pax");
  make_shards("big", "--shards 2 --base 10 --big");
  char err[512];
  for (int k = 0; k < NUM_SHARDS; k++) {
    char tar[1024], idx[1024];
    snprintf(tar, sizeof tar, "%s/plain/shard-%03d.tar", dir, k);
    snprintf(idx, sizeof idx, "%s/plain/shard-%03d.idx", dir, k);
    CHECK_MSG(stk__wds_index_write(tar, idx, err, sizeof err) == STK_OK, "%s", err);
  }
  return stk_test_run_cases("test_webdataset", cases, STK_TEST_COUNT(cases), argc, argv);
}
