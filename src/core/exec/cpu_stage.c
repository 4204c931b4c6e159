/* src/core/exec/cpu_stage.c: the CPU part of a batch, run by the workers in two rounds of tasks.
 * Round 1 (STK__PHASE_SAMPLE_CHAINS): each task runs the whole CPU chain of one sample (reader's
 * run_sample, decoder, ..., a mixed op's pre-stage) into the slot's per-sample tensors. The worker
 * finishing the round hands a batch with failed samples (skip_bad_files) to the refill
 * (refill.c: the scheduler replaces them by the next good samples of the epoch and the round runs
 * again for those), then checks every CPU pipeline output: when all samples share a shape the
 * output is dense, and round 2 (STK__PHASE_DENSE_COPIES) copies into the dense batch tensor, in
 * parallel, each sample that is not there yet, and each sample of a list the GPU stage uploads into
 * the slot's pinned staging for it (plan_packs: one DMA a batch). An operator that knows a sample's shape before
 * writing it (a reader, from the file's header or size) sizes its output with
 * stk__sample_output_resize: once an output's last batch was dense, the first sample of a batch to
 * ask claims the dense tensor for its shape and every sample of that shape is written straight
 * into its slot there (dense_place), so a batch of equal shapes needs no round 2 at all. Then the
 * batch goes to the GPU stage or becomes READY. HOT PATH: run_sample_chain runs for every sample. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/exec/exec.h"

void stk__exec_fail_batch(stk_batch *b, stk_status st, const char *msg) {
  if (b->status != STK_OK) return;
  b->status = st;
  snprintf(b->error, sizeof b->error, "%s", msg);
}

/* Runs the CPU chain of sample s of batch b on worker w. Returns the status; message in w->err. */
/* The sample's failure in the worker's error, naming file, operator and sample. */
/* The sample's name: its plan's source, else what its reader wrote in the context, else NULL. */
static const char *sample_name(const stk__worker *w, const stk__sample_plan *sp) {
  return sp->source ? sp->source : w->sample_name[0] ? w->sample_name : NULL;
}

static void sample_error(stk__worker *w, const stk_batch *b, const stk__node *n, const stk__sample_plan *sp, int s,
                         const char *op_err, stk_status st) {
  const char *name = sample_name(w, sp);
  snprintf(w->err, sizeof w->err, "%s%s%soperator %s (%s), sample %d of batch %lld (dataset sample %lld): %s",
           name ? "file " : "", name ? name : "", name ? ": " : "", n->op.name, n->op_type, s,
           (long long)b->plan.batch_index, (long long)sp->sample_id, op_err[0] ? op_err : stk_strerror(st));
}

/* ---- Samples written in place ---------------------------------------------------------------- */
/* Under lock: out's dense tensor holds at least `total` bytes (grown, never shrunk; the growth is
 * taken from the host memory budget). On failure the message is in msg. */
static stk_status grow_dense_base(stk_pipeline *pipe, stk__tensor_list *out, int o, size_t total, char *msg,
                                  size_t msg_size) {
  if (total <= out->base_capacity) return STK_OK;
  const size_t more = total + 64 - out->base_capacity;
  if (!stk__host_budget_take(&pipe->host_budget, more)) { /* counted like the sample buffers */
    snprintf(msg, msg_size,
             "the dense batch tensor of pipeline output %d needs %.1f MiB more: the host memory budget is %.1f "
             "MiB (options.host_memory_budget)",
             o, (double)more / 1048576.0, (double)pipe->host_budget.limit / 1048576.0);
    return STK_ERANGE;
  }
  /* pinned: a DMA source for the copy to the GPU (the iterators' .gpu() outputs); kept as realloc keeps it */
  stk_status st = stk__host_block_grow(&out->base, &out->base_capacity, out->base_capacity, total + 64,
                                       pipe->pinned_outputs, pipe->gpu_numa_node, &pipe->alloc_count);
  if (st != STK_OK) {
    stk__host_budget_give(&pipe->host_budget, more);
    if (pipe->pinned_outputs)
      snprintf(msg, msg_size, "no pinned host memory for a dense batch tensor of %.1f MiB: %s",
               (double)(total + 64) / 1048576.0, stk_strerror(st));
    else snprintf(msg, msg_size, "out of memory for a dense batch tensor");
    return st;
  }
  if (out->base_capacity > total + 64) /* block rounding */
    stk__host_budget_count(&pipe->host_budget, out->base_capacity - (total + 64));
  out->base_pinned = pipe->pinned_outputs;
  out->base_numa_node = pipe->gpu_numa_node;
  return STK_OK;
}

