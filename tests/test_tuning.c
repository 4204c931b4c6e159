/* tests/test_tuning.c: the knob table (src/base/tuning.c) -- its rows are well formed, its one
 * reader takes good values and refuses bad ones naming the variable, a retired variable fails the
 * check, a pipeline build fails on a bad knob, no library file reads a STOKER_ variable behind
 * the table's back, and docs/tuning.md's generated list is the table's (the test prints the
 * expected text when they differ; `test_tuning --write-doc` rewrites the list in place). CPU only. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/tuning.h"
#include "case_list.h"
#include "stoker/pipeline.h"
#include "testutil.h"

static const char kBegin[] = "<!-- knobs: generated from src/base/tuning.c (tests/test_tuning --write-doc) -->\n";
static const char kEnd[] = "<!-- end of knobs -->\n";

static const char *type_name(stk__knob_type t) {
  return t == STK__KNOB_BOOL ? "0 or 1" : t == STK__KNOB_INT ? "whole number" : t == STK__KNOB_FLOAT ? "number" : "text";
}

static const char *kind_title(stk__knob_kind k) {
  switch (k) {
  case STK__KNOB_USER: return "Settings";
  case STK__KNOB_DIAGNOSTIC: return "Diagnostics (change no result)";
  case STK__KNOB_AB: return "Open A/B switches";
  case STK__KNOB_KEPT: return "Finished A/B switches whose other path the tests still compare";
  }
  return "?";
}

/* Appends `text` as a Markdown bullet wrapped at 100 columns (continuation lines indented by two). */
static size_t put_wrapped(char *buf, size_t size, size_t at, const char *text) {
  size_t column = 0;
  const char *p = text;
  while (*p) {
    size_t word = strcspn(p, " ");
    size_t indent = column == 0 && p != text ? 2 : 0;
    if (column > 0 && column + 1 + word > 100) {
      at += (size_t)snprintf(buf + at, at < size ? size - at : 0, "\n  ");
      column = 2;
    } else if (column > 0) {
      at += (size_t)snprintf(buf + at, at < size ? size - at : 0, " ");
      column++;
    }
    at += (size_t)snprintf(buf + at, at < size ? size - at : 0, "%*s%.*s", (int)indent, "", (int)word, p);
    column += indent + word;
    p += word;
    while (*p == ' ') p++;
  }
  return at + (size_t)snprintf(buf + at, at < size ? size - at : 0, "\n");
}

/* The generated list: one section per kind, one bullet per row, then the retired variables. */
static size_t generate(char *buf, size_t size) {
  size_t at = 0;
  char line[2048];
#define PUT(...) at += (size_t)snprintf(buf + at, at < size ? size - at : 0, __VA_ARGS__)
  PUT("%s", kBegin);
  for (int kind = STK__KNOB_USER; kind <= STK__KNOB_KEPT; kind++) {
    PUT("\n### %s\n\n", kind_title((stk__knob_kind)kind));
    for (int k = 0; k < STK__KNOB_COUNT; k++) {
      const stk__knob_row *r = stk__tuning_row((stk__knob)k);
      if ((int)r->kind != kind) continue;
      char range[64] = "";
      if (r->type == STK__KNOB_INT) snprintf(range, sizeof range, " from %.0f to %.0f", r->min, r->max);
      if (r->type == STK__KNOB_FLOAT) snprintf(range, sizeof range, " from %g to %g", r->min, r->max);
      snprintf(line, sizeof line, "- `%s` (%s%s; default %s; read by `%s`): %s", r->name, type_name(r->type), range,
               r->default_text, r->read_by, r->doc);
      at = put_wrapped(buf, size, at, line);
    }
  }
  size_t n = 0;
  const stk__knob_retired *gone = stk__tuning_retired(&n);
  PUT("\n### Retired (a pipeline refuses to build while one is set)\n\n");
  for (size_t i = 0; i < n; i++) {
    snprintf(line, sizeof line, "- `%s`: %s.", gone[i].name, gone[i].why);
    at = put_wrapped(buf, size, at, line);
  }
  PUT("\n%s", kEnd);
#undef PUT
  return at;
}

static char *read_file(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *s = (char *)calloc((size_t)n + 1, 1);
  if (s && fread(s, 1, (size_t)n, f) != (size_t)n) s[0] = 0;
  fclose(f);
  return s;
}

static void doc_path(char *path, size_t size) { snprintf(path, size, "%s/docs/tuning.md", STOKER_SOURCE_DIR); }

static void test_doc_lists_the_table(void) {
  static char want[65536];
  CHECK(generate(want, sizeof want) < sizeof want);
  char path[1024];
  doc_path(path, sizeof path);
  char *doc = read_file(path);
  CHECK_MSG(doc != NULL, "cannot read %s", path);
  if (!doc) return;
  char *begin = strstr(doc, kBegin), *end = begin ? strstr(begin, kEnd) : NULL;
  CHECK_MSG(begin && end, "%s has no generated knob list (markers)", path);
  if (begin && end) {
    end += strlen(kEnd);
    int same = (size_t)(end - begin) == strlen(want) && memcmp(begin, want, strlen(want)) == 0;
    CHECK_MSG(same, "docs/tuning.md's knob list is not the table's: run build/tests/test_tuning --write-doc; "
                    "expected:\n%s", want);
  }
  free(doc);
}

