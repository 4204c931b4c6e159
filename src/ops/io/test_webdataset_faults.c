/* src/ops/io/test_webdataset_faults.c: readers.webdataset on damaged shards and lying index files
 * (tests/wds_fault_shards.py): nothing is lost without a word and nothing is allocated because a
 * file says so. An index announcing 2^61 samples, promising more samples than its shard holds or
 * listing fewer is an error; a shard cut between members is truncated (local and pipe:); a sample
 * without its label is an error or a recorded skip, never label 0; the complete sample before a
 * damaged header is kept under skip_bad_files; member sizes of 2^40 (base-256 and pax) are bad
 * data, not an allocation; a pipe: member larger than the host memory budget is refused by its
 * declared size; a pipe: command's failure exit status is an error; in a pipeline the skips are
 * counted in skipped_files and named shard:key. Skips (77) when python3 is missing. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/io/wds_index.h"
#include "stoker/stoker.h"
#include "wds_testutil.h"
#include "case_list.h"

static char dir[512];

static char *path_of(const char *name) {
  char p[1024];
  snprintf(p, sizeof p, "%s/%s", dir, name);
  return strdup(p);
}

static char *pipe_of(const char *name) {
  char p[1100];
  snprintf(p, sizeof p, "pipe:cat '%s/%s'", dir, name);
  return strdup(p);
}

/* Reads one epoch of a single shard (with an index when idx is not NULL); ids into e. */
static stk_status read_one(char *shard, const char *idx, int skip, int label, wds_epoch *e) {
  char *paths[1] = {shard}, *index[1] = {idx ? path_of(idx) : NULL};
  wds_case c = wds_case_default();
  c.paths = paths, c.num_paths = 1, c.index_paths = idx ? index : NULL, c.batch_size = 2;
  c.skip_bad_files = skip, c.ext1 = "cls", c.label_ext = label ? "cls" : NULL;
  stk_status st = wds_read_epoch(&c, 0, e);
  free(index[0]);
  return st;
}

static int ids_are(const wds_epoch *e, const int *want, int n) {
  if (e->count != n) return 0;
  for (int i = 0; i < n; i++)
    if (e->ids[i] != want[i]) return 0;
  return 1;
}

static void index_lies_are_errors(void) {
  char err[512];
  stk__wds_index ix;
  char *huge = path_of("huge.idx");
  CHECK_MSG(stk__wds_index_load(huge, &ix, err, sizeof err) == STK_EPARSE && strstr(err, "bytes can list"), "%s", err);
  free(huge);
  /* more sample lines than announced; starts out of order */
  char *odd = path_of("odd.idx");
  FILE *f = fopen(odd, "w");
  fprintf(f, "v1.2 1\njpg 512 16 a.jpg\njpg 2560 16 b.jpg\n");
  fclose(f);
  CHECK_MSG(stk__wds_index_load(odd, &ix, err, sizeof err) == STK_EPARSE && strstr(err, "more sample lines"), "%s",
            err);
  f = fopen(odd, "w");
  fprintf(f, "v1.2 2\njpg 2560 16 b.jpg\njpg 512 16 a.jpg\n");
  fclose(f);
  CHECK_MSG(stk__wds_index_load(odd, &ix, err, sizeof err) == STK_EPARSE && strstr(err, "not after"), "%s", err);
  free(odd);
  wds_epoch e;
  char *full = path_of("full.tar"), *cut = path_of("cut.tar");
  CHECK_MSG(read_one(full, "full.idx", 0, 1, &e) == STK_OK && e.count == 8, "the true index: %s", e.err);
  wds_epoch_free(&e);
  CHECK_MSG(read_one(cut, "full.idx", 0, 1, &e) == STK_EIO && strstr(e.err, "cut.tar") &&
                (strstr(e.err, "index") || strstr(e.err, "truncated")),
            "an index of 8 over a shard of 3: %lld samples, %s", (long long)e.count, e.err);
  wds_epoch_free(&e);
  CHECK_MSG(read_one(full, "promise12.idx", 0, 1, &e) == STK_EIO && strstr(e.err, "12"),
            "an index promising 12 of 8: %lld samples, %s", (long long)e.count, e.err);
  wds_epoch_free(&e);
  CHECK_MSG(read_one(full, "short3.idx", 0, 1, &e) == STK_EIO && strstr(e.err, "more than the 3"),
            "an index listing 3 of 8: %lld samples, %s", (long long)e.count, e.err);
  wds_epoch_free(&e);
  free(full), free(cut);
}

