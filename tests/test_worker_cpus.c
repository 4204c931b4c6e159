/* tests/test_worker_cpus.c: which CPU each worker thread is pinned to (src/core/exec/affinity.c) on
 * a CPU pipeline, alone and as a launcher's local rank: rank r of L > 1 starts r x num_workers CPUs
 * into the allowed set (modulo its size), so ranks sharing one set of CPUs do not pin their workers
 * to the same ones; alone, a one-rank launcher, rank 0 or a malformed rank start at the first. A
 * white-box test (the pipeline's worker table). */
#include <stdlib.h>

#include "pipeline_fake_ops.h"
#include "core/engine.h"
#include "stoker/topology.h"
#include "case_list.h"
#include "testutil.h"

enum { THREADS = 3 };

static int g_allowed[STK_MAX_CPUS], g_count;

/* The allowed CPUs, through the topology module: the executor reaches it by weak references (it
 * links without it), so a static test binary has its objects only when something else names
 * them -- this does. */
static void read_allowed(void) {
  stk_cpuset set;
  g_count = 0;
  if (stk_get_affinity(0, &set) != STK_OK) return;
  for (int c = stk_cpuset_first(&set); c >= 0; c = stk_cpuset_next(&set, c)) g_allowed[g_count++] = c;
}

static void clear_launchers(void) {
  const char *names[] = {"LOCAL_RANK", "LOCAL_WORLD_SIZE", "SLURM_LOCALID", "SLURM_NTASKS_PER_NODE",
                         "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE", "STOKER_AFFINITY_MASK"};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) unsetenv(names[i]);
}

/* Builds a pinned CPU pipeline of THREADS workers and checks worker i is on allowed[(first + i) % n]. */
static void expect_start(int first, const char *how) {
  stk_pipeline_options o;
  stk_pipeline_options_default(&o);
  o.batch_size = 2;
  o.num_threads = THREADS;
  o.pin_threads = 1;
  o.device_id = -1;
  stk_pipeline *p = NULL;
  CHECK(fake_pipeline(&o, 8, 0, NULL, 0, 0, &p) == STK_OK);
  if (!p) return;
  if (stk_pipeline_last_error(p)[0]) printf("%s: %s\n", how, stk_pipeline_last_error(p));
  for (int i = 0; i < p->num_workers; i++) {
    const int want = g_allowed[(first + i) % g_count];
    CHECK_MSG(p->workers[i].cpu == want, "%s: worker %d on CPU %d, want %d (the allowed set's %d-th of %d)", how, i,
              p->workers[i].cpu, want, (first + i) % g_count, g_count);
  }
  stk_batch *b = NULL;
  CHECK_MSG(stk_pipeline_next(p, &b) == STK_OK, "%s: %s", how, stk_pipeline_last_error(p));
  if (b) stk_batch_release(b);
  stk_pipeline_destroy(p);
}

static void test_alone_from_the_first_allowed_cpu(void) {
  clear_launchers();
  expect_start(0, "no launcher");
}

static void test_local_ranks_start_apart(void) {
  clear_launchers();
  setenv("LOCAL_WORLD_SIZE", "2", 1);
  setenv("LOCAL_RANK", "0", 1);
  expect_start(0, "torchrun rank 0 of 2");
  setenv("LOCAL_RANK", "1", 1);
  expect_start(THREADS % g_count, "torchrun rank 1 of 2");
  clear_launchers();
  setenv("SLURM_LOCALID", "3", 1);
  setenv("SLURM_NTASKS_PER_NODE", "4(x2)", 1);
  expect_start(3 * THREADS % g_count, "Slurm local id 3 of 4");
  clear_launchers();
}

static void test_one_rank_or_a_bad_rank_starts_at_the_first(void) {
  clear_launchers();
  setenv("LOCAL_RANK", "1", 1);
  setenv("LOCAL_WORLD_SIZE", "1", 1);
  expect_start(0, "torchrun rank 1 of 1");
  setenv("LOCAL_RANK", "one", 1);
  setenv("LOCAL_WORLD_SIZE", "2", 1);
  expect_start(0, "a malformed LOCAL_RANK");
  clear_launchers();
}

/* The launcher's local rank and size as the executor reads them (torchrun first, then Slurm). */
static void test_launcher_local_rank(void) {
  clear_launchers();
  stk_rank_gpu_options o;
  stk_rank_gpu_options_default(&o);
  int rank = 7, size = 7;
  CHECK(stk_launcher_local_rank(&o, &rank, &size) == STK_ENOENT && rank == -1 && size == -1);
  setenv("SLURM_LOCALID", "2", 1);
  setenv("SLURM_NTASKS_PER_NODE", "4(x2)", 1);
  CHECK(stk_launcher_local_rank(&o, &rank, &size) == STK_OK && rank == 2 && size == 4);
  setenv("LOCAL_RANK", "1", 1);
  CHECK(stk_launcher_local_rank(&o, &rank, &size) == STK_OK && rank == 1 && size == -1);
  setenv("LOCAL_WORLD_SIZE", "x", 1);
  CHECK(stk_launcher_local_rank(&o, &rank, &size) == STK_EINVAL && rank == -1);
  const char *env[] = {"LOCAL_RANK=3", "LOCAL_WORLD_SIZE=8", NULL}; /* options.env instead of getenv */
  o.env = env;
  CHECK(stk_launcher_local_rank(&o, &rank, &size) == STK_OK && rank == 3 && size == 8);
  clear_launchers();
  stk_cpuset one;
  char err[64];
  CHECK(stk_cpuset_parse("0", &one, err, sizeof err) == STK_OK && stk_cpuset_count(&one) == 1);
}

// clang-format off
static const stk_test_case cases[] = {
    STK_TEST_CASE(test_launcher_local_rank),
    STK_TEST_CASE(test_alone_from_the_first_allowed_cpu),
    STK_TEST_CASE(test_local_ranks_start_apart),
    STK_TEST_CASE(test_one_rank_or_a_bad_rank_starts_at_the_first),
};
// clang-format on

int main(int argc, char **argv) {
  if (stk_test_list_cases(cases, STK_TEST_COUNT(cases), argc, argv)) return 0;
  read_allowed();
  if (g_count == 0) {
    printf("test_worker_cpus: the allowed CPUs could not be read\n");
    return 77;
  }
  fake_ops_register();
  return stk_test_run_cases("test_worker_cpus", cases, STK_TEST_COUNT(cases), argc, argv);
}
