/* src/core/exec/pool.c: the worker pool. A ring of tasks under pipe->lock, the worker threads
 * that take them, each worker's scratch buffers (stk__scratch_get) and stk__parallel_for, which
 * the GPU stage's operators use for CPU sub-work. HOT PATH: every task goes through the worker
 * loop; the work of sample chains and dense copies is in cpu_stage.c. */
#include <stdlib.h>

#include "core/exec/exec.h"

void *stk__scratch_get(stk__sample_ctx *ctx, int slot, size_t bytes) {
  stk__worker *w = ctx->thread_scratch;
  if (!w || slot < 0 || slot >= STK__SCRATCH_SLOTS) return NULL;
  if (w->scratch_cap[slot] < bytes) {
    size_t want = bytes + bytes / 4 + 64;
    void *p = realloc(w->scratch[slot], want);
    if (!p) return NULL;
    stk__host_budget *budget = w->pipe ? &w->pipe->host_budget : NULL; /* counted, never refused */
    stk__host_budget_count(budget, want);
    stk__host_budget_give(budget, w->scratch_cap[slot]);
    w->scratch[slot] = p;
    w->scratch_cap[slot] = want;
    if (ctx->alloc_count) __atomic_fetch_add(ctx->alloc_count, 1, __ATOMIC_RELAXED);
  }
  return w->scratch[slot];
}

void stk__exec_worker_free_scratch(stk__worker *w) {
  for (int k = 0; k < STK__SCRATCH_SLOTS; k++) {
    free(w->scratch[k]);
    if (w->pipe && w->scratch[k]) stk__host_budget_give(&w->pipe->host_budget, w->scratch_cap[k]);
    w->scratch[k] = NULL;
    w->scratch_cap[k] = 0;
  }
}

/* ---- The task ring -------------------------------------------------------------------------- */
/* Under lock: doubles the ring (the first one holds 1024 tasks). */
static int grow_ring(stk_pipeline *pipe) {
  size_t cap = pipe->task_cap ? pipe->task_cap * 2 : 1024;
  stk__task *bigger = malloc(cap * sizeof *bigger);
  if (!bigger) return 0;
  for (size_t i = 0; i < pipe->task_count; i++) bigger[i] = pipe->tasks[(pipe->task_head + i) % pipe->task_cap];
  free(pipe->tasks);
  pipe->tasks = bigger;
  pipe->task_cap = cap;
  pipe->task_head = 0;
  __atomic_fetch_add(&pipe->alloc_count, 1, __ATOMIC_RELAXED);
  return 1;
}

int stk__exec_task_push(stk_pipeline *pipe, stk__task task) {
  if (pipe->task_count == pipe->task_cap && !grow_ring(pipe)) return 0;
  if (task.kind == STK__TASK_PARALLEL_FOR || task.kind == STK__TASK_PREPARE || task.kind == STK__TASK_PACK_COPY) {
    /* the GPU stage waits on parallel_for items, on prepared batches and on packed uploads: they
     * jump the queue (a prepare task behind the next batches' sample chains would leave the JPEG
     * engines idle; a batch's pack copies, ~0.1 ms each, would wait for the chains of every
     * batch planned after it) */
    pipe->task_head = (pipe->task_head + pipe->task_cap - 1) % pipe->task_cap;
    pipe->tasks[pipe->task_head] = task;
  } else {
    pipe->tasks[(pipe->task_head + pipe->task_count) % pipe->task_cap] = task;
  }
  pipe->task_count++;
  return 1;
}

/* Under lock, with a task queued: takes the first one. */
static stk__task pop_task(stk_pipeline *pipe) {
  stk__task t = pipe->tasks[pipe->task_head];
  pipe->task_head = (pipe->task_head + 1) % pipe->task_cap;
  pipe->task_count--;
  return t;
}

/* Under lock: runs one parallel_for item outside the lock, as worker thread_index; the first error
 * wins. */
static void run_pfor_item(stk_pipeline *pipe, int thread_index, stk__task t) {
  pthread_mutex_unlock(&pipe->lock);
  stk_status st = t.pfor->fn(t.pfor->arg, t.index, thread_index);
  pthread_mutex_lock(&pipe->lock);
  if (st != STK_OK && t.pfor->status == STK_OK) t.pfor->status = st;
  if (--t.pfor->remaining == 0) pthread_cond_broadcast(&pipe->cond_done);
}

void *stk__exec_worker_main(void *arg) {
  stk__worker *w = arg;
  stk_pipeline *pipe = w->pipe;
  stk__exec_pin_self(w);
  pthread_mutex_lock(&pipe->lock);
  for (;;) {
    while (!pipe->stopping && pipe->task_count == 0) pthread_cond_wait(&pipe->cond_work, &pipe->lock);
    if (pipe->stopping) break;
    stk__task t = pop_task(pipe);
    if (t.kind == STK__TASK_PARALLEL_FOR) run_pfor_item(pipe, w->index, t);
    else if (t.kind == STK__TASK_PREPARE) stk__exec_prepare_task(pipe, w->index, t.batch);
    else stk__exec_cpu_task(pipe, w, t);
  }
  pthread_mutex_unlock(&pipe->lock);
  return NULL;
}

