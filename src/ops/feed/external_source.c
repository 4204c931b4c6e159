/* src/ops/feed/external_source.c: the `external_source` operator (DALI's fn.external_source) --
 * schema and CPU implementation of a reader whose batches are fed from outside the pipeline
 * (stk_pipeline_feed_input: the Python layer calls the user's source and feeds what it gives).
 *
 * Fed batches wait in a FIFO of entries (copies of the caller's samples, or borrowed views with
 * no_copy). The scheduler plans only when an entry is waiting (input_ready), so the executor never
 * runs ahead of the data; plan_batch takes the oldest entry and the batch's size is the entry's
 * sample count (1..batch_size with options.exec_dynamic). run_sample copies sample s of the entry
 * into the slot's output (or borrows it with no_copy); the entry is reused once every sample of it
 * ran, so a steady-state feed allocates nothing. An end mark (feed with count < 0) makes the plan
 * after the batches fed before it return STK_EOF_EPOCH.
 *
 * Threads: feed on the consumer's thread, plan_batch and reset on the scheduler's (reset also on
 * the consumer's, with nothing planned in flight), run_sample on the workers; the entry table is
 * under the state's mutex. Hot path: run_sample per sample (one memcpy), feed per batch.
 * Samples in GPU memory and the GPU implementation (device="gpu": run_batch copies the entry into
 * the batch's GPU lists on the pipeline's stream): src/ops/feed/external_source_gpu.c. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/feed/external_source.h"

static const char *const kDtypeNames[] = {"uint8", "int32", "int64",  "float",  "float16", "bool",
                                          "int8",  "int16", "uint16", "uint32", "uint64",  "float64"};

static int parse_dtype(const char *name) {
  if (!strcmp(name, "float32")) return STK_DTYPE_FLOAT32;
  for (int d = 0; d < (int)(sizeof kDtypeNames / sizeof kDtypeNames[0]); d++)
    if (!strcmp(name, kDtypeNames[d])) return d;
  return -2;
}

/* Per-output settings from a list argument: one value for all outputs, or one per output. */
static stk_status per_output_args(stk__op *op, stk__extsrc_state *s, char *err, size_t err_size) {
  size_t nd, nn, nl;
  char *const *dtypes = stk__arg_string_list(op, "dtype", &nd);
  const int64_t *ndims = stk__arg_int_list(op, "ndim", &nn);
  char *const *layouts = stk__arg_string_list(op, "layout", &nl);
  size_t counts[3] = {nd, nn, nl};
  const char *names[3] = {"dtype", "ndim", "layout"};
  for (int a = 0; a < 3; a++)
    if (counts[a] > 1 && counts[a] != (size_t)s->num_outputs) {
      stk__errorf(err, err_size, "argument '%s' has %zu entries; give one, or one per output (num_outputs=%d)",
                  names[a], counts[a], s->num_outputs);
      return STK_EINVAL;
    }
  for (int o = 0; o < s->num_outputs; o++) {
    s->dtype[o] = nd ? parse_dtype(dtypes[nd > 1 ? o : 0]) : -1;
    if (s->dtype[o] == -2) {
      stk__errorf(err, err_size,
                  "argument 'dtype': unknown type \"%s\" (uint8, int8, int16, int32, int64, uint16, "
                  "uint32, uint64, float16, float, float64, bool)",
                  dtypes[nd > 1 ? o : 0]);
      return STK_EINVAL;
    }
    s->ndim[o] = nn ? (int)ndims[nn > 1 ? o : 0] : -1;
    if (nn && (s->ndim[o] < 0 || s->ndim[o] > STK_MAX_DIMS - 1)) {
      stk__errorf(err, err_size, "argument 'ndim' must lie in 0..%d, got %d", STK_MAX_DIMS - 1, s->ndim[o]);
      return STK_EINVAL;
    }
    const char *layout = nl ? layouts[nl > 1 ? o : 0] : "";
    if (strlen(layout) > 6 || (layout[0] && s->ndim[o] >= 0 && (int)strlen(layout) != s->ndim[o])) {
      stk__errorf(err, err_size, "argument 'layout' \"%s\" does not fit ndim %d (at most 6 letters, one per axis)",
                  layout, s->ndim[o]);
      return STK_EINVAL;
    }
    snprintf(s->layout[o], sizeof s->layout[o], "%s", layout);
    if (layout[0] && s->ndim[o] < 0) s->ndim[o] = (int)strlen(layout);
  }
  return STK_OK;
}

