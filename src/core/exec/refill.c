/* src/core/exec/refill.c: skip_bad_files without losing a sample or repeating one. With
 * skip_bad_files the scheduler does not plan batches with the reader's plan_batch directly: it
 * takes samples from the refill cursor, a stream over the reader's plans of the epoch (the reader's
 * own fill samples are left out). A sample whose CPU chain fails is replaced by the next sample of
 * that stream (and that one, if it fails too, by the next), so every batch holds distinct good
 * samples and each good sample appears once per epoch.
 *
 * Determinism (the same bytes whatever the thread count or timing): batches are completed in
 * sequence. The batch with the lowest unsealed seq gets its replacements only when the first pass
 * has planned every batch up to seq + prefetch_depth - 1 (or the epoch has no sample left to plan);
 * the scheduler cannot plan further before that batch is delivered, so the cursor's position at
 * each refill is a function of the epoch's order, the bad samples and the prefetch depth only.
 *
 * The epoch's end: when the stream has no sample left, a batch short of good samples keeps its
 * good samples first (valid_samples) and the rest become fill copies of them (is_fill): the last
 * good sample repeated when the reader pads (pad_last_batch), else its good samples in turn. A
 * batch with no good sample at all is dropped (the consumer never sees it), so the epoch ends
 * early; an epoch with no good sample is empty (STK_EOF_EPOCH at once).
 * Not a hot path: once per batch (first pass), once per refill round. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/exec/exec.h"

/* The refill cursor. Everything a checkpoint of a skip_bad_files pipeline must save to resume
 * mid-epoch is in the first block (with the reader's own state from before it planned `staged`,
 * or the reader's state plus staged_next); the rest is scratch. Only the scheduler thread touches
 * it (or a reset, while the scheduler is held). */
struct stk__refill {
  /* --- state (checkpoint) --- */
  uint64_t epoch;            /* epoch of the reader's order the cursor reads */
  int64_t next_batch_index;  /* batch_index of the epoch's next first-pass batch */
  int64_t taken;             /* samples of the epoch's order given out so far (first pass and refills) */
  int reader_done;           /* the reader has no batch left for `epoch` */
  int pad_mode;              /* the reader pads its last batch with its last sample (pad_last_batch) */
  int staged_next;           /* staged.samples[staged_next..] are not given out yet */
  uint64_t seal_seq;         /* batches complete in sequence: the next seq to seal */
  stk__batch_plan staged;    /* the reader's last plan */
  /* --- scratch --- */
  stk__sample_plan *take;    /* batch_size entries */
};

stk_status stk__exec_refill_new(stk_pipeline *pipe) {
  if (!pipe->options.skip_bad_files) return STK_OK;
  int n = pipe->options.batch_size;
  stk__refill *c = calloc(1, sizeof *c);
  if (!c) return STK_ENOMEM;
  c->staged.samples = calloc((size_t)n, sizeof *c->staged.samples);
  c->take = calloc((size_t)n, sizeof *c->take);
  pipe->refill = c;
  if (!c->staged.samples || !c->take) return STK_ENOMEM;
  c->staged.batch_size = n;
  c->staged_next = n; /* nothing staged */
  c->epoch = pipe->epoch;
  return STK_OK;
}

void stk__exec_refill_free(stk_pipeline *pipe) {
  stk__refill *c = pipe->refill;
  if (!c) return;
  free(c->staged.samples);
  free(c->take);
  free(c);
  pipe->refill = NULL;
}

void stk__exec_refill_reset(stk_pipeline *pipe, uint64_t epoch, uint64_t seq, int keep_seal) {
  stk__refill *c = pipe->refill;
  if (!c) return;
  c->epoch = epoch;
  c->next_batch_index = 0;
  c->taken = 0;
  c->reader_done = 0;
  c->pad_mode = 0;
  c->staged_next = c->staged.batch_size;
  if (!keep_seal) c->seal_seq = seq;
}

/* 1 when the stream has no sample left for c->epoch. */
static int exhausted(const stk__refill *c) {
  if (!c->reader_done) return 0;
  for (int k = c->staged_next; k < c->staged.batch_size; k++)
    if (!c->staged.samples[k].is_fill) return 0;
  return 1;
}

/* The reader's next plan into c->staged; notes whether it pads (its fill samples repeat its last
 * valid sample). */
