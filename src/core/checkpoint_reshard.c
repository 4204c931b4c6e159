/* src/core/checkpoint_reshard.c: resharding on resume -- a checkpoint taken with num_shards=N
 * resumed with another num_shards (a new world size, elastic training; docs/checkpoint.md,
 * Resharding). Not a hot path: runs at restore and when a checkpoint is written.
 *
 * At an epoch's start the epoch is read from its start under the new sharding. In its middle the
 * reader reads the epoch's remainder (readers.file: reader_file_reshard.c): every rank had received
 * the same number of batches, so what the old ranks read is a function of (seed, epoch, N, position)
 * and the rest is split among the new ranks. The checkpoint carries the epoch's cuts as
 *   reshard=<num_shards>/<position>,...    (version 4; one per earlier sharding, positions rising)
 * so a checkpoint taken inside a remainder resumes exactly, and resharding again adds a cut. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "core/checkpoint.h"

int stk__checkpoint_parse_reshard(const char *v, size_t len, stk__reshard_cut *cuts, int *num) {
  const char *end = v + len, *p = v;
  *num = 0;
  for (;;) {
    size_t rest = (size_t)(end - p);
    const char *comma = memchr(p, ',', rest), *stop = comma ? comma : end;
    uint64_t shards;
    int64_t position;
    int k = *num;
    if (k == STK__RESHARD_MAX_CUTS || !stk__checkpoint_parse_pair(p, (size_t)(stop - p), &shards, &position) ||
        shards < 1 || shards > 0x7fffffff || position < 1 || (k > 0 && position <= cuts[k - 1].position))
      return 0;
    cuts[k].num_shards = (int)shards;
    cuts[k].position = position;
    (*num)++;
    if (!comma) return 1;
    p = comma + 1;
    if (p == end) return 0; /* a trailing comma */
  }
}

void stk__checkpoint_format_reshard(char *buf, size_t size, const stk__reshard_cut *cuts, int num) {
  int n = 0;
  buf[0] = '\0';
  for (int i = 0; i < num && n >= 0 && (size_t)n < size; i++)
    n += snprintf(buf + n, size - (size_t)n, "%s%d/%" PRId64, i ? "," : "reshard=", cuts[i].num_shards,
                  cuts[i].position);
  if (num && n >= 0 && (size_t)n < size) snprintf(buf + n, size - (size_t)n, "\n");
}

/* The refusals, one message each; STK_OK when the resume may go on. */
stk_status stk__checkpoint_check_reshard(stk_pipeline *pipe, const stk__reshard_resume *r) {
  const stk__node *reader = &pipe->nodes[pipe->reader];
  int64_t start = r->num ? r->cuts[r->num - 1].position : 0;
  if (!reader->op.impl->set_reshard && r->num)
    stk__pipe_error(pipe,
                    "checkpoint: epoch %" PRIu64
                    " was resharded in its middle and reader %s (%s) cannot read "
                    "the remainder of an epoch",
                    r->epoch, reader->op.name, reader->op_type);
  else if (r->position == start || r->old_shards == r->new_shards) return STK_OK;
  else if (!reader->op.impl->set_reshard)
    stk__pipe_error(pipe,
                    "checkpoint: taken with num_shards=%" PRId64 " in the middle of epoch %" PRIu64
                    " (position %" PRId64 "); reader %s (%s) has num_shards=%" PRId64
                    " and cannot go on with an epoch under another num_shards: resume on num_shards=%" PRId64
                    " until the epoch ends, or from a checkpoint at an epoch boundary (docs/checkpoint.md)",
                    r->old_shards, r->epoch, r->position, reader->op.name, reader->op_type, r->new_shards,
                    r->old_shards);
  else if (pipe->options.skip_bad_files)
    stk__pipe_error(pipe,
                    "checkpoint: taken with num_shards=%" PRId64 " in the middle of epoch %" PRIu64
                    " (position %" PRId64 ") under skip_bad_files; reader %s has num_shards=%" PRId64
                    ": resharding mid-epoch is refused under skip_bad_files, because each old rank replaced bad "
                    "files with samples further on in its own shard (its refill cursor) and one rank's checkpoint "
                    "does not hold the others', so the remainder could repeat or miss samples; resume on "
                    "num_shards=%" PRId64 " until the epoch ends, or from a checkpoint at an epoch boundary",
                    r->old_shards, r->epoch, r->position, reader->op.name, r->new_shards, r->old_shards);
  else if (r->num == STK__RESHARD_MAX_CUTS)
    stk__pipe_error(pipe,
                    "checkpoint: epoch %" PRIu64
                    " was already resharded %d times in its middle, the most a "
                    "checkpoint records; finish the epoch on num_shards=%" PRId64,
                    r->epoch, r->num, r->old_shards);
  else return STK_OK;
  return STK_EINVAL;
}

stk_status stk__checkpoint_set_reshard(stk_pipeline *pipe, const stk__reshard_resume *r) {
  stk__op *reader = &pipe->nodes[pipe->reader].op;
  stk__reshard_cut cuts[STK__RESHARD_MAX_CUTS];
  int num = r->num;
  memcpy(cuts, r->cuts, (size_t)num * sizeof *cuts);
  /* a new cut unless nothing was read since the last one (the remainder is then split anew) */
  if (r->old_shards != r->new_shards && r->position > (num ? cuts[num - 1].position : 0)) {
    cuts[num].num_shards = (int)r->old_shards; /* room: check_reshard refused a full list */
    cuts[num++].position = r->position;
  }
  if (!reader->impl->set_reshard) return STK_OK; /* num is 0: check_reshard said so */
  char err[256] = "";
  stk_status st = reader->impl->set_reshard(reader, r->epoch, cuts, num, err, sizeof err);
  if (st != STK_OK) stk__pipe_error(pipe, "checkpoint: reader %s: %s", reader->name, err);
  return st;
}
