/* src/core/exec/side_readers.c: the further readers of a pipeline (pipe->side; graph.c finds
 * them). DALI lets a pipeline have several readers, each with its own shuffling, sharding and
 * epoch; here the epoch reader (pipe->reader) decides when stk_pipeline_next's epoch ends, and
 * every further reader plans each batch too, into the batch's side_plans, from its own epoch:
 * when its epoch ends (its plan says last_in_epoch, its last batch completed by its own fill rule,
 * pad_last_batch) it moves to its next epoch by itself, as a DALI reader does. The consumer's
 * position in each further reader (pos_epoch, pos_batch) is kept at delivery, so a checkpoint
 * carries it and a mid-epoch reset or a restore puts the reader back there (its seek) rather than
 * losing the batches that were in flight. Once per batch on the scheduler thread; nothing per
 * sample. */
#include <stdio.h>
#include <string.h>

#include "core/exec/exec.h"

/* Plans reader r's part of a batch (scheduler thread, outside the lock, sched_busy set). */
static stk_status plan_one(stk_pipeline *pipe, int r, stk__batch_plan *plan, int batch_size, char *err,
                           size_t err_size) {
  stk__side_reader *side = &pipe->side[r];
  stk__op *op = &pipe->nodes[side->node].op;
  for (int attempt = 0; attempt < 2; attempt++) {
    plan->epoch = side->plan_epoch;
    plan->batch_index = 0;
    plan->batch_size = batch_size;
    plan->valid_samples = batch_size;
    plan->last_in_epoch = 0;
    memset(plan->samples, 0, sizeof *plan->samples * (size_t)batch_size);
    stk_status st = op->impl->plan_batch(op, plan, err, err_size);
    if (st == STK_OK && plan->batch_size != batch_size) {
      snprintf(err, err_size, "planned %d samples for a batch of %d", plan->batch_size, batch_size);
      return STK_EINTERNAL;
    }
    if (st == STK_OK && !plan->last_in_epoch) return STK_OK;
    if (st != STK_OK && st != STK_EOF_EPOCH) return st;
    /* the epoch is over (after this batch, or before it): the reader goes on in its next one */
    stk_status reset = op->impl->reset ? op->impl->reset(op, side->plan_epoch + 1) : STK_OK;
    if (reset != STK_OK) {
      snprintf(err, err_size, "moving to epoch %llu: %s", (unsigned long long)side->plan_epoch + 1,
               stk_strerror(reset));
      return reset;
    }
    side->plan_epoch++;
    if (st == STK_OK) return STK_OK;
  }
  snprintf(err, err_size, "the reader has no sample to plan in epoch %llu", (unsigned long long)side->plan_epoch);
  return STK_EINVAL;
}

stk_status stk__exec_side_plan(stk_pipeline *pipe, stk_batch *b, char *err, size_t err_size) {
  for (int r = 0; r < pipe->num_side; r++) {
    stk_status st = plan_one(pipe, r, &b->side_plans[r], pipe->options.batch_size, err, err_size);
    if (st != STK_OK) {
      char what[768];
      snprintf(what, sizeof what, "%s", err);
      const stk__node *n = &pipe->nodes[pipe->side[r].node];
      snprintf(err, err_size, "reader %s (%s): %s", n->op.name, n->op_type, what[0] ? what : stk_strerror(st));
      return st;
    }
  }
  return STK_OK;
}

void stk__exec_side_delivered(stk_pipeline *pipe, const stk_batch *b) {
  for (int r = 0; r < pipe->num_side; r++) {
    const stk__batch_plan *plan = &b->side_plans[r];
    pipe->side[r].pos_epoch = plan->last_in_epoch ? plan->epoch + 1 : plan->epoch;
    pipe->side[r].pos_batch = plan->last_in_epoch ? 0 : plan->batch_index + 1;
  }
}

stk_status stk__executor_side_rewind(stk_pipeline *pipe, char *err, size_t err_size) {
  for (int r = 0; r < pipe->num_side; r++) {
    stk__side_reader *side = &pipe->side[r];
    stk__op *op = &pipe->nodes[side->node].op;
    stk_status st = STK_OK;
    if (side->pos_batch == 0 && op->impl->reset) st = op->impl->reset(op, side->pos_epoch);
    else if (op->impl->seek) st = op->impl->seek(op, side->pos_epoch, side->pos_batch, err, err_size);
    else if (side->pos_batch != 0) continue; /* cannot go back: it goes on after what was planned */
    if (st != STK_OK) {
      char what[512];
      snprintf(what, sizeof what, "%s", err);
      snprintf(err, err_size, "reader %s: back to batch %lld of epoch %llu: %s", op->name, (long long)side->pos_batch,
               (unsigned long long)side->pos_epoch, what[0] ? what : stk_strerror(st));
      return st;
    }
    side->plan_epoch = side->pos_epoch;
  }
  return STK_OK;
}

int stk__executor_side_index(const stk_pipeline *pipe, const char *name) {
  for (int r = 0; r < pipe->num_side; r++)
    if (!strcmp(pipe->nodes[pipe->side[r].node].op.name, name)) return r;
  return -1;
}
