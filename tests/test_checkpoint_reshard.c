/* tests/test_checkpoint_reshard.c: resharding on resume (docs/checkpoint.md, Resharding): a
 * checkpoint taken with num_shards=N_old in the middle of an epoch, resumed with N_new shards.
 * CPU only: readers.file over small files, the pipeline's output is the label, which is the
 * sample's index in the data set, so the test sees which samples every rank delivered.
 * For N_old in {1,2,3,4}, N_new in {1,2,3,5}, every position of epoch 1 (0 to its end), no
 * shuffling / shuffle_after_epoch / random_shuffle, stick_to_shard on and off, pad_last_batch on
 * and off: what the old ranks delivered before the checkpoint plus what the new ranks deliver
 * after it is the data set exactly once; every new rank counts the same number of batches; the
 * next epoch is the normal N_new sharding. A checkpoint inside the remainder resumes byte for
 * byte (same num_shards), and resharded again it composes (still exactly once). Refused:
 * resharding mid-epoch under skip_bad_files, malformed reshard values. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "case_list.h"
#include "stoker/stoker.h"
#include "testutil.h"

#define NUM_FILES 23
#define BATCH     2
#define MAX_RANKS 5
#define MAX_BATCH 13 /* batches of an epoch with one shard: ceil(23 / 2) = 12, and the end */
#define EPOCH     1  /* the epoch checkpointed (epoch 0 moved the shards once already) */
#define NUM_MODES 6

static char *data_dir;

typedef struct mode {
  int shuffle; /* 0 none, 1 shuffle_after_epoch, 2 random_shuffle (initial_fill 5) */
  int stick, pad;
} mode;

static const mode modes[NUM_MODES] = {{0, 0, 0}, {1, 0, 0}, {2, 0, 1}, {0, 1, 1}, {1, 1, 0}, {2, 1, 0}};

static void write_files(void) {
  data_dir = stk_test_tmpdir("reshard");
  for (int i = 0; data_dir && i < NUM_FILES; i++) {
    char path[512];
    snprintf(path, sizeof path, "%s/s%02d.bin", data_dir, i);
    FILE *f = fopen(path, "wb");
    if (f) fputs("x", f), fclose(f);
  }
}

/* readers.file (labels 0..22) -> output reader[1]. NULL on failure, message in err. */
static stk_pipeline *make(const mode *m, int shards, int id, const char *checkpoint, int skip_bad, char *err,
                          size_t err_size) {
  stk_pipeline_options o;
  stk_pipeline_options_default(&o);
  o.batch_size = BATCH;
  o.num_threads = 1;
  o.prefetch_queue_depth = 2;
  o.seed = 11;
  o.pin_threads = 0;
  o.checkpoint = checkpoint;
  o.skip_bad_files = skip_bad;
  stk_pipeline *p = NULL;
  stk_status st = stk_pipeline_new(&o, &p);
  if (st != STK_OK) return NULL;
  stk_args *a;
  stk_args_new(&a);
  char names[NUM_FILES][16];
  const char *files[NUM_FILES];
  for (int i = 0; i < NUM_FILES; i++) snprintf(names[i], sizeof names[i], "s%02d.bin", i), files[i] = names[i];
  stk_args_set_string(a, "file_root", data_dir);
  stk_args_set_string_list(a, "files", files, NUM_FILES);
  stk_args_set_bool(a, "shuffle_after_epoch", m->shuffle == 1);
  stk_args_set_bool(a, "random_shuffle", m->shuffle == 2);
  stk_args_set_int(a, "initial_fill", 5);
  stk_args_set_bool(a, "stick_to_shard", m->stick);
  stk_args_set_bool(a, "pad_last_batch", m->pad);
  stk_args_set_int(a, "num_shards", shards);
  stk_args_set_int(a, "shard_id", id);
  const char *outs[1] = {"reader[1]"};
  st = stk_pipeline_add_op(p, "readers.file", "reader", NULL, 0, a);
  if (st == STK_OK) st = stk_pipeline_set_outputs(p, outs, 1);
  if (st == STK_OK) st = stk_pipeline_build(p);
  stk_args_destroy(a);
  if (st != STK_OK) {
    snprintf(err, err_size, "%s", stk_pipeline_last_error(p));
    stk_pipeline_destroy(p);
    return NULL;
  }
  return p;
}

