/* src/ops/io/test_reader.c: readers.file listing, labels, order, sharding, padding and shuffling
 * against hand-worked cases on a small directory tree made here; every sample exactly once per
 * epoch across shards; deterministic per-epoch reshuffle; error paths name the path/line; the
 * operator's run_sample reads the file bytes and the label. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "ops/io/reader_file.h"
#include "ops/io/reader_file_read.h"
#include "case_list.h"
#include "testutil.h"

static char err[512];
static char root[512];

static void make_file(const char *rel, const char *content) {
  char path[1024];
  snprintf(path, sizeof path, "%s/%s", root, rel);
  FILE *f = fopen(path, "wb");
  if (!f) {
    fprintf(stderr, "cannot create %s\n", path);
    exit(1);
  }
  fputs(content, f);
  fclose(f);
}
static void make_dir(const char *rel) {
  char path[1024];
  snprintf(path, sizeof path, "%s/%s", root, rel);
  mkdir(path, 0755);
}

/* Data set (sorted, as the reader must list it):
 *  0 a/sub/y.jpg 0 | 1 a/x1.jpg 0 | 2 a/x10.jpg 0 | 3 a/x2.jpg 0 | 4 b/UPPER.JPG 1 | 5 b/k.jpeg 1 |
 *  6 c10/m.jpg 2 | 7 c10/n.jpg 2 | 8 c10/o.jpg 2 | 9 c10/p.jpg 2
 * Ignored: a/notes.txt (filter), a/.hidden.jpg (hidden), stray.jpg (not in a class dir). */
static const char *const expected_rel[] = {"a/sub/y.jpg", "a/x1.jpg",  "a/x10.jpg", "a/x2.jpg",  "b/UPPER.JPG",
                                           "b/k.jpeg",    "c10/m.jpg", "c10/n.jpg", "c10/o.jpg", "c10/p.jpg"};
static const int expected_label[] = {0, 0, 0, 0, 1, 1, 2, 2, 2, 2};

static void make_tree(void) {
  make_dir("c10"), make_dir("a"), make_dir("b"), make_dir("a/sub");
  for (int i = 0; i < 10; i++) make_file(expected_rel[i], expected_rel[i]); /* content = its own name */
  make_file("a/notes.txt", "x"), make_file("a/.hidden.jpg", "x"), make_file("stray.jpg", "x");
}

static stk__file_reader_config base_config(int batch) {
  stk__file_reader_config c = {0};
  c.file_root = root;
  c.initial_fill = 1024;
  c.num_shards = 1;
  c.batch_size = batch;
  c.seed = 42;
  return c;
}

static stk__file_reader *open_reader(stk__file_reader_config c) {
  stk__file_reader *r = NULL;
  stk_status st = stk__file_reader_new(&c, &r, err, sizeof err);
  CHECK_MSG(st == STK_OK, "reader: %s", err);
  return r;
}

/* Plans one batch into ids/fill flags; returns valid_samples or -1 at end of epoch. */
static int plan(stk__file_reader *r, int batch, int64_t *ids, int *fill, int *last) {
  stk__sample_plan samples[64];
  stk__batch_plan p = {0};
  p.samples = samples;
  p.batch_size = batch;
  if (stk__file_reader_plan(r, &p) != STK_OK) return -1;
  for (int k = 0; k < batch; k++) {
    ids[k] = samples[k].sample_id;
    fill[k] = samples[k].is_fill;
    CHECK(samples[k].label == stk__file_reader_label(r, samples[k].sample_id));
    CHECK(strcmp(samples[k].source, stk__file_reader_path(r, samples[k].sample_id)) == 0);
  }
  *last = p.last_in_epoch;
  return p.valid_samples;
}

