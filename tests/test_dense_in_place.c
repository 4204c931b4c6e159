/* tests/test_dense_in_place.c: samples written straight into the dense batch tensor
 * (stk__sample_output_resize, src/core/exec/cpu_stage.c) give the same batches as the copy path.
 * Every case runs one readers.numpy pipeline twice, with STOKER_DENSE_IN_PLACE=0 (every sample
 * read into its own buffer and copied into the batch tensor) and with the default, records every
 * batch (dense or not, each sample's shape and bytes) and compares the records; each element's
 * value is also checked against what the file holds (seed * 10000 + its C-order index). It checks
 * too that the default run did place samples (the reader's tensor is the view's slot of the batch
 * tensor) and the copy run none. Cases: large and small files (the header's read reused), a batch of
 * mixed shapes (ragged: falls back) between dense ones and a change of shape, C and Fortran order
 * in one batch, a region of interest (inside, and padded), skip_bad_files with a truncated .npy
 * in a batch (its slot refilled as on the copy path), and readers.file's raw bytes and labels. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/engine.h"
#include "case_list.h"
#include "testutil.h"

static char dir[512];

/* A float32 .npy whose logical element (C-order index c) holds seed * 10000 + c. */
static void write_npy(const char *name, int fortran, int rows, int cols, int seed) {
  char path[1024], header[160];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  int n = snprintf(header, sizeof header, "{'descr': '<f4', 'fortran_order': %s, 'shape': (%d, %d), }",
                   fortran ? "True" : "False", rows, cols);
  int total = (10 + n + 1 + 63) / 64 * 64;
  FILE *f = fopen(path, "wb");
  fwrite("\x93NUMPY\x01\x00", 1, 8, f);
  uint16_t hl = (uint16_t)(total - 10);
  fwrite(&hl, 2, 1, f);
  fwrite(header, 1, (size_t)n, f);
  for (int i = 10 + n; i < total - 1; i++) fputc(' ', f);
  fputc('\n', f);
  for (int k = 0; k < rows * cols; k++) { /* k walks the file's order */
    int r = fortran ? k % rows : k / cols, c = fortran ? k / rows : k % cols;
    float v = (float)(seed * 10000 + r * cols + c);
    fwrite(&v, 4, 1, f);
  }
  fclose(f);
}

typedef struct record {
  uint8_t *bytes;
  size_t size, cap;
  int placed, samples, dense_batches, batches;
} record;

static void put(record *r, const void *p, size_t n) {
  if (r->size + n > r->cap) {
    r->cap = (r->size + n) * 2;
    r->bytes = realloc(r->bytes, r->cap);
  }
  memcpy(r->bytes + r->size, p, n);
  r->size += n;
}

typedef struct run_config {
  const char *const *files;
  int num_files, batch, threads, epochs, skip_bad;
  const int64_t *roi_start, *roi_end; /* two axes, or NULL */
  const char *policy;
  const char *file_root; /* readers.file over this folder (outputs: bytes, label) instead of readers.numpy */
} run_config;