static stk_pipeline *make_ok(const mode *m, int shards, int id, const char *checkpoint) {
  char err[2048] = "";
  stk_pipeline *p = make(m, shards, id, checkpoint, 0, err, sizeof err);
  CHECK_MSG(p != NULL, "build (num_shards=%d shard_id=%d): %s", shards, id, err);
  return p;
}

/* One batch: the labels of its valid samples (fill is last) into ids, their count; a digest of
 * every slot, fill included. STK_EOF_EPOCH at the epoch's end. */
static stk_status next_batch(stk_pipeline *p, int *ids, int *num, uint64_t *digest) {
  stk_batch *b = NULL;
  stk_status st = stk_pipeline_next(p, &b);
  *num = 0;
  if (st != STK_OK) return st;
  uint64_t h = 0xcbf29ce484222325ull ^ (uint64_t)stk_batch_epoch(b);
  int valid = stk_batch_valid_samples(b);
  h = (h ^ (uint64_t)valid) * 0x100000001b3ull;
  for (int s = 0; s < stk_batch_size(b); s++) {
    stk_tensor_view v;
    int32_t label = -1;
    if (stk_batch_sample(b, 0, s, &v) == STK_OK && v.nbytes == 4) memcpy(&label, v.data, 4);
    h = (h ^ (uint64_t)(uint32_t)label) * 0x100000001b3ull;
    if (s < valid) ids[(*num)++] = label;
  }
  stk_batch_release(b);
  *digest = h;
  return STK_OK;
}

/* Takes batches up to the epoch's end (or `limit` of them), counting the labels delivered in
 * seen[], digests into d[]. Returns the batches taken. */
static int drain(stk_pipeline *p, int limit, int *seen, uint64_t *d) {
  int n = 0, ids[BATCH], num;
  uint64_t h;
  while (n < limit) {
    stk_status st = next_batch(p, ids, &num, &h);
    if (st == STK_EOF_EPOCH) break;
    CHECK_MSG(st == STK_OK, "next: %s", stk_pipeline_last_error(p));
    if (st != STK_OK) break;
    for (int i = 0; i < num; i++)
      if (ids[i] >= 0 && ids[i] < NUM_FILES && seen) seen[ids[i]]++;
    if (d) d[n] = h;
    n++;
  }
  return n;
}

static char *checkpoint_of(stk_pipeline *p) {
  char *text = NULL;
  CHECK_MSG(stk_pipeline_checkpoint(p, &text) == STK_OK, "%s", stk_pipeline_last_error(p));
  return text;
}

/* The old ranks of one (mode, N_old): epoch 0 read through, then epoch 1 with a checkpoint after
 * every batch; ids[r][b] what rank r got in batch b. */
typedef struct old_run {
  int batches; /* of epoch 1 */
  char *text[MAX_RANKS][MAX_BATCH + 1];
  int ids[MAX_RANKS][MAX_BATCH][BATCH], num[MAX_RANKS][MAX_BATCH];
} old_run;

static void run_old(const mode *m, int shards, old_run *o) {
  memset(o, 0, sizeof *o);
  for (int r = 0; r < shards; r++) {
    stk_pipeline *p = make_ok(m, shards, r, NULL);
    if (!p) return;
    drain(p, 100, NULL, NULL);
    CHECK(stk_pipeline_reset(p) == STK_OK);
    o->text[r][0] = checkpoint_of(p);
    int b = 0;
    uint64_t h;
    while (b < MAX_BATCH && next_batch(p, o->ids[r][b], &o->num[r][b], &h) == STK_OK)
      o->text[r][++b] = checkpoint_of(p);
    CHECK_MSG(r == 0 || b == o->batches, "old rank %d has %d batches, rank 0 %d", r, b, o->batches);
    o->batches = b;
    stk_pipeline_destroy(p);
  }
}

static void free_old(old_run *o) {
  for (int r = 0; r < MAX_RANKS; r++)
    for (int b = 0; b <= MAX_BATCH; b++) free(o->text[r][b]);
}