/* Bytes of a dense batch tensor of `n` samples of `sample_bytes`: room for a full batch even when
 * this one is smaller (exec_dynamic), so sizes that vary below batch_size reuse the buffer. 0 on
 * overflow. */
static size_t dense_bytes(const stk_pipeline *pipe, int n, size_t sample_bytes) {
  size_t full = (size_t)(pipe->options.batch_size > n ? pipe->options.batch_size : n);
  return sample_bytes > SIZE_MAX / full ? 0 : sample_bytes * full;
}

/* The pipeline output that node output (node, output) is, when it is a CPU one; else -1. */
static int pipeline_output_of(const stk_pipeline *pipe, int node, int output) {
  if (pipe->nodes[node].op.device != STK__DEV_CPU) return -1;
  for (int o = 0; o < pipe->num_outputs; o++)
    if (pipe->out_node[o] == node && (output < 0 || pipe->out_index[o] == output)) return o;
  return -1;
}

typedef struct place_arg {
  stk_pipeline *pipe;
  stk_batch *b;
  int node, s;
} place_arg;

/* The sample's slot in the dense tensor of the pipeline output its node output is, when this batch
 * writes samples of this shape in place there (the first to ask claims it for its shape, once the
 * output's last batch was dense); else NULL (stk__sample_ctx.dense_place). Pinned lists (a GPU
 * operator reads them by DMA) keep their own buffers. */
static void *dense_place(void *arg, int output, stk_dtype dtype, int ndim, const int64_t *shape, size_t nbytes) {
  place_arg *a = arg;
  stk_pipeline *pipe = a->pipe;
  stk_batch *b = a->b;
  const stk__node *node = &pipe->nodes[a->node];
  int o = pipeline_output_of(pipe, a->node, output);
  if (o < 0 || output >= node->num_outputs || b->lists[node->list_base + output].samples[a->s].pinned ||
      ndim + 1 > STK_MAX_DIMS || !__atomic_load_n(&pipe->out_was_dense[o], __ATOMIC_RELAXED))
    return NULL; /* (a ragged output costs no lock) */
  stk__dense_claim *c = &b->claims[o];
  /* Once the batch's claim is HELD its shape and the tensor are fixed until the slot is replanned
   * (stk__exec_dense_reset, with no sample of it running): every sample but the first reads them
   * without the pipeline lock (the release store below publishes them). */
  if (__atomic_load_n(&c->state, __ATOMIC_ACQUIRE) != STK__CLAIM_HELD) {
    pthread_mutex_lock(&pipe->lock);
    if (__atomic_load_n(&c->state, __ATOMIC_RELAXED) == STK__CLAIM_NONE) {
      __atomic_store_n(&c->state, STK__CLAIM_OFF, __ATOMIC_RELAXED);
      size_t total = dense_bytes(pipe, b->plan.batch_size, nbytes);
      char msg[256]; /* a refusal here is met again, and reported, when the batch's views are made */
      if (total && grow_dense_base(pipe, &b->out_lists[o], o, total, msg, sizeof msg) == STK_OK) {
        c->dtype = dtype;
        c->ndim = ndim;
        memcpy(c->shape, shape, (size_t)ndim * sizeof *shape);
        c->nbytes = nbytes;
        __atomic_store_n(&c->state, STK__CLAIM_HELD, __ATOMIC_RELEASE);
      }
    }
    pthread_mutex_unlock(&pipe->lock);
    if (__atomic_load_n(&c->state, __ATOMIC_ACQUIRE) != STK__CLAIM_HELD) return NULL;
  }
  int same = c->dtype == dtype && c->ndim == ndim && c->nbytes == nbytes;
  for (int d = 0; same && d < ndim; d++) same = c->shape[d] == shape[d];
  return same ? (char *)b->out_lists[o].base + (size_t)a->s * nbytes : NULL;
}