/* One pipeline run; in_place 0 sets STOKER_DENSE_IN_PLACE=0. Returns 0 when the pipeline failed. */
static int run(const run_config *c, int in_place, record *out) {
  setenv("STOKER_DENSE_IN_PLACE", in_place ? "1" : "0", 1);
  stk_pipeline_options o;
  stk_pipeline_options_default(&o);
  o.batch_size = c->batch;
  o.num_threads = c->threads;
  o.prefetch_queue_depth = 1;
  o.skip_bad_files = c->skip_bad;
  stk_pipeline *p = NULL;
  if (stk_pipeline_new(&o, &p) != STK_OK) return 0;
  stk_args *a;
  stk_args_new(&a);
  stk_args_set_string(a, "file_root", c->file_root ? c->file_root : dir);
  if (!c->file_root) stk_args_set_string_list(a, "files", c->files, (size_t)c->num_files);
  if (c->roi_start) stk_args_set_int_list(a, "roi_start", c->roi_start, 2);
  if (c->roi_end) stk_args_set_int_list(a, "roi_end", c->roi_end, 2);
  if (c->policy) stk_args_set_string(a, "out_of_bounds_policy", c->policy);
  if (c->skip_bad) stk_args_set_bool(a, "skip_bad_files", 1);
  const char *outs[2] = {"arrays", "arrays[1]"};
  int num_outputs = c->file_root ? 2 : 1;
  stk_status st = stk_pipeline_add_op(p, c->file_root ? "readers.file" : "readers.numpy", "arrays", NULL, 0, a);
  stk_args_destroy(a);
  if (st == STK_OK) st = stk_pipeline_set_outputs(p, outs, (size_t)num_outputs);
  if (st == STK_OK) st = stk_pipeline_build(p);
  for (int e = 0; st == STK_OK && e < c->epochs; e++) {
    stk_batch *b = NULL;
    while ((st = stk_pipeline_next(p, &b)) == STK_OK) {
      for (int k = 0; k < num_outputs; k++) {
        const stk__tensor_list *view = stk__batch_output(b, k);
        const stk__tensor_list *own = &b->lists[p->nodes[p->reader].list_base + k];
        put(out, &view->dense, sizeof view->dense);
        out->dense_batches += view->dense && k == 0;
        out->batches += k == 0;
        for (int s = 0; s < view->count; s++) {
          const stk__tensor *t = &view->samples[s];
          put(out, &t->ndim, sizeof t->ndim);
          put(out, t->shape, sizeof t->shape[0] * (size_t)t->ndim);
          put(out, t->data, t->nbytes);
          out->placed += own->samples[s].placed && own->samples[s].data == t->data;
          out->samples++;
        }
      }
      stk_batch_release(b);
    }
    if (st == STK_EOF_EPOCH) st = stk_pipeline_reset(p);
  }
  if (st != STK_OK) fprintf(stderr, "run: %s: %s\n", stk_status_name(st), stk_pipeline_last_error(p));
  stk_pipeline_destroy(p);
  unsetenv("STOKER_DENSE_IN_PLACE");
  return st == STK_OK;
}

/* Both runs succeed and agree byte for byte; the copy run placed nothing, the default run at
 * least min_placed samples. Returns the default run's record (caller frees bytes). */
static record compare_runs(const run_config *c, int min_placed) {
  record copy = {0}, placed = {0};
  CHECK(run(c, 0, &copy));
  CHECK(run(c, 1, &placed));
  CHECK_MSG(copy.size == placed.size && memcmp(copy.bytes, placed.bytes, copy.size) == 0,
            "the in-place run's batches differ from the copy run's (%zu vs %zu bytes recorded)", placed.size,
            copy.size);
  CHECK_MSG(copy.placed == 0, "STOKER_DENSE_IN_PLACE=0 placed %d samples", copy.placed);
  CHECK_MSG(placed.placed >= min_placed, "%d of %d samples written in place, expected at least %d", placed.placed,
            placed.samples, min_placed);
  free(copy.bytes);
  return placed;
}

/* Checks one recorded sample at *pos (advanced): shape rows x cols, element (r, c) = seed * 10000
 * + (r + r0) * file_cols + c + c0 inside the file, `fill` outside (r + r0 >= file_rows). */
static void check_sample(const record *r, size_t *pos, int rows, int cols, int seed, int r0, int c0, int file_rows,
                         int file_cols, float fill) {
  int ndim;
  int64_t shape[2];
  memcpy(&ndim, r->bytes + *pos, sizeof ndim);
  *pos += sizeof ndim;
  CHECK(ndim == 2);
  memcpy(shape, r->bytes + *pos, sizeof shape);
  *pos += sizeof shape;
  CHECK_MSG(shape[0] == rows && shape[1] == cols, "shape %lldx%lld, expected %dx%d", (long long)shape[0],
            (long long)shape[1], rows, cols);
  int bad = 0;
  for (int i = 0; i < rows * cols; i++) {
    float v;
    memcpy(&v, r->bytes + *pos + (size_t)i * 4, 4);
    int fr = i / cols + r0, fc = i % cols + c0;
    float want = fr < file_rows && fc < file_cols ? (float)(seed * 10000 + fr * file_cols + fc) : fill;
    bad += v != want;
  }
  CHECK_MSG(bad == 0, "seed %d: %d of %d elements differ from the file", seed, bad, rows * cols);
  *pos += (size_t)rows * cols * 4;
}