/* seen[] += what the old ranks delivered in epoch 1's first b batches. */
static void count_old(const old_run *o, int shards, int b, int *seen) {
  for (int r = 0; r < shards; r++)
    for (int k = 0; k < b; k++)
      for (int i = 0; i < o->num[r][k]; i++) seen[o->ids[r][k][i]]++;
}

static void check_exactly_once(const int *seen, const char *what) {
  for (int i = 0; i < NUM_FILES; i++) CHECK_MSG(seen[i] == 1, "%s: sample %d delivered %d times", what, i, seen[i]);
}

/* Epoch 2's digests for rank `id` of `shards` on a fresh pipeline (the normal sharding). */
static int normal_epoch2(const mode *m, int shards, int id, uint64_t *d) {
  stk_pipeline *p = make_ok(m, shards, id, NULL);
  if (!p) return 0;
  for (int e = 0; e < 2; e++) drain(p, 100, NULL, NULL), stk_pipeline_reset(p);
  int n = drain(p, MAX_BATCH, NULL, d);
  stk_pipeline_destroy(p);
  return n;
}

/* New ranks from the checkpoint after b batches (rank t resumes old rank t % N_old's text): the
 * union is exactly once, the counts equal; rank 0's next epoch is the normal one. */
static void check_position(const mode *m, const old_run *o, int n_old, int b, int n_new, int mi) {
  int seen[NUM_FILES] = {0}, count = -1;
  char what[160];
  snprintf(what, sizeof what, "mode %d, %d -> %d shards at batch %d of epoch 1", mi, n_old, n_new, b);
  count_old(o, n_old, b, seen);
  for (int t = 0; t < n_new; t++) {
    stk_pipeline *p = make_ok(m, n_new, t, o->text[t % n_old][b]);
    if (!p) return;
    int n = drain(p, 100, seen, NULL);
    CHECK_MSG(count < 0 || n == count, "%s: new rank %d has %d batches, rank 0 %d", what, t, n, count);
    count = n;
    if (t == 0 && (b == 0 || b == o->batches / 2)) {
      uint64_t want[MAX_BATCH], got[MAX_BATCH];
      CHECK(stk_pipeline_reset(p) == STK_OK);
      int n2 = drain(p, MAX_BATCH, NULL, got), w = normal_epoch2(m, n_new, 0, want);
      CHECK_MSG(n2 == w && memcmp(got, want, (size_t)w * sizeof *got) == 0, "%s: epoch 2 is not the normal one", what);
    }
    stk_pipeline_destroy(p);
  }
  check_exactly_once(seen, what);
}

static void check_all_positions(int n_old) {
  static const int n_news[] = {1, 2, 3, 5};
  for (int mi = 0; mi < NUM_MODES; mi++) {
    old_run *o = calloc(1, sizeof *o);
    run_old(&modes[mi], n_old, o);
    for (int b = 0; b <= o->batches; b++)
      for (int k = 0; k < 4; k++) check_position(&modes[mi], o, n_old, b, n_news[k], mi);
    free_old(o);
    free(o);
  }
}

static void reshard_from_1_shard_every_position_exactly_once(void) { check_all_positions(1); }
static void reshard_from_2_shards_every_position_exactly_once(void) { check_all_positions(2); }
static void reshard_from_3_shards_every_position_exactly_once(void) { check_all_positions(3); }
static void reshard_from_4_shards_every_position_exactly_once(void) { check_all_positions(4); }

/* Inside the remainder (N_old -> N_new at batch b): a checkpoint after j more batches resumes
 * byte for byte on the same shard, into the next epoch; resharded again (to N2) the union of old,
 * new and newest ranks is still exactly once. */
/* Rank t of n_new from old rank (t % n_old)'s text, j remainder batches taken (counted in seen):
 * checkpoints there into *mid, then checks that resuming *mid gives the same batches to the end of
 * the epoch and through the next one. Returns the remainder's batch count. */
