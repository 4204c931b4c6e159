/* tests/test_gpu_router.c: the automatic router's schedule on the GPU, batch by batch (rn50-train,
 * mixed decoder, batches of 8 baseline photo-like JPEGs the engines can all take; prefetch 2, so a
 * full set of slots is 4). With STOKER_ROUTER_BATCHES=1 and STOKER_ROUTER_TRIAL_BATCHES=6:
 * calibration on batch 2 at 0.95, the trial's arms on batches 10-15 (the model's load, CPU lanes),
 * 16-21 (the same load, nvJPEG's CUDA decoder) and 22-27 (load 1), load 1 to batch 35, the verdict
 * from 36 on.
 *   - A first pipeline decides (whatever this GPU's costs say) and its decision is kept in the
 *     cache directory (a temporary one): one file, "HW CUDA TRIAL KEY".
 *   - That file is rewritten to "0.50 1.00 0.50 KEY" (a verdict of 0.5 with the CUDA decoder, the
 *     trial at 0.5), and a second pipeline of the same key takes it: its record says so, and every
 *     delivered batch's counters follow the schedule exactly -- 7 engine + 1 CPU at 0.95, 4 engine +
 *     4 CPU in the CPU arm, 4 + 4 CUDA in the CUDA arm, 8 engine at load 1, 4 + 4 CUDA after the
 *     verdict (positions: the engines take p where floor((p+1)L) > floor(pL)).
 * A file the router reads is what a later process follows: this is the cross-process half of
 * "same seed, same bytes" without pinning. Skips without a CUDA device. */
#include <dirent.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/engine.h"
#include "device/device.h"
#include "gpu_jpeg.h"
#include "gpu_testutil.h"
#include "case_list.h"
#include "testutil.h"

#if defined(STOKER_HAVE_CUDA)

#define BATCH   8
#define IMAGES  64 /* 8 batches per epoch */
#define BATCHES 44

static char *g_root;

static void make_data(void) {
  g_root = stk_test_tmpdir("gpu_router");
  CHECK(gpu_photo_tree(g_root, IMAGES / 2));
}

/* rn50-train over the data, the mixed decoder at its defaults (the router asked for by the
 * environment); per delivered batch k (from 1) the decoders' counts into counts[k] (engines, CUDA
 * decoder, CPU), and the last stats. */
static void run(int counts[BATCHES + 1][3], stk_pipeline_stats *last) {
  stk_pipeline_options o;
  stk_pipeline_options_default(&o);
  o.batch_size = BATCH, o.num_threads = 2, o.pin_threads = 0, o.device_id = 0, o.seed = 7;
  o.prefetch_queue_depth = 2;
  stk_pipeline *p = NULL;
  CHECK(stk_pipeline_new(&o, &p) == STK_OK);
  stk_status st = stk_pipeline_add_builtin(p, "rn50-train", g_root);
  if (st == STK_OK) st = stk_pipeline_build(p);
  CHECK_MSG(st == STK_OK, "build: %s", stk_pipeline_last_error(p));
  memset(last, 0, sizeof *last);
  uint64_t hw = 0, cuda = 0, cpu = 0;
  for (int k = 1; st == STK_OK && k <= BATCHES;) {
    stk_batch *b = NULL;
    st = stk_pipeline_next(p, &b);
    if (st == STK_EOF_EPOCH) {
      st = stk_pipeline_reset(p);
      continue;
    }
    CHECK_MSG(st == STK_OK, "batch %d: %s", k, stk_pipeline_last_error(p));
    if (st != STK_OK) break;
    stk_batch_release(b);
    CHECK(stk_pipeline_stats_get(p, last) == STK_OK);
    counts[k][0] = (int)(last->decoded_hw - hw), counts[k][1] = (int)(last->decoded_cuda - cuda);
    counts[k][2] = (int)(last->decoded_cpu - cpu);
    hw = last->decoded_hw, cuda = last->decoded_cuda, cpu = last->decoded_cpu;
    k++;
  }
  stk_pipeline_destroy(p);
}

/* The one route-* file in dir, its path into path; 0 when there is not exactly one. */
static int only_file(const char *dir, char *path, size_t size) {
  DIR *d = opendir(dir);
  if (!d) return 0;
  int n = 0;
  for (struct dirent *e; (e = readdir(d));)
    if (!strncmp(e->d_name, "route-", 6) && !strstr(e->d_name, ".tmp")) n++, snprintf(path, size, "%s/%s", dir, e->d_name);
  closedir(d);
  return n == 1;
}

