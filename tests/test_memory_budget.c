/* tests/test_memory_budget.c: bounded host memory (issue 14 section 2; docs/pipeline.md, "Host
 * memory"). A sample buffer that grew for one outlier sample shrinks back when its slot is recycled
 * once the outlier has left the window of recent batches, so the slots' host bytes return to what
 * they held before; uniform data allocates nothing after warm-up; options.host_memory_budget
 * refuses the outlier with a message naming the sample, its file, the size, the output, the
 * operator and the budget (a failed batch, or a bad sample refilled under skip_bad_files); the
 * default budget follows the documented formula; the dense batch tensors the consumer reads count
 * in host_bytes_held and in the budget too. Uses the fake reader of tests/pipeline_fake_ops.h
 * and a test op here (test.blob: `size` bytes per sample, `big_size` for the ids in big_ids). */
#include <stdint.h>
#include <time.h>
#include <unistd.h>

#include "core/exec/exec.h"
#include "pipeline_fake_ops.h"
#include "testutil.h"

static stk_status blob_run(stk__op *op, stk__sample_ctx *ctx, stk__tensor *const *in, stk__tensor *const *out) {
  uint32_t id;
  memcpy(&id, in[0]->data, 4);
  size_t nbig;
  const int64_t *big = stk__arg_int_list(op, "big_ids", &nbig);
  int64_t n = stk__arg_int(op, "size");
  for (size_t i = 0; i < nbig; i++)
    if (big[i] == (int64_t)id) n = stk__arg_int(op, "big_size");
  stk_status st = stk__tensor_resize(out[0], STK_DTYPE_UINT8, 1, &n, "B");
  if (st != STK_OK) return st;
  memset(out[0]->data, (int)(id & 0xff), (size_t)n); /* touch every byte, as a decoder would */
  return STK_OK;
}
static const stk__op_impl blob_impl = {.run_sample = blob_run};
static const stk__arg_schema blob_args[] = {
    {"size", STK_ARG_INT, "4096", 0, 0, "bytes per sample"},
    {"big_size", STK_ARG_INT, "0", 0, 0, "bytes of the samples in big_ids"},
    {"big_ids", STK_ARG_INT_LIST, "[]", 0, 0, "outlier sample ids"},
};
static const stk__op_schema blob_schema = {.name = "test.blob",
                                           .doc = "test blob",
                                           .min_inputs = 1,
                                           .max_inputs = 1,
                                           .num_outputs = 1,
                                           .devices = STK_OPDEV_CPU,
                                           .args = blob_args,
                                           .num_args = 3};
static const stk__op_entry blob_entry = {&blob_schema, &blob_impl, NULL, NULL};

#define BIG_ID 40
static int64_t blob_size = 4096; /* test.blob's size of the next blob_pipeline */
static int blob_batch = 4, blob_prefetch = 2;
static int64_t blob_samples = 100000, blob_bad_id = -1; /* the reader's epoch and its one bad sample */
static char blob_error[1024]; /* the build error of the last blob_pipeline that failed */
#define BIG_SIZE ((int64_t)64 << 20)

/* reader -> blob; outputs: blob, reader[1]. big: whether sample BIG_ID is BIG_SIZE bytes. */
static stk_pipeline *blob_pipeline(size_t budget, int skip, int big) {
  stk_pipeline_options o;
  stk_pipeline_options_default(&o);
  o.batch_size = blob_batch;
  o.num_threads = 2;
  o.prefetch_queue_depth = blob_prefetch;
  o.pin_threads = 0;
  o.skip_bad_files = skip;
  o.host_memory_budget = budget;
  stk_pipeline *p = NULL;
  if (stk_pipeline_new(&o, &p) != STK_OK) return NULL;
  stk_args *ra, *ba;
  stk_args_new(&ra);
  stk_args_new(&ba);
  stk_args_set_int(ra, "num_samples", blob_samples);
  stk_args_set_bool(ra, "skip_bad_files", skip);
  if (blob_bad_id >= 0) stk_args_set_int_list(ra, "bad_ids", &blob_bad_id, 1);
  int64_t ids[1] = {BIG_ID};
  stk_args_set_int(ba, "big_size", BIG_SIZE);
  stk_args_set_int(ba, "size", blob_size);
  if (big) stk_args_set_int_list(ba, "big_ids", ids, 1);
  const char *bin[1] = {"reader"};
  const char *outs[2] = {"blob", "reader[1]"};
  stk_status st = stk_pipeline_add_op(p, "test.reader", "reader", NULL, 0, ra);
  if (st == STK_OK) st = stk_pipeline_add_op(p, "test.blob", "blob", bin, 1, ba);
  if (st == STK_OK) st = stk_pipeline_set_outputs(p, outs, 2);
  if (st == STK_OK) st = stk_pipeline_build(p);
  stk_args_destroy(ra);
  stk_args_destroy(ba);
  if (st != STK_OK) {
    snprintf(blob_error, sizeof blob_error, "%s: %s", stk_status_name(st), stk_pipeline_last_error(p));
    fprintf(stderr, "blob_pipeline: %s\n", blob_error);
    stk_pipeline_destroy(p);
    return NULL;
  }
  return p;
}

