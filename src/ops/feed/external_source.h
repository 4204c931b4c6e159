/* src/ops/feed/external_source.h: the state the `external_source` operator's CPU implementation
 * (external_source.c: schema, feeding, planning, run_sample) shares with its GPU implementation
 * (src/ops/feed/external_source_gpu.c: run_batch and GPU-memory samples). Internal to the two.
 *
 * Entries: one fed batch each, in a table under the state's mutex (see external_source.c). A
 * sample of an entry is a host tensor (a copy, capacity > 0, or a borrowed view, capacity 0) or,
 * on a GPU node, a device tensor (device STK_DEVICE_GPU, capacity 0): a view of the producer's
 * memory (no_copy) or of the entry's own device buffer dev[i] (dev_cap[i] bytes, grow-only). */
#ifndef STOKER_OPS_CPU_EXTERNAL_SOURCE_H
#define STOKER_OPS_CPU_EXTERNAL_SOURCE_H

#include <pthread.h>

#include "ops/op_impls.h"

#define EXTSRC_MAX_OUTPUTS 8 /* the schema's outputs; num_outputs of them carry data */

typedef enum stk__extsrc_entry_state { ENTRY_FREE = 0, ENTRY_QUEUED, ENTRY_PLANNED } stk__extsrc_entry_state;

typedef struct stk__extsrc_entry {
  stk__extsrc_entry_state state;
  uint64_t seq;         /* feed order */
  uint64_t epoch;       /* the epoch it was fed for: end marks fed before it */
  int count;            /* samples; -1 = the end mark */
  int remaining;        /* samples whose run_sample has not finished (atomic) */
  int borrowed;         /* 1: host samples are views of the caller's memory (no_copy) */
  stk__tensor *samples; /* num_outputs * batch_size: [o * batch_size + s] */
  void **dev;           /* GPU node: the entry's own device buffers, per sample (NULL until needed) */
  size_t *dev_cap;
  void *event; /* GPU node: recorded after run_batch queued its copies out of the entry */
  struct stk__gpu_copy_part *parts; /* GPU node: the device copies into or out of the entry being */
  int num_parts;                    /* queued, launched together (NULL until needed) */
} stk__extsrc_entry;

typedef struct stk__extsrc_state {
  pthread_mutex_t lock;
  int num_outputs, batch_size, dynamic, no_copy;
  int on_gpu;                         /* the node runs on the GPU (run_batch) */
  int device_id;                      /* the pipeline's GPU (-1: none) */
  int dtype[EXTSRC_MAX_OUTPUTS];      /* -1 = any */
  int ndim[EXTSRC_MAX_OUTPUTS];       /* -1 = any */
  char layout[EXTSRC_MAX_OUTPUTS][8]; /* "" = any */
  stk__extsrc_entry **entries;        /* stable pointers; the array grows under lock */
  int num_entries;
  uint64_t next_seq;
  uint64_t feed_epoch; /* the epoch the next fed batch belongs to */
  int ended;           /* the last plan returned STK_EOF_EPOCH (reset then keeps the queue) */
  int64_t epoch_samples, epoch_batches;
} stk__extsrc_state;

/* The implementation parts both devices share (external_source.c). */
STK_INTERNAL stk_status stk__extsrc_init(stk__op *op, char *err, size_t err_size);
STK_INTERNAL void stk__extsrc_destroy(stk__op *op);
STK_INTERNAL stk_status stk__extsrc_plan(stk__op *op, stk__batch_plan *plan, char *err, size_t err_size);
STK_INTERNAL stk_status stk__extsrc_reset(stk__op *op, uint64_t epoch);
STK_INTERNAL stk_status stk__extsrc_feed(stk__op *op, const stk_tensor_view *samples, int count, unsigned flags,
                                         char *err, size_t err_size);
STK_INTERNAL int stk__extsrc_input_ready(stk__op *op);
/* Checkpoint resume: the next batch fed is batch `batch_index` of `epoch`; fed batches dropped. */
STK_INTERNAL stk_status stk__extsrc_seek(stk__op *op, uint64_t epoch, int64_t batch_index, char *err,
                                         size_t err_size);
/* The data fingerprint of fed data: 0, no samples listed. */
STK_INTERNAL uint64_t stk__extsrc_fingerprint(const stk__op *op, int64_t *num_samples);
/* The planned entry at `index` (a plan's file_index), or NULL when there is none. */
STK_INTERNAL stk__extsrc_entry *stk__extsrc_planned(stk__extsrc_state *s, int64_t index);
/* Marks a planned entry free (its samples are no longer read, or their reads are queued before
 * entry->event on a GPU node). */
STK_INTERNAL void stk__extsrc_release(stk__extsrc_state *s, stk__extsrc_entry *entry);

/* GPU-memory samples (src/ops/feed/external_source_gpu.c; STK_ENOTSUP without CUDA). */
/* Checks a GPU view: on the pipeline's GPU and in its memory; message in detail otherwise. */
STK_INTERNAL const char *stk__extsrc_check_gpu_view(const stk__extsrc_state *s, const stk_tensor_view *v, char *detail,
                                                    size_t detail_size);
/* Waits until the GPU no longer reads the entry (its last run_batch's copies are done). */
STK_INTERNAL stk_status stk__extsrc_entry_wait(stk__extsrc_entry *entry);
/* Sample i of the entry from GPU view v: a device copy into the entry's buffer (one of the
 * entry's parts, launched by stk__extsrc_copies_finish before the entry is queued) or, borrowing, a
 * view; on a CPU node a host copy. t is entry->samples[i]. */
STK_INTERNAL stk_status stk__extsrc_fill_gpu(stk__extsrc_state *s, stk__extsrc_entry *entry, int i,
                                             const stk_tensor_view *v, const char *layout, int borrow);
/* Launches the copies fill_gpu queued (one kernel on the legacy default stream) and waits for
 * them: the producer may reuse its memory once the feed returns. */
STK_INTERNAL stk_status stk__extsrc_copies_finish(stk__extsrc_entry *entry);
/* Frees the entry's device buffers and event. */
STK_INTERNAL void stk__extsrc_entry_free_gpu(stk__extsrc_state *s, stk__extsrc_entry *entry);

#endif