void stk__exec_dense_reset(stk_pipeline *pipe, stk_batch *b) {
  for (int l = 0; l < pipe->num_lists; l++) b->packs[l].ready = 0; /* plan_packs sets it for this batch */
  for (int o = 0; o < pipe->num_outputs; o++) {
    __atomic_store_n(&b->claims[o].state, STK__CLAIM_NONE, __ATOMIC_RELAXED);
    int node = pipe->out_node[o];
    if (pipe->nodes[node].op.device != STK__DEV_CPU) continue;
    stk__tensor_list *l = &b->lists[pipe->nodes[node].list_base + pipe->out_index[o]];
    for (int s = 0; s < l->samples_capacity; s++) stk__tensor_unplace(&l->samples[s]);
  }
}

/* Reader `row` (0 the epoch reader, 1 + its index a further reader)'s name of sample s of b. */
static char *name_slot(const stk_batch *b, int row, int s) {
  return b->sample_names + ((size_t)row * (size_t)b->plan_capacity + (size_t)s) * STK__SAMPLE_NAME;
}

/* After reader node n ran for sample s: the sample's name for source_info (what the reader wrote
 * in ctx->name, else its plan's source). */
static void keep_name(stk_batch *b, const stk__node *n, int s, const char *written, const stk__sample_plan *own) {
  char *slot = name_slot(b, n->side + 1, s);
  const char *name = written && written[0] ? written : own->source ? own->source : "";
  if (slot != name) snprintf(slot, STK__SAMPLE_NAME, "%s", name);
}

/* The sample_names row of the reader up node n's first inputs (graph.c's rule for an output's
 * source_info): where an operator with schema.names_samples keeps the name it wrote. */
static int reader_row_above(const stk_pipeline *pipe, const stk__node *n) {
  for (int hops = 0; hops < pipe->num_nodes && !n->op.schema->is_reader && n->num_regular_inputs > 0; hops++)
    n = &pipe->nodes[n->src_node[0]];
  return n->side + 1;
}

/* The context fields that come from a reader's plan: the epoch reader's for every operator, a
 * further reader's while that reader runs (its own sample, label, source and epoch). */
static void plan_into_ctx(stk__sample_ctx *ctx, const stk__sample_plan *own, uint64_t epoch) {
  ctx->epoch = epoch;
  ctx->sample_id = own->sample_id;
  ctx->label = own->label;
  ctx->source = own->source;
  ctx->plan = own;
}

