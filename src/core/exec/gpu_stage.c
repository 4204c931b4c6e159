/* src/core/exec/gpu_stage.c: the GPU stage thread (only when the graph has mixed/gpu nodes). It
 * takes batches whose CPU part is done, lowest sequence number first, uploads the CPU lists GPU
 * operators read, runs the mixed/gpu nodes' run_batch in graph order on the pipeline's one stream
 * and records the batch's CUDA event. Before that, a mixed node with prepare_batch (op.h) has it
 * run on a worker (STK__TASK_PREPARE), so work that blocks a thread while a device works (the JPEG
 * engines' submission) overlaps the GPU stage's other batches instead of holding it. Once per
 * batch; the operators' launches are its cost. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/exec/exec.h"

/* stk__exec_fail_batch from the GPU stage thread, which does not hold the pipeline lock. */
static void fail_batch_unlocked(stk_pipeline *pipe, stk_batch *b, stk_status st, const char *msg) {
  pthread_mutex_lock(&pipe->lock);
  stk__exec_fail_batch(b, st, msg);
  pthread_mutex_unlock(&pipe->lock);
}

/* The device list an upload of `src` lands in: samples back to back at their own sizes
 * (stk__gpu_tensor_list_reserve_sizes: for equal sizes the same storage and layout as
 * stk__gpu_tensor_list_reserve, one dense [N, ...] tensor), so a ragged batch (decoded crops) takes
 * the sum of its sizes rather than count x the largest (the largest way, ResNet-50's
 * CPU-decoder pipeline held several hundred MiB a slot).
 * With pipe->upload_shared (the default; STOKER_SHARED_UPLOAD=0 turns it off) dst is the
 * pipeline's one copy of the list, which every slot's copy borrows (stk__gpu_tensor_list_borrow):
 * an upload copy is a list of its own that only the GPU operators read, within the GPU stage,
 * which runs one batch at a time and whose operators' work joins pipe->cuda_stream before the
 * batch's event, so the next batch's DMA queues behind every read of this one; storage it
 * outgrows goes back behind that stream's work. */
static stk_status upload_reserve(stk_pipeline *pipe, const stk__tensor_list *src, stk__tensor_list *dst, int count,
                                 size_t *largest) {
  if (count > pipe->upload_sizes_cap) { /* once, at the first batch of the largest size */
    size_t *grown = (size_t *)realloc(pipe->upload_sizes, (size_t)count * sizeof *grown);
    if (!grown) return STK_ENOMEM;
    stk__count_alloc(&pipe->alloc_count);
    pipe->upload_sizes = grown;
    pipe->upload_sizes_cap = count;
  }
  *largest = 0;
  for (int s = 0; s < count; s++) {
    pipe->upload_sizes[s] = src->samples[s].nbytes;
    if (pipe->upload_sizes[s] > *largest) *largest = pipe->upload_sizes[s];
  }
  void *free_stream = pipe->upload_shared ? pipe->cuda_stream : NULL;
  return stk__gpu_tensor_list_reserve_sizes_on(dst, count, pipe->upload_sizes, free_stream, &pipe->alloc_count);
}

/* A packed list's DMA (stk__upload_pack): one copy when the device samples sit at the pack's
 * offsets from the first (reserve_sizes lays them out so), else one per sample from the pack. */
static stk_status upload_packed(stk_pipeline *pipe, const stk__upload_pack *pack, stk__tensor_list *dst, int count) {
  uint8_t *first = count ? (uint8_t *)dst->samples[0].data : NULL;
  int contiguous = 1;
  for (int s = 0; s < count && contiguous; s++)
    contiguous = dst->samples[s].nbytes == 0 || (uint8_t *)dst->samples[s].data == first + pack->offsets[s];
  if (contiguous)
    return pack->total ? stk__gpu_memcpy_h2d_async(first, pack->data, pack->total, pipe->cuda_stream) : STK_OK;
  stk_status st = STK_OK;
  for (int s = 0; st == STK_OK && s < count; s++)
    if (dst->samples[s].nbytes)
      st = stk__gpu_memcpy_h2d_async(dst->samples[s].data, (const uint8_t *)pack->data + pack->offsets[s],
                                     dst->samples[s].nbytes, pipe->cuda_stream);
  return st;
}

