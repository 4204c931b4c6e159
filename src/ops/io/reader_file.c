/* src/ops/io/reader_file.c: readers.file -- lists a data set of encoded files and plans which
 * sample fills each slot of each batch; run_sample reads one file (one open + read loop).
 * Hot path: run_sample (per sample, worker threads) and plan_batch (per batch, O(batch_size)).
 * Listing, sharding and shuffling run at init/reset time.
 *
 * Semantics (docs/operators-io.md has the full story):
 *   - file_root: one subdirectory per class, labels = index of the subdirectory in byte-wise
 *     sorted order; files found recursively below each class directory, sorted; only files
 *     matching file_filters (default: the image formats decoders.image reads, case-insensitive) are kept.
 *   - file_list: "path label" per line (label = last field); paths relative to file_root, or to
 *     the directory of the list when file_root is not given.
 *   - files (+ labels, default 0..n-1): paths relative to file_root when given.
 *   - shards: shard s holds data-set positions [floor(N*s/S), floor(N*(s+1)/S)) (DALI's rule);
 *     epoch e reads shard (shard_id + e) % S unless stick_to_shard.
 *   - shuffle_after_epoch: the whole data set is permuted each epoch by a permutation keyed by
 *     (seed, epoch) -- identical on every rank with the same seed, so shards stay disjoint and
 *     cover every sample exactly once per epoch; with stick_to_shard only the shard's own samples
 *     are permuted (keyed by (seed, epoch, shard)).
 *   - random_shuffle: the same per-epoch permutation, then DALI's shuffle buffer: initial_fill
 *     samples are buffered and each output is drawn at random from the buffer, its place taken
 *     by the next sample. Everything is precomputed at reset, deterministic by seed.
 *   - last batch: every shard gives ceil(max shard size / batch) batches (equal steps per rank);
 *     without pad_last_batch, the slots after the shard's last sample are filled by wrapping to
 *     the start of the shard's order; with pad_last_batch by repeating the last sample. Fill
 *     slots have is_fill = 1 and do not count in valid_samples. */
#include "ops/common/dali_hints.h"
#include "ops/io/reader_file.h"
#include "ops/io/reader_file_list.h"
#include "ops/io/reader_file_read.h"
#include "ops/io/shuffle.h"
#include "ops/op_impls.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct stk__file_reader {
  stk__file_reader_config config; /* pointers in it are not kept past init */
  stk__sample_table table;        /* paths and labels of the whole data set */
  uint64_t epoch;
  int shard; /* shard read this epoch */
  int64_t shard_begin, shard_size;
  int64_t max_shard_size;
  int64_t *order; /* this epoch's data-set indices, shard_size entries (a normal epoch) */
  int64_t next_batch, num_batches;
  /* What plan reads: slot k of batch b is view[(b - batch_base) * batch_size + k] while that is
   * below shard_size, else fill from fill_source[0..fill_count). A normal epoch: order, base 0. */
  const int64_t *view, *fill_source;
  int64_t fill_count, batch_base;
  /* Resharded mid-epoch (set_reshard, reader_file_reshard.c): in epoch cuts_epoch the reader reads
   * the remainder (owned) the cuts left; pending_* is what set_reshard gave, taken by the next seek. */
  stk__reshard_cut cuts[STK__RESHARD_MAX_CUTS], pending_cuts[STK__RESHARD_MAX_CUTS];
  int num_cuts, pending_num, has_pending;
  uint64_t cuts_epoch, pending_epoch;
  int64_t *remainder;
  int64_t remainder_batches, remainder_full_batches; /* of epoch cuts_epoch, counted from its batch 0 */
  uint64_t listing_fingerprint;                      /* stk__file_reader_fingerprint, computed once at init */
  stk__read_ahead read_ahead;                        /* read_ahead's state (reader_file_read.h) */
};

/* ---- Order ---------------------------------------------------------------------------------- */
static int64_t shard_begin(int64_t n, int shard, int shards) { return n * shard / shards; }

/* The shard read in epoch `epoch`. */
static int epoch_shard(const stk__file_reader_config *c, uint64_t epoch) {
  return stk__shuffle_epoch_shard(c->stick_to_shard, c->shard_id, c->num_shards, epoch);
}

