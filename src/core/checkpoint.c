/* src/core/checkpoint.c: exact checkpoint and resume (stk_pipeline_checkpoint,
 * stk_pipeline_restore, options.checkpoint; docs/checkpoint.md). Not a hot path: runs when the
 * consumer asks for a checkpoint and once at build.
 *
 * The state is the consumer's position (epoch, index of the next batch it gets: executor.c keeps
 * it in deliver and reset) plus what must match for that position to mean the same batches: the
 * seed, the batch size, a fingerprint of the graph (operators, names, devices, inputs, arguments;
 * the reader's shard arguments apart) and of the data set listing (the reader's
 * data_fingerprint), and the reader's shard. Every random decision and the reader's plan are
 * functions of (seed, operator, epoch, sample / batch index), so resuming is: check, then
 * reader->seek(epoch, batch) -- nothing skipped is read or decoded. With skip_bad_files a batch's
 * samples also depend on the bad files met before it, so a mid-epoch checkpoint carries the refill
 * cursor's resume point (stk__refill_point, computed by exec/refill.c): the reader seeks to the
 * reader batch holding the point's start, and the cursor passes over what it must not give out.
 *
 * The text, its checksum and its parser are in checkpoint_text.c. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/checkpoint.h"
#include "core/exec/executor.h"

typedef stk__checkpoint checkpoint;

/* ---- Fingerprints --------------------------------------------------------------------------- */
static uint64_t fnv(uint64_t h, const void *data, size_t n) { return stk__checkpoint_fnv(h, data, n); }

static uint64_t fnv_str(uint64_t h, const char *s) { return s ? fnv(h, s, strlen(s) + 1) : fnv(h, "", 1); }

static uint64_t hash_arg(uint64_t h, const stk__arg_value *v) {
  h = fnv(h, &v->type, sizeof v->type);
  h = fnv(h, &v->has_value, sizeof v->has_value);
  h = fnv(h, &v->i, sizeof v->i);
  h = fnv(h, &v->f, sizeof v->f);
  h = fnv_str(h, v->s);
  h = fnv(h, &v->count, sizeof v->count);
  if (v->ilist) h = fnv(h, v->ilist, v->count * sizeof *v->ilist);
  if (v->flist) h = fnv(h, v->flist, v->count * sizeof *v->flist);
  for (size_t k = 0; v->slist && k < v->count; k++) h = fnv_str(h, v->slist[k]);
  return fnv_str(h, v->input_ref);
}

/* The reader's shard arguments are state, compared on their own (resharding rule). */
static int is_shard_arg(const stk_pipeline *pipe, int node, const char *name) {
  return node == pipe->reader && (!strcmp(name, "shard_id") || !strcmp(name, "num_shards"));
}

static uint64_t graph_fingerprint(const stk_pipeline *pipe) {
  uint64_t h = STK__CKPT_FNV_BASIS;
  h = fnv(h, &pipe->options.skip_bad_files, sizeof pipe->options.skip_bad_files);
  for (int n = 0; n < pipe->num_nodes; n++) {
    const stk__node *node = &pipe->nodes[n];
    h = fnv_str(fnv_str(h, node->op_type), node->op.name);
    h = fnv(h, &node->op.device, sizeof node->op.device);
    for (int k = 0; k < node->num_regular_inputs; k++) h = fnv_str(h, node->input_refs[k]);
    for (int a = 0; a < node->op.schema->num_args; a++) {
      const char *name = node->op.schema->args[a].name;
      if (is_shard_arg(pipe, n, name)) continue;
      h = hash_arg(fnv_str(h, name), &node->op.args[a]);
    }
  }
  for (int o = 0; o < pipe->num_outputs; o++) h = fnv_str(h, pipe->output_refs[o]);
  return h;
}

static int64_t reader_int_arg(const stk_pipeline *pipe, const char *name, int64_t fallback) {
  const stk__op *op = &pipe->nodes[pipe->reader].op;
  return stk__arg(op, name) ? stk__arg_int(op, name) : fallback;
}

/* The further readers (exec/side_readers.c): each must seek; their listings join the data
 * fingerprint. Their positions are the caller's (under the pipeline's lock). */
static stk_status side_state(stk_pipeline *pipe, checkpoint *c) {
  c->side_num = pipe->num_side;
  for (int r = 0; r < pipe->num_side; r++) {
    const stk__node *n = &pipe->nodes[pipe->side[r].node];
    if (!n->op.impl->seek || !n->op.impl->data_fingerprint) {
      stk__pipe_error(pipe, "checkpoint: reader %s (%s) cannot seek, so this pipeline cannot be checkpointed",
                      n->op.name, n->op_type);
      return STK_ENOTSUP;
    }
    int64_t samples = 0;
    uint64_t listing = n->op.impl->data_fingerprint(&n->op, &samples);
    c->data = fnv(fnv(c->data, &listing, sizeof listing), &samples, sizeof samples);
  }
  return STK_OK;
}