/* Copies every CPU list a GPU operator reads (pipe->list_upload) into its device list
 * (upload_reserve) on the pipeline's stream: a packed list (round 2 copied its samples into the
 * slot's pinned staging, cpu_stage.c) by one DMA, else one DMA per sample from its pinned buffers.
 * The slot is replanned only after its event, so the host side stays put until the copy is done.
 * A failed sample (skip_bad_files) goes across empty, as its host side is. */
static stk_status upload_lists(stk_pipeline *pipe, stk_batch *b, char *err, size_t err_size) {
  for (int l = 0; l < pipe->num_lists; l++) {
    if (pipe->list_upload[l] < 0) continue;
    const stk__tensor_list *src = &b->lists[l];
    stk__tensor_list *dst = &b->lists[pipe->list_upload[l]];
    const int count = b->plan.batch_size;
    size_t largest = 0;
    stk__tensor_list *store = pipe->upload_shared ? &pipe->upload_shared[l] : dst;
    stk_status st = upload_reserve(pipe, src, store, count, &largest);
    if (st == STK_OK && store != dst) st = stk__gpu_tensor_list_borrow(dst, store, count, &pipe->alloc_count);
    stk__upload_pack *pack = &b->packs[l];
    for (int s = 0; st == STK_OK && s < count; s++) {
      const stk__tensor *from = &src->samples[s];
      stk__tensor *to = &dst->samples[s];
      stk__tensor_take_shape(to, from, STK_DEVICE_GPU);
      if (from->nbytes && !pack->ready)
        st = stk__gpu_memcpy_h2d_async(to->data, from->data, from->nbytes, pipe->cuda_stream);
    }
    if (st == STK_OK && pack->ready) st = upload_packed(pipe, pack, dst, count);
    pack->ready = 0;
    dst->dense = stk__tensor_list_is_dense(dst, count); /* a ragged upload is per-sample only */
    if (st != STK_OK) {
      stk__errorf(err, err_size, "copying a batch of host tensors (%zu bytes the largest) to the GPU: %s", largest,
                  stk_strerror(st));
      return st;
    }
  }
  return STK_OK;
}

/* The batch context the GPU stage and the prepare tasks give the operators (err/stage set per node). */
static stk__batch_ctx batch_ctx(stk_pipeline *pipe, stk_batch *b) {
  stk__batch_ctx ctx = {.epoch = b->plan.epoch,
                        .batch_size = b->plan.batch_size,
                        .plan = &b->plan,
                        .cuda_stream = pipe->cuda_stream,
                        .device_id = pipe->options.device_id,
                        .alloc_count = &pipe->alloc_count,
                        .stats = &b->decoded,
                        .pool = (struct stk__pool_runner *)pipe,
                        .batch_seq = b->seq + 1,
                        .batch_slot = b->slot_index};
  return ctx;
}

/* The inputs array of node n for batch b: its regular and argument inputs (a fused node: the
 * fused producer's whole inputs array, then its own argument inputs). A GPU operator reads a CPU
 * list from its device copy. Returns the number of entries. */
static int gather_inputs(stk_pipeline *pipe, stk_batch *b, stk__node *n, stk__tensor_list **inputs) {
  stk__node *in_node = n->fused_op ? &pipe->nodes[n->fused_first] : n;
  int ni = 0;
  for (int i = 0; i < in_node->num_all_inputs; i++) {
    int list = pipe->nodes[in_node->src_node[i]].list_base + in_node->src_output[i];
    if (i < in_node->num_regular_inputs && in_node->op.device == STK__DEV_GPU && pipe->list_upload[list] >= 0)
      list = pipe->list_upload[list]; /* a CPU list, read from its device copy */
    inputs[ni++] = &b->lists[list];
  }
  if (n->fused_op)
    for (int i = n->num_regular_inputs; i < n->num_all_inputs; i++)
      inputs[ni++] = &b->lists[pipe->nodes[n->src_node[i]].list_base + n->src_output[i]];
  return ni;
}