static stk_status run_sample_chain(stk_pipeline *pipe, stk__worker *w, stk_batch *b, int s) {
  stk__sample_plan *sp = &b->plan.samples[s];
  stk__sample_ctx ctx = {.thread_index = w->index,
                         .sample_in_batch = s,
                         .batch_slot = b->slot_index,
                         .epoch = b->plan.epoch,
                         .batch_seq = b->seq + 1,
                         .sample_id = sp->sample_id,
                         .label = sp->label,
                         .source = sp->source,
                         .plan = sp,
                         .alloc_count = &pipe->alloc_count,
                         .thread_scratch = w,
                         .name = w->sample_name,
                         .name_size = sizeof w->sample_name};
  w->sample_name[0] = '\0';
  place_arg place = {.pipe = pipe, .b = b, .s = s};
  char op_err[512] = "";
  stk__tensor *inputs[32];
  stk__tensor *outputs[16];
  ctx.err = op_err;
  ctx.err_size = sizeof op_err;
  stk__node *reader = pipe->reader >= 0 ? &pipe->nodes[pipe->reader] : NULL;
  if (reader && reader->op.device != STK__DEV_CPU && reader->op.impl->check_sample) { /* op.h */
    uint64_t t0 = stk__exec_now_ns();
    stk_status st = reader->op.impl->check_sample(&reader->op, &ctx); /* may decode (readers.video on NVDEC) */
    __atomic_fetch_add(&reader->busy_ns, stk__exec_now_ns() - t0, __ATOMIC_RELAXED);
    if (st != STK_OK) {
      sample_error(w, b, reader, sp, s, op_err, st);
      return st;
    }
  }
  for (int k = 0; k < pipe->num_nodes; k++) {
    stk__node *n = &pipe->nodes[pipe->order[k]];
    int stage = n->op.device != STK__DEV_CPU; /* a mixed op's CPU pre-stage (op.h) */
    if ((stage && n->stage_list < 0) || n->skip || !n->op.impl->run_sample) continue;
    for (int i = 0; i < n->num_all_inputs; i++) {
      stk__node *src = &pipe->nodes[n->src_node[i]];
      inputs[i] = &b->lists[src->list_base + n->src_output[i]].samples[s];
    }
    if (stage) outputs[0] = &b->lists[n->stage_list].samples[s];
    else
      for (int o = 0; o < n->num_outputs; o++) outputs[o] = &b->lists[n->list_base + o].samples[s];
    op_err[0] = '\0';
    ctx.err = op_err;
    ctx.err_size = sizeof op_err;
    place.node = pipe->order[k];
    int in_place = !stage && pipe->dense_in_place && pipeline_output_of(pipe, place.node, -1) >= 0;
    ctx.dense_place = in_place ? dense_place : NULL;
    ctx.dense_place_arg = in_place ? &place : NULL;
    const stk__sample_plan *own = n->side >= 0 ? &b->side_plans[n->side].samples[s] : sp;
    if (n->side >= 0) { /* a further reader reads its own sample (side_readers.c) */
      plan_into_ctx(&ctx, own, b->side_plans[n->side].epoch);
      ctx.name = name_slot(b, n->side + 1, s);
      ctx.name[0] = '\0';
    }
    uint64_t t0 = stk__exec_now_ns();
    stk_status st = n->op.impl->run_sample(&n->op, &ctx, inputs, outputs);
    __atomic_fetch_add(&n->busy_ns, stk__exec_now_ns() - t0, __ATOMIC_RELAXED);
    if (n->op.schema->is_reader && st == STK_OK) keep_name(b, n, s, ctx.name, own);
    else if (n->op.schema->names_samples && st == STK_OK && ctx.name[0]) /* io.file.read: the path */
      snprintf(name_slot(b, reader_row_above(pipe, n), s), STK__SAMPLE_NAME, "%s", ctx.name);
    if (n->side >= 0) {
      plan_into_ctx(&ctx, sp, b->plan.epoch);
      ctx.name = w->sample_name;
    }
    if (st != STK_OK) {
      if (st == STK_ERANGE) /* the host memory budget refused an output (slots.c) */
        stk__exec_budget_explain(pipe, n, outputs, stage ? 1 : n->num_outputs, sp, op_err, sizeof op_err);
      sample_error(w, b, n, sp, s, op_err, st);
      return st;
    }
    if ((int)(n - pipe->nodes) == pipe->reader && n->num_outputs > 0)
      __atomic_fetch_add(&pipe->bytes_read, outputs[0]->nbytes, __ATOMIC_RELAXED);
  }
  return STK_OK;
}

static int shapes_equal(const stk__tensor *a, const stk__tensor *b) {
  if (a->ndim != b->ndim || a->dtype != b->dtype) return 0;
  for (int d = 0; d < a->ndim; d++)
    if (a->shape[d] != b->shape[d]) return 0;
  return 1;
}

/* A whole copy of a sample's tensor: its contents and its stage_record (what a mixed op's pre-stage
 * decided for the sample, e.g. the decoder's plan: the GPU stage reads it for the slot the copy
 * lands in). */
static stk_status copy_tensor(stk__tensor *dst, const stk__tensor *src) {
  stk_status st = stk__tensor_resize(dst, src->dtype, src->ndim, src->shape, src->layout);
  if (st == STK_OK && src->nbytes) memcpy(dst->data, src->data, src->nbytes);
  if (st != STK_OK) return st;
  dst->nbytes = src->nbytes; /* an empty stage (ndim 0, nbytes 0) stays empty */
  memcpy(dst->stage_record, src->stage_record, sizeof dst->stage_record);
  return STK_OK;
}

/* Why sample `good`'s tensor `src` (output of `node`) could not be copied into sample s: the file,
 * the size, and the host memory budget when it refused (STK_ERANGE). */
