/* src/ops/io/test_numpy_reader.c: readers.numpy on .npy files written here (C and Fortran order,
 * every supported dtype, a 0-D scalar), region-of-interest reads checked element by element
 * against the slicing rule a[lo0:hi0, lo1:hi1, ...] (each element's value is its C-order index
 * in the file, so the expected value is computed, not stored), the three out_of_bounds_policy
 * values, the listing (file_root + file_filter), and malformed files (bad magic, big-endian,
 * structured dtype, truncated data) failing with the file's name. When numpy is installed the
 * same ROI is also compared with numpy's own slicing of an np.save'd array. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/op.h"
#include "ops/io/npy.h"
#include "case_list.h"
#include "testutil.h"

static char dir[512];

/* Writes a .npy whose logical element (i0, i1, ...) holds its C-order index (cast to the dtype). */
static void write_npy(const char *name, const char *descr, int fortran, int ndim, const int64_t *shape, size_t es) {
  char path[1024], header[256], dims[128] = "";
  snprintf(path, sizeof path, "%s/%s", dir, name);
  for (int d = 0; d < ndim; d++)
    snprintf(dims + strlen(dims), sizeof dims - strlen(dims), "%lld, ", (long long)shape[d]);
  if (ndim > 1) dims[strlen(dims) - 2] = '\0';
  else if (ndim == 1) dims[strlen(dims) - 1] = '\0';
  int n = snprintf(header, sizeof header, "{'descr': '%s', 'fortran_order': %s, 'shape': (%s), }", descr,
                   fortran ? "True" : "False", dims);
  int total = (10 + n + 1 + 63) / 64 * 64;
  FILE *f = fopen(path, "wb");
  fwrite("\x93NUMPY\x01\x00", 1, 8, f);
  uint16_t hl = (uint16_t)(total - 10);
  fwrite(&hl, 2, 1, f);
  fwrite(header, 1, (size_t)n, f);
  for (int i = 10 + n; i < total - 1; i++) fputc(' ', f);
  fputc('\n', f);
  size_t count = 1;
  for (int d = 0; d < ndim; d++) count *= (size_t)shape[d];
  for (size_t k = 0; k < count; k++) {
    /* k walks the file's order; c = the logical element's C-order index. */
    size_t c = k;
    if (fortran) {
      size_t rem = k, idx[8], cstride = 1;
      for (int d = 0; d < ndim; d++) idx[d] = rem % (size_t)shape[d], rem /= (size_t)shape[d];
      c = 0;
      for (int d = ndim - 1; d >= 0; d--) c += idx[d] * cstride, cstride *= (size_t)shape[d];
    }
    uint8_t b[8] = {0};
    if (strstr(descr, "f4")) *(float *)(void *)b = (float)c;
    else if (strstr(descr, "f8")) *(double *)(void *)b = (double)c;
    else if (strstr(descr, "f2")) { /* small integers are exact in half: 1.x * 2^e */ float v = (float)c;
      uint32_t u;
      memcpy(&u, &v, 4);
      uint16_t h = c == 0 ? 0 : (uint16_t)(((((u >> 23) & 0xff) - 112) << 10) | ((u >> 13) & 0x3ff));
      memcpy(b, &h, 2);
    } else if (strstr(descr, "b1")) b[0] = c % 2;
    else memcpy(b, &c, es); /* little-endian integers */
    fwrite(b, 1, es, f);
  }
  fclose(f);
}

typedef struct roi_case {
  const char *file;
  int64_t start[4], end[4], axes[4];
  int n_roi, n_axes;
  double rel_start[4], rel_end[4];
  int n_rel;
  const char *policy;
  double fill;
} roi_case;

static stk_status run_numpy(stk_args *a, stk__tensor *out, char *err, size_t err_size);

