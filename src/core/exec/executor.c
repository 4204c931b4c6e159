/* src/core/exec/executor.c: the executor's entry points (exec/executor.h): start and stop the
 * threads, hand batches to the consumer strictly in plan order, reset to the next epoch, and
 * report the executor's stats. Threads: num_threads workers (pool.c, pinned by affinity.c), one
 * scheduler (scheduler.c), and a GPU stage thread (gpu_stage.c) when the graph has mixed/gpu
 * nodes. stk__executor_next runs once per batch on the consumer's thread. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/exec/exec.h"
#include "base/tuning.h"

/* ---- Start / stop --------------------------------------------------------------------------- */
/* The GPU stage's device and stream, and the NUMA node pinned host lists go to. */
static stk_status open_gpu(stk_pipeline *pipe) {
  char err[512] = "";
  stk_status st = stk__gpu_open(pipe->options.device_id, err, sizeof err);
  if (st == STK_OK) st = stk__gpu_set_device(pipe->options.device_id);
  if (st == STK_OK) st = stk__gpu_stream_create(&pipe->cuda_stream, pipe->options.stream_priority);
  pipe->gpu_numa_node = stk__gpu_device_numa_node(pipe->options.device_id);
  if (st != STK_OK)
    stk__pipe_error(pipe, "GPU device %d: %s", pipe->options.device_id, err[0] ? err : stk_strerror(st));
  return st;
}

/* The initial slots and the GPU queue (room for every slot). */
static stk_status make_slots(stk_pipeline *pipe) {
  stk_status st = stk__exec_slots_check(pipe); /* batch_size x slots fit the budget */
  if (st != STK_OK) return st;
  int initial = stk__exec_initial_slots(pipe);
  /* Knobs (src/base/tuning.c; each 0 turns a finished A/B's other path back on). */
  pipe->dense_in_place = stk__tuning_int(STK__KNOB_DENSE_IN_PLACE) != 0;
  pipe->pinned_outputs = pipe->options.device_id >= 0 && stk__tuning_int(STK__KNOB_PINNED_OUTPUTS) != 0;
  pipe->pinned_shrink = stk__tuning_int(STK__KNOB_PINNED_SHRINK) != 0;
  pipe->packed_uploads = stk__tuning_int(STK__KNOB_PACKED_UPLOAD) != 0;
  if (stk__tuning_int(STK__KNOB_SHARED_UPLOAD) != 0 && pipe->has_gpu_nodes &&
      !(pipe->upload_shared = calloc((size_t)pipe->num_lists + 1, sizeof *pipe->upload_shared)))
    return STK_ENOMEM;
  pipe->out_was_dense = calloc((size_t)pipe->num_outputs + 1, sizeof *pipe->out_was_dense);
  if (!pipe->out_was_dense) return STK_ENOMEM;
  pipe->slots = calloc((size_t)initial, sizeof *pipe->slots);
  pipe->gpu_queue = calloc((size_t)initial, sizeof *pipe->gpu_queue);
  if (!pipe->slots || !pipe->gpu_queue) return STK_ENOMEM;
  pipe->gpu_queue_cap = initial;
  for (int i = 0; i < initial; i++) {
    if (!(pipe->slots[i] = stk__exec_slot_new(pipe))) return STK_ENOMEM;
    pipe->num_slots++;
  }
  return STK_OK;
}

static stk_status start_threads(stk_pipeline *pipe) {
  pipe->num_workers = pipe->options.num_threads;
  pipe->workers = calloc((size_t)pipe->num_workers, sizeof *pipe->workers);
  if (!pipe->workers) return STK_ENOMEM;
  for (int i = 0; i < pipe->num_workers; i++) {
    pipe->workers[i].pipe = pipe;
    pipe->workers[i].index = i;
  }
  stk__exec_plan_worker_cpus(pipe);
  pipe->build_time = stk__exec_now_seconds();
  for (int i = 0; i < pipe->num_workers; i++) {
    if (pthread_create(&pipe->workers[i].thread, NULL, stk__exec_worker_main, &pipe->workers[i]) != 0) {
      pipe->num_workers = i;
      stk__pipe_error(pipe, "could not start worker thread %d: %s", i, strerror(errno));
      return STK_ESYS;
    }
  }
  if (pipe->has_gpu_nodes) {
    if (pthread_create(&pipe->gpu_thread, NULL, stk__exec_gpu_main, pipe) != 0) return STK_ESYS;
    pipe->gpu_started = 1;
  }
  if (pthread_create(&pipe->scheduler_thread, NULL, stk__exec_scheduler_main, pipe) != 0) return STK_ESYS;
  pipe->scheduler_started = 1;
  return STK_OK;
}

