/* src/core/checkpoint.h: the build step of exact checkpoint/resume (src/core/checkpoint.c); the
 * public calls are in stoker/pipeline.h. Not a hot path. */
#ifndef STOKER_CORE_CHECKPOINT_H
#define STOKER_CORE_CHECKPOINT_H

#include "core/engine.h"

/* At build, after the operators' init and instead of the reader's reset to epoch 0 (pipeline.c):
 * checks a pending restore (pipe->restore_text) against the pipeline and positions the reader
 * (its seek: nothing skipped is read) and the executor's epoch there. Without one it only checks
 * that options.enable_checkpointing can be honoured. *restored = 0: nothing restored, the caller
 * resets the reader to epoch 0. Errors are in last_error, naming what differs. */
STK_INTERNAL stk_status stk__checkpoint_apply(stk_pipeline *pipe, int *restored);

/* ---- Resharding (checkpoint_reshard.c) -------------------------------------------------------- */
/* A restore's shard change: the checkpoint's epoch, position, num_shards and cuts, and the
 * pipeline's num_shards. */
typedef struct stk__reshard_resume {
  uint64_t epoch;
  int64_t position, old_shards, new_shards;
  const stk__reshard_cut *cuts;
  int num;
} stk__reshard_resume;

/* Refuses (message in last_error, STK_EINVAL) what cannot resume: a resharded epoch on a reader
 * without set_reshard, resharding mid-epoch on such a reader, under skip_bad_files, or past
 * STK__RESHARD_MAX_CUTS cuts. */
STK_INTERNAL stk_status stk__checkpoint_check_reshard(stk_pipeline *pipe, const stk__reshard_resume *r);
/* Gives the reader the epoch's cuts (the checkpoint's, plus one when resharded mid-epoch) before
 * the restore's seek. */
STK_INTERNAL stk_status stk__checkpoint_set_reshard(stk_pipeline *pipe, const stk__reshard_resume *r);
/* The value of reshard= ("4/17,3/20"): 1 to STK__RESHARD_MAX_CUTS cuts, positions rising from 1.
 * 0 when malformed. */
STK_INTERNAL int stk__checkpoint_parse_reshard(const char *v, size_t len, stk__reshard_cut *cuts, int *num);
/* "reshard=...\n", or "" when num is 0. */
STK_INTERNAL void stk__checkpoint_format_reshard(char *buf, size_t size, const stk__reshard_cut *cuts, int num);
/* "A/B", both decimal (checkpoint.c's strict numbers). */
STK_INTERNAL int stk__checkpoint_parse_pair(const char *s, size_t len, uint64_t *a, int64_t *b);

#endif