static void shard_cut_between_members_is_truncated(void) {
  for (int pipe = 0; pipe < 2; pipe++) {
    char *cut = pipe ? pipe_of("cut.tar") : path_of("cut.tar");
    wds_epoch e;
    CHECK_MSG(read_one(cut, NULL, 0, 1, &e) == STK_EIO && strstr(e.err, "truncated") && strstr(e.err, "cut.tar"),
              "pipe=%d: %lld samples, %s", pipe, (long long)e.count, e.err);
    wds_epoch_free(&e);
    const int want[] = {0, 1, 2};
    CHECK_MSG(read_one(cut, NULL, 1, 1, &e) == STK_OK && ids_are(&e, want, 3) && e.records == 1 && e.skipped == 1,
              "pipe=%d, skip_bad_files: %lld samples, %lld records: %s", pipe, (long long)e.count, (long long)e.records,
              e.err);
    wds_epoch_free(&e);
    free(cut);
  }
}

static void missing_label_is_never_a_number(void) {
  char *shard = path_of("nolabel.tar");
  wds_epoch e;
  CHECK_MSG(read_one(shard, NULL, 0, 1, &e) == STK_EPARSE && strstr(e.err, "dir/s00001") && strstr(e.err, "label"),
            "%s", e.err);
  wds_epoch_free(&e);
  const int want[] = {0, 2, 3};
  CHECK_MSG(read_one(shard, NULL, 1, 1, &e) == STK_OK && ids_are(&e, want, 3) && e.records == 1 &&
                strstr(e.record_names, "nolabel.tar:dir/s00001"),
            "skip_bad_files: %lld samples, records %s", (long long)e.count, e.record_names);
  int labels_ok = 1;
  for (int64_t i = 0; i < e.count; i++) labels_ok &= e.labels[i] == e.ids[i] % 7;
  CHECK(labels_ok);
  wds_epoch_free(&e);
  free(shard);
}

static void sample_before_damaged_header_is_kept(void) {
  char *shard = path_of("damaged.tar");
  wds_epoch e;
  CHECK_MSG(read_one(shard, NULL, 0, 1, &e) == STK_EIO && strstr(e.err, "checksum"), "%s", e.err);
  wds_epoch_free(&e);
  const int want[] = {0, 1};
  CHECK_MSG(read_one(shard, NULL, 1, 1, &e) == STK_OK && ids_are(&e, want, 2) && e.records == 1 && e.skipped == 1,
            "skip_bad_files: %lld samples, %lld records, %lld skipped", (long long)e.count, (long long)e.records,
            (long long)e.skipped);
  wds_epoch_free(&e);
  free(shard);
}

static void huge_member_sizes_are_bad_data(void) {
  const char *names[] = {"huge256.tar", "hugepax.tar"};
  for (int k = 0; k < 4; k++) {
    char *shard = k & 1 ? pipe_of(names[k / 2]) : path_of(names[k / 2]);
    wds_epoch e;
    stk_status st = read_one(shard, NULL, 0, 1, &e);
    CHECK_MSG(st == STK_EIO && strstr(e.err, "truncated"), "%s: %s (%s)", shard, e.err, stk_status_name(st));
    wds_epoch_free(&e);
    const int want[] = {0};
    st = read_one(shard, NULL, 1, 1, &e);
    CHECK_MSG(st == STK_OK && ids_are(&e, want, 1) && e.records >= 1, "%s, skip_bad_files: %s (%s)", shard, e.err,
              stk_status_name(st));
    wds_epoch_free(&e);
    free(shard);
  }
}

