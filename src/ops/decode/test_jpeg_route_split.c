/* src/ops/decode/test_jpeg_route_split.c: the automatic router's rule (src/ops/decode/jpeg_route_split.c),
 * CPU only. The fixtures are measured-cost shapes of the cases the rule has to get right:
 *   - ImageNet-sized photographs (~0.19 MP: engines ~40 us an image, libjpeg-turbo ~3 ms an image on
 *     one thread, ~0.1 ms of other CPU work per image) at 8 CPUs: a CPU share would buy 5% at
 *     most, within the tolerance, so everything goes to the engines (1);
 *   - the same at 16 CPUs: the model's best (0.85) promises 16% for 2.5 times the cores; within
 *     the tolerance too (1);
 *   - camera-sized photographs (~2 MP: ~190 us on the engines, ~30 ms on a thread) at 16 and at
 *     8 CPUs (1: a CPU lane is too slow per image for its share to pay);
 *   - 16 CPUs but 4 worker threads: the threads bound the CPU lanes, as 4 CPUs would;
 *   - engines that are much faster than the CPUs (everything to the engines) or much slower
 *     (the largest load within the tolerance of the balance point);
 *   - nothing measured: load 1, and the reason says which cost is missing;
 *   - the throughput model itself at hand-computed points, the interval union of the engines'
 *     submissions, the calibration totals turned into costs, and the one-line record;
 *   - the schedule: which batch numbers calibrate and from which one the decision applies (a
 *     function of the batch number only), and the key a decision is recorded under;
 *   - the trial (an A/B of the model's load against 1 on later batches): its schedule, its clock
 *     and its verdict, by hand-made batch times;
 *   - the decisions kept on disk (jpeg_route_cache.c): the first one for a key wins, later ones
 *     and eight processes racing take it, a damaged or foreign file is never taken, the
 *     directory's default and "off". */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ops/decode/jpeg_route_cache.h"
#include "ops/decode/jpeg_route_split.h"
#include "case_list.h"
#include "testutil.h"

static stk__route_costs imagenet(int cpus, int threads) {
  stk__route_costs c = {.engine_s = 40e-6, .cpu_decode_s = 3e-3, .cpu_other_s = 0.1e-3, .eligible = 1.0,
                        .mean_pixels = 0.19e6, .cpus = cpus, .threads = threads};
  return c;
}

static stk__route_costs camera(int cpus, int threads) {
  stk__route_costs c = {.engine_s = 190e-6, .cpu_decode_s = 30e-3, .cpu_other_s = 1e-3, .eligible = 1.0,
                        .mean_pixels = 2.0e6, .cpus = cpus, .threads = threads};
  return c;
}

static double choose(const stk__route_costs *c, stk__route_choice *k) {
  stk__route_choose(c, k);
  printf("cpus %d threads %d: load %.2f, %.0f img/s (%s-bound, %.1f cores), engines only %.0f\n", c->cpus, c->threads,
         k->hw_load, k->images_per_s, k->bound, k->cpu_cores, k->engines_only);
  return k->hw_load;
}

#define CHECK_LOAD(got, want) CHECK_MSG(fabs((got) - (want)) < 1e-9, "chose %.2f, want %.2f", (got), (want))

/* The model: at load 1 the engines take everything (1 / 40 us = 25,000 img/s), the CPUs only the
 * other work (8 / 0.1 ms = 80,000); at 0.9 the engines make 27,778, the CPUs 8 / 0.4 ms = 20,000. */
static void test_model_by_hand(void) {
  stk__route_costs c = imagenet(8, 8);
  double cores = 0;
  CHECK(fabs(stk__route_throughput(&c, 1.0, &cores) - 25000.0) < 1e-6);
  CHECK(fabs(cores - 25000.0 * 0.1e-3) < 1e-9);
  CHECK(fabs(stk__route_throughput(&c, 0.9, &cores) - 20000.0) < 1e-6 && fabs(cores - 8.0) < 1e-9);
  CHECK(fabs(stk__route_throughput(&c, 0.0, NULL) - 8.0 / 3.1e-3) < 1e-6); /* CPU only */
  c.eligible = 0.5; /* half the images progressive: at load 1 the engines decode half of them */
  CHECK(fabs(stk__route_throughput(&c, 1.0, NULL) - 8.0 / (0.1e-3 + 0.5 * 3e-3)) < 1e-6);
}

