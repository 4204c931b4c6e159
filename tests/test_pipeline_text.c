/* tests/test_pipeline_text.c: pipeline text files (docs/pipeline-files.md): assignments, tuple
 * targets, argument inputs, comments, outputs(); errors with line numbers; built-in pipeline
 * names. Test-only operators, so it runs before the real operators land. */
#include "pipeline_fake_ops.h"
#include "case_list.h"
#include "testutil.h"

static stk_pipeline *fresh(void) {
  stk_pipeline *p = NULL;
  stk_pipeline_options o;
  stk_pipeline_options_default(&o);
  o.batch_size = 2;
  o.num_threads = 2;
  CHECK(stk_pipeline_new(&o, &p) == STK_OK);
  return p;
}

static void expect_error(const char *text, int line, const char *needle) {
  stk_pipeline *p = fresh();
  stk_status st = stk_pipeline_load_text(p, text, "/data");
  char want[32];
  snprintf(want, sizeof want, "line %d:", line);
  CHECK_MSG(st != STK_OK && strstr(stk_pipeline_last_error(p), want) && strstr(stk_pipeline_last_error(p), needle),
            "%s -> %s", text, stk_pipeline_last_error(p));
  stk_pipeline_destroy(p);
}

/* A file with comments, a blank line, tuple targets and an argument input runs; node names come
 * from the assignments. */
static void good_file_runs(void) {
  const char *good =
      "# a test pipeline\n"
      "\n"
      "data, labels = fn.test.reader(num_samples=6, bad_ids=[], skip_bad_files=False)  # reader\n"
      "coin = test.coin()\n"
      "x = test.fill(data, size=2, add=coin, ragged=False)\n"
      "outputs(x, labels)\n";
  stk_pipeline *p = fresh();
  CHECK_MSG(stk_pipeline_load_text(p, good, "/data") == STK_OK, "%s", stk_pipeline_last_error(p));
  CHECK(stk_pipeline_build(p) == STK_OK);
  stk_batch *b = NULL;
  CHECK(stk_pipeline_next(p, &b) == STK_OK);
  if (b) {
    stk_tensor_view v;
    CHECK(stk_batch_tensor(b, 0, &v) == STK_OK && v.shape[1] == 2 && v.shape[2] == 2);
    CHECK(stk_batch_tensor(b, 1, &v) == STK_OK && v.dtype == STK_DTYPE_INT32);
  }
  stk_batch_release(b);
  CHECK_STR(stk_pipeline_node_name(p, 0), "data");
  CHECK_STR(stk_pipeline_node_name(p, 2), "x");
  stk_pipeline_destroy(p);
}

static void errors_name_their_line(void) {
  expect_error("data, labels = test.reader()\nx = test.fill(nothing)\noutputs(x)\n", 2, "unknown variable");
  expect_error("data = test.reader()\nx = test.fill(data, size=\"big\")\noutputs(x)\n", 2, "'size'");
  expect_error("data = test.reader()\nx = test.fill(data, size=2\noutputs(x)\n", 2, "')'");
  expect_error("data = test.reader()\n\n", 2, "outputs");
  expect_error("data = test.reader()\noutputs(data)\ny = test.coin()\n", 3, "follow outputs");
  expect_error("data = test.reader()\n= test.coin()\n", 2, "name");
  expect_error("data = no.such.op()\n", 1, "no.such.op");
  expect_error("data = test.reader(num_samples=[1, 2)\n", 1, "num_samples");
  expect_error("data = test.reader()\noutputs(ghost)\n", 2, "ghost");
}

/* strict: found by fuzzing the text format (each was silently accepted or misreported) */
static void strict_forms_found_by_fuzzing(void) {
  expect_error("data = test.reader()\nx = test.fill(data, size=2, size=3)\noutputs(x)\n", 2, "'size' is given twice");
  expect_error("data = test.reader()\nx = test.fill(size=2, data)\noutputs(x)\n", 2, "follows a keyword");
  expect_error("data = test.reader()\nx = test.fill(ghost2)\noutputs(x)\n", 2, "'ghost2'");
  expect_error("iiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiia = test.reader()\n", 1,
               "longer than 63"); /* found by fuzz_pipeline_text: a NULL dereference */
  expect_error("a, b, c = test.reader()\noutputs(a)\n", 1, "3 names for the 2 outputs of test.reader");
  expect_error("data = test.reader()\nx = test.fill(data, size=2, add=-inf)\noutputs(x)\n", 2, "not a finite number");
  expect_error("data = test.reader()\nx = test.fill(data, size=2, add=nan)\noutputs(x)\n", 2, "not a finite number");
  expect_error("data, labels = test.reader()\nx = test.fill(data,\n  size=2,\n  size=4)\noutputs(x)\n", 2,
               "given twice"); /* a statement over three lines is reported at its first */
}

static void empty_file_is_not_line_zero(void) {
  stk_pipeline *e = fresh();
  CHECK(stk_pipeline_load_text(e, "", "/data") == STK_EPARSE);
  CHECK_MSG(strstr(stk_pipeline_last_error(e), "empty") && !strstr(stk_pipeline_last_error(e), "line 0"), "%s",
            stk_pipeline_last_error(e));
  stk_pipeline_destroy(e);
}

/* a UTF-8 byte order mark and a call split over lines are read as intended */
static void bom_and_split_call_read_as_intended(void) {
  const char *bom =
      "\xEF\xBB\xBF"
      "data, labels = test.reader(num_samples=6,\n"
      "    bad_ids=[],  # comment inside the call\n"
      "    skip_bad_files=False)\n"
      "outputs(data, labels)\n";
  stk_pipeline *e = fresh();
  CHECK_MSG(stk_pipeline_load_text(e, bom, "/data") == STK_OK, "%s", stk_pipeline_last_error(e));
  stk_pipeline_destroy(e);
}

static void builtin_names(void) {
  stk_pipeline *p = fresh();
  CHECK(stk_pipeline_add_builtin(p, "rn51", "/data") == STK_EINVAL);
  CHECK(strstr(stk_pipeline_last_error(p), "rn51") != NULL);
  if (stk__op_schema_find("readers.file") && stk__op_schema_find("crop_mirror_normalize") &&
      stk__op_schema_find("decoders.image_random_crop") && stk__op_schema_find("resize") &&
      stk__op_schema_find("random.coin_flip")) {
    CHECK_MSG(stk_pipeline_add_builtin(p, "rn50-train", "/data") == STK_OK, "%s", stk_pipeline_last_error(p));
  }
  stk_pipeline_destroy(p);
}

/* one STK_TEST_CASE per line: tests/CMakeLists.txt reads them */
// clang-format off
static const stk_test_case cases[] = {
    STK_TEST_CASE(good_file_runs),
    STK_TEST_CASE(errors_name_their_line),
    STK_TEST_CASE(strict_forms_found_by_fuzzing),
    STK_TEST_CASE(empty_file_is_not_line_zero),
    STK_TEST_CASE(bom_and_split_call_read_as_intended),
    STK_TEST_CASE(builtin_names),
};
// clang-format on

int main(int argc, char **argv) {
  fake_ops_register();
  return stk_test_run_cases("test_pipeline_text", cases, STK_TEST_COUNT(cases), argc, argv);
}