static void test_listing(void) {
  stk__file_reader *r = open_reader(base_config(4));
  if (!r) return;
  CHECK(stk__file_reader_size(r) == 10);
  for (int i = 0; i < 10; i++) {
    char want[1024];
    snprintf(want, sizeof want, "%s/%s", root, expected_rel[i]);
    CHECK_MSG(strcmp(stk__file_reader_path(r, i), want) == 0, "%d: %s", i, stk__file_reader_path(r, i));
    CHECK(stk__file_reader_label(r, i) == expected_label[i]);
  }
  /* Unshuffled, one shard, batch 4: [0..3] [4..7] [8 9 | 0 1 wrapped]. */
  int64_t ids[8];
  int fill[8], last;
  CHECK(plan(r, 4, ids, fill, &last) == 4 && ids[0] == 0 && ids[3] == 3 && !last);
  CHECK(plan(r, 4, ids, fill, &last) == 4 && ids[0] == 4 && ids[3] == 7 && !last);
  CHECK(plan(r, 4, ids, fill, &last) == 2 && last);
  CHECK(ids[0] == 8 && ids[1] == 9 && ids[2] == 0 && ids[3] == 1 && !fill[1] && fill[2] && fill[3]);
  CHECK(plan(r, 4, ids, fill, &last) == -1);
  stk_reader_meta m;
  stk__file_reader_meta(r, 0, &m);
  CHECK(m.epoch_size == 10 && m.epoch_size_padded == 10 && m.shard_size == 10 && m.num_shards == 1);
  /* Reset mid-epoch restarts at the first batch. */
  CHECK(stk__file_reader_reset(r, 1) == STK_OK);
  CHECK(plan(r, 4, ids, fill, &last) == 4 && ids[0] == 0);
  stk__file_reader_free(r);

  /* Case-sensitive filters: UPPER.JPG is no longer listed. */
  stk__file_reader_config c = base_config(4);
  c.case_sensitive_filter = 1;
  r = open_reader(c);
  if (r) CHECK(stk__file_reader_size(r) == 9);
  stk__file_reader_free(r);
  /* Custom filters. */
  char *filters[] = {"*.txt"};
  c = base_config(1);
  c.file_filters = filters, c.num_filters = 1;
  r = open_reader(c);
  if (r) CHECK(stk__file_reader_size(r) == 1 && stk__file_reader_label(r, 0) == 0);
  stk__file_reader_free(r);
}

static void test_sharding(void) {
  /* N=10, 3 shards: [0,3) [3,6) [6,10). */
  int64_t ids[8];
  int fill[8], last;
  for (int pad = 0; pad < 2; pad++) {
    stk__file_reader_config c = base_config(2);
    c.num_shards = 3, c.shard_id = 0, c.pad_last_batch = pad;
    stk__file_reader *r = open_reader(c);
    if (!r) return;
    CHECK(plan(r, 2, ids, fill, &last) == 2 && ids[0] == 0 && ids[1] == 1 && !last);
    CHECK(plan(r, 2, ids, fill, &last) == 1 && ids[0] == 2 && fill[1] && last);
    CHECK(ids[1] == (pad ? 2 : 0)); /* padding repeats the last sample; otherwise wrap to the start */
    CHECK(plan(r, 2, ids, fill, &last) == -1);
    stk_reader_meta m;
    stk__file_reader_meta(r, 0, &m);
    CHECK(m.shard_size == 3 && m.shard_id == 0 && m.epoch_size == 10);
    CHECK_MSG(m.epoch_size_padded == (pad ? 12 : 10), "padded %lld", (long long)m.epoch_size_padded);
    /* Epoch 1 moves to shard 1: [3 4] [5 | fill]. */
    CHECK(stk__file_reader_reset(r, 1) == STK_OK);
    CHECK(plan(r, 2, ids, fill, &last) == 2 && ids[0] == 3 && ids[1] == 4);
    CHECK(plan(r, 2, ids, fill, &last) == 1 && ids[0] == 5 && ids[1] == (pad ? 5 : 3));
    stk__file_reader_meta(r, 1, &m);
    CHECK(m.shard_id == 1);
    stk__file_reader_meta(r, 0, &m); /* another epoch's meta, whatever epoch the reader is in */
    CHECK(m.shard_id == 0 && m.shard_size == 3);
    stk__file_reader_free(r);
  }
  /* stick_to_shard keeps shard 2 ([6,10)) every epoch; pad with batch 3: [6 7 8] [9 9* 9*]. */
  stk__file_reader_config c = base_config(3);
  c.num_shards = 3, c.shard_id = 2, c.stick_to_shard = 1, c.pad_last_batch = 1;
  stk__file_reader *r = open_reader(c);
  if (!r) return;
  for (int epoch = 0; epoch < 3; epoch++) {
    CHECK(stk__file_reader_reset(r, (uint64_t)epoch) == STK_OK);
    CHECK(plan(r, 3, ids, fill, &last) == 3 && ids[0] == 6 && ids[2] == 8);
    CHECK(plan(r, 3, ids, fill, &last) == 1 && ids[0] == 9 && ids[1] == 9 && ids[2] == 9 && fill[1] && fill[2]);
    CHECK(last && plan(r, 3, ids, fill, &last) == -1);
  }
  stk__file_reader_free(r);
  /* With padding, a short shard gives as many batches as the longest: batch 4, shards of 3,3,4. */
  c = base_config(4);
  c.num_shards = 3, c.pad_last_batch = 1;
  r = open_reader(c);
  if (r) CHECK(stk__file_reader_batches(r) == 1 && plan(r, 4, ids, fill, &last) == 3 && ids[3] == 2 && fill[3]);
  stk__file_reader_free(r);
}