/* 12 files of 40 x 64 float32 (10 KiB: the header's read holds part of the data), batches of 4,
 * 3 epochs: from the second epoch on every sample is in place. */
static void in_place_same_bytes_as_copies(void) {
  char names[12][32];
  const char *files[12];
  for (int i = 0; i < 12; i++) {
    snprintf(names[i], sizeof names[i], "big_%02d.npy", i);
    write_npy(names[i], 0, 40, 64, i + 1);
    files[i] = names[i];
  }
  run_config c = {.files = files, .num_files = 12, .batch = 4, .threads = 2, .epochs = 3};
  record r = compare_runs(&c, 24);
  CHECK(r.dense_batches == 9 && r.batches == 9);
  size_t pos = 0;
  for (int e = 0; e < 3; e++)
    for (int i = 0; i < 12; i++) {
      if (i % 4 == 0) pos += sizeof(int); /* the batch's dense flag */
      check_sample(&r, &pos, 40, 64, i + 1, 0, 0, 40, 64, 0);
    }
  CHECK(pos == r.size);
  free(r.bytes);
}

/* Small files (one read each) of 8 x 16, one batch of mixed shapes (ragged: its samples keep
 * their own buffers or sit in place, the views are right either way), then a change of shape. */
static void mixed_shapes_fall_back(void) {
  static const int rows[16] = {8, 8, 8, 8, 8, 4, 8, 8, 8, 8, 8, 8, 6, 6, 6, 6};
  char names[16][32];
  const char *files[16];
  for (int i = 0; i < 16; i++) {
    snprintf(names[i], sizeof names[i], "mixed_%02d.npy", i);
    write_npy(names[i], 0, rows[i], 16, i + 1);
    files[i] = names[i];
  }
  run_config c = {.files = files, .num_files = 16, .batch = 4, .threads = 2, .epochs = 3};
  record r = compare_runs(&c, 16);
  CHECK_MSG(r.dense_batches == 9 && r.batches == 12, "%d dense of %d", r.dense_batches, r.batches);
  size_t pos = 0;
  for (int e = 0; e < 3; e++)
    for (int i = 0; i < 16; i++) {
      if (i % 4 == 0) pos += sizeof(int);
      check_sample(&r, &pos, rows[i], 16, i + 1, 0, 0, rows[i], 16, 0);
    }
  CHECK(pos == r.size);
  free(r.bytes);
}

/* C-order and Fortran-order files of one logical shape in the same batches: both in place. */
static void fortran_order_in_place(void) {
  char names[8][32];
  const char *files[8];
  for (int i = 0; i < 8; i++) {
    snprintf(names[i], sizeof names[i], "order_%02d.npy", i);
    write_npy(names[i], i % 2, 5, 7, i + 1);
    files[i] = names[i];
  }
  run_config c = {.files = files, .num_files = 8, .batch = 4, .threads = 2, .epochs = 4};
  record r = compare_runs(&c, 16);
  size_t pos = 0;
  for (int e = 0; e < 4; e++)
    for (int i = 0; i < 8; i++) {
      if (i % 4 == 0) pos += sizeof(int);
      check_sample(&r, &pos, 5, 7, i + 1, 0, 0, 5, 7, 0);
    }
  free(r.bytes);
}

/* A region inside the arrays, and one past their end with out_of_bounds_policy="pad". */
static void roi_in_place(void) {
  char names[8][32];
  const char *files[8];
  for (int i = 0; i < 8; i++) {
    snprintf(names[i], sizeof names[i], "roi_%02d.npy", i);
    write_npy(names[i], i == 3, 12, 20, i + 1);
    files[i] = names[i];
  }
  static const int64_t start[2] = {2, 3}, end[2] = {9, 17}, pad_end[2] = {15, 17};
  run_config c = {
      .files = files, .num_files = 8, .batch = 4, .threads = 2, .epochs = 4, .roi_start = start, .roi_end = end};
  record r = compare_runs(&c, 16);
  size_t pos = 0;
  for (int e = 0; e < 4; e++)
    for (int i = 0; i < 8; i++) {
      if (i % 4 == 0) pos += sizeof(int);
      check_sample(&r, &pos, 7, 14, i + 1, 2, 3, 12, 20, 0);
    }
  free(r.bytes);
  c.roi_end = pad_end;
  c.policy = "pad";
  r = compare_runs(&c, 16);
  pos = 0;
  for (int e = 0; e < 4; e++)
    for (int i = 0; i < 8; i++) {
      if (i % 4 == 0) pos += sizeof(int);
      check_sample(&r, &pos, 13, 14, i + 1, 2, 3, 12, 20, 0);
    }
  free(r.bytes);
}

