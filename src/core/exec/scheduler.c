/* src/core/exec/scheduler.c: the scheduler thread. It waits until fewer than
 * max(1, prefetch_queue_depth) batches are in flight and a batch slot is free (slots.c makes one
 * when the consumer holds all of them), calls the reader's plan_batch (serially, in order) and
 * queues one sample-chain task per sample. Once the consumer's epoch is all planned it moves the
 * reader to the next epoch and goes on planning (at most one epoch ahead), so the queue stays full
 * across an epoch boundary. With skip_bad_files it plans from the refill cursor (refill.c) and
 * also serves the refills of batches whose samples failed, in sequence. Once per batch, not per
 * sample. */
#include <stdio.h>
#include <string.h>

#include "core/exec/exec.h"

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
  if (st == STK_OK) {
    stk__exec_refill_reset(pipe, next, 0, 1); /* skip_bad_files: the cursor reads the new epoch */
    pipe->plan_epoch = next;
  } else {
    pipe->roll_failed = 1;
  }
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

int stk__exec_reader_starved(const stk_pipeline *pipe) {
  stk__op *reader = &pipe->nodes[pipe->reader].op;
  return reader->impl->input_ready && !reader->impl->input_ready(reader);
}

/* Under lock: 1 while there is nothing to do (paused by a reset, failed, or the prefetch queue is
 * full or the epoch planned and the reader cannot move on yet, or a fed reader has no data). */
static int nothing_to_do(const stk_pipeline *pipe, int max_in_flight) {
  return pipe->planning_paused || pipe->sched_status != STK_OK ||
         (!can_roll(pipe) && (planned_all(pipe) || pipe->in_flight >= max_in_flight || stk__exec_reader_starved(pipe)));
}

/* Outside the lock, with slot b reserved (RUNNING) and pipe->sched_busy set: waits until the GPU
 * no longer reads the slot, then asks the reader to plan it. The GPU may still read this slot's
 * pinned inputs and stages (the consumer released it without waiting for the batch's event): they
 * are rewritten only after that work is done. In steady state the event has long completed. */
static stk_status plan_slot(stk_pipeline *pipe, stk__node *reader, stk_batch *b, uint64_t epoch, int warming_up,
                            char *err, size_t err_size) {
  uint64_t waited = stk__exec_now_ns();
  stk__exec_slot_wait_readers(b);
  b->planned_ns = stk__exec_now_ns();
  __atomic_fetch_add(&pipe->slot_wait_ns, b->planned_ns - waited, __ATOMIC_RELAXED);
  stk__exec_dense_reset(pipe, b);              /* own buffers back before shrink-back sees them */
  stk__exec_slot_recycle(pipe, b, warming_up); /* shrink-back; pregrow during warm-up */

  b->plan.epoch = epoch;
  b->plan.batch_size = pipe->options.batch_size;
  b->plan.valid_samples = b->plan.batch_size;
  b->plan.last_in_epoch = 0;
  memset(b->plan.samples, 0, sizeof *b->plan.samples * (size_t)b->plan.batch_size);
  memset(b->sample_failed, 0, sizeof *b->sample_failed * (size_t)b->plan.batch_size);
  memset(&b->decoded, 0, sizeof b->decoded);
  stk_status st = pipe->refill ? stk__exec_refill_plan(pipe, &b->plan, b->sample_failed, err, err_size) /* refill.c */
                               : reader->op.impl->plan_batch(&reader->op, &b->plan, err, err_size);
  if (st == STK_OK && pipe->num_side) st = stk__exec_side_plan(pipe, b, err, err_size); /* side_readers.c */
  if (st == STK_OK && (b->plan.batch_size < 0 || b->plan.batch_size > pipe->options.batch_size)) {
    snprintf(err, err_size, "planned %d samples, more than batch_size %d", b->plan.batch_size,
             pipe->options.batch_size);
    st = STK_EINTERNAL;
  }
  /* A fed reader's batch may be smaller (exec_dynamic): the host lists count its samples (GPU
   * lists get theirs from the operators that fill them, which size launches by them). */
  for (int l = 0; st == STK_OK && l < pipe->num_lists; l++)
    if (b->lists[l].device != STK_DEVICE_GPU) b->lists[l].count = b->plan.batch_size;
  return st;
}