stk_status stk__file_epoch_sequence(const stk__file_reader_config *c, int64_t n, uint64_t epoch, int64_t **out) {
  *out = NULL;
  if (!(c->random_shuffle || c->shuffle_after_epoch) || c->stick_to_shard) return STK_OK;
  int64_t *all = malloc((size_t)n * sizeof *all);
  if (!all) return STK_ENOMEM;
  for (int64_t i = 0; i < n; i++) all[i] = i;
  stk__shuffle_permute(all, sizeof *all, n, STK__SHUFFLE_FILES, c->seed, epoch, 0);
  *out = all;
  return STK_OK;
}

/* DALI's shuffle buffer (initial_fill) over order[0..size), in place. */
static stk_status shuffle_buffer(const stk__file_reader_config *c, uint64_t epoch, int shard, int64_t *order,
                                 int64_t size) {
  int64_t fill = c->initial_fill < size ? c->initial_fill : size;
  int64_t *buffer = malloc((size_t)fill * sizeof *buffer);
  int64_t *out = malloc((size_t)size * sizeof *out);
  if (!buffer || !out) {
    free(buffer);
    free(out);
    return STK_ENOMEM;
  }
  memcpy(buffer, order, (size_t)fill * sizeof *buffer);
  int64_t in_buffer = fill, next = fill;
  const int64_t stream = stk__shuffle_buffer_stream(shard);
  for (int64_t k = 0; k < size; k++) {
    int64_t j = stk__shuffle_index(STK__SHUFFLE_FILES, c->seed, epoch, stream, k, in_buffer);
    out[k] = buffer[j];
    if (next < size) buffer[j] = order[next++];
    else buffer[j] = buffer[--in_buffer];
  }
  memcpy(order, out, (size_t)size * sizeof *out);
  free(out);
  free(buffer);
  return STK_OK;
}

stk_status stk__file_shard_order(const stk__file_reader_config *c, int64_t n, uint64_t epoch, int shards, int shard,
                                 const int64_t *all, int64_t *out, int64_t *size) {
  const int64_t begin = shard_begin(n, shard, shards);
  *size = shard_begin(n, shard + 1, shards) - begin;
  int permuted = c->random_shuffle || c->shuffle_after_epoch;
  if (all) { /* the whole data set permuted the same way on every rank, then this shard's slice */
    memcpy(out, all + begin, (size_t)*size * sizeof *all);
  } else {
    for (int64_t i = 0; i < *size; i++) out[i] = begin + i;
    if (permuted) stk__shuffle_permute(out, sizeof *out, *size, STK__SHUFFLE_FILES, c->seed, epoch, 1 + shard);
  }
  if (c->random_shuffle && c->initial_fill > 1 && *size > 0) return shuffle_buffer(c, epoch, shard, out, *size);
  return STK_OK;
}

/* The epoch's remainder after a mid-epoch resharding (reader_file_reshard.c) as this epoch's plan. */
static stk_status build_remainder(stk__file_reader *r, char *err, size_t err_size) {
  stk__file_remainder rem;
  stk_status st =
      stk__file_remainder_new(&r->config, r->table.count, r->epoch, r->cuts, r->num_cuts, &rem, err, err_size);
  if (st != STK_OK) return st;
  free(r->remainder);
  r->remainder = rem.seq;
  r->view = rem.seq + rem.lo;
  r->shard_size = rem.hi - rem.lo;
  r->fill_source = r->shard_size > 0 ? r->view : rem.seq;
  r->fill_count = r->shard_size > 0 ? r->shard_size : rem.size;
  r->batch_base = r->cuts[r->num_cuts - 1].position;
  r->num_batches = r->batch_base + rem.batches;
  r->remainder_batches = r->num_batches, r->remainder_full_batches = r->batch_base + rem.full_batches;
  r->next_batch = r->batch_base;
  return STK_OK;
}