stk_status stk__extsrc_init(stk__op *op, char *err, size_t err_size) {
  stk__extsrc_state *s = calloc(1, sizeof *s);
  if (!s) return STK_ENOMEM;
  op->state = s;
  pthread_mutex_init(&s->lock, NULL);
  s->num_outputs = (int)stk__arg_int(op, "num_outputs");
  s->batch_size = op->options ? op->options->batch_size : 1;
  s->dynamic = op->options ? op->options->exec_dynamic : 0;
  s->no_copy = stk__arg_bool(op, "no_copy");
  s->on_gpu = op->device != STK__DEV_CPU;
  s->device_id = op->options ? op->options->device_id : -1;
  if (op->options && op->options->skip_bad_files) { /* refill streams samples across batches */
    stk__errorf(err, err_size, "skip_bad_files does not apply to an external source (its batches are fed as they are)");
    return STK_EINVAL;
  }
  if (s->num_outputs < 1 || s->num_outputs > EXTSRC_MAX_OUTPUTS) {
    stk__errorf(err, err_size, "argument 'num_outputs' must lie in 1..%d, got %d", EXTSRC_MAX_OUTPUTS, s->num_outputs);
    return STK_EINVAL;
  }
  return per_output_args(op, s, err, err_size);
}

void stk__extsrc_destroy(stk__op *op) {
  stk__extsrc_state *s = op->state;
  if (!s) return;
  for (int e = 0; e < s->num_entries; e++) {
    stk__extsrc_entry *entry = s->entries[e];
    for (int i = 0; i < s->num_outputs * s->batch_size; i++)
      if (entry->samples[i].capacity) stk__tensor_free(&entry->samples[i]);
    stk__extsrc_entry_free_gpu(s, entry);
    free(entry->samples);
    free(entry);
  }
  free(s->entries);
  pthread_mutex_destroy(&s->lock);
  free(s);
  op->state = NULL;
}

/* ---- Feeding (consumer's thread) ------------------------------------------------------------ */
/* 1 when product(shape) x element size is v->nbytes (checked without overflow), so nothing is
 * allocated from a shape that the bytes do not back. */
static int declared_size_matches(const stk_tensor_view *v) {
  size_t bytes = stk_dtype_size(v->dtype);
  for (int d = 0; d < v->ndim; d++)
    if (v->shape[d] < 0 || __builtin_mul_overflow(bytes, (size_t)v->shape[d], &bytes)) return 0;
  return bytes == v->nbytes;
}

/* A fed batch that is copied (not borrowed) must fit the pipeline's host memory budget: refused by
 * its declared sizes before any byte is copied, naming the largest sample. */
static stk_status check_budget(const stk__op *op, const stk__extsrc_state *s, const stk_tensor_view *samples,
                               int count, int borrow, char *err, size_t err_size) {
  size_t limit = op->host_budget ? op->host_budget->limit : 0, total = 0, largest = 0;
  int largest_at = 0;
  if (borrow || limit == 0 || limit == SIZE_MAX) return STK_OK;
  for (int i = 0; i < s->num_outputs * count; i++) {
    if (samples[i].device_type != STK_DEVICE_CPU) continue;
    total = samples[i].nbytes > SIZE_MAX - total ? SIZE_MAX : total + samples[i].nbytes;
    if (samples[i].nbytes > largest) largest = samples[i].nbytes, largest_at = i;
  }
  if (total <= limit) return STK_OK;
  stk__errorf(err, err_size,
              "external_source %s: the fed batch holds %.1f MiB (sample %d of output %d: %.1f MiB), more than the "
              "host memory budget of %.1f MiB (options.host_memory_budget); refused before copying it",
              op->name, (double)total / 1048576.0, largest_at % count, largest_at / count,
              (double)largest / 1048576.0, (double)limit / 1048576.0);
  return STK_ERANGE;
}

