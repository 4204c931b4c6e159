/* src/ops/io/wds_stream.h: the read-ahead side of readers.webdataset -- background threads
 * ("lanes") that stream tar shards (tar_stream.h over byte_source.h), group consecutive members
 * into samples by key and hand complete samples over in a deterministic order. Not a hot path
 * for the caller beyond stk__wds_stream_next (one lock + pop per sample); the lanes do the I/O,
 * except a local shard's components, which stay in the file until stk__wds_sample_read.
 *
 * Order: the epoch's work units (whole shards, or index-given slices of shards) are dealt to
 * `lanes` threads round robin (unit u to lane u % lanes); the consumer takes one sample from each
 * lane in turn, passing over a lane only once it has finished (drained and done). The sequence
 * therefore depends only on the data, never on thread timing.
 *
 * Memory: each lane holds at most max_queue_samples samples and max_queue_bytes bytes (one
 * sample is always allowed, whatever its size) plus the sample it is assembling. A component read
 * into memory (remote and pipe: shards) is refused by its declared size, before a byte is read,
 * when it passes the pipeline's host memory budget: the sample is bad, not an allocation.
 *
 * Nothing is lost without a word: a shard must end with its tar end blocks (a shard cut between
 * members is truncated), a pipe: command must exit with status 0, and a unit given by an index
 * must hold exactly the samples its index promises. Under skip_bad_files what is skipped (a bad
 * sample, a shard's unreadable rest) is recorded here and also handed over as a skip record
 * (stk__wds_sample.bad) in the sample's place, which run_sample fails with its reason, so that
 * the executor's quarantine record names it and counts it in skipped_files.
 *
 * Thread contract: one consumer thread calls next/free; the lanes are internal. */
#ifndef STOKER_OPS_CPU_WDS_STREAM_H
#define STOKER_OPS_CPU_WDS_STREAM_H

#include <stddef.h>
#include <stdint.h>

#include "core/op.h"
#include "ops/io/byte_source.h"

#define STK__WDS_MAX_GROUPS 8

/* A local shard's file, kept open for the samples whose components stay in it (refs: the lane
 * streaming it and each such sample; atomic, the last one closes it). */
typedef struct stk__wds_file {
  int fd; /* read with pread only */
  int refs;
} stk__wds_file;

/* One complete sample. A component is either in `data` (the bytes of each ext group back to
 * back: remote and pipe: shards, labels, members that run past a local file's end) or, for a
 * local shard, still in the file (in_file[g]: size[g] bytes at file_offset[g] of `file`), read
 * by stk__wds_sample_read straight into the output on the worker that runs the sample. */
typedef struct stk__wds_sample {
  int refs; /* owner references (the reader's plan slots) */
  uint64_t epoch;
  int64_t sample_id; /* (shard index << 32) | position of the sample in its shard */
  char *source;      /* "shard.tar:key" for messages (in the same allocation) */
  uint8_t *data;     /* in the same allocation, or own_data */
  uint8_t *own_data; /* data's own allocation (large components read by the lane), else NULL */
  size_t offset[STK__WDS_MAX_GROUPS], size[STK__WDS_MAX_GROUPS];
  int present[STK__WDS_MAX_GROUPS];
  int in_file[STK__WDS_MAX_GROUPS];
  uint64_t file_offset[STK__WDS_MAX_GROUPS];
  stk__wds_file *file; /* a reference when any in_file[g], else NULL */
  int32_t label;       /* parsed from label_group's text; 0 when there is no label group */
  size_t bytes;        /* held in memory (data), for the read-ahead bound */
  const char *bad;     /* a skip record: why `source` was skipped (no data), else NULL */
} stk__wds_sample;

STK_INTERNAL void stk__wds_sample_free(stk__wds_sample *sample);
/* A skip record for `name` (a shard, or "shard:key") with `reason` (both copied); NULL when out of
 * memory. */