static void copy_failure(const stk_pipeline *pipe, const stk_batch *b, const stk__node *node, const stk__tensor *src,
                         int s, int good, stk_status st, char *err, size_t err_size) {
  const double mib = 1024.0 * 1024.0;
  const stk__sample_plan *sp = &b->plan.samples[good];
  int n = snprintf(err, err_size,
                   "copying sample %d of batch %lld (file %s, dataset sample %lld: %.1f MiB of operator %s's output) "
                   "into sample %d, which replaces a bad file: ",
                   good, (long long)b->plan.batch_index, sp->source ? sp->source : "(unnamed)",
                   (long long)sp->sample_id, (double)src->nbytes / mib, node->op.name, s);
  if (n < 0 || (size_t)n >= err_size) return;
  if (st == STK_ERANGE)
    snprintf(err + n, err_size - (size_t)n,
             "the pipeline's host memory budget is %.1f MiB (%.1f MiB held; options.host_memory_budget, "
             "stoker bench --host-memory-budget)",
             (double)pipe->host_budget.limit / mib,
             (double)__atomic_load_n(&pipe->host_budget.held, __ATOMIC_RELAXED) / mib);
  else snprintf(err + n, err_size - (size_t)n, "%s", stk_strerror(st));
}

stk_status stk__exec_copy_sample(stk_pipeline *pipe, stk_batch *b, int s, int good, char *err, size_t err_size) {
  for (int row = 0; row < b->num_readers; row++) /* its source_info too */
    memcpy(name_slot(b, row, s), name_slot(b, row, good), STK__SAMPLE_NAME);
  for (int k = 0; k < pipe->num_nodes; k++) {
    stk__node *node = &pipe->nodes[k];
    for (int o = node->stage_list >= 0 ? -1 : 0; o < node->num_outputs; o++) {
      if (o >= 0 && node->op.device != STK__DEV_CPU) break;
      stk__tensor_list *l = &b->lists[o < 0 ? node->stage_list : node->list_base + o];
      stk_status st = copy_tensor(&l->samples[s], &l->samples[good]);
      if (st != STK_OK) {
        l->samples[s].refused = 0;
        copy_failure(pipe, b, node, &l->samples[good], s, good, st, err, err_size);
        return st;
      }
    }
  }
  return STK_OK;
}

void stk__exec_cpu_part_done(stk_pipeline *pipe, stk_batch *b) {
  if (pipe->has_gpu_nodes && b->status == STK_OK && !b->cancelled && !b->dropped) {
    stk__exec_to_gpu_stage(pipe, b);
    return;
  }
  b->state = STK__SLOT_READY;
  __atomic_fetch_add(&pipe->latency_ns, stk__exec_now_ns() - b->planned_ns, __ATOMIC_RELAXED);
  pthread_cond_broadcast(&pipe->cond_done);
  pthread_cond_broadcast(&pipe->cond_sched);
}

/* A consumer's view of sample src at data (borrowed). */
static void make_view(stk__tensor *view, const stk__tensor *src, void *data) {
  *view = *src;
  view->data = data;
  view->capacity = 0;
  view->alloc_count = NULL;
  view->placed = 0;
  view->own_data = NULL;
  view->own_capacity = 0;
}

/* Under lock: sets up the consumer's views of CPU pipeline output o. A dense output gets its batch
 * tensor (grown when needed) and views into it; a ragged one views the samples themselves (those
 * written in place included). Returns the copies the output needs (its dense samples not written
 * in place), or -1 on failure (the batch is failed). */
static int make_output_views(stk_pipeline *pipe, stk_batch *b, int o) {
  int n = b->plan.batch_size;
  stk__node *node = &pipe->nodes[pipe->out_node[o]];
  stk__tensor_list *out = &b->out_lists[o];
  stk__tensor_list *src = &b->lists[node->list_base + pipe->out_index[o]];
  int dense = n > 0 && src->samples[0].ndim + 1 <= STK_MAX_DIMS;
  for (int s = 1; s < n && dense; s++) dense = shapes_equal(&src->samples[0], &src->samples[s]);
  out->count = n;
  out->device = STK_DEVICE_CPU;
  out->dense = dense;
  __atomic_store_n(&pipe->out_was_dense[o], dense, __ATOMIC_RELAXED);
  if (!dense) {
    for (int s = 0; s < n; s++) make_view(&out->samples[s], &src->samples[s], src->samples[s].data);
    return 0;
  }
  /* Samples written in place were claimed at this size, so then the tensor does not move. */
  char msg[256];
  size_t total = dense_bytes(pipe, n, src->samples[0].nbytes);
  stk_status st = total || !src->samples[0].nbytes ? grow_dense_base(pipe, out, o, total, msg, sizeof msg) : STK_ENOMEM;
  if (st != STK_OK) {
    stk__exec_fail_batch(b, st, st == STK_ENOMEM && !total ? "a dense batch tensor larger than memory" : msg);
    return -1;
  }
  int copies = 0;
  for (int s = 0; s < n; s++) {
    void *at = (char *)out->base + (size_t)s * src->samples[0].nbytes;
    make_view(&out->samples[s], &src->samples[s], at);
    copies += src->samples[s].data != at;
  }
  return copies;
}