static stk_status build_order(stk__file_reader *r, char *err, size_t err_size) {
  const stk__file_reader_config *c = &r->config;
  const int64_t n = r->table.count;
  stk__read_ahead_epoch(&r->read_ahead);
  r->shard = epoch_shard(c, r->epoch);
  if (r->num_cuts > 0 && r->cuts_epoch == r->epoch) return build_remainder(r, err, err_size);
  r->shard_begin = shard_begin(n, r->shard, c->num_shards);
  r->shard_size = shard_begin(n, r->shard + 1, c->num_shards) - r->shard_begin;
  if (r->shard_size <= 0) {
    stk__errorf(err, err_size, "shard %d of %d is empty (the data set has %lld samples)", r->shard, c->num_shards,
                (long long)n);
    return STK_EINVAL;
  }
  int64_t *all, size;
  stk_status st = stk__file_epoch_sequence(c, n, r->epoch, &all);
  if (st == STK_OK) st = stk__file_shard_order(c, n, r->epoch, c->num_shards, r->shard, all, r->order, &size);
  free(all);
  if (st != STK_OK) return st;
  r->view = r->fill_source = r->order;
  r->fill_count = r->shard_size;
  r->batch_base = 0;
  const int64_t bs = c->batch_size;
  /* Every shard gives the same number of batches, padded or not: with DDP a rank that ends its
   * epoch before the others hangs the job (DALI's iterators count ceil(max shard / batch) steps on
   * every rank too). A smaller shard's extra slots are fill (wrapped or repeated, not valid). */
  r->num_batches = (r->max_shard_size + bs - 1) / bs;
  r->next_batch = 0;
  return STK_OK;
}

/* ---- Public (internal) API ------------------------------------------------------------------ */
stk_status stk__file_reader_new(const stk__file_reader_config *config, stk__file_reader **out, char *err,
                                size_t err_size) {
  *out = NULL;
  const stk__file_reader_config *c = config;
  int have_root = c->file_root && c->file_root[0], have_list = c->file_list && c->file_list[0];
  int have_files = c->files && c->num_files > 0;
  if (have_list && have_files) {
    stk__errorf(err, err_size, "give either file_list or files, not both");
    return STK_EINVAL;
  }
  if (!have_root && !have_list && !have_files) {
    stk__errorf(err, err_size, "no data: give file_root, file_list or files");
    return STK_EINVAL;
  }
  if (c->labels && !have_files) {
    stk__errorf(err, err_size, "labels is only valid together with files");
    return STK_EINVAL;
  }
  if (c->num_shards < 1 || c->shard_id < 0 || c->shard_id >= c->num_shards) {
    stk__errorf(err, err_size, "shard_id %d is not in [0, num_shards=%d)", c->shard_id, c->num_shards);
    return STK_EINVAL;
  }
  if (c->batch_size < 1) {
    stk__errorf(err, err_size, "batch_size %d must be >= 1", c->batch_size);
    return STK_EINVAL;
  }
  if (c->initial_fill < 1) {
    stk__errorf(err, err_size, "initial_fill %lld must be >= 1", (long long)c->initial_fill);
    return STK_EINVAL;
  }
  stk__file_reader *r = calloc(1, sizeof *r);
  if (!r) return STK_ENOMEM;
  r->config = *c;
  stk__read_ahead_init(&r->read_ahead, c->read_ahead);
  stk_status st = stk__sample_table_list(&r->table, c, err, err_size);
  /* Nothing below keeps pointers into the caller's config. */
  r->config.file_root = r->config.file_list = NULL;
  r->config.files = NULL, r->config.labels = NULL, r->config.file_filters = NULL;
  if (st == STK_OK && r->table.count == 0) {
    if (have_files) stk__errorf(err, err_size, "files is empty");
    else if (have_list) stk__errorf(err, err_size, "file_list %s lists no files", c->file_list);
    else stk__errorf(err, err_size, "no files matching the filters under %s", c->file_root);
    st = STK_ENOENT;
  }
  if (st == STK_OK && r->table.count < c->num_shards) {
    stk__errorf(err, err_size, "%lld samples cannot fill num_shards=%d shards", (long long)r->table.count,
                c->num_shards);
    st = STK_EINVAL;
  }
  if (st == STK_OK) {
    for (int s = 0; s < c->num_shards; s++) {
      int64_t size = shard_begin(r->table.count, s + 1, c->num_shards) - shard_begin(r->table.count, s, c->num_shards);
      if (size > r->max_shard_size) r->max_shard_size = size;
    }
    r->order = malloc((size_t)r->max_shard_size * sizeof *r->order);
    st = r->order ? build_order(r, err, err_size) : STK_ENOMEM;
  }
  if (st != STK_OK) {
    if (st == STK_ENOMEM && (!err || !err[0])) stk__errorf(err, err_size, "out of memory listing the data set");
    stk__file_reader_free(r);
    return st;
  }
  r->listing_fingerprint = stk__file_reader_fingerprint(r); /* O(listing), as the listing itself */
  *out = r;
  return STK_OK;
}

