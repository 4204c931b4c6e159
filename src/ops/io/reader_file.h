/* src/ops/io/reader_file.h: the data-set side of readers.file, independent of operator
 * arguments: listing (file_root / file_list / files), sharding, per-epoch order (shuffle),
 * batch planning and the reader metadata. reader_file.c wraps it as the operator; tests drive it
 * directly. Not a hot path except stk__file_reader_plan (once per batch, O(batch)).
 *
 * Thread contract: one reader is used by one thread at a time (the executor's scheduler);
 * stk__file_reader_path/label are read-only and safe from worker threads while no reset runs;
 * readers.file's run_sample also updates the read_ahead state from workers (__atomic only:
 * reader_file_read.h). */
#ifndef STOKER_OPS_CPU_READER_FILE_H
#define STOKER_OPS_CPU_READER_FILE_H

#include <stddef.h>
#include <stdint.h>

#include "core/op.h"

typedef struct stk__file_reader_config {
  const char *file_root; /* NULL/"" = none */
  const char *file_list; /* NULL/"" = none */
  char *const *files;    /* with num_files; paths relative to file_root when given */
  size_t num_files;
  const int64_t *labels; /* with num_labels (== num_files), or NULL: labels 0..n-1 */
  size_t num_labels;
  char *const *file_filters; /* glob patterns for file_root listing; NULL = "*.jpg", "*.jpeg" */
  size_t num_filters;
  int case_sensitive_filter;
  int random_shuffle;      /* full permutation per epoch + initial_fill buffer shuffle */
  int shuffle_after_epoch; /* full permutation per epoch only */
  int64_t initial_fill;
  int shard_id, num_shards;
  int stick_to_shard, pad_last_batch;
  uint64_t seed;
  int batch_size;
  int read_ahead; /* readers.file: once a read misses the page cache, hint each planned batch (WILLNEED) */
} stk__file_reader_config;

typedef struct stk__file_reader stk__file_reader;

/* Lists the data set and prepares epoch 0. Errors name the path/line/argument in err. */
STK_INTERNAL stk_status stk__file_reader_new(const stk__file_reader_config *config, stk__file_reader **out, char *err,
                                             size_t err_size);
STK_INTERNAL void stk__file_reader_free(stk__file_reader *reader);
/* The order arguments every file-table reader shares (random_shuffle, shuffle_after_epoch,
 * initial_fill, shard_id, num_shards, stick_to_shard, pad_last_batch, seed; -1 = the pipeline's)
 * and the batch size, from the op into c (readers.file, readers.numpy). */
STK_INTERNAL void stk__file_reader_order_args(const stk__op *op, stk__file_reader_config *c);

/* readers.file's read_ahead state (its counters: tests and reports). */
STK_INTERNAL struct stk__read_ahead *stk__file_reader_read_ahead(stk__file_reader *reader);

/* Number of samples in the whole data set. */
STK_INTERNAL int64_t stk__file_reader_size(const stk__file_reader *reader);
/* Path (borrowed, lives as long as the reader) and label of data-set sample `index`. */
STK_INTERNAL const char *stk__file_reader_path(const stk__file_reader *reader, int64_t index);
STK_INTERNAL int32_t stk__file_reader_label(const stk__file_reader *reader, int64_t index);

/* Fills the next batch of the current epoch (plan->samples must hold config.batch_size entries).
 * STK_EOF_EPOCH when the epoch's batches are all planned. */
STK_INTERNAL stk_status stk__file_reader_plan(stk__file_reader *reader, stk__batch_plan *plan);
/* Starts epoch `epoch` from its first batch (new shard when not stick_to_shard, new order when
 * shuffling). */
STK_INTERNAL stk_status stk__file_reader_reset(stk__file_reader *reader, uint64_t epoch);
/* Positions the reader before batch `batch_index` of epoch `epoch` (0 <= batch_index <= the
 * epoch's batch count; the count itself: the epoch is over). Computes the epoch's order, reads no
 * file: the plan is a pure function of (seed, epoch, batch index). For checkpoint resume. */
STK_INTERNAL stk_status stk__file_reader_seek(stk__file_reader *reader, uint64_t epoch, int64_t batch_index, char *err,
                                              size_t err_size);
/* Resharding mid-epoch (docs/checkpoint.md): the next seek to `epoch` reads the remainder the
 * earlier shardings `cuts` left, split into config.num_shards contiguous shards (num_cuts 0: a
 * normal epoch). The batches keep the epoch's numbering: the first one the remainder plans is
 * batch cuts[num_cuts - 1].position, and the seek's batch_index counts from the epoch's start. */
STK_INTERNAL stk_status stk__file_reader_set_reshard(stk__file_reader *reader, uint64_t epoch,
                                                     const stk__reshard_cut *cuts, int num_cuts, char *err,
                                                     size_t err_size);

/* The pieces of the order that reader_file_reshard.c shares. The epoch's whole-data-set
 * permutation when shards slice one (shuffling, not stick_to_shard; *out malloc'd), else *out =
 * NULL. */
STK_INTERNAL stk_status stk__file_epoch_sequence(const stk__file_reader_config *c, int64_t n, uint64_t epoch,
                                                 int64_t **out);
/* The order of shard `shard` of `shards` in epoch `epoch` of an n-sample data set into out (room
 * for the shard's size, given in *size); `all` is stk__file_epoch_sequence's result. */
STK_INTERNAL stk_status stk__file_shard_order(const stk__file_reader_config *c, int64_t n, uint64_t epoch, int shards,
                                              int shard, const int64_t *all, int64_t *out, int64_t *size);

/* An epoch's remainder after resharding: seq[0..size) the samples the cuts left unread, in order
 * (each old shard's unread tail, shards in index order); this reader's shard is seq[lo..hi); every
 * new shard plans `batches` batches after the last cut, of which the first `full_batches` are full
 * on every new shard (the smallest new shard's whole batches: where DROP ends the remainder). */
typedef struct stk__file_remainder {
  int64_t *seq; /* owned by the caller once returned (malloc'd) */
  int64_t size, lo, hi, batches, full_batches;
} stk__file_remainder;
STK_INTERNAL stk_status stk__file_remainder_new(const stk__file_reader_config *c, int64_t n, uint64_t epoch,
                                                const stk__reshard_cut *cuts, int num_cuts, stk__file_remainder *out,
                                                char *err, size_t err_size);

/* FNV-1a hash of the listing: count, every path and label in data-set order. O(data set). */
STK_INTERNAL uint64_t stk__file_reader_fingerprint(const stk__file_reader *reader);
/* The reader's metadata in epoch `epoch` (the shard moves each epoch unless stick_to_shard). Reads
 * only what init set, so it is safe while another thread plans batches. */
STK_INTERNAL void stk__file_reader_meta(const stk__file_reader *reader, uint64_t epoch, stk_reader_meta *out);
/* The operator schema (a row of the operator table, src/ops/op_table.c). */
STK_INTERNAL extern const stk__op_schema stk__op_readers_file;

/* Batches in the current epoch. */
STK_INTERNAL int64_t stk__file_reader_batches(const stk__file_reader *reader);

#endif