/* The best split (0.95: 26,316 img/s) is within 5% of the engines alone (25,000): not worth its
 * 3.6 extra CPU cores. */
static void test_imagenet_8_cpus_all_to_engines(void) {
  stk__route_costs c = imagenet(8, 8);
  stk__route_choice k;
  CHECK(stk__route_throughput(&c, 0.95, NULL) > stk__route_throughput(&c, 1.0, NULL));
  CHECK_LOAD(choose(&c, &k), 1.0);
  CHECK_STR(k.bound, "engines");
  CHECK(k.cpu_cores < 3.0);
}

/* The model's best at 16 CPUs (0.85: 29,091 img/s on 16 cores) promises 16% over the engines alone
 * (25,000 on 2.5): within the tolerance, so the engines take everything. */
static void test_imagenet_16_cpus_all_to_engines(void) {
  stk__route_costs c = imagenet(16, 16);
  stk__route_choice k;
  double best_cores = 0, best = stk__route_throughput(&c, 0.85, &best_cores);
  CHECK(best > 1.1 * stk__route_throughput(&c, 1.0, NULL));
  CHECK_LOAD(choose(&c, &k), 1.0);
  CHECK(k.images_per_s >= best * (1.0 - STK__ROUTE_TOLERANCE));
  CHECK(k.cpu_cores < best_cores / 2.0);
}

static void test_camera_16_cpus(void) {
  stk__route_costs c = camera(16, 16);
  stk__route_choice k;
  CHECK_LOAD(choose(&c, &k), 1.0);
}

/* 8 CPUs cannot decode the engines' excess of 2 MP images fast enough: everything to the engines. */
static void test_camera_8_cpus_all_to_engines(void) {
  stk__route_costs c = camera(8, 8);
  stk__route_choice k;
  CHECK_LOAD(choose(&c, &k), 1.0);
  CHECK_STR(k.bound, "engines");
  CHECK(k.cpu_cores < 8.0); /* the CPUs are not all busy: the fewest cores for the best throughput */
}

static void test_threads_bound_the_lanes(void) {
  stk__route_costs few = imagenet(16, 4), four = imagenet(4, 4);
  stk__route_choice a, b;
  CHECK_LOAD(choose(&few, &a), choose(&four, &b));
}

/* Engines 10x faster than the CPUs can use: all to them. Engines slower than the CPU lanes: the
 * model's best is the balance point, 0.5 exactly with these costs; the rule takes the largest load
 * within the tolerance of it (0.55: 7,273 img/s against 8,000; 0.6 would give 6,667). */
static void test_balance_points(void) {
  stk__route_costs fast = imagenet(8, 8);
  fast.engine_s = 4e-6;
  stk__route_choice k;
  CHECK_LOAD(choose(&fast, &k), 1.0);
  /* L e P = o + (1 - L) c at L = 0.5: e = (o + c / 2) / (L P) with o = 0, c = 1 ms, P = 4 */
  stk__route_costs slow = {.engine_s = 0.5e-3 / 2.0, .cpu_decode_s = 1e-3, .cpu_other_s = 0, .eligible = 1.0,
                           .cpus = 4, .threads = 4};
  CHECK(fabs(stk__route_throughput(&slow, 0.5, NULL) - 8000.0) < 1e-6);
  CHECK_LOAD(choose(&slow, &k), 0.55);
  CHECK_STR(k.bound, "engines");
}

static void test_unmeasured_costs_send_all_to_engines(void) {
  stk__route_choice k;
  stk__route_costs none = imagenet(8, 8);
  none.engine_s = 0;
  CHECK_LOAD(choose(&none, &k), 1.0);
  CHECK(strstr(k.bound, "engine cost") != NULL);
  none = imagenet(8, 8);
  none.cpu_decode_s = 0;
  CHECK_LOAD(choose(&none, &k), 1.0);
  CHECK(strstr(k.bound, "CPU decode") != NULL);
  none = imagenet(8, 8);
  none.eligible = 0;
  CHECK_LOAD(choose(&none, &k), 1.0);
}