/* Checks sample s of output o against the arguments and the batch's first sample. */
static stk_status check_sample(const stk__op *op, const stk__extsrc_state *st, const stk_tensor_view *v,
                               const stk_tensor_view *first, int o, int s, char *err, size_t err_size) {
  const char *what = NULL;
  char detail[160] = "";
  if (v->device_type == STK_DEVICE_GPU && (what = stk__extsrc_check_gpu_view(st, v, detail, sizeof detail))) {
  } else if (v->device_type != STK_DEVICE_CPU && v->device_type != STK_DEVICE_GPU) {
    what = "is in memory of an unknown device type";
  } else if (v->ndim < 0 || v->ndim > STK_MAX_DIMS - 1) {
    what = "has an unsupported number of dimensions";
    snprintf(detail, sizeof detail, "(%d; at most %d per sample)", v->ndim, STK_MAX_DIMS - 1);
  } else if ((unsigned)v->dtype >= sizeof kDtypeNames / sizeof kDtypeNames[0]) {
    what = "has an unknown dtype";
  } else if (st->dtype[o] >= 0 && (int)v->dtype != st->dtype[o]) {
    what = "has the wrong dtype";
    snprintf(detail, sizeof detail, "(%s, expected %s)", kDtypeNames[v->dtype], kDtypeNames[st->dtype[o]]);
  } else if (st->ndim[o] >= 0 && v->ndim != st->ndim[o]) {
    what = "has the wrong number of dimensions";
    snprintf(detail, sizeof detail, "(%d, expected ndim=%d)", v->ndim, st->ndim[o]);
  } else if (v->dtype != first->dtype || v->ndim != first->ndim) {
    what = "differs from sample 0 of the batch";
    snprintf(detail, sizeof detail, "(%s with %d dims vs %s with %d: a batch has one dtype and ndim)",
             kDtypeNames[v->dtype], v->ndim, kDtypeNames[first->dtype], first->ndim);
  } else if (st->layout[o][0] && v->layout[0] && strcmp(v->layout, st->layout[o]) != 0) {
    what = "has the wrong layout";
    snprintf(detail, sizeof detail, "(\"%.7s\", expected \"%s\")", v->layout, st->layout[o]);
  } else if (v->nbytes && !v->data) {
    what = "has no data";
  } else if (!declared_size_matches(v)) {
    what = "has a byte size that its shape and dtype do not make";
    snprintf(detail, sizeof detail, "(nbytes %zu)", v->nbytes);
  }
  if (!what) return STK_OK;
  stk__errorf(err, err_size, "external_source %s: sample %d of output %d %s %s", op->name, s, o, what, detail);
  return STK_EINVAL;
}

/* Under lock: a free entry (made when none is), or NULL on out-of-memory. */
static stk__extsrc_entry *take_free_entry(stk__extsrc_state *s) {
  for (int e = 0; e < s->num_entries; e++)
    if (s->entries[e]->state == ENTRY_FREE) return s->entries[e];
  stk__extsrc_entry **bigger = realloc(s->entries, (size_t)(s->num_entries + 1) * sizeof *bigger);
  if (!bigger) return NULL;
  s->entries = bigger;
  stk__extsrc_entry *entry = calloc(1, sizeof *entry);
  if (entry) entry->samples = calloc((size_t)s->num_outputs * (size_t)s->batch_size, sizeof *entry->samples);
  if (!entry || !entry->samples) {
    if (entry) free(entry);
    return NULL;
  }
  s->entries[s->num_entries++] = entry;
  return entry;
}

/* t becomes a view of v's memory (capacity 0: not ours to free). */
static void set_view(stk__tensor *t, const stk_tensor_view *v, const char *layout) {
  if (t->capacity) stk__tensor_free(t);
  t->data = v->data;
  t->nbytes = v->nbytes;
  t->dtype = v->dtype;
  t->ndim = v->ndim;
  memcpy(t->shape, v->shape, sizeof t->shape);
  snprintf(t->layout, sizeof t->layout, "%s", layout);
  t->device = v->device_type;
}

/* Fills entry with the batch (copies, or views when borrowing; GPU samples: stk__extsrc_fill_gpu).
 * The entry is not queued yet, so nobody else reads it (on a GPU node: once its last copies out
 * are done, stk__extsrc_entry_wait). */