/* The state of `pipe` now (position from the caller). STK_ENOTSUP when the reader cannot seek. */
static stk_status current_state(stk_pipeline *pipe, checkpoint *c) {
  const stk__node *reader = &pipe->nodes[pipe->reader];
  if (!reader->op.impl->seek || !reader->op.impl->data_fingerprint) {
    stk__pipe_error(pipe, "checkpoint: reader %s (%s) cannot seek, so this pipeline cannot be checkpointed",
                    reader->op.name, reader->op_type);
    return STK_ENOTSUP;
  }
  memset(c, 0, sizeof *c);
  c->seed = pipe->options.seed;
  c->batch_size = pipe->options.batch_size;
  c->graph = graph_fingerprint(pipe);
  c->graph_nodes = pipe->num_nodes;
  c->data = reader->op.impl->data_fingerprint(&reader->op, &c->data_samples);
  c->shard_id = reader_int_arg(pipe, "shard_id", 0);
  c->num_shards = reader_int_arg(pipe, "num_shards", 1);
  return side_state(pipe, c);
}

/* ---- Public API and the build step ---------------------------------------------------------- */
stk_status stk_pipeline_checkpoint(stk_pipeline *pipe, char **out) {
  if (!pipe || !out) return STK_EINVAL;
  *out = NULL;
  if (!pipe->built) {
    stk__pipe_error(pipe, "checkpoint: the pipeline is not built");
    return STK_ESTATE;
  }
  pipe->last_error[0] = '\0';
  checkpoint c;
  stk_status st = current_state(pipe, &c);
  if (st != STK_OK) return st;
  char err[512] = "";
  pthread_mutex_lock(&pipe->lock);
  while (pipe->refill && pipe->sched_busy)
    pthread_cond_wait(&pipe->cond_done, &pipe->lock); /* the cursor holds still */
  c.epoch = pipe->pos_epoch;
  c.position = pipe->pos_batch;
  for (int r = 0; r < pipe->num_side; r++) c.side_epoch[r] = pipe->side[r].pos_epoch, c.side_position[r] = pipe->side[r].pos_batch;
  const stk__op *reader = &pipe->nodes[pipe->reader].op; /* a resharded epoch: its cuts (version 4) */
  if (reader->impl->get_reshard) c.reshard_num = reader->impl->get_reshard(reader, c.epoch, c.reshard);
  /* skip_bad_files mid-epoch: where the refill cursor resumes (at an epoch's start it is empty) */
  if (pipe->refill && c.position != 0) st = stk__executor_refill_point(pipe, &c.refill, err, sizeof err);
  char quarantine[STK__CKPT_QUARANTINE_RANGES * 44 + 32]; /* two 20-digit ids, '-' and ',' a range */
  /* the whole text stays under STK__CKPT_MAX_TEXT: 1 KB for the other keys, 48 bytes a refill interval */
  size_t room = STK__CKPT_MAX_TEXT - 1024 - 48 * (size_t)c.refill.num_skips;
  stk__executor_quarantine_format(pipe, quarantine, room < sizeof quarantine ? room : sizeof quarantine,
                                  STK__CKPT_QUARANTINE_RANGES);
  c.quarantine_text = quarantine;
  pthread_mutex_unlock(&pipe->lock);
  if (st != STK_OK) {
    stk__pipe_error(pipe, "checkpoint: batch %" PRId64 " of epoch %" PRIu64 " under skip_bad_files: %s", c.position,
                    c.epoch, err);
    return st;
  }
  *out = stk__checkpoint_format(&c);
  return *out ? STK_OK : STK_ENOMEM;
}

static stk_status check_refill(stk_pipeline *pipe, const checkpoint *c);