/* Under lock: a planned batch gets its sequence number and its sample-chain tasks. */
static void queue_batch(stk_pipeline *pipe, stk_batch *b) {
  b->seq = pipe->next_plan_seq++;
  b->cancelled = 0;
  b->status = STK_OK;
  b->error[0] = '\0';
  b->phase = STK__PHASE_SAMPLE_CHAINS;
  b->refill_state = STK__REFILL_RUNNING;
  b->dropped = 0;
  stk__exec_clear_bad_samples(b);
  pipe->in_flight++;
  if (b->plan.last_in_epoch) mark_planned_all(pipe, pipe->next_plan_seq);
  int tasks = 0; /* samples the refill marked as fill (the epoch's end) run no chain */
  for (int s = 0; s < b->plan.batch_size; s++) tasks += b->sample_failed[s] == 0;
  b->pending = tasks;
  for (int s = 0; s < b->plan.batch_size; s++) {
    if (b->sample_failed[s]) continue;
    if (!stk__exec_task_push(pipe, (stk__task){.kind = STK__TASK_SAMPLE_CHAIN, .batch = b, .index = s})) {
      stk__exec_fail_batch(b, STK_ENOMEM, "out of memory queueing tasks");
      for (int r = s; r < b->plan.batch_size; r++) b->pending -= b->sample_failed[r] == 0;
      break;
    }
  }
  if (b->pending == 0) stk__exec_finish_sample_phase(pipe, b);
  pthread_cond_broadcast(&pipe->cond_work);
}

/* Under lock: plans one batch into a free slot (the lock is dropped while the reader plans). */
static void plan_next_batch(stk_pipeline *pipe, stk__node *reader) {
  stk_batch *b = stk__exec_slot_take_free(pipe);
  if (!b) {
    pipe->sched_status = STK_ENOMEM;
    snprintf(pipe->sched_error, sizeof pipe->sched_error, "out of memory making a batch slot");
    pthread_cond_broadcast(&pipe->cond_done);
    return;
  }
  b->state = STK__SLOT_RUNNING; /* reserved while we plan outside the lock */
  pipe->sched_busy = 1;
  uint64_t epoch = pipe->plan_epoch;
  int warming_up = !pipe->warmup_done;
  pthread_mutex_unlock(&pipe->lock);
  char err[768] = "";
  stk_status st = plan_slot(pipe, reader, b, epoch, warming_up, err, sizeof err);
  pthread_mutex_lock(&pipe->lock);
  pipe->sched_busy = 0;
  pthread_cond_broadcast(&pipe->cond_done); /* a reset may wait for the reader to be free */
  if (st == STK_EOF_EPOCH) {                /* the reader had nothing left for this epoch */
    b->state = STK__SLOT_FREE;
    mark_planned_all(pipe, pipe->next_plan_seq);
    return;
  }
  if (st != STK_OK) {
    b->state = STK__SLOT_FREE;
    pipe->sched_status = st;
    snprintf(pipe->sched_error, sizeof pipe->sched_error, "operator %s (%s), planning batch %llu: %s", reader->op.name,
             reader->op_type, (unsigned long long)(pipe->next_plan_seq), err[0] ? err : stk_strerror(st));
    return;
  }
  queue_batch(pipe, b);
}

void *stk__exec_scheduler_main(void *arg) {
  stk_pipeline *pipe = arg;
  stk__node *reader = &pipe->nodes[pipe->reader];
  int max_in_flight = stk__exec_prefetch_depth(pipe);
  pthread_mutex_lock(&pipe->lock);
  for (;;) {
    stk_batch *refill = NULL; /* skip_bad_files: a batch whose bad samples get replacements now */
    while (!pipe->stopping && !(refill = stk__exec_refill_due(pipe)) && nothing_to_do(pipe, max_in_flight))
      pthread_cond_wait(&pipe->cond_sched, &pipe->lock);
    if (pipe->stopping) break;
    if (refill) {
      stk__exec_refill_serve(pipe, refill);
      continue;
    }
    if (can_roll(pipe)) {
      pipe->sched_busy = 1;
      roll_epoch(pipe, reader);
      pipe->sched_busy = 0;
      pthread_cond_broadcast(&pipe->cond_done);
      continue;
    }
    plan_next_batch(pipe, reader);
  }
  pthread_mutex_unlock(&pipe->lock);
  return NULL;
}
