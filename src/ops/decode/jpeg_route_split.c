/* src/ops/decode/jpeg_route_split.c: the automatic router's rule and its calibration totals (see
 * jpeg_route_split.h). Plain C. Not on a hot path. */
#include "ops/decode/jpeg_route_split.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Rates of the two resources at load `load` (HUGE_VAL: not a limit). */
static void rates(const stk__route_costs *c, double load, double *engines, double *cpus, double *cpu_per_image) {
  const double hw = load * c->eligible; /* share of all images the engines decode */
  int p = c->cpus > 0 ? c->cpus : 1; /* the CPUs the decode lanes can use: min(CPUs, threads) */
  if (c->threads > 0 && c->threads < p) p = c->threads;
  const double per_image = (c->cpu_other_s > 0 ? c->cpu_other_s : 0) + (1.0 - hw) * c->cpu_decode_s;
  *engines = hw > 0 && c->engine_s > 0 ? 1.0 / (hw * c->engine_s) : HUGE_VAL;
  *cpus = per_image > 0 ? p / per_image : HUGE_VAL;
  *cpu_per_image = per_image;
}

double stk__route_throughput(const stk__route_costs *c, double load, double *cpu_cores) {
  double engines, cpus, per_image;
  rates(c, load, &engines, &cpus, &per_image);
  double x = engines < cpus ? engines : cpus;
  if (x == HUGE_VAL) x = 0.0; /* nothing measured: no model */
  if (cpu_cores) *cpu_cores = x * per_image;
  return x;
}

static void fixed(const stk__route_costs *c, double load, const char *why, stk__route_choice *out) {
  out->hw_load = load;
  out->images_per_s = stk__route_throughput(c, load, &out->cpu_cores);
  out->engines_only = stk__route_throughput(c, 1.0, NULL);
  out->bound = why;
}

void stk__route_choose(const stk__route_costs *c, stk__route_choice *out) {
  const char *unmodelled = !(c->engine_s > 0)       ? "engine cost not measured"
                           : !(c->cpu_decode_s > 0) ? "CPU decode cost not measured"
                           : !(c->eligible > 0)     ? "no image the engines can take"
                                                    : NULL;
  if (unmodelled) {
    fixed(c, 1.0, unmodelled, out);
    return;
  }
  const int steps = (int)lround(1.0 / STK__ROUTE_STEP);
  double best = 0.0, x[64];
  for (int i = 0; i <= steps; i++) {
    x[i] = stk__route_throughput(c, i * STK__ROUTE_STEP, NULL);
    if (x[i] > best) best = x[i];
  }
  int chosen = steps;
  while (chosen > 0 && x[chosen] < best * (1.0 - STK__ROUTE_TOLERANCE)) chosen--;
  double engines, cpus, per_image;
  const double load = chosen * STK__ROUTE_STEP;
  rates(c, load, &engines, &cpus, &per_image);
  const char *bound = fabs(engines - cpus) <= 0.01 * (engines < cpus ? engines : cpus) ? "both"
                      : engines < cpus                                              ? "engines"
                                                                                    : "CPU";
  fixed(c, load, bound, out);
}

void stk__route_describe(const stk__route_costs *c, const stk__route_choice *k, char *buf, size_t size) {
  const int named = !strcmp(k->bound, "engines") || !strcmp(k->bound, "CPU") || !strcmp(k->bound, "both");
  snprintf(buf, size,
           "hw_decoder_load auto -> %.2f (%s%s, model %.0f img/s on %.1f CPU cores; engines only %.0f img/s): "
           "engines %.1f us/image, CPU decode %.2f ms/image/thread, other CPU %.3f ms/image, %.0f%% engine-eligible, "
           "%.2f MP mean, %d CPUs, %d threads; pin with hw_decoder_load=%.2f",
           k->hw_load, k->bound, named ? "-bound" : "", k->images_per_s, k->cpu_cores, k->engines_only, c->engine_s * 1e6,
           c->cpu_decode_s * 1e3, c->cpu_other_s * 1e3, 100.0 * c->eligible, c->mean_pixels * 1e-6, c->cpus,
           c->threads, k->hw_load);
}