/* Across all shards of one epoch, every sample appears exactly once among the valid slots. */
static void check_exactly_once(int shards, int batch, int shuffle, int pad, uint64_t epoch) {
  int seen[10] = {0};
  for (int s = 0; s < shards; s++) {
    stk__file_reader_config c = base_config(batch);
    c.num_shards = shards, c.shard_id = s, c.pad_last_batch = pad;
    c.random_shuffle = shuffle, c.initial_fill = 3;
    stk__file_reader *r = open_reader(c);
    if (!r) return;
    CHECK(stk__file_reader_reset(r, epoch) == STK_OK);
    int64_t ids[8];
    int fill[8], last = 0, valid;
    while ((valid = plan(r, batch, ids, fill, &last)) >= 0)
      for (int k = 0; k < batch; k++) {
        CHECK(ids[k] >= 0 && ids[k] < 10);
        CHECK((k < valid) == !fill[k]);
        if (!fill[k] && ids[k] >= 0 && ids[k] < 10) seen[ids[k]]++;
      }
    stk__file_reader_free(r);
  }
  for (int i = 0; i < 10; i++)
    CHECK_MSG(seen[i] == 1, "shards=%d batch=%d shuffle=%d pad=%d epoch=%llu: sample %d seen %d times", shards, batch,
              shuffle, pad, (unsigned long long)epoch, i, seen[i]);
}

static void epoch_order(stk__file_reader *r, uint64_t epoch, int64_t *order) {
  CHECK(stk__file_reader_reset(r, epoch) == STK_OK);
  int64_t ids[4];
  int fill[4], last, n = 0, valid;
  while ((valid = plan(r, 2, ids, fill, &last)) >= 0)
    for (int k = 0; k < valid; k++) order[n++] = ids[k];
  CHECK(n == 10);
}

static void test_shuffle(void) {
  for (int shards = 1; shards <= 4; shards++)
    for (int batch = 1; batch <= 4; batch++)
      for (int shuffle = 0; shuffle < 2; shuffle++)
        for (int pad = 0; pad < 2; pad++)
          for (uint64_t epoch = 0; epoch < 3; epoch++) check_exactly_once(shards, batch, shuffle, pad, epoch);

  stk__file_reader_config c = base_config(2);
  c.random_shuffle = 1, c.initial_fill = 4;
  stk__file_reader *a = open_reader(c), *b = open_reader(c);
  c.seed = 43;
  stk__file_reader *other = open_reader(c);
  if (!a || !b || !other) return;
  int64_t oa0[10], oa1[10], ob0[10], ob1[10], oc0[10];
  epoch_order(a, 0, oa0), epoch_order(a, 1, oa1);
  epoch_order(b, 1, ob1), epoch_order(b, 0, ob0); /* order of resets does not matter */
  epoch_order(other, 0, oc0);
  CHECK(memcmp(oa0, ob0, sizeof oa0) == 0 && memcmp(oa1, ob1, sizeof oa1) == 0);
  CHECK(memcmp(oa0, oa1, sizeof oa0) != 0); /* a new order each epoch */
  CHECK(memcmp(oa0, oc0, sizeof oa0) != 0); /* another seed, another order */
  int identity = 1;
  for (int i = 0; i < 10; i++) identity &= oa0[i] == i;
  CHECK(!identity);
  stk__file_reader_free(a), stk__file_reader_free(b), stk__file_reader_free(other);

  /* shuffle_after_epoch with stick_to_shard permutes within the shard only. */
  c = base_config(4);
  c.shuffle_after_epoch = 1, c.num_shards = 2, c.shard_id = 1, c.stick_to_shard = 1;
  stk__file_reader *r = open_reader(c);
  if (!r) return;
  for (uint64_t e = 0; e < 4; e++) {
    CHECK(stk__file_reader_reset(r, e) == STK_OK);
    int64_t ids[4];
    int fill[4], last, valid, mask = 0;
    while ((valid = plan(r, 4, ids, fill, &last)) >= 0)
      for (int k = 0; k < valid; k++) mask |= 1 << ids[k];
    CHECK_MSG(mask == 0x3E0, "epoch %llu mask %x", (unsigned long long)e, mask);
  }
  stk__file_reader_free(r);
}