static stk_pipeline_stats stats_of(stk_pipeline *p) {
  stk_pipeline_stats s;
  memset(&s, 0, sizeof s);
  stk_pipeline_stats_get(p, &s);
  return s;
}

/* Runs one batch; returns its status (the batch is released). */
static stk_status one_batch(stk_pipeline *p) {
  stk_batch *b = NULL;
  stk_status st = stk_pipeline_next(p, &b);
  if (st == STK_OK) stk_batch_release(b);
  return st;
}

static void test_shrink_back_after_outlier(void) {
  stk_pipeline *p = blob_pipeline(SIZE_MAX, 0, 1);
  CHECK(p != NULL);
  if (!p) return;
  stk_status st = STK_OK;
  /* batches 0..7: before the outlier (batch 10). Not 0..8: once batch 8 is delivered, the prefetch
   * (depth 2) may already run batch 10, whose outlier buffer would then count here. */
  for (int i = 0; i < 8 && st == STK_OK; i++) st = one_batch(p);
  stk_pipeline_stats s = stats_of(p);
  uint64_t before = s.host_bytes_held;
  CHECK_MSG(s.allocations_after_warmup == 0, "%llu allocations after warm-up on uniform data",
            (unsigned long long)s.allocations_after_warmup);
  CHECK(s.host_memory_budget == UINT64_MAX);
  uint64_t peak = before, after = 0;
  int back_after = -1;
  for (int i = 8; i < 40 && st == STK_OK; i++) { /* batch 10 holds sample BIG_ID */
    st = one_batch(p);
    uint64_t held = stats_of(p).host_bytes_held;
    if (held > peak) peak = held;
    if (i > 10 && back_after < 0 && held <= before + before / 2) back_after = i - 10;
    after = held;
  }
  CHECK_MSG(st == STK_OK, "%s", stk_pipeline_last_error(p));
  printf(
      "shrink-back: host bytes held %llu before the outlier, %llu at its peak, %llu 30 batches later "
      "(back within %d batches after the outlier's)\n",
      (unsigned long long)before, (unsigned long long)peak, (unsigned long long)after, back_after);
  CHECK_MSG(peak >= (uint64_t)BIG_SIZE, "the outlier's buffer was counted (peak %llu)", (unsigned long long)peak);
  CHECK_MSG(back_after >= 0 && back_after <= 12, "memory came back after %d batches", back_after);
  CHECK_MSG(after <= before + before / 2, "after %llu vs before %llu", (unsigned long long)after,
            (unsigned long long)before);
  stk_pipeline_destroy(p);
}

static void test_uniform_allocates_nothing(void) {
  stk_pipeline *p = blob_pipeline(0, 0, 0);
  CHECK(p != NULL);
  if (!p) return;
  stk_status st = STK_OK;
  for (int i = 0; i < 12 && st == STK_OK; i++) st = one_batch(p);
  uint64_t held = stats_of(p).host_bytes_held;
  for (int i = 0; i < 60 && st == STK_OK; i++) st = one_batch(p);
  CHECK_MSG(st == STK_OK, "%s", stk_pipeline_last_error(p));
  stk_pipeline_stats s = stats_of(p);
  CHECK_MSG(s.allocations_after_warmup == 0, "%llu allocations after warm-up",
            (unsigned long long)s.allocations_after_warmup);
  CHECK_MSG(s.host_bytes_held == held, "held %llu then %llu", (unsigned long long)held,
            (unsigned long long)s.host_bytes_held);
  CHECK(held > 0);
  /* the default budget: min(batch x (prefetch + 2) x 64 MiB, half the RAM), at least 256 MiB */
  uint64_t expect = (uint64_t)4 * 4 * (64u << 20);
  long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  if (pages > 0 && page > 0 && (uint64_t)pages / 2 * (uint64_t)page < expect)
    expect = (uint64_t)pages / 2 * (uint64_t)page;
  if (expect < (256u << 20)) expect = 256u << 20;
  CHECK_MSG(s.host_memory_budget == expect, "default budget %llu, expected %llu",
            (unsigned long long)s.host_memory_budget, (unsigned long long)expect);
  stk_pipeline_destroy(p);
}

