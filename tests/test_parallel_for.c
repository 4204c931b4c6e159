/* tests/test_parallel_for.c: stk__parallel_for called on a worker, as the mixed decoder's
 * prepare_batch calls it (lanes_early), and stk__parallel_for_helped as the GPU stage calls it:
 * the caller runs its own job's queued items while it waits, so a pipeline with one worker, or with every worker inside such a call at once,
 * finishes; every item runs exactly once; the first error fails the batch without a hang. A
 * white-box test: a test-only operator makes the call from run_sample with the context a prepare
 * task has (the pool and 1 + its worker index). Run under TSan by `make tsan`. */
#include <math.h>
#include <pthread.h>
#include <time.h>

#include "pipeline_fake_ops.h"
#include "core/engine.h"
#include "case_list.h"
#include "testutil.h"

enum { ITEMS = 17 };

typedef struct nested_job {
  uint32_t id;
  uint32_t sum;     /* atomic */
  int ran[ITEMS];   /* atomic: times each item ran */
  int fail_at;      /* the item that fails, or -1 */
  int self_ran;     /* atomic: items the calling worker ran itself */
  int caller_index; /* its worker index */
} nested_job;

static int g_fail_id = -1; /* the sample whose nested job fails (set before the pipeline is built) */
static int g_burn_ms = 0;  /* atomic: CPU milliseconds each sample spins on its worker */
static int g_helped = 0;   /* 1: the call is stk__parallel_for_helped made as from a thread that is
                              not a worker (the GPU stage): worker 0, the caller as thread -1 */

/* Spins until `clock` has advanced `seconds`. */
static void burn_cpu(clockid_t clock, double seconds) {
  const double until = stk__clock_seconds(clock) + seconds;
  volatile uint64_t x = 1;
  while (stk__clock_seconds(clock) < until)
    for (int k = 0; k < 10000; k++) x = x * 6364136223846793005ull + 1;
}

static void *burn_thread(void *arg) {
  (void)arg;
  burn_cpu(CLOCK_THREAD_CPUTIME_ID, 0.2);
  return NULL;
}

static stk_status nested_item(void *arg, int i, int thread_index) {
  nested_job *j = (nested_job *)arg;
  __atomic_fetch_add(&j->ran[i], 1, __ATOMIC_RELAXED);
  __atomic_fetch_add(&j->sum, j->id * ITEMS + (uint32_t)i, __ATOMIC_RELAXED);
  if (thread_index == j->caller_index) __atomic_fetch_add(&j->self_ran, 1, __ATOMIC_RELAXED);
  return i == j->fail_at ? STK_EINVAL : STK_OK;
}

/* Output: int32 [2] = {the items' sum, items the calling worker ran itself}. */
static stk_status nested_run(stk__op *op, stk__sample_ctx *ctx, stk__tensor *const *in, stk__tensor *const *out) {
  (void)op;
  stk__worker *w = (stk__worker *)ctx->thread_scratch;
  if (!w || !w->pipe) return STK_EINTERNAL;
  const int burn_ms = __atomic_load_n(&g_burn_ms, __ATOMIC_RELAXED);
  if (burn_ms > 0) burn_cpu(CLOCK_THREAD_CPUTIME_ID, burn_ms * 1e-3);
  nested_job job;
  memset(&job, 0, sizeof job);
  memcpy(&job.id, in[0]->data, 4);
  job.fail_at = (int)job.id == g_fail_id ? 5 : -1;
  job.caller_index = g_helped ? -1 : w->index;
  stk__batch_ctx bctx;
  memset(&bctx, 0, sizeof bctx);
  bctx.pool = (struct stk__pool_runner *)w->pipe;
  bctx.worker = g_helped ? 0 : w->index + 1;
  stk_status st = g_helped ? stk__parallel_for_helped(&bctx, ITEMS, nested_item, &job)
                           : stk__parallel_for(&bctx, ITEMS, nested_item, &job);
  if (st != STK_OK) return st;
  for (int i = 0; i < ITEMS; i++)
    if (job.ran[i] != 1) return STK_EINTERNAL;
  int64_t shape[1] = {2};
  st = stk__tensor_resize(out[0], STK_DTYPE_INT32, 1, shape, "");
  if (st != STK_OK) return st;
  ((int32_t *)out[0]->data)[0] = (int32_t)job.sum;
  ((int32_t *)out[0]->data)[1] = job.self_ran;
  return STK_OK;
}