static stk_status fill_entry(stk__extsrc_state *s, stk__extsrc_entry *entry, const stk_tensor_view *samples, int count,
                             int borrow) {
  stk_status st = stk__extsrc_entry_wait(entry);
  entry->borrowed = borrow;
  entry->count = count;
  int gpu_copies = 0;
  for (int o = 0; st == STK_OK && o < s->num_outputs; o++) {
    for (int i = 0; st == STK_OK && i < count; i++) {
      const stk_tensor_view *v = &samples[o * count + i];
      stk__tensor *t = &entry->samples[o * s->batch_size + i];
      const char *layout = v->layout[0] ? v->layout : s->layout[o];
      if (v->device_type == STK_DEVICE_GPU) {
        st = stk__extsrc_fill_gpu(s, entry, o * s->batch_size + i, v, layout, borrow);
        gpu_copies = 1;
        continue;
      }
      if (borrow) {
        set_view(t, v, layout);
        continue;
      }
      if (!t->capacity) { /* it was a view: nothing of ours to grow */
        t->data = NULL;
        t->device = STK_DEVICE_CPU;
      }
      st = stk__tensor_resize(t, v->dtype, v->ndim, v->shape, layout);
      if (st == STK_OK && t->nbytes != v->nbytes) st = STK_EINVAL;
      if (st == STK_OK && v->nbytes) memcpy(t->data, v->data, v->nbytes);
    }
  }
  if (gpu_copies) {
    stk_status wait = stk__extsrc_copies_finish(entry);
    if (st == STK_OK) st = wait;
  }
  return st;
}

static stk_status check_count(const stk__op *op, const stk__extsrc_state *s, int count, char *err, size_t err_size) {
  if (count >= 1 && count <= s->batch_size && (s->dynamic || count == s->batch_size)) return STK_OK;
  if (count >= 1 && count < s->batch_size)
    stk__errorf(err, err_size,
                "external_source %s: fed a batch of %d samples, but batch_size is %d (pass "
                "exec_dynamic=True for batches of varying size up to batch_size)",
                op->name, count, s->batch_size);
  else
    stk__errorf(err, err_size, "external_source %s: fed a batch of %d samples; it must hold 1..%d (%s)", op->name,
                count, s->batch_size, s->dynamic ? "max_batch_size" : "batch_size");
  return STK_EINVAL;
}

stk_status stk__extsrc_feed(stk__op *op, const stk_tensor_view *samples, int count, unsigned flags, char *err,
                            size_t err_size) {
  stk__extsrc_state *s = op->state;
  int end = count < 0;
  if (!end) {
    stk_status st = check_count(op, s, count, err, err_size);
    if (st == STK_OK && !samples) st = STK_EINVAL;
    for (int o = 0; st == STK_OK && o < s->num_outputs; o++)
      for (int i = 0; st == STK_OK && i < count; i++)
        st = check_sample(op, s, &samples[o * count + i], &samples[o * count], o, i, err, err_size);
    if (st == STK_OK)
      st = check_budget(op, s, samples, count, s->no_copy || (flags & STK_FEED_NO_COPY), err, err_size);
    if (st != STK_OK) return st;
  }
  pthread_mutex_lock(&s->lock);
  stk__extsrc_entry *entry = take_free_entry(s);
  pthread_mutex_unlock(&s->lock);
  if (!entry) return STK_ENOMEM;
  stk_status st = STK_OK;
  entry->count = -1;
  if (!end) st = fill_entry(s, entry, samples, count, s->no_copy || (flags & STK_FEED_NO_COPY));
  pthread_mutex_lock(&s->lock);
  if (st == STK_OK) {
    entry->seq = s->next_seq++;
    entry->epoch = s->feed_epoch;
    entry->state = ENTRY_QUEUED;
    if (end) s->feed_epoch++;
  } /* else the entry stays free */
  pthread_mutex_unlock(&s->lock);
  if (st == STK_EINVAL)
    stk__errorf(err, err_size, "external_source %s: a sample's byte size does not match its shape", op->name);
  else if (st != STK_OK)
    stk__errorf(err, err_size, "external_source %s: taking the fed batch failed: %s", op->name, stk_strerror(st));
  return st;
}

/* ---- Planning (scheduler) and running (workers) ---------------------------------------------- */
/* Under lock: the oldest queued entry, or NULL. */
static stk__extsrc_entry *oldest_queued(const stk__extsrc_state *s, int *index) {
  stk__extsrc_entry *best = NULL;
  for (int e = 0; e < s->num_entries; e++) {
    stk__extsrc_entry *entry = s->entries[e];
    if (entry->state == ENTRY_QUEUED && (!best || entry->seq < best->seq)) {
      best = entry;
      *index = e;
    }
  }
  return best;
}

