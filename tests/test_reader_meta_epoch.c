/* tests/test_reader_meta_epoch.c: the reader metadata's count of the consumer's epoch in batches
 * (stk_reader_meta: epoch, epoch_next_batch, epoch_batches, epoch_full_batches), which the
 * iterators' last-batch policies use (python/stoker/iterator.py). Checked against what the
 * pipeline really delivers: readers.file over 13 small files (label = sample), batch 2, 4 shards
 * (3, 3, 3, 4 samples) moving every epoch; a pipeline restored mid-epoch (checkpoint=) counts on
 * from the checkpoint's position; a remainder resharded on resume (docs/checkpoint.md) has its
 * own count; the epoch after a remainder is a normal one again. CPU only. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "case_list.h"
#include "stoker/stoker.h"
#include "testutil.h"

#define NUM_FILES 13
#define BATCH     2
#define MAX_RANKS 4

static char *data_dir;

static void write_files(void) {
  data_dir = stk_test_tmpdir("meta_epoch");
  for (int i = 0; data_dir && i < NUM_FILES; i++) {
    char path[512];
    snprintf(path, sizeof path, "%s/s%02d.bin", data_dir, i);
    FILE *f = fopen(path, "wb");
    if (f) fputs("x", f), fclose(f);
  }
}

/* readers.file named "reader" over the 13 files, output reader[1] (the label); NULL on failure. */
static stk_pipeline *make(int shards, int id, int pad, const char *checkpoint) {
  stk_pipeline_options o;
  stk_pipeline_options_default(&o);
  o.batch_size = BATCH;
  o.num_threads = 1;
  o.prefetch_queue_depth = 3; /* plans ahead, into the next epoch: the meta is the consumer's */
  o.seed = 5;
  o.pin_threads = 0;
  o.checkpoint = checkpoint;
  stk_pipeline *p = NULL;
  if (stk_pipeline_new(&o, &p) != STK_OK) return NULL;
  stk_args *a;
  stk_args_new(&a);
  char names[NUM_FILES][16];
  const char *files[NUM_FILES];
  for (int i = 0; i < NUM_FILES; i++) snprintf(names[i], sizeof names[i], "s%02d.bin", i), files[i] = names[i];
  stk_args_set_string(a, "file_root", data_dir);
  stk_args_set_string_list(a, "files", files, NUM_FILES);
  stk_args_set_bool(a, "random_shuffle", 1);
  stk_args_set_bool(a, "pad_last_batch", pad);
  stk_args_set_int(a, "num_shards", shards);
  stk_args_set_int(a, "shard_id", id);
  const char *outs[1] = {"reader[1]"};
  stk_status st = stk_pipeline_add_op(p, "readers.file", "reader", NULL, 0, a);
  if (st == STK_OK) st = stk_pipeline_set_outputs(p, outs, 1);
  if (st == STK_OK) st = stk_pipeline_build(p);
  stk_args_destroy(a);
  CHECK_MSG(st == STK_OK, "build (shard %d of %d): %s", id, shards, stk_pipeline_last_error(p));
  if (st != STK_OK) stk_pipeline_destroy(p), p = NULL;
  return p;
}

static stk_reader_meta meta_of(stk_pipeline *p) {
  stk_reader_meta m;
  stk_status st = stk_pipeline_reader_meta(p, "reader", &m);
  CHECK_MSG(st == STK_OK, "reader_meta: %s", stk_strerror(st));
  return m;
}

/* Takes the rest of the epoch, checking epoch_next_batch after every batch. Returns the batches
 * taken; *full = how many of them, from the first, had no fill. */
static int drain(stk_pipeline *p, int *full) {
  int n = 0, leading = 1;
  *full = 0;
  const stk_reader_meta start = meta_of(p);
  for (;;) {
    stk_batch *b = NULL;
    stk_status st = stk_pipeline_next(p, &b);
    if (st == STK_EOF_EPOCH) break;
    CHECK_MSG(st == STK_OK, "next: %s", stk_pipeline_last_error(p));
    if (st != STK_OK) break;
    leading = leading && stk_batch_valid_samples(b) == BATCH;
    *full += leading;
    stk_batch_release(b);
    n++;
    stk_reader_meta m = meta_of(p);
    CHECK_MSG(m.epoch == start.epoch && m.epoch_next_batch == start.epoch_next_batch + n,
              "after %d batches of epoch %llu: next batch %lld of epoch %llu", n, (unsigned long long)start.epoch,
              (long long)m.epoch_next_batch, (unsigned long long)m.epoch);
  }
  return n;
}