/* The same costs always give the same choice (the decision is a function of the calibration). */
static void test_choice_is_deterministic(void) {
  stk__route_costs c = imagenet(12, 12);
  stk__route_choice a, b;
  stk__route_choose(&c, &a);
  stk__route_choose(&c, &b);
  CHECK(a.hw_load == b.hw_load && a.images_per_s == b.images_per_s);
  CHECK(fabs(a.hw_load / STK__ROUTE_STEP - round(a.hw_load / STK__ROUTE_STEP)) < 1e-9);
}

static void test_interval_union(void) {
  double s[] = {5, 0, 1, 10}, e[] = {6, 2, 3, 10.5}; /* [0,3) overlapping, [5,6), [10,10.5) */
  CHECK(fabs(stk__route_interval_union(s, e, 4) - 4.5) < 1e-12);
  CHECK(stk__route_interval_union(s, e, 0) == 0.0);
  double s2[] = {0, 1}, e2[] = {10, 2}; /* one inside the other */
  CHECK(fabs(stk__route_interval_union(s2, e2, 2) - 10.0) < 1e-12);
}

/* Totals to costs: 4 images planned (2 eligible), 2 decoded on the CPU (3 + 5 ms), the engines busy
 * over [0, 1) and [0.5, 2) ms for 2 + 2 images; 20 ms of process CPU -> 12 ms besides the decodes. */
static void test_calibration_totals(void) {
  stk__route_calib k;
  CHECK(stk__route_calib_init(&k) == 0);
  stk__route_calib_image(&k, 100, 1, 1.0); /* before the window: not counted */
  CHECK(!stk__route_calib_is_open(&k));
  stk__route_calib_open(&k, 1.0, 0.0);
  CHECK(stk__route_calib_is_open(&k));
  stk__route_calib_image(&k, 1000, 1, -1);
  stk__route_calib_image(&k, 3000, 1, -1);
  stk__route_calib_image(&k, 2000, 0, 3e-3);
  stk__route_calib_image(&k, 2000, 0, 5e-3);
  stk__route_calib_engine(&k, 0.0, 1e-3, 2);
  stk__route_calib_engine(&k, 0.5e-3, 2e-3, 2);
  stk__route_costs c;
  stk__route_calib_close(&k, 1.020, 1.0, 8, 6, &c);
  CHECK(!stk__route_calib_is_open(&k));
  CHECK(fabs(c.engine_s - 0.5e-3) < 1e-12);
  CHECK(fabs(c.cpu_decode_s - 4e-3) < 1e-12);
  CHECK(fabs(c.cpu_other_s - 3e-3) < 1e-9);
  CHECK(fabs(c.eligible - 0.5) < 1e-12 && fabs(c.mean_pixels - 2000) < 1e-9);
  CHECK(c.cpus == 8 && c.threads == 6);
  stk__route_calib_destroy(&k);
}

static void test_record_line(void) {
  stk__route_costs c = imagenet(8, 8);
  stk__route_choice k;
  stk__route_choose(&c, &k);
  char line[512];
  stk__route_describe(&c, &k, line, sizeof line);
  printf("%s\n", line);
  CHECK(strstr(line, "hw_decoder_load auto -> 1.00") == line);
  CHECK(strstr(line, "8 CPUs, 8 threads") != NULL);
  CHECK(strstr(line, "pin with hw_decoder_load=1.00") != NULL);
  CHECK(strchr(line, '\n') == NULL);
}

/* 4 calibration batches at prefetch 2: batches 2-5 calibrate, the decision applies from 5 + 4 + 4 =
 * 13; before it (and outside a pipeline, batch 0) every batch has the calibration load, after it
 * the decision's, or the calibration load while undecided. */
static stk__route_split split(double hw, double cuda) {
  stk__route_split x = {hw, cuda};
  return x;
}

static int same(stk__route_split a, double hw, double cuda) { return a.hw == hw && a.cuda == cuda; }