static int remainder_rank(const mode *m, const old_run *o, int n_old, int b, int n_new, int t, int j, int *seen,
                          char **mid) {
  uint64_t ref[2 * MAX_BATCH], got[2 * MAX_BATCH];
  stk_pipeline *p = make_ok(m, n_new, t, o->text[t % n_old][b]);
  if (!p) return 0;
  CHECK(drain(p, j, seen, NULL) == j);
  *mid = checkpoint_of(p);
  CHECK_MSG(*mid && strstr(*mid, "\nreshard="), "a remainder checkpoint is version 4 with reshard=: %s",
            *mid ? *mid : "");
  int rest = drain(p, MAX_BATCH, NULL, ref);
  stk_pipeline_reset(p);
  int n = rest + drain(p, MAX_BATCH, NULL, ref + rest);
  stk_pipeline_destroy(p);
  stk_pipeline *q = *mid ? make_ok(m, n_new, t, *mid) : NULL;
  if (!q) return 0;
  int k = drain(q, MAX_BATCH, NULL, got);
  stk_pipeline_reset(q);
  k += drain(q, MAX_BATCH, NULL, got + k);
  stk_pipeline_destroy(q);
  CHECK_MSG(k == n && memcmp(got, ref, (size_t)n * sizeof *got) == 0,
            "%d -> %d shards at %d, rank %d: resume after %d remainder batches is not exact", n_old, n_new, b, t, j);
  return j + rest;
}

/* Inside the remainder (N_old -> N_new at batch b): a checkpoint after j more batches resumes
 * byte for byte on the same shard, into the next epoch; resharded again (to N2) the union of old,
 * new and newest ranks is still exactly once. */
static void check_remainder(const mode *m, int n_old, int n_new, int n2) {
  old_run *o = calloc(1, sizeof *o);
  run_old(m, n_old, o);
  int b = o->batches / 2 > 0 ? o->batches / 2 : 1, batches = 0;
  for (int j = 0; j <= batches; j++) {
    int seen[NUM_FILES] = {0};
    char *mid[MAX_RANKS] = {0};
    count_old(o, n_old, b, seen);
    for (int t = 0; t < n_new; t++) batches = remainder_rank(m, o, n_old, b, n_new, t, j, seen, &mid[t]);
    for (int u = 0; u < n2; u++) { /* resharded again after j remainder batches */
      stk_pipeline *p = mid[u % n_new] ? make_ok(m, n2, u, mid[u % n_new]) : NULL;
      if (p) drain(p, 100, seen, NULL);
      stk_pipeline_destroy(p);
    }
    char what[160];
    snprintf(what, sizeof what, "mode %d, %d -> %d shards at batch %d, -> %d after %d more", (int)(m - modes), n_old,
             n_new, b, n2, j);
    check_exactly_once(seen, what);
    for (int t = 0; t < MAX_RANKS; t++) free(mid[t]);
  }
  free_old(o);
  free(o);
}

static void remainder_checkpoint_resumes_exactly_and_composes(void) {
  for (int mi = 0; mi < NUM_MODES; mi++) {
    check_remainder(&modes[mi], 2, 3, 5);
    check_remainder(&modes[mi], 4, 1, 2);
    check_remainder(&modes[mi], 1, 2, 3);
  }
}

/* Under skip_bad_files each old rank's refill cursor took samples past the position from its own
 * shard, which one checkpoint does not hold: refused mid-epoch, naming why; at the epoch's start
 * the new sharding is accepted. */
static void reshard_mid_epoch_under_skip_bad_files_is_refused(void) {
  const mode *m = &modes[1];
  char err[2048] = "", *text = NULL, *start = NULL;
  stk_pipeline *p = make(m, 2, 0, NULL, 1, err, sizeof err);
  CHECK_MSG(p != NULL, "%s", err);
  if (!p) return;
  start = checkpoint_of(p);
  drain(p, 2, NULL, NULL);
  text = checkpoint_of(p);
  stk_pipeline_destroy(p);
  p = text ? make(m, 3, 0, text, 1, err, sizeof err) : NULL;
  CHECK_MSG(p == NULL && strstr(err, "skip_bad_files") && strstr(err, "refill cursor") && strstr(err, "num_shards=2") &&
                strstr(err, "num_shards=3"),
            "wanted the skip_bad_files refusal, got: %s", err);
  stk_pipeline_destroy(p);
  p = start ? make(m, 3, 1, start, 1, err, sizeof err) : NULL;
  CHECK_MSG(p != NULL, "at the epoch's start: %s", err);
  stk_pipeline_destroy(p);
  free(text);
  free(start);
}

