/* src/ops/io/test_shuffle.c: the readers' one shuffle (src/ops/io/shuffle.h). The orders it gives
 * are pinned: a checkpoint written by one build resumes in another only if both order every epoch
 * the same way, so a change of draws is a format change, never a side effect of a refactor. */
#include <stdint.h>
#include <stdlib.h>

#include "case_list.h"
#include "ops/io/reader_file.h"
#include "ops/io/shuffle.h"

/* FNV-1a over readers.file's shard orders: shuffles off (stick_to_shard), random_shuffle with a
 * shuffle buffer of 64, shuffle_after_epoch; 1-3 shards; epochs 0-2; 1,000 samples; seed 1234. */
static uint64_t file_orders_digest(void) {
  uint64_t h = 1469598103934665603ull;
  for (int mode = 0; mode < 3; mode++)
    for (int shards = 1; shards <= 3; shards++)
      for (uint64_t epoch = 0; epoch < 3; epoch++) {
        stk__file_reader_config c = {0};
        c.random_shuffle = mode == 1;
        c.shuffle_after_epoch = mode == 2;
        c.initial_fill = 64;
        c.seed = 1234;
        c.num_shards = shards;
        c.stick_to_shard = mode == 0 && shards > 1;
        int64_t n = 1000, *all = NULL, out[1000], size = 0;
        CHECK(stk__file_epoch_sequence(&c, n, epoch, &all) == STK_OK);
        for (int s = 0; s < shards; s++) {
          CHECK(stk__file_shard_order(&c, n, epoch, shards, s, all, out, &size) == STK_OK);
          for (int64_t i = 0; i < size; i++) h = (h ^ (uint64_t)out[i]) * 1099511628211ull;
        }
        free(all);
      }
  return h;
}

static void file_reader_orders_are_pinned(void) {
  uint64_t got = file_orders_digest();
  CHECK_MSG(got == 0xdf36a494c9e73b91ull, "readers.file's orders changed: digest %016llx", (unsigned long long)got);
}

/* A permutation of records of any size moves whole records and is a permutation. */
static void permute_moves_whole_records(void) {
  struct rec {
    int64_t id;
    char pad[40];
  } r[257];
  for (int i = 0; i < 257; i++) {
    r[i].id = i;
    memset(r[i].pad, (char)i, sizeof r[i].pad);
  }
  stk__shuffle_permute(r, sizeof r[0], 257, STK__SHUFFLE_WEBDATASET, 7, 3, 0);
  int seen[257] = {0}, moved = 0;
  for (int i = 0; i < 257; i++) {
    CHECK(r[i].id >= 0 && r[i].id < 257);
    seen[r[i].id]++;
    moved += r[i].id != i;
    CHECK(r[i].pad[39] == (char)r[i].id);
  }
  for (int i = 0; i < 257; i++) CHECK(seen[i] == 1);
  CHECK(moved > 200);
}

/* The same keys give the same draw; another domain, epoch or stream another sequence. */
static void draws_depend_only_on_their_keys(void) {
  int same = 0, other_domain = 0, other_epoch = 0;
  for (int d = 0; d < 100; d++) {
    int64_t a = stk__shuffle_index(STK__SHUFFLE_FILES, 1, 0, 0, d, 1000000);
    same += a == stk__shuffle_index(STK__SHUFFLE_FILES, 1, 0, 0, d, 1000000);
    other_domain += a == stk__shuffle_index(STK__SHUFFLE_WEBDATASET, 1, 0, 0, d, 1000000);
    other_epoch += a == stk__shuffle_index(STK__SHUFFLE_FILES, 1, 1, 0, d, 1000000);
    CHECK(a >= 0 && a < 1000000);
  }
  CHECK(same == 100);
  CHECK(other_domain < 3 && other_epoch < 3);
  CHECK(stk__shuffle_epoch_shard(0, 2, 3, 2) == 1 && stk__shuffle_epoch_shard(1, 2, 3, 2) == 2);
}

// clang-format off
static const stk_test_case cases[] = {
    STK_TEST_CASE(file_reader_orders_are_pinned),
    STK_TEST_CASE(permute_moves_whole_records),
    STK_TEST_CASE(draws_depend_only_on_their_keys),
};
// clang-format on

int main(int argc, char **argv) {
  if (stk_test_list_cases(cases, STK_TEST_COUNT(cases), argc, argv)) return 0;
  int rc = stk_test_run_selected("test_shuffle", cases, STK_TEST_COUNT(cases), argc, argv);
  return rc ? rc : stk_test_finish("test_shuffle");
}
