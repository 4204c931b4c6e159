/* src/ops/io/reader_file_read.h: readers.file's reading of one file (run_sample, on worker
 * threads) and its read_ahead (plan_batch, on the planning thread).
 *
 * read_ahead watches before it hints: each worker's read first takes the bytes only if the page
 * cache holds them (preadv2 with RWF_NOWAIT; the same one copy a read makes on a hit). The first read
 * of an epoch that would have waited for storage turns hinting on, and from then to the epoch's end
 * every planned batch's files are hinted (posix_fadvise WILLNEED) so their reads are in flight
 * while the workers are still on earlier batches. A warm page cache thus pays nothing (hinting
 * every batch costs a reader-only pipeline several percent of its files/s with a warm cache); a
 * cold one loses only the batches planned before the first miss. Where the kernel or file system
 * cannot tell a miss (RWF_NOWAIT refused), every batch is hinted, unless it is a tmpfs or ramfs
 * (nothing to read ahead). A read that finds only part of a file cached counts as a miss (pages a
 * first read from storage left marked for the kernel's own read-ahead also end a cache-only read
 * early, until the file is read once). A cache-only read starts the kernel's own read of what is
 * missing, and when that completes at once (a fast device, or a VM host's cache) it is a hit:
 * storage that answers within the call is not worth hinting.
 *
 * Thread contract: stk__read_ahead_epoch and stk__read_ahead_wanted on the planning thread (one at
 * a time, as the reader); stk__read_file from any worker, concurrently; the fields are touched
 * with __atomic builtins only. Hot path: stk__read_file (per sample). */
#ifndef STOKER_OPS_CPU_READER_FILE_READ_H
#define STOKER_OPS_CPU_READER_FILE_READ_H

#include <stdint.h>

#include "core/op.h"

typedef struct stk__read_ahead {
  int enabled;            /* readers.file read_ahead */
  int hinting;            /* 1: hint each planned batch (a read of this epoch missed, or misses cannot be seen) */
  int probing;            /* 1: reads tell hits from misses (RWF_NOWAIT); 0: refused here, hint every batch */
  int in_memory;          /* 1: refused on a tmpfs or ramfs, whose files are memory: hint never */
  int64_t misses;         /* reads that would have waited for storage, since the reader was made */
  int64_t hinted_batches; /* batches whose files were hinted, since the reader was made */
} stk__read_ahead;

STK_INTERNAL void stk__read_ahead_init(stk__read_ahead *ra, int enabled);
/* A new epoch (reset or seek): watch again before hinting. */
STK_INTERNAL void stk__read_ahead_epoch(stk__read_ahead *ra);
/* Whether the batch being planned should be hinted (counted when it should). */
STK_INTERNAL int stk__read_ahead_wanted(stk__read_ahead *ra);
/* A read had to wait for storage: counted, and hinting on until the epoch ends. */
STK_INTERNAL void stk__read_ahead_missed(stk__read_ahead *ra);
/* Asks the kernel to start reading the file at path (WILLNEED); a file that cannot be opened is
 * left to the read, which reports it. */
STK_INTERNAL void stk__read_ahead_hint(const char *path);
/* Opens a sample's file for reading (stk__open_regular: a FIFO or device is refused at once):
 * STK_OK with *fd, or STK_EIO ("sample file PATH is a FIFO, not a regular file", or a failed open) / STK_ENOENT (no such
 * file) with a message naming path. The sample readers' one way in (readers.file, readers.numpy). */
STK_INTERNAL stk_status stk__open_sample_file(const char *path, int *fd, char *err, size_t err_size);
/* Reads the whole file at path into outputs[0] (its size known from fstat, so in place in a dense
 * batch): one open, one fstat, a read loop (short reads, EINTR). With ra enabled and probing, the
 * first read is a cache-only one that records a miss. Errors name the file. */
STK_INTERNAL stk_status stk__read_file(const char *path, stk__read_ahead *ra, stk__sample_ctx *ctx,
                                       stk__tensor *const *outputs, char *err, size_t err_size);

#endif
