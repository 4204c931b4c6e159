/* src/ops/io/shuffle.h: the readers' one shuffle -- every random decision about sample order
 * (readers.file, readers.numpy and readers.video through readers.file's planner, readers.webdataset)
 * is a draw of this file, keyed by (seed, domain, epoch, stream, draw), so order depends on nothing
 * but those numbers: not on threads, timing or prefetch, and exact resume can replay it.
 *   - a domain separates the readers' streams from each other and from the operators' (an RNG
 *     operator id no graph reaches);
 *   - stream 0: the whole data set's (or file list's) permutation of the epoch, the same on every
 *     rank; stream 1 + shard: a shard's own permutation (stick_to_shard); the shuffle buffer's
 *     draws use stk__shuffle_buffer_stream(shard).
 * Hot path only in the shuffle buffer's draws (one per sample); permutations run once an epoch. */
#ifndef STOKER_OPS_IO_SHUFFLE_H
#define STOKER_OPS_IO_SHUFFLE_H

#include <stddef.h>
#include <stdint.h>

#include "base/common.h"

#define STK__SHUFFLE_FILES      0xFFFFu /* readers.file and the readers that plan through it */
#define STK__SHUFFLE_WEBDATASET 0xFFFEu /* readers.webdataset */

/* Uniform index in [0, bound) for draw `draw` of stream `stream` (bound >= 1). */
STK_INTERNAL int64_t stk__shuffle_index(uint32_t domain, uint64_t seed, uint64_t epoch, int64_t stream, int64_t draw,
                                        int64_t bound);
/* Fisher-Yates over items[0..n) of elem_size bytes each (elem_size <= 256), draws of `stream`. */
STK_INTERNAL void stk__shuffle_permute(void *items, size_t elem_size, int64_t n, uint32_t domain, uint64_t seed,
                                       uint64_t epoch, int64_t stream);
/* The stream of the shuffle buffer (DALI's initial_fill) of shard/part `shard`. */
static inline int64_t stk__shuffle_buffer_stream(int shard) { return (int64_t)1 << 20 | (1 + shard); }
/* The shard a rank reads in `epoch`: its own with stick_to_shard, else it moves on by one each epoch. */
static inline int stk__shuffle_epoch_shard(int stick_to_shard, int shard_id, int num_shards, uint64_t epoch) {
  return stick_to_shard ? shard_id : (int)(((uint64_t)shard_id + epoch) % (uint64_t)num_shards);
}

#endif