/* Each bad reshard= value is "bad value for reshard"; reshard= in a version 3 text too; a cut past
 * the position, a missing key in version 4. */
static void malformed_reshard_values_are_refused(void) {
  const mode *m = &modes[0];
  old_run *o = calloc(1, sizeof *o);
  run_old(m, 2, o);
  stk_pipeline *p = make_ok(m, 3, 0, o->text[0][3]);
  drain(p, 1, NULL, NULL);
  char *text = p ? checkpoint_of(p) : NULL; /* reshard=2/3, position 4 */
  stk_pipeline_destroy(p);
  CHECK_MSG(text && strstr(text, "\nposition=4\n") && strstr(text, "\nreshard=2/3\n"), "%s", text ? text : "");
  static const char *bad[][2] = {{"reshard=2/3", "reshard=0/3"},
                                 {"reshard=2/3", "reshard=2/0"},
                                 {"reshard=2/3", "reshard=2/3,"},
                                 {"reshard=2/3", "reshard=2/3,3/3"},
                                 {"reshard=2/3", "reshard="},
                                 {"reshard=2/3", "reshard=2/x"},
                                 {"stoker-checkpoint 5", "stoker-checkpoint 3"},
                                 {"reshard=2/3", "reshard=2/5"},
                                 {"reshard=2/3\n", ""}};
  static const char *needles[] = {"bad value for reshard", "bad value for reshard", "bad value for reshard",
                                  "bad value for reshard", "bad value for reshard", "bad value for reshard",
                                  "bad value for reshard", "past the position",     "reshard is missing"};
  for (size_t i = 0; text && i < sizeof bad / sizeof bad[0]; i++) {
    char *broken = stk_test_checkpoint_edit(text, bad[i][0], bad[i][1]);
    if (i == 8) { /* a version 4 text (written without a checksum line) lacking its required reshard */
      broken[strlen("stoker-checkpoint ")] = '4';
      *strstr(broken, "checksum=") = '\0';
    }
    stk_pipeline_options opts;
    stk_pipeline_options_default(&opts);
    stk_pipeline *q = NULL;
    CHECK(stk_pipeline_new(&opts, &q) == STK_OK);
    CHECK_MSG(stk_pipeline_restore(q, broken) == STK_EINVAL && strstr(stk_pipeline_last_error(q), needles[i]),
              "case %zu: %s", i, stk_pipeline_last_error(q));
    stk_pipeline_destroy(q);
    free(broken);
  }
  free(text);
  free_old(o);
  free(o);
}

/* one STK_TEST_CASE per line: tests/CMakeLists.txt reads them */
// clang-format off
static const stk_test_case cases[] = {
    STK_TEST_CASE(reshard_from_1_shard_every_position_exactly_once),
    STK_TEST_CASE(reshard_from_2_shards_every_position_exactly_once),
    STK_TEST_CASE(reshard_from_3_shards_every_position_exactly_once),
    STK_TEST_CASE(reshard_from_4_shards_every_position_exactly_once),
    STK_TEST_CASE(remainder_checkpoint_resumes_exactly_and_composes),
    STK_TEST_CASE(reshard_mid_epoch_under_skip_bad_files_is_refused),
    STK_TEST_CASE(malformed_reshard_values_are_refused),
};
// clang-format on

int main(int argc, char **argv) {
  if (stk_test_list_cases(cases, STK_TEST_COUNT(cases), argc, argv)) return 0;
  write_files();
  if (!data_dir) TEST_SKIP("cannot make a temporary directory");
  int rc = stk_test_run_selected("test_checkpoint_reshard", cases, STK_TEST_COUNT(cases), argc, argv);
  stk_test_remove_tree(data_dir);
  free(data_dir);
  return rc ? rc : stk_test_finish("test_checkpoint_reshard");
}