static const stk__op_impl nested_impl = {.run_sample = nested_run};
static const stk__op_schema nested_schema = {.name = "test.nested",
                                             .doc = "calls stk__parallel_for from a worker",
                                             .min_inputs = 1,
                                             .max_inputs = 1,
                                             .num_outputs = 1,
                                             .devices = STK_OPDEV_CPU,
                                             .args = NULL,
                                             .num_args = 0};
static const stk__op_entry nested_entry = {&nested_schema, &nested_impl, NULL, NULL};

static stk_pipeline *nested_pipeline(int threads, int batch, int samples) {
  stk_pipeline_options o;
  stk_pipeline_options_default(&o);
  o.batch_size = batch;
  o.num_threads = threads;
  o.prefetch_queue_depth = 2;
  o.pin_threads = 0;
  stk_pipeline *p = NULL;
  CHECK(stk_pipeline_new(&o, &p) == STK_OK);
  if (!p) return NULL;
  stk_args *ra;
  stk_args_new(&ra);
  stk_args_set_int(ra, "num_samples", samples);
  const char *in[1] = {"reader"};
  const char *outs[2] = {"nested", "reader[1]"};
  stk_status st = stk_pipeline_add_op(p, "test.reader", "reader", NULL, 0, ra);
  if (st == STK_OK) st = stk_pipeline_add_op(p, "test.nested", "nested", in, 1, NULL);
  if (st == STK_OK) st = stk_pipeline_set_outputs(p, outs, 2);
  if (st == STK_OK) st = stk_pipeline_build(p);
  stk_args_destroy(ra);
  CHECK_MSG(st == STK_OK, "nested pipeline: %s", stk_pipeline_last_error(p));
  if (st != STK_OK) {
    stk_pipeline_destroy(p);
    return NULL;
  }
  return p;
}

/* Two epochs; every sample's items summed right. Returns the items the calling workers ran
 * themselves, over all samples. */
static long run_epochs(int threads, int batch, int samples) {
  stk_pipeline *p = nested_pipeline(threads, batch, samples);
  if (!p) return -1;
  long self_ran = 0;
  for (int epoch = 0; epoch < 2; epoch++) {
    if (epoch > 0) CHECK(stk_pipeline_reset(p) == STK_OK);
    int seen = 0;
    for (;;) {
      stk_batch *b = NULL;
      stk_status st = stk_pipeline_next(p, &b);
      if (st == STK_EOF_EPOCH) break;
      CHECK_MSG(st == STK_OK, "threads %d: %s", threads, stk_pipeline_last_error(p));
      if (st != STK_OK) break;
      for (int s = 0; s < stk_batch_valid_samples(b); s++, seen++) {
        stk_tensor_view v;
        CHECK(stk_batch_sample(b, 0, s, &v) == STK_OK && v.shape[0] == 2);
        int64_t id = seen % samples;
        int32_t want = (int32_t)(id * ITEMS * ITEMS + ITEMS * (ITEMS - 1) / 2);
        CHECK_MSG(((const int32_t *)v.data)[0] == want, "sample %lld: sum %d, want %d", (long long)id,
                  ((const int32_t *)v.data)[0], want);
        self_ran += ((const int32_t *)v.data)[1];
      }
      stk_batch_release(b);
    }
    CHECK_MSG(seen == samples, "epoch %d delivered %d of %d samples", epoch, seen, samples);
  }
  stk_pipeline_destroy(p);
  return self_ran;
}

/* One worker: nobody else can run the items, so the caller runs all of them (without that the
 * pipeline would wait forever: ctest's timeout would fail it). */
static void test_one_worker_runs_its_own_items(void) {
  long self_ran = run_epochs(1, 4, 12);
  CHECK_MSG(self_ran == 2L * 12 * ITEMS, "the one worker ran %ld of %d items itself", self_ran, 2 * 12 * ITEMS);
}

/* stk__parallel_for_helped off a worker (as the GPU stage calls it for weight tables): the caller
 * runs queued items too, as thread -1. With the one worker busy making the call, the caller runs
 * them all (stk__parallel_for would wait forever there: no worker is free); with three workers,
 * every item still runs once. */
static void test_helped_caller_off_a_worker(void) {
  g_helped = 1; /* read by the workers: set back only after they are gone */
  long self_ran = run_epochs(1, 4, 12);
  CHECK_MSG(self_ran == 2L * 12 * ITEMS, "the caller ran %ld of %d items itself", self_ran, 2 * 12 * ITEMS);
  CHECK(run_epochs(3, 8, 40) >= 0);
  g_helped = 0;
}

/* Three workers, batches of 8: the workers are often all inside such a call at once. */
static void test_every_worker_nested(void) { CHECK(run_epochs(3, 8, 40) >= 0); }

