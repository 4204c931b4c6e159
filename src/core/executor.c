/* src/core/executor.c: the executor. HOT PATH: the worker loop and run_sample_chain run for
 * every sample.
 *
 * Threads: num_threads workers (pinned at start), one scheduler, and a GPU stage thread when the
 * graph has mixed/gpu nodes. All shared state is under pipe->lock except the per-sample work
 * itself, which touches only its own sample's tensors.
 *
 *   scheduler: waits until fewer than max(1, prefetch_queue_depth) batches are in flight and a
 *     batch slot is free (a new slot is made when the consumer holds all of them), calls the
 *     reader's plan_batch (serially, in order) and queues one task per sample; once the
 *     consumer's epoch is all planned it moves the reader to the next epoch and goes on planning
 *     (at most one epoch ahead), so the queue stays full across an epoch boundary;
 *   workers: run the whole CPU chain of one sample (reader's run_sample, decoder, ...) into the
 *     slot's per-sample tensors; the worker finishing a batch's last sample checks every CPU
 *     pipeline output: when all samples share a shape it queues one copy task per sample into
 *     the dense batch tensor (parallel copy), bad samples are replaced (skip_bad_files);
 *   GPU stage: runs the mixed/gpu nodes' run_batch in order on one stream and records an event;
 *   consumer (stk_pipeline_next): takes batches strictly in plan order.
 * Buffers (per-sample tensors, dense bases, lists) belong to the slot and only grow, so a
 * steady-state batch allocates nothing. */
#include <errno.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/engine.h"
#include "device/device.h"

/* Topology/binding come from src/topo; referenced weakly so the engine links without it (then
 * workers are simply not pinned). */
#pragma weak stk_cpuset_parse
#pragma weak stk_bind_thread_cpus
#pragma weak stk_get_affinity
#pragma weak stk_topology_new
#pragma weak stk_topology_load
#pragma weak stk_topology_destroy
#pragma weak stk_topology_gpu_local_cpus
#pragma weak stk_topology_options_default
#pragma weak stk_cpuset_zero
#pragma weak stk_cpuset_add
#pragma weak stk_cpuset_has
#pragma weak stk_cpuset_count
#pragma weak stk_cpuset_is_empty
#pragma weak stk_cpuset_and
#pragma weak stk_cpuset_first
#pragma weak stk_cpuset_next

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* ---- Scratch -------------------------------------------------------------------------------- */
void *stk__scratch_get(stk__sample_ctx *ctx, int slot, size_t bytes) {
  stk__worker *w = ctx->thread_scratch;
  if (!w || slot < 0 || slot >= 8) return NULL;
  if (w->scratch_cap[slot] < bytes) {
    size_t want = bytes + bytes / 4 + 64;
    void *p = realloc(w->scratch[slot], want);
    if (!p) return NULL;
    w->scratch[slot] = p;
    w->scratch_cap[slot] = want;
    if (ctx->alloc_count) __atomic_fetch_add(ctx->alloc_count, 1, __ATOMIC_RELAXED);
  }
  return w->scratch[slot];
}

