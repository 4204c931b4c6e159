/* src/ops/decode/decoder_mixed_router.cu: the mixed JPEG decoder's hw_decoder_load -- the user's
 * (the argument, else STOKER_HW_DECODER_LOAD), or, when neither is given or either asks for -1 (the
 * default), chosen by the automatic router:
 *   - batch 1 of the pipeline is warm-up (allocations, nvJPEG's first buffers);
 *   - batches 2..1+STOKER_ROUTER_BATCHES run at STK__ROUTE_CALIB_LOAD while the window measures the
 *     engines' submissions, the libjpeg-turbo decodes' thread CPU time and the process's CPU time
 *     (jpeg_route_split.h says what each is);
 *   - when the last of them has run (GPU stage), the rule picks the load (stk__route_choose), and
 *     it applies from batch switch_at on, a full set of batch slots later, so a batch's images are
 *     all routed with one load and no sample is planned before the load it needs is known;
 *   - below 1, the trial: the model's load with the CPU lanes, with nvJPEG's CUDA decoder (when
 *     cuda_decoder_load is not given) and load 1, STOKER_ROUTER_TRIAL_BATCHES batches each, timed
 *     by their done-times (stk__route_trial_*); the verdict (stk__route_trial_verdict) applies
 *     from final_at on.
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
  stk__route_kept decision; /* the verdict's split and the load the trial's arms ran at */
} g_records[ROUTE_RECORDS];
static int g_num_records;
static pthread_mutex_t g_records_lock = PTHREAD_MUTEX_INITIALIZER;

/* 1 and *out when a decision is recorded under key. */
static int record_find(const char *key, stk__route_kept *out) {
  int found = 0;
  pthread_mutex_lock(&g_records_lock);
  for (int i = 0; i < g_num_records && !found; i++)
    if (!strcmp(g_records[i].key, key)) *out = g_records[i].decision, found = 1;
  pthread_mutex_unlock(&g_records_lock);
  return found;
}

/* The key's record becomes d (a kept file read again may have changed); a new key is added (full:
 * the last is replaced). */
static void record_add(const char *key, const stk__route_kept *d) {
  pthread_mutex_lock(&g_records_lock);
  int i = 0;
  while (i < g_num_records && strcmp(g_records[i].key, key)) i++;
  if (i == g_num_records) i = g_num_records < ROUTE_RECORDS ? g_num_records++ : ROUTE_RECORDS - 1;
  snprintf(g_records[i].key, sizeof g_records[i].key, "%s", key);
  g_records[i].decision = *d;
  pthread_mutex_unlock(&g_records_lock);
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
  }
  if (load >= 0.0 || !s->router.hw_engines) { /* fixed (without engines the load routes nothing) */
    s->router.hw_load = stk__jpeg_hw_load_clamp(load);
    snprintf(r->record, sizeof r->record, "hw_decoder_load %.2f (%s)", s->router.hw_load,
             load >= 0.0 ? source : "no hardware JPEG engines: every image on nvJPEG's lanes or the CPU");
    return STK_OK;
  }
  const stk_pipeline_options *o = op->options;
  r->automatic = 1;
  /* The CUDA decoder's arm only where cuda_decoder_load is the router's to choose (not given) */
  const stk__arg_value *cuda_given = stk__arg(op, "cuda_decoder_load");
  const int cuda_arm = !(cuda_given && cuda_given->is_set);
  r->user_cuda = s->router.cuda_load;
  r->when = stk__route_schedule_make((int)stk__tuning_int(STK__KNOB_ROUTER_BATCHES), o ? o->prefetch_queue_depth : 0,
                                     (int)stk__tuning_int(STK__KNOB_ROUTER_TRIAL_BATCHES), cuda_arm ? 3 : 2);
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
           "%llu (a trial of %d splits to batch %llu when it is below 1), the verdict from batch %llu",
           STK__ROUTE_CALIB_LOAD, (unsigned long long)r->when.first, (unsigned long long)r->when.last,
           (unsigned long long)r->when.switch_at, r->when.arm_len ? r->when.arms : 0,
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
static stk__route_split split_of(double hw, double cuda) {
  stk__route_split x = {hw, cuda};
  return x;
}