static stk_status read_one(const roi_case *rc, stk__tensor *out, char *err, size_t err_size) {
  stk_args *a;
  stk_args_new(&a);
  char path[1024];
  snprintf(path, sizeof path, "%s/%s", dir, rc->file);
  const char *files[1] = {path};
  stk_args_set_string_list(a, "files", files, 1);
  if (rc->n_roi) {
    stk_args_set_int_list(a, "roi_start", rc->start, (size_t)rc->n_roi);
    stk_args_set_int_list(a, "roi_end", rc->end, (size_t)rc->n_roi);
  }
  if (rc->n_rel) {
    stk_args_set_float_list(a, "rel_roi_start", rc->rel_start, (size_t)rc->n_rel);
    stk_args_set_float_list(a, "rel_roi_end", rc->rel_end, (size_t)rc->n_rel);
  }
  if (rc->n_axes) stk_args_set_int_list(a, "roi_axes", rc->axes, (size_t)rc->n_axes);
  if (rc->policy) stk_args_set_string(a, "out_of_bounds_policy", rc->policy);
  stk_args_set_float(a, "fill_value", rc->fill);
  return run_numpy(a, out, err, err_size);
}

/* Builds readers.numpy from args a (destroyed here) and reads its first sample into out. */
static stk_status run_numpy(stk_args *a, stk__tensor *out, char *err, size_t err_size) {
  static stk_pipeline_options o;
  stk_pipeline_options_default(&o);
  o.batch_size = 1;
  stk__op *op;
  stk_status st = stk__op_new_standalone("readers.numpy", "cpu", a, &o, 0, &op, err, err_size);
  stk_args_destroy(a);
  if (st != STK_OK) return st;
  stk__sample_plan sp;
  stk__batch_plan plan = {.samples = &sp, .batch_size = 1};
  st = op->impl->plan_batch(op, &plan, err, err_size);
  stk__sample_ctx ctx = {.plan = &sp, .err = err, .err_size = err_size};
  stk__tensor *outs[1] = {out};
  if (st == STK_OK) st = op->impl->run_sample(op, &ctx, NULL, outs);
  stk__op_free_standalone(op);
  return st;
}

static double element(const stk__tensor *t, size_t i) {
  switch (t->dtype) {
    case STK_DTYPE_FLOAT32:
      return ((const float *)t->data)[i];
    case STK_DTYPE_FLOAT64:
      return ((const double *)t->data)[i];
    case STK_DTYPE_INT16:
      return ((const int16_t *)t->data)[i];
    case STK_DTYPE_INT32:
      return ((const int32_t *)t->data)[i];
    default:
      return ((const uint8_t *)t->data)[i];
  }
}

/* Checks out against the slicing rule over a file of `shape` (values = C index; fill outside). */
static int matches_slice(const stk__tensor *out, int ndim, const int64_t *shape, const int64_t *lo, const int64_t *hi,
                         double fill) {
  if (out->ndim != ndim) return 0;
  size_t count = 1;
  for (int d = 0; d < ndim; d++) {
    if (out->shape[d] != hi[d] - lo[d]) return 0;
    count *= (size_t)(hi[d] - lo[d]);
  }
  int64_t idx[8] = {0};
  for (size_t i = 0; i < count; i++) {
    int inside = 1;
    int64_t c = 0;
    for (int d = 0; d < ndim; d++) {
      int64_t s = lo[d] + idx[d];
      inside &= s >= 0 && s < shape[d];
      c = c * shape[d] + s;
    }
    double want = inside ? (double)c : fill;
    if (element(out, i) != want) {
      fprintf(stderr, "element %zu: %g, want %g\n", i, element(out, i), want);
      return 0;
    }
    for (int d = ndim - 1; d >= 0 && ++idx[d] == hi[d] - lo[d]; d--) idx[d] = 0;
  }
  return 1;
}

