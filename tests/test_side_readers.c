/* tests/test_side_readers.c: a pipeline with several readers (src/core/exec/side_readers.c): the
 * first reader's epochs end stk_pipeline_next, a further reader plans every batch from its own
 * epoch and moves into its next one by itself; reader_meta, the per-reader valid samples and
 * source_info follow each reader; a mid-epoch reset puts a further reader back after the batches
 * the consumer got; what cannot work with several readers is refused, named. Test-only
 * operators (tests/pipeline_fake_ops.h: test.reader and test.seekable_reader give sample ids 0..num_samples-1 in order,
 * its last batch completed from the start of the epoch). */
#include "pipeline_fake_ops.h"
#include "case_list.h"
#include "testutil.h"

static stk_pipeline *two_readers(int64_t first_samples, int64_t second_samples, int skip_bad) {
  stk_pipeline *p = NULL;
  stk_pipeline_options o;
  stk_pipeline_options_default(&o);
  o.batch_size = 2;
  o.num_threads = 2;
  CHECK(stk_pipeline_new(&o, &p) == STK_OK);
  stk_args *a, *b;
  stk_args_new(&a);
  stk_args_new(&b);
  stk_args_set_int(a, "num_samples", first_samples);
  stk_args_set_int(b, "num_samples", second_samples);
  if (skip_bad) stk_args_set_bool(a, "skip_bad_files", 1);
  CHECK(stk_pipeline_add_op(p, "test.reader", "first", NULL, 0, a) == STK_OK);
  CHECK(stk_pipeline_add_op(p, "test.seekable_reader", "second", NULL, 0, b) == STK_OK);
  stk_args_destroy(a);
  stk_args_destroy(b);
  CHECK(stk_pipeline_set_outputs(p, (const char *[]){"first", "second"}, 2) == STK_OK);
  return p;
}

/* The sample ids of output o of batch b (test.reader writes the id as 4 bytes). */
static void ids(stk_batch *b, int o, int32_t out[2]) {
  for (int s = 0; s < 2; s++) {
    stk_tensor_view v;
    CHECK(stk_batch_sample(b, o, s, &v) == STK_OK);
    memcpy(&out[s], v.data, sizeof out[s]);
  }
}

/* first: 5 samples (3 batches an epoch); second: 3 samples (2 batches: [0 1] [2 fill]). */
static void each_reader_keeps_its_own_epoch(void) {
  stk_pipeline *p = two_readers(5, 3, 0);
  CHECK_MSG(stk_pipeline_build(p) == STK_OK, "%s", stk_pipeline_last_error(p));
  const int32_t want_second[6][2] = {{0, 1}, {2, 0}, {0, 1}, {2, 0}, {0, 1}, {2, 0}};
  const int want_valid[6] = {2, 1, 2, 1, 2, 1};
  for (int k = 0; k < 6; k++) {
    if (k == 3) {
      stk_batch *end = NULL;
      CHECK(stk_pipeline_next(p, &end) == STK_EOF_EPOCH); /* the first reader's epoch ended */
      CHECK(stk_pipeline_reset(p) == STK_OK);
    }
    stk_batch *b = NULL;
    CHECK_MSG(stk_pipeline_next(p, &b) == STK_OK, "batch %d: %s", k, stk_pipeline_last_error(p));
    int32_t got[2];
    ids(b, 1, got);
    CHECK_MSG(got[0] == want_second[k][0] && got[1] == want_second[k][1], "batch %d: second gave %d %d", k, got[0],
              got[1]);
    int valid = -1, last = -1;
    CHECK(stk_batch_reader_valid_samples(b, "second", &valid, &last) == STK_OK);
    CHECK_MSG(valid == want_valid[k] && last == (valid == 1), "batch %d: valid %d last %d", k, valid, last);
    CHECK(stk_batch_reader_valid_samples(b, NULL, &valid, &last) == STK_OK);
    CHECK(valid == stk_batch_valid_samples(b));
    CHECK(stk_batch_reader_valid_samples(b, "nobody", &valid, &last) == STK_ENOENT);
    char want[64];
    snprintf(want, sizeof want, "dir/file_%d.jpg", got[1]);
    CHECK_MSG(!strcmp(stk_batch_source_info(b, 1, 1), want), "source_info %s", stk_batch_source_info(b, 1, 1));
    ids(b, 0, got);
    snprintf(want, sizeof want, "dir/file_%d.jpg", got[0]);
    CHECK(!strcmp(stk_batch_source_info(b, 0, 0), want));
    CHECK(stk_batch_source_info(b, 2, 0) == NULL);
    stk_batch_release(b);
  }
  stk_reader_meta m;
  CHECK(stk_pipeline_reader_meta(p, "second", &m) == STK_OK);
  CHECK_MSG(m.epoch == 3 && m.epoch_next_batch == 0 && !m.is_epoch_reader, "second at %llu/%lld",
            (unsigned long long)m.epoch, (long long)m.epoch_next_batch);
  CHECK(stk_pipeline_reader_meta(p, "first", &m) == STK_OK);
  CHECK(m.epoch == 1 && m.epoch_next_batch == 3 && m.is_epoch_reader);
  stk_pipeline_destroy(p);
}

/* A reset in the middle of the first reader's epoch drops the batches in flight; the second
 * reader goes on right after the batch the consumer got, not after what was prefetched. */
static void mid_epoch_reset_keeps_the_further_readers_place(void) {
  stk_pipeline *p = two_readers(20, 7, 0);
  CHECK_MSG(stk_pipeline_build(p) == STK_OK, "%s", stk_pipeline_last_error(p));
  stk_batch *b = NULL;
  CHECK(stk_pipeline_next(p, &b) == STK_OK);
  stk_batch_release(b);
  CHECK(stk_pipeline_reset(p) == STK_OK);
  CHECK(stk_pipeline_next(p, &b) == STK_OK);
  int32_t got[2];
  ids(b, 1, got);
  CHECK_MSG(got[0] == 2 && got[1] == 3, "after the reset the second reader gave %d %d, not 2 3", got[0], got[1]);
  ids(b, 0, got);
  CHECK(got[0] == 0 && got[1] == 1); /* the first reader's next epoch */
  stk_batch_release(b);
  stk_pipeline_destroy(p);
}

/* skip_bad_files replaces a bad sample from the epoch reader only: refused with several readers. */
static void skip_bad_files_with_several_readers_refused(void) {
  stk_pipeline *p = two_readers(5, 3, 1);
  CHECK(stk_pipeline_build(p) == STK_EINVAL);
  CHECK_MSG(strstr(stk_pipeline_last_error(p), "skip_bad_files") && strstr(stk_pipeline_last_error(p), "second"), "%s",
            stk_pipeline_last_error(p));
  stk_pipeline_destroy(p);
}

/* one STK_TEST_CASE per line: tests/CMakeLists.txt reads them */
// clang-format off
static const stk_test_case cases[] = {
    STK_TEST_CASE(each_reader_keeps_its_own_epoch),
    STK_TEST_CASE(mid_epoch_reset_keeps_the_further_readers_place),
    STK_TEST_CASE(skip_bad_files_with_several_readers_refused),
};
// clang-format on

int main(int argc, char **argv) {
  fake_ops_register();
  return stk_test_run_cases("test_side_readers", cases, STK_TEST_COUNT(cases), argc, argv);
}
