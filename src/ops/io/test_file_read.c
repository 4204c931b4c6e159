/* src/ops/io/test_file_read.c: `io.file.read` on files written here: each file's bytes come back
 * exactly (uint8 and int8 path samples, trailing NULs ignored), an empty file gives a zero-length
 * sample, the output buffer is reused once grown to the largest file, the path becomes the
 * sample's name (source_info), and every bad input fails naming the path or the sample's fault: a
 * missing file, a directory, an unreadable file, an empty path, a path with a NUL inside, a 2-D
 * or float sample; use_o_direct without dont_use_mmap is refused at build, as DALI refuses it, and
 * with it the bytes are the same. Exact. Not on a hot path. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "case_list.h"
#include "op_test.h"

static char *dir;

/* Writes `size` bytes of a pattern seeded by `seed` to dir/name; returns the bytes (malloc'd). */
static uint8_t *write_file(const char *name, size_t size, unsigned seed) {
  char path[1024];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  uint8_t *bytes = malloc(size ? size : 1);
  uint32_t s = seed * 2654435761u + 7u;
  for (size_t i = 0; i < size; i++) {
    s = s * 1664525u + 1013904223u;
    bytes[i] = (uint8_t)(s >> 24);
  }
  FILE *f = fopen(path, "wb");
  CHECK_MSG(f != NULL, "cannot write %s", path);
  if (f) {
    CHECK(fwrite(bytes, 1, size, f) == size);
    fclose(f);
  }
  return bytes;
}

/* A 1-D path sample of dtype holding dir/name (or `name` itself when it starts with '/' or is ""),
 * with `nuls` trailing NUL bytes. */
static stk__tensor path_sample(const char *name, stk_dtype dtype, int nuls) {
  char path[1024];
  if (name[0] == '/' || name[0] == '\0') snprintf(path, sizeof path, "%s", name);
  else snprintf(path, sizeof path, "%s/%s", dir, name);
  stk__tensor t;
  memset(&t, 0, sizeof t);
  int64_t length = (int64_t)strlen(path) + nuls;
  CHECK(stk__tensor_resize(&t, dtype, 1, &length, "") == STK_OK);
  if (length > 0) { /* an empty tensor may have no storage */
    memset(t.data, 0, (size_t)length);
    memcpy(t.data, path, strlen(path));
  }
  return t;
}

/* Runs op on one path sample into *out (its name into op_test_name). */
static stk_status read_one(stk__op *op, stk__tensor *path, stk__tensor *out) {
  stk__tensor *ins[1] = {path};
  return op_run(op, 0, 0, ins, out);
}

static void reads_each_file_byte_exact(void) {
  const size_t sizes[3] = {1, 3000, 200000};
  const char *names[3] = {"one.bin", "small.jpg", "big file.jpg"};
  stk__op *op = op_make("io.file.read", op_args(), 1);
  stk__tensor out = {0};
  for (int k = 0; op && k < 3; k++) {
    uint8_t *want = write_file(names[k], sizes[k], (unsigned)k + 1);
    stk__tensor path = path_sample(names[k], STK_DTYPE_UINT8, 0);
    stk_status st = read_one(op, &path, &out);
    CHECK_MSG(st == STK_OK, "%s: %s", names[k], op_test_err);
    if (st == STK_OK) {
      CHECK_MSG(out.dtype == STK_DTYPE_UINT8 && out.ndim == 1 && out.shape[0] == (int64_t)sizes[k] &&
                    out.nbytes == sizes[k] && memcmp(out.data, want, sizes[k]) == 0,
                "%s: %lld bytes back, %zu written, or different bytes", names[k], (long long)out.shape[0], sizes[k]);
      CHECK_MSG(strstr(op_test_name, names[k]) && strncmp(op_test_name, dir, strlen(dir)) == 0,
                "sample name \"%s\" is not the path", op_test_name);
    }
    stk__tensor_free(&path);
    free(want);
  }
  stk__op_free_standalone(op);
  stk__tensor_free(&out);
}

static void int8_paths_with_trailing_nuls(void) {
  uint8_t *want = write_file("int8.bin", 777, 9);
  stk__op *op = op_make("io.file.read", op_args(), 1);
  stk__tensor out = {0};
  for (int nuls = 0; op && nuls <= 2; nuls += 2) {
    stk__tensor path = path_sample("int8.bin", STK_DTYPE_INT8, nuls);
    stk_status st = read_one(op, &path, &out);
    CHECK_MSG(st == STK_OK, "%d trailing NULs: %s", nuls, op_test_err);
    if (st == STK_OK) CHECK(out.shape[0] == 777 && memcmp(out.data, want, 777) == 0);
    stk__tensor_free(&path);
  }
  stk__op_free_standalone(op);
  stk__tensor_free(&out);
  free(want);
}

