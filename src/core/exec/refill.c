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
 *
 * Checkpoints (src/core/checkpoint.c, docs/checkpoint.md): each take is one contiguous interval of
 * the stream, logged with the batch it served. Let k be the consumer's next batch and F the
 * stream position where k's first pass began (the cursor's position when k is not planned yet).
 * After F the stream holds the first passes of k, k+1, ..., refills of batches >= k, and refills
 * of batches the consumer already has (the last prefetch_depth - 1 of them at most). A cursor that
 * starts at F and passes over exactly those last intervals, at the point the original took them,
 * makes the same sequence of takes by the same rule, hence the same batches
 * (stk__executor_refill_point computes F and the intervals; stk__exec_refill_resume applies them).
 * Not a hot path: once per batch (first pass), once per refill round. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/exec/exec.h"

/* One take from the stream, for the checkpoint (stk__executor_refill_point). */
enum { TAKE_FIRST_PASS, TAKE_REFILL, TAKE_REPLAY };
typedef struct take_record {
  int kind;            /* TAKE_*: a batch's first pass, a refill round, or a replayed skip */
  uint64_t epoch, seq; /* the epoch; the batch served (not for TAKE_REPLAY) */
  int64_t batch_index; /* TAKE_FIRST_PASS: the batch's index */
  int64_t start, end;  /* stream positions [start, end) */
} take_record;

/* The refill cursor. Only the scheduler thread touches it (or a reset or a seek, while the
 * scheduler is held); the checkpoint reads it under lock while the scheduler is not busy.
 * Positions (`pos`, the log, the skips) count the entries of the reader's plans of the epoch, fill
 * entries included (stk__refill_point). */
struct stk__refill {
  /* --- the stream --- */
  uint64_t epoch;           /* epoch of the reader's order the cursor reads */
  int64_t next_batch_index; /* batch_index of the epoch's next first-pass batch */
  int64_t pos;              /* entries of the reader's plans passed so far (staged_next included) */
  int reader_done;          /* the reader has no batch left for `epoch` */
  int pad_mode;             /* the reader pads its last batch with its last sample (pad_last_batch);
                                atomic: written outside the lock, read by the worker resolving fills */
  int prev_pad_mode;        /* pad_mode of prev_epoch (under lock) */
  int staged_next;          /* staged.samples[staged_next..] are not given out yet */
  uint64_t seal_seq;        /* batches complete in sequence: the next seq to seal */
  stk__batch_plan staged;   /* the reader's last plan */
  /* --- for checkpoints --- */
  take_record *log; /* takes since the first pass of the consumer's next batch (pruned) */
  int num_log, cap_log;
  uint64_t prev_epoch;      /* the epoch before `epoch` (after a roll), UINT64_MAX: none */
  int64_t prev_end;         /*   and the position its stream ended at */
  int num_skips, next_skip; /* a resume: skips[next_skip..num_skips) are still to pass over */
  int64_t (*skips)[2];      /*   (STK__REFILL_MAX_SKIPS entries) */
  /* --- scratch --- */
  stk__sample_plan *take; /* batch_size entries */
};

stk_status stk__exec_refill_new(stk_pipeline *pipe) {
  if (!pipe->options.skip_bad_files) return STK_OK;
  int n = pipe->options.batch_size;
  stk__refill *c = calloc(1, sizeof *c);
  if (!c) return STK_ENOMEM;
  c->staged.samples = calloc((size_t)n, sizeof *c->staged.samples);
  c->take = calloc((size_t)n, sizeof *c->take);
  c->skips = calloc(STK__REFILL_MAX_SKIPS, sizeof *c->skips);
  pipe->refill = c;
  if (!c->staged.samples || !c->take || !c->skips) return STK_ENOMEM;
  c->staged.batch_size = n;
  c->staged_next = n; /* nothing staged */
  c->epoch = pipe->epoch;
  c->prev_epoch = UINT64_MAX;
  stk__exec_refill_resume(pipe); /* a checkpoint restored at build (checkpoint.c) */
  return STK_OK;
}