/* An item's error fails that sample's batch with a message, and the pipeline stops without a hang. */
static void test_item_error_fails_the_batch(void) {
  g_fail_id = 5; /* read by the workers: set back only after they are gone */
  stk_pipeline *p = nested_pipeline(2, 4, 12);
  if (!p) {
    g_fail_id = -1;
    return;
  }
  stk_status st = STK_OK;
  for (int k = 0; k < 3 && st == STK_OK; k++) {
    stk_batch *b = NULL;
    st = stk_pipeline_next(p, &b);
    if (st == STK_OK) stk_batch_release(b);
  }
  CHECK_MSG(st != STK_OK && st != STK_EOF_EPOCH, "the batch of sample 5 did not fail (%s)", stk_status_name(st));
  CHECK(stk_pipeline_last_error(p)[0] != '\0');
  printf("item error: %s: %s\n", stk_status_name(st), stk_pipeline_last_error(p));
  stk_pipeline_destroy(p);
  g_fail_id = -1;
}

/* stk__pool_cpu_seconds (the router's "other CPU per image"): the CPU time of the pipeline's own
 * threads -- 12 samples spinning 25 ms each on the workers count, 200 ms spun by a thread of the
 * process that is not the pipeline's (a training loop's) do not. */
static void test_pool_cpu_counts_the_pipelines_threads_only(void) {
  __atomic_store_n(&g_burn_ms, 25, __ATOMIC_RELAXED);
  stk_pipeline *p = nested_pipeline(2, 4, 12);
  if (!p) {
    __atomic_store_n(&g_burn_ms, 0, __ATOMIC_RELAXED);
    return;
  }
  stk__batch_ctx ctx;
  memset(&ctx, 0, sizeof ctx);
  ctx.pool = (struct stk__pool_runner *)p;
  int seen = 0;
  for (;;) {
    stk_batch *b = NULL;
    stk_status st = stk_pipeline_next(p, &b);
    if (st == STK_EOF_EPOCH) break;
    CHECK_MSG(st == STK_OK, "%s", stk_pipeline_last_error(p));
    if (st != STK_OK) break;
    seen += stk_batch_valid_samples(b);
    stk_batch_release(b);
  }
  const double ran = stk__pool_cpu_seconds(&ctx); /* the threads started with the pipeline */
  CHECK_MSG(seen == 12 && ran >= 0.25, "the pipeline's threads ran %.3f s for %d samples of 25 ms", ran, seen);
  /* the next epoch's batches are prepared ahead: no more spinning, and let those in flight end */
  __atomic_store_n(&g_burn_ms, 0, __ATOMIC_RELAXED);
  nanosleep(&(struct timespec){0, 200 * 1000 * 1000}, NULL);
  const double pool0 = stk__pool_cpu_seconds(&ctx), process0 = stk__clock_seconds(CLOCK_PROCESS_CPUTIME_ID);
  pthread_t other;
  CHECK(pthread_create(&other, NULL, burn_thread, NULL) == 0);
  pthread_join(other, NULL);
  const double pool = stk__pool_cpu_seconds(&ctx) - pool0;
  const double process = stk__clock_seconds(CLOCK_PROCESS_CPUTIME_ID) - process0;
  CHECK_MSG(process >= 0.19 && pool < 0.05,
            "another thread's 200 ms: the process %.3f s, the pipeline's threads %.3f s", process, pool);
  stk_pipeline_destroy(p);
  /* no pipeline (standalone operator use): the process's CPU time */
  ctx.pool = NULL;
  const double a = stk__pool_cpu_seconds(&ctx), b = stk__clock_seconds(CLOCK_PROCESS_CPUTIME_ID);
  CHECK(fabs(a - b) < 0.05);
}

// clang-format off
static const stk_test_case cases[] = {
    STK_TEST_CASE(test_pool_cpu_counts_the_pipelines_threads_only),
    STK_TEST_CASE(test_one_worker_runs_its_own_items),
    STK_TEST_CASE(test_every_worker_nested),
    STK_TEST_CASE(test_helped_caller_off_a_worker),
    STK_TEST_CASE(test_item_error_fails_the_batch),
};
// clang-format on

int main(int argc, char **argv) {
  if (stk_test_list_cases(cases, STK_TEST_COUNT(cases), argc, argv)) return 0;
  fake_ops_register();
  stk__op_register(&nested_entry);
  return stk_test_run_cases("test_parallel_for", cases, STK_TEST_COUNT(cases), argc, argv);
}
