/* src/ops/decode/decoder_mixed_router.cu: the mixed JPEG decoder's hw_decoder_load -- the user's
 * (the argument, else STOKER_HW_DECODER_LOAD; default 1), or, when either asks for -1, chosen by the
 * automatic router:
 *   - batch 1 of the pipeline is warm-up (allocations, nvJPEG's first buffers);
 *   - batches 2..1+STOKER_ROUTER_BATCHES run at STK__ROUTE_CALIB_LOAD while the window measures the
 *     engines' submissions, the libjpeg-turbo decodes' thread CPU time and the process's CPU time
 *     (jpeg_route_split.h says what each is);
 *   - when the last of them has run (GPU stage), the rule picks the load (stk__route_choose), and
 *     it applies from batch switch_at on, a full set of batch slots later, so a batch's images are
 *     all routed with one load and no sample is planned before the load it needs is known.
 * Same seed, same bytes: the route of every batch is a function of its number and of the decision,
 * and the decision is recorded under a key of the device, the decoder, the threads, the CPUs and
 * the calibration batches' mean image size (deterministic: those batches' contents are the
 * seed's): in the process, so every later pipeline of the process with that key routes exactly as
 * the first did, and on disk (jpeg_route_cache.c, STOKER_ROUTER_CACHE), so later processes with the
 * key do too. Where the cache is off or not writable, a new process measures again and its costs
 * may land on another step of the grid: pin hw_decoder_load to the recorded value (the record line
 * says it) (docs/gpu.md, "The default split, and the router"). Not on a hot path (per image during
 * calibration: a mutex and a clock read). */
#include <math.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "ops/decode/decoder_mixed.h"
#include "ops/decode/jpeg_route_cache.h"

/* ---- The process's decisions ---------------------------------------------------------------- */
#define ROUTE_RECORDS 32
static struct {
  char key[128];
  double load, trial; /* the verdict and the load the trial's arm A ran at */
} g_records[ROUTE_RECORDS];
static int g_num_records;
static pthread_mutex_t g_records_lock = PTHREAD_MUTEX_INITIALIZER;

/* The decision recorded under key (and its trial load into *trial), or -1. */
static double record_find(const char *key, double *trial) {
  double load = -1.0;
  pthread_mutex_lock(&g_records_lock);
  for (int i = 0; i < g_num_records && load < 0; i++)
    if (!strcmp(g_records[i].key, key)) load = g_records[i].load, *trial = g_records[i].trial;
  pthread_mutex_unlock(&g_records_lock);
  return load;
}

static void record_add(const char *key, double load, double trial) {
  pthread_mutex_lock(&g_records_lock);
  int i = g_num_records < ROUTE_RECORDS ? g_num_records++ : ROUTE_RECORDS - 1; /* full: the last is replaced */
  snprintf(g_records[i].key, sizeof g_records[i].key, "%s", key);
  g_records[i].load = load;
  g_records[i].trial = trial;
  pthread_mutex_unlock(&g_records_lock);
}

static double process_cpu_s(void) {
  struct timespec t;
  return clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t) == 0 ? (double)t.tv_sec + (double)t.tv_nsec * 1e-9 : 0.0;
}

static int allowed_cpus(void) {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) != 0) return 1;
  int n = CPU_COUNT(&set);
  return n > 0 ? n : 1;
}

/* ---- Set-up --------------------------------------------------------------------------------- */
stk_status stk__mixed_route_init(const stk__op *op, mixed_state *s, char *err, size_t err_size) {
  mixed_route *r = &s->route;
  const stk__arg_value *given = stk__arg(op, "hw_decoder_load");
  double load = stk__arg_float(op, "hw_decoder_load");
  const char *source = "the hw_decoder_load argument";
  if (!given || !given->is_set) {
    double knob = -1.0;
    int knob_set = 0;
    if (stk__tuning_read(STK__KNOB_HW_DECODER_LOAD, &knob, NULL, &knob_set, err, err_size) != STK_OK)
      return STK_EINVAL;
    if (knob_set) load = knob, source = "STOKER_HW_DECODER_LOAD";
    else source = "the default: every image the engines can take";
  }
  if (load >= 0.0 || !s->router.hw_engines) { /* fixed (without engines the load routes nothing) */
    s->router.hw_load = stk__jpeg_hw_load_clamp(load);
    snprintf(r->record, sizeof r->record, "hw_decoder_load %.2f (%s)", s->router.hw_load,
             load >= 0.0 ? source : "no hardware JPEG engines: every image on nvJPEG's lanes or the CPU");
    return STK_OK;
  }
  const stk_pipeline_options *o = op->options;
  r->automatic = 1;
  r->when = stk__route_schedule_make((int)stk__tuning_int(STK__KNOB_ROUTER_BATCHES), o ? o->prefetch_queue_depth : 0,
                                     (int)stk__tuning_int(STK__KNOB_ROUTER_TRIAL_BATCHES));
  r->cpus = allowed_cpus();
  r->threads = o && o->num_threads > 0 ? o->num_threads : 1;
  s->router.hw_load = STK__ROUTE_CALIB_LOAD;
  if (stk__route_calib_init(&r->calib) != 0) return STK_ENOMEM;
  if (pthread_mutex_init(&r->lock, NULL) != 0) {
    stk__route_calib_destroy(&r->calib);
    return STK_ENOMEM;
  }
  pthread_cond_init(&r->decided_cond, NULL);
  r->made = 1;
  snprintf(r->record, sizeof r->record,
           "hw_decoder_load auto: calibrating at %.2f on batches %llu-%llu; the model's load applies from batch "
           "%llu, tried against 1 on batches %llu-%llu, the verdict from batch %llu",
           STK__ROUTE_CALIB_LOAD, (unsigned long long)r->when.first, (unsigned long long)r->when.last,
           (unsigned long long)r->when.switch_at, (unsigned long long)r->when.switch_at,
           (unsigned long long)r->when.trial_end - 1, (unsigned long long)r->when.final_at);
  return STK_OK;
}