static void test_budget_refuses_outlier(void) {
  const size_t budget = (size_t)8 << 20;
  stk_pipeline *p = blob_pipeline(budget, 0, 1);
  CHECK(p != NULL);
  if (!p) return;
  stk_status st = STK_OK;
  int batches = 0;
  while (batches < 30 && (st = one_batch(p)) == STK_OK) batches++;
  CHECK_MSG(st == STK_ERANGE && batches == 10, "status %s after %d batches", stk_status_name(st), batches);
  const char *msg = stk_pipeline_last_error(p);
  printf("budget: %s\n", msg);
  CHECK_MSG(strstr(msg, "sample 40 (file dir/file_40.jpg) needs 64.0 MiB for output 0 of operator blob") != NULL, "%s",
            msg);
  CHECK_MSG(strstr(msg, "host memory budget is 8.0 MiB") != NULL, "%s", msg);
  CHECK(stats_of(p).host_bytes_held <= budget);
  stk_pipeline_destroy(p);

  /* skip_bad_files: the sample is a bad one, replaced by the next; every batch stays full */
  p = blob_pipeline(budget, 1, 1);
  CHECK(p != NULL);
  if (!p) return;
  int seen_big = 0, seen_80 = 0; /* every blob byte is its sample id & 0xff: 40 must never come */
  for (batches = 0; batches < 20; batches++) {
    stk_batch *b = NULL;
    st = stk_pipeline_next(p, &b);
    if (st != STK_OK) break;
    for (int s = 0; s < stk_batch_size(b); s++) {
      stk_tensor_view v;
      if (stk_batch_sample(b, 0, s, &v) != STK_OK || v.nbytes != 4096) {
        seen_big++;
        continue;
      }
      seen_big += ((const unsigned char *)v.data)[0] == BIG_ID;
      seen_80 += ((const unsigned char *)v.data)[0] == 80;
    }
    stk_batch_release(b);
  }
  CHECK_MSG(st == STK_OK && batches == 20, "%s after %d batches: %s", stk_status_name(st), batches,
            stk_pipeline_last_error(p));
  stk_pipeline_stats s = stats_of(p);
  CHECK_MSG(s.skipped_files == 1, "skipped %llu", (unsigned long long)s.skipped_files);
  CHECK(s.images == 80);
  char *json = NULL;
  if (stk_pipeline_bad_files_json(p, &json) == STK_OK && json) {
    CHECK_MSG(strstr(json, "file_40.jpg") && strstr(json, "host memory budget"), "%s", json);
    free(json);
  }
  CHECK_MSG(seen_big == 0 && seen_80 == 1, "sample 40 seen %d times, its replacement 80 %d times", seen_big, seen_80);
  stk_pipeline_destroy(p);
}

/* The epoch's last batch holds the outlier and a bad file with nothing left to replace it: its
 * empty places become copies of the outlier, which the budget refuses. The error names the file,
 * the size and the budget (it said "out of memory copying fill samples (STK_ERANGE)"). */
static void test_fill_copy_refused_names_file_and_budget(void) {
  blob_samples = BIG_ID + 2, blob_bad_id = BIG_ID + 1;
  stk_pipeline *p = blob_pipeline((size_t)100 << 20, 1, 1);
  blob_samples = 100000, blob_bad_id = -1;
  CHECK(p != NULL);
  if (!p) return;
  stk_status st = STK_OK;
  int batches = 0;
  while (batches < 30 && (st = one_batch(p)) == STK_OK) batches++;
  const char *msg = stk_pipeline_last_error(p);
  printf("fill copy: %s after %d batches: %s\n", stk_status_name(st), batches, msg);
  CHECK_MSG(st == STK_ERANGE && batches == 10, "status %s after %d batches", stk_status_name(st), batches);
  CHECK_MSG(strstr(msg, "file dir/file_40.jpg") != NULL && strstr(msg, "64.0 MiB") != NULL, "%s", msg);
  CHECK_MSG(strstr(msg, "host memory budget is 100.0 MiB") != NULL, "%s", msg);
  stk_pipeline_destroy(p);
}

/* 4 samples of 1 MiB a batch: each of the 3 slots holds 4 sample buffers and one dense 4 MiB batch
 * tensor, so at least 24 MiB are held (the sample buffers alone, with their headroom, are 15 MiB);
 * a 20 MiB budget, which the sample buffers alone fit in, is refused. */
