/* tests/test_checkpoint_checksum.c: a checkpoint text is checked as outside input
 * (docs/checkpoint.md, Errors): every text ends with a checksum line (FNV-1a-64 of every byte
 * before it), a damaged text is refused as corrupt instead of being read as another position,
 * older texts without the line are still read, and every field is checked with and without
 * skip_bad_files (counts that would overflow or be cut to an int, ids outside the data set,
 * refill positions outside the epoch, positions past the epoch or the refill cursor).
 * CPU only: readers.file over 23 one-byte files, output the label (the sample's index). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "case_list.h"
#include "stoker/stoker.h"
#include "testutil.h"

#define NUM_FILES 23
#define BATCH     4
#define MISSING   5 /* with skip_bad: listing entry 5 names a file that does not exist */

static char *data_dir;

static void write_files(void) {
  data_dir = stk_test_tmpdir("ckptsum");
  for (int i = 0; data_dir && i < NUM_FILES; i++) {
    char path[512];
    snprintf(path, sizeof path, "%s/s%02d.bin", data_dir, i);
    FILE *f = fopen(path, "wb");
    if (f) fputs("x", f), fclose(f);
  }
}

/* readers.file (shuffled) -> reader[1]; restore `text` before build when given. NULL on failure,
 * the message in err. */
static stk_pipeline *make(const char *text, int skip_bad, char *err, size_t err_size) {
  stk_pipeline_options o;
  stk_pipeline_options_default(&o);
  o.batch_size = BATCH;
  o.num_threads = 1;
  o.prefetch_queue_depth = 2;
  o.seed = 5;
  o.pin_threads = 0;
  o.skip_bad_files = skip_bad;
  stk_pipeline *p = NULL;
  if (stk_pipeline_new(&o, &p) != STK_OK) return NULL;
  stk_args *a;
  stk_args_new(&a);
  char names[NUM_FILES][16];
  const char *files[NUM_FILES];
  for (int i = 0; i < NUM_FILES; i++)
    snprintf(names[i], sizeof names[i], "%s%02d.bin", skip_bad && i == MISSING ? "gone" : "s", i), files[i] = names[i];
  stk_args_set_string(a, "file_root", data_dir);
  stk_args_set_string_list(a, "files", files, NUM_FILES);
  stk_args_set_bool(a, "random_shuffle", 1);
  stk_args_set_int(a, "initial_fill", 5);
  const char *outs[1] = {"reader[1]"};
  stk_status st = stk_pipeline_add_op(p, "readers.file", "reader", NULL, 0, a);
  if (st == STK_OK) st = stk_pipeline_set_outputs(p, outs, 1);
  if (st == STK_OK && text) st = stk_pipeline_restore(p, text);
  if (st == STK_OK) st = stk_pipeline_build(p);
  stk_args_destroy(a);
  if (st != STK_OK) {
    snprintf(err, err_size, "%s", stk_pipeline_last_error(p));
    stk_pipeline_destroy(p);
    return NULL;
  }
  return p;
}

/* The labels of the next batch, as one number (-1 at an error or the epoch's end). */
static int64_t next_labels(stk_pipeline *p) {
  stk_batch *b = NULL;
  if (stk_pipeline_next(p, &b) != STK_OK) return -1;
  int64_t h = stk_batch_valid_samples(b);
  for (int s = 0; s < stk_batch_size(b); s++) {
    stk_tensor_view v;
    int32_t label = -1;
    if (stk_batch_sample(b, 0, s, &v) == STK_OK && v.nbytes == 4) memcpy(&label, v.data, 4);
    h = h * 31 + label;
  }
  stk_batch_release(b);
  return h;
}

/* A checkpoint after `batches` batches, and the labels of the batch after it in *next. */
static char *checkpoint_after(int skip_bad, int batches, int64_t *next) {
  char err[1024] = "";
  stk_pipeline *p = make(NULL, skip_bad, err, sizeof err);
  CHECK_MSG(p != NULL, "build: %s", err);
  if (!p) return NULL;
  for (int i = 0; i < batches; i++) CHECK(next_labels(p) >= 0);
  char *text = NULL;
  CHECK_MSG(stk_pipeline_checkpoint(p, &text) == STK_OK, "%s", stk_pipeline_last_error(p));
  if (next) *next = next_labels(p);
  stk_pipeline_destroy(p);
  return text;
}