void stk__file_reader_free(stk__file_reader *r) {
  if (!r) return;
  stk__sample_table_free(&r->table);
  free(r->order);
  free(r->remainder);
  free(r);
}

int64_t stk__file_reader_size(const stk__file_reader *r) { return r->table.count; }
const char *stk__file_reader_path(const stk__file_reader *r, int64_t i) {
  return r->table.arena + r->table.path_offset[i];
}
int32_t stk__file_reader_label(const stk__file_reader *r, int64_t i) { return r->table.labels[i]; }
int64_t stk__file_reader_batches(const stk__file_reader *r) { return r->num_batches; }

stk_status stk__file_reader_plan(stk__file_reader *r, stk__batch_plan *plan) {
  if (r->next_batch >= r->num_batches) return STK_EOF_EPOCH;
  const int bs = r->config.batch_size;
  const int64_t first = (r->next_batch - r->batch_base) * bs;
  plan->epoch = r->epoch;
  plan->batch_index = r->next_batch;
  plan->batch_size = bs;
  plan->valid_samples = 0;
  for (int k = 0; k < bs; k++) {
    int64_t pos = first + k;
    int is_fill = pos >= r->shard_size;
    int64_t index;
    if (is_fill) index = r->fill_source[r->config.pad_last_batch ? r->fill_count - 1 : pos % r->fill_count];
    else {
      index = r->view[pos];
      plan->valid_samples++;
    }
    stk__sample_plan *s = &plan->samples[k];
    s->sample_id = index;
    s->file_index = index;
    s->label = r->table.labels[index];
    s->source = r->table.arena + r->table.path_offset[index];
    s->is_fill = is_fill;
  }
  r->next_batch++;
  plan->last_in_epoch = r->next_batch == r->num_batches;
  return STK_OK;
}

stk_status stk__file_reader_reset(stk__file_reader *r, uint64_t epoch) {
  r->epoch = epoch;
  char err[256];
  return build_order(r, err, sizeof err);
}

stk_status stk__file_reader_seek(stk__file_reader *r, uint64_t epoch, int64_t batch_index, char *err, size_t err_size) {
  int rebuild = r->epoch != epoch || r->next_batch != r->batch_base;
  if (r->has_pending) { /* set_reshard: the cuts in force from now on */
    memcpy(r->cuts, r->pending_cuts, sizeof r->cuts);
    r->num_cuts = r->pending_num, r->cuts_epoch = r->pending_epoch;
    r->has_pending = 0, rebuild = 1;
  }
  if (rebuild) { /* the order of `epoch` (O(shard), no file read) */
    r->epoch = epoch;
    stk_status st = build_order(r, err, err_size);
    if (st != STK_OK) return st;
  }
  if (batch_index < r->batch_base) {
    stk__errorf(err, err_size,
                "batch %lld of epoch %llu is before the point (batch %lld) where the epoch was resharded",
                (long long)batch_index, (unsigned long long)epoch, (long long)r->batch_base);
    return STK_EINVAL;
  }
  if (batch_index < 0 || batch_index > r->num_batches) {
    stk__errorf(err, err_size, "batch %lld is outside epoch %llu, which has %lld batches", (long long)batch_index,
                (unsigned long long)epoch, (long long)r->num_batches);
    return STK_EINVAL;
  }
  r->next_batch = batch_index;
  return STK_OK;
}

/* FNV-1a, 64 bits. */
static uint64_t fnv1a(uint64_t h, const void *data, size_t n) {
  const unsigned char *p = data;
  for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 0x100000001b3ull;
  return h;
}