static void test_file_list_and_files(void) {
  char list[1024];
  snprintf(list, sizeof list, "%s/list.txt", root);
  make_dir("dir with space");
  make_file("dir with space/f.jpg", "f");
  make_file("list.txt", "a/x1.jpg 5\n\n  b/k.jpeg   7  \r\ndir with space/f.jpg 3\n");
  stk__file_reader_config c = base_config(2);
  c.file_root = NULL, c.file_list = list;
  stk__file_reader *r = open_reader(c);
  if (r) {
    CHECK(stk__file_reader_size(r) == 3);
    char want[1024];
    snprintf(want, sizeof want, "%s/dir with space/f.jpg", root);
    CHECK(strcmp(stk__file_reader_path(r, 2), want) == 0 && stk__file_reader_label(r, 2) == 3);
    CHECK(stk__file_reader_label(r, 0) == 5 && stk__file_reader_label(r, 1) == 7);
  }
  stk__file_reader_free(r);

  make_file("bad.txt", "a/x1.jpg 1\na/x2.jpg seven\n");
  snprintf(list, sizeof list, "%s/bad.txt", root);
  c.file_list = list;
  r = NULL;
  CHECK(stk__file_reader_new(&c, &r, err, sizeof err) == STK_EPARSE && !r);
  CHECK_MSG(strstr(err, "line 2") && strstr(err, "bad.txt"), "%s", err);

  snprintf(list, sizeof list, "%s/missing.txt", root);
  c.file_list = list;
  CHECK(stk__file_reader_new(&c, &r, err, sizeof err) == STK_ENOENT && strstr(err, "missing.txt"));

  char *files[] = {"c10/p.jpg", "a/x1.jpg"};
  int64_t labels[] = {9, 8};
  c = base_config(1);
  c.files = files, c.num_files = 2;
  r = open_reader(c);
  if (r) CHECK(stk__file_reader_label(r, 0) == 0 && stk__file_reader_label(r, 1) == 1);
  stk__file_reader_free(r);
  c.labels = labels, c.num_labels = 2;
  r = open_reader(c);
  if (r) CHECK(stk__file_reader_label(r, 0) == 9 && stk__file_reader_label(r, 1) == 8);
  stk__file_reader_free(r);
  c.num_labels = 1;
  CHECK(stk__file_reader_new(&c, &r, err, sizeof err) == STK_EINVAL && strstr(err, "labels"));
}

static void test_errors(void) {
  stk__file_reader *r = NULL;
  stk__file_reader_config c = base_config(2);
  c.file_root = "/nonexistent/stoker-data";
  CHECK(stk__file_reader_new(&c, &r, err, sizeof err) == STK_ENOENT && strstr(err, "/nonexistent/stoker-data"));
  char empty[600];
  snprintf(empty, sizeof empty, "%s/a/sub", root); /* a directory with files but no class subdirectories */
  c.file_root = empty;
  CHECK(stk__file_reader_new(&c, &r, err, sizeof err) == STK_ENOENT && strstr(err, "class"));
  c.file_root = root;
  char *filters[] = {"*.png"};
  c.file_filters = filters, c.num_filters = 1;
  CHECK(stk__file_reader_new(&c, &r, err, sizeof err) == STK_ENOENT && strstr(err, "no files"));
  c = base_config(2);
  c.num_shards = 2, c.shard_id = 2;
  CHECK(stk__file_reader_new(&c, &r, err, sizeof err) == STK_EINVAL && strstr(err, "shard_id"));
  c.num_shards = 50, c.shard_id = 0; /* more shards than samples */
  CHECK(stk__file_reader_new(&c, &r, err, sizeof err) == STK_EINVAL);
  c = base_config(2);
  c.file_root = NULL;
  CHECK(stk__file_reader_new(&c, &r, err, sizeof err) == STK_EINVAL && strstr(err, "file_root"));
  CHECK(r == NULL);
}