/* Runs node n's run_batch on batch b; on failure the message is in msg. */
static stk_status run_node(stk_pipeline *pipe, stk_batch *b, stk__node *n, stk__batch_ctx *ctx, char *msg,
                           size_t msg_size) {
  char op_err[768];
  stk__tensor_list *inputs[32];
  stk__tensor_list *outputs[16];
  stk__op *op = n->fused_op ? n->fused_op : &n->op;
  gather_inputs(pipe, b, n, inputs);
  for (int o = 0; o < n->num_outputs; o++) outputs[o] = &b->lists[n->list_base + o];
  ctx->stage = n->stage_list >= 0 ? &b->lists[n->stage_list] : NULL;
  ctx->sample_failed = pipe->options.skip_bad_files ? b->sample_failed : NULL;
  op_err[0] = '\0';
  ctx->err = op_err;
  ctx->err_size = sizeof op_err;
  uint64_t t0 = stk__exec_now_ns();
  stk_status st = op->impl->run_batch(op, ctx, inputs, outputs);
  __atomic_fetch_add(&n->busy_ns, stk__exec_now_ns() - t0, __ATOMIC_RELAXED);
  if (st != STK_OK)
    snprintf(msg, msg_size, "operator %s (%s), batch %lld: %s", n->op.name, n->op_type, (long long)b->plan.batch_index,
             op_err[0] ? op_err : stk_strerror(st));
  return st;
}

static void run_gpu_part(stk_pipeline *pipe, stk_batch *b) {
  stk__batch_ctx ctx = batch_ctx(pipe, b);
  char up_err[768];
  char msg[1024];
  uint64_t t_up = stk__exec_now_ns();
  stk_status up = upload_lists(pipe, b, up_err, sizeof up_err);
  __atomic_fetch_add(&pipe->upload_ns, stk__exec_now_ns() - t_up, __ATOMIC_RELAXED);
  if (up != STK_OK) {
    snprintf(msg, sizeof msg, "batch %lld: %s", (long long)b->plan.batch_index, up_err);
    fail_batch_unlocked(pipe, b, up, msg);
    return;
  }
  for (int k = 0; k < pipe->num_nodes; k++) {
    stk__node *n = &pipe->nodes[pipe->order[k]];
    if (n->op.device == STK__DEV_CPU || n->skip) continue;
    stk_status st = run_node(pipe, b, n, &ctx, msg, sizeof msg);
    if (st != STK_OK) {
      fail_batch_unlocked(pipe, b, st, msg);
      return;
    }
  }
  stk_status st = stk__gpu_event_record(b->cuda_event, pipe->cuda_stream);
  if (st != STK_OK) fail_batch_unlocked(pipe, b, st, "recording the batch's CUDA event failed");
}

/* After b's GPU part (or instead of it): what the prepare hooks hold for b is released (a no-op
 * for what run_batch consumed). Outside the lock. */
static void discard_prepared(stk_pipeline *pipe, stk_batch *b) {
  for (int k = 0; k < pipe->num_nodes; k++) {
    stk__node *n = &pipe->nodes[k];
    if (n->prepare && n->op.impl->discard_batch) n->op.impl->discard_batch(&n->op, b->seq + 1);
  }
  b->prepared = 0;
}

/* Under lock: b joins the GPU stage's queue. */
static void queue_for_gpu(stk_pipeline *pipe, stk_batch *b) {
  b->state = STK__SLOT_GPU;
  if (pipe->gpu_queue_count < pipe->gpu_queue_cap) pipe->gpu_queue[pipe->gpu_queue_count++] = b;
  pthread_cond_broadcast(&pipe->cond_gpu);
}

void stk__exec_to_gpu_stage(stk_pipeline *pipe, stk_batch *b) {
  if (pipe->has_prepare && stk__exec_task_push(pipe, (stk__task){.kind = STK__TASK_PREPARE, .batch = b})) {
    pthread_cond_broadcast(&pipe->cond_work);
    return;
  }
  queue_for_gpu(pipe, b); /* no prepare hooks (or no room to queue one: run_batch does the work) */
}