/* Every row: a STOKER_ name, a doc, a reader, a default inside its range. */
static void test_rows_are_well_formed(void) {
  for (int k = 0; k < STK__KNOB_COUNT; k++) {
    const stk__knob_row *r = stk__tuning_row((stk__knob)k);
    CHECK_MSG(r && r->name && strncmp(r->name, "STOKER_", 7) == 0, "row %d", k);
    if (!r || !r->name) continue;
    CHECK_MSG(r->doc && strlen(r->doc) > 20 && r->read_by && r->default_text, "%s: doc, reader, default", r->name);
    if (r->type == STK__KNOB_BOOL) CHECK_MSG(r->default_value == 0 || r->default_value == 1, "%s", r->name);
    if (r->type == STK__KNOB_INT || r->type == STK__KNOB_FLOAT)
      CHECK_MSG(r->min <= r->default_value && r->default_value <= r->max, "%s: default outside its range", r->name);
    for (int j = 0; j < k; j++) CHECK_MSG(strcmp(stk__tuning_row((stk__knob)j)->name, r->name) != 0, "%s twice", r->name);
  }
  CHECK(stk__tuning_row(STK__KNOB_COUNT) == NULL);
}

static void test_unset_gives_default_and_set_is_read(void) {
  unsetenv("STOKER_ARENA_RING");
  double v = -5;
  int set = -1;
  char err[256] = "";
  CHECK(stk__tuning_read(STK__KNOB_ARENA_RING, &v, NULL, &set, err, sizeof err) == STK_OK && v == 4 && set == 0);
  setenv("STOKER_ARENA_RING", "2", 1);
  CHECK(stk__tuning_read(STK__KNOB_ARENA_RING, &v, NULL, &set, err, sizeof err) == STK_OK && v == 2 && set == 1);
  CHECK(stk__tuning_int(STK__KNOB_ARENA_RING) == 2);
  unsetenv("STOKER_ARENA_RING");
  setenv("STOKER_HW_DECODER_LOAD", "0.95", 1);
  CHECK(fabs(stk__tuning_float(STK__KNOB_HW_DECODER_LOAD) - 0.95) < 1e-12);
  unsetenv("STOKER_HW_DECODER_LOAD");
  CHECK(stk__tuning_float(STK__KNOB_HW_DECODER_LOAD) == -1.0); /* the router */
  CHECK(stk__tuning_text(STK__KNOB_AFFINITY_MASK) == NULL || getenv("STOKER_AFFINITY_MASK"));
}

/* Bad values: refused with the variable, its value and what is accepted; the shorthand readers
 * fall back to the default. */
static void test_bad_values_refused_naming_the_variable(void) {
  static const struct {
    stk__knob knob;
    const char *name, *value, *says;
  } kBad[] = {
      {STK__KNOB_ARENA_RING, "STOKER_ARENA_RING", "9", "from 1 to 4"},
      {STK__KNOB_ARENA_RING, "STOKER_ARENA_RING", "two", "from 1 to 4"},
      {STK__KNOB_ARENA_RING, "STOKER_ARENA_RING", "", "from 1 to 4"},
      {STK__KNOB_FUSED_SPLIT, "STOKER_FUSED_SPLIT", "4x", "whole number"},
      {STK__KNOB_FUSED_SPLIT, "STOKER_FUSED_SPLIT", "99999999999999999999999", "whole number"},
      {STK__KNOB_HW_DECODER_LOAD, "STOKER_HW_DECODER_LOAD", "nan", "from -1 to 1"},
      {STK__KNOB_HW_DECODER_LOAD, "STOKER_HW_DECODER_LOAD", "1.5", "from -1 to 1"},
      {STK__KNOB_TRACE_ALLOC, "STOKER_TRACE_ALLOC", "yes", "0 or 1"},
      {STK__KNOB_AFFINITY_MASK, "STOKER_AFFINITY_MASK", "", "empty"},
  };
  for (size_t i = 0; i < sizeof kBad / sizeof kBad[0]; i++) {
    setenv(kBad[i].name, kBad[i].value, 1);
    char err[256] = "";
    double v = -7;
    CHECK_MSG(stk__tuning_read(kBad[i].knob, &v, NULL, NULL, err, sizeof err) == STK_EINVAL, "%s=%s accepted",
              kBad[i].name, kBad[i].value);
    CHECK_MSG(strstr(err, kBad[i].name) && strstr(err, kBad[i].says) && strstr(err, "docs/tuning.md"),
              "%s=%s: message '%s'", kBad[i].name, kBad[i].value, err);
    CHECK(v == stk__tuning_row(kBad[i].knob)->default_value);
    char check[256] = "";
    CHECK(stk__tuning_check(check, sizeof check) == STK_EINVAL && strstr(check, kBad[i].name));
    unsetenv(kBad[i].name);
  }
  setenv("STOKER_ARENA_RING", "0", 1);
  CHECK(stk__tuning_int(STK__KNOB_ARENA_RING) == 4);
  unsetenv("STOKER_ARENA_RING");
}