/* ---- Schedule and key -------------------------------------------------------------------------- */
stk__route_schedule stk__route_schedule_make(int calibration_batches, int prefetch_queue_depth, int trial_batches,
                                             int arms) {
  stk__route_schedule w;
  const uint64_t slots = (uint64_t)(prefetch_queue_depth > 0 ? prefetch_queue_depth : 2) + 2;
  w.first = 2;
  w.last = 1 + (uint64_t)(calibration_batches > 0 ? calibration_batches : 1);
  w.switch_at = w.last + slots + 4; /* slots beyond prefetch + 2 are rare and few */
  w.skip = slots;
  w.arms = arms >= 3 ? 3 : 2;
  if (trial_batches <= 0) {
    w.arm_len = 0;
    w.trial_end = w.final_at = w.switch_at;
    return w;
  }
  w.arm_len = (uint64_t)trial_batches < slots + 2 ? slots + 2 : (uint64_t)trial_batches;
  w.trial_end = w.switch_at + (uint64_t)w.arms * w.arm_len;
  w.final_at = w.trial_end + slots + 4;
  return w;
}

void stk__route_trial_arms(const stk__route_schedule *when, double model, double cuda,
                           stk__route_split arms[STK__ROUTE_MAX_ARMS]) {
  for (int k = 0; k < STK__ROUTE_MAX_ARMS; k++) arms[k].hw = 1.0, arms[k].cuda = cuda;
  if (model >= 1.0) return;
  arms[0].hw = model;
  if (when->arms == 3) arms[1].hw = model, arms[1].cuda = 1.0;
}

stk__route_split stk__route_batch_split(const stk__route_schedule *when, uint64_t batch_seq, int stage,
                                        const stk__route_split arms[STK__ROUTE_MAX_ARMS], stk__route_split verdict,
                                        double cuda) {
  stk__route_split out = {STK__ROUTE_ALONE_LOAD, cuda};
  if (batch_seq == 0) return out;
  if (batch_seq < when->switch_at || stage < 1) {
    out.hw = STK__ROUTE_CALIB_LOAD;
    return out;
  }
  if (batch_seq >= when->final_at && stage >= 2) return verdict;
  if (batch_seq < when->trial_end) return arms[(batch_seq - when->switch_at) / when->arm_len];
  out.hw = 1.0; /* between the trial and the verdict, or past final_at before the judgement */
  return out;
}

int stk__route_trial_batch(stk__route_trial *t, const stk__route_schedule *when, uint64_t batch_seq, int images,
                           double now, double pinning) {
  if (!when->arm_len) return 0; /* no trial */
  for (int a = 0; a < when->arms; a++) {
    const uint64_t begin = when->switch_at + (uint64_t)a * when->arm_len, end = begin + when->arm_len;
    if (batch_seq == begin + when->skip - 1) t->t0[a] = now, t->pin0[a] = pinning, t->marks[a] |= 1;
    if (batch_seq >= begin + when->skip && batch_seq < end) {
      t->images[a] += images > 0 ? (uint64_t)images : 0;
      if (batch_seq == end - 1) t->t1[a] = now, t->pin1[a] = pinning, t->marks[a] |= 2;
    }
  }
  return batch_seq == when->trial_end - 1;
}

double stk__route_trial_pinning(const stk__route_trial *t, int a) {
  return t->marks[a] == 3 && t->pin1[a] > t->pin0[a] ? t->pin1[a] - t->pin0[a] : 0.0;
}

static double arm_rate(const stk__route_trial *t, int a) {
  if (!(t->marks[a] == 3 && t->t1[a] > t->t0[a] && t->images[a])) return 0.0;
  const double span = t->t1[a] - t->t0[a], busy = span - stk__route_trial_pinning(t, a);
  return (double)t->images[a] / (busy > 0.25 * span ? busy : 0.25 * span);
}

int stk__route_trial_verdict(const stk__route_trial *t, const stk__route_schedule *when,
                             double rates[STK__ROUTE_MAX_ARMS]) {
  const int n = when->arms, base = n - 1;
  double r[STK__ROUTE_MAX_ARMS] = {0};
  for (int a = 0; a < n; a++) r[a] = arm_rate(t, a);
  if (rates)
    for (int a = 0; a < STK__ROUTE_MAX_ARMS; a++) rates[a] = a < n ? r[a] : 0.0;
  int best = base;
  if (!(r[base] > 0)) return base;
  for (int a = 0; a < base; a++)
    if (r[a] > r[base] * (1.0 + STK__ROUTE_TRIAL_MARGIN) && (best == base || r[a] > r[best])) best = a;
  return best;
}