stk_status stk__executor_start(stk_pipeline *pipe) {
  pthread_mutex_init(&pipe->lock, NULL);
  pthread_cond_init(&pipe->cond_work, NULL);
  pthread_cond_init(&pipe->cond_sched, NULL);
  pthread_cond_init(&pipe->cond_done, NULL);
  pthread_cond_init(&pipe->cond_gpu, NULL);
  pipe->lock_inited = 1;
  if (pipe->has_gpu_nodes) {
    stk_status st = open_gpu(pipe);
    if (st != STK_OK) return st;
  }
  stk_status st = make_slots(pipe);
  if (st == STK_OK) st = stk__exec_refill_new(pipe);
  if (st == STK_OK) st = stk__exec_quarantine_open(pipe);
  if (st == STK_OK) st = start_threads(pipe);
  return st;
}

/* After the threads are joined: everything the executor owns but the slots. */
static void free_executor(stk_pipeline *pipe) {
  free(pipe->slots);
  pipe->slots = NULL;
  pipe->num_slots = 0;
  free(pipe->gpu_queue);
  free(pipe->out_was_dense);
  pipe->out_was_dense = NULL;
  free(pipe->tasks);
  stk__exec_refill_free(pipe);
  for (int i = 0; i < pipe->num_workers; i++) stk__exec_worker_free_scratch(&pipe->workers[i]);
  free(pipe->workers);
  pthread_cond_destroy(&pipe->cond_work);
  pthread_cond_destroy(&pipe->cond_sched);
  pthread_cond_destroy(&pipe->cond_done);
  pthread_cond_destroy(&pipe->cond_gpu);
  pthread_mutex_destroy(&pipe->lock);
  pipe->lock_inited = 0;
}

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
  for (int l = 0; pipe->upload_shared && l < pipe->num_lists; l++) /* its readers ran on that stream */
    stk__gpu_tensor_list_free(&pipe->upload_shared[l]);
  free(pipe->upload_shared);
  pipe->upload_shared = NULL;
  stk__exec_slots_free_all(pipe); /* slots the consumer holds are orphaned, valid until released */
  free_executor(pipe);
}

/* ---- Consumer ------------------------------------------------------------------------------- */
/* Under lock: a delivered batch's decoder counts join the pipeline's stats (its bad files join the
 * quarantine record just before, in deliver). Counted at delivery, not when the work is done, so the stats describe what
 * the consumer got: batches prefetched and then discarded by a reset, or planned into the next
 * epoch and not yet taken, are not in them. */
static void note_delivered(stk_pipeline *pipe, const stk_batch *b) {
  stk_pipeline_stats *d = &pipe->decoder_stats;
  d->decoded_hw += b->decoded.decoded_hw;
  d->decoded_cuda += b->decoded.decoded_cuda;
  d->decoded_hybrid += b->decoded.decoded_hybrid;
  d->decoded_cpu += b->decoded.decoded_cpu;
  d->skipped_files += b->decoded.skipped_files;
  if (b->decoded.decoder_route[0]) memcpy(d->decoder_route, b->decoded.decoder_route, sizeof d->decoder_route);
}

/* Under lock: waits for the batch with the next sequence number. Returns STK_OK with *out set,
 * STK_EOF_EPOCH, or the scheduler's failure once the batches planned before it are delivered. */