static void test_dense_tensors_counted(void) {
  const int64_t mib = 1 << 20;
  blob_size = mib;
  stk_pipeline *p = blob_pipeline(SIZE_MAX, 0, 0);
  CHECK(p != NULL);
  stk_status st = STK_OK;
  for (int i = 0; p && i < 9 && st == STK_OK; i++) st = one_batch(p);
  if (p) {
    uint64_t held = stats_of(p).host_bytes_held;
    printf("dense: %llu bytes held with 3 slots of 4 x 1 MiB samples\n", (unsigned long long)held);
    CHECK_MSG(st == STK_OK && held >= (uint64_t)(24 * mib), "%s: held %llu", stk_status_name(st),
              (unsigned long long)held);
    stk_pipeline_destroy(p);
  }
  p = blob_pipeline((size_t)20 << 20, 0, 0);
  CHECK(p != NULL);
  int batches = 0;
  while (p && batches < 9 && (st = one_batch(p)) == STK_OK) batches++;
  if (p) {
    printf("dense, 20 MiB budget: %s after %d batches: %s\n", stk_status_name(st), batches, stk_pipeline_last_error(p));
    CHECK_MSG(st == STK_ERANGE && strstr(stk_pipeline_last_error(p), "host memory budget") != NULL, "%s: %s",
              stk_status_name(st), stk_pipeline_last_error(p));
    CHECK(stats_of(p).host_bytes_held <= (uint64_t)(20 * mib));
    stk_pipeline_destroy(p);
  }
  blob_size = 4096;
}

/* A batch size or prefetch depth whose slots' bookkeeping alone passes the budget is refused at
 * build, quickly, naming both (the fault campaign's --prefetch 100000000 allocated 11 GB and hung,
 * --batch 2000000000 failed with a bare "out of memory"). */
static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void test_huge_slots_refused(void) {
  const struct { int batch, prefetch; } cases[] = {{4, 100000000}, {2000000000, 2}, {1, 2147483647}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    blob_batch = cases[i].batch, blob_prefetch = cases[i].prefetch;
    double t0 = now_s();
    stk_pipeline *p = blob_pipeline(0, 0, 0);
    double took = now_s() - t0;
    CHECK_MSG(p == NULL, "batch %d, prefetch %d was built", cases[i].batch, cases[i].prefetch);
    stk_pipeline_destroy(p);
    CHECK_MSG(strstr(blob_error, "STK_ERANGE") && strstr(blob_error, "batch_size") &&
                  strstr(blob_error, "prefetch_queue_depth") && strstr(blob_error, "host memory budget"),
              "%s", blob_error);
    CHECK_MSG(took < 5.0, "refusing batch %d, prefetch %d took %.1f s", cases[i].batch, cases[i].prefetch, took);
  }
  blob_batch = 4, blob_prefetch = 2;
}

/* The pinned lists' shrink rule (exec/slots.c; on unless STOKER_PINNED_SHRINK=0): a pinned buffer more than STK__SHRINK_FACTOR (4)
 * above the size class its last peak needs goes down to that class, or back to the pool when its
 * last batch did not use it; buffers under 64 KiB and ones in proportion stay. (Pinned lists exist
 * only with a GPU: the rule runs in pipelines on the GPU machine, bench/lease/lease-job.sh tunetests.) */
static void test_pinned_keep_rule(void) {
  const size_t KiB = 1024, MiB = 1024 * 1024;
  CHECK(stk__exec_pinned_keep(1536 * KiB, 256) < 8 * KiB);           /* a plan record in an image's buffer */
  CHECK(stk__exec_pinned_keep(1536 * KiB, 0) == 0);                  /* unused last batch: given back */
  CHECK(stk__exec_pinned_keep(1536 * KiB, 600 * KiB) == 1536 * KiB); /* in proportion: kept */
  CHECK(stk__exec_pinned_keep(32 * KiB, 0) == 32 * KiB);             /* small: left alone */
  size_t kept = stk__exec_pinned_keep(8 * MiB, MiB);                 /* 8x too large: to 1 MiB's class */
  CHECK_MSG(kept >= MiB + MiB / 4 && kept <= 2 * MiB, "kept %zu", kept);
  CHECK(stk__exec_pinned_keep(kept, MiB) == kept); /* and stays there */
}

int main(void) {
  fake_ops_register();
  test_pinned_keep_rule();
  stk__op_register(&blob_entry);
  test_uniform_allocates_nothing();
  test_shrink_back_after_outlier();
  test_budget_refuses_outlier();
  test_fill_copy_refused_names_file_and_budget();
  test_dense_tensors_counted();
  test_huge_slots_refused();
  return stk_test_finish("test_memory_budget");
}
