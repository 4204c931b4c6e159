/* src/ops/io/wds_plan.c: readers.webdataset's planning side (see reader_webdataset.c for the
 * semantics): the epoch's work units and their two-level shuffle, the shuffle buffer, batch
 * planning (scheduler thread, once per batch), and the table that hands planned samples to the
 * workers' run_sample. Hot path: plan_batch and the table (one lock per sample). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/io/reader_webdataset.h"
#include "ops/io/shuffle.h"
#include "ops/io/wds_reader.h"

/* ---- Samples in flight ---------------------------------------------------------------------- */
void stk__wds_release(wds_reader *r, stk__wds_sample *s) {
  if (!s) return;
  pthread_mutex_lock(&r->table_lock);
  int last = --s->refs == 0;
  pthread_mutex_unlock(&r->table_lock);
  if (last) stk__wds_sample_free(s);
}

static stk_status table_put(wds_reader *r, stk__wds_sample *s, int64_t *handle) {
  pthread_mutex_lock(&r->table_lock);
  if (r->num_free == 0) {
    int cap = r->table_capacity ? r->table_capacity * 2 : 256;
    table_entry *t = cap < (1 << SLOT_BITS) ? realloc(r->table, (size_t)cap * sizeof *t) : NULL;
    int *f = t ? realloc(r->free_slots, (size_t)cap * sizeof *f) : NULL;
    if (t) r->table = t;
    if (!t || !f) {
      pthread_mutex_unlock(&r->table_lock);
      return STK_ENOMEM;
    }
    r->free_slots = f;
    for (int i = cap - 1; i >= r->table_capacity; i--) {
      r->table[i].sample = NULL;
      r->free_slots[r->num_free++] = i;
    }
    r->table_capacity = cap;
  }
  int slot = r->free_slots[--r->num_free];
  uint32_t ticket = ++r->next_ticket & 0x7fffffu;
  r->table[slot] = (table_entry){s, ticket};
  s->refs++;
  pthread_mutex_unlock(&r->table_lock);
  *handle = (int64_t)ticket << SLOT_BITS | slot;
  return STK_OK;
}

/* Takes the sample of a plan slot out of the table (the caller releases it after use). */
stk__wds_sample *stk__wds_table_take(wds_reader *r, int64_t handle) {
  int slot = (int)(handle & ((1 << SLOT_BITS) - 1));
  uint32_t ticket = (uint32_t)(handle >> SLOT_BITS);
  stk__wds_sample *s = NULL;
  pthread_mutex_lock(&r->table_lock);
  if (slot >= 0 && slot < r->table_capacity && r->table[slot].sample && r->table[slot].ticket == ticket) {
    s = r->table[slot].sample;
    r->table[slot].sample = NULL;
    r->free_slots[r->num_free++] = slot;
  }
  pthread_mutex_unlock(&r->table_lock);
  return s;
}

/* Frees slots of batches that can no longer run (cancelled or failed batches of epochs before
 * epoch - 1: the executor plans at most one epoch ahead of the consumer). */
void stk__wds_table_collect(wds_reader *r, uint64_t epoch) {
  pthread_mutex_lock(&r->table_lock);
  for (int i = 0; i < r->table_capacity; i++) {
    stk__wds_sample *s = r->table[i].sample;
    if (!s || s->epoch + 1 >= epoch) continue;
    r->table[i].sample = NULL;
    r->free_slots[r->num_free++] = i;
    if (--s->refs == 0) stk__wds_sample_free(s);
  }
  pthread_mutex_unlock(&r->table_lock);
}

/* ---- Epoch order ---------------------------------------------------------------------------- */
static void permute_units(stk__wds_unit *u, int64_t n, uint64_t seed, uint64_t epoch, int64_t stream) {
  stk__shuffle_permute(u, sizeof *u, n, STK__SHUFFLE_WEBDATASET, seed, epoch, stream);
}

static int epoch_part(const wds_reader *r, uint64_t epoch) {
  return stk__shuffle_epoch_shard(r->stick_to_shard, r->shard_id, r->num_shards, epoch);
}

/* The part's units of epoch `epoch` (malloc'd into *out). */
static stk_status build_units(wds_reader *r, uint64_t epoch, stk__wds_unit **out, int64_t *count) {
  const int F = r->num_paths, S = r->num_shards, part = epoch_part(r, epoch);
  int shuffle_all = r->random_shuffle && !r->stick_to_shard;
  stk__wds_unit *files = malloc((size_t)F * sizeof *files);
  stk__wds_unit *units = malloc((size_t)F * sizeof *units);
  if (!files || !units) {
    free(files);
    free(units);
    return STK_ENOMEM;
  }
  for (int f = 0; f < F; f++) files[f] = (stk__wds_unit){f, 0, 0, -1};
  if (shuffle_all) permute_units(files, F, r->seed, epoch, 0);
  int64_t n = 0;
  if (!r->index) {
    for (int64_t k = (int64_t)F * part / S; k < (int64_t)F * (part + 1) / S; k++) units[n++] = files[k];
  } else {
    int64_t begin = r->index_total * part / S, end = r->index_total * (part + 1) / S, at = 0;
    for (int k = 0; k < F && at < end; k++) {
      const stk__wds_index *ix = &r->index[files[k].shard];
      int64_t lo = begin > at ? begin - at : 0, hi = end - at < ix->num_samples ? end - at : ix->num_samples;
      if (hi > lo)
        units[n++] =
            (stk__wds_unit){files[k].shard, lo > 0 ? ix->sample_start[lo] : 0, lo, hi - lo, hi == ix->num_samples};
      at += ix->num_samples;
    }
  }
  if (r->random_shuffle && r->stick_to_shard) permute_units(units, n, r->seed, epoch, 1 + part);
  free(files);
  *out = units;
  *count = n;
  return STK_OK;
}