static void moving_shards_count_every_epoch(void) {
  for (int pad = 0; pad < 2; pad++) {
    int fewest_full[3] = {99, 99, 99};
    for (int r = 0; r < MAX_RANKS; r++) {
      stk_pipeline *p = make(MAX_RANKS, r, pad, NULL);
      for (int e = 0; p && e < 3; e++) {
        stk_reader_meta m = meta_of(p);
        CHECK_MSG(m.epoch == (uint64_t)e && m.epoch_next_batch == 0 && m.shard_id == (r + e) % MAX_RANKS,
                  "rank %d epoch %d: epoch %llu next %lld shard %d", r, e, (unsigned long long)m.epoch,
                  (long long)m.epoch_next_batch, m.shard_id);
        /* ceil(4 / 2) batches on every shard; the smallest (3 samples) has 1 full batch */
        CHECK_MSG(m.epoch_batches == 2 && m.epoch_full_batches == 1, "rank %d epoch %d: %lld batches, %lld full", r, e,
                  (long long)m.epoch_batches, (long long)m.epoch_full_batches);
        int full, n = drain(p, &full);
        CHECK_MSG(n == m.epoch_batches, "rank %d epoch %d delivered %d batches, meta said %lld", r, e, n,
                  (long long)m.epoch_batches);
        if (full < fewest_full[e]) fewest_full[e] = full;
        CHECK(meta_of(p).epoch_next_batch == m.epoch_batches); /* at the end, before reset */
        CHECK(stk_pipeline_reset(p) == STK_OK);
      }
      stk_pipeline_destroy(p);
    }
    for (int e = 0; e < 3; e++)
      CHECK_MSG(fewest_full[e] == 1, "epoch %d: the fewest leading full batches of a rank is %d, meta said 1", e,
                fewest_full[e]);
  }
}

/* A checkpoint after `taken` batches of epoch 1 (epoch 0 read through), as a malloc'd text. */
static char *checkpoint_after(int shards, int id, int taken) {
  stk_pipeline *p = make(shards, id, 0, NULL);
  char *text = NULL;
  int full;
  if (!p) return NULL;
  drain(p, &full);
  CHECK(stk_pipeline_reset(p) == STK_OK);
  for (int b = 0; b < taken; b++) {
    stk_batch *batch = NULL;
    CHECK(stk_pipeline_next(p, &batch) == STK_OK);
    stk_batch_release(batch);
  }
  CHECK_MSG(stk_pipeline_checkpoint(p, &text) == STK_OK, "%s", stk_pipeline_last_error(p));
  stk_pipeline_destroy(p);
  return text;
}

static void restored_pipeline_counts_on_from_the_checkpoint(void) {
  for (int r = 0; r < MAX_RANKS; r++) {
    char *text = checkpoint_after(MAX_RANKS, r, 1);
    stk_pipeline *p = text ? make(MAX_RANKS, r, 0, text) : NULL;
    if (p) {
      stk_reader_meta m = meta_of(p);
      CHECK_MSG(m.epoch == 1 && m.epoch_next_batch == 1 && m.epoch_batches == 2 && m.epoch_full_batches == 1,
                "rank %d restored: epoch %llu next %lld batches %lld full %lld", r, (unsigned long long)m.epoch,
                (long long)m.epoch_next_batch, (long long)m.epoch_batches, (long long)m.epoch_full_batches);
      int full, n = drain(p, &full);
      CHECK_MSG(n == 1, "rank %d restored at batch 1 of 2 delivered %d", r, n);
      CHECK(stk_pipeline_reset(p) == STK_OK);
      m = meta_of(p);
      CHECK(m.epoch == 2 && m.epoch_next_batch == 0 && m.epoch_batches == 2);
    }
    /* restore on the built pipeline: the count jumps back too */
    if (p && text) {
      CHECK(stk_pipeline_restore(p, text) == STK_OK);
      stk_reader_meta m = meta_of(p);
      CHECK_MSG(m.epoch == 1 && m.epoch_next_batch == 1, "restore on a built pipeline: epoch %llu next %lld",
                (unsigned long long)m.epoch, (long long)m.epoch_next_batch);
    }
    stk_pipeline_destroy(p);
    free(text);
  }
}