void stk__mixed_route_destroy(mixed_state *s) {
  mixed_route *r = &s->route;
  if (!r->made) return;
  pthread_cond_destroy(&r->decided_cond);
  pthread_mutex_destroy(&r->lock);
  stk__route_calib_destroy(&r->calib);
  r->made = 0;
}

/* ---- Decision ------------------------------------------------------------------------------- */
/* Under r->lock: stage 2 with this verdict and trial load; wakes the batches waiting for it. */
static void set_judged(mixed_route *r, double verdict, double trial) {
  r->verdict = verdict;
  r->model_load = trial;
  __atomic_store_n(&r->stage, 2, __ATOMIC_RELEASE); /* after the loads: stk__mixed_route_load reads them unlocked */
  r->record_sent = 0;
  pthread_cond_broadcast(&r->decided_cond);
}

/* Under r->lock: keeps the verdict on disk (unless another process kept one first: then that one)
 * and in the process. 1 when another process's was taken. */
static int keep(mixed_route *r, double *verdict, double *trial) {
  int kept_before = 0;
  if (r->cache_dir[0]) *verdict = stk__route_cache_publish(r->cache_dir, r->key, *verdict, *trial, &kept_before, trial);
  record_add(r->key, *verdict, *trial);
  return kept_before;
}

/* Under r->lock: closes the window and decides the model's load -- or takes the process's or an
 * earlier run's decision for the same key, trial load and verdict both. */
static void decide(const stk__op *op, mixed_state *s) {
  mixed_route *r = &s->route;
  if (r->stage) return;
  stk__route_costs costs;
  stk__route_calib_close(&r->calib, process_cpu_s(), stk__now(), r->cpus, r->threads, &costs);
  const double mean = r->key_images ? (double)r->key_pixels / (double)r->key_images : 0.0;
  stk__route_key(r->key, sizeof r->key, s->device_id, s->random_crop, s->channels, r->threads, r->cpus, mean);
  if (!stk__route_cache_dir(stk__tuning_text(STK__KNOB_ROUTER_CACHE), r->cache_dir, sizeof r->cache_dir))
    r->cache_dir[0] = '\0';
  stk__route_choice choice;
  stk__route_choose(&costs, &choice);
  stk__route_describe(&costs, &choice, r->model_line, sizeof r->model_line);
  double trial = 0.0, verdict = record_find(r->key, &trial);
  int earlier = verdict >= 0.0, kept_before = 0;
  if (earlier) {
    snprintf(r->record, sizeof r->record, "hw_decoder_load auto -> %.2f (this process's earlier decision for %s)",
             verdict, r->key);
  } else if (r->cache_dir[0] && (verdict = stk__route_cache_find(r->cache_dir, r->key, &trial, NULL, 0)) >= 0.0) {
    kept_before = 1;
    record_add(r->key, verdict, trial);
  } else {
    trial = verdict = stk__route_cache_load(choice.hw_load);
    if (r->when.trial_end == r->when.switch_at || verdict >= 1.0) { /* nothing to try: the model's load is the verdict */
      kept_before = keep(r, &verdict, &trial);
      if (!kept_before) snprintf(r->record, sizeof r->record, "%s", r->model_line);
    } else { /* the trial runs; its verdict comes at batch trial_end - 1 */
      r->model_load = trial;
      __atomic_store_n(&r->stage, 1, __ATOMIC_RELEASE);
      r->record_sent = 0;
      snprintf(r->record, sizeof r->record, "hw_decoder_load auto: trying %.2f against 1 on batches %llu-%llu; %.230s",
               trial, (unsigned long long)r->when.switch_at, (unsigned long long)r->when.trial_end - 1, r->model_line);
      pthread_cond_broadcast(&r->decided_cond);
      fprintf(stderr, "stoker: %s: %s\n", mixed_op_label(op), r->record);
      return;
    }
  }
  if (kept_before)
    snprintf(r->record, sizeof r->record,
             "hw_decoder_load auto -> %.2f (an earlier run's decision for %.60s, kept in %.100s; "
             "STOKER_ROUTER_CACHE=off measures anew)",
             verdict, r->key, r->cache_dir);
  set_judged(r, verdict, trial);
  fprintf(stderr, "stoker: %s: %s\n", mixed_op_label(op), r->record);
  if ((earlier || kept_before) && op->options && op->options->verbose)
    fprintf(stderr, "stoker: %s: this calibration: %s\n", mixed_op_label(op), r->model_line);
}

