/* src/core/exec/exec.h: private to the executor's rooms (the .c files of src/core/exec);
 * nothing else includes it. Who does what:
 *   pool.c       the task ring, the worker threads' loop, per-thread scratch, stk__parallel_for
 *   affinity.c   which CPU each worker is pinned to (options.affinity_mask, STOKER_AFFINITY_MASK)
 *   slots.c      batch slots: make, reuse, free, orphan; stk_batch_release
 *   scheduler.c  the scheduler thread: plans batches with the reader, queues their sample tasks
 *   side_readers.c  the further readers of a pipeline: their plans per batch, their positions
 *   cpu_stage.c  the per-sample CPU chains, the end of a batch's sample round, the dense copies
 *   refill.c     skip_bad_files: the refill cursor (bad samples replaced by the next good ones of
 *                the epoch's order, batches completed in sequence) and the epoch-end fill
 *   quarantine.c skip_bad_files: the record of bad files (each once per run, with the reason)
 *   gpu_stage.c  the GPU stage thread: uploads and run_batch of the mixed/gpu nodes
 *   executor.c   start/stop/next/reset and the stats (exec/executor.h)
 * Locking: all shared state is under pipe->lock except the per-sample work itself, which touches
 * only its own sample's tensors; functions below say "under lock" when they expect it held. */
#ifndef STOKER_CORE_EXEC_EXEC_H
#define STOKER_CORE_EXEC_EXEC_H

#include <stdint.h>
#include <time.h>

#include "core/engine.h"
#include "core/exec/executor.h"
#include "device/device.h"

/* What a worker task does. */
typedef enum stk__task_kind {
  STK__TASK_SAMPLE_CHAIN = 0, /* the CPU chain of sample `index` of `batch` (cpu_stage.c) */
  STK__TASK_DENSE_COPY = 1,   /* output index / batch_size, sample index % batch_size into its dense
                                 batch tensor (cpu_stage.c) */
  STK__TASK_PARALLEL_FOR = 2, /* item `index` of a stk__parallel_for job (pool.c) */
  STK__TASK_PREPARE = 3,      /* the mixed nodes' prepare_batch for `batch` (gpu_stage.c) */
  STK__TASK_PACK_COPY = 4     /* list index / batch_size, sample index % batch_size into the list's
                                 upload staging (stk__upload_pack, cpu_stage.c) */
} stk__task_kind;

/* A stk__parallel_for job: lives on the caller's stack until every item is done. */
typedef struct stk__pfor {
  stk_status (*fn)(void *arg, int i, int thread_index);
  void *arg;
  int remaining;     /* under lock */
  stk_status status; /* first error, under lock */
} stk__pfor;

typedef struct stk__task {
  stk__task_kind kind;
  struct stk_batch *batch; /* sample chains and dense copies */
  int index;
  stk__pfor *pfor; /* parallel_for items */
} stk__task;

static inline uint64_t stk__exec_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static inline double stk__exec_now_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ---- pool.c --------------------------------------------------------------------------------- */
/* Under lock: queues a task (parallel_for items go to the front: the GPU stage waits on them).
 * 0 on out-of-memory. */
STK_INTERNAL int stk__exec_task_push(stk_pipeline *pipe, stk__task task);
/* The worker thread (arg: its stk__worker). */
STK_INTERNAL void *stk__exec_worker_main(void *arg);
/* Frees the worker's scratch buffers (after it was joined). */
STK_INTERNAL void stk__exec_worker_free_scratch(stk__worker *w);

/* ---- affinity.c ----------------------------------------------------------------------------- */
/* Decides pipe->workers[i].cpu for every worker (before they start); warnings to last_error. */
STK_INTERNAL void stk__exec_plan_worker_cpus(stk_pipeline *pipe);
/* On the worker's own thread: pins it to w->cpu (w->cpu = -1 when that fails). */
STK_INTERNAL void stk__exec_pin_self(stk__worker *w);

/* ---- slots.c -------------------------------------------------------------------------------- */
/* max(1, prefetch_queue_depth): batches planned ahead of the consumer. */
STK_INTERNAL int stk__exec_prefetch_depth(const stk_pipeline *pipe);
/* Slots made at start (see slots.c). */
STK_INTERNAL int stk__exec_initial_slots(const stk_pipeline *pipe);
/* At start, before any slot is made: the slots' per-sample bookkeeping (batch_size x the initial
 * slots) must fit the host memory budget; STK_ERANGE with a message naming batch_size and
 * prefetch_queue_depth otherwise (a huge --batch or --prefetch used to allocate for minutes). */
STK_INTERNAL stk_status stk__exec_slots_check(stk_pipeline *pipe);
/* A new slot for pipe, or NULL on out-of-memory. */
STK_INTERNAL stk_batch *stk__exec_slot_new(stk_pipeline *pipe);
/* Frees a slot and everything it owns (waits for GPU work still reading it first). */
STK_INTERNAL void stk__exec_slot_free(stk_batch *b, int num_lists, int num_outputs);
/* Under lock: a free slot to plan into, made when needed; NULL on out-of-memory. */
STK_INTERNAL stk_batch *stk__exec_slot_take_free(stk_pipeline *pipe);
/* Waits until no GPU work (the batch's, the consumer's recorded stream) reads the slot. */
STK_INTERNAL void stk__exec_slot_wait_readers(stk_batch *b);
/* The pinned lists' shrink rule (pipe->pinned_shrink): the capacity a pinned sample buffer of
 * `capacity` keeps after a batch whose largest use of it was `peak` (slots.c). */