static stk_status wait_next(stk_pipeline *pipe, stk_batch **out) {
  for (;;) {
    if (pipe->epoch_planned_all && pipe->next_deliver_seq >= pipe->epoch_end_seq) return STK_EOF_EPOCH;
    stk_batch *b = NULL;
    for (int i = 0; i < pipe->num_slots; i++) {
      stk_batch *c = pipe->slots[i];
      if (c->state == STK__SLOT_READY && c->seq == pipe->next_deliver_seq && !c->cancelled) b = c;
    }
    if (b && b->dropped) { /* skip_bad_files: no good sample was left for it (refill.c) */
      stk_status noted = stk__exec_quarantine_note(pipe, b);
      pipe->pos_epoch = b->plan.epoch; /* checkpoint position: passed, as the refill cursor counts it */
      pipe->pos_batch = b->plan.batch_index + 1;
      b->state = STK__SLOT_FREE;
      pipe->next_deliver_seq++;
      pipe->in_flight--;
      pthread_cond_broadcast(&pipe->cond_sched);
      if (noted != STK_OK) return noted; /* the bad files' log cannot be written */
      continue;
    }
    if (b) {
      *out = b;
      return STK_OK;
    }
    if (pipe->in_flight == 0 && !pipe->sched_busy && pipe->sched_status == STK_OK && !pipe->planning_paused &&
        stk__exec_reader_starved(pipe)) { /* nothing planned and nothing to plan: it would wait forever */
      stk__pipe_error(pipe,
                      "next: operator %s (%s) has no data for batch %llu: feed it first (stk_pipeline_feed_input)",
                      pipe->nodes[pipe->reader].op.name, pipe->nodes[pipe->reader].op_type,
                      (unsigned long long)pipe->next_deliver_seq);
      return STK_ESTATE;
    }
    if (pipe->sched_status != STK_OK) {
      int waiting = 0; /* batches planned before the failure still come first */
      for (int i = 0; i < pipe->num_slots; i++)
        waiting |= pipe->slots[i]->state != STK__SLOT_FREE && pipe->slots[i]->state != STK__SLOT_HELD &&
                   pipe->slots[i]->seq == pipe->next_deliver_seq;
      if (!waiting) {
        stk__pipe_error(pipe, "%s", pipe->sched_error);
        return pipe->sched_status;
      }
    }
    pthread_cond_wait(&pipe->cond_done, &pipe->lock);
  }
}

/* Under lock: hands batch b to the consumer (or frees its slot and returns its error). */
static stk_status deliver(stk_pipeline *pipe, stk_batch *b) {
  /* checkpoint position (src/core/checkpoint.c): what the consumer received, failed batches too */
  pipe->pos_epoch = b->plan.epoch;
  pipe->pos_batch = b->plan.batch_index + 1;
  stk__exec_side_delivered(pipe, b);
  pipe->next_deliver_seq++;
  pipe->in_flight--;
  pthread_cond_broadcast(&pipe->cond_sched);
  if (b->status != STK_OK) {
    stk__pipe_error(pipe, "%s", b->error);
    b->state = STK__SLOT_FREE;
    return b->status;
  }
  stk_status noted = stk__exec_quarantine_note(pipe, b); /* its bad files, each once per run */
  if (noted != STK_OK) {                                  /* the bad files' log cannot be written */
    b->state = STK__SLOT_FREE;
    return noted;
  }
  b->state = STK__SLOT_HELD;
  __atomic_store_n(&b->refcount, 1, __ATOMIC_RELEASE);
  note_delivered(pipe, b);
  pipe->batches_delivered++;
  pipe->images_delivered += (uint64_t)b->plan.valid_samples;
  if (pipe->batches_delivered == 1) pipe->first_batch_time = stk__exec_now_seconds();
  /* Warm-up: every initial slot used twice (the first round sets the buffers' high-water marks,
   * the second grows each slot to them: stk__exec_slot_pregrow). */
  int warm = 2 * stk__exec_initial_slots(pipe);
  if (!pipe->warmup_done && pipe->batches_delivered >= (uint64_t)warm) {
    pipe->warmup_done = 1;
    pipe->alloc_at_warmup = __atomic_load_n(&pipe->alloc_count, __ATOMIC_RELAXED);
  }
  return STK_OK;
}