static void test_retired_variable_fails_the_check(void) {
  char err[512] = "";
  CHECK(stk__tuning_check(err, sizeof err) == STK_OK);
  setenv("STOKER_MIXED_TUNING", "roi=0", 1);
  err[0] = 0;
  CHECK(stk__tuning_check(err, sizeof err) == STK_EINVAL);
  CHECK_MSG(strstr(err, "STOKER_MIXED_TUNING") && strstr(err, "STOKER_MIXED_TRACE"), "message '%s'", err);
  unsetenv("STOKER_MIXED_TUNING");
}

/* A pipeline build is where a bad knob is met: it fails there, naming the variable. */
static void test_pipeline_build_refuses_a_bad_knob(void) {
  stk_pipeline_options o;
  stk_pipeline_options_default(&o);
  o.batch_size = 2;
  o.num_threads = 1;
  o.device_id = -1;
  stk_pipeline *p = NULL;
  CHECK(stk_pipeline_new(&o, &p) == STK_OK);
  if (!p) return;
  stk_args *a;
  stk_args_new(&a);
  char root[1024];
  snprintf(root, sizeof root, "%s/tests/fixtures", STOKER_SOURCE_DIR);
  stk_args_set_string(a, "file_root", root);
  const char *outs[1] = {"files"};
  stk_status st = stk_pipeline_add_op(p, "readers.file", "files", NULL, 0, a);
  stk_args_destroy(a);
  if (st == STK_OK) st = stk_pipeline_set_outputs(p, outs, 1);
  CHECK_MSG(st == STK_OK, "%s", stk_pipeline_last_error(p));
  setenv("STOKER_FUSED_SPLIT", "0", 1);
  st = stk_pipeline_build(p);
  unsetenv("STOKER_FUSED_SPLIT");
  CHECK(st == STK_EINVAL);
  CHECK_MSG(strstr(stk_pipeline_last_error(p), "STOKER_FUSED_SPLIT=0"), "'%s'", stk_pipeline_last_error(p));
  stk_pipeline_destroy(p);
}

/* The table is the only reader: no library source calls getenv on a STOKER_ name itself. */
static void test_no_knob_read_behind_the_table(void) {
  char cmd[2048];
  snprintf(cmd, sizeof cmd,
           "grep -rEn 'getenv\\(\"STOKER_' '%s/src' --include=*.c --include=*.cu --include=*.h | grep -v '/test_'",
           STOKER_SOURCE_DIR);
  FILE *f = popen(cmd, "r");
  CHECK(f != NULL);
  if (!f) return;
  char line[1024];
  int found = 0;
  while (fgets(line, sizeof line, f)) {
    printf("reads a knob itself: %s", line);
    found++;
  }
  pclose(f);
  CHECK_MSG(found == 0, "%d getenv(\"STOKER_...\") calls outside src/base/tuning.c", found);
}

// clang-format off
static const stk_test_case cases[] = {
    STK_TEST_CASE(test_doc_lists_the_table),
    STK_TEST_CASE(test_rows_are_well_formed),
    STK_TEST_CASE(test_unset_gives_default_and_set_is_read),
    STK_TEST_CASE(test_bad_values_refused_naming_the_variable),
    STK_TEST_CASE(test_retired_variable_fails_the_check),
    STK_TEST_CASE(test_pipeline_build_refuses_a_bad_knob),
    STK_TEST_CASE(test_no_knob_read_behind_the_table),
};
// clang-format on

/* --write-doc: replaces the generated list in docs/tuning.md (between the markers) with the table's. */
static int write_doc(void) {
  static char want[65536];
  generate(want, sizeof want);
  char path[1024];
  doc_path(path, sizeof path);
  char *doc = read_file(path);
  char *begin = doc ? strstr(doc, kBegin) : NULL, *end = begin ? strstr(begin, kEnd) : NULL;
  if (!begin || !end) {
    fprintf(stderr, "%s: no markers\n", path);
    free(doc);
    return 1;
  }
  FILE *f = fopen(path, "wb");
  if (!f) return 1;
  fwrite(doc, 1, (size_t)(begin - doc), f);
  fputs(want, f);
  fputs(end + strlen(kEnd), f);
  fclose(f);
  free(doc);
  printf("wrote %s\n", path);
  return 0;
}

int main(int argc, char **argv) {
  if (argc > 1 && strcmp(argv[1], "--write-doc") == 0) return write_doc();
  if (stk_test_list_cases(cases, STK_TEST_COUNT(cases), argc, argv)) return 0;
  return stk_test_run_cases("test_tuning", cases, STK_TEST_COUNT(cases), argc, argv);
}