/* The restore of `text` on an unbuilt pipeline or its build: refused, the message holding `needle`. */
static void check_refused(const char *text, int skip_bad, const char *needle, const char *what) {
  char err[2048] = "";
  stk_pipeline *p = make(text, skip_bad, err, sizeof err);
  CHECK_MSG(p == NULL, "%s: accepted, wanted an error with \"%s\"", what, needle);
  CHECK_MSG(p != NULL || strstr(err, needle) != NULL, "%s: message \"%s\" lacks \"%s\"", what, err, needle);
  stk_pipeline_destroy(p);
}

/* `text` with the whole line of `key` ("position=") replaced by `line` (checksum recomputed). */
static char *with_line(const char *text, const char *key, const char *line) {
  const char *at = strstr(text, key), *nl = at ? strchr(at, '\n') : NULL;
  if (!nl) return strdup(text);
  char old[4096];
  snprintf(old, sizeof old, "%.*s", (int)(nl - at), at);
  return stk_test_checkpoint_edit(text, old, line);
}

static void every_checkpoint_ends_with_its_checksum(void) {
  char *text = checkpoint_after(0, 2, NULL);
  if (!text) return;
  const char *line = strstr(text, "\nchecksum=");
  CHECK_MSG(strncmp(text, "stoker-checkpoint 5\n", 20) == 0, "%s", text);
  CHECK_MSG(line != NULL, "no checksum line in:\n%s", text);
  if (line) {
    char want[64];
    snprintf(want, sizeof want, "\nchecksum=%016llx\n", stk_test_checkpoint_checksum(text, (size_t)(line - text + 1)));
    CHECK_MSG(!strcmp(line, want), "checksum line \"%s\", wanted \"%s\" (the last line)", line, want);
  }
  free(text);
}

/* Every single-bit flip of every byte is refused; a flip before the checksum line's newline is
 * named as corruption (unless it makes a NUL, which ends the text early: refused all the same). */
static void any_single_bit_flip_is_refused_as_corrupt(void) {
  char *text = checkpoint_after(0, 2, NULL);
  if (!text) return;
  size_t n = strlen(text), covered = (size_t)(strstr(text, "\nchecksum=") - text);
  char *flipped = malloc(n + 1);
  int accepted = 0, unnamed = 0;
  for (size_t i = 0; flipped && i < n; i++)
    for (int bit = 0; bit < 8; bit++) {
      memcpy(flipped, text, n + 1);
      flipped[i] = (char)(flipped[i] ^ (1 << bit));
      stk_pipeline_options o;
      stk_pipeline_options_default(&o);
      stk_pipeline *p = NULL;
      if (stk_pipeline_new(&o, &p) != STK_OK) continue;
      if (stk_pipeline_restore(p, flipped) == STK_OK) {
        if (accepted++ < 3) fprintf(stderr, "byte %zu bit %d: accepted\n", i, bit);
      } else if (i < covered && flipped[i] != '\0' && !strstr(stk_pipeline_last_error(p), "corrupt")) {
        if (unnamed++ < 3) fprintf(stderr, "byte %zu bit %d: %s\n", i, bit, stk_pipeline_last_error(p));
      }
      stk_pipeline_destroy(p);
    }
  CHECK_MSG(accepted == 0, "%d flipped texts accepted", accepted);
  CHECK_MSG(unnamed == 0, "%d flips refused without saying the text is corrupt", unnamed);
  free(flipped);
  free(text);
}

/* A text written before the checksum line (version 3, no checksum) still resumes exactly. */
static void older_texts_without_the_checksum_line_are_read(void) {
  int64_t next = 0;
  char *text = checkpoint_after(0, 3, &next);
  if (!text) return;
  *strstr(text, "checksum=") = '\0';
  text[strlen("stoker-checkpoint ")] = '3';
  char err[1024] = "";
  stk_pipeline *p = make(text, 0, err, sizeof err);
  CHECK_MSG(p != NULL, "version 3 without checksum refused: %s", err);
  if (p) CHECK_MSG(next_labels(p) == next, "the resumed batch differs");
  stk_pipeline_destroy(p);
  free(text);
}

static void version_5_needs_the_checksum_as_its_last_line(void) {
  char *text = checkpoint_after(0, 1, NULL);
  if (!text) return;
  size_t n = strlen(text);
  char *longer = malloc(n + 16);
  snprintf(longer, n + 16, "%sseed=5\n", text);
  check_refused(longer, 0, "must be the last", "a line after the checksum");
  *strstr(text, "checksum=") = '\0';
  check_refused(text, 0, "checksum is missing", "version 5 without the checksum");
  free(longer);
  free(text);
}