void stk__exec_refill_free(stk_pipeline *pipe) {
  stk__refill *c = pipe->refill;
  if (!c) return;
  free(c->staged.samples);
  free(c->take);
  free(c->skips);
  free(c->log);
  free(c);
  pipe->refill = NULL;
}

void stk__exec_refill_reset(stk_pipeline *pipe, uint64_t epoch, uint64_t seq, int keep_seal) {
  stk__refill *c = pipe->refill;
  if (!c) return;
  if (keep_seal) { /* a roll: batches of the epoch before may still be delivered */
    c->prev_epoch = c->epoch;
    c->prev_end = c->pos;
    c->prev_pad_mode = __atomic_load_n(&c->pad_mode, __ATOMIC_RELAXED);
  } else { /* a reset or a seek: nothing planned before counts */
    c->seal_seq = seq;
    c->num_log = 0;
    c->prev_epoch = UINT64_MAX;
  }
  c->epoch = epoch;
  c->next_batch_index = 0;
  c->pos = 0;
  c->reader_done = 0;
  __atomic_store_n(&c->pad_mode, 0, __ATOMIC_RELAXED);
  c->staged_next = c->staged.batch_size;
  c->num_skips = c->next_skip = 0;
}

void stk__exec_refill_resume(stk_pipeline *pipe) {
  stk__refill *c = pipe->refill;
  if (!c || !pipe->has_refill_resume) return;
  const stk__refill_point *r = &pipe->refill_resume;
  int64_t bs = c->staged.batch_size, aligned = r->start / bs * bs; /* the reader was seeked there */
  c->epoch = pipe->epoch;
  c->next_batch_index = pipe->pos_batch;
  c->pos = aligned;
  c->num_skips = c->next_skip = 0;
  if (r->start > aligned) { /* the part of that reader batch before the start */
    c->skips[0][0] = aligned;
    c->skips[0][1] = r->start;
    c->num_skips = 1;
  }
  for (int i = 0; i < r->num_skips && c->num_skips < STK__REFILL_MAX_SKIPS; i++) {
    c->skips[c->num_skips][0] = r->skip[i][0];
    c->skips[c->num_skips++][1] = r->skip[i][1];
  }
  pipe->has_refill_resume = 0;
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
  if (fills) __atomic_store_n(&c->pad_mode, repeats == fills, __ATOMIC_RELAXED);
  return STK_OK;
}

/* Appends a take to the checkpoint log (the scheduler thread; pruned by stk__exec_refill_due). */
static stk_status log_take(stk__refill *c, take_record r) {
  if (r.end == r.start) return STK_OK;
  if (c->num_log == c->cap_log) {
    int cap = c->cap_log ? 2 * c->cap_log : 16;
    take_record *bigger = realloc(c->log, (size_t)cap * sizeof *bigger);
    if (!bigger) return STK_ENOMEM;
    c->log = bigger;
    c->cap_log = cap;
  }
  c->log[c->num_log++] = r;
  return STK_OK;
}

/* A resume: passes over the skip intervals that start here (the original run's replacements for
 * batches the consumer had received), giving nothing out, exactly when the original took them. */
static stk_status replay_skips(stk_pipeline *pipe, stk__refill *c, char *err, size_t err_size) {
  while (c->next_skip < c->num_skips && c->skips[c->next_skip][0] <= c->pos) {
    int64_t from = c->pos, to = c->skips[c->next_skip++][1];
    while (c->pos < to) {
      if (c->staged_next < c->staged.batch_size) {
        c->staged_next++;
        c->pos++;
        continue;
      }
      if (c->reader_done) break;
      stk_status st = stage_next(pipe, c, err, err_size);
      if (st != STK_OK) return st;
    }
    stk_status st = log_take(c, (take_record){.kind = TAKE_REPLAY, .epoch = c->epoch, .start = from, .end = c->pos});
    if (st != STK_OK) return st;
  }
  return STK_OK;
}

/* Takes up to `want` samples of the epoch's order into out; *got says how many (fewer at the end).
 * The take is logged as `r` (its kind, seq, batch index) with its stream interval. */