static void test_schedule_by_batch_number(void) {
  stk__route_schedule w = stk__route_schedule_make(4, 2, 0, 3); /* no trial */
  CHECK(w.first == 2 && w.last == 5 && w.switch_at == 13);
  CHECK(w.arm_len == 0 && w.trial_end == 13 && w.final_at == 13);
  stk__route_split arms[STK__ROUTE_MAX_ARMS];
  stk__route_trial_arms(&w, 0.8, 0.0, arms);
  const stk__route_split v = split(0.8, 0.0);
  CHECK(same(stk__route_batch_split(&w, 0, 2, arms, v, 0.0), 1.0, 0.0)); /* the operator alone: engines first */
  CHECK(same(stk__route_batch_split(&w, 0, 0, arms, v, 0.0), 1.0, 0.0));
  CHECK(same(stk__route_batch_split(&w, 1, 2, arms, v, 0.0), STK__ROUTE_CALIB_LOAD, 0.0));
  CHECK(same(stk__route_batch_split(&w, 12, 2, arms, v, 0.0), STK__ROUTE_CALIB_LOAD, 0.0));
  CHECK(same(stk__route_batch_split(&w, 13, 2, arms, v, 0.0), 0.8, 0.0));
  CHECK(same(stk__route_batch_split(&w, 1000000, 2, arms, v, 0.0), 0.8, 0.0));
  CHECK(same(stk__route_batch_split(&w, 13, 0, arms, v, 0.0), STK__ROUTE_CALIB_LOAD, 0.0)); /* not decided in time */
  CHECK(same(stk__route_batch_split(&w, 13, 0, arms, v, 0.5), STK__ROUTE_CALIB_LOAD, 0.5)); /* the user's cuda */
  stk__route_schedule deep = stk__route_schedule_make(1, 6, 0, 2); /* more prefetch: further ahead */
  CHECK(deep.last == 2 && deep.switch_at == 2 + 8 + 4);
  stk__route_schedule odd = stk__route_schedule_make(0, 0, 0, 0); /* nonsense in: the defaults' floor */
  CHECK(odd.last == 2 && odd.switch_at == 10 && odd.arms == 2);
}

/* With a trial (prefetch 3: slots 5, arms of 24): calibration 2-5 at 0.95; the model's 0.75 on the
 * CPU lanes 14-37, with the CUDA decoder 38-61, load 1 62-85; 1 until the verdict applies at 95. */
static void test_schedule_with_trial(void) {
  stk__route_schedule w = stk__route_schedule_make(4, 3, 24, 3);
  CHECK(w.switch_at == 5 + 5 + 4 && w.skip == 5 && w.arm_len == 24 && w.arms == 3);
  CHECK(w.trial_end == 14 + 72 && w.final_at == 86 + 5 + 4);
  stk__route_split arms[STK__ROUTE_MAX_ARMS];
  stk__route_trial_arms(&w, 0.75, 0.0, arms);
  CHECK(same(arms[0], 0.75, 0.0) && same(arms[1], 0.75, 1.0) && same(arms[2], 1.0, 0.0));
  const stk__route_split v = split(0.75, 1.0);
  CHECK(same(stk__route_batch_split(&w, 13, 2, arms, v, 0.0), STK__ROUTE_CALIB_LOAD, 0.0));
  CHECK(same(stk__route_batch_split(&w, 14, 1, arms, v, 0.0), 0.75, 0.0));
  CHECK(same(stk__route_batch_split(&w, 37, 1, arms, v, 0.0), 0.75, 0.0));
  CHECK(same(stk__route_batch_split(&w, 38, 1, arms, v, 0.0), 0.75, 1.0));
  CHECK(same(stk__route_batch_split(&w, 61, 1, arms, v, 0.0), 0.75, 1.0));
  CHECK(same(stk__route_batch_split(&w, 62, 1, arms, v, 0.0), 1.0, 0.0));
  CHECK(same(stk__route_batch_split(&w, 85, 2, arms, v, 0.0), 1.0, 0.0));
  CHECK(same(stk__route_batch_split(&w, 94, 2, arms, v, 0.0), 1.0, 0.0));
  CHECK(same(stk__route_batch_split(&w, 95, 2, arms, v, 0.0), 0.75, 1.0));
  CHECK(same(stk__route_batch_split(&w, 95, 1, arms, v, 0.0), 1.0, 0.0)); /* not judged in time: 1 */
  CHECK(same(stk__route_batch_split(&w, 14, 0, arms, v, 0.0), STK__ROUTE_CALIB_LOAD, 0.0));
  /* the user set cuda_decoder_load: two arms, both with the user's share */
  stk__route_schedule two = stk__route_schedule_make(4, 3, 24, 2);
  CHECK(two.trial_end == 14 + 48);
  stk__route_trial_arms(&two, 0.75, 0.5, arms);
  CHECK(same(arms[0], 0.75, 0.5) && same(arms[1], 1.0, 0.5));
  CHECK(same(stk__route_batch_split(&two, 40, 1, arms, v, 0.5), 1.0, 0.5));
  /* the model chose 1: every arm is 1, nothing differs in the trial's window */
  stk__route_trial_arms(&w, 1.0, 0.0, arms);
  for (int k = 0; k < STK__ROUTE_MAX_ARMS; k++) CHECK(same(arms[k], 1.0, 0.0));
  /* arms shorter than a full set of slots and two timed batches are lengthened */
  stk__route_schedule s = stk__route_schedule_make(4, 3, 1, 2);
  CHECK(s.arm_len == 7 && s.trial_end - s.switch_at == 14);
}