static void expect(int counts[BATCHES + 1][3], int from, int to, int hw, int cuda, int cpu) {
  for (int k = from; k <= to; k++)
    CHECK_MSG(counts[k][0] == hw && counts[k][1] == cuda && counts[k][2] == cpu,
              "batch %d: engines %d, CUDA decoder %d, CPU %d; expected %d, %d, %d", k, counts[k][0], counts[k][1],
              counts[k][2], hw, cuda, cpu);
}

static void test_kept_decision_routes_every_batch(void) {
  char *cache = stk_test_tmpdir("gpu_router_cache"), path[4096];
  setenv("STOKER_HW_DECODER_LOAD", "-1", 1);
  setenv("STOKER_ROUTER_BATCHES", "1", 1);
  setenv("STOKER_ROUTER_TRIAL_BATCHES", "6", 1);
  setenv("STOKER_ROUTER_CACHE", cache, 1);
  static int counts[BATCHES + 1][3];
  stk_pipeline_stats st;
  run(counts, &st);
  printf("first pipeline: %s\n", st.decoder_route);
  CHECK_MSG(!strncmp(st.decoder_route, "hw_decoder_load auto", 20), "record '%s'", st.decoder_route);
  expect(counts, 1, 9, 7, 0, 1); /* calibration and the batches planned before the decision: 0.95 */
  CHECK_MSG(only_file(cache, path, sizeof path), "no decision kept in %s", cache);
  char line[512] = "", key[256] = "";
  FILE *f = fopen(path, "r");
  CHECK(f && fgets(line, sizeof line, f));
  if (f) fclose(f);
  printf("kept: %s", line);
  double hw = -1, cuda = -1, trial = -1;
  CHECK(sscanf(line, "%lf %lf %lf %255[^\n]", &hw, &cuda, &trial, key) == 4);
  CHECK(hw >= 0 && hw <= 1 && cuda >= 0 && cuda <= 1 && trial >= 0 && trial <= 1 && strstr(key, "gpu0 crop1 ch3"));
  f = fopen(path, "w");
  CHECK(f && fprintf(f, "0.50 1.00 0.50 %s\n", key) > 0);
  if (f) fclose(f);

  memset(counts, 0, sizeof counts);
  run(counts, &st);
  printf("second pipeline: %s\n", st.decoder_route);
  CHECK_MSG(strstr(st.decoder_route, "auto -> 0.50 + CUDA decoder 1.00 (an earlier run's decision") != NULL,
            "record '%s'", st.decoder_route);
  expect(counts, 1, 9, 7, 0, 1);
  expect(counts, 10, 15, 4, 0, 4); /* the trial's CPU arm at 0.5 */
  expect(counts, 16, 21, 4, 4, 0); /* its CUDA arm */
  expect(counts, 22, 35, 8, 0, 0); /* load 1, and until the verdict applies */
  expect(counts, 36, BATCHES, 4, 4, 0); /* the verdict */
  unsetenv("STOKER_ROUTER_CACHE");
  unsetenv("STOKER_ROUTER_TRIAL_BATCHES");
  unsetenv("STOKER_ROUTER_BATCHES");
  unsetenv("STOKER_HW_DECODER_LOAD");
  stk_test_remove_tree(cache);
  free(cache);
}

/* one STK_TEST_CASE per line: tests/CMakeLists.txt reads them */
// clang-format off
static const stk_test_case cases[] = {
    STK_TEST_CASE(test_kept_decision_routes_every_batch),
};
// clang-format on

int main(int argc, char **argv) {
  if (stk_test_list_cases(cases, STK_TEST_COUNT(cases), argc, argv)) return 0;
  gpu_test_require_device(0);
  make_data();
  int rc = stk_test_run_selected("test_gpu_router", cases, STK_TEST_COUNT(cases), argc, argv);
  CHECK(stk_test_remove_tree(g_root) == 0);
  free(g_root);
  return rc ? rc : stk_test_finish("test_gpu_router");
}
#else
int main(void) { TEST_SKIP("this stoker was built without CUDA"); }
#endif