uint64_t stk__file_reader_fingerprint(const stk__file_reader *r) {
  uint64_t h = 0xcbf29ce484222325ull;
  int64_t n = r->table.count;
  h = fnv1a(h, &n, sizeof n);
  for (int64_t i = 0; i < n; i++) {
    const char *path = stk__file_reader_path(r, i);
    h = fnv1a(h, path, strlen(path) + 1);
    h = fnv1a(h, &r->table.labels[i], sizeof r->table.labels[i]);
  }
  return h;
}

void stk__file_reader_meta(const stk__file_reader *r, uint64_t epoch, stk_reader_meta *out) {
  const stk__file_reader_config *c = &r->config;
  const int shard = epoch_shard(c, epoch);
  const int64_t padded_batches = (r->max_shard_size + c->batch_size - 1) / c->batch_size;
  out->epoch_size = r->table.count;
  out->epoch_size_padded = c->pad_last_batch ? padded_batches * c->batch_size * c->num_shards : r->table.count;
  out->shard_size =
      shard_begin(r->table.count, shard + 1, c->num_shards) - shard_begin(r->table.count, shard, c->num_shards);
  out->shard_id = shard;
  out->num_shards = c->num_shards;
  out->pad_last_batch = c->pad_last_batch;
  out->stick_to_shard = c->stick_to_shard;
  /* every shard plans ceil(largest shard / batch) batches; the smallest, floor(N / S), is full for
   * floor(floor(N / S) / batch) of them. A resharded remainder (reader_file_reshard.c) has its own. */
  int remainder = r->num_cuts > 0 && r->cuts_epoch == epoch;
  out->epoch_batches = remainder ? r->remainder_batches : padded_batches;
  out->epoch_full_batches = remainder ? r->remainder_full_batches : r->table.count / c->num_shards / c->batch_size;
}

/* ---- The operator --------------------------------------------------------------------------- */
void stk__file_reader_order_args(const stk__op *op, stk__file_reader_config *c) {
  c->random_shuffle = stk__arg_bool(op, "random_shuffle");
  c->shuffle_after_epoch = stk__arg_bool(op, "shuffle_after_epoch");
  c->initial_fill = stk__arg_int(op, "initial_fill");
  c->shard_id = (int)stk__arg_int(op, "shard_id");
  c->num_shards = (int)stk__arg_int(op, "num_shards");
  c->stick_to_shard = stk__arg_bool(op, "stick_to_shard");
  c->pad_last_batch = stk__arg_bool(op, "pad_last_batch");
  int64_t seed = stk__arg_int(op, "seed");
  c->seed = seed >= 0 ? (uint64_t)seed : op->seed;
  c->batch_size = op->options ? op->options->batch_size : 1;
}

static stk_status reader_init(stk__op *op, char *err, size_t err_size) {
  stk__file_reader_config c = {0};
  c.file_root = stk__arg_string(op, "file_root");
  c.file_list = stk__arg_string(op, "file_list");
  c.files = stk__arg_string_list(op, "files", &c.num_files);
  c.labels = stk__arg_is_set(op, "labels") ? stk__arg_int_list(op, "labels", &c.num_labels) : NULL;
  c.file_filters =
      stk__arg_is_set(op, "file_filters") ? stk__arg_string_list(op, "file_filters", &c.num_filters) : NULL;
  if (c.file_filters && c.num_filters == 0) c.file_filters = NULL;
  c.case_sensitive_filter = stk__arg_bool(op, "case_sensitive_filter");
  c.read_ahead = stk__arg_bool(op, "read_ahead");
  stk__file_reader_order_args(op, &c);
  stk__file_reader *reader;
  stk_status st = stk__file_reader_new(&c, &reader, err, err_size);
  if (st == STK_OK) {
    op->state = reader;
    stk__errorf(err, err_size, "%s", reader->table.warning); /* a warning: init succeeded */
  }
  return st;
}

static void reader_destroy(stk__op *op) {
  stk__file_reader_free((stk__file_reader *)op->state);
  op->state = NULL;
}