stk_status stk__executor_next(stk_pipeline *pipe, stk_batch **out) {
  uint64_t asked = stk__exec_now_ns();
  pthread_mutex_lock(&pipe->lock);
  stk_batch *b = NULL;
  stk_status st = wait_next(pipe, &b);
  __atomic_fetch_add(&pipe->next_wait_ns, stk__exec_now_ns() - asked, __ATOMIC_RELAXED);
  if (st == STK_OK) {
    st = deliver(pipe, b);
    if (st != STK_OK) b = NULL;
  }
  pthread_mutex_unlock(&pipe->lock);
  *out = b;
  return st;
}

/* Under lock, mid-epoch: cancels what is in flight and waits until no batch is being planned or
 * processed and the reader is free; then the consumer and the scheduler move to the next epoch. */
static void discard_in_flight(stk_pipeline *pipe) {
  pipe->planning_paused = 1;
  for (int i = 0; i < pipe->num_slots; i++)
    if (pipe->slots[i]->state != STK__SLOT_HELD && pipe->slots[i]->state != STK__SLOT_FREE) {
      pipe->slots[i]->cancelled = 1;
      pipe->batches_discarded++;
    }
  for (;;) {
    int busy = pipe->sched_busy;
    for (int i = 0; i < pipe->num_slots; i++) { /* waiting for replacements that will not come */
      stk_batch *b = pipe->slots[i];
      if (b->state == STK__SLOT_RUNNING && b->refill_state == STK__REFILL_WAITING && b->cancelled &&
          !pipe->sched_busy) {
        b->refill_state = STK__REFILL_SEALED;
        stk__exec_cpu_part_done(pipe, b);
      }
    }
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
    pipe->pos_epoch = pipe->epoch, pipe->pos_batch = 0; /* checkpoint position */
    pthread_cond_broadcast(&pipe->cond_sched);
    pthread_mutex_unlock(&pipe->lock);
    return STK_OK;
  }
  discard_in_flight(pipe);
  pipe->pos_epoch = pipe->epoch, pipe->pos_batch = 0; /* checkpoint position */
  pthread_mutex_unlock(&pipe->lock);
  stk_status st = STK_OK;
  if (reader->op.impl->reset) st = reader->op.impl->reset(&reader->op, pipe->epoch);
  char side_err[512] = ""; /* further readers continue after the batches the consumer got */
  stk_status side_st = stk__executor_side_rewind(pipe, side_err, sizeof side_err);
  pthread_mutex_lock(&pipe->lock);
  stk__exec_refill_reset(pipe, pipe->epoch, pipe->next_plan_seq, 0);
  pipe->planning_paused = 0;
  pthread_cond_broadcast(&pipe->cond_sched);
  pthread_mutex_unlock(&pipe->lock);
  if (st != STK_OK)
    stk__pipe_error(pipe, "operator %s: reset to epoch %llu failed: %s", reader->op.name,
                    (unsigned long long)pipe->epoch, stk_strerror(st));
  else if (side_st != STK_OK) stk__pipe_error(pipe, "reset: %s", side_err);
  return st != STK_OK ? st : side_st;
}