static void empty_file_gives_zero_length(void) {
  free(write_file("empty.jpg", 0, 1));
  stk__op *op = op_make("io.file.read", op_args(), 1);
  stk__tensor path = path_sample("empty.jpg", STK_DTYPE_UINT8, 0), out = {0};
  if (op) {
    stk_status st = read_one(op, &path, &out);
    CHECK_MSG(st == STK_OK, "%s", op_test_err);
    CHECK(st != STK_OK || (out.ndim == 1 && out.shape[0] == 0 && out.nbytes == 0 && out.dtype == STK_DTYPE_UINT8));
  }
  stk__op_free_standalone(op);
  stk__tensor_free(&path);
  stk__tensor_free(&out);
}

/* Once the output grew to the largest file, smaller and equal files reuse its buffer. */
static void buffer_is_reused_after_the_largest_file(void) {
  free(write_file("large.bin", 65536, 3));
  free(write_file("small.bin", 100, 4));
  stk__op *op = op_make("io.file.read", op_args(), 1);
  stk__tensor large = path_sample("large.bin", STK_DTYPE_UINT8, 0);
  stk__tensor small = path_sample("small.bin", STK_DTYPE_UINT8, 0), out = {0};
  if (op && read_one(op, &large, &out) == STK_OK) {
    void *data = out.data;
    size_t capacity = out.capacity;
    int moved = 0;
    for (int round = 0; round < 4; round++) {
      CHECK(read_one(op, round % 2 ? &large : &small, &out) == STK_OK);
      moved += out.data != data || out.capacity != capacity;
    }
    CHECK_MSG(moved == 0, "the output buffer was reallocated %d times after the largest file", moved);
  } else {
    CHECK_MSG(0, "%s", op_test_err);
  }
  stk__op_free_standalone(op);
  stk__tensor_free(&large);
  stk__tensor_free(&small);
  stk__tensor_free(&out);
}

/* run on `path` fails with `want` and a message holding each of needles (NULL-ended). */
static void expect_failure(stk__op *op, stk__tensor *path, stk_status want, const char *const *needles) {
  stk__tensor out = {0};
  stk_status st = read_one(op, path, &out);
  CHECK_MSG(st == want, "got %s, wanted %s (%s)", stk_status_name(st), stk_status_name(want), op_test_err);
  for (int i = 0; needles[i]; i++)
    CHECK_MSG(strstr(op_test_err, needles[i]) != NULL, "message \"%s\" lacks \"%s\"", op_test_err, needles[i]);
  CHECK_MSG(op_test_name[0] == '\0', "a failed sample was named \"%s\"", op_test_name);
  stk__tensor_free(&out);
}

static void missing_directory_and_unreadable_files_name_the_path(void) {
  stk__op *op = op_make("io.file.read", op_args(), 1);
  if (!op) return;
  char missing[1024], sub[1024], locked[1024];
  snprintf(missing, sizeof missing, "%s/no-such.jpg", dir);
  snprintf(sub, sizeof sub, "%s/a-directory", dir);
  CHECK(mkdir(sub, 0755) == 0);
  stk__tensor path = path_sample("no-such.jpg", STK_DTYPE_UINT8, 0);
  expect_failure(op, &path, STK_ENOENT, (const char *const[]){missing, "No such file", NULL});
  stk__tensor_free(&path);
  path = path_sample("a-directory", STK_DTYPE_UINT8, 0);
  expect_failure(op, &path, STK_EIO, (const char *const[]){sub, "directory", NULL});
  stk__tensor_free(&path);
  char under_file[1024]; /* a path through a regular file: ENOTDIR */
  free(write_file("plain.jpg", 10, 6));
  snprintf(under_file, sizeof under_file, "%s/plain.jpg/inner.jpg", dir);
  path = path_sample("plain.jpg/inner.jpg", STK_DTYPE_UINT8, 0);
  expect_failure(op, &path, STK_ENOENT, (const char *const[]){under_file, "Not a directory", NULL});
  stk__tensor_free(&path);
  free(write_file("locked.jpg", 10, 5));
  snprintf(locked, sizeof locked, "%s/locked.jpg", dir);
  CHECK(chmod(locked, 0) == 0);
  if (geteuid() != 0) { /* root reads it anyway */
    path = path_sample("locked.jpg", STK_DTYPE_UINT8, 0);
    expect_failure(op, &path, STK_EIO, (const char *const[]){locked, "Permission denied", NULL});
    stk__tensor_free(&path);
  } else {
    printf("  (running as root: the unreadable-file check is skipped, root reads it)\n");
  }
  stk__op_free_standalone(op);
}