STK_INTERNAL stk__wds_sample *stk__wds_skip_record(const char *name, const char *reason, uint64_t epoch,
                                                   int64_t sample_id);
/* Parses a text label ("  7\n") into an int32: 1 on success. */
STK_INTERNAL int stk__wds_parse_label(const uint8_t *text, size_t size, int32_t *out);
/* The local shard's file behind `source` as a shared reference (its own descriptor), or NULL
 * when the source is no local regular file; *size gets the file's size. stk__wds_file_release
 * drops a reference (NULL is fine). */
STK_INTERNAL stk__wds_file *stk__wds_file_share(stk__byte_source *source, uint64_t *size);
STK_INTERNAL void stk__wds_file_release(stk__wds_file *file);
/* Copies component g (size[g] bytes) into dst: from data, or with pread from the shard. Any
 * thread (a sample is read by one worker at a time); a failed or short read is STK_EIO naming the
 * sample and the offset. */
STK_INTERNAL stk_status stk__wds_sample_read(const stk__wds_sample *sample, int group, void *dst, char *err,
                                             size_t err_size);

typedef enum stk__wds_missing {
  STK__WDS_MISSING_EMPTY,
  STK__WDS_MISSING_SKIP,
  STK__WDS_MISSING_ERROR
} stk__wds_missing;

/* A piece of the epoch: samples [first_sample, first_sample + max_samples) of a shard (max < 0:
 * to its end), streamed from byte start_offset (0, or the index's offset of first_sample).
 * to_index_end: the piece ends where the shard's index ends, so the shard must end there too. */
typedef struct stk__wds_unit {
  int shard; /* index into paths */
  uint64_t start_offset;
  int64_t first_sample;
  int64_t max_samples;
  int to_index_end;
} stk__wds_unit;

typedef struct stk__wds_stream_config {
  char *const *paths;         /* borrowed: live as long as the stream */
  const stk__wds_unit *units; /* copied */
  int64_t num_units;
  uint64_t epoch;
  int num_groups;
  char *const *group_exts[STK__WDS_MAX_GROUPS]; /* each group's extensions (borrowed) */
  size_t group_num_exts[STK__WDS_MAX_GROUPS];
  size_t group_elem_size[STK__WDS_MAX_GROUPS]; /* a component's size must be a multiple */
  int label_group;                             /* -1: none */
  int case_sensitive;
  stk__wds_missing missing;
  int skip_bad_files;
  int lanes;
  int max_queue_samples;
  size_t max_queue_bytes;
  stk__byte_source_options source_options; /* cancel is set by the stream */
  /* The host memory budget a component read into memory must fit: *budget_limit when it is set
   * (the pipeline's, decided when its first batch slot is made; read atomically), else
   * budget_bytes; 0 or SIZE_MAX: no bound. */
  const size_t *budget_limit;
  size_t budget_bytes;
} stk__wds_stream_config;

typedef struct stk__wds_stream stk__wds_stream;

/* Starts the lanes (they open their first shard in the background: returns at once). */
STK_INTERNAL stk_status stk__wds_stream_start(const stk__wds_stream_config *config, stk__wds_stream **out, char *err,
                                              size_t err_size);
/* The next sample (owned by the caller: stk__wds_sample_free), NULL with STK_OK at the end of the
 * epoch's units, or the first error a lane met (message names shard and offset/sample). */
STK_INTERNAL stk_status stk__wds_stream_next(stk__wds_stream *stream, stk__wds_sample **out, char *err,
                                             size_t err_size);
/* Shards skipped (skip_bad_files) so far and their messages, one per line (borrowed). */
STK_INTERNAL int64_t stk__wds_stream_skipped(stk__wds_stream *stream, const char **messages);
/* Cancels the lanes (a waiting read gives up within 100 ms), joins them, frees queued samples. */
STK_INTERNAL void stk__wds_stream_free(stk__wds_stream *stream);

#endif