/* The operator's run_sample: bytes of the file and the label; a vanished file is named. */
static void test_run_sample(void) {
  stk__file_reader *r = open_reader(base_config(2));
  if (!r) return;
  stk__op op = {0};
  op.schema = &stk__op_readers_file;
  op.state = r;
  stk__tensor bytes = {0}, label = {0};
  stk__tensor *outs[2] = {&bytes, &label};
  stk__sample_plan sp = {0};
  char msg[512] = "";
  stk__sample_ctx ctx = {0};
  ctx.plan = &sp;
  ctx.err = msg, ctx.err_size = sizeof msg;
  for (int i = 0; i < 10; i++) {
    sp.file_index = sp.sample_id = i;
    CHECK(stk__op_impl_find(&stk__op_readers_file, STK__DEV_CPU)->run_sample(&op, &ctx, NULL, outs) == STK_OK);
    CHECK(bytes.nbytes == strlen(expected_rel[i]) && memcmp(bytes.data, expected_rel[i], bytes.nbytes) == 0);
    CHECK(label.dtype == STK_DTYPE_INT32 && label.ndim == 1 && *(int32_t *)label.data == expected_label[i]);
  }
  char path[1024];
  snprintf(path, sizeof path, "%s/c10/p.jpg", root);
  remove(path);
  sp.file_index = 9;
  CHECK(stk__op_impl_find(&stk__op_readers_file, STK__DEV_CPU)->run_sample(&op, &ctx, NULL, outs) == STK_ENOENT);
  CHECK_MSG(strstr(msg, "c10/p.jpg") != NULL, "%s", msg);
  make_file("c10/p.jpg", expected_rel[9]);
  stk__tensor_free(&bytes), stk__tensor_free(&label);
  stk__file_reader_free(r);
}

/* Pages of `path` in the page cache (mincore over a mapping, which faults nothing in), or -1. */
static long resident_pages(const char *path, long *total) {
  int fd = open(path, O_RDONLY);
  struct stat st;
  if (fd < 0 || fstat(fd, &st) != 0 || st.st_size == 0) {
    if (fd >= 0) close(fd);
    return -1;
  }
  long page = sysconf(_SC_PAGESIZE), n = (long)((st.st_size + page - 1) / page), in = 0;
  void *map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0);
  unsigned char *vec = malloc((size_t)n);
  if (map != MAP_FAILED && vec && mincore(map, (size_t)st.st_size, vec) == 0)
    for (long i = 0; i < n; i++) in += vec[i] & 1;
  else in = -1;
  if (map != MAP_FAILED) munmap(map, (size_t)st.st_size);
  free(vec);
  close(fd);
  *total = n;
  return in;
}

/* Evicts the file's pages (written back first); 1 when none stays resident (tmpfs keeps them). */
static int evict(const char *path) {
  int fd = open(path, O_RDONLY);
  if (fd < 0) return 0;
  fdatasync(fd);
  posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  close(fd);
  long total = 0;
  return resident_pages(path, &total) == 0;
}

/* Reads planned sample k of plan through the operator (run_sample), as a worker does. */
static stk_status read_planned(stk__op *op, const stk__batch_plan *plan, int k) {
  stk__tensor bytes = {0}, label = {0};
  stk__tensor *outs[2] = {&bytes, &label};
  char msg[512] = "";
  stk__sample_ctx ctx = {0};
  ctx.plan = &plan->samples[k];
  ctx.err = msg, ctx.err_size = sizeof msg;
  stk_status st = stk__op_impl_find(&stk__op_readers_file, STK__DEV_CPU)->run_sample(op, &ctx, NULL, outs);
  CHECK_MSG(st == STK_OK, "%s", msg);
  stk__tensor_free(&bytes), stk__tensor_free(&label);
  return st;
}

/* read_ahead: plans are the same with and without it; with a warm page cache nothing is hinted
 * (every read hits); with a cold one, the batches planned before the first read misses are not
 * hinted, and once a read of the epoch has missed, planning brings each batch's files into the page
 * cache before anything reads them; a new epoch watches again; a file gone since the listing does
 * not fail the plan (run_sample reports it). */
