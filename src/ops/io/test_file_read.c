/* src/ops/io/test_file_read.c: io.file.read -- files read byte for byte from paths given as uint8
 * or int8 text (with and without a trailing NUL), an empty file, DALI's accepted arguments, and
 * the errors (missing file, directory, empty path, wrong type or rank) naming the path. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "case_list.h"
#include "op_test.h"

/* A 1-D tensor of `dtype` (uint8 or int8) holding path's bytes (plus a NUL when with_nul). */
static stk__tensor path_tensor(const char *path, stk_dtype dtype, int with_nul) {
  stk__tensor t;
  memset(&t, 0, sizeof t);
  int64_t n = (int64_t)strlen(path) + (with_nul ? 1 : 0);
  CHECK(stk__tensor_resize(&t, dtype, 1, &n, "") == STK_OK);
  if (n) memcpy(t.data, path, (size_t)n);
  return t;
}

static void write_file(const char *path, const uint8_t *bytes, size_t n) {
  FILE *f = fopen(path, "wb");
  CHECK_MSG(f != NULL, "cannot write %s", path);
  if (!f) return;
  if (n) CHECK(fwrite(bytes, 1, n, f) == n);
  fclose(f);
}

static void reads_files_byte_for_byte(void) {
  char *dir = stk_test_tmpdir("file_read");
  char path[1024], empty[1024];
  snprintf(path, sizeof path, "%s/a file.bin", dir);
  snprintf(empty, sizeof empty, "%s/empty.bin", dir);
  uint8_t bytes[70001];
  for (size_t i = 0; i < sizeof bytes; i++) bytes[i] = (uint8_t)(i * 131u + 7u);
  write_file(path, bytes, sizeof bytes);
  write_file(empty, NULL, 0);
  stk_args *a = op_args();
  stk_args_set_bool(a, "dont_use_mmap", 1);
  stk_args_set_bool(a, "use_o_direct", 1);
  stk__op *op = op_make("io.file.read", a, 1);
  const stk_dtype types[2] = {STK_DTYPE_UINT8, STK_DTYPE_INT8};
  for (int k = 0; op && k < 4; k++) {
    stk__tensor in = path_tensor(path, types[k % 2], k / 2), out = {0};
    stk__tensor *inputs[1] = {&in};
    stk_status st = op_run(op, 0, k, inputs, &out);
    CHECK_MSG(st == STK_OK, "case %d: %s", k, op_test_err);
    if (st == STK_OK)
      CHECK_MSG(out.dtype == STK_DTYPE_UINT8 && out.ndim == 1 && out.shape[0] == (int64_t)sizeof bytes &&
                    memcmp(out.data, bytes, sizeof bytes) == 0,
                "case %d: the output is not the file's bytes", k);
    stk__tensor_free(&in);
    stk__tensor_free(&out);
  }
  if (op) {
    stk__tensor in = path_tensor(empty, STK_DTYPE_UINT8, 0), out = {0};
    stk__tensor *inputs[1] = {&in};
    CHECK_MSG(op_run(op, 0, 9, inputs, &out) == STK_OK, "empty file: %s", op_test_err);
    CHECK(out.ndim == 1 && out.shape[0] == 0);
    stk__tensor_free(&in);
    stk__tensor_free(&out);
  }
  stk__op_free_standalone(op);
  stk_test_remove_tree(dir);
  free(dir);
}

/* Runs op on `in` and expects a failure whose message holds `needle`. */
static void expect_error(stk__op *op, stk__tensor *in, const char *needle) {
  stk__tensor out = {0};
  stk__tensor *inputs[1] = {in};
  stk_status st = op_run(op, 0, 0, inputs, &out);
  CHECK_MSG(st != STK_OK, "no error (wanted one about \"%s\")", needle);
  CHECK_MSG(strstr(op_test_err, needle) != NULL, "message \"%s\" does not mention \"%s\"", op_test_err, needle);
  CHECK_MSG(strstr(op_test_err, "io.file.read") != NULL, "message \"%s\" does not name io.file.read", op_test_err);
  stk__tensor_free(&out);
}

static void bad_paths_and_inputs_are_named(void) {
  char *dir = stk_test_tmpdir("file_read_bad");
  char missing[1024];
  snprintf(missing, sizeof missing, "%s/not-there.jpg", dir);
  stk__op *op = op_make("io.file.read", NULL, 1);
  if (op) {
    stk__tensor t = path_tensor(missing, STK_DTYPE_UINT8, 0);
    expect_error(op, &t, "not-there.jpg");
    stk__tensor_free(&t);
    t = path_tensor(dir, STK_DTYPE_INT8, 0);
    expect_error(op, &t, "a directory");
    stk__tensor_free(&t);
    t = path_tensor("", STK_DTYPE_UINT8, 1);
    expect_error(op, &t, "empty");
    stk__tensor_free(&t);
    int64_t shape[2] = {2, 3};
    memset(&t, 0, sizeof t);
    CHECK(stk__tensor_resize(&t, STK_DTYPE_FLOAT32, 1, shape, "") == STK_OK);
    expect_error(op, &t, "float");
    stk__tensor_free(&t);
    CHECK(stk__tensor_resize(&t, STK_DTYPE_UINT8, 2, shape, "") == STK_OK);
    memset(t.data, 'a', t.nbytes);
    expect_error(op, &t, "2 dimensions");
    stk__tensor_free(&t);
  }
  stk__op_free_standalone(op);
  stk_test_remove_tree(dir);
  free(dir);
}

/* one STK_TEST_CASE per line: tests/CMakeLists.txt reads them */
// clang-format off
static const stk_test_case cases[] = {
    STK_TEST_CASE(reads_files_byte_for_byte),
    STK_TEST_CASE(bad_paths_and_inputs_are_named),
};
// clang-format on

int main(int argc, char **argv) {
  if (stk_test_list_cases(cases, STK_TEST_COUNT(cases), argc, argv)) return 0;
  return stk_test_run_cases("test_file_read", cases, STK_TEST_COUNT(cases), argc, argv);
}