/* Under lock: each packed upload list's offsets (sample order, no gaps: the device list's layout,
 * stk__gpu_tensor_list_reserve_sizes) and a staging block that holds them, grown with a quarter of
 * headroom (a batch's total varies by a few percent), so it stops growing in warm-up. Returns the
 * round-2 copies they need (one per non-empty sample), or -1 when the batch failed (no memory).
 * The staging counts in the host budget and is never refused there: the samples it copies were.
 * A growth pins memory with the pipeline's lock held (the workers wait for it): a warm-up event. */
static int plan_packs(stk_pipeline *pipe, stk_batch *b) {
  const int n = b->plan.batch_size;
  int copies = 0;
  for (int l = 0; l < pipe->num_lists; l++) {
    stk__upload_pack *p = &b->packs[l];
    p->ready = 0;
    if (!p->on) continue;
    const stk__tensor *samples = b->lists[l].samples;
    size_t total = 0;
    for (int s = 0; s < n; s++) {
      p->offsets[s] = total;
      if (samples[s].nbytes > SIZE_MAX / 2 - total) {
        stk__exec_fail_batch(b, STK_ENOMEM, "a batch to upload larger than memory");
        return -1;
      }
      total += samples[s].nbytes;
      copies += samples[s].nbytes > 0;
    }
    if (total > p->capacity) {
      const size_t had = p->capacity, want = total + total / 4 + ((size_t)64 << 10);
      stk_status st = stk__host_block_grow(&p->data, &p->capacity, 0, want, 1, p->numa_node, &pipe->alloc_count);
      if (st != STK_OK) {
        char msg[160];
        snprintf(msg, sizeof msg, "%zu bytes of pinned memory for a batch's upload to the GPU: %s", want,
                 stk_strerror(st));
        stk__exec_fail_batch(b, st, msg);
        return -1;
      }
      stk__host_budget_count(&pipe->host_budget, p->capacity - had);
    }
    p->total = total;
    p->ready = 1;
  }
  return copies;
}

/* Under lock: starts round 2 with `copies` tasks, one per sample of every dense CPU output that
 * is not in its place yet and per non-empty sample of every packed upload list (plan_packs). */
static void queue_round_two(stk_pipeline *pipe, stk_batch *b, int copies) {
  int n = b->plan.batch_size;
  b->phase = STK__PHASE_DENSE_COPIES;
  b->pending = copies;
  for (int l = 0; l < pipe->num_lists; l++)
    for (int s = 0; b->packs[l].ready && s < n; s++)
      if (b->lists[l].samples[s].nbytes)
        stk__exec_task_push(pipe, (stk__task){.kind = STK__TASK_PACK_COPY, .batch = b, .index = l * n + s});
  for (int o = 0; o < pipe->num_outputs; o++) {
    if (!b->out_lists[o].dense || pipe->nodes[pipe->out_node[o]].op.device != STK__DEV_CPU) continue;
    const stk__tensor_list *src = &b->lists[pipe->nodes[pipe->out_node[o]].list_base + pipe->out_index[o]];
    for (int s = 0; s < n; s++) /* the samples not written in place (make_output_views counted them) */
      if (src->samples[s].data != b->out_lists[o].samples[s].data)
        stk__exec_task_push(pipe, (stk__task){.kind = STK__TASK_DENSE_COPY, .batch = b, .index = o * n + s});
  }
  pthread_cond_broadcast(&pipe->cond_work);
}

/* Under lock, skip_bad_files: 1 when b waits for replacements of bad samples (the scheduler's
 * stk__exec_refill_serve) or was dropped; else its fill samples are copies now and it goes on. */