static void test_rois(void) {
  static const int64_t s3[3] = {4, 5, 6}, s2[2] = {3, 4};
  write_npy("c3.npy", "<f4", 0, 3, s3, 4);
  write_npy("f3.npy", "<f8", 1, 3, s3, 8);
  write_npy("f2.npy", "<i2", 1, 2, s2, 2);
  char err[1024];
  stk__tensor t = {0};
  const char *files[] = {"c3.npy", "f3.npy"};
  for (int f = 0; f < 2; f++) {
    roi_case whole = {.file = files[f]};
    int64_t lo0[3] = {0, 0, 0}, hi0[3] = {4, 5, 6};
    CHECK_MSG(read_one(&whole, &t, err, sizeof err) == STK_OK && matches_slice(&t, 3, s3, lo0, hi0, 0), "%s: %s",
              files[f], err);
    roi_case two = {.file = files[f], .start = {1, 2}, .end = {3, 5}, .n_roi = 2};
    int64_t lo1[3] = {1, 2, 0}, hi1[3] = {3, 5, 6};
    CHECK_MSG(read_one(&two, &t, err, sizeof err) == STK_OK && matches_slice(&t, 3, s3, lo1, hi1, 0), "%s", err);
    roi_case last = {.file = files[f], .start = {1}, .end = {4}, .n_roi = 1, .axes = {2}, .n_axes = 1};
    int64_t lo2[3] = {0, 0, 1}, hi2[3] = {4, 5, 4};
    CHECK_MSG(read_one(&last, &t, err, sizeof err) == STK_OK && matches_slice(&t, 3, s3, lo2, hi2, 0), "%s", err);
    roi_case rel = {.file = files[f], .rel_start = {0.25, 0.1}, .rel_end = {0.75, 0.5}, .n_rel = 2};
    int64_t lo3[3] = {1, 0, 0}, hi3[3] = {3, 3, 6}; /* floor(0.5)=0, ceil(2.5)=3 */
    CHECK_MSG(read_one(&rel, &t, err, sizeof err) == STK_OK && matches_slice(&t, 3, s3, lo3, hi3, 0), "%s", err);
    /* Out of bounds: error, pad, trim. */
    roi_case oob = {.file = files[f], .start = {-1, 3}, .end = {5, 7}, .n_roi = 2};
    CHECK(read_one(&oob, &t, err, sizeof err) == STK_ERANGE && strstr(err, files[f]) && strstr(err, "outside"));
    oob.policy = "pad", oob.fill = -7;
    int64_t lo4[3] = {-1, 3, 0}, hi4[3] = {5, 7, 6};
    CHECK_MSG(read_one(&oob, &t, err, sizeof err) == STK_OK && matches_slice(&t, 3, s3, lo4, hi4, -7), "%s", err);
    oob.policy = "trim_to_shape";
    int64_t lo5[3] = {0, 3, 0}, hi5[3] = {4, 5, 6};
    CHECK_MSG(read_one(&oob, &t, err, sizeof err) == STK_OK && matches_slice(&t, 3, s3, lo5, hi5, 0), "%s", err);
  }
  roi_case f2 = {.file = "f2.npy", .start = {1, 1}, .end = {3, 4}, .n_roi = 2};
  int64_t lo[2] = {1, 1}, hi[2] = {3, 4};
  CHECK_MSG(
      read_one(&f2, &t, err, sizeof err) == STK_OK && t.dtype == STK_DTYPE_INT16 && matches_slice(&t, 2, s2, lo, hi, 0),
      "%s", err);
  stk__tensor_free(&t);
}