static void member_over_budget_refused_by_declared_size(void) {
  char *paths[1] = {pipe_of("big.tar")};
  wds_case c = wds_case_default();
  c.paths = paths, c.num_paths = 1, c.batch_size = 2, c.ext1 = "cls", c.label_ext = "cls";
  c.host_budget = 1 << 20; /* the 2 MiB member is refused before it is read */
  wds_epoch e;
  CHECK_MSG(
      wds_read_epoch(&c, 0, &e) == STK_EPARSE && strstr(e.err, "host memory budget") && strstr(e.err, "dir/s00001"),
      "%s", e.err);
  wds_epoch_free(&e);
  c.skip_bad_files = 1;
  const int want[] = {0, 2};
  CHECK_MSG(wds_read_epoch(&c, 0, &e) == STK_OK && ids_are(&e, want, 2) && e.records == 1 &&
                strstr(e.record_names, "big.tar':dir/s00001"),
            "skip_bad_files: %lld samples: %s", (long long)e.count, e.record_names);
  wds_epoch_free(&e);
  free(paths[0]);
}

static void pipe_failure_exit_status_is_an_error(void) {
  char cmd[1200];
  snprintf(cmd, sizeof cmd, "pipe:cat '%s/full.tar'; exit 3", dir);
  wds_epoch e;
  CHECK_MSG(read_one(cmd, NULL, 0, 1, &e) == STK_EIO && strstr(e.err, "status 3"), "%lld samples: %s",
            (long long)e.count, e.err);
  wds_epoch_free(&e);
  snprintf(cmd, sizeof cmd, "pipe:cat '%s/full.tar'", dir);
  CHECK_MSG(read_one(cmd, NULL, 0, 1, &e) == STK_OK && e.count == 8, "exit 0: %s", e.err);
  wds_epoch_free(&e);
}

/* In a pipeline: the skips reach skipped_files and the record, named shard or shard:key. */
static void skips_reach_the_quarantine_record(void) {
  char *paths[2] = {path_of("damaged.tar"), path_of("nolabel.tar")};
  stk_pipeline_options o;
  stk_pipeline_options_default(&o);
  o.batch_size = 2, o.num_threads = 2, o.device_id = -1;
  stk_pipeline *p;
  stk_args *a;
  CHECK(stk_pipeline_new(&o, &p) == STK_OK && stk_args_new(&a) == STK_OK);
  const char *exts[] = {"jpg", "cls"};
  stk_args_set_string_list(a, "paths", (const char *const *)paths, 2);
  stk_args_set_string_list(a, "ext", exts, 2);
  stk_args_set_string(a, "label_ext", "cls");
  stk_args_set_bool(a, "skip_bad_files", 1);
  CHECK(stk_pipeline_add_op(p, "readers.webdataset", "wds", NULL, 0, a) == STK_OK);
  const char *outs[] = {"wds[0]", "wds[1]"};
  CHECK(stk_pipeline_set_outputs(p, outs, 2) == STK_OK);
  CHECK_MSG(stk_pipeline_build(p) == STK_OK, "%s", stk_pipeline_last_error(p));
  int valid = 0;
  stk_batch *b;
  stk_status st;
  while ((st = stk_pipeline_next(p, &b)) == STK_OK) {
    valid += stk_batch_valid_samples(b);
    stk_batch_release(b);
  }
  CHECK_MSG(st == STK_EOF_EPOCH, "%s", stk_pipeline_last_error(p));
  stk_pipeline_stats stats;
  stk_pipeline_stats_get(p, &stats);
  char *json = NULL;
  CHECK(stk_pipeline_bad_files_json(p, &json) == STK_OK);
  CHECK_MSG(valid == 5 && stats.skipped_files == 2, "%d samples, %llu skipped", valid,
            (unsigned long long)stats.skipped_files);
  CHECK_MSG(json && strstr(json, "damaged.tar") && strstr(json, "nolabel.tar:dir/s00001") && !strstr(json, "unnamed"),
            "%s", json ? json : "(none)");
  free(json);
  stk_args_destroy(a);
  stk_pipeline_destroy(p);
  free(paths[0]), free(paths[1]);
}

/* A pipeline over one shard: outputs "jpg" and ext1 (label_ext "cls" when ext1 is "cls"); counts
 * the valid samples and skipped files. *json gets the bad files record. */