int stk__extsrc_input_ready(stk__op *op) {
  stk__extsrc_state *s = op->state;
  int index;
  pthread_mutex_lock(&s->lock);
  int ready = oldest_queued(s, &index) != NULL;
  pthread_mutex_unlock(&s->lock);
  return ready;
}

stk_status stk__extsrc_plan(stk__op *op, stk__batch_plan *plan, char *err, size_t err_size) {
  stk__extsrc_state *s = op->state;
  int index = -1;
  pthread_mutex_lock(&s->lock);
  stk__extsrc_entry *entry = oldest_queued(s, &index);
  if (entry && entry->count < 0) {
    entry->state = ENTRY_FREE;
    s->ended = 1;
  } else if (entry) {
    entry->state = ENTRY_PLANNED;
    __atomic_store_n(&entry->remaining, entry->count, __ATOMIC_RELEASE);
  }
  pthread_mutex_unlock(&s->lock);
  if (!entry) {
    stk__errorf(err, err_size, "external_source %s: no batch was fed", op->name);
    return STK_ESTATE;
  }
  if (entry->count < 0) return STK_EOF_EPOCH;
  if (entry->count > plan->batch_size) return STK_EINTERNAL; /* feed checks it */
  plan->batch_size = entry->count;
  plan->valid_samples = entry->count;
  plan->batch_index = s->epoch_batches++;
  for (int i = 0; i < entry->count; i++) {
    plan->samples[i].sample_id = s->epoch_samples++;
    plan->samples[i].file_index = index;
    plan->samples[i].label = 0;
    plan->samples[i].source = NULL;
  }
  return STK_OK;
}

/* A reset that follows the end mark (the scheduler moving on to the next epoch while batches of
 * this one are still in flight) keeps everything. Any other reset comes mid-epoch with nothing
 * in flight (stk_pipeline_reset cancelled it): what was fed for the abandoned epochs (before the
 * end marks that precede `epoch`) is dropped, and entries of later epochs already planned into
 * the cancelled batches go back to the queue in their order. */
stk_status stk__extsrc_reset(stk__op *op, uint64_t epoch) {
  stk__extsrc_state *s = op->state;
  pthread_mutex_lock(&s->lock);
  s->epoch_samples = 0;
  s->epoch_batches = 0;
  for (int e = 0; !s->ended && e < s->num_entries; e++) {
    stk__extsrc_entry *entry = s->entries[e];
    if (entry->state == ENTRY_FREE) continue;
    if (entry->epoch < epoch) entry->state = ENTRY_FREE;
    else entry->state = ENTRY_QUEUED;
  }
  if (!s->ended && s->feed_epoch < epoch) s->feed_epoch = epoch;
  s->ended = 0;
  pthread_mutex_unlock(&s->lock);
  return STK_OK;
}

/* Checkpoint resume (src/core/checkpoint.c): the next batch fed is batch `batch_index` of
 * `epoch`. The data itself is the feeder's to resume (stoker.source_group calls a resumable
 * source from there, as DALI does); what was fed before is dropped, and the sample ids (the
 * random operators' key) continue from batch_index x batch_size, as the original run's did with
 * full batches. */
stk_status stk__extsrc_seek(stk__op *op, uint64_t epoch, int64_t batch_index, char *err, size_t err_size) {
  (void)err, (void)err_size;
  stk__extsrc_state *s = op->state;
  pthread_mutex_lock(&s->lock);
  for (int e = 0; e < s->num_entries; e++) s->entries[e]->state = ENTRY_FREE;
  s->epoch_batches = batch_index;
  s->epoch_samples = batch_index * (int64_t)s->batch_size;
  s->feed_epoch = epoch;
  s->ended = 0;
  pthread_mutex_unlock(&s->lock);
  return STK_OK;
}

/* Fed data has no listing: the fingerprint says "fed" (the graph's fingerprint names the source). */
uint64_t stk__extsrc_fingerprint(const stk__op *op, int64_t *num_samples) {
  (void)op;
  *num_samples = 0;
  return 0;
}

stk__extsrc_entry *stk__extsrc_planned(stk__extsrc_state *s, int64_t index) {
  pthread_mutex_lock(&s->lock);
  stk__extsrc_entry *entry = index >= 0 && index < s->num_entries ? s->entries[index] : NULL;
  if (entry && entry->state != ENTRY_PLANNED) entry = NULL;
  pthread_mutex_unlock(&s->lock);
  return entry;
}