void stk__exec_prepare_task(stk_pipeline *pipe, int worker_index, stk_batch *b) {
  int skip = b->cancelled || b->status != STK_OK;
  pthread_mutex_unlock(&pipe->lock);
  stk_status st = STK_OK;
  char msg[1024] = "";
  if (!skip) {
    stk__gpu_set_device(pipe->options.device_id); /* the worker's thread: once is enough, cheap */
    stk__batch_ctx ctx = batch_ctx(pipe, b);
    ctx.worker = worker_index + 1;
    b->prepared = 1;
    for (int k = 0; k < pipe->num_nodes && st == STK_OK; k++) {
      stk__node *n = &pipe->nodes[pipe->order[k]];
      if (!n->prepare) continue;
      char op_err[768] = "";
      stk__tensor_list *inputs[32];
      stk__tensor_list *outputs[16];
      gather_inputs(pipe, b, n, inputs);
      for (int o = 0; o < n->num_outputs; o++) outputs[o] = &b->lists[n->list_base + o];
      ctx.stage = n->stage_list >= 0 ? &b->lists[n->stage_list] : NULL;
      ctx.sample_failed = pipe->options.skip_bad_files ? b->sample_failed : NULL;
      ctx.err = op_err;
      ctx.err_size = sizeof op_err;
      uint64_t t0 = stk__exec_now_ns();
      st = n->op.impl->prepare_batch(&n->op, &ctx, inputs, outputs);
      __atomic_fetch_add(&n->busy_ns, stk__exec_now_ns() - t0, __ATOMIC_RELAXED);
      if (st != STK_OK)
        snprintf(msg, sizeof msg, "operator %s (%s), batch %lld: %s", n->op.name, n->op_type,
                 (long long)b->plan.batch_index, op_err[0] ? op_err : stk_strerror(st));
    }
  }
  pthread_mutex_lock(&pipe->lock);
  if (st != STK_OK) stk__exec_fail_batch(b, st, msg);
  /* Every batch goes to the GPU stage, failed or cancelled too: it marks it ready in sequence and
   * releases what the prepare hooks hold. */
  queue_for_gpu(pipe, b);
}

/* Under lock, with batches queued: takes the lowest seq, so batches reach the GPU in plan order. */
static stk_batch *take_next(stk_pipeline *pipe) {
  int best = 0;
  for (int i = 1; i < pipe->gpu_queue_count; i++)
    if (pipe->gpu_queue[i]->seq < pipe->gpu_queue[best]->seq) best = i;
  stk_batch *b = pipe->gpu_queue[best];
  pipe->gpu_queue[best] = pipe->gpu_queue[--pipe->gpu_queue_count];
  return b;
}

void *stk__exec_gpu_main(void *arg) {
  stk_pipeline *pipe = arg;
  stk__gpu_set_device(pipe->options.device_id);
  pthread_mutex_lock(&pipe->lock);
  for (;;) {
    while (!pipe->stopping && pipe->gpu_queue_count == 0) pthread_cond_wait(&pipe->cond_gpu, &pipe->lock);
    if (pipe->stopping) break;
    stk_batch *b = take_next(pipe);
    int skip = b->cancelled || b->status != STK_OK; /* a failed prepare task queues it too */
    pthread_mutex_unlock(&pipe->lock);
    uint64_t t0 = stk__exec_now_ns();
    if (!skip) run_gpu_part(pipe, b);
    if (b->prepared) discard_prepared(pipe, b);
    __atomic_fetch_add(&pipe->gpu_stage_ns, stk__exec_now_ns() - t0, __ATOMIC_RELAXED);
    pthread_mutex_lock(&pipe->lock);
    b->state = STK__SLOT_READY;
    __atomic_fetch_add(&pipe->latency_ns, stk__exec_now_ns() - b->planned_ns, __ATOMIC_RELAXED);
    pthread_cond_broadcast(&pipe->cond_done);
    pthread_cond_broadcast(&pipe->cond_sched);
  }
  pthread_mutex_unlock(&pipe->lock);
  return NULL;
}