/* skip_bad_files with a truncated .npy in the second batch: both runs refill its slot with the
 * same next good sample (the batch's first sample after it), every batch stays full and dense. */
static void skip_bad_files_truncated(void) {
  char names[13][32];
  const char *files[13];
  for (int i = 0; i < 13; i++) {
    snprintf(names[i], sizeof names[i], "skip_%02d.npy", i);
    write_npy(names[i], 0, 16, 32, i + 1);
    files[i] = names[i];
  }
  char cmd[1200];
  snprintf(cmd, sizeof cmd, "truncate -s 1000 %s/skip_05.npy", dir);
  CHECK(system(cmd) == 0);
  run_config c = {.files = files, .num_files = 13, .batch = 4, .threads = 2, .epochs = 3, .skip_bad = 1};
  record r = compare_runs(&c, 16);
  CHECK_MSG(r.batches == 9 && r.dense_batches == 9, "%d dense of %d", r.dense_batches, r.batches);
  static const int order[12] = {0, 1, 2, 3, 4, 8, 6, 7, 9, 10, 11, 12}; /* slot 5 takes the next good one */
  size_t pos = 0;
  for (int e = 0; e < 3; e++)
    for (int k = 0; k < 12; k++) {
      if (k % 4 == 0) pos += sizeof(int);
      check_sample(&r, &pos, 16, 32, order[k] + 1, 0, 0, 16, 32, 0);
    }
  CHECK(pos == r.size);
  free(r.bytes);
}

/* readers.file over records of one size (2 classes x 6 files of 3000 bytes, named .jpg for its
 * default filter; nothing decodes them): the bytes and the labels are both written in place, and
 * equal the copy run's. */
static void file_reader_raw_bytes(void) {
  char root[600], cmd[1400];
  snprintf(root, sizeof root, "%s/raw", dir);
  snprintf(cmd, sizeof cmd, "mkdir -p %s/a %s/b", root, root);
  CHECK(system(cmd) == 0);
  for (int i = 0; i < 12; i++) {
    char path[800];
    snprintf(path, sizeof path, "%s/%s/r%02d.jpg", root, i < 6 ? "a" : "b", i);
    FILE *f = fopen(path, "wb");
    for (int k = 0; k < 3000; k++) fputc((i * 31 + k) & 0xff, f);
    fclose(f);
  }
  run_config c = {.file_root = root, .batch = 4, .threads = 2, .epochs = 3};
  record r = compare_runs(&c, 2 * 16);
  CHECK_MSG(r.dense_batches == 9 && r.batches == 9, "%d dense of %d", r.dense_batches, r.batches);
  free(r.bytes);
}

// clang-format off
/* one STK_TEST_CASE per line: tests/CMakeLists.txt reads them */
static const stk_test_case cases[] = {
    STK_TEST_CASE(in_place_same_bytes_as_copies),
    STK_TEST_CASE(mixed_shapes_fall_back),
    STK_TEST_CASE(fortran_order_in_place),
    STK_TEST_CASE(roi_in_place),
    STK_TEST_CASE(skip_bad_files_truncated),
    STK_TEST_CASE(file_reader_raw_bytes),
};
// clang-format on

int main(int argc, char **argv) {
  if (stk_test_list_cases(cases, STK_TEST_COUNT(cases), argc, argv)) return 0;
  char *tmp = stk_test_tmpdir("dense_in_place");
  snprintf(dir, sizeof dir, "%s", tmp);
  free(tmp);
  return stk_test_run_cases("test_dense_in_place", cases, STK_TEST_COUNT(cases), argc, argv);
}