/* read_ahead, once a read of this epoch has missed the page cache (reader_file_read.h): the kernel
 * starts reading every file of the batch just planned, so their reads are in flight while the
 * workers are still on earlier batches. Three system calls a file, on the planning thread. */
static void read_ahead(stk__file_reader *r, const stk__batch_plan *plan) {
  if (!plan->samples || !stk__read_ahead_wanted(&r->read_ahead)) return;
  for (int i = 0; i < plan->batch_size; i++) {
    int64_t index = plan->samples[i].file_index;
    if (index >= 0 && index < r->table.count) stk__read_ahead_hint(stk__file_reader_path(r, index));
  }
}

stk__read_ahead *stk__file_reader_read_ahead(stk__file_reader *r) { return &r->read_ahead; }

static stk_status reader_plan_batch(stk__op *op, stk__batch_plan *plan, char *err, size_t err_size) {
  stk__file_reader *r = (stk__file_reader *)op->state;
  stk_status st = stk__file_reader_plan(r, plan);
  if (st == STK_EOF_EPOCH) stk__errorf(err, err_size, "end of epoch: reset the reader");
  if (st == STK_OK) read_ahead(r, plan);
  return st;
}

static stk_status reader_reset(stk__op *op, uint64_t epoch) {
  return stk__file_reader_reset((stk__file_reader *)op->state, epoch);
}

static stk_status reader_seek(stk__op *op, uint64_t epoch, int64_t batch_index, char *err, size_t err_size) {
  return stk__file_reader_seek((stk__file_reader *)op->state, epoch, batch_index, err, err_size);
}

static stk_status reader_set_reshard(stk__op *op, uint64_t epoch, const stk__reshard_cut *cuts, int num_cuts, char *err,
                                     size_t err_size) {
  return stk__file_reader_set_reshard((stk__file_reader *)op->state, epoch, cuts, num_cuts, err, err_size);
}

static int reader_get_reshard(const stk__op *op, uint64_t epoch, stk__reshard_cut *cuts) {
  const stk__file_reader *r = (const stk__file_reader *)op->state;
  if (r->num_cuts == 0 || r->cuts_epoch != epoch) return 0;
  memcpy(cuts, r->cuts, (size_t)r->num_cuts * sizeof *cuts);
  return r->num_cuts;
}

stk_status stk__file_reader_set_reshard(stk__file_reader *r, uint64_t epoch, const stk__reshard_cut *cuts, int num_cuts,
                                        char *err, size_t err_size) {
  if (num_cuts < 0 || num_cuts > STK__RESHARD_MAX_CUTS) {
    stk__errorf(err, err_size, "%d reshardings in one epoch, at most %d", num_cuts, STK__RESHARD_MAX_CUTS);
    return STK_EINVAL;
  }
  if (num_cuts) memcpy(r->pending_cuts, cuts, (size_t)num_cuts * sizeof *cuts);
  r->pending_num = num_cuts, r->pending_epoch = epoch, r->has_pending = 1;
  return STK_OK;
}

static uint64_t reader_fingerprint(const stk__op *op, int64_t *num_samples) {
  const stk__file_reader *r = (const stk__file_reader *)op->state;
  *num_samples = r->table.count;
  return r->listing_fingerprint;
}

static void reader_meta(const stk__op *op, uint64_t epoch, stk_reader_meta *out) {
  stk__file_reader_meta((const stk__file_reader *)op->state, epoch, out);
}

static stk_status reader_run_sample(stk__op *op, stk__sample_ctx *ctx, stk__tensor *const *inputs,
                                    stk__tensor *const *outputs) {
  stk__file_reader *r = (stk__file_reader *)op->state;
  int64_t index = ctx->plan ? ctx->plan->file_index : ctx->sample_id;
  if (index < 0 || index >= r->table.count) {
    stk__errorf(ctx->err, ctx->err_size, "sample %lld is outside the data set (%lld files)", (long long)index,
                (long long)r->table.count);
    return STK_EINTERNAL;
  }
  stk_status st =
      stk__read_file(stk__file_reader_path(r, index), &r->read_ahead, ctx, outputs, ctx->err, ctx->err_size);
  if (st != STK_OK) return st;
  int64_t one = 1;
  st = stk__sample_output_resize(ctx, outputs, 1, STK_DTYPE_INT32, 1, &one, "");
  if (st != STK_OK) return st;
  *(int32_t *)outputs[1]->data = r->table.labels[index];
  return STK_OK;
}