STK_INTERNAL size_t stk__exec_pinned_keep(size_t capacity, size_t peak);
/* Warm-up, before the slot is planned: grows its host buffers to their outputs' high-water marks. */
STK_INTERNAL void stk__exec_slot_pregrow(stk_pipeline *pipe, stk_batch *b);
/* Scheduler thread, before a used slot is planned again (its GPU readers done): each host list's
 * last batch joins the shrink-back window, buffers above STK__SHRINK_FACTOR x the window's need
 * shrink to it; during warm-up the slot then pregrows. */
STK_INTERNAL void stk__exec_slot_recycle(stk_pipeline *pipe, stk_batch *b, int warming_up);
/* A sample's operator failed: when one of its outputs was refused by the host memory budget,
 * writes the budget's message (sample, file, size, output, operator, budget) to err; returns 1. */
STK_INTERNAL int stk__exec_budget_explain(stk_pipeline *pipe, const stk__node *node, stk__tensor **outputs,
                                          int num_outputs, const stk__sample_plan *sp, char *err, size_t err_size);
/* After every thread is joined: frees the slots, orphaning those the consumer still holds. */
STK_INTERNAL void stk__exec_slots_free_all(stk_pipeline *pipe);

/* ---- scheduler.c ---------------------------------------------------------------------------- */
STK_INTERNAL void *stk__exec_scheduler_main(void *arg); /* arg: the pipeline */
/* 1 when the reader is fed from outside (external_source) and has no fed batch waiting. */
STK_INTERNAL int stk__exec_reader_starved(const stk_pipeline *pipe);

/* ---- side_readers.c ------------------------------------------------------------------------ */
/* Scheduler thread, outside the lock (sched_busy set), after the epoch reader planned b: every
 * further reader plans its part of b (b->side_plans), moving to its next epoch at its end. err
 * names the reader. */
STK_INTERNAL stk_status stk__exec_side_plan(stk_pipeline *pipe, stk_batch *b, char *err, size_t err_size);
/* Under lock, at delivery of b: the consumer's position in every further reader. */
STK_INTERNAL void stk__exec_side_delivered(stk_pipeline *pipe, const stk_batch *b);

/* ---- cpu_stage.c ---------------------------------------------------------------------------- */
/* Per batch and CPU pipeline output: the shape its samples are written in place at, straight into
 * the dense batch tensor (stk__sample_output_resize). The first sample to ask decides (under lock);
 * a sample of another shape takes its own buffer and is copied as before if the batch turns out
 * dense after all. */
enum { STK__CLAIM_NONE = 0, STK__CLAIM_HELD = 1, STK__CLAIM_OFF = 2 };
typedef struct stk__dense_claim {
  int state; /* STK__CLAIM_* */
  stk_dtype dtype;
  int ndim;
  int64_t shape[STK_MAX_DIMS];
  size_t nbytes;
} stk__dense_claim;

/* Scheduler thread, before slot b is planned (nobody else touches it): its sample tensors take
 * their own buffers back, its claims are cleared and its upload packs marked not ready. */
STK_INTERNAL void stk__exec_dense_reset(stk_pipeline *pipe, stk_batch *b);
/* Under lock: records the batch's first error (later ones are dropped). */
STK_INTERNAL void stk__exec_fail_batch(stk_batch *b, stk_status st, const char *msg);
/* Under lock, for a sample-chain or dense-copy task just taken from the ring: drops the lock
 * while it runs the work, takes it again, and finishes the batch's round when this was its last
 * task. */
STK_INTERNAL void stk__exec_cpu_task(stk_pipeline *pipe, stk__worker *w, stk__task task);
/* Under lock: the batch's CPU part is complete; it goes to the GPU stage or becomes READY. */
STK_INTERNAL void stk__exec_cpu_part_done(stk_pipeline *pipe, stk_batch *b);

/* ---- refill.c (skip_bad_files) --------------------------------------------------------------- */
typedef struct stk__refill stk__refill;         /* the refill cursor (refill.c) */
typedef struct stk__quarantine stk__quarantine; /* the record of bad files (quarantine.c) */

/* b->sample_failed values. */
enum { STK__SAMPLE_BAD = 1, STK__SAMPLE_FILL = 2 };
/* b->refill_state: batches are completed in sequence (seq order), see refill.c. */
enum {
  STK__REFILL_RUNNING = 0, /* sample chains under way */
  STK__REFILL_WAITING = 1, /* chains done, bad samples wait for the scheduler's replacements */
  STK__REFILL_SEALED = 2   /* complete: every sample good or a fill copy (or the batch failed) */
};

