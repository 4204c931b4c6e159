/* src/core/pipeline_feed.c: feeding readers from outside the pipeline (stoker/pipeline.h:
 * stk_pipeline_feed_input, stk_pipeline_feed_end). The node's implementation takes the batch
 * (stk__op_impl.feed: external_source); then the scheduler, which plans nothing while the reader
 * has no input (scheduler.c), is woken. The core names no operator. Once per fed batch.
 * GPU samples (stk_pipeline_feed_input_stream): the producer's stream is waited for here, and the
 * operator's feed runs with the pipeline's GPU current on this thread (the caller's current device
 * is restored after), so it can copy or allocate on that GPU. */
#include <string.h>

#include "core/engine.h"
#include "core/graph.h"
#include "device/device.h"

/* Orders GPU samples after their producer: waits for cuda_stream's queued work, on the pipeline's
 * device (made current; *saved gets the caller's current device to restore, or -1). */
static stk_status gpu_prologue(stk_pipeline *pipe, const char *name, void *cuda_stream, int *saved) {
  *saved = -1;
  if (!stk__gpu_built()) {
    stk__pipe_error(pipe, "feed_input(%s): samples in GPU memory, but this stoker was built without CUDA", name);
    return STK_ENOTSUP;
  }
  if (pipe->options.device_id < 0) {
    stk__pipe_error(pipe, "feed_input(%s): samples in GPU memory, but the pipeline has no GPU (device_id -1)", name);
    return STK_EINVAL;
  }
  if (stk__gpu_get_device(saved) != STK_OK) *saved = -1;
  stk_status st = stk__gpu_set_device(pipe->options.device_id);
  if (st == STK_OK && cuda_stream) st = stk__gpu_stream_synchronize(cuda_stream);
  if (st != STK_OK)
    stk__pipe_error(pipe, "feed_input(%s): waiting for the producer's CUDA stream %p failed", name, cuda_stream);
  return st;
}

/* Views a feed of `count` samples passes: count per output (the fed node's num_outputs argument). */
static int op_outputs(const stk__op *op) {
  const stk__arg_value *a = stk__arg(op, "num_outputs");
  return a && a->has_value && a->i > 0 ? (int)a->i : 1;
}

static stk_status feed(stk_pipeline *pipe, const char *name, const stk_tensor_view *samples, int count, unsigned flags,
                       void *cuda_stream) {
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
  int on_gpu = 0, saved_device = -1;
  for (int i = 0; samples && i < count * op_outputs(op); i++) on_gpu |= samples[i].device_type == STK_DEVICE_GPU;
  stk_status st = on_gpu ? gpu_prologue(pipe, name, cuda_stream, &saved_device) : STK_OK;
  char err[1024] = "";
  if (st == STK_OK) {
    st = op->impl->feed(op, samples, count, flags, err, sizeof err);
    if (st != STK_OK) stk__pipe_error(pipe, "%s", err[0] ? err : stk_strerror(st));
  }
  if (saved_device >= 0) stk__gpu_set_device(saved_device);
  if (st != STK_OK) return st;
  pthread_mutex_lock(&pipe->lock);
  pthread_cond_broadcast(&pipe->cond_sched);
  pthread_mutex_unlock(&pipe->lock);
  return STK_OK;
}

stk_status stk_pipeline_feed_input(stk_pipeline *pipe, const char *name, const stk_tensor_view *samples, int count,
                                   unsigned flags) {
  if (count < 0) count = 0; /* an error from the operator: a batch holds at least one sample */
  return feed(pipe, name, samples, count, flags, NULL);
}

stk_status stk_pipeline_feed_input_stream(stk_pipeline *pipe, const char *name, const stk_tensor_view *samples,
                                          int count, unsigned flags, void *cuda_stream) {
  if (count < 0) count = 0;
  return feed(pipe, name, samples, count, flags, cuda_stream);
}

stk_status stk_pipeline_feed_end(stk_pipeline *pipe, const char *name) { return feed(pipe, name, NULL, -1, 0, NULL); }