static void test_read_ahead(void) {
  char saved[512], dir[1024];
  snprintf(saved, sizeof saved, "%s", root);
  snprintf(root, sizeof root, "%.480s/readahead", saved);
  mkdir(root, 0755);
  make_dir("z");
  char *big = malloc(256 * 1024 + 1);
  memset(big, 'j', 256 * 1024);
  big[256 * 1024] = '\0';
  for (int i = 0; i < 6; i++) {
    char rel[32];
    snprintf(rel, sizeof rel, "z/f%d.jpg", i);
    make_file(rel, big);
  }
  free(big);
  stk__file_reader_config c = base_config(2);
  c.random_shuffle = 1;
  stk__file_reader *plain = open_reader(c);
  c.read_ahead = 1;
  stk__file_reader *ahead = open_reader(c);
  if (!plain || !ahead) goto out;
  stk__read_ahead *ra = stk__file_reader_read_ahead(ahead);
  stk__op op = {0};
  op.schema = &stk__op_readers_file;
  const stk__op_impl *impl = stk__op_impl_find(&stk__op_readers_file, STK__DEV_CPU);
  stk__sample_plan sa[2], sb[2];
  stk__batch_plan pa = {.samples = sa, .batch_size = 2}, pb = {.samples = sb, .batch_size = 2};
  /* Warm: the files were just written. */
  for (int b = 0; b < 3; b++) {
    op.state = ahead;
    CHECK(impl->plan_batch(&op, &pb, err, sizeof err) == STK_OK);
    for (int k = 0; k < 2; k++) read_planned(&op, &pb, k);
  }
  if (!ra->probing) { /* a tmpfs or ramfs: never hinted; another file system: every batch */
    printf("read_ahead: this file system cannot tell a page-cache miss (%s)\n",
           ra->in_memory ? "in memory: nothing hinted" : "every batch hinted");
    CHECK_MSG(ra->hinted_batches == (ra->in_memory ? 0 : 2), "%lld batches hinted", (long long)ra->hinted_batches);
    goto removed;
  }
  CHECK_MSG(ra->misses == 0 && ra->hinted_batches == 0, "warm cache: %lld misses, %lld batches hinted",
            (long long)ra->misses, (long long)ra->hinted_batches);
  /* Cold: every file evicted, a new epoch. */
  int evicted = 1;
  for (int i = 0; i < 6; i++) {
    snprintf(dir, sizeof dir, "%s/z/f%d.jpg", root, i);
    evicted &= evict(dir);
  }
  if (!evicted) {
    printf("read_ahead: this file system keeps files in memory (tmpfs?): the cold case not checked\n");
    goto removed;
  }
  CHECK(stk__file_reader_reset(plain, 1) == STK_OK && stk__file_reader_reset(ahead, 1) == STK_OK);
  for (int b = 0; b < 3; b++) {
    op.state = plain;
    CHECK(impl->plan_batch(&op, &pa, err, sizeof err) == STK_OK);
    op.state = ahead;
    CHECK(impl->plan_batch(&op, &pb, err, sizeof err) == STK_OK);
    for (int k = 0; k < 2; k++) {
      CHECK(sa[k].sample_id == sb[k].sample_id && sa[k].file_index == sb[k].file_index);
      long in = 0, total = 0; /* WILLNEED starts the reads; they finish in the background */
      if (b == 0) {           /* nothing has missed yet: not hinted */
        CHECK_MSG(resident_pages(sb[k].source, &total) == 0, "read_ahead hinted %s before any miss", sb[k].source);
        continue;
      }
      for (int wait = 0; wait < 200 && (in = resident_pages(sb[k].source, &total)) < total; wait++) usleep(10000);
      CHECK_MSG(in == total, "read_ahead: %s has %ld of %ld pages in the page cache", sb[k].source, in, total);
    }
    if (b == 0) {
      read_planned(&op, &pb, 0); /* a worker's read misses: hinting on */
      if (ra->misses == 0) {     /* the kernel's read started by the cache-only one ended within it */
        printf(
            "read_ahead: an evicted file was read without waiting (a fast disk or the VM host's cache): "
            "the miss is simulated\n");
        stk__read_ahead_missed(ra);
      }
      CHECK(ra->misses == 1 && ra->hinting);
    }
  }
  CHECK_MSG(ra->hinted_batches == 2, "%lld batches hinted", (long long)ra->hinted_batches);
  /* A new epoch watches again: its first batch is not hinted. */
  CHECK(stk__file_reader_reset(ahead, 2) == STK_OK);
  op.state = ahead;
  CHECK(impl->plan_batch(&op, &pb, err, sizeof err) == STK_OK);
  CHECK(ra->hinted_batches == 2);
removed:
  /* A file removed after the listing: the plan still succeeds, hinting or not. */
  snprintf(dir, sizeof dir, "%s/z/f0.jpg", root);
  remove(dir);
  CHECK(stk__file_reader_reset(ahead, 3) == STK_OK);
  op.state = ahead;
  for (int b = 0; b < 3; b++) CHECK(impl->plan_batch(&op, &pb, err, sizeof err) == STK_OK);
out:
  stk__file_reader_free(plain);
  stk__file_reader_free(ahead);
  snprintf(root, sizeof root, "%s", saved);
}