void stk__wds_drop_epoch(wds_reader *r) {
  if (r->stream) r->skipped_before += stk__wds_stream_skipped(r->stream, NULL);
  stk__wds_stream_free(r->stream);
  r->stream = NULL;
  for (int64_t i = 0; i < r->buffer_count; i++) stk__wds_release(r, r->buffer[i]);
  r->buffer_count = 0;
  stk__wds_release(r, r->peeked);
  stk__wds_release(r, r->last);
  r->peeked = r->last = NULL;
}

/* Starts the lanes of epoch `epoch`'s part (they begin reading at once). */
static stk_status open_stream(wds_reader *r, uint64_t epoch, stk__wds_stream **out, char *err, size_t err_size) {
  stk__wds_unit *units;
  int64_t n;
  if (build_units(r, epoch, &units, &n) != STK_OK) return STK_ENOMEM;
  stk__wds_stream_config config = r->stream_config;
  config.units = units;
  config.num_units = n;
  config.epoch = epoch;
  stk_status st = stk__wds_stream_start(&config, out, err, err_size);
  free(units);
  return st;
}

/* The epoch's stream has ended (its shuffle buffer may still hold samples): the next epoch's lanes
 * start now, so its shuffle buffer is filled while this epoch's last batches are planned and run,
 * not after the reset (the order depends on (seed, epoch, part) only: the same samples). A reset
 * to another epoch frees them unread; a failure here is met again, and reported, at the reset. */
static void prestart_next_epoch(wds_reader *r) {
  if (r->next_stream) return;
  char err[256];
  if (open_stream(r, r->epoch + 1, &r->next_stream, err, sizeof err) != STK_OK) r->next_stream = NULL;
  r->next_epoch = r->epoch + 1;
}

void stk__wds_drop_next_epoch(wds_reader *r) {
  stk__wds_stream_free(r->next_stream);
  r->next_stream = NULL;
}

stk_status stk__wds_start_epoch(wds_reader *r, uint64_t epoch, char *err, size_t err_size) {
  stk__wds_drop_epoch(r);
  stk__wds_table_collect(r, epoch);
  r->epoch = epoch;
  r->part = epoch_part(r, epoch);
  r->planned_batches = r->planned_samples = r->draws = 0;
  r->ended = r->stream_done = 0;
  r->num_batches = -1;
  if (r->index) {
    int64_t S = r->num_shards, N = r->index_total, bs = r->batch_size;
    /* Every part gives the same number of batches, padded or not (equal steps per rank for DDP);
     * a smaller part's extra slots repeat its last sample (fill, not valid). */
    int64_t largest = (N + S - 1) / S;
    r->num_batches = (largest + bs - 1) / bs;
  }
  if (r->next_stream && r->next_epoch == epoch) { /* prestarted (prestart_next_epoch) */
    r->stream = r->next_stream;
    r->next_stream = NULL;
    return STK_OK;
  }
  stk__wds_drop_next_epoch(r);
  return open_stream(r, epoch, &r->stream, err, err_size);
}

/* ---- Planning ------------------------------------------------------------------------------- */
static stk_status stream_pop(wds_reader *r, stk__wds_sample **out, char *err, size_t err_size) {
  *out = NULL;
  if (r->stream_done) return STK_OK;
  stk_status st = stk__wds_stream_next(r->stream, out, err, err_size);
  if (st == STK_OK && !*out) {
    r->stream_done = 1;
    prestart_next_epoch(r);
  }
  if (*out) (*out)->refs = 1;
  return st;
}