/* ---- parallel_for --------------------------------------------------------------------------- */
/* Under lock, when the pipeline stops before the job is done: removes its not-yet-started items,
 * then waits for the ones a worker already runs (it finishes its current item before it exits),
 * so nobody touches `job` after the caller returns. */
static void withdraw_job(stk_pipeline *pipe, stk__pfor *job) {
  size_t kept = 0;
  for (size_t i = 0; i < pipe->task_count; i++) {
    stk__task t = pipe->tasks[(pipe->task_head + i) % pipe->task_cap];
    if (t.kind == STK__TASK_PARALLEL_FOR && t.pfor == job) {
      job->remaining--;
      continue;
    }
    pipe->tasks[(pipe->task_head + kept) % pipe->task_cap] = t;
    kept++;
  }
  pipe->task_count = kept;
  while (job->remaining > 0) pthread_cond_wait(&pipe->cond_done, &pipe->lock);
}

/* Under lock: takes the first queued item of job out of the ring into *t; 0 when none is queued. */
static int take_own_item(stk_pipeline *pipe, const stk__pfor *job, stk__task *t) {
  const size_t cap = pipe->task_cap;
  for (size_t i = 0; i < pipe->task_count; i++) {
    stk__task found = pipe->tasks[(pipe->task_head + i) % cap];
    if (found.kind != STK__TASK_PARALLEL_FOR || found.pfor != job) continue;
    for (size_t k = i; k > 0; k--) /* the tasks before it move up one place, in order */
      pipe->tasks[(pipe->task_head + k) % cap] = pipe->tasks[(pipe->task_head + k - 1) % cap];
    pipe->task_head = (pipe->task_head + 1) % cap;
    pipe->task_count--;
    *t = found;
    return 1;
  }
  return 0;
}

/* stk__parallel_for and stk__parallel_for_helped: helper is the thread index the caller runs its
 * own job's queued items as while it waits (-1 for stk__parallel_for_helped off a worker), or
 * STK__NO_HELP: it only waits. */
#define STK__NO_HELP (-2)
static stk_status parallel_for(stk__batch_ctx *ctx, int n, stk_status (*fn)(void *arg, int i, int thread_index),
                               void *arg, int helper) {
  stk_pipeline *pipe = (stk_pipeline *)ctx->pool;
  if (n <= 0) return STK_OK;
  if (!pipe) { /* standalone operator use: inline, in order */
    for (int i = 0; i < n; i++) {
      stk_status st = fn(arg, i, 0);
      if (st != STK_OK) return st;
    }
    return STK_OK;
  }
  stk__pfor job = {.fn = fn, .arg = arg, .remaining = n, .status = STK_OK};
  pthread_mutex_lock(&pipe->lock);
  for (int i = 0; i < n; i++) {
    if (!stk__exec_task_push(pipe, (stk__task){.kind = STK__TASK_PARALLEL_FOR, .index = i, .pfor = &job})) {
      job.remaining -= n - i;
      job.status = STK_ENOMEM;
      break;
    }
  }
  pthread_cond_broadcast(&pipe->cond_work);
  while (job.remaining > 0 && !pipe->stopping) {
    stk__task t;
    if (helper != STK__NO_HELP && take_own_item(pipe, &job, &t)) run_pfor_item(pipe, helper, t);
    else pthread_cond_wait(&pipe->cond_done, &pipe->lock);
  }
  stk_status st = job.remaining > 0 ? STK_ESHUTDOWN : job.status;
  if (job.remaining > 0) withdraw_job(pipe, &job);
  pthread_mutex_unlock(&pipe->lock);
  return st;
}

stk_status stk__parallel_for(stk__batch_ctx *ctx, int n, stk_status (*fn)(void *arg, int i, int thread_index),
                             void *arg) {
  /* Called on a worker (prepare_batch), the caller runs its own job's queued items while it waits:
   * a job never waits for a pool whose workers all wait (one worker, or a prepare task per worker). */
  return parallel_for(ctx, n, fn, arg, ctx->worker > 0 ? ctx->worker - 1 : STK__NO_HELP);
}

stk_status stk__parallel_for_helped(stk__batch_ctx *ctx, int n, stk_status (*fn)(void *arg, int i, int thread_index),
                                    void *arg) {
  return parallel_for(ctx, n, fn, arg, ctx->worker > 0 ? ctx->worker - 1 : -1);
}

static double thread_cpu_seconds(pthread_t thread) {
  clockid_t clock;
  return pthread_getcpuclockid(thread, &clock) == 0 ? stk__clock_seconds(clock) : 0.0;
}

double stk__pool_cpu_seconds(const stk__batch_ctx *ctx) {
  const stk_pipeline *pipe = (const stk_pipeline *)ctx->pool;
  if (!pipe) return stk__clock_seconds(CLOCK_PROCESS_CPUTIME_ID);
  double total = 0.0;
  for (int i = 0; i < pipe->num_workers; i++) total += thread_cpu_seconds(pipe->workers[i].thread);
  if (pipe->gpu_started) total += thread_cpu_seconds(pipe->gpu_thread);
  if (pipe->scheduler_started) total += thread_cpu_seconds(pipe->scheduler_thread);
  return total;
}