/* Under r->lock: stage 1 (the trial's arms from the model's load) or 2 (also the verdict); wakes the
 * batches waiting for it. */
static void set_stage(mixed_route *r, int stage, double model, stk__route_split verdict) {
  r->model_load = model;
  stk__route_trial_arms(&r->when, model, r->user_cuda, r->arms);
  r->verdict = verdict;
  /* after the splits: stk__mixed_route_apply reads them unlocked */
  __atomic_store_n(&r->stage, stage, __ATOMIC_RELEASE);
  r->record_sent = 0;
  pthread_cond_broadcast(&r->decided_cond);
}

/* Under r->lock: keeps the decision on disk (unless another process kept one first: then *d is
 * that one) and in the process. 1 when another process's was taken. */
static int keep(mixed_route *r, stk__route_kept *d) {
  int kept_before = 0;
  if (r->cache_dir[0]) stk__route_cache_publish(r->cache_dir, r->key, d, &kept_before);
  else stk__route_kept_round(d);
  record_add(r->key, d);
  return kept_before;
}

/* "0.80" or "0.80 + CUDA decoder 1.00" */
static const char *split_text(stk__route_split x, double user_cuda, char *buf, size_t size) {
  if (x.cuda == user_cuda) snprintf(buf, size, "%.2f", x.hw);
  else snprintf(buf, size, "%.2f + CUDA decoder %.2f", x.hw, x.cuda);
  return buf;
}

/* r->record for a decision another run kept on disk (`how`: what this run did instead). */
static void record_kept(mixed_route *r, const stk__route_kept *d, const char *how) {
  char text[64];
  snprintf(r->record, sizeof r->record,
           "hw_decoder_load auto -> %s (an earlier run's decision for %.50s, kept in %.80s%s)",
           split_text(split_of(d->hw, d->cuda), r->user_cuda, text, sizeof text), r->key, r->cache_dir, how);
}

/* Under r->lock: closes the window and decides the model's load -- or takes the process's or an
 * earlier run's decision for the same key, the trial's load and the verdict both. */
static void decide(const stk__op *op, mixed_state *s, const stk__batch_ctx *ctx) {
  mixed_route *r = &s->route;
  if (r->stage) return;
  stk__route_costs costs;
  stk__route_calib_close(&r->calib, stk__pool_cpu_seconds(ctx), stk__now(), r->cpus, r->threads, &costs);
  const double mean = r->key_images ? (double)r->key_pixels / (double)r->key_images : 0.0;
  stk__route_key(r->key, sizeof r->key, s->device_id, s->random_crop, s->channels, r->threads, r->cpus, mean);
  if (r->when.arms == 2) { /* cuda_decoder_load given: decisions apart from those where it was the router's */
    const size_t at = strlen(r->key);
    snprintf(r->key + at, sizeof r->key - at, " cuda%.2f", r->user_cuda);
  }
  if (!stk__route_cache_dir(stk__tuning_text(STK__KNOB_ROUTER_CACHE), r->cache_dir, sizeof r->cache_dir))
    r->cache_dir[0] = '\0';
  stk__route_choice choice;
  stk__route_choose(&costs, &choice);
  stk__route_describe(&costs, &choice, r->model_line, sizeof r->model_line);
  stk__route_kept d;
  char text[64];
  /* the kept file first (it is what every process of the machine follows; the process's record
   * says the same unless the file changed), then the process's record, else measure */
  int kept_before = r->cache_dir[0] && stk__route_cache_find(r->cache_dir, r->key, &d, NULL, 0), earlier = 0;
  if (kept_before) {
    record_add(r->key, &d);
  } else if ((earlier = record_find(r->key, &d))) {
    snprintf(r->record, sizeof r->record, "hw_decoder_load auto -> %s (this process's earlier decision for %s)",
             split_text(split_of(d.hw, d.cuda), r->user_cuda, text, sizeof text), r->key);
  } else {
    d.trial = stk__route_cache_load(choice.hw_load);
    d.hw = d.trial, d.cuda = r->user_cuda;
    if (!r->when.arm_len || d.trial >= 1.0) { /* nothing to try: the model's load is the verdict */
      kept_before = keep(r, &d);
      if (!kept_before) snprintf(r->record, sizeof r->record, "%s", r->model_line);
    } else { /* the trial runs; its verdict comes at batch trial_end - 1 */
      set_stage(r, 1, d.trial, split_of(1.0, r->user_cuda));
      snprintf(r->record, sizeof r->record,
               "hw_decoder_load auto: trying %.2f%s against 1 on batches %llu-%llu; %.210s", d.trial,
               r->when.arms == 3 ? " (CPU lanes, then the CUDA decoder)" : "", (unsigned long long)r->when.switch_at,
               (unsigned long long)r->when.trial_end - 1, r->model_line);
      fprintf(stderr, "stoker: %s: %s\n", mixed_op_label(op), r->record);
      return;
    }
  }
  if (kept_before) record_kept(r, &d, "; STOKER_ROUTER_CACHE=off measures anew");
  set_stage(r, 2, d.trial, split_of(d.hw, d.cuda));
  fprintf(stderr, "stoker: %s: %s\n", mixed_op_label(op), r->record);
  if ((earlier || kept_before) && op->options && op->options->verbose)
    fprintf(stderr, "stoker: %s: this calibration: %s\n", mixed_op_label(op), r->model_line);
}

