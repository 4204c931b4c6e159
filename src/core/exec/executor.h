/* src/core/exec/executor.h: the executor's door for the rest of the core: pipeline.c starts,
 * drives and stops it, dlpack.c takes batch references. The rooms behind it (pool, affinity,
 * slots, scheduler, CPU stage, GPU stage) share src/core/exec/exec.h, which nothing outside
 * src/core/exec includes. Depends on engine.h only. */
#ifndef STOKER_CORE_EXEC_EXECUTOR_H
#define STOKER_CORE_EXEC_EXECUTOR_H

#include "core/engine.h"

/* Starts the threads on a lowered, initialised graph (graph.c + operator init); the message of a
 * failure is in pipe->last_error. Call stk__executor_stop afterwards either way. */
STK_INTERNAL stk_status stk__executor_start(stk_pipeline *pipe);
/* Decides the host memory budget's limit (options.host_memory_budget or its default) once; build
 * calls it before the operators' init, so a reader that reads ahead bounds what it buffers by it. */
STK_INTERNAL void stk__exec_host_budget_init(stk_pipeline *pipe);
/* Joins every thread and frees the slots; slots the consumer holds are orphaned (freed at their
 * last stk_batch_release). Safe on a pipeline whose start failed or never ran. */
STK_INTERNAL void stk__executor_stop(stk_pipeline *pipe);
/* The next batch in plan order (waits for it); STK_EOF_EPOCH at the epoch's end. */
STK_INTERNAL stk_status stk__executor_next(stk_pipeline *pipe, stk_batch **out);
/* Moves the consumer to the next epoch (see exec/executor.c). */
STK_INTERNAL stk_status stk__executor_reset(stk_pipeline *pipe);
/* Checkpoint restore on a built pipeline (src/core/checkpoint.c): discards the batches in flight
 * as a mid-epoch reset does, then the reader (its seek) and the consumer continue at batch
 * `batch_index` of `epoch`. Batches the consumer holds stay valid. With skip_bad_files and
 * has_refill_resume the reader starts at the refill point's reader batch and the cursor takes it. */
STK_INTERNAL stk_status stk__executor_seek(stk_pipeline *pipe, uint64_t epoch, int64_t batch_index, char *err,
                                           size_t err_size);
/* Planning paused (a reset, a restore, the build): every further reader (exec/side_readers.c)
 * goes back to its consumer position (pipe->side[].pos_*: its seek, or its reset at an epoch's
 * start; a reader without seek goes on after what it planned). err names the reader. */
STK_INTERNAL stk_status stk__executor_side_rewind(stk_pipeline *pipe, char *err, size_t err_size);
/* The index in pipe->side of the further reader named `name`, or -1. */
STK_INTERNAL int stk__executor_side_index(const stk_pipeline *pipe, const char *name);
/* Under lock, with the scheduler not busy, skip_bad_files (exec/refill.c): where the refill cursor
 * must resume for the consumer's position (pos_epoch, pos_batch) to mean the same batches. */
STK_INTERNAL stk_status stk__executor_refill_point(stk_pipeline *pipe, stk__refill_point *out, char *err,
                                                   size_t err_size);
/* The executor's counters and the worker map into out (stats of a built pipeline). */
STK_INTERNAL void stk__executor_stats(stk_pipeline *pipe, stk_pipeline_stats *out);
/* A copy of the quarantine record (exec/quarantine.c): the bad files' names, one a line, escaped
 * (json = 0), or its JSON lines (json = 1); the caller frees it; NULL on out-of-memory. */
STK_INTERNAL char *stk__executor_skipped_names(stk_pipeline *pipe, int json);
/* Under lock: the quarantine record as a checkpoint carries it (docs/checkpoint.md): "" when no
 * bad file was recorded, else "<count>" then ":" and the first ranges of data-set sample ids
 * recorded ("3-5,9"): at most max_ranges, and only whole ranges that fit in size (with the '\0').
 * Returns the length written (size must hold the count, ~21 bytes). */
STK_INTERNAL int stk__executor_quarantine_format(const stk_pipeline *pipe, char *buf, size_t size, int max_ranges);
/* A checkpoint's record carried in (at build before the executor starts, or on a built pipeline):
 * its sample ids are recorded (not reported again), skipped_files counts on from `count`, and
 * options.bad_files_log is appended to instead of truncated. STK_ENOMEM. */
STK_INTERNAL stk_status stk__executor_quarantine_carry(stk_pipeline *pipe, uint64_t count, const int64_t (*ranges)[2],
                                                       int num_ranges);
/* Frees the quarantine record (at pipeline destruction, after stk__executor_stop). */
STK_INTERNAL void stk__executor_free_record(stk_pipeline *pipe);
/* One more reference on a held batch (a DLPack export); dropped by stk_batch_release. */
STK_INTERNAL void stk__batch_ref(stk_batch *batch);

#endif