void stk__extsrc_release(stk__extsrc_state *s, stk__extsrc_entry *entry) {
  pthread_mutex_lock(&s->lock);
  entry->state = ENTRY_FREE;
  pthread_mutex_unlock(&s->lock);
}

static stk_status extsrc_run(stk__op *op, stk__sample_ctx *ctx, stk__tensor *const *inputs,
                             stk__tensor *const *outputs) {
  (void)inputs;
  stk__extsrc_state *s = op->state;
  stk__extsrc_entry *entry = stk__extsrc_planned(s, ctx->plan->file_index);
  if (!entry || ctx->sample_in_batch >= entry->count) return STK_EINTERNAL;
  stk_status st = STK_OK;
  for (int o = 0; o < s->num_outputs && st == STK_OK; o++) {
    const stk__tensor *src = &entry->samples[o * s->batch_size + ctx->sample_in_batch];
    stk__tensor *out = outputs[o];
    if (!src->capacity) { /* a view of the caller's memory, valid until the batch is released */
      if (out->capacity) stk__tensor_free(out);
      out->data = src->data;
      out->nbytes = src->nbytes;
      out->dtype = src->dtype;
      out->ndim = src->ndim;
      memcpy(out->shape, src->shape, sizeof out->shape);
      memcpy(out->layout, src->layout, sizeof out->layout);
      continue;
    }
    if (!out->capacity) out->data = NULL; /* a view left from a borrowed batch: not ours */
    st = stk__tensor_resize(out, src->dtype, src->ndim, src->shape, src->layout);
    if (st == STK_OK && src->nbytes) memcpy(out->data, src->data, src->nbytes);
  }
  if (__atomic_sub_fetch(&entry->remaining, 1, __ATOMIC_ACQ_REL) == 0) stk__extsrc_release(s, entry);
  return st;
}

const stk__op_impl stk__cpu_impl_external_source = {.init = stk__extsrc_init,
                                                    .destroy = stk__extsrc_destroy,
                                                    .plan_batch = stk__extsrc_plan,
                                                    .reset = stk__extsrc_reset,
                                                    .run_sample = extsrc_run,
                                                    .feed = stk__extsrc_feed,
                                                    .input_ready = stk__extsrc_input_ready,
                                                    .seek = stk__extsrc_seek,
                                                    .data_fingerprint = stk__extsrc_fingerprint};

static const stk__arg_schema extsrc_args[] = {
    {"num_outputs", STK_ARG_INT, "1", 0, 0, "outputs fed per batch (1..8); node outputs beyond it stay empty"},
    {"dtype", STK_ARG_STRING_LIST, "[]", 0, 0,
     "expected element type, one for all outputs or one per output (empty: any); a fed sample of another type is "
     "an error naming the source and the sample"},
    {"ndim", STK_ARG_INT_LIST, "[]", 0, 0, "expected dimensions per sample (no batch axis), one or one per output"},
    {"layout", STK_ARG_STRING_LIST, "[]", 0, 0,
     "layout per sample (e.g. \"HWC\"), one or one per output: given to samples fed without one, checked against "
     "those fed with one"},
    {"no_copy", STK_ARG_BOOL, "false", 0, 0,
     "borrow the fed memory instead of copying it: it must stay valid and unchanged until the batch made from it "
     "is released"},
};

const stk__op_schema stk__op_external_source = {
    .name = "external_source",
    .doc =
        "Batches fed from outside the pipeline (stk_pipeline_feed_input; in Python the `source` callable or "
        "iterable, or pipe.feed_input). One batch per iteration, in the order fed; the pipeline never runs "
        "ahead of the data; an end mark (stk_pipeline_feed_end; StopIteration from the source) ends the "
        "epoch. With exec_dynamic each batch may hold 1..batch_size samples.",
    .min_inputs = 0,
    .max_inputs = 0,
    .num_outputs = EXTSRC_MAX_OUTPUTS,
    .devices = STK_OPDEV_CPU | STK_OPDEV_GPU,
    .args = extsrc_args,
    .num_args = (int)(sizeof extsrc_args / sizeof extsrc_args[0]),
    .is_reader = 1,
};