static void test_dtypes(void) {
  static const struct {
    const char *descr;
    stk_dtype dtype;
    size_t es;
  } types[] = {{"|b1", STK_DTYPE_BOOL, 1},    {"|u1", STK_DTYPE_UINT8, 1},   {"|i1", STK_DTYPE_INT8, 1},
               {"<u2", STK_DTYPE_UINT16, 2},  {"<i2", STK_DTYPE_INT16, 2},   {"<u4", STK_DTYPE_UINT32, 4},
               {"<i4", STK_DTYPE_INT32, 4},   {"<u8", STK_DTYPE_UINT64, 8},  {"<i8", STK_DTYPE_INT64, 8},
               {"<f2", STK_DTYPE_FLOAT16, 2}, {"<f4", STK_DTYPE_FLOAT32, 4}, {"<f8", STK_DTYPE_FLOAT64, 8}};
  static const int64_t shape[1] = {5};
  char err[1024];
  stk__tensor t = {0};
  for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
    char name[32];
    snprintf(name, sizeof name, "t%zu.npy", i);
    write_npy(name, types[i].descr, 0, 1, shape, types[i].es);
    roi_case rc = {.file = name, .start = {1}, .end = {4}, .n_roi = 1};
    stk_status st = read_one(&rc, &t, err, sizeof err);
    CHECK_MSG(
        st == STK_OK && t.dtype == types[i].dtype && t.ndim == 1 && t.shape[0] == 3 && t.nbytes == 3 * types[i].es,
        "%s: %s", types[i].descr, err);
    if (st == STK_OK && types[i].dtype != STK_DTYPE_FLOAT16 && types[i].dtype != STK_DTYPE_FLOAT32 &&
        types[i].dtype != STK_DTYPE_FLOAT64) {
      uint64_t v = 0;
      memcpy(&v, (uint8_t *)t.data + types[i].es, types[i].es); /* element 1 of the slice = index 2 */
      CHECK_MSG(v == (types[i].dtype == STK_DTYPE_BOOL ? 0u : 2u), "%s: %llu", types[i].descr, (unsigned long long)v);
    }
  }
  static const int64_t none[1] = {0};
  write_npy("scalar.npy", "<i4", 0, 0, none, 4);
  roi_case sc = {.file = "scalar.npy"};
  CHECK_MSG(read_one(&sc, &t, err, sizeof err) == STK_OK && t.ndim == 0 && t.nbytes == 4 && *(int32_t *)t.data == 0,
            "%s", err);
  stk__tensor_free(&t);
}

static void write_raw(const char *name, const char *bytes, size_t n) {
  char path[1024];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "wb");
  fwrite(bytes, 1, n, f);
  fclose(f);
}

static void test_bad_files(void) {
  char err[1024];
  stk__tensor t = {0};
  const char hdr[] = "\x93NUMPY\x01\x00\x3a\x00{'descr': '>f4', 'fortran_order': False, 'shape': (2,), }\n";
  write_raw("big.npy", hdr, sizeof hdr - 1);
  roi_case rc = {.file = "big.npy"};
  CHECK(read_one(&rc, &t, err, sizeof err) == STK_EPARSE && strstr(err, "big.npy") && strstr(err, "big-endian"));
  write_raw("magic.npy", "NUMPY\x01\x00", 7);
  rc.file = "magic.npy";
  CHECK(read_one(&rc, &t, err, sizeof err) == STK_EPARSE && strstr(err, "magic.npy") && strstr(err, "magic"));
  const char st_hdr[] = "\x93NUMPY\x01\x00\x43\x00{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (2,), }\n";
  write_raw("struct.npy", st_hdr, sizeof st_hdr - 1);
  rc.file = "struct.npy";
  CHECK(read_one(&rc, &t, err, sizeof err) == STK_EPARSE && strstr(err, "structured"));
  static const int64_t shape[1] = {100};
  write_npy("short.npy", "<f4", 0, 1, shape, 4);
  char cmd[1200];
  snprintf(cmd, sizeof cmd, "truncate -s 200 %s/short.npy", dir);
  CHECK(system(cmd) == 0);
  rc.file = "short.npy";
  CHECK_MSG(read_one(&rc, &t, err, sizeof err) == STK_EIO && strstr(err, "truncated"), "%s", err);
  stk__tensor_free(&t);
}