void stk__route_key(char *buf, size_t size, int device_id, int random_crop, int channels, int threads, int cpus,
                    double mean_pixels) {
  snprintf(buf, size, "gpu%d crop%d ch%d threads%d cpus%d px2^%ld", device_id, random_crop, channels, threads, cpus,
           mean_pixels > 0 ? lround(log2(mean_pixels)) : -1L);
}

/* ---- Calibration totals ------------------------------------------------------------------------ */
int stk__route_calib_init(stk__route_calib *k) {
  memset(k, 0, sizeof *k);
  return pthread_mutex_init(&k->lock, NULL) == 0 ? 0 : -1;
}

void stk__route_calib_destroy(stk__route_calib *k) { pthread_mutex_destroy(&k->lock); }

void stk__route_calib_open(stk__route_calib *k, double pipeline_cpu, double wall) {
  pthread_mutex_lock(&k->lock);
  k->pipeline_cpu_start = pipeline_cpu;
  k->wall_start = wall;
  __atomic_store_n(&k->open, 1, __ATOMIC_RELEASE);
  pthread_mutex_unlock(&k->lock);
}

int stk__route_calib_is_open(stk__route_calib *k) { return __atomic_load_n(&k->open, __ATOMIC_ACQUIRE); }

void stk__route_calib_image(stk__route_calib *k, double pixels, int eligible, double cpu_decode_s) {
  pthread_mutex_lock(&k->lock);
  if (k->open) {
    k->planned++;
    k->pixels += pixels;
    k->eligible += eligible != 0;
    if (cpu_decode_s >= 0) {
      k->cpu_images++;
      k->cpu_decode_s += cpu_decode_s;
    }
  }
  pthread_mutex_unlock(&k->lock);
}

void stk__route_calib_engine(stk__route_calib *k, double start, double end, int images) {
  pthread_mutex_lock(&k->lock);
  if (k->open && k->intervals < STK__ROUTE_MAX_INTERVALS && end >= start && images > 0) {
    k->interval_start[k->intervals] = start;
    k->interval_end[k->intervals] = end;
    k->intervals++;
    k->engine_images += (uint64_t)images;
  }
  pthread_mutex_unlock(&k->lock);
}

static int by_start(const void *a, const void *b) {
  const double *x = (const double *)a, *y = (const double *)b;
  return (x[0] > y[0]) - (x[0] < y[0]);
}

double stk__route_interval_union(double *start, double *end, int n) {
  if (n <= 0) return 0.0;
  double(*pairs)[2] = (double(*)[2])malloc((size_t)n * sizeof *pairs);
  if (!pairs) return 0.0;
  for (int i = 0; i < n; i++) pairs[i][0] = start[i], pairs[i][1] = end[i];
  qsort(pairs, (size_t)n, sizeof *pairs, by_start);
  double total = 0.0, from = pairs[0][0], to = pairs[0][1];
  for (int i = 1; i < n; i++) {
    if (pairs[i][0] > to) { /* a gap: the run so far is done */
      total += to - from;
      from = pairs[i][0];
      to = pairs[i][1];
    } else if (pairs[i][1] > to) {
      to = pairs[i][1];
    }
  }
  total += to - from;
  for (int i = 0; i < n; i++) start[i] = pairs[i][0], end[i] = pairs[i][1];
  free(pairs);
  return total;
}

void stk__route_calib_close(stk__route_calib *k, double pipeline_cpu, double wall, int cpus, int threads,
                            stk__route_costs *out) {
  (void)wall;
  pthread_mutex_lock(&k->lock);
  k->open = 0;
  memset(out, 0, sizeof *out);
  double busy = stk__route_interval_union(k->interval_start, k->interval_end, k->intervals);
  out->engine_s = k->engine_images ? busy / (double)k->engine_images : 0.0;
  out->cpu_decode_s = k->cpu_images ? k->cpu_decode_s / (double)k->cpu_images : 0.0;
  double other = pipeline_cpu - k->pipeline_cpu_start - k->cpu_decode_s;
  out->cpu_other_s = k->planned && other > 0 ? other / (double)k->planned : 0.0;
  out->eligible = k->planned ? (double)k->eligible / (double)k->planned : 0.0;
  out->mean_pixels = k->planned ? k->pixels / (double)k->planned : 0.0;
  out->cpus = cpus;
  out->threads = threads;
  pthread_mutex_unlock(&k->lock);
}