/* ---- Checkpoint restore on a built pipeline (src/core/checkpoint.c) ------------------------- */
stk_status stk__executor_seek(stk_pipeline *pipe, uint64_t epoch, int64_t batch_index, char *err, size_t err_size) {
  stk__node *reader = &pipe->nodes[pipe->reader];
  pthread_mutex_lock(&pipe->lock);
  while (pipe->sched_busy) pthread_cond_wait(&pipe->cond_done, &pipe->lock);
  discard_in_flight(pipe); /* pauses planning; the epoch it moved to is replaced below */
  pipe->epoch = pipe->plan_epoch = pipe->pos_epoch = epoch;
  pipe->pos_batch = batch_index;
  int64_t reader_batch = pipe->has_refill_resume ? pipe->refill_resume.start / pipe->options.batch_size : batch_index;
  pthread_mutex_unlock(&pipe->lock);
  stk_status st = reader->op.impl->seek(&reader->op, epoch, reader_batch, err, err_size);
  if (st == STK_OK) st = stk__executor_side_rewind(pipe, err, err_size); /* to pipe->side[].pos_* */
  pthread_mutex_lock(&pipe->lock);
  stk__exec_refill_reset(pipe, epoch, pipe->next_plan_seq, 0); /* skip_bad_files: the cursor starts */
  stk__exec_refill_resume(pipe);                               /* over there (refill.c) */
  pipe->has_refill_resume = 0;
  if (st != STK_OK) { /* the next stk_pipeline_next reports it */
    pipe->sched_status = st;
    snprintf(pipe->sched_error, sizeof pipe->sched_error, "operator %s: seek to epoch %llu, batch %lld failed: %s",
             reader->op.name, (unsigned long long)epoch, (long long)batch_index, err[0] ? err : stk_strerror(st));
  }
  pipe->planning_paused = 0;
  pthread_cond_broadcast(&pipe->cond_sched);
  pthread_mutex_unlock(&pipe->lock);
  return st;
}

/* ---- Stats ---------------------------------------------------------------------------------- */
void stk__executor_stats(stk_pipeline *pipe, stk_pipeline_stats *out) {
  pthread_mutex_lock(&pipe->lock);
  out->batches = pipe->batches_delivered;
  out->images = pipe->images_delivered;
  /* files the engine replaced plus those the mixed decoder replaced inside its batch */
  out->skipped_files = pipe->skipped_files + pipe->decoder_stats.skipped_files;
  out->time_to_first_batch_s = pipe->batches_delivered ? pipe->first_batch_time - pipe->build_time : 0.0;
  out->decoded_hw = pipe->decoder_stats.decoded_hw;
  out->decoded_cuda = pipe->decoder_stats.decoded_cuda;
  out->decoded_hybrid = pipe->decoder_stats.decoded_hybrid;
  out->decoded_cpu = pipe->decoder_stats.decoded_cpu;
  memcpy(out->decoder_route, pipe->decoder_stats.decoder_route, sizeof out->decoder_route);
  out->allocations = __atomic_load_n(&pipe->alloc_count, __ATOMIC_RELAXED);
  out->next_wait_s = (double)__atomic_load_n(&pipe->next_wait_ns, __ATOMIC_RELAXED) * 1e-9;
  out->batch_latency_s = (double)__atomic_load_n(&pipe->latency_ns, __ATOMIC_RELAXED) * 1e-9;
  out->gpu_stage_s = (double)__atomic_load_n(&pipe->gpu_stage_ns, __ATOMIC_RELAXED) * 1e-9;
  out->upload_s = (double)__atomic_load_n(&pipe->upload_ns, __ATOMIC_RELAXED) * 1e-9;
  out->slot_wait_s = (double)__atomic_load_n(&pipe->slot_wait_ns, __ATOMIC_RELAXED) * 1e-9;
  out->allocations_after_warmup = pipe->warmup_done ? out->allocations - pipe->alloc_at_warmup : 0;
  out->batches_discarded = pipe->batches_discarded;
  pthread_mutex_unlock(&pipe->lock);
  out->bytes_read = __atomic_load_n(&pipe->bytes_read, __ATOMIC_RELAXED);
  out->host_bytes_held = __atomic_load_n(&pipe->host_budget.held, __ATOMIC_RELAXED);
  out->prefetch_queue_depth = pipe->options.prefetch_queue_depth;
  out->host_memory_budget = pipe->host_budget.limit == SIZE_MAX ? UINT64_MAX : pipe->host_budget.limit;
  out->num_threads = pipe->num_workers;
  for (int i = 0; i < pipe->num_workers && i < 256; i++) out->thread_cpus[i] = pipe->workers[i].cpu;
  out->device_bytes_held = pipe->has_gpu_nodes ? stk__gpu_bytes_held() : 0;
  out->pinned_bytes_held = stk__gpu_pinned_bytes_held();
}