/* Without skip_bad_files: the forged value is refused even with a correct checksum. */
static void forged_fields_are_refused(void) {
  char *text = checkpoint_after(0, 2, NULL);
  if (!text) return;
  static const char *forged[][3] = {
      {"epoch=", "epoch=9223372036854775808", "bad value for epoch"},
      {"epoch=", "epoch=18446744073709551615", "bad value for epoch"},
      {"shard=", "shard=0/4294967298", "bad value for shard"},
      {"shard=", "shard=0/0", "bad value for shard"},
      {"batch_size=", "batch_size=4294967300", "batch_size"},
      {"position=", "position=99", "outside epoch"},
      {"position=", "position=1000000000000000000", "outside epoch"},
      {"position=", "position=-1", "bad value for position"},
      {"data=", "data=0000000000000000/18446744073709551616", "bad value for data"},
      {"refill=", "refill=2:8:", "refill cursor"},
      {"quarantine=", "quarantine=1:23", "outside the data set"},
  };
  for (size_t i = 0; i < sizeof forged / sizeof forged[0]; i++) {
    char *f = with_line(text, forged[i][0], forged[i][1]);
    check_refused(f, 0, forged[i][2], forged[i][1]);
    free(f);
  }
  free(text);
}

/* Under skip_bad_files (a missing file, so the text carries a refill cursor and a quarantine
 * record): positions, the cursor and the record are checked too. */
static void forged_fields_under_skip_bad_files_are_refused(void) {
  int64_t next = 0;
  char *text = checkpoint_after(1, 3, &next);
  if (!text) return;
  CHECK_MSG(strstr(text, "\nrefill=2:") && !strstr(text, "\nquarantine=\n"), "no cursor or record in:\n%s", text);
  char err[1024] = "";
  stk_pipeline *p = make(text, 1, err, sizeof err); /* the unforged text resumes exactly */
  CHECK_MSG(p && next_labels(p) == next, "the resumed batch differs: %s", err);
  stk_pipeline_destroy(p);
  static const char *forged[][3] = {
      {"position=", "position=0", "position 0 with a refill cursor"},
      {"position=", "position=51", "past the refill cursor"},
      {"position=", "position=1000000000000000000", "past the refill cursor"},
      {"refill=", "refill=2:9223372036854775800:", "past the epoch"},
      {"refill=", "refill=2:12:30+1", "past the epoch"},
      {"refill=", "refill=2:12:13+9223372036854775794", "past the epoch"},
      {"refill=", "refill=2:12:13+9223372036854775795", "bad value for refill"},
      {"quarantine=", "quarantine=1:23", "outside the data set"},
      {"quarantine=", "quarantine=1:9223372036854775807", "outside the data set"},
      {"quarantine=", "quarantine=18446744073709551615:0-9223372036854775806", "outside the data set"},
      {"quarantine=", "quarantine=2:0-9223372036854775807", "bad value for quarantine"},
      {"epoch=", "epoch=9223372036854775808", "bad value for epoch"},
  };
  for (size_t i = 0; i < sizeof forged / sizeof forged[0]; i++) {
    char *f = with_line(text, forged[i][0], forged[i][1]);
    check_refused(f, 1, forged[i][2], forged[i][1]);
    free(f);
  }
  free(text);
}

/* one STK_TEST_CASE per line: tests/CMakeLists.txt reads them */
// clang-format off
static const stk_test_case cases[] = {
    STK_TEST_CASE(every_checkpoint_ends_with_its_checksum),
    STK_TEST_CASE(any_single_bit_flip_is_refused_as_corrupt),
    STK_TEST_CASE(older_texts_without_the_checksum_line_are_read),
    STK_TEST_CASE(version_5_needs_the_checksum_as_its_last_line),
    STK_TEST_CASE(forged_fields_are_refused),
    STK_TEST_CASE(forged_fields_under_skip_bad_files_are_refused),
};
// clang-format on

int main(int argc, char **argv) {
  if (stk_test_list_cases(cases, STK_TEST_COUNT(cases), argc, argv)) return 0;
  write_files();
  if (!data_dir) TEST_SKIP("cannot make a temporary directory");
  int rc = stk_test_run_selected("test_checkpoint_checksum", cases, STK_TEST_COUNT(cases), argc, argv);
  stk_test_remove_tree(data_dir);
  free(data_dir);
  return rc ? rc : stk_test_finish("test_checkpoint_checksum");
}
