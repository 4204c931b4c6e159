/* src/ops/io/wds_reader.h: the state of one readers.webdataset instance, shared by its two
 * files: wds_plan.c (epoch order, shuffle buffer, batch planning, the table of planned samples)
 * and reader_webdataset.c (arguments, init, run_sample, the schema). Internal to them. */
#ifndef STOKER_OPS_CPU_WDS_READER_H
#define STOKER_OPS_CPU_WDS_READER_H

#include <pthread.h>

#include "ops/io/wds_index.h"
#include "ops/io/wds_stream.h"

#define SLOT_BITS 24

typedef struct table_entry {
  stk__wds_sample *sample;
  uint32_t ticket;
} table_entry;

typedef struct wds_reader {
  stk__wds_stream_config stream_config; /* units/epoch set in a copy per stream (open_stream) */
  char **exts_storage[STK__WDS_MAX_GROUPS];
  stk_dtype group_dtype[STK__WDS_MAX_GROUPS];
  char *const *paths;
  int num_paths;
  stk__wds_index *index; /* num_paths entries or NULL */
  int64_t index_total;
  int shard_id, num_shards, stick_to_shard, pad_last_batch, random_shuffle, batch_size;
  int64_t initial_fill;
  uint64_t seed;
  /* epoch */
  uint64_t epoch;
  int part;
  int64_t num_batches; /* -1: unknown (no index) */
  int64_t planned_batches, planned_samples;
  int ended;
  stk__wds_stream *stream;
  int stream_done;
  stk__wds_stream *next_stream; /* epoch next_epoch's, started when `stream` ended; NULL when none */
  uint64_t next_epoch;
  int64_t skipped_before; /* skipped in the streams of earlier epochs */
  stk__wds_sample **buffer;
  int64_t buffer_count, draws;
  stk__wds_sample *peeked, *last;
  /* in-flight samples: plan slot -> sample, shared with the workers */
  pthread_mutex_t table_lock;
  table_entry *table;
  int *free_slots;
  int table_capacity, num_free;
  uint32_t next_ticket;
} wds_reader;

/* wds_plan.c */
STK_INTERNAL stk_status stk__wds_start_epoch(wds_reader *r, uint64_t epoch, char *err, size_t err_size);
STK_INTERNAL void stk__wds_drop_epoch(wds_reader *r);
STK_INTERNAL void stk__wds_drop_next_epoch(wds_reader *r);
STK_INTERNAL void stk__wds_table_collect(wds_reader *r, uint64_t epoch);
STK_INTERNAL stk__wds_sample *stk__wds_table_take(wds_reader *r, int64_t handle);
STK_INTERNAL void stk__wds_release(wds_reader *r, stk__wds_sample *sample);
STK_INTERNAL stk_status stk__wds_plan_batch(stk__op *op, stk__batch_plan *plan, char *err, size_t err_size);
STK_INTERNAL stk_status stk__wds_reset(stk__op *op, uint64_t epoch);
STK_INTERNAL void stk__wds_meta(const stk__op *op, uint64_t epoch, stk_reader_meta *out);

#endif