/* Names the first difference between the checkpoint `c` and the pipeline's state `now`. */
static stk_status check_match(stk_pipeline *pipe, const checkpoint *c, const checkpoint *now) {
  const char *reader = pipe->nodes[pipe->reader].op.name;
  if (c->seed != now->seed)
    stk__pipe_error(pipe, "checkpoint: taken with seed %" PRIu64 ", this pipeline has seed %" PRIu64, c->seed,
                    now->seed);
  else if (c->batch_size != now->batch_size)
    stk__pipe_error(pipe, "checkpoint: taken with batch_size %" PRId64 ", this pipeline has %" PRId64, c->batch_size,
                    now->batch_size);
  else if (c->data != now->data || c->data_samples != now->data_samples)
    stk__pipe_error(pipe,
                    "checkpoint: taken on another data set (%" PRId64 " samples, listing %016" PRIx64
                    "); reader %s lists %" PRId64 " samples, listing %016" PRIx64,
                    c->data_samples, c->data, reader, now->data_samples, now->data);
  else if (c->side_num != now->side_num)
    stk__pipe_error(pipe, "checkpoint: taken on a pipeline with %d further reader(s), this one has %d", c->side_num,
                    now->side_num);
  else if (c->graph != now->graph || c->graph_nodes != now->graph_nodes)
    stk__pipe_error(pipe,
                    "checkpoint: taken on another pipeline graph (%" PRId64 " nodes, fingerprint %016" PRIx64
                    "; this one: %" PRId64 " nodes, %016" PRIx64 "): operators, names, inputs or arguments differ",
                    c->graph_nodes, c->graph, now->graph_nodes, now->graph);
  else if ((c->num_shards != now->num_shards || c->reshard_num) &&
           stk__checkpoint_check_reshard(pipe, &(stk__reshard_resume){c->epoch, c->position, c->num_shards,
                                                                      now->num_shards, c->reshard, c->reshard_num}) !=
               STK_OK)
    return STK_EINVAL;
  else if (c->num_shards == now->num_shards && c->shard_id != now->shard_id)
    stk__pipe_error(pipe,
                    "checkpoint: taken on shard_id=%" PRId64 ", reader %s has shard_id=%" PRId64
                    " (each shard resumes from its own checkpoint)",
                    c->shard_id, reader, now->shard_id);
  else return check_refill(pipe, c);
  return STK_EINVAL;
}

/* With skip_bad_files a mid-epoch checkpoint carries the refill cursor, whose batches depend on
 * the prefetch depth (exec/refill.c): the same depth is required. */
static stk_status check_refill(stk_pipeline *pipe, const checkpoint *c) {
  int depth = pipe->options.prefetch_queue_depth > 1 ? pipe->options.prefetch_queue_depth : 1;
  if (c->refill.depth && !pipe->options.skip_bad_files)
    stk__pipe_error(pipe,
                    "checkpoint: carries a refill cursor (skip_bad_files) and this pipeline has skip_bad_files off");
  else if (!c->refill.depth && pipe->options.skip_bad_files && c->position != 0)
    stk__pipe_error(pipe,
                    "checkpoint: batch %" PRId64 " of epoch %" PRIu64
                    " under skip_bad_files needs the refill "
                    "cursor, and this checkpoint has none (refill=0)",
                    c->position, c->epoch);
  else if (c->refill.depth && c->position == 0)
    stk__pipe_error(pipe,
                    "checkpoint: position 0 with a refill cursor (refill=%d:...): a checkpoint at an epoch's "
                    "start carries none; the text was altered",
                    c->refill.depth);
  else if (c->refill.depth && (uint64_t)c->position > (uint64_t)c->refill.start / (uint64_t)c->batch_size)
    stk__pipe_error(pipe,
                    "checkpoint: position %" PRId64 " of epoch %" PRIu64 " is past the refill cursor's start %" PRId64
                    " (reader batch %" PRId64
                    "): the consumer cannot have received more batches than the reader "
                    "planned; the text was altered",
                    c->position, c->epoch, c->refill.start, c->refill.start / c->batch_size);
  else if (c->refill.depth && c->refill.depth != depth)
    stk__pipe_error(pipe,
                    "checkpoint: taken with prefetch_queue_depth %d under skip_bad_files, this pipeline has %d: "
                    "with skip_bad_files which samples replace bad ones depends on the prefetch depth, so resume "
                    "mid-epoch with the same prefetch_queue_depth (or from a checkpoint at an epoch's start)",
                    c->refill.depth, depth);
  else return STK_OK;
  return STK_EINVAL;
}

/* The reader batch a restore seeks to: the checkpoint's position, or with a refill cursor the
 * reader batch holding the cursor's start (the cursor passes over the entries before it). Before
 * that, the reader learns the epoch's reshardings: the checkpoint's, and one more when it is
 * resumed under another num_shards in the middle of the epoch (or of its remainder). */