static stk_status take(stk_pipeline *pipe, stk__refill *c, int want, stk__sample_plan *out, int *got, take_record r,
                       char *err, size_t err_size) {
  *got = 0;
  stk_status st = replay_skips(pipe, c, err, err_size);
  if (st != STK_OK) return st;
  r.epoch = c->epoch;
  r.start = c->pos;
  while (*got < want) {
    if (c->staged_next < c->staged.batch_size) {
      const stk__sample_plan *s = &c->staged.samples[c->staged_next++];
      c->pos++;
      if (s->is_fill) continue;
      out[(*got)++] = *s;
      continue;
    }
    if (c->reader_done) break;
    st = stage_next(pipe, c, err, err_size);
    if (st != STK_OK) return st;
  }
  r.end = c->pos;
  return *got ? log_take(c, r) : STK_OK;
}

stk_status stk__exec_refill_plan(stk_pipeline *pipe, stk__batch_plan *plan, int *sample_failed, char *err,
                                 size_t err_size) {
  stk__refill *c = pipe->refill;
  int n = plan->batch_size, got = 0;
  take_record r = {.kind = TAKE_FIRST_PASS, .seq = pipe->next_plan_seq, .batch_index = c->next_batch_index};
  stk_status st = take(pipe, c, n, plan->samples, &got, r, err, err_size); /* next_plan_seq: this thread writes it */
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
  /* After last_in_epoch, as the original run decided it before taking the replacements a resume
   * passes over now. */
  return replay_skips(pipe, c, err, err_size);
}

/* Under lock: the slot holding the batch with sequence number seq (planned, not delivered). */
static stk_batch *find_seq(stk_pipeline *pipe, uint64_t seq) {
  for (int i = 0; i < pipe->num_slots; i++) {
    stk_batch *b = pipe->slots[i];
    if (b->state != STK__SLOT_FREE && b->state != STK__SLOT_HELD && b->seq == seq) return b;
  }
  return NULL;
}

/* Under lock, scheduler thread: forgets the takes before the first pass of the consumer's next
 * batch (no later checkpoint starts before it), or all of them when that batch is not planned. */
static void prune_log(stk_pipeline *pipe, stk__refill *c) {
  int i = 0;
  while (i < c->num_log && !(c->log[i].kind == TAKE_FIRST_PASS && c->log[i].seq >= pipe->next_deliver_seq)) i++;
  if (i == 0) return;
  c->num_log -= i;
  memmove(c->log, c->log + i, (size_t)c->num_log * sizeof *c->log);
}