/* The trial's clock over batches 1..100 done in order, 256 images each, each arm's batches taking
 * its own time (ms): the CPU arm 10 ms (25,600 img/s), the CUDA arm `cuda_ms`, load 1 12.5 ms
 * (20,480): the fastest arm wins when it beats load 1 by more than the margin. `drop`: a batch
 * whose done-time never came. */
static int run_trial_pinning(double cpu_ms, double cuda_ms, double one_ms, int drop, double cpu_pin_ms,
                             double rates[STK__ROUTE_MAX_ARMS]) {
  stk__route_schedule w = stk__route_schedule_make(4, 3, 24, 3);
  stk__route_trial t;
  memset(&t, 0, sizeof t);
  double now = 0.0, pinning = 0.0;
  for (uint64_t seq = 1; seq <= 100; seq++) {
    double ms = 11.0;
    if (seq >= w.switch_at && seq < w.trial_end) {
      const int arm = (int)((seq - w.switch_at) / w.arm_len);
      ms = arm == 0 ? cpu_ms : arm == 1 ? cuda_ms : one_ms;
      if (arm == 0) { /* the CPU arm's batches stall for their pinning */
        ms += cpu_pin_ms;
        pinning += cpu_pin_ms * 1e-3;
      }
    }
    now += ms * 1e-3;
    if ((int)seq == drop) continue;
    CHECK(stk__route_trial_batch(&t, &w, seq, 256, now, pinning) == (seq == w.trial_end - 1));
  }
  return stk__route_trial_verdict(&t, &w, rates);
}

static int run_trial(double cpu_ms, double cuda_ms, double one_ms, int drop, double rates[STK__ROUTE_MAX_ARMS]) {
  return run_trial_pinning(cpu_ms, cuda_ms, one_ms, drop, 0.0, rates);
}

