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

/* ---- The text (checkpoint_text.c) ----------------------------------------------------------- */
#define STK__CKPT_FNV_BASIS         0xcbf29ce484222325ull
#define STK__CKPT_QUARANTINE_RANGES 256 /* sample-id ranges a checkpoint carries (about 3 KB at most) */
#define STK__CKPT_MAX_TEXT          16384

/* What a checkpoint says (docs/checkpoint.md, What is saved). */
typedef struct stk__checkpoint {
  uint64_t version, seed, graph, data, epoch;
  int64_t batch_size, graph_nodes, data_samples, position, shard_id, num_shards;
  stk__refill_point refill;  /* depth 0: none ("refill=0") */
  uint64_t quarantine_count; /* bad files recorded before the checkpoint (0: none) */
  int quarantine_num;        /* sample-id ranges carried of them */
  int64_t quarantine[STK__CKPT_QUARANTINE_RANGES][2];
  char *quarantine_text; /* stk__checkpoint_format's input: the record as checkpointed (borrowed) */
  int reshard_num;       /* the epoch was resharded in its middle (0: it was not) */
  stk__reshard_cut reshard[STK__RESHARD_MAX_CUTS];
  int side_num; /* further readers (exec/side_readers.c): the consumer's epoch and next batch in each */
  uint64_t side_epoch[STK__MAX_SIDE_READERS];
  int64_t side_position[STK__MAX_SIDE_READERS];
} stk__checkpoint;

/* FNV-1a, 64 bits, continuing from h (STK__CKPT_FNV_BASIS to start): the fingerprints and the
 * checksum line. */
STK_INTERNAL uint64_t stk__checkpoint_fnv(uint64_t h, const void *data, size_t n);
/* The text of c, version 5, ending with its checksum line; malloc'd (caller frees), NULL when out
 * of memory. */
STK_INTERNAL char *stk__checkpoint_format(const stk__checkpoint *c);
/* Parses and checks `text` into c: the checksum line (when present, required from version 5)
 * before any field, then every key, then the fields against each other. STK_EINVAL with the
 * reason in err. */
STK_INTERNAL stk_status stk__checkpoint_parse(const char *text, stk__checkpoint *c, char *err, size_t err_size);

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