/* Under r->lock: the trial's last batch is done: the verdict. */
static void judge(const stk__op *op, mixed_state *s) {
  mixed_route *r = &s->route;
  double rate_a = 0.0, rate_b = 0.0, trial = r->model_load;
  double verdict = stk__route_trial_verdict(&r->trial, trial, &rate_a, &rate_b);
  if (keep(r, &verdict, &trial))
    snprintf(r->record, sizeof r->record,
             "hw_decoder_load auto -> %.2f (an earlier run's decision for %.60s, kept in %.100s, taken over "
             "this run's trial)",
             verdict, r->key, r->cache_dir);
  else
    snprintf(r->record, sizeof r->record,
             "hw_decoder_load auto -> %.2f (trial: %.2f made %.0f img/s, 1 made %.0f img/s; pin with "
             "hw_decoder_load=%.2f); the model: %.150s",
             verdict, r->model_load, rate_a, rate_b, verdict, r->model_line);
  set_judged(r, verdict, trial);
  fprintf(stderr, "stoker: %s: %s\n", mixed_op_label(op), r->record);
}

/* Waits (at most 30 s in all, once) until the router reaches `stage`; returns the stage reached. A
 * router behind its schedule (a pipeline with far more slots than the schedule assumes) is the one
 * case where routes depend on timing. */
static int wait_for_stage(mixed_route *r, int stage) {
  int now = __atomic_load_n(&r->stage, __ATOMIC_ACQUIRE);
  if (now >= stage) return now;
  pthread_mutex_lock(&r->lock);
  struct timespec until;
  clock_gettime(CLOCK_REALTIME, &until);
  until.tv_sec += 30;
  while (r->stage < stage && !r->gave_up && pthread_cond_timedwait(&r->decided_cond, &r->lock, &until) == 0) {
  }
  if (r->stage < stage) r->gave_up = 1; /* later images do not wait again */
  now = r->stage;
  pthread_mutex_unlock(&r->lock);
  return now;
}

double stk__mixed_route_load(mixed_state *s, uint64_t batch_seq) {
  mixed_route *r = &s->route;
  if (!r->automatic) return s->router.hw_load;
  if (batch_seq == 0 || batch_seq < r->when.switch_at) return stk__route_batch_load(&r->when, batch_seq, 0, 0.0, 0.0);
  const int stage = wait_for_stage(r, batch_seq >= r->when.final_at ? 2 : 1);
  return stk__route_batch_load(&r->when, batch_seq, stage, r->model_load, r->verdict);
}

int stk__mixed_route_measuring(mixed_state *s) {
  return s->route.automatic && stk__route_calib_is_open(&s->route.calib);
}

void stk__mixed_route_image(mixed_state *s, uint64_t batch_seq, const stk__jpeg_info *info, double cpu_decode_s) {
  mixed_route *r = &s->route;
  if (!r->automatic) return;
  const double pixels = (double)info->width * (double)info->height;
  if (batch_seq >= r->when.first && batch_seq <= r->when.last) {
    __atomic_fetch_add(&r->key_pixels, (uint64_t)pixels, __ATOMIC_RELAXED);
    __atomic_fetch_add(&r->key_images, 1, __ATOMIC_RELAXED);
  }
  if (!stk__route_calib_is_open(&r->calib)) return;
  const int eligible = info->orientation == 1 && !info->cmyk && stk__jpeg_hw_can_take(info);
  stk__route_calib_image(&r->calib, pixels, eligible, cpu_decode_s);
}

void stk__mixed_route_engine(mixed_state *s, double start, double end, int images) {
  if (s->route.automatic) stk__route_calib_engine(&s->route.calib, start, end, images);
}

void stk__mixed_route_batch_done(const stk__op *op, mixed_state *s, stk__batch_ctx *ctx) {
  mixed_route *r = &s->route;
  const uint64_t seq = ctx->batch_seq;
  if (r->automatic && seq) {
    pthread_mutex_lock(&r->lock);
    if (seq == r->when.first - 1 && !r->stage) stk__route_calib_open(&r->calib, process_cpu_s(), stk__now());
    if (seq >= r->when.last && !r->stage) decide(op, s);
    if (r->stage == 1 && stk__route_trial_batch(&r->trial, &r->when, seq, ctx->batch_size, stk__now())) judge(op, s);
    pthread_mutex_unlock(&r->lock);
  }
  if (r->automatic) pthread_mutex_lock(&r->lock);
  if (!r->record_sent && ctx->stats && seq) {
    snprintf(ctx->stats->decoder_route, sizeof ctx->stats->decoder_route, "%s", r->record);
    r->record_sent = 1;
  }
  if (r->automatic) pthread_mutex_unlock(&r->lock);
}
