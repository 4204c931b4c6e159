/* src/core/pipeline_feed.c: feeding readers from outside the pipeline (stoker/pipeline.h:
 * stk_pipeline_feed_input, stk_pipeline_feed_end). The node's implementation takes the batch
 * (stk__op_impl.feed: external_source); then the scheduler, which plans nothing while the reader
 * has no input (scheduler.c), is woken. The core names no operator. Once per fed batch. */
#include <string.h>

#include "core/engine.h"
#include "core/graph.h"

static stk_status feed(stk_pipeline *pipe, const char *name, const stk_tensor_view *samples, int count,
                       unsigned flags) {
  if (!pipe) return STK_EINVAL;
  pipe->last_error[0] = '\0';
  if (!name) {
    stk__pipe_error(pipe, "feed_input: no node name given");
    return STK_EINVAL;
  }
  if (!pipe->built) {
    stk__pipe_error(pipe, "feed_input(%s): build the pipeline first", name);
    return STK_ESTATE;
  }
  int k = stk__graph_find_node(pipe, name, strlen(name));
  if (k < 0 || !pipe->nodes[k].op.impl->feed) {
    stk__pipe_error(pipe, "feed_input: %s '%s'%s", k < 0 ? "no node named" : "node", name,
                    k < 0 ? "" : " is not an external_source (it cannot be fed)");
    return k < 0 ? STK_ENOENT : STK_EINVAL;
  }
  stk__op *op = &pipe->nodes[k].op;
  char err[1024] = "";
  stk_status st = op->impl->feed(op, samples, count, flags, err, sizeof err);
  if (st != STK_OK) {
    stk__pipe_error(pipe, "%s", err[0] ? err : stk_strerror(st));
    return st;
  }
  pthread_mutex_lock(&pipe->lock);
  pthread_cond_broadcast(&pipe->cond_sched);
  pthread_mutex_unlock(&pipe->lock);
  return STK_OK;
}

stk_status stk_pipeline_feed_input(stk_pipeline *pipe, const char *name, const stk_tensor_view *samples, int count,
                                   unsigned flags) {
  if (count < 0) count = 0; /* an error from the operator: a batch holds at least one sample */
  return feed(pipe, name, samples, count, flags);
}

stk_status stk_pipeline_feed_end(stk_pipeline *pipe, const char *name) { return feed(pipe, name, NULL, -1, 0); }