static void bad_path_samples_are_named(void) {
  stk__op *op = op_make("io.file.read", op_args(), 1);
  if (!op) return;
  stk__tensor path = path_sample("", STK_DTYPE_UINT8, 0);
  expect_failure(op, &path, STK_EINVAL, (const char *const[]){"filepaths", "empty path", NULL});
  stk__tensor_free(&path);
  path = path_sample("", STK_DTYPE_UINT8, 3); /* only NULs */
  expect_failure(op, &path, STK_EINVAL, (const char *const[]){"empty path", NULL});
  stk__tensor_free(&path);
  path = path_sample("abc", STK_DTYPE_UINT8, 0);
  ((char *)path.data)[strlen(dir) + 1] = '\0'; /* "DIR/\0bc" */
  expect_failure(op, &path, STK_EINVAL, (const char *const[]){"NUL byte", dir, NULL});
  stk__tensor_free(&path);
  stk__tensor flat = path_sample("abc", STK_DTYPE_UINT8, 1);
  stk__tensor square = {0};
  int64_t shape[2] = {2, flat.shape[0] / 2};
  CHECK(stk__tensor_resize(&square, STK_DTYPE_UINT8, 2, shape, "") == STK_OK);
  expect_failure(op, &square, STK_EINVAL, (const char *const[]){"1-D", "2-D", NULL});
  stk__tensor floats = {0};
  int64_t four = 4;
  CHECK(stk__tensor_resize(&floats, STK_DTYPE_FLOAT32, 1, &four, "") == STK_OK);
  memset(floats.data, 0x41, floats.nbytes);
  expect_failure(op, &floats, STK_EINVAL, (const char *const[]){"uint8 or int8", "float", NULL});
  stk__tensor_free(&flat);
  stk__tensor_free(&square);
  stk__tensor_free(&floats);
  stk__op_free_standalone(op);
}

static void o_direct_as_dali_checks_it(void) {
  stk_args *a = op_args();
  stk_args_set_bool(a, "use_o_direct", 1);
  op_expect_bad("io.file.read", a, "dont_use_mmap");
  a = op_args();
  stk_args_set_bool(a, "use_o_direct", 1);
  stk_args_set_bool(a, "dont_use_mmap", 1);
  stk__op *op = op_make("io.file.read", a, 1);
  uint8_t *want = write_file("direct.bin", 5000, 11);
  stk__tensor path = path_sample("direct.bin", STK_DTYPE_UINT8, 0), out = {0};
  if (op) {
    stk_status st = read_one(op, &path, &out);
    CHECK_MSG(st == STK_OK && out.shape[0] == 5000 && memcmp(out.data, want, 5000) == 0, "%s", op_test_err);
  }
  stk__op_free_standalone(op);
  stk__tensor_free(&path);
  stk__tensor_free(&out);
  free(want);
}

/* one STK_TEST_CASE per line: tests/CMakeLists.txt reads them */
// clang-format off
static const stk_test_case cases[] = {
    STK_TEST_CASE(reads_each_file_byte_exact),
    STK_TEST_CASE(int8_paths_with_trailing_nuls),
    STK_TEST_CASE(empty_file_gives_zero_length),
    STK_TEST_CASE(buffer_is_reused_after_the_largest_file),
    STK_TEST_CASE(missing_directory_and_unreadable_files_name_the_path),
    STK_TEST_CASE(bad_path_samples_are_named),
    STK_TEST_CASE(o_direct_as_dali_checks_it),
};
// clang-format on

int main(int argc, char **argv) {
  if (stk_test_list_cases(cases, STK_TEST_COUNT(cases), argc, argv)) return 0;
  dir = stk_test_tmpdir("file-read");
  if (!dir) {
    fprintf(stderr, "test_file_read: cannot make a temporary directory\n");
    return 1;
  }
  int rc = stk_test_run_selected("test_file_read", cases, STK_TEST_COUNT(cases), argc, argv);
  op_test_cleanup();
  stk_test_remove_tree(dir);
  free(dir);
  return rc ? rc : stk_test_finish("test_file_read");
}