const stk__op_impl stk__cpu_impl_readers_file = {
    .init = reader_init,
    .destroy = reader_destroy,
    .plan_batch = reader_plan_batch,
    .reset = reader_reset,
    .reader_meta = reader_meta,
    .run_sample = reader_run_sample,
    .seek = reader_seek,
    .data_fingerprint = reader_fingerprint,
    .set_reshard = reader_set_reshard,
    .get_reshard = reader_get_reshard,
};

static const stk__arg_schema reader_args[] = {
    {"file_root", STK_ARG_STRING, NULL, 0, 0,
     "Directory with one subdirectory per class (labels = sorted subdirectory index); base of relative "
     "paths in file_list/files."},
    {"file_list", STK_ARG_STRING, NULL, 0, 0,
     "Text file of \"path label\" lines; paths relative to file_root (or to the list's directory)."},
    {"files", STK_ARG_STRING_LIST, NULL, 0, 0, "Explicit list of file paths (relative to file_root when given)."},
    {"labels", STK_ARG_INT_LIST, NULL, 0, 0, "Labels for `files` (default: 0, 1, 2, ...)."},
    {"file_filters", STK_ARG_STRING_LIST, NULL, 0, 0,
     "Glob patterns of the files listed under file_root (default: the formats decoders.image reads: *.jpg, "
     "*.jpeg, *.png, *.webp, *.bmp, *.tif, *.tiff, *.pnm, *.ppm, *.pgm, *.pbm)."},
    {"case_sensitive_filter", STK_ARG_BOOL, "false", 0, 0, "Match file_filters case-sensitively."},
    {"random_shuffle", STK_ARG_BOOL, "false", 0, 0,
     "Shuffle: a full permutation each epoch keyed by (seed, epoch), then a shuffle buffer of initial_fill."},
    {"shuffle_after_epoch", STK_ARG_BOOL, "false", 0, 0,
     "Permute the data set each epoch keyed by (seed, epoch), without the shuffle buffer."},
    {"initial_fill", STK_ARG_INT, "1024", 0, 0, "Size of the shuffle buffer used by random_shuffle."},
    {"shard_id", STK_ARG_INT, "0", 0, 0, "Index of the shard this pipeline reads."},
    {"num_shards", STK_ARG_INT, "1", 0, 0, "Number of shards; shard s holds samples [floor(N*s/S), floor(N*(s+1)/S))."},
    {"stick_to_shard", STK_ARG_BOOL, "false", 0, 0, "Keep reading shard_id every epoch (else move to the next)."},
    {"pad_last_batch", STK_ARG_BOOL, "false", 0, 0,
     "Fill the last batch by repeating the shard's last sample, and give every shard the same number of batches."},
    {"skip_bad_files", STK_ARG_BOOL, "false", 0, 0,
     "Skip (and count) samples whose file cannot be read or decoded instead of failing."},
    {"seed", STK_ARG_INT, "-1", 0, 0, "Shuffle seed; -1 = the pipeline's seed. Use the same seed on every shard."},
    {"read_ahead", STK_ARG_BOOL, "true", 0, 0,
     "Once a read of this epoch misses the page cache, ask the kernel to start reading each planned batch's "
     "files (posix_fadvise WILLNEED), so reads from a cold page cache or slow storage overlap the work on "
     "earlier batches; a warm cache pays nothing."},
    STK__DALI_READER_HINT_ARGS,
};

const stk__op_schema stk__op_readers_file = {
    .name = "readers.file",
    .doc = "Reads encoded files and their labels. Outputs: 0 = file bytes (uint8, 1-D), 1 = label (int32, [1]).",
    .min_inputs = 0,
    .max_inputs = 0,
    .num_outputs = 2,
    .devices = STK_OPDEV_CPU,
    .args = reader_args,
    .num_args = (int)(sizeof reader_args / sizeof reader_args[0]),
    .is_reader = 1,
    .array_outputs = 1u << 0, /* encoded bytes */
};