/* One failed sample of a batch, recorded when its chain failed (under lock). */
typedef struct stk__bad_sample {
  char *source; /* owned copy of the sample's name (the plan's source, or the reader's ctx name), or NULL */
  int64_t sample_id;
  uint64_t epoch;
  char *reason; /* owned: the engine's message (file, operator, sample, detail) */
} stk__bad_sample;

/* The refill cursor at start (NULL when skip_bad_files is off); STK_ENOMEM. */
STK_INTERNAL stk_status stk__exec_refill_new(stk_pipeline *pipe);
STK_INTERNAL void stk__exec_refill_free(stk_pipeline *pipe);
/* Scheduler thread or a reset with the scheduler held: the cursor restarts at epoch `epoch` (the
 * reader was just reset to it); seq is the sequence number of that epoch's first batch. */
STK_INTERNAL void stk__exec_refill_reset(stk_pipeline *pipe, uint64_t epoch, uint64_t seq, int keep_seal);
/* At start, or under lock in a seek after the reset above: a checkpoint's cursor state
 * (pipe->refill_resume, when has_refill_resume) becomes the cursor's: it continues at the
 * consumer's batch pipe->pos_batch of pipe->epoch, from the reader batch the reader was seeked to. */
STK_INTERNAL void stk__exec_refill_resume(stk_pipeline *pipe);
/* Outside the lock, on the scheduler thread (pipe->sched_busy set): plans a batch from the cursor
 * instead of the reader's plan_batch (same contract: STK_EOF_EPOCH when the epoch has no sample left). */
STK_INTERNAL stk_status stk__exec_refill_plan(stk_pipeline *pipe, stk__batch_plan *plan, int *sample_failed, char *err,
                                              size_t err_size);
/* Under lock: the batch whose bad samples may be replaced now (the lowest unsealed seq, when the
 * first pass has planned far enough that the choice does not depend on timing), or NULL. */
STK_INTERNAL stk_batch *stk__exec_refill_due(stk_pipeline *pipe);
/* Under lock, scheduler thread: gives batch b (from stk__exec_refill_due) its replacements; drops
 * the lock while the cursor reads the reader. */
STK_INTERNAL void stk__exec_refill_serve(stk_pipeline *pipe, stk_batch *b);
/* Under lock, when b's sample chains are done and it has no bad sample left: fill samples become
 * copies of good ones (valid samples first), or the batch is dropped when it has none. */
STK_INTERNAL stk_status stk__exec_refill_resolve_fills(stk_pipeline *pipe, stk_batch *b, char *err, size_t err_size);
/* Under lock: records a failed sample of b (its name, copied: NULL when it has none, and the
 * reason) for the quarantine record. */
STK_INTERNAL void stk__exec_note_bad_sample(stk_batch *b, const stk__sample_plan *sp, const char *source,
                                            const char *reason);
/* Under lock: forgets b's recorded failed samples (the slot is planned again or freed). */
STK_INTERNAL void stk__exec_clear_bad_samples(stk_batch *b);

/* ---- quarantine.c (skip_bad_files) ----------------------------------------------------------- */
/* At start: opens options.bad_files_log (created/truncated; stk__open_regular's rule: a directory
 * or a FIFO without a reader is refused at once); the error names the path. */
STK_INTERNAL stk_status stk__exec_quarantine_open(stk_pipeline *pipe);
/* Under lock, at delivery (or when a dropped batch is passed): each of b's bad files not yet in the
 * record joins it (name list, JSON line, the log file) and counts in pipe->skipped_files. STK_EIO
 * (pipeline error naming the log) once a write to the log has failed (a full disk, /dev/full):
 * the record would be lost, so the run stops instead of going on without it. */
STK_INTERNAL stk_status stk__exec_quarantine_note(stk_pipeline *pipe, const stk_batch *b);

/* ---- cpu_stage.c, continued ------------------------------------------------------------------ */
/* Under lock: every sample chain of b is done: refill wait, fills, the consumer's views, round 2. */
STK_INTERNAL void stk__exec_finish_sample_phase(stk_pipeline *pipe, stk_batch *b);
/* Under lock: sample s of b takes a copy of sample `good` in every CPU node output and mixed stage.
 * On failure err names the file, the size and, when it refused, the host memory budget. */
STK_INTERNAL stk_status stk__exec_copy_sample(stk_pipeline *pipe, stk_batch *b, int s, int good, char *err,
                                              size_t err_size);

/* ---- gpu_stage.c ---------------------------------------------------------------------------- */
STK_INTERNAL void *stk__exec_gpu_main(void *arg); /* arg: the pipeline */
/* Under lock: b's CPU part is done and b goes on to the GPU stage; when a node has prepare_batch,
 * a worker runs those first (STK__TASK_PREPARE), then b joins the GPU stage's queue. */
STK_INTERNAL void stk__exec_to_gpu_stage(stk_pipeline *pipe, stk_batch *b);
/* Under lock, a STK__TASK_PREPARE just taken: drops the lock while the prepare_batch hooks run. */
STK_INTERNAL void stk__exec_prepare_task(stk_pipeline *pipe, int worker_index, stk_batch *b);

#endif