static void test_trial_verdict(void) {
  double r[STK__ROUTE_MAX_ARMS];
  CHECK(run_trial(10.0, 11.0, 12.5, 0, r) == 0); /* the CPU lanes */
  printf("trial: %.0f, %.0f, %.0f img/s\n", r[0], r[1], r[2]);
  CHECK(fabs(r[0] - 25600.0) < 1.0 && fabs(r[2] - 20480.0) < 1.0);
  CHECK(run_trial(11.0, 10.0, 12.5, 0, r) == 1);   /* the CUDA decoder */
  CHECK(run_trial(12.5, 13.0, 10.0, 0, r) == 2);   /* both shares slower: load 1 */
  CHECK(run_trial(10.0, 10.1, 10.4, 0, r) == 2);   /* 4% faster: within the margin, fewer cores win */
  CHECK(run_trial(10.0, 11.0, 10.6, 0, r) == 0);   /* 6% */
  CHECK(run_trial(10.0, 11.0, 12.5, 18, r) == 1 && r[0] == 0.0); /* the CPU arm's start mark lost (14 + 5 - 1) */
  CHECK(run_trial(10.0, 11.0, 12.5, 85, r) == 2 && r[2] == 0.0); /* load 1's end mark lost: no verdict but 1 */
  stk__route_schedule w = stk__route_schedule_make(4, 3, 24, 3);
  stk__route_trial t;
  memset(&t, 0, sizeof t);
  CHECK(stk__route_trial_verdict(&t, &w, r) == 2 && r[0] == 0.0 && r[2] == 0.0); /* nothing timed */
  stk__route_schedule none = stk__route_schedule_make(4, 3, 0, 3);
  CHECK(stk__route_trial_batch(&t, &none, 13, 256, 1.0, 0.0) == 0 &&
        stk__route_trial_batch(&t, &none, 14, 256, 1.0, 0.0) == 0);
  /* the CPU arm pins memory: 5 ms a batch of its 10 would make it lose to load 1 (15 against 12.5
     ms); left out, it wins at its own 10 ms */
  CHECK(run_trial_pinning(10.0, 13.0, 12.5, 0, 5.0, r) == 0 && fabs(r[0] - 25600.0) < 1.0);
  /* an arm that was pinning for 90% of its time counts a quarter of it: 4 x (10 + 90) ms a batch */
  CHECK(run_trial_pinning(10.0, 13.0, 12.5, 0, 90.0, r) == 2 && fabs(r[0] - 256.0 / 0.025) < 1.0);
}

static void test_record_key(void) {
  char a[128], b[128], c[128];
  stk__route_key(a, sizeof a, 0, 1, 3, 8, 8, 0.19e6);
  stk__route_key(b, sizeof b, 0, 1, 3, 8, 8, 0.20e6); /* the same power of two */
  stk__route_key(c, sizeof c, 0, 1, 3, 8, 8, 2.0e6);  /* camera-sized: another key */
  printf("%s | %s\n", a, c);
  CHECK_STR(a, b);
  CHECK(strcmp(a, c) != 0);
  stk__route_key(b, sizeof b, 0, 1, 3, 16, 16, 0.19e6);
  CHECK(strcmp(a, b) != 0);
}