/* The next sample of the epoch's output order (after the shuffle buffer), or NULL at its end. */
static stk_status next_output(wds_reader *r, stk__wds_sample **out, char *err, size_t err_size) {
  if (r->peeked) {
    *out = r->peeked;
    r->peeked = NULL;
    return STK_OK;
  }
  if (!r->random_shuffle || r->initial_fill <= 1) return stream_pop(r, out, err, err_size);
  while (r->buffer_count < r->initial_fill && !r->stream_done) {
    stk__wds_sample *s;
    stk_status st = stream_pop(r, &s, err, err_size);
    if (st != STK_OK) return st;
    if (s) r->buffer[r->buffer_count++] = s;
  }
  *out = NULL;
  if (r->buffer_count == 0) return STK_OK;
  int64_t j = stk__shuffle_index(STK__SHUFFLE_WEBDATASET, r->seed, r->epoch, stk__shuffle_buffer_stream(r->part),
                                 r->draws++, r->buffer_count);
  *out = r->buffer[j];
  stk__wds_sample *next = NULL;
  stk_status st = stream_pop(r, &next, err, err_size);
  if (st != STK_OK) return st;
  r->buffer[j] = next ? next : r->buffer[--r->buffer_count];
  return STK_OK;
}

static stk_status put_slot(wds_reader *r, stk__sample_plan *slot, stk__wds_sample *s, int is_fill) {
  int64_t handle;
  stk_status st = table_put(r, s, &handle);
  if (st != STK_OK) return st;
  slot->sample_id = s->sample_id;
  slot->file_index = handle;
  slot->label = s->label;
  slot->source = NULL; /* the sample's own name is in the messages run_sample writes */
  slot->is_fill = is_fill;
  return STK_OK;
}

stk_status stk__wds_plan_batch(stk__op *op, stk__batch_plan *plan, char *err, size_t err_size) {
  wds_reader *r = op->state;
  if (r->ended) {
    stk__errorf(err, err_size, "end of epoch: reset the reader");
    return STK_EOF_EPOCH;
  }
  const int bs = r->batch_size;
  int more_batches_due = r->num_batches >= 0 && r->planned_batches + 1 < r->num_batches;
  int k = 0;
  stk_status st = STK_OK;
  for (; k < bs; k++) {
    stk__wds_sample *s;
    if ((st = next_output(r, &s, err, err_size)) != STK_OK) return st;
    if (!s) break;
    if ((st = put_slot(r, &plan->samples[k], s, 0)) != STK_OK) return st;
    stk__wds_release(r, r->last);
    r->last = s; /* keeps the reference next_output gave */
  }
  if (k == 0 && (!r->last || !(r->num_batches >= 0 && r->planned_batches < r->num_batches))) {
    if (!r->last) {
      stk__errorf(err, err_size, "part %d of %d (shard_id %d, epoch %llu) has no samples", r->part, r->num_shards,
                  r->shard_id, (unsigned long long)r->epoch);
      return STK_ENOENT;
    }
    r->ended = 1;
    stk__errorf(err, err_size, "end of epoch: reset the reader");
    return STK_EOF_EPOCH;
  }
  plan->valid_samples = k;
  for (int f = k; f < bs; f++)
    if ((st = put_slot(r, &plan->samples[f], r->last, 1)) != STK_OK) return st;
  if (k == bs && !more_batches_due) { /* is there anything after this batch? */
    if ((st = next_output(r, &r->peeked, err, err_size)) != STK_OK) return st;
  }
  plan->epoch = r->epoch;
  plan->batch_index = r->planned_batches++;
  plan->batch_size = bs;
  r->planned_samples += k;
  plan->last_in_epoch = !more_batches_due && !r->peeked;
  if (plan->last_in_epoch) r->ended = 1;
  return STK_OK;
}

stk_status stk__wds_reset(stk__op *op, uint64_t epoch) {
  wds_reader *r = op->state;
  if (epoch == r->epoch && r->planned_batches == 0 && r->stream && !r->ended) return STK_OK; /* fresh already */
  char err[512];
  return stk__wds_start_epoch(r, epoch, err, sizeof err);
}

int64_t stk__wds_reader_skipped(const stk__op *op) {
  const wds_reader *r = op->state;
  return r->skipped_before + (r->stream ? stk__wds_stream_skipped(r->stream, NULL) : 0);
}

void stk__wds_meta(const stk__op *op, uint64_t epoch, stk_reader_meta *out) {
  const wds_reader *r = op->state;
  const int part = epoch_part(r, epoch);
  memset(out, 0, sizeof *out);
  out->shard_id = part;
  out->num_shards = r->num_shards;
  out->pad_last_batch = r->pad_last_batch;
  out->stick_to_shard = r->stick_to_shard;
  if (!r->index) { /* unknown until the shards are read: no index */
    out->epoch_size = out->epoch_size_padded = out->shard_size = -1;
    out->epoch_batches = out->epoch_full_batches = -1; /* parts are whole tar files: sizes differ */
    return;
  }
  int64_t N = r->index_total, S = r->num_shards, bs = r->batch_size;
  out->epoch_size = N;
  out->shard_size = N * (part + 1) / S - N * part / S;
  out->epoch_size_padded = r->pad_last_batch ? ((N + S - 1) / S + bs - 1) / bs * bs * S : N;
  out->epoch_batches = ((N + S - 1) / S + bs - 1) / bs; /* as stk__wds_start_epoch plans */
  out->epoch_full_batches = N / S / bs;                 /* the smallest part's whole batches */
}