static stk_status stage_next(stk_pipeline *pipe, stk__refill *c, char *err, size_t err_size) {
  stk__node *reader = &pipe->nodes[pipe->reader];
  c->staged.epoch = c->epoch;
  c->staged.batch_size = pipe->options.batch_size;
  c->staged.valid_samples = c->staged.batch_size;
  c->staged.last_in_epoch = 0;
  memset(c->staged.samples, 0, sizeof *c->staged.samples * (size_t)c->staged.batch_size);
  stk_status st = reader->op.impl->plan_batch(&reader->op, &c->staged, err, err_size);
  if (st == STK_EOF_EPOCH) {
    c->reader_done = 1;
    c->staged_next = c->staged.batch_size;
    return STK_OK;
  }
  if (st != STK_OK) return st;
  c->staged_next = 0;
  c->reader_done = c->staged.last_in_epoch;
  int last_valid = -1, fills = 0, repeats = 0;
  for (int k = 0; k < c->staged.batch_size; k++) {
    const stk__sample_plan *s = &c->staged.samples[k];
    if (!s->is_fill) last_valid = k;
    else {
      fills++;
      repeats += last_valid >= 0 && s->file_index == c->staged.samples[last_valid].file_index;
    }
  }
  if (fills) c->pad_mode = repeats == fills;
  return STK_OK;
}

/* Takes up to `want` samples of the epoch's order into out; *got says how many (fewer at the end). */
static stk_status take(stk_pipeline *pipe, stk__refill *c, int want, stk__sample_plan *out, int *got, char *err,
                       size_t err_size) {
  *got = 0;
  while (*got < want) {
    if (c->staged_next < c->staged.batch_size) {
      const stk__sample_plan *s = &c->staged.samples[c->staged_next++];
      if (s->is_fill) continue;
      out[(*got)++] = *s;
      c->taken++;
      continue;
    }
    if (c->reader_done) break;
    stk_status st = stage_next(pipe, c, err, err_size);
    if (st != STK_OK) return st;
  }
  return STK_OK;
}

stk_status stk__exec_refill_plan(stk_pipeline *pipe, stk__batch_plan *plan, int *sample_failed, char *err,
                                 size_t err_size) {
  stk__refill *c = pipe->refill;
  int n = plan->batch_size, got = 0;
  stk_status st = take(pipe, c, n, plan->samples, &got, err, err_size);
  if (st != STK_OK) return st;
  if (got == 0) {
    snprintf(err, err_size, "end of epoch");
    return STK_EOF_EPOCH;
  }
  plan->epoch = c->epoch;
  plan->batch_index = c->next_batch_index++;
  plan->valid_samples = got;
  for (int s = got; s < n; s++) { /* the stream ran out: fill copies once the chains are done */
    plan->samples[s] = plan->samples[0];
    plan->samples[s].is_fill = 1;
    sample_failed[s] = STK__SAMPLE_FILL;
  }
  plan->last_in_epoch = exhausted(c);
  return STK_OK;
}

/* Under lock: the slot holding the batch with sequence number seq (planned, not delivered). */
static stk_batch *find_seq(stk_pipeline *pipe, uint64_t seq) {
  for (int i = 0; i < pipe->num_slots; i++) {
    stk_batch *b = pipe->slots[i];
    if (b->state != STK__SLOT_FREE && b->state != STK__SLOT_HELD && b->seq == seq) return b;
  }
  return NULL;
}

stk_batch *stk__exec_refill_due(stk_pipeline *pipe) {
  stk__refill *c = pipe->refill;
  if (!c || pipe->planning_paused) return NULL;
  while (c->seal_seq < pipe->next_plan_seq) {
    stk_batch *b = find_seq(pipe, c->seal_seq);
    if (!b || b->refill_state == STK__REFILL_SEALED) { /* delivered, or complete */
      c->seal_seq++;
      continue;
    }
    if (b->refill_state != STK__REFILL_WAITING) return NULL;
    int first_pass_done = b->cancelled || pipe->sched_status != STK_OK || pipe->roll_failed ||
                          b->plan.epoch != c->epoch || exhausted(c) ||
                          pipe->next_plan_seq >= b->seq + (uint64_t)stk__exec_prefetch_depth(pipe);
    return first_pass_done ? b : NULL;
  }
  return NULL;
}