static int is_dir(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

static void test_cache_keeps_first_decision(void) {
  char *tmp = stk_test_tmpdir("route-cache"), want[600], dir[600], path[700], key[128], other[128];
  snprintf(want, sizeof want, "%s/a/b/router", tmp);
  CHECK(stk__route_cache_dir(want, dir, sizeof dir) == 1 && is_dir(want)); /* made, levels and all */
  CHECK_STR(dir, want);
  stk__route_key(key, sizeof key, 0, 1, 3, 8, 8, 0.19e6);
  stk__route_key(other, sizeof other, 0, 1, 3, 16, 16, 0.19e6);
  stk__route_kept got = {-1, -1, -1};
  CHECK(stk__route_cache_find(dir, key, &got, path, sizeof path) == 0 && got.hw == -1);
  int before = -1;
  stk__route_kept mine = {17 * STK__ROUTE_STEP, 1.0, 17 * STK__ROUTE_STEP};
  stk__route_cache_publish(dir, key, &mine, &before);
  CHECK(mine.hw == 0.85 && mine.cuda == 1.0 && mine.trial == 0.85 && before == 0); /* as the file says: 17 * 0.05 is not 0.85 */
  CHECK(stk__route_cache_find(dir, key, &got, path, sizeof path) == 1);
  CHECK(got.hw == 0.85 && got.cuda == 1.0 && got.trial == 0.85);
  CHECK(strstr(path, "/route-") != NULL);
  stk__route_kept later = {0.6, 0.0, 0.6};
  stk__route_cache_publish(dir, key, &later, &before);
  CHECK(later.hw == 0.85 && later.cuda == 1.0 && later.trial == 0.85 && before == 1); /* the first wins */
  stk__route_kept theirs = {1.0, 0.0, 0.7};
  stk__route_cache_publish(dir, other, &theirs, &before);
  CHECK(theirs.hw == 1.0 && theirs.trial == 0.7 && before == 0); /* its own key */
  CHECK(stk__route_cache_find(dir, other, &got, NULL, 0) == 1 && got.hw == 1.0 && got.cuda == 0.0 && got.trial == 0.7);
  CHECK(stk__route_cache_find(dir, key, &got, NULL, 0) == 1 && got.hw == 0.85);
  stk_test_remove_tree(tmp);
  free(tmp);
}

/* A file that is not "HW CUDA TRIAL KEY\n" for this key -- damaged, cut, out of range, another key
 * under the same name -- is never taken, and the process keeps its own decision. */
static void test_cache_never_takes_a_bad_file(void) {
  char *tmp = stk_test_tmpdir("route-cache-bad"), path[700], key[128];
  stk__route_key(key, sizeof key, 0, 0, 3, 4, 4, 2.0e6);
  const char *bad[] = {"",
                       "0.8",
                       "0.80 0.00 ",
                       "0.80 0.00 KEY\n",
                       "0.80 0.00 0.80 KEY",
                       "x.80 0.00 0.80 KEY\n",
                       "1.5 0.00 0.80 KEY\n",
                       "0.80 -0.1 0.80 KEY\n",
                       "0.80 0.00 2 KEY\n",
                       "0.80 0.00 0.80 KEYX\n",
                       "0.80 0.00 0.80  KEY\n",
                       "0.80 0.00 0.80 gpu9 crop0 ch3 threads4 cpus4 px2^21\n"};
  stk__route_cache_find(tmp, key, NULL, path, sizeof path); /* the file's name */
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    char text[256];
    const char *k = strstr(bad[i], "KEY");
    if (k) snprintf(text, sizeof text, "%.*s%s%s", (int)(k - bad[i]), bad[i], key, k + 3);
    else snprintf(text, sizeof text, "%s", bad[i]);
    FILE *f = fopen(path, "w");
    CHECK(f && fputs(text, f) >= 0);
    if (f) fclose(f);
    int before = -1;
    stk__route_kept got = {-1, -1, -1};
    CHECK_MSG(stk__route_cache_find(tmp, key, &got, NULL, 0) == 0 && got.hw == -1, "file %zu taken", i);
    stk__route_kept mine = {0.7, 0.0, 0.7};
    stk__route_cache_publish(tmp, key, &mine, &before);
    CHECK_MSG(mine.hw == 0.7 && mine.trial == 0.7 && before == 0, "file %zu", i);
  }
  FILE *f = fopen(path, "w"); /* the good form, to show the loop's files failed for their content */
  if (f) fprintf(f, "0.80 1.00 0.65 %s\n", key), fclose(f);
  stk__route_kept got;
  CHECK(stk__route_cache_find(tmp, key, &got, NULL, 0) == 1 && got.hw == 0.8 && got.cuda == 1.0 && got.trial == 0.65);
  stk_test_remove_tree(tmp);
  free(tmp);
}

/* Eight processes decide differently and publish at once: all of them route with one decision. */
static void test_cache_race_has_one_winner(void) {
  enum { N = 8 };
  char *tmp = stk_test_tmpdir("route-cache-race"), key[128];
  stk__route_key(key, sizeof key, 1, 1, 3, 16, 16, 0.19e6);
  int fds[N][2];
  pid_t pids[N];
  for (int i = 0; i < N; i++) {
    CHECK(pipe(fds[i]) == 0);
    pids[i] = fork();
    if (pids[i] == 0) {
      int before = 0;
      stk__route_kept d = {0.5 + 0.05 * i, (double)(i % 2), 0.5 + 0.05 * i};
      stk__route_cache_publish(tmp, key, &d, &before);
      ssize_t w = write(fds[i][1], &d, sizeof d);
      _exit(w == sizeof d ? 0 : 1);
    }
  }
  stk__route_kept got[N];
  for (int i = 0; i < N; i++) {
    int status = 0;
    CHECK(read(fds[i][0], &got[i], sizeof got[i]) == sizeof got[i]);
    waitpid(pids[i], &status, 0);
    close(fds[i][0]), close(fds[i][1]);
  }
  stk__route_kept kept = {-1, -1, -1};
  CHECK(stk__route_cache_find(tmp, key, &kept, NULL, 0) == 1);
  printf("race: kept %.2f %.2f %.2f\n", kept.hw, kept.cuda, kept.trial);
  for (int i = 0; i < N; i++)
    CHECK_MSG(got[i].hw == kept.hw && got[i].cuda == kept.cuda && got[i].trial == kept.trial,
              "process %d routes with %.2f/%.2f, the file says %.2f/%.2f", i, got[i].hw, got[i].cuda, kept.hw, kept.cuda);
  stk_test_remove_tree(tmp);
  free(tmp);
}