/* With numpy: np.save an array and its slice; stoker's ROI read must equal the slice exactly. */
static void test_against_numpy(void) {
  if (system("python3 -c 'import numpy' >/dev/null 2>&1") != 0) {
    printf("note: numpy is not installed; ROI reads were checked against the slicing rule only\n");
    return;
  }
  char cmd[2048];
  snprintf(cmd, sizeof cmd,
           "cd %s && python3 -c \"import numpy as np; a = np.random.default_rng(3).standard_normal((7, 9, 5))"
           ".astype(np.float32); np.save('np_full.npy', np.asfortranarray(a)); np.save('np_slice.npy', a[2:6, 1:8:1, "
           "1:4])\"",
           dir);
  CHECK(system(cmd) == 0);
  char err[1024];
  stk__tensor got = {0}, want = {0};
  roi_case rc = {.file = "np_full.npy", .start = {2, 1, 1}, .end = {6, 8, 4}, .n_roi = 3};
  roi_case whole = {.file = "np_slice.npy"};
  CHECK_MSG(read_one(&rc, &got, err, sizeof err) == STK_OK && read_one(&whole, &want, err, sizeof err) == STK_OK, "%s",
            err);
  CHECK(got.nbytes == want.nbytes && got.nbytes && memcmp(got.data, want.data, got.nbytes) == 0);
  stk__tensor_free(&got);
  stk__tensor_free(&want);
}

/* A .npy of format version `major` whose dict (`dict`, padded to `pad_to` bytes of header) holds
 * 6 float32 values 0..5. */
static void write_versioned(const char *name, int major, const char *dict, size_t pad_to) {
  size_t pre = major == 1 ? 10 : 12, n = strlen(dict), total = pre + n + 1 > pad_to ? pre + n + 1 : pad_to;
  char *bytes = malloc(total + 24);
  memcpy(bytes, "\x93NUMPY", 6);
  bytes[6] = (char)major, bytes[7] = 0;
  uint32_t len = (uint32_t)(total - pre);
  for (size_t i = 0; i < pre - 8; i++) bytes[8 + i] = (char)(len >> (8 * i));
  memcpy(bytes + pre, dict, n);
  memset(bytes + pre + n, ' ', total - pre - n - 1);
  bytes[total - 1] = '\n';
  for (int i = 0; i < 6; i++) {
    float v = (float)i;
    memcpy(bytes + total + 4 * i, &v, 4);
  }
  write_raw(name, bytes, total + 24);
  free(bytes);
}

/* Format 1.0 with a 6 KiB header (padding is legal), 2.0 and 3.0 (4-byte header length), keys in
 * any order: all read; before, a header past the first 4 KiB read was refused. */
static void test_header_versions_and_long_headers(void) {
  const char *dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }";
  write_versioned("v1_long.npy", 1, dict, 6144);
  write_versioned("v2.npy", 2, dict, 128);
  write_versioned("v3_long.npy", 3, dict, 70000);
  write_versioned("reordered.npy", 1, "{'shape': (2, 3), 'descr': '<f4', 'fortran_order': False}", 64);
  const char *names[] = {"v1_long.npy", "v2.npy", "v3_long.npy", "reordered.npy"};
  char err[1024];
  stk__tensor t = {0};
  for (int i = 0; i < 4; i++) {
    roi_case rc = {.file = names[i]};
    int64_t lo[2] = {0, 0}, hi[2] = {2, 3}, shape[2] = {2, 3};
    CHECK_MSG(read_one(&rc, &t, err, sizeof err) == STK_OK && matches_slice(&t, 2, shape, lo, hi, 0), "%s: %s",
              names[i], err);
  }
  stk__tensor_free(&t);
}

/* A 'shape' inside another value, an extra key, a duplicate key, (n) without a comma, a shape
 * whose bytes pass 2^63: refused (the decoy was read as the shape before). */
static void test_header_lies_refused(void) {
  static const struct {
    const char *dict, *says;
  } cases[] = {
      {"{'descr': '<f4', 'note': \"'shape': (2, 3),\", 'fortran_order': False, 'shape': (9,), }", "key 'note'"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (6,), 'shape': (2, 3)}", "twice"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (6)}", "without a comma"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296)}", "2^63"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,)}", "2^63"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (6,)} trailing", "after the dict"},
      {"{'descr': '<f4', 'fortran_order': 0, 'shape': (6,)}", "neither True nor False"},
  };
  char err[1024];
  stk__tensor t = {0};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    write_versioned("lie.npy", 1, cases[i].dict, 64);
    roi_case rc = {.file = "lie.npy"};
    CHECK_MSG(read_one(&rc, &t, err, sizeof err) == STK_EPARSE && strstr(err, "lie.npy") && strstr(err, cases[i].says),
              "case %zu: %s", i, err);
  }
  stk__tensor_free(&t);
}