static stk_status run_pipeline(char *shard, const char *ext1, size_t budget, int *valid, uint64_t *skipped,
                               char **json) {
  stk_pipeline_options o;
  stk_pipeline_options_default(&o);
  o.batch_size = 2, o.num_threads = 2, o.device_id = -1, o.host_memory_budget = budget, o.skip_bad_files = 1;
  stk_pipeline *p;
  stk_args *a;
  stk_pipeline_new(&o, &p);
  stk_args_new(&a);
  const char *exts[] = {"jpg", ext1};
  stk_args_set_string_list(a, "paths", (const char *const *)&shard, 1);
  stk_args_set_string_list(a, "ext", exts, 2);
  if (strcmp(ext1, "cls") == 0) stk_args_set_string(a, "label_ext", "cls");
  stk_status st = stk_pipeline_add_op(p, "readers.webdataset", "wds", NULL, 0, a);
  const char *outs[] = {"wds[0]", "wds[1]"};
  if (st == STK_OK) st = stk_pipeline_set_outputs(p, outs, 2);
  if (st == STK_OK) st = stk_pipeline_build(p);
  stk_batch *b;
  *valid = 0;
  while (st == STK_OK && (st = stk_pipeline_next(p, &b)) == STK_OK) {
    *valid += stk_batch_valid_samples(b);
    stk_batch_release(b);
  }
  if (st != STK_EOF_EPOCH) fprintf(stderr, "pipeline: %s\n", stk_pipeline_last_error(p));
  stk_pipeline_stats stats;
  stk_pipeline_stats_get(p, &stats);
  *skipped = stats.skipped_files;
  stk_pipeline_bad_files_json(p, json);
  stk_args_destroy(a);
  stk_pipeline_destroy(p);
  return st == STK_EOF_EPOCH ? STK_OK : st;
}

/* In a pipeline the budget is known when the reader starts: a pipe: member over it is refused by
 * its declared size (not read, then refused by the output); empty components copy nothing. */
static void pipeline_budget_and_empty_components(void) {
  char *shard = pipe_of("big.tar");
  int valid;
  uint64_t skipped;
  char *json = NULL;
  CHECK(run_pipeline(shard, "cls", 1 << 20, &valid, &skipped, &json) == STK_OK);
  CHECK_MSG(valid == 2 && skipped == 1 && json && strstr(json, "declares") && strstr(json, "dir/s00001"),
            "%d samples, %llu skipped: %s", valid, (unsigned long long)skipped, json ? json : "");
  free(json), free(shard);
  shard = path_of("empty.tar");
  json = NULL;
  CHECK(run_pipeline(shard, "txt", 0, &valid, &skipped, &json) == STK_OK && valid == 4 && skipped == 0);
  free(json), free(shard);
}

/* one STK_TEST_CASE per line: tests/CMakeLists.txt reads them */
// clang-format off
static const stk_test_case cases[] = {
    STK_TEST_CASE(index_lies_are_errors),
    STK_TEST_CASE(shard_cut_between_members_is_truncated),
    STK_TEST_CASE(missing_label_is_never_a_number),
    STK_TEST_CASE(sample_before_damaged_header_is_kept),
    STK_TEST_CASE(huge_member_sizes_are_bad_data),
    STK_TEST_CASE(member_over_budget_refused_by_declared_size),
    STK_TEST_CASE(pipe_failure_exit_status_is_an_error),
    STK_TEST_CASE(skips_reach_the_quarantine_record),
    STK_TEST_CASE(pipeline_budget_and_empty_components),
};
// clang-format on

int main(int argc, char **argv) {
  if (stk_test_list_cases(cases, STK_TEST_COUNT(cases), argc, argv)) return 0;
  if (system("python3 -c 'import tarfile' >/dev/null 2>&1") != 0) TEST_SKIP("python3 (tarfile) is not installed");
  char *tmp = stk_test_tmpdir("webdataset_faults");
  snprintf(dir, sizeof dir, "%s", tmp);
  free(tmp);
  char cmd[2048];
  snprintf(cmd, sizeof cmd, "python3 %s --out %s", stk_test_source_path("tests/wds_fault_shards.py"), dir);
  if (system(cmd) != 0) {
    fprintf(stderr, "cannot make shards: %s\n", cmd);
    return 1;
  }
  return stk_test_run_cases("test_webdataset_faults", cases, STK_TEST_COUNT(cases), argc, argv);
}