static void test_cache_dir_default_and_off(void) {
  char *tmp = stk_test_tmpdir("route-cache-dir"), dir[700], want[700];
  CHECK(stk__route_cache_dir("off", dir, sizeof dir) == 0);
  CHECK(stk__route_cache_dir("0", dir, sizeof dir) == 0);
  const char *home = getenv("HOME"), *xdg = getenv("XDG_CACHE_HOME");
  char *saved_home = home ? strdup(home) : NULL, *saved_xdg = xdg ? strdup(xdg) : NULL;
  setenv("HOME", tmp, 1);
  unsetenv("XDG_CACHE_HOME");
  CHECK(stk__route_cache_dir(NULL, dir, sizeof dir) == 1);
  snprintf(want, sizeof want, "%s/.cache/stoker/router", tmp);
  CHECK_STR(dir, want);
  CHECK(is_dir(want));
  setenv("XDG_CACHE_HOME", "relative/dir", 1); /* not absolute: ignored, as the XDG rules say */
  CHECK(stk__route_cache_dir("", dir, sizeof dir) == 1);
  CHECK_STR(dir, want);
  snprintf(want, sizeof want, "%s/xdg", tmp);
  setenv("XDG_CACHE_HOME", want, 1);
  CHECK(stk__route_cache_dir(NULL, dir, sizeof dir) == 1);
  snprintf(want, sizeof want, "%s/xdg/stoker/router", tmp);
  CHECK_STR(dir, want);
  snprintf(want, sizeof want, "%s/a-file", tmp); /* a file where the directory should be: no cache */
  FILE *f = fopen(want, "w");
  if (f) fclose(f);
  CHECK(stk__route_cache_dir(want, dir, sizeof dir) == 0);
  if (saved_home) setenv("HOME", saved_home, 1);
  else unsetenv("HOME");
  if (saved_xdg) setenv("XDG_CACHE_HOME", saved_xdg, 1);
  else unsetenv("XDG_CACHE_HOME");
  free(saved_home), free(saved_xdg);
  stk_test_remove_tree(tmp);
  free(tmp);
}

/* one STK_TEST_CASE per line: tests/CMakeLists.txt reads them */
// clang-format off
static const stk_test_case cases[] = {
    STK_TEST_CASE(test_model_by_hand),
    STK_TEST_CASE(test_imagenet_8_cpus_all_to_engines),
    STK_TEST_CASE(test_imagenet_16_cpus_all_to_engines),
    STK_TEST_CASE(test_camera_16_cpus),
    STK_TEST_CASE(test_camera_8_cpus_all_to_engines),
    STK_TEST_CASE(test_threads_bound_the_lanes),
    STK_TEST_CASE(test_balance_points),
    STK_TEST_CASE(test_unmeasured_costs_send_all_to_engines),
    STK_TEST_CASE(test_choice_is_deterministic),
    STK_TEST_CASE(test_interval_union),
    STK_TEST_CASE(test_calibration_totals),
    STK_TEST_CASE(test_record_line),
    STK_TEST_CASE(test_schedule_by_batch_number),
    STK_TEST_CASE(test_schedule_with_trial),
    STK_TEST_CASE(test_trial_verdict),
    STK_TEST_CASE(test_record_key),
    STK_TEST_CASE(test_cache_keeps_first_decision),
    STK_TEST_CASE(test_cache_never_takes_a_bad_file),
    STK_TEST_CASE(test_cache_race_has_one_winner),
    STK_TEST_CASE(test_cache_dir_default_and_off),
};
// clang-format on

int main(int argc, char **argv) {
  if (stk_test_list_cases(cases, STK_TEST_COUNT(cases), argc, argv)) return 0;
  return stk_test_run_cases("test_jpeg_route_split", cases, STK_TEST_COUNT(cases), argc, argv);
}