/* read_ahead on a tmpfs (/dev/shm where it is one): its files are memory, so nothing is hinted,
 * whether the kernel tells hits there (RWF_NOWAIT: every read a hit) or refuses (then known to be
 * in memory, not hinted every batch as on a file system that cannot tell). */
static void test_read_ahead_in_memory(void) {
  struct statfs fs;
  if (statfs("/dev/shm", &fs) != 0 || (unsigned long)fs.f_type != TMPFS_MAGIC) {
    printf("read_ahead: no tmpfs at /dev/shm: not checked\n");
    return;
  }
  char tmpl[] = "/dev/shm/stoker-readahead-XXXXXX", saved[512];
  if (!mkdtemp(tmpl)) {
    printf("read_ahead: cannot make a folder in /dev/shm: not checked\n");
    return;
  }
  snprintf(saved, sizeof saved, "%s", root);
  snprintf(root, sizeof root, "%s", tmpl);
  make_dir("z");
  for (int i = 0; i < 6; i++) {
    char rel[32];
    snprintf(rel, sizeof rel, "z/f%d.jpg", i);
    make_file(rel, "in memory");
  }
  stk__file_reader_config c = base_config(2);
  c.read_ahead = 1;
  stk__file_reader *r = open_reader(c);
  if (r) {
    const stk__read_ahead *ra = stk__file_reader_read_ahead(r);
    stk__op op = {0};
    op.schema = &stk__op_readers_file;
    op.state = r;
    const stk__op_impl *impl = stk__op_impl_find(&stk__op_readers_file, STK__DEV_CPU);
    stk__sample_plan sp[2];
    stk__batch_plan plan = {.samples = sp, .batch_size = 2};
    for (int b = 0; b < 3; b++) {
      CHECK(impl->plan_batch(&op, &plan, err, sizeof err) == STK_OK);
      for (int k = 0; k < 2; k++) read_planned(&op, &plan, k);
    }
    CHECK_MSG(ra->hinted_batches == 0 && ra->misses == 0 && (ra->probing || ra->in_memory),
              "tmpfs: %lld batches hinted, %lld misses, probing %d, in memory %d", (long long)ra->hinted_batches,
              (long long)ra->misses, ra->probing, ra->in_memory);
    stk__file_reader_free(r);
  }
  stk_test_remove_tree(tmpl);
  snprintf(root, sizeof root, "%s", saved);
}

/* one STK_TEST_CASE per line: tests/CMakeLists.txt reads them */
// clang-format off
static const stk_test_case cases[] = {
    STK_TEST_CASE(test_listing),
    STK_TEST_CASE(test_sharding),
    STK_TEST_CASE(test_shuffle),
    STK_TEST_CASE(test_file_list_and_files),
    STK_TEST_CASE(test_errors),
    STK_TEST_CASE(test_run_sample),
    STK_TEST_CASE(test_read_ahead),
    STK_TEST_CASE(test_read_ahead_in_memory),
};
// clang-format on

int main(int argc, char **argv) {
  if (stk_test_list_cases(cases, STK_TEST_COUNT(cases), argc, argv)) return 0;
  char *dir = stk_test_tmpdir("reader");
  if (!dir) TEST_SKIP("cannot make a temporary directory");
  snprintf(root, sizeof root, "%s", dir);
  make_tree();
  int rc = stk_test_run_selected("test_reader", cases, STK_TEST_COUNT(cases), argc, argv);
  stk_test_remove_tree(dir);
  free(dir);
  return rc ? rc : stk_test_finish("test_reader");
}