/* Under r->lock: the trial's last batch is done: the verdict. */
static void judge(const stk__op *op, mixed_state *s) {
  mixed_route *r = &s->route;
  double rates[STK__ROUTE_MAX_ARMS];
  const int best = stk__route_trial_verdict(&r->trial, &r->when, rates);
  stk__route_kept d = {r->arms[best].hw, r->arms[best].cuda, r->model_load};
  char text[64], arms[200];
  int at = 0;
  double pinning = 0.0;
  for (int a = 0; a < r->when.arms && at < (int)sizeof arms; a++) {
    char one[64];
    at += snprintf(arms + at, sizeof arms - (size_t)at, "%s%s %.0f img/s", a ? ", " : "",
                   split_text(r->arms[a], r->user_cuda, one, sizeof one), rates[a]);
    pinning += stk__route_trial_pinning(&r->trial, a);
  }
  if (pinning >= 0.005 && at < (int)sizeof arms)
    snprintf(arms + at, sizeof arms - (size_t)at, "; %.2f s of pinning memory left out", pinning);
  if (keep(r, &d))
    record_kept(r, &d, ", taken over this run's trial");
  else
    snprintf(r->record, sizeof r->record,
             "hw_decoder_load auto -> %.40s (trial: %.190s; pin with hw_decoder_load=%.2f, cuda_decoder_load=%.2f)",
             split_text(split_of(d.hw, d.cuda), r->user_cuda, text, sizeof text), arms, d.hw, d.cuda);
  set_stage(r, 2, d.trial, split_of(d.hw, d.cuda));
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

void stk__mixed_route_apply(mixed_state *s, uint64_t batch_seq, stk__jpeg_router *router) {
  mixed_route *r = &s->route;
  router->cuda_load = s->router.cuda_load;
  if (!r->automatic) {
    router->hw_load = s->router.hw_load;
    return;
  }
  int stage = 0;
  if (batch_seq >= r->when.switch_at) stage = wait_for_stage(r, batch_seq >= r->when.final_at ? 2 : 1);
  const stk__route_split x = stk__route_batch_split(&r->when, batch_seq, stage, r->arms, r->verdict, r->user_cuda);
  router->hw_load = x.hw;
  router->cuda_load = x.cuda;
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
    if (seq == r->when.first - 1 && !r->stage) stk__route_calib_open(&r->calib, stk__pool_cpu_seconds(ctx), stk__now());
    if (seq >= r->when.last && !r->stage) decide(op, s, ctx);
    if (r->stage == 1 && stk__route_trial_batch(&r->trial, &r->when, seq, ctx->batch_size, stk__now(),
                                                       stk__gpu_pinning_seconds())) judge(op, s);
    pthread_mutex_unlock(&r->lock);
  }
  if (r->automatic) pthread_mutex_lock(&r->lock);
  if (!r->record_sent && ctx->stats && seq) {
    snprintf(ctx->stats->decoder_route, sizeof ctx->stats->decoder_route, "%s", r->record);
    r->record_sent = 1;
  }
  if (r->automatic) pthread_mutex_unlock(&r->lock);
}
