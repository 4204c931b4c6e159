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
  double load;
} g_records[ROUTE_RECORDS];
static int g_num_records;
static pthread_mutex_t g_records_lock = PTHREAD_MUTEX_INITIALIZER;

/* The decision recorded under key, or -1. */
static double record_find(const char *key) {
  double load = -1.0;
  pthread_mutex_lock(&g_records_lock);
  for (int i = 0; i < g_num_records && load < 0; i++)
    if (!strcmp(g_records[i].key, key)) load = g_records[i].load;
  pthread_mutex_unlock(&g_records_lock);
  return load;
}

static void record_add(const char *key, double load) {
  pthread_mutex_lock(&g_records_lock);
  int i = g_num_records < ROUTE_RECORDS ? g_num_records++ : ROUTE_RECORDS - 1; /* full: the last is replaced */
  snprintf(g_records[i].key, sizeof g_records[i].key, "%s", key);
  g_records[i].load = load;
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
  r->when = stk__route_schedule_make((int)stk__tuning_int(STK__KNOB_ROUTER_BATCHES), o ? o->prefetch_queue_depth : 0);
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
           "hw_decoder_load auto: calibrating at %.2f on batches %llu-%llu; the chosen load applies from batch %llu",
           STK__ROUTE_CALIB_LOAD, (unsigned long long)r->when.first, (unsigned long long)r->when.last,
           (unsigned long long)r->when.switch_at);
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
/* Under r->lock: closes the window and decides (or takes the process's earlier decision for the
 * same key). */
static void decide(const stk__op *op, mixed_state *s) {
  mixed_route *r = &s->route;
  if (r->decided) return;
  stk__route_costs costs;
  stk__route_calib_close(&r->calib, process_cpu_s(), stk__now(), r->cpus, r->threads, &costs);
  const double mean = r->key_images ? (double)r->key_pixels / (double)r->key_images : 0.0;
  char key[128];
  stk__route_key(key, sizeof key, s->device_id, s->random_crop, s->channels, r->threads, r->cpus, mean);
  const double earlier = record_find(key);
  stk__route_choice choice;
  stk__route_choose(&costs, &choice);
  char line[sizeof r->record];
  stk__route_describe(&costs, &choice, line, sizeof line);
  char dir[1024];
  int kept_before = 0;
  if (earlier >= 0.0) {
    r->chosen = earlier;
    snprintf(r->record, sizeof r->record, "hw_decoder_load auto -> %.2f (this process's earlier decision for %s)",
             earlier, key);
  } else if (stk__route_cache_dir(stk__tuning_text(STK__KNOB_ROUTER_CACHE), dir, sizeof dir) &&
             (r->chosen = stk__route_cache_publish(dir, key, choice.hw_load, &kept_before), kept_before)) {
    record_add(key, r->chosen);
    snprintf(r->record, sizeof r->record,
             "hw_decoder_load auto -> %.2f (an earlier run's decision for %.60s, kept in %.100s; "
             "STOKER_ROUTER_CACHE=off measures anew)",
             r->chosen, key, dir);
  } else {
    r->chosen = stk__route_cache_load(choice.hw_load);
    record_add(key, r->chosen);
    snprintf(r->record, sizeof r->record, "%s", line);
  }
  __atomic_store_n(&r->decided, 1, __ATOMIC_RELEASE); /* after chosen: stk__mixed_route_load reads it unlocked */
  r->record_sent = 0;
  pthread_cond_broadcast(&r->decided_cond);
  fprintf(stderr, "stoker: %s: %s\n", mixed_op_label(op), r->record);
  if ((earlier >= 0.0 || kept_before) && op->options && op->options->verbose)
    fprintf(stderr, "stoker: %s: this calibration: %s\n", mixed_op_label(op), line);
}

double stk__mixed_route_load(mixed_state *s, uint64_t batch_seq) {
  mixed_route *r = &s->route;
  if (!r->automatic) return s->router.hw_load;
  if (batch_seq == 0 || batch_seq < r->when.switch_at) return stk__route_batch_load(&r->when, batch_seq, 0, 0.0);
  if (__atomic_load_n(&r->decided, __ATOMIC_ACQUIRE)) return r->chosen; /* every image once decided */
  pthread_mutex_lock(&r->lock); /* not reached when the slots are as many as switch_at assumes */
  struct timespec until;
  clock_gettime(CLOCK_REALTIME, &until);
  until.tv_sec += 30;
  while (!r->decided && !r->gave_up && pthread_cond_timedwait(&r->decided_cond, &r->lock, &until) == 0) {
  }
  if (!r->decided) r->gave_up = 1; /* later images do not wait again */
  const int decided = r->decided;
  pthread_mutex_unlock(&r->lock);
  /* A decision that did not come in time (a pipeline with far more slots than switch_at assumes):
   * this batch keeps the calibration load (and is the one case where the routes depend on timing). */
  return stk__route_batch_load(&r->when, batch_seq, decided, r->chosen);
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
    if (seq == r->when.first - 1 && !r->decided) stk__route_calib_open(&r->calib, process_cpu_s(), stk__now());
    if (seq >= r->when.last && !r->decided) decide(op, s);
    pthread_mutex_unlock(&r->lock);
  }
  if (r->automatic) pthread_mutex_lock(&r->lock);
  if (!r->record_sent && ctx->stats && seq) {
    snprintf(ctx->stats->decoder_route, sizeof ctx->stats->decoder_route, "%s", r->record);
    r->record_sent = 1;
  }
  if (r->automatic) pthread_mutex_unlock(&r->lock);
}