/* ---- Affinity ------------------------------------------------------------------------------- */
static void pipe_warn(stk_pipeline *pipe, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void pipe_warn(stk_pipeline *pipe, const char *fmt, ...) {
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  size_t len = strlen(pipe->last_error);
  snprintf(pipe->last_error + len, sizeof pipe->last_error - len, "%s%s", len ? "; " : "", msg);
  if (pipe->options.verbose) fprintf(stderr, "stoker: warning: %s\n", msg);
}

/* Decides the CPU of each worker (-1 = not pinned): CPU i of the mask for thread i; the rest
 * (and invalid or not-allowed entries) round-robin over GPU-local ∩ allowed CPUs (all allowed on
 * a CPU-only run). */
static void plan_worker_cpus(stk_pipeline *pipe) {
  for (int i = 0; i < pipe->num_workers; i++) pipe->workers[i].cpu = -1;
  if (!pipe->options.pin_threads) return;
  if (!stk_bind_thread_cpus || !stk_get_affinity || !stk_cpuset_parse) {
    pipe_warn(pipe, "thread pinning unavailable in this build (no topology module)");
    return;
  }
  stk_cpuset allowed;
  if (stk_get_affinity(0, &allowed) != STK_OK || stk_cpuset_is_empty(&allowed)) {
    pipe_warn(pipe, "could not read the allowed CPUs; workers not pinned");
    return;
  }
  stk_cpuset fallback = allowed;
  if (pipe->options.device_id >= 0 && stk_topology_new && stk_topology_load && stk_topology_gpu_local_cpus) {
    stk_topology *topo = NULL;
    stk_topology_options topts;
    stk_topology_options_default(&topts);
    if (stk_topology_new(&topo) == STK_OK && stk_topology_load(topo, &topts) == STK_OK) {
      stk_cpuset local, both;
      if (stk_topology_gpu_local_cpus(topo, pipe->options.device_id, &local) == STK_OK) {
        stk_cpuset_and(&both, &local, &allowed);
        if (!stk_cpuset_is_empty(&both)) fallback = both;
        else pipe_warn(pipe, "no CPU local to GPU %d is allowed; using all allowed CPUs", pipe->options.device_id);
      }
    }
    stk_topology_destroy(topo);
  }
  const char *mask = pipe->affinity_mask ? pipe->affinity_mask : getenv("STOKER_AFFINITY_MASK");
  int assigned = 0;
  if (mask && *mask) {
    /* Entries one by one so that a bad entry only loses its own thread. */
    const char *p = mask;
    while (*p && assigned < pipe->num_workers) {
      const char *comma = strchr(p, ',');
      size_t n = comma ? (size_t)(comma - p) : strlen(p);
      char entry[64];
      snprintf(entry, sizeof entry, "%.*s", (int)(n < sizeof entry ? n : sizeof entry - 1), p);
      stk_cpuset one;
      char perr[128];
      int cpu = -1;
      if (stk_cpuset_parse(entry, &one, perr, sizeof perr) != STK_OK || stk_cpuset_count(&one) != 1) {
        pipe_warn(pipe, "STOKER_AFFINITY_MASK entry %d ('%s') is not one CPU; thread %d uses the default CPUs",
                  assigned, entry, assigned);
      } else if (!stk_cpuset_has(&allowed, cpu = stk_cpuset_first(&one))) {
        pipe_warn(pipe, "STOKER_AFFINITY_MASK entry %d (CPU %d) is not allowed for this process; thread %d uses the default CPUs",
                  assigned, cpu, assigned);
        cpu = -1;
      }
      pipe->workers[assigned].cpu = cpu >= 0 ? cpu : -2; /* -2: take a default CPU below */
      assigned++;
      if (!comma) break;
      p = comma + 1;
    }
  }
  int next = stk_cpuset_first(&fallback);
  for (int i = 0; i < pipe->num_workers; i++) {
    if (pipe->workers[i].cpu >= 0) continue;
    pipe->workers[i].cpu = next;
    next = stk_cpuset_next(&fallback, next);
    if (next < 0) next = stk_cpuset_first(&fallback);
  }
}

static void pin_self(stk__worker *w) {
  if (w->cpu < 0 || !stk_bind_thread_cpus) return;
  stk_cpuset set;
  stk_cpuset_zero(&set);
  stk_cpuset_add(&set, w->cpu);
  if (stk_bind_thread_cpus(&set) != STK_OK) w->cpu = -1;
}

/* ---- Tasks ---------------------------------------------------------------------------------- */
typedef struct stk__pfor {
  stk_status (*fn)(void *arg, int i, int thread_index);
  void *arg;
  int remaining;
  stk_status status;
} stk__pfor;

/* Under lock. */
static int push_task(stk_pipeline *pipe, stk__task task) {
  if (pipe->task_count == pipe->task_cap) {
    size_t cap = pipe->task_cap ? pipe->task_cap * 2 : 1024;
    stk__task *bigger = malloc(cap * sizeof *bigger);
    if (!bigger) return 0;
    for (size_t i = 0; i < pipe->task_count; i++) bigger[i] = pipe->tasks[(pipe->task_head + i) % pipe->task_cap];
    free(pipe->tasks);
    pipe->tasks = bigger;
    pipe->task_cap = cap;
    pipe->task_head = 0;
    __atomic_fetch_add(&pipe->alloc_count, 1, __ATOMIC_RELAXED);
  }
  if (task.kind == 2) { /* the GPU stage waits on parallel_for items: they jump the queue */
    pipe->task_head = (pipe->task_head + pipe->task_cap - 1) % pipe->task_cap;
    pipe->tasks[pipe->task_head] = task;
  } else {
    pipe->tasks[(pipe->task_head + pipe->task_count) % pipe->task_cap] = task;
  }
  pipe->task_count++;
  return 1;
}

static void fail_batch(stk_batch *b, stk_status st, const char *msg) {
  /* First error wins. Under lock. */
  if (b->status != STK_OK) return;
  b->status = st;
  snprintf(b->error, sizeof b->error, "%s", msg);
}

/* Runs the CPU chain of sample s of batch b on worker w. Returns the status; message in w->err. */
static stk_status run_sample_chain(stk_pipeline *pipe, stk__worker *w, stk_batch *b, int s) {
  stk__sample_plan *sp = &b->plan.samples[s];
  stk__sample_ctx ctx = {.thread_index = w->index,
                         .sample_in_batch = s,
                         .epoch = b->plan.epoch,
                         .sample_id = sp->sample_id,
                         .label = sp->label,
                         .source = sp->source,
                         .plan = sp,
                         .alloc_count = &pipe->alloc_count,
                         .thread_scratch = w};
  char op_err[512];
  stk__tensor *inputs[32];
  stk__tensor *outputs[16];
  for (int k = 0; k < pipe->num_nodes; k++) {
    stk__node *n = &pipe->nodes[pipe->order[k]];
    int stage = n->op.device != STK__DEV_CPU; /* a mixed op's CPU pre-stage (op.h) */
    if ((stage && n->stage_list < 0) || n->skip || !n->op.impl->run_sample) continue;
    for (int i = 0; i < n->num_all_inputs; i++) {
      stk__node *src = &pipe->nodes[n->src_node[i]];
      inputs[i] = &b->lists[src->list_base + n->src_output[i]].samples[s];
    }
    if (stage) outputs[0] = &b->lists[n->stage_list].samples[s];
    else
      for (int o = 0; o < n->num_outputs; o++) outputs[o] = &b->lists[n->list_base + o].samples[s];
    op_err[0] = '\0';
    ctx.err = op_err;
    ctx.err_size = sizeof op_err;
    uint64_t t0 = now_ns();
    stk_status st = n->op.impl->run_sample(&n->op, &ctx, inputs, outputs);
    __atomic_fetch_add(&n->busy_ns, now_ns() - t0, __ATOMIC_RELAXED);
    if (st != STK_OK) {
      snprintf(w->err, sizeof w->err, "%s%s%soperator %s (%s), sample %d of batch %lld (dataset sample %lld): %s",
               sp->source ? "file " : "", sp->source ? sp->source : "", sp->source ? ": " : "", n->op.name,
               n->op_type, s, (long long)b->plan.batch_index, (long long)sp->sample_id,
               op_err[0] ? op_err : stk_strerror(st));
      return st;
    }
    if ((int)(n - pipe->nodes) == pipe->reader && n->num_outputs > 0)
      __atomic_fetch_add(&pipe->bytes_read, outputs[0]->nbytes, __ATOMIC_RELAXED);
  }
  return STK_OK;
}

static int shapes_equal(const stk__tensor *a, const stk__tensor *b) {
  if (a->ndim != b->ndim || a->dtype != b->dtype) return 0;
  for (int d = 0; d < a->ndim; d++)
    if (a->shape[d] != b->shape[d]) return 0;
  return 1;
}

static stk_status copy_tensor(stk__tensor *dst, const stk__tensor *src) {
  stk_status st = stk__tensor_resize(dst, src->dtype, src->ndim, src->shape, src->layout);
  if (st == STK_OK && src->nbytes) memcpy(dst->data, src->data, src->nbytes);
  return st;
}

/* Replaces failed samples by copies of the nearest good sample (lower index on ties) in every
 * node output (their names are recorded when the batch is delivered: note_delivered). Under lock. */
static stk_status replace_bad_samples(stk_pipeline *pipe, stk_batch *b) {
  int n = b->plan.batch_size;
  for (int s = 0; s < n; s++) {
    if (!b->sample_failed[s]) continue;
    int good = -1;
    for (int d = 1; d < n && good < 0; d++) {
      if (s - d >= 0 && !b->sample_failed[s - d]) good = s - d;
      else if (s + d < n && !b->sample_failed[s + d]) good = s + d;
    }
    if (good < 0) {
      fail_batch(b, STK_EBADIMAGE, "every sample of the batch failed (skip_bad_files has no good sample to use)");
      return STK_EBADIMAGE;
    }
    for (int k = 0; k < pipe->num_nodes; k++) {
      stk__node *node = &pipe->nodes[k];
      if (node->stage_list >= 0) { /* the pre-stage's host record of the sample goes with it */
        stk__tensor_list *l = &b->lists[node->stage_list];
        stk_status st = copy_tensor(&l->samples[s], &l->samples[good]);
        if (st != STK_OK) return st;
      }
      if (node->op.device != STK__DEV_CPU) continue;
      for (int o = 0; o < node->num_outputs; o++) {
        stk__tensor_list *l = &b->lists[node->list_base + o];
        stk_status st = copy_tensor(&l->samples[s], &l->samples[good]);
        if (st != STK_OK) return st;
      }
    }
  }
  return STK_OK;
}

/* Under lock: the batch's CPU part is complete. Moves it to the GPU stage or READY. */
static void finish_cpu_part(stk_pipeline *pipe, stk_batch *b) {
  if (pipe->has_gpu_nodes && b->status == STK_OK && !b->cancelled) {
    b->state = STK__SLOT_GPU;
    if (pipe->gpu_queue_count < pipe->gpu_queue_cap) pipe->gpu_queue[pipe->gpu_queue_count++] = b;
    pthread_cond_broadcast(&pipe->cond_gpu);
    return;
  }
  b->state = STK__SLOT_READY;
  __atomic_fetch_add(&pipe->latency_ns, now_ns() - b->planned_ns, __ATOMIC_RELAXED);
  pthread_cond_broadcast(&pipe->cond_done);
  pthread_cond_broadcast(&pipe->cond_sched);
}

/* Under lock: all sample chains of b are done. Sets up the consumer's views; queues dense copies. */
static void finish_sample_phase(stk_pipeline *pipe, stk_batch *b) {
  int n = b->plan.batch_size;
  if (b->status == STK_OK && !b->cancelled && pipe->options.skip_bad_files) replace_bad_samples(pipe, b);
  if (b->status != STK_OK || b->cancelled) {
    finish_cpu_part(pipe, b);
    return;
  }
  int copies = 0;
  for (int o = 0; o < pipe->num_outputs; o++) {
    stk__node *node = &pipe->nodes[pipe->out_node[o]];
    stk__tensor_list *out = &b->out_lists[o];
    if (node->op.device != STK__DEV_CPU) continue;
    stk__tensor_list *src = &b->lists[node->list_base + pipe->out_index[o]];
    int dense = n > 0 && src->samples[0].ndim + 1 <= STK_MAX_DIMS;
    for (int s = 1; s < n && dense; s++) dense = shapes_equal(&src->samples[0], &src->samples[s]);
    out->count = n;
    out->device = STK_DEVICE_CPU;
    out->dense = dense;
    if (dense) {
      size_t total = src->samples[0].nbytes * (size_t)n;
      if (total > out->base_capacity) {
        void *p = realloc(out->base, total + 64);
        if (!p) {
          fail_batch(b, STK_ENOMEM, "out of memory for a dense batch tensor");
          finish_cpu_part(pipe, b);
          return;
        }
        out->base = p;
        out->base_capacity = total + 64;
        __atomic_fetch_add(&pipe->alloc_count, 1, __ATOMIC_RELAXED);
      }
      for (int s = 0; s < n; s++) {
        stk__tensor *view = &out->samples[s];
        *view = src->samples[s];
        view->capacity = 0;
        view->alloc_count = NULL;
        view->data = (char *)out->base + (size_t)s * src->samples[0].nbytes;
      }
      copies += n;
    } else {
      for (int s = 0; s < n; s++) {
        out->samples[s] = src->samples[s];
        out->samples[s].capacity = 0;
      }
    }
  }
  if (copies) {
    b->phase = 1;
    b->pending = copies;
    for (int o = 0; o < pipe->num_outputs; o++) {
      if (!b->out_lists[o].dense || pipe->nodes[pipe->out_node[o]].op.device != STK__DEV_CPU) continue;
      for (int s = 0; s < n; s++) push_task(pipe, (stk__task){.kind = 1, .batch = b, .index = o * n + s});
    }
    pthread_cond_broadcast(&pipe->cond_work);
    return;
  }
  finish_cpu_part(pipe, b);
}

static void *worker_main(void *arg) {
  stk__worker *w = arg;
  stk_pipeline *pipe = w->pipe;
  pin_self(w);
  pthread_mutex_lock(&pipe->lock);
  for (;;) {
    while (!pipe->stopping && pipe->task_count == 0) pthread_cond_wait(&pipe->cond_work, &pipe->lock);
    if (pipe->stopping) break;
    stk__task t = pipe->tasks[pipe->task_head];
    pipe->task_head = (pipe->task_head + 1) % pipe->task_cap;
    pipe->task_count--;
    if (t.kind == 2) {
      pthread_mutex_unlock(&pipe->lock);
      stk_status st = t.pfor->fn(t.pfor->arg, t.index, w->index);
      pthread_mutex_lock(&pipe->lock);
      if (st != STK_OK && t.pfor->status == STK_OK) t.pfor->status = st;
      if (--t.pfor->remaining == 0) pthread_cond_broadcast(&pipe->cond_done);
      continue;
    }
    stk_batch *b = t.batch;
    int skip_work = b->cancelled || b->status != STK_OK;
    pthread_mutex_unlock(&pipe->lock);
    stk_status st = STK_OK;
    if (!skip_work) {
      if (t.kind == 0) {
        st = run_sample_chain(pipe, w, b, t.index);
      } else {
        int n = b->plan.batch_size;
        int o = t.index / n, s = t.index % n;
        stk__node *node = &pipe->nodes[pipe->out_node[o]];
        const stk__tensor *src = &b->lists[node->list_base + pipe->out_index[o]].samples[s];
        memcpy(b->out_lists[o].samples[s].data, src->data, src->nbytes);
      }
    }
    pthread_mutex_lock(&pipe->lock);
    if (st != STK_OK) {
      int skippable = pipe->options.skip_bad_files && st != STK_ENOMEM && st != STK_EINTERNAL && st != STK_ESHUTDOWN;
      if (skippable) b->sample_failed[t.index] = 1;
      else fail_batch(b, st, w->err);
    }
    if (--b->pending == 0) {
      if (b->phase == 0) finish_sample_phase(pipe, b);
      else finish_cpu_part(pipe, b);
    }
  }
  pthread_mutex_unlock(&pipe->lock);
  return NULL;
}

stk_status stk__parallel_for(stk__batch_ctx *ctx, int n, stk_status (*fn)(void *arg, int i, int thread_index),
                             void *arg) {
  stk_pipeline *pipe = (stk_pipeline *)ctx->pool;
  if (n <= 0) return STK_OK;
  if (!pipe) {
    for (int i = 0; i < n; i++) {
      stk_status st = fn(arg, i, 0);
      if (st != STK_OK) return st;
    }
    return STK_OK;
  }
  stk__pfor job = {.fn = fn, .arg = arg, .remaining = n, .status = STK_OK};
  pthread_mutex_lock(&pipe->lock);
  for (int i = 0; i < n; i++) {
    if (!push_task(pipe, (stk__task){.kind = 2, .index = i, .pfor = &job})) {
      job.remaining -= n - i;
      job.status = STK_ENOMEM;
      break;
    }
  }
  pthread_cond_broadcast(&pipe->cond_work);
  while (job.remaining > 0 && !pipe->stopping) pthread_cond_wait(&pipe->cond_done, &pipe->lock);
  stk_status st = job.remaining > 0 ? STK_ESHUTDOWN : job.status;
  if (job.remaining > 0) {
    /* Stopping: remove our not-yet-started items, then wait for the ones a worker already runs
     * (it finishes its current item before it exits), so nobody touches `job` after we return. */
    size_t kept = 0;
    for (size_t i = 0; i < pipe->task_count; i++) {
      stk__task t = pipe->tasks[(pipe->task_head + i) % pipe->task_cap];
      if (t.kind == 2 && t.pfor == &job) {
        job.remaining--;
        continue;
      }
      pipe->tasks[(pipe->task_head + kept) % pipe->task_cap] = t;
      kept++;
    }
    pipe->task_count = kept;
    while (job.remaining > 0) pthread_cond_wait(&pipe->cond_done, &pipe->lock);
  }
  pthread_mutex_unlock(&pipe->lock);
  return st;
}

/* ---- Batch slots ---------------------------------------------------------------------------- */
/* max(1, prefetch_queue_depth): batches planned ahead of the consumer. */
static int prefetch_depth(const stk_pipeline *pipe) {
  return pipe->options.prefetch_queue_depth > 1 ? pipe->options.prefetch_queue_depth : 1;
}

/* Slots made at start: the prefetch depth plus the one the consumer holds, and with GPU outputs
 * the spare that take_free_slot uses while the consumer's stream still reads a released batch.
 * All of them warm up with the first batches, so none is made (and allocated) mid-run. */
static int initial_slots(const stk_pipeline *pipe) { return prefetch_depth(pipe) + (pipe->has_gpu_nodes ? 2 : 1); }

/* Waits until no GPU work reads the slot's buffers any more: its own batch's (the event exists only
 * when the graph has GPU nodes) and the consumer's stream, when it recorded one. */
static void wait_slot_readers(stk_batch *b) {
  if (b->cuda_event) stk__gpu_event_synchronize(b->cuda_event);
  if (__atomic_exchange_n(&b->consumer_recorded, 0, __ATOMIC_ACQ_REL)) stk__gpu_event_synchronize(b->consumer_event);
}

static void free_slot(stk_batch *b, int num_lists, int num_outputs) {
  if (!b) return;
  int n = b->plan.batch_size;
  wait_slot_readers(b); /* device memory goes back without a device-wide wait */
  if (b->lists) {
    for (int l = 0; l < num_lists; l++) {
      stk__tensor_list *list = &b->lists[l];
      if (list->device == STK_DEVICE_GPU) {
        stk__gpu_tensor_list_free(list);
      } else if (list->samples) {
        for (int s = 0; s < n; s++) stk__tensor_free(&list->samples[s]);
      }
      free(list->samples);
    }
  }
  if (b->out_lists) {
    for (int o = 0; o < num_outputs; o++) {
      free(b->out_lists[o].base);
      free(b->out_lists[o].samples);
    }
  }
  if (b->cuda_event) stk__gpu_event_destroy(b->cuda_event);
  if (b->consumer_event) stk__gpu_event_destroy(b->consumer_event);
  free(b->lists);
  free(b->out_lists);
  free(b->out_list_index);
  free(b->plan.samples);
  free(b->sample_failed);
  free(b);
}

static void set_pinned(stk__tensor_list *list, int n, int numa_node) {
  for (int s = 0; s < n; s++) {
    list->samples[s].pinned = 1;
    list->samples[s].numa_node = numa_node;
  }
}

/* A new slot for pipe (buffers are made lazily by the operators). NULL on out-of-memory. */
static stk_batch *new_slot(stk_pipeline *pipe) {
  int n = pipe->options.batch_size;
  stk_batch *b = calloc(1, sizeof *b);
  if (!b) return NULL;
  b->pipe = pipe;
  b->plan.batch_size = n;
  b->plan.samples = calloc((size_t)n, sizeof *b->plan.samples);
  b->sample_failed = calloc((size_t)n, sizeof *b->sample_failed);
  b->lists = calloc((size_t)pipe->num_lists + 1, sizeof *b->lists);
  b->out_lists = calloc((size_t)pipe->num_outputs + 1, sizeof *b->out_lists);
  b->out_list_index = calloc((size_t)pipe->num_outputs + 1, sizeof *b->out_list_index);
  b->num_lists_copy = pipe->num_lists;
  b->device_id = pipe->options.device_id;
  b->num_outputs_copy = pipe->num_outputs;
  int ok = b->plan.samples && b->sample_failed && b->lists && b->out_lists && b->out_list_index;
  for (int o = 0; ok && o < pipe->num_outputs; o++) {
    stk__node *node = &pipe->nodes[pipe->out_node[o]];
    b->out_list_index[o] = node->op.device == STK__DEV_CPU ? -1 : node->list_base + pipe->out_index[o];
  }
  for (int l = 0; ok && l < pipe->num_lists; l++) {
    b->lists[l].count = n;
    ok = (b->lists[l].samples = calloc((size_t)n, sizeof(stk__tensor))) != NULL;
    for (int s = 0; ok && s < n; s++) {
      b->lists[l].samples[s].alloc_count = &pipe->alloc_count;
      b->lists[l].samples[s].high_water = &pipe->list_high_water[l];
    }
  }
  /* A CPU list a GPU operator reads is pinned, so its upload is a DMA. */
  for (int l = 0; ok && l < pipe->num_lists; l++)
    if (pipe->list_upload[l] >= 0) {
      set_pinned(&b->lists[l], n, pipe->gpu_numa_node);
      b->lists[pipe->list_upload[l]].device = STK_DEVICE_GPU;
    }
  for (int k = 0; ok && k < pipe->num_nodes; k++) {
    stk__node *node = &pipe->nodes[k];
    if (node->op.device == STK__DEV_CPU) continue;
    for (int o = 0; o < node->num_outputs; o++) b->lists[node->list_base + o].device = STK_DEVICE_GPU;
    if (node->stage_list < 0) continue;
    /* A mixed op with a pre-stage reads its inputs and its stage by DMA: both pinned, on the
     * GPU's NUMA node. */
    set_pinned(&b->lists[node->stage_list], n, pipe->gpu_numa_node);
    for (int i = 0; i < node->num_all_inputs; i++)
      set_pinned(&b->lists[pipe->nodes[node->src_node[i]].list_base + node->src_output[i]], n, pipe->gpu_numa_node);
  }
  for (int o = 0; ok && o < pipe->num_outputs; o++)
    ok = (b->out_lists[o].samples = calloc((size_t)n, sizeof(stk__tensor))) != NULL;
  if (ok && pipe->has_gpu_nodes)
    ok = stk__gpu_event_create(&b->cuda_event) == STK_OK && stk__gpu_event_create(&b->consumer_event) == STK_OK;
  if (!ok) {
    free_slot(b, pipe->num_lists, pipe->num_outputs);
    return NULL;
  }
  __atomic_fetch_add(&pipe->alloc_count, 1, __ATOMIC_RELAXED);
  return b;
}

/* Under lock: a free slot. First a never-used one, so every slot warms up during the first
 * batches; then one the consumer's GPU work is done with. A zero-copy consumer holds one batch
 * and its stream may still read the one it released (recorded by stk_batch_record_stream): when
 * every free slot is still read that way, a new slot is made while there are fewer than
 * prefetch_queue_depth + 2, so the prefetch keeps its full depth instead of waiting for the
 * consumer's step to finish on the GPU (the scheduler then waits for the slot's event; a pipeline
 * with GPU nodes starts with that many: initial_slots). A new slot is also made when the consumer
 * holds all of them. */
static stk_batch *take_free_slot(stk_pipeline *pipe) {
  stk_batch *ready = NULL, *pending = NULL;
  for (int i = 0; i < pipe->num_slots; i++) {
    stk_batch *b = pipe->slots[i];
    if (b->state != STK__SLOT_FREE) continue;
    if (!b->used) {
      b->used = 1;
      return b;
    }
    int consumer_busy = __atomic_load_n(&b->consumer_recorded, __ATOMIC_ACQUIRE) &&
                        stk__gpu_event_done(b->consumer_event) == 0;
    if (!consumer_busy && !ready) ready = b;
    if (consumer_busy && !pending) pending = b;
  }
  if (ready) return ready;
  if (pending && pipe->num_slots >= prefetch_depth(pipe) + 2) return pending;
  stk_batch **bigger = realloc(pipe->slots, (size_t)(pipe->num_slots + 1) * sizeof *bigger);
  if (!bigger) return pending;
  pipe->slots = bigger;
  stk_batch *b = new_slot(pipe);
  if (!b) return pending;
  pipe->slots[pipe->num_slots++] = b;
  b->used = 1;
  if (pipe->gpu_queue_cap < pipe->num_slots) {
    stk_batch **q = realloc(pipe->gpu_queue, (size_t)pipe->num_slots * sizeof *q);
    if (!q) return NULL;
    pipe->gpu_queue = q;
    pipe->gpu_queue_cap = pipe->num_slots;
  }
  return b;
}

/* ---- Scheduler ------------------------------------------------------------------------------ */
/* During warm-up, before a slot is planned (nobody else touches it): every host sample buffer
 * below its output's high-water mark grows to it now, so a slot reaches steady state on its second
 * use instead of one buffer at a time whenever a sample happens to be larger than what that buffer
 * held. Later a rare record-size sample grows only the buffer it lands in (to the new mark). An
 * allocation failure is left to the operator's own resize, which reports it. */
static void pregrow_slot(stk_pipeline *pipe, stk_batch *b) {
  for (int l = 0; l < pipe->num_lists; l++) {
    stk__tensor_list *list = &b->lists[l];
    if (list->device == STK_DEVICE_GPU) continue;
    size_t high = __atomic_load_n(&pipe->list_high_water[l], __ATOMIC_RELAXED);
    for (int s = 0; s < list->count && high > 0; s++) /* only buffers in use: a pre-stage leaves the */
      if (list->samples[s].capacity && list->samples[s].capacity < high) /* engines' samples empty */
        stk__tensor_reserve(&list->samples[s], high);
  }
}

/* Under lock: 1 when the epoch the scheduler plans into (plan_epoch) has no batch left to plan. It
 * plans the consumer's epoch and then, before the consumer reaches its end, the next one (the
 * reader was moved on by roll_epoch), so an epoch boundary does not drain the prefetch queue. */
static int planned_all(const stk_pipeline *pipe) {
  return pipe->plan_epoch == pipe->epoch ? pipe->epoch_planned_all : pipe->ahead_planned_all;
}

static int can_roll(const stk_pipeline *pipe) {
  return pipe->plan_epoch == pipe->epoch && pipe->epoch_planned_all && !pipe->roll_failed;
}

/* Outside the lock, with pipe->sched_busy set: moves the reader to the epoch after the consumer's.
 * A failure is left for stk_pipeline_reset, which tries again and reports it. */
static void roll_epoch(stk_pipeline *pipe, stk__node *reader) {
  uint64_t next = pipe->plan_epoch + 1; /* only the scheduler writes plan_epoch */
  pthread_mutex_unlock(&pipe->lock);
  stk_status st = reader->op.impl->reset ? reader->op.impl->reset(&reader->op, next) : STK_OK;
  pthread_mutex_lock(&pipe->lock);
  if (st == STK_OK) pipe->plan_epoch = next;
  else pipe->roll_failed = 1;
}

/* Under lock: the epoch the scheduler plans into has no more batches; they end before seq end. */
static void mark_planned_all(stk_pipeline *pipe, uint64_t end) {
  if (pipe->plan_epoch == pipe->epoch) {
    pipe->epoch_planned_all = 1;
    pipe->epoch_end_seq = end;
  } else {
    pipe->ahead_planned_all = 1;
    pipe->ahead_end_seq = end;
  }
}

static void *scheduler_main(void *arg) {
  stk_pipeline *pipe = arg;
  stk__node *reader = &pipe->nodes[pipe->reader];
  int max_in_flight = prefetch_depth(pipe);
  pthread_mutex_lock(&pipe->lock);
  for (;;) {
    while (!pipe->stopping && (pipe->planning_paused || pipe->sched_status != STK_OK ||
                               (!can_roll(pipe) && (planned_all(pipe) || pipe->in_flight >= max_in_flight))))
      pthread_cond_wait(&pipe->cond_sched, &pipe->lock);
    if (pipe->stopping) break;
    if (can_roll(pipe)) {
      pipe->sched_busy = 1;
      roll_epoch(pipe, reader);
      pipe->sched_busy = 0;
      pthread_cond_broadcast(&pipe->cond_done);
      continue;
    }
    stk_batch *b = take_free_slot(pipe);
    if (!b) {
      pipe->sched_status = STK_ENOMEM;
      snprintf(pipe->sched_error, sizeof pipe->sched_error, "out of memory making a batch slot");
      pthread_cond_broadcast(&pipe->cond_done);
      continue;
    }
    b->state = STK__SLOT_RUNNING; /* reserved while we plan outside the lock */
    pipe->sched_busy = 1;
    uint64_t epoch = pipe->plan_epoch;
    int warming_up = !pipe->warmup_done;
    pthread_mutex_unlock(&pipe->lock);
    /* The GPU may still read this slot's pinned inputs and stages (the consumer released it
     * without waiting for the batch's event): they are rewritten only after that work is done.
     * In steady state the event has long completed. */
    uint64_t waited = now_ns();
    wait_slot_readers(b);
    b->planned_ns = now_ns();
    __atomic_fetch_add(&pipe->slot_wait_ns, b->planned_ns - waited, __ATOMIC_RELAXED);
    if (warming_up) pregrow_slot(pipe, b);

    b->plan.epoch = epoch;
    b->plan.batch_size = pipe->options.batch_size;
    b->plan.valid_samples = b->plan.batch_size;
    b->plan.last_in_epoch = 0;
    memset(b->plan.samples, 0, sizeof *b->plan.samples * (size_t)b->plan.batch_size);
    memset(b->sample_failed, 0, sizeof *b->sample_failed * (size_t)b->plan.batch_size);
    memset(&b->decoded, 0, sizeof b->decoded);
    char err[768] = "";
    stk_status st = reader->op.impl->plan_batch(&reader->op, &b->plan, err, sizeof err);

    pthread_mutex_lock(&pipe->lock);
    pipe->sched_busy = 0;
    pthread_cond_broadcast(&pipe->cond_done); /* a reset may wait for the reader to be free */
    if (st == STK_EOF_EPOCH) { /* the reader had nothing left for this epoch */
      b->state = STK__SLOT_FREE;
      mark_planned_all(pipe, pipe->next_plan_seq);
      continue;
    }
    if (st != STK_OK) {
      b->state = STK__SLOT_FREE;
      pipe->sched_status = st;
      snprintf(pipe->sched_error, sizeof pipe->sched_error, "operator %s (%s), planning batch %llu: %s",
               reader->op.name, reader->op_type, (unsigned long long)(pipe->next_plan_seq), err[0] ? err : stk_strerror(st));
      continue;
    }
    b->seq = pipe->next_plan_seq++;
    b->cancelled = 0;
    b->status = STK_OK;
    b->error[0] = '\0';
    b->phase = 0;
    b->pending = b->plan.batch_size;
    pipe->in_flight++;
    if (b->plan.last_in_epoch) mark_planned_all(pipe, pipe->next_plan_seq);
    for (int s = 0; s < b->plan.batch_size; s++) {
      if (!push_task(pipe, (stk__task){.kind = 0, .batch = b, .index = s})) {
        fail_batch(b, STK_ENOMEM, "out of memory queueing tasks");
        b->pending -= b->plan.batch_size - s;
        if (b->pending == 0) finish_cpu_part(pipe, b);
        break;
      }
    }
    if (b->plan.batch_size == 0) finish_cpu_part(pipe, b);
    pthread_cond_broadcast(&pipe->cond_work);
  }
  pthread_mutex_unlock(&pipe->lock);
  return NULL;
}

/* ---- GPU stage ------------------------------------------------------------------------------ */
/* fail_batch from the GPU stage thread, which does not hold the pipeline lock. */
static void fail_batch_unlocked(stk_pipeline *pipe, stk_batch *b, stk_status st, const char *msg) {
  pthread_mutex_lock(&pipe->lock);
  fail_batch(b, st, msg);
  pthread_mutex_unlock(&pipe->lock);
}

/* Copies every CPU list a GPU operator reads (pipe->list_upload) into its device list: dense,
 * room for the largest sample, one DMA per sample on the pipeline's stream (the host list is
 * pinned; the slot is replanned only after its event, so the host side stays put until the copy
 * is done). A failed sample (skip_bad_files) goes across empty, as its host side is. */
static stk_status upload_lists(stk_pipeline *pipe, stk_batch *b, char *err, size_t err_size) {
  for (int l = 0; l < pipe->num_lists; l++) {
    if (pipe->list_upload[l] < 0) continue;
    const stk__tensor_list *src = &b->lists[l];
    stk__tensor_list *dst = &b->lists[pipe->list_upload[l]];
    const int count = b->plan.batch_size;
    size_t largest = 0;
    for (int s = 0; s < count; s++)
      if (src->samples[s].nbytes > largest) largest = src->samples[s].nbytes;
    stk_status st = stk__gpu_tensor_list_reserve(dst, count, largest, &pipe->alloc_count);
    for (int s = 0; st == STK_OK && s < count; s++) {
      const stk__tensor *from = &src->samples[s];
      stk__tensor *to = &dst->samples[s];
      to->dtype = from->dtype;
      to->ndim = from->ndim;
      memcpy(to->shape, from->shape, sizeof to->shape);
      memcpy(to->layout, from->layout, sizeof to->layout);
      to->nbytes = from->nbytes;
      to->device = STK_DEVICE_GPU;
      if (from->nbytes) st = stk__gpu_memcpy_h2d_async(to->data, from->data, from->nbytes, pipe->cuda_stream);
    }
    if (st != STK_OK) {
      stk__errorf(err, err_size, "copying a batch of host tensors (%zu bytes the largest) to the GPU: %s", largest,
                  stk_strerror(st));
      return st;
    }
  }
  return STK_OK;
}

static void run_gpu_part(stk_pipeline *pipe, stk_batch *b) {
  stk__batch_ctx ctx = {.epoch = b->plan.epoch,
                        .batch_size = b->plan.batch_size,
                        .plan = &b->plan,
                        .cuda_stream = pipe->cuda_stream,
                        .device_id = pipe->options.device_id,
                        .alloc_count = &pipe->alloc_count,
                        .stats = &b->decoded,
                        .pool = (struct stk__pool_runner *)pipe};
  char op_err[768];
  stk__tensor_list *inputs[32];
  stk__tensor_list *outputs[16];
  uint64_t t_up = now_ns();
  stk_status up = upload_lists(pipe, b, op_err, sizeof op_err);
  __atomic_fetch_add(&pipe->upload_ns, now_ns() - t_up, __ATOMIC_RELAXED);
  if (up != STK_OK) {
    char msg[1024];
    snprintf(msg, sizeof msg, "batch %lld: %s", (long long)b->plan.batch_index, op_err);
    fail_batch_unlocked(pipe, b, up, msg);
    return;
  }
  for (int k = 0; k < pipe->num_nodes; k++) {
    stk__node *n = &pipe->nodes[pipe->order[k]];
    if (n->op.device == STK__DEV_CPU || n->skip) continue;
    stk__op *op = n->fused_op ? n->fused_op : &n->op;
    stk__node *in_node = n->fused_op ? &pipe->nodes[n->fused_first] : n;
    int ni = 0;
    for (int i = 0; i < in_node->num_all_inputs; i++) {
      int list = pipe->nodes[in_node->src_node[i]].list_base + in_node->src_output[i];
      if (i < in_node->num_regular_inputs && in_node->op.device == STK__DEV_GPU && pipe->list_upload[list] >= 0)
        list = pipe->list_upload[list]; /* a CPU list, read from its device copy */
      inputs[ni++] = &b->lists[list];
    }
    if (n->fused_op)
      for (int i = n->num_regular_inputs; i < n->num_all_inputs; i++)
        inputs[ni++] = &b->lists[pipe->nodes[n->src_node[i]].list_base + n->src_output[i]];
    for (int o = 0; o < n->num_outputs; o++) outputs[o] = &b->lists[n->list_base + o];
    ctx.stage = n->stage_list >= 0 ? &b->lists[n->stage_list] : NULL;
    ctx.sample_failed = pipe->options.skip_bad_files ? b->sample_failed : NULL;
    op_err[0] = '\0';
    ctx.err = op_err;
    ctx.err_size = sizeof op_err;
    uint64_t t0 = now_ns();
    stk_status st = op->impl->run_batch(op, &ctx, inputs, outputs);
    __atomic_fetch_add(&n->busy_ns, now_ns() - t0, __ATOMIC_RELAXED);
    if (st != STK_OK) {
      char msg[1024];
      snprintf(msg, sizeof msg, "operator %s (%s), batch %lld: %s", n->op.name, n->op_type,
               (long long)b->plan.batch_index, op_err[0] ? op_err : stk_strerror(st));
      fail_batch_unlocked(pipe, b, st, msg);
      return;
    }
  }
  stk_status st = stk__gpu_event_record(b->cuda_event, pipe->cuda_stream);
  if (st != STK_OK) {
    fail_batch_unlocked(pipe, b, st, "recording the batch's CUDA event failed");
  }
}

static void *gpu_main(void *arg) {
  stk_pipeline *pipe = arg;
  stk__gpu_set_device(pipe->options.device_id);
  pthread_mutex_lock(&pipe->lock);
  for (;;) {
    while (!pipe->stopping && pipe->gpu_queue_count == 0) pthread_cond_wait(&pipe->cond_gpu, &pipe->lock);
    if (pipe->stopping) break;
    /* Lowest seq first, so batches reach the GPU in plan order. */
    int best = 0;
    for (int i = 1; i < pipe->gpu_queue_count; i++)
      if (pipe->gpu_queue[i]->seq < pipe->gpu_queue[best]->seq) best = i;
    stk_batch *b = pipe->gpu_queue[best];
    pipe->gpu_queue[best] = pipe->gpu_queue[--pipe->gpu_queue_count];
    int skip = b->cancelled;
    pthread_mutex_unlock(&pipe->lock);
    uint64_t t0 = now_ns();
    if (!skip) run_gpu_part(pipe, b);
    __atomic_fetch_add(&pipe->gpu_stage_ns, now_ns() - t0, __ATOMIC_RELAXED);
    pthread_mutex_lock(&pipe->lock);
    b->state = STK__SLOT_READY;
    __atomic_fetch_add(&pipe->latency_ns, now_ns() - b->planned_ns, __ATOMIC_RELAXED);
    pthread_cond_broadcast(&pipe->cond_done);
    pthread_cond_broadcast(&pipe->cond_sched);
  }
  pthread_mutex_unlock(&pipe->lock);
  return NULL;
}

/* ---- Start / stop --------------------------------------------------------------------------- */
stk_status stk__executor_start(stk_pipeline *pipe) {
  pthread_mutex_init(&pipe->lock, NULL);
  pthread_cond_init(&pipe->cond_work, NULL);
  pthread_cond_init(&pipe->cond_sched, NULL);
  pthread_cond_init(&pipe->cond_done, NULL);
  pthread_cond_init(&pipe->cond_gpu, NULL);
  pipe->lock_inited = 1;
  if (pipe->has_gpu_nodes) {
    char err[512] = "";
    stk_status st = stk__gpu_open(pipe->options.device_id, err, sizeof err);
    if (st == STK_OK) st = stk__gpu_set_device(pipe->options.device_id);
    if (st == STK_OK) st = stk__gpu_stream_create(&pipe->cuda_stream, pipe->options.stream_priority);
    pipe->gpu_numa_node = stk__gpu_device_numa_node(pipe->options.device_id);
    if (st != STK_OK) {
      stk__pipe_error(pipe, "GPU device %d: %s", pipe->options.device_id, err[0] ? err : stk_strerror(st));
      return st;
    }
  }
  int initial = initial_slots(pipe);
  pipe->slots = calloc((size_t)initial, sizeof *pipe->slots);
  pipe->gpu_queue = calloc((size_t)initial, sizeof *pipe->gpu_queue);
  if (!pipe->slots || !pipe->gpu_queue) return STK_ENOMEM;
  pipe->gpu_queue_cap = initial;
  for (int i = 0; i < initial; i++) {
    if (!(pipe->slots[i] = new_slot(pipe))) return STK_ENOMEM;
    pipe->num_slots++;
  }
  pipe->num_workers = pipe->options.num_threads;
  pipe->workers = calloc((size_t)pipe->num_workers, sizeof *pipe->workers);
  if (!pipe->workers) return STK_ENOMEM;
  for (int i = 0; i < pipe->num_workers; i++) {
    pipe->workers[i].pipe = pipe;
    pipe->workers[i].index = i;
  }
  plan_worker_cpus(pipe);
  pipe->build_time = stk__now();
  for (int i = 0; i < pipe->num_workers; i++) {
    if (pthread_create(&pipe->workers[i].thread, NULL, worker_main, &pipe->workers[i]) != 0) {
      pipe->num_workers = i;
      stk__pipe_error(pipe, "could not start worker thread %d: %s", i, strerror(errno));
      return STK_ESYS;
    }
  }
  if (pipe->has_gpu_nodes) {
    if (pthread_create(&pipe->gpu_thread, NULL, gpu_main, pipe) != 0) return STK_ESYS;
    pipe->gpu_started = 1;
  }
  if (pthread_create(&pipe->scheduler_thread, NULL, scheduler_main, pipe) != 0) return STK_ESYS;
  pipe->scheduler_started = 1;
  return STK_OK;
}

static pthread_mutex_t orphan_lock = PTHREAD_MUTEX_INITIALIZER;

void stk__executor_stop(stk_pipeline *pipe) {
  if (!pipe->lock_inited) return;
  pthread_mutex_lock(&pipe->lock);
  pipe->stopping = 1;
  for (int i = 0; i < pipe->num_slots; i++) pipe->slots[i]->cancelled = 1;
  pthread_cond_broadcast(&pipe->cond_work);
  pthread_cond_broadcast(&pipe->cond_sched);
  pthread_cond_broadcast(&pipe->cond_done);
  pthread_cond_broadcast(&pipe->cond_gpu);
  pthread_mutex_unlock(&pipe->lock);
  if (pipe->scheduler_started) pthread_join(pipe->scheduler_thread, NULL);
  for (int i = 0; i < pipe->num_workers; i++) pthread_join(pipe->workers[i].thread, NULL);
  if (pipe->gpu_started) pthread_join(pipe->gpu_thread, NULL);
  if (pipe->cuda_stream) {
    stk__gpu_stream_synchronize(pipe->cuda_stream);
    stk__gpu_stream_destroy(pipe->cuda_stream);
  }
  /* Slots the consumer still holds are orphaned: they stay valid until stk_batch_release. */
  pthread_mutex_lock(&orphan_lock);
  for (int i = 0; i < pipe->num_slots; i++) {
    stk_batch *b = pipe->slots[i];
    if (b->state == STK__SLOT_HELD && __atomic_load_n(&b->refcount, __ATOMIC_ACQUIRE) > 0) b->pipe = NULL;
    else free_slot(b, pipe->num_lists, pipe->num_outputs);
  }
  /* An orphan must know its list and output counts: stored in the plan-independent fields. */
  pthread_mutex_unlock(&orphan_lock);
  free(pipe->slots);
  pipe->slots = NULL;
  pipe->num_slots = 0;
  free(pipe->gpu_queue);
  free(pipe->tasks);
  for (int i = 0; i < pipe->num_workers; i++)
    for (int k = 0; k < 8; k++) free(pipe->workers[i].scratch[k]);
  free(pipe->workers);
  pthread_cond_destroy(&pipe->cond_work);
  pthread_cond_destroy(&pipe->cond_sched);
  pthread_cond_destroy(&pipe->cond_done);
  pthread_cond_destroy(&pipe->cond_gpu);
  pthread_mutex_destroy(&pipe->lock);
  pipe->lock_inited = 0;
}

/* ---- Consumer ------------------------------------------------------------------------------- */
/* Under lock: a delivered batch's replaced samples (their names) and decoder counts join the
 * pipeline's stats. Counted at delivery, not when the work is done, so the stats describe what
 * the consumer got: batches prefetched and then discarded by a reset, or planned into the next
 * epoch and not yet taken, are not in them. */
static void note_delivered(stk_pipeline *pipe, const stk_batch *b) {
  for (int s = 0; s < b->plan.batch_size; s++) {
    if (!b->sample_failed[s]) continue;
    const char *src = b->plan.samples[s].source ? b->plan.samples[s].source : "(unnamed sample)";
    size_t need = strlen(src) + 2;
    if (pipe->skipped_len + need > pipe->skipped_cap) {
      size_t cap = (pipe->skipped_cap + need) * 2;
      char *bigger = realloc(pipe->skipped_names, cap);
      if (bigger) {
        pipe->skipped_names = bigger;
        pipe->skipped_cap = cap;
      }
    }
    if (pipe->skipped_len + need <= pipe->skipped_cap) {
      memcpy(pipe->skipped_names + pipe->skipped_len, src, need - 2);
      pipe->skipped_len += need - 2;
      pipe->skipped_names[pipe->skipped_len++] = '\n';
      pipe->skipped_names[pipe->skipped_len] = '\0';
    }
    pipe->skipped_files++;
  }
  stk_pipeline_stats *d = &pipe->decoder_stats;
  d->decoded_hw += b->decoded.decoded_hw;
  d->decoded_cuda += b->decoded.decoded_cuda;
  d->decoded_hybrid += b->decoded.decoded_hybrid;
  d->decoded_cpu += b->decoded.decoded_cpu;
  d->skipped_files += b->decoded.skipped_files;
}

stk_status stk__executor_next(stk_pipeline *pipe, stk_batch **out) {
  uint64_t asked = now_ns();
  pthread_mutex_lock(&pipe->lock);
  stk_batch *b = NULL;
  stk_status st = STK_OK;
  for (;;) {
    if (pipe->epoch_planned_all && pipe->next_deliver_seq >= pipe->epoch_end_seq) {
      st = STK_EOF_EPOCH;
      break;
    }
    b = NULL;
    for (int i = 0; i < pipe->num_slots; i++) {
      stk_batch *c = pipe->slots[i];
      if (c->state == STK__SLOT_READY && c->seq == pipe->next_deliver_seq && !c->cancelled) b = c;
    }
    if (b) break;
    if (pipe->sched_status != STK_OK) {
      int waiting = 0; /* batches planned before the failure still come first */
      for (int i = 0; i < pipe->num_slots; i++)
        waiting |= pipe->slots[i]->state != STK__SLOT_FREE && pipe->slots[i]->state != STK__SLOT_HELD &&
                   pipe->slots[i]->seq == pipe->next_deliver_seq;
      if (!waiting) {
        st = pipe->sched_status;
        stk__pipe_error(pipe, "%s", pipe->sched_error);
        break;
      }
    }
    pthread_cond_wait(&pipe->cond_done, &pipe->lock);
  }
  uint64_t got = now_ns();
  __atomic_fetch_add(&pipe->next_wait_ns, got - asked, __ATOMIC_RELAXED);
  if (b) {
    pipe->next_deliver_seq++;
    pipe->in_flight--;
    pthread_cond_broadcast(&pipe->cond_sched);
    if (b->status != STK_OK) {
      st = b->status;
      stk__pipe_error(pipe, "%s", b->error);
      b->state = STK__SLOT_FREE;
      b = NULL;
    } else {
      b->state = STK__SLOT_HELD;
      __atomic_store_n(&b->refcount, 1, __ATOMIC_RELEASE);
      note_delivered(pipe, b);
      pipe->batches_delivered++;
      pipe->images_delivered += (uint64_t)b->plan.valid_samples;
      if (pipe->batches_delivered == 1) pipe->first_batch_time = stk__now();
      /* Warm-up: every initial slot used twice (the first round sets the buffers' high-water
       * marks, the second grows each slot to them: pregrow_slot). */
      int warm = 2 * initial_slots(pipe);
      if (!pipe->warmup_done && pipe->batches_delivered >= (uint64_t)warm) {
        pipe->warmup_done = 1;
        pipe->alloc_at_warmup = __atomic_load_n(&pipe->alloc_count, __ATOMIC_RELAXED);
      }
    }
  }
  pthread_mutex_unlock(&pipe->lock);
  *out = b;
  return st;
}

/* At an epoch's end the scheduler has usually planned into the next epoch already: reset only
 * moves the consumer there, and the prefetched batches stay. Mid-epoch (or when the scheduler
 * could not move the reader on) in-flight batches are discarded and the reader restarts at the
 * next epoch. */
stk_status stk__executor_reset(stk_pipeline *pipe) {
  stk__node *reader = &pipe->nodes[pipe->reader];
  pthread_mutex_lock(&pipe->lock);
  while (pipe->sched_busy) pthread_cond_wait(&pipe->cond_done, &pipe->lock);
  if (pipe->epoch_planned_all && pipe->next_deliver_seq >= pipe->epoch_end_seq && pipe->plan_epoch == pipe->epoch + 1) {
    pipe->epoch++;
    pipe->epoch_planned_all = pipe->ahead_planned_all;
    pipe->epoch_end_seq = pipe->ahead_end_seq;
    pipe->ahead_planned_all = 0;
    pthread_cond_broadcast(&pipe->cond_sched);
    pthread_mutex_unlock(&pipe->lock);
    return STK_OK;
  }
  pipe->planning_paused = 1;
  for (int i = 0; i < pipe->num_slots; i++)
    if (pipe->slots[i]->state != STK__SLOT_HELD && pipe->slots[i]->state != STK__SLOT_FREE) pipe->slots[i]->cancelled = 1;
  /* Wait until no batch is being planned or processed and the reader is free. */
  for (;;) {
    int busy = pipe->sched_busy;
    for (int i = 0; i < pipe->num_slots; i++)
      busy |= pipe->slots[i]->state == STK__SLOT_RUNNING || pipe->slots[i]->state == STK__SLOT_GPU;
    if (!busy) break;
    pthread_cond_wait(&pipe->cond_done, &pipe->lock);
  }
  for (int i = 0; i < pipe->num_slots; i++)
    if (pipe->slots[i]->state == STK__SLOT_READY) pipe->slots[i]->state = STK__SLOT_FREE;
  pipe->epoch++;
  pipe->plan_epoch = pipe->epoch;
  pipe->epoch_planned_all = 0;
  pipe->ahead_planned_all = 0;
  pipe->roll_failed = 0;
  pipe->in_flight = 0;
  pipe->next_deliver_seq = pipe->next_plan_seq;
  pipe->sched_status = STK_OK;
  pthread_mutex_unlock(&pipe->lock);
  stk_status st = STK_OK;
  if (reader->op.impl->reset) st = reader->op.impl->reset(&reader->op, pipe->epoch);
  pthread_mutex_lock(&pipe->lock);
  pipe->planning_paused = 0;
  pthread_cond_broadcast(&pipe->cond_sched);
  pthread_mutex_unlock(&pipe->lock);
  if (st != STK_OK) stk__pipe_error(pipe, "operator %s: reset to epoch %llu failed: %s", reader->op.name,
                                    (unsigned long long)pipe->epoch, stk_strerror(st));
  return st;
}

/* ---- Batches -------------------------------------------------------------------------------- */
void stk__batch_ref(stk_batch *batch) { __atomic_fetch_add(&batch->refcount, 1, __ATOMIC_ACQ_REL); }

stk_status stk_batch_record_stream(stk_batch *batch, void *cuda_stream) {
  if (!batch) return STK_EINVAL;
  if (!batch->consumer_event) return STK_ENOTSUP;
  stk_status st = stk__gpu_event_record(batch->consumer_event, cuda_stream);
  if (st == STK_OK) __atomic_store_n(&batch->consumer_recorded, 1, __ATOMIC_RELEASE);
  return st;
}

void stk_batch_release(stk_batch *batch) {
  if (!batch) return;
  pthread_mutex_lock(&orphan_lock);
  if (__atomic_sub_fetch(&batch->refcount, 1, __ATOMIC_ACQ_REL) == 0) {
    stk_pipeline *pipe = batch->pipe;
    if (!pipe) {
      free_slot(batch, batch->num_lists_copy, batch->num_outputs_copy);
    } else {
      pthread_mutex_lock(&pipe->lock);
      batch->state = STK__SLOT_FREE;
      pthread_cond_broadcast(&pipe->cond_sched);
      pthread_mutex_unlock(&pipe->lock);
    }
  }
  pthread_mutex_unlock(&orphan_lock);
}
