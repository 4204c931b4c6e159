/* src/ops/io/reader_file_reshard.c: readers.file's remainder of an epoch resharded in its middle
 * (a checkpoint taken with num_shards=N resumed with another num_shards; docs/checkpoint.md,
 * Resharding). Not a hot path: runs once per seek, O(data set x shardings).
 *
 * In synchronous data-parallel training every rank has received the same number of batches b, so
 * what the old shards read is known from (seed, epoch, N, b) alone: shard s read the first b x
 * batch_size entries of its order (entries past the shard's size are fill, repeats). The remainder
 * is every shard's unread tail, shards in index order -- for an unshuffled or shuffle_after_epoch
 * epoch that is the epoch's whole-data-set order with the read samples taken out. It is split into
 * the new num_shards contiguous shards by DALI's rule ([floor(M*t/N'), floor(M*(t+1)/N'))), each
 * planning ceil(largest new shard / batch_size) batches, fill as in a normal epoch (wrapped inside
 * the shard, or its last sample with pad_last_batch); a new shard left without samples (fewer
 * samples remain than ranks) has batches of fill only, taken from the whole remainder. A remainder
 * resharded again is the same step on the remainder (the cuts compose). */
#include "ops/io/reader_file.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int64_t split_begin(int64_t m, int64_t t, int64_t shards) { return m * t / shards; }

static int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

/* Stage 0: the unread tails of the epoch's original `shards` shards after `position` batches. */
static stk_status first_remainder(const stk__file_reader_config *c, int64_t n, uint64_t epoch, int shards,
                                  int64_t position, int64_t *seq, int64_t *m, char *err, size_t err_size) {
  if (shards < 1 || shards > n) {
    stk__errorf(err, err_size, "num_shards=%d in the checkpoint does not fit a data set of %lld samples", shards,
                (long long)n);
    return STK_EINVAL;
  }
  int64_t largest = split_begin(n, 1, shards) - split_begin(n, 0, shards);
  for (int s = 1; s < shards; s++)
    if (split_begin(n, s + 1, shards) - split_begin(n, s, shards) > largest)
      largest = split_begin(n, s + 1, shards) - split_begin(n, s, shards);
  if (position < 1 || position > ceil_div(largest, c->batch_size)) {
    stk__errorf(err, err_size, "position %lld is outside epoch %llu under num_shards=%d (%lld batches)",
                (long long)position, (unsigned long long)epoch, shards, (long long)ceil_div(largest, c->batch_size));
    return STK_EINVAL;
  }
  int64_t *all = NULL, *order = malloc((size_t)largest * sizeof *order);
  stk_status st = order ? stk__file_epoch_sequence(c, n, epoch, &all) : STK_ENOMEM;
  const int64_t read = position * c->batch_size;
  *m = 0;
  for (int s = 0; s < shards && st == STK_OK; s++) {
    int64_t size;
    st = stk__file_shard_order(c, n, epoch, shards, s, all, order, &size);
    if (st == STK_OK && read < size) {
      memcpy(seq + *m, order + read, (size_t)(size - read) * sizeof *seq);
      *m += size - read;
    }
  }
  free(all);
  free(order);
  return st;
}

/* A later stage: seq[0..*m) split into `shards`, each read for `batches` more batches; the unread
 * tails in shard order go to out. */
static stk_status next_remainder(const stk__file_reader_config *c, const int64_t *seq, int64_t *m, int shards,
                                 int64_t batches, int64_t *out, uint64_t epoch, char *err, size_t err_size) {
  int64_t in = *m, most = in > 0 ? ceil_div(ceil_div(in, shards), c->batch_size) : 0;
  if (shards < 1 || batches < 1 || batches > most) {
    stk__errorf(err, err_size,
                "a resharding of epoch %llu under num_shards=%d stopped %lld batches into a remainder of %lld "
                "batches",
                (unsigned long long)epoch, shards, (long long)batches, (long long)most);
    return STK_EINVAL;
  }
  const int64_t read = batches * c->batch_size;
  *m = 0;
  for (int t = 0; t < shards; t++) {
    int64_t lo = split_begin(in, t, shards), hi = split_begin(in, t + 1, shards);
    if (lo + read < hi) {
      memcpy(out + *m, seq + lo + read, (size_t)(hi - lo - read) * sizeof *out);
      *m += hi - lo - read;
    }
  }
  return STK_OK;
}

stk_status stk__file_remainder_new(const stk__file_reader_config *c, int64_t n, uint64_t epoch,
                                   const stk__reshard_cut *cuts, int num_cuts, stk__file_remainder *out, char *err,
                                   size_t err_size) {
  memset(out, 0, sizeof *out);
  if (num_cuts < 1 || num_cuts > STK__RESHARD_MAX_CUTS) {
    stk__errorf(err, err_size, "%d reshardings in one epoch (1 to %d)", num_cuts, STK__RESHARD_MAX_CUTS);
    return STK_EINVAL;
  }
  int64_t *seq = malloc((size_t)n * sizeof *seq), *other = malloc((size_t)n * sizeof *other), m = 0;
  stk_status st = seq && other ? STK_OK : STK_ENOMEM;
  if (st == STK_OK) st = first_remainder(c, n, epoch, cuts[0].num_shards, cuts[0].position, seq, &m, err, err_size);
  for (int i = 1; i < num_cuts && st == STK_OK; i++) {
    st = next_remainder(c, seq, &m, cuts[i].num_shards, cuts[i].position - cuts[i - 1].position, other, epoch, err,
                        err_size);
    int64_t *t = seq;
    seq = other, other = t;
  }
  free(other);
  if (st != STK_OK) {
    free(seq);
    if (st == STK_ENOMEM && (!err || !err[0]))
      stk__errorf(err, err_size, "out of memory resharding epoch %llu", (unsigned long long)epoch);
    return st;
  }
  const int64_t shards = c->num_shards;
  out->seq = seq;
  out->size = m;
  out->lo = split_begin(m, c->shard_id, shards);
  out->hi = split_begin(m, c->shard_id + 1, shards);
  out->batches = m > 0 ? ceil_div(ceil_div(m, shards), c->batch_size) : 0;
  out->full_batches = m / shards / c->batch_size; /* the smallest new shard has floor(m / shards) */
  return STK_OK;
}