/* ROI arguments whose sums or fractions pass 2^63 (UBSan: signed overflow before): a clear error. */
static void test_roi_overflow_refused(void) {
  static const int64_t shape[1] = {6};
  write_npy("roi.npy", "<f4", 0, 1, shape, 4);
  char path[1024], err[1024];
  snprintf(path, sizeof path, "%s/roi.npy", dir);
  const char *files[1] = {path};
  stk__tensor t = {0};
  static const int64_t starts[][1] = {{INT64_MAX - 1}, {INT64_MIN + 1}, {-((int64_t)1 << 62)}};
  static const int64_t extents[][1] = {{10}, {INT64_MAX}, {INT64_MAX / 2}};
  for (int i = 0; i < 3; i++) {
    stk_args *a;
    stk_args_new(&a);
    stk_args_set_string_list(a, "files", files, 1);
    stk_args_set_int_list(a, "roi_start", starts[i], 1);
    stk_args_set_int_list(a, "roi_shape", extents[i], 1);
    stk_args_set_string(a, "out_of_bounds_policy", "pad");
    CHECK_MSG(run_numpy(a, &t, err, sizeof err) == STK_ERANGE && strstr(err, "roi.npy"), "case %d: %s", i, err);
  }
  static const double huge[1] = {1e300};
  stk_args *a;
  stk_args_new(&a);
  stk_args_set_string_list(a, "files", files, 1);
  stk_args_set_float_list(a, "rel_roi_start", huge, 1);
  CHECK_MSG(run_numpy(a, &t, err, sizeof err) == STK_ERANGE && strstr(err, "out of range"), "%s", err);
  stk__tensor_free(&t);
}

/* file_list: /dev/zero and a FIFO are refused at once (/dev/zero grew without bound before). */
static void test_file_list_bounded(void) {
  char fifo[1024], err[1024];
  snprintf(fifo, sizeof fifo, "%s/list.fifo", dir);
  CHECK(mkfifo(fifo, 0644) == 0);
  const char *lists[] = {"/dev/zero", fifo};
  for (int i = 0; i < 2; i++) {
    stk_args *a;
    stk_args_new(&a);
    stk_args_set_string(a, "file_list", lists[i]);
    stk__tensor t = {0};
    CHECK_MSG(run_numpy(a, &t, err, sizeof err) == STK_EINVAL && strstr(err, lists[i]) &&
                  strstr(err, "not a regular file"),
              "%s", err);
  }
  remove(fifo);
}

/* one STK_TEST_CASE per line: tests/CMakeLists.txt reads them */
// clang-format off
static const stk_test_case cases[] = {
    STK_TEST_CASE(test_rois),
    STK_TEST_CASE(test_dtypes),
    STK_TEST_CASE(test_bad_files),
    STK_TEST_CASE(test_against_numpy),
    STK_TEST_CASE(test_header_versions_and_long_headers),
    STK_TEST_CASE(test_header_lies_refused),
    STK_TEST_CASE(test_roi_overflow_refused),
    STK_TEST_CASE(test_file_list_bounded),
};
// clang-format on

int main(int argc, char **argv) {
  if (stk_test_list_cases(cases, STK_TEST_COUNT(cases), argc, argv)) return 0;
  char *tmp = stk_test_tmpdir("numpy_reader");
  snprintf(dir, sizeof dir, "%s", tmp);
  free(tmp);
  return stk_test_run_cases("test_numpy_reader", cases, STK_TEST_COUNT(cases), argc, argv);
}