static int refill_pending(stk_pipeline *pipe, stk_batch *b) {
  int bad = 0;
  for (int s = 0; s < b->plan.batch_size && !bad; s++) bad = b->sample_failed[s] == STK__SAMPLE_BAD;
  pthread_cond_broadcast(&pipe->cond_sched); /* the in-order completion moves on */
  pthread_cond_broadcast(&pipe->cond_done);  /* a reset mid-epoch waits for it */
  if (bad && b->status == STK_OK && !b->cancelled) {
    b->refill_state = STK__REFILL_WAITING;
    return 1;
  }
  b->refill_state = STK__REFILL_SEALED;
  if (b->status != STK_OK || b->cancelled) return 0;
  char err[sizeof b->error];
  stk_status st = stk__exec_refill_resolve_fills(pipe, b, err, sizeof err);
  if (st != STK_OK) stk__exec_fail_batch(b, st, err);
  if (b->dropped) {
    stk__exec_cpu_part_done(pipe, b);
    return 1;
  }
  return 0;
}

void stk__exec_finish_sample_phase(stk_pipeline *pipe, stk_batch *b) {
  if (pipe->refill && refill_pending(pipe, b)) return;
  if (b->status != STK_OK || b->cancelled) {
    stk__exec_cpu_part_done(pipe, b);
    return;
  }
  int copies = 0;
  for (int o = 0; o < pipe->num_outputs; o++) {
    if (pipe->nodes[pipe->out_node[o]].op.device != STK__DEV_CPU) continue;
    int more = make_output_views(pipe, b, o);
    if (more < 0) {
      stk__exec_cpu_part_done(pipe, b);
      return;
    }
    copies += more;
  }
  int packs = plan_packs(pipe, b);
  if (packs < 0) {
    stk__exec_cpu_part_done(pipe, b);
    return;
  }
  if (copies + packs) queue_round_two(pipe, b, copies + packs);
  else stk__exec_cpu_part_done(pipe, b);
}

/* Outside the lock: task `index` of round 2 (output index / n, sample index % n). */
static void copy_dense_sample(stk_pipeline *pipe, stk_batch *b, int index) {
  int n = b->plan.batch_size;
  int o = index / n, s = index % n;
  stk__node *node = &pipe->nodes[pipe->out_node[o]];
  const stk__tensor *src = &b->lists[node->list_base + pipe->out_index[o]].samples[s];
  if (src->nbytes) memcpy(b->out_lists[o].samples[s].data, src->data, src->nbytes); /* empty: data may be NULL */
}

/* Outside the lock: task `index` of round 2 for a packed upload (list index / n, sample index % n)
 * into the list's staging, at the offset plan_packs gave it. */
static void copy_packed_sample(stk_batch *b, int index) {
  int n = b->plan.batch_size;
  int l = index / n, s = index % n;
  const stk__upload_pack *p = &b->packs[l];
  const stk__tensor *src = &b->lists[l].samples[s];
  if (src->nbytes) memcpy((char *)p->data + p->offsets[s], src->data, src->nbytes); /* an empty one has no data */
}

void stk__exec_cpu_task(stk_pipeline *pipe, stk__worker *w, stk__task t) {
  stk_batch *b = t.batch;
  int skip_work = b->cancelled || b->status != STK_OK;
  pthread_mutex_unlock(&pipe->lock);
  stk_status st = STK_OK;
  if (!skip_work) {
    if (t.kind == STK__TASK_SAMPLE_CHAIN) st = run_sample_chain(pipe, w, b, t.index);
    else if (t.kind == STK__TASK_PACK_COPY) copy_packed_sample(b, t.index);
    else copy_dense_sample(pipe, b, t.index);
  }
  pthread_mutex_lock(&pipe->lock);
  if (st != STK_OK) {
    int skippable = pipe->options.skip_bad_files && st != STK_ENOMEM && st != STK_EINTERNAL && st != STK_ESHUTDOWN;
    if (skippable) {
      b->sample_failed[t.index] = STK__SAMPLE_BAD;
      stk__exec_note_bad_sample(b, &b->plan.samples[t.index], sample_name(w, &b->plan.samples[t.index]), w->err);
    } else stk__exec_fail_batch(b, st, w->err);
  }
  if (--b->pending == 0) {
    if (b->phase == STK__PHASE_SAMPLE_CHAINS) stk__exec_finish_sample_phase(pipe, b);
    else stk__exec_cpu_part_done(pipe, b);
  }
}