stk_batch *stk__exec_refill_due(stk_pipeline *pipe) {
  stk__refill *c = pipe->refill;
  if (c) prune_log(pipe, c);
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
    st = take(pipe, c, want, c->take, &got, (take_record){.kind = TAKE_REFILL, .seq = b->seq}, err, sizeof err);
    if (st == STK_OK) st = replay_skips(pipe, c, err, sizeof err);
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

stk_status stk__exec_refill_resolve_fills(stk_pipeline *pipe, stk_batch *b, char *err, size_t err_size) {
  int n = b->plan.batch_size, ngood = 0;
  for (int s = 0; s < n; s++) {
    if (b->sample_failed[s] != 0) continue;
    if (s != ngood) { /* valid samples first: ngood <= s, so the source is never overwritten before */
      stk_status st = stk__exec_copy_sample(pipe, b, ngood, s, err, err_size);
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
  /* The pad mode of the batch's epoch: the cursor may have moved on to the next one. Final by now:
   * a batch gets fills only once the stream is empty, so the reader's last plan was staged. */
  const stk__refill *c = pipe->refill;
  int pad = c && (b->plan.epoch == c->epoch ? __atomic_load_n(&c->pad_mode, __ATOMIC_RELAXED)
                                            : b->plan.epoch == c->prev_epoch && c->prev_pad_mode);
  for (int s = ngood; s < n; s++) {
    int src = pad ? ngood - 1 : (s - ngood) % ngood;
    stk_status st = stk__exec_copy_sample(pipe, b, s, src, err, err_size);
    if (st != STK_OK) return st;
    b->plan.samples[s] = b->plan.samples[src];
    b->plan.samples[s].is_fill = 1;
    b->sample_failed[s] = STK__SAMPLE_FILL;
  }
  return STK_OK;
}

/* Adds [from, to) to the skips of p (merged with the last one when they touch). */
static int add_skip(stk__refill_point *p, int64_t from, int64_t to) {
  if (to <= from) return 1;
  if (p->num_skips && p->skip[p->num_skips - 1][1] == from) {
    p->skip[p->num_skips - 1][1] = to;
    return 1;
  }
  if (p->num_skips == STK__REFILL_MAX_SKIPS) return 0;
  p->skip[p->num_skips][0] = from;
  p->skip[p->num_skips++][1] = to;
  return 1;
}

stk_status stk__executor_refill_point(stk_pipeline *pipe, stk__refill_point *out, char *err, size_t err_size) {
  stk__refill *c = pipe->refill;
  memset(out, 0, sizeof *out);
  out->depth = stk__exec_prefetch_depth(pipe);
  const take_record *first = NULL; /* the first pass of the consumer's next batch */
  for (int i = 0; i < c->num_log && !first; i++)
    if (c->log[i].kind == TAKE_FIRST_PASS && c->log[i].seq == pipe->next_deliver_seq) first = &c->log[i];
  int64_t next_index;
  if (first && first->epoch == pipe->pos_epoch) { /* planned (prefetched, maybe decoded) */
    out->start = first->start;
    next_index = first->batch_index;
  } else if (!first && c->epoch == pipe->pos_epoch) { /* not planned yet: the cursor is there */
    out->start = c->pos;
    next_index = c->next_batch_index;
  } else if (c->prev_epoch == pipe->pos_epoch) { /* the epoch was all delivered; the cursor moved on */
    out->start = c->prev_end;
    next_index = pipe->pos_batch;
  } else {
    stk__errorf(err, err_size, "the refill cursor (epoch %llu) has no record of epoch %llu",
                (unsigned long long)c->epoch, (unsigned long long)pipe->pos_epoch);
    return STK_EINTERNAL;
  }
  if (next_index != pipe->pos_batch) {
    stk__errorf(err, err_size, "the consumer is at batch %lld, the refill cursor's next batch is %lld",
                (long long)pipe->pos_batch, (long long)next_index);
    return STK_EINTERNAL;
  }
  /* Takes after the start that served batches the consumer already has (or were passed over as
   * such by this run's own resume), then the skips this run has not reached yet. */
  int ok = 1;
  for (int i = 0; i < c->num_log && ok; i++) {
    const take_record *r = &c->log[i];
    int delivered = r->kind == TAKE_REPLAY || (r->kind == TAKE_REFILL && r->seq < pipe->next_deliver_seq);
    if (delivered && r->epoch == pipe->pos_epoch && r->start >= out->start) ok = add_skip(out, r->start, r->end);
  }
  for (int i = c->next_skip; i < c->num_skips && ok && c->epoch == pipe->pos_epoch; i++)
    ok = add_skip(out, c->skips[i][0], c->skips[i][1]);
  if (!ok) {
    stk__errorf(err, err_size, "more than %d runs of replacements to pass over (prefetch_queue_depth %d)",
                STK__REFILL_MAX_SKIPS, out->depth);
    return STK_ENOTSUP;
  }
  return STK_OK;
}

void stk__exec_note_bad_sample(stk_batch *b, const stk__sample_plan *sp, const char *source, const char *reason) {
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
  char *name = source ? strdup(source) : NULL; /* the reader's sample may be gone at delivery */
  b->bad[b->num_bad++] =
      (stk__bad_sample){.source = name, .sample_id = sp->sample_id, .epoch = b->plan.epoch, .reason = copy};
}

void stk__exec_clear_bad_samples(stk_batch *b) {
  for (int i = 0; i < b->num_bad; i++) free(b->bad[i].reason), free(b->bad[i].source);
  b->num_bad = 0;
}