void stk__exec_refill_serve(stk_pipeline *pipe, stk_batch *b) {
  stk__refill *c = pipe->refill;
  int n = b->plan.batch_size, want = 0, got = 0;
  for (int s = 0; s < n; s++) want += b->sample_failed[s] == STK__SAMPLE_BAD;
  stk_status st = STK_OK;
  char err[512] = "";
  if (!b->cancelled && pipe->sched_status == STK_OK && b->plan.epoch == c->epoch) {
    pipe->sched_busy = 1;
    pthread_mutex_unlock(&pipe->lock);
    st = take(pipe, c, want, c->take, &got, err, sizeof err);
    pthread_mutex_lock(&pipe->lock);
    pipe->sched_busy = 0;
    pthread_cond_broadcast(&pipe->cond_done); /* a reset may wait for the reader to be free */
  }
  if (st != STK_OK) {
    char msg[768];
    snprintf(msg, sizeof msg, "operator %s, planning replacements for bad samples of batch %lld: %s",
             pipe->nodes[pipe->reader].op.name, (long long)b->plan.batch_index, err[0] ? err : stk_strerror(st));
    stk__exec_fail_batch(b, st, msg);
  }
  b->refill_state = STK__REFILL_RUNNING;
  int tasks = 0;
  for (int s = 0, k = 0; s < n && b->status == STK_OK && !b->cancelled; s++) {
    if (b->sample_failed[s] != STK__SAMPLE_BAD) continue;
    if (k == got) {
      b->sample_failed[s] = STK__SAMPLE_FILL;
      continue;
    }
    b->plan.samples[s] = c->take[k++];
    b->sample_failed[s] = 0;
    if (!stk__exec_task_push(pipe, (stk__task){.kind = STK__TASK_SAMPLE_CHAIN, .batch = b, .index = s})) {
      stk__exec_fail_batch(b, STK_ENOMEM, "out of memory queueing tasks");
      break;
    }
    tasks++;
  }
  b->pending = tasks;
  if (tasks) pthread_cond_broadcast(&pipe->cond_work);
  else stk__exec_finish_sample_phase(pipe, b);
}

stk_status stk__exec_refill_resolve_fills(stk_pipeline *pipe, stk_batch *b) {
  int n = b->plan.batch_size, ngood = 0;
  for (int s = 0; s < n; s++) {
    if (b->sample_failed[s] != 0) continue;
    if (s != ngood) { /* valid samples first: ngood <= s, so the source is never overwritten before */
      stk_status st = stk__exec_copy_sample(pipe, b, ngood, s);
      if (st != STK_OK) return st;
      b->plan.samples[ngood] = b->plan.samples[s];
    }
    b->sample_failed[ngood] = 0;
    b->plan.samples[ngood++].is_fill = 0;
  }
  b->plan.valid_samples = ngood;
  if (ngood == 0) {
    b->dropped = 1;
    return STK_OK;
  }
  int pad = pipe->refill && pipe->refill->pad_mode;
  for (int s = ngood; s < n; s++) {
    int src = pad ? ngood - 1 : (s - ngood) % ngood;
    stk_status st = stk__exec_copy_sample(pipe, b, s, src);
    if (st != STK_OK) return st;
    b->plan.samples[s] = b->plan.samples[src];
    b->plan.samples[s].is_fill = 1;
    b->sample_failed[s] = STK__SAMPLE_FILL;
  }
  return STK_OK;
}

void stk__exec_note_bad_sample(stk_batch *b, const stk__sample_plan *sp, const char *reason) {
  if (b->num_bad == b->cap_bad) {
    int cap = b->cap_bad ? 2 * b->cap_bad : 8;
    stk__bad_sample *bigger = realloc(b->bad, (size_t)cap * sizeof *bigger);
    if (!bigger) return; /* the sample is still replaced; only its record is lost */
    b->bad = bigger;
    b->cap_bad = cap;
  }
  size_t len = strlen(reason);
  char *copy = malloc(len + 1);
  if (copy) memcpy(copy, reason, len + 1);
  b->bad[b->num_bad++] = (stk__bad_sample){.source = sp->source, .sample_id = sp->sample_id,
                                           .epoch = b->plan.epoch, .reason = copy};
}

void stk__exec_clear_bad_samples(stk_batch *b) {
  for (int i = 0; i < b->num_bad; i++) free(b->bad[i].reason);
  b->num_bad = 0;
}