/* One shard, checkpoint after 1 batch of epoch 1 (13 samples: 7 batches), resumed on 2 then 3
 * shards: the remainder of 11 samples (shards 5, 6; or 3, 4, 4) counts its own batches. */
static void resharded_remainder_counts_its_own_batches(void) {
  char *text = checkpoint_after(1, 0, 1);
  const int new_shards[2] = {2, 3};
  const long long want_batches[2] = {1 + 3, 1 + 2}, want_full[2] = {1 + 2, 1 + 1};
  for (int k = 0; text && k < 2; k++) {
    int fewest = 99;
    for (int r = 0; r < new_shards[k]; r++) {
      stk_pipeline *p = make(new_shards[k], r, 0, text);
      if (!p) continue;
      stk_reader_meta m = meta_of(p);
      CHECK_MSG(m.epoch == 1 && m.epoch_next_batch == 1 && m.epoch_batches == want_batches[k] &&
                    m.epoch_full_batches == want_full[k],
                "%d shards, rank %d: epoch %llu next %lld batches %lld (want %lld) full %lld (want %lld)",
                new_shards[k], r, (unsigned long long)m.epoch, (long long)m.epoch_next_batch,
                (long long)m.epoch_batches, want_batches[k], (long long)m.epoch_full_batches, want_full[k]);
      int full, n = drain(p, &full);
      CHECK_MSG(n == m.epoch_batches - 1, "%d shards, rank %d: %d batches delivered", new_shards[k], r, n);
      if (full < fewest) fewest = full;
      CHECK(stk_pipeline_reset(p) == STK_OK); /* the next epoch is a normal one */
      m = meta_of(p);
      long long normal = (NUM_FILES + new_shards[k] - 1) / new_shards[k];
      CHECK_MSG(m.epoch == 2 && m.epoch_next_batch == 0 && m.epoch_batches == (normal + BATCH - 1) / BATCH &&
                    m.epoch_full_batches == NUM_FILES / new_shards[k] / BATCH,
                "%d shards, epoch after the remainder: epoch %llu batches %lld full %lld", new_shards[k],
                (unsigned long long)m.epoch, (long long)m.epoch_batches, (long long)m.epoch_full_batches);
      stk_pipeline_destroy(p);
    }
    CHECK_MSG(fewest == want_full[k] - 1, "%d shards: fewest leading full batches %d, want %lld", new_shards[k], fewest,
              want_full[k] - 1);
  }
  free(text);
}

/* A name that is no reader is refused naming it and the pipeline's readers (it said "no such file
 * or directory", the text of STK_ENOENT). */
static void unknown_reader_name_is_named_with_the_real_ones(void) {
  stk_pipeline *p = make(1, 0, 0, NULL);
  if (!p) return;
  stk_reader_meta m;
  CHECK(stk_pipeline_reader_meta(p, "nope", &m) == STK_ENOENT);
  const char *err = stk_pipeline_last_error(p);
  CHECK_MSG(strstr(err, "no operator named \"nope\"") && strstr(err, "its readers are \"reader\""), "%s", err);
  CHECK(stk_pipeline_reader_meta(p, "reader", &m) == STK_OK && m.epoch_size == NUM_FILES);
  stk_pipeline_destroy(p);
}

/* one STK_TEST_CASE per line: tests/CMakeLists.txt reads them */
// clang-format off
static const stk_test_case cases[] = {
    STK_TEST_CASE(moving_shards_count_every_epoch),
    STK_TEST_CASE(restored_pipeline_counts_on_from_the_checkpoint),
    STK_TEST_CASE(resharded_remainder_counts_its_own_batches),
    STK_TEST_CASE(unknown_reader_name_is_named_with_the_real_ones),
};
// clang-format on

int main(int argc, char **argv) {
  if (stk_test_list_cases(cases, STK_TEST_COUNT(cases), argc, argv)) return 0;
  write_files();
  if (!data_dir) TEST_SKIP("cannot make a temporary directory");
  int rc = stk_test_run_selected("test_reader_meta_epoch", cases, STK_TEST_COUNT(cases), argc, argv);
  stk_test_remove_tree(data_dir);
  free(data_dir);
  return rc ? rc : stk_test_finish("test_reader_meta_epoch");
}