static int64_t reader_batch(stk_pipeline *pipe, const checkpoint *c, const checkpoint *now, stk_status *st) {
  *st = stk__checkpoint_set_reshard(
      pipe, &(stk__reshard_resume){c->epoch, c->position, c->num_shards, now->num_shards, c->reshard, c->reshard_num});
  if (!c->refill.depth) return c->position;
  pipe->refill_resume = c->refill;
  pipe->has_refill_resume = 1;
  return c->refill.start / c->batch_size;
}

/* The further readers' positions (the build's or the executor's side rewind seeks them there). */
static void set_side_positions(stk_pipeline *pipe, const checkpoint *c) {
  pthread_mutex_lock(&pipe->lock);
  for (int r = 0; r < pipe->num_side && r < c->side_num; r++)
    pipe->side[r].pos_epoch = c->side_epoch[r], pipe->side[r].pos_batch = c->side_position[r];
  pthread_mutex_unlock(&pipe->lock);
}

/* Restore on a built pipeline: check, then the executor discards what is in flight and seeks. */
static stk_status restore_built(stk_pipeline *pipe, const checkpoint *c) {
  checkpoint now;
  stk_status st = current_state(pipe, &now);
  if (st == STK_OK) st = check_match(pipe, c, &now);
  if (st != STK_OK) return st;
  char err[512] = "";
  reader_batch(pipe, c, &now, &st); /* the executor's seek takes the refill point from the pipeline */
  if (st != STK_OK) return st;
  set_side_positions(pipe, c); /* the executor's seek puts the further readers there */
  st = stk__executor_seek(pipe, c->epoch, c->position, err, sizeof err);
  if (st == STK_OK && c->quarantine_count)
    st = stk__executor_quarantine_carry(pipe, c->quarantine_count, c->quarantine, c->quarantine_num);
  if (st != STK_OK)
    stk__pipe_error(pipe, "checkpoint: reader %s cannot resume at epoch %" PRIu64 ", batch %" PRId64 ": %s",
                    pipe->nodes[pipe->reader].op.name, c->epoch, c->position, err[0] ? err : stk_strerror(st));
  return st;
}

stk_status stk_pipeline_restore(stk_pipeline *pipe, const char *text) {
  if (!pipe || !text) return STK_EINVAL;
  pipe->last_error[0] = '\0';
  if (pipe->failed_build) {
    stk__pipe_error(pipe, "restore: the pipeline's build failed");
    return STK_ESTATE;
  }
  checkpoint c;
  char err[256] = "";
  if (stk__checkpoint_parse(text, &c, err, sizeof err) != STK_OK) {
    stk__pipe_error(pipe, "restore: %s", err);
    return STK_EINVAL;
  }
  if (pipe->built) return restore_built(pipe, &c);
  char *copy = strdup(text);
  if (!copy) return STK_ENOMEM;
  free(pipe->restore_text);
  pipe->restore_text = copy;
  return STK_OK;
}

stk_status stk__checkpoint_apply(stk_pipeline *pipe, int *restored) {
  *restored = 0;
  checkpoint now, c;
  if (!pipe->restore_text) return pipe->options.enable_checkpointing ? current_state(pipe, &now) : STK_OK;
  stk_status st = current_state(pipe, &now);
  if (st != STK_OK) return st;
  char err[512] = "";
  if (stk__checkpoint_parse(pipe->restore_text, &c, err, sizeof err) != STK_OK) {
    stk__pipe_error(pipe, "checkpoint: %s", err);
    return STK_EINVAL;
  }
  if ((st = check_match(pipe, &c, &now)) != STK_OK) return st;
  stk__node *reader = &pipe->nodes[pipe->reader];
  /* Resharded at an epoch boundary: the epoch starts over under the new sharding. */
  int64_t batch = reader_batch(pipe, &c, &now, &st);
  if (st != STK_OK) return st;
  st = reader->op.impl->seek(&reader->op, c.epoch, batch, err, sizeof err);
  if (st != STK_OK) {
    stk__pipe_error(pipe, "checkpoint: reader %s cannot resume at epoch %" PRIu64 ", batch %" PRId64 ": %s",
                    reader->op.name, c.epoch, c.position, err[0] ? err : stk_strerror(st));
    return st;
  }
  pipe->epoch = pipe->plan_epoch = pipe->pos_epoch = c.epoch;
  pipe->pos_batch = c.position; /* the refill cursor takes refill_resume when it is made */
  set_side_positions(pipe, &c);
  *restored = 1;
  if (c.quarantine_count) /* before the executor starts: the bad-files log is then appended to */
    return stk__executor_quarantine_carry(pipe, c.quarantine_count, c.quarantine, c.quarantine_num);
  return STK_OK;
}
