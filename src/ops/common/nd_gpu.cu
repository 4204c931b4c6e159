/* src/ops/common/nd_gpu.cu: the generic GPU run_batch of the geometry operators (nd_gpu.h): plan
 * each sample with the operator's own plan (the CPU implementation's), reserve the outputs (one
 * grow-only ragged reservation), set their shapes, push every part's descriptor (its dimensions
 * merged where it is one run over them, stk__nd_coalesce) and the erase boxes into the upload arena,
 * one copy, one launch of stk__gpu_nd_copy_batch. Hot path (per batch). */
#include <stdlib.h>
#include <string.h>

#include "ops/common/image_gpu.h"
#include "ops/common/nd_gpu.h"

typedef struct nd_gpu_state {
  stk__nd_state nd; /* first: the CPU frame's state (kind + params) */
  stk__gpu_arena arena;
  int numa_node;
  stk__nd_plan *plans; /* grow-only, one per sample */
  size_t *sizes;
  int capacity;
} nd_gpu_state;

stk_status stk__nd_gpu_init(stk__op *op, const stk__nd_kind *kind, char *err, size_t err_size) {
  nd_gpu_state *s = (nd_gpu_state *)calloc(1, sizeof *s);
  if (!s) return STK_ENOMEM;
  stk_status dev = stk__gpu_op_device(op, &s->numa_node, err, err_size);
  if (dev != STK_OK) {
    free(s);
    return dev;
  }
  stk_status st = stk__nd_state_init(&s->nd, op, kind, err, err_size);
  if (st != STK_OK) {
    free(s);
    return st;
  }
  op->state = s;
  return STK_OK;
}

void stk__nd_gpu_destroy(stk__op *op) {
  nd_gpu_state *s = (nd_gpu_state *)op->state;
  if (!s) return;
  stk__gpu_arena_free(&s->arena);
  stk__nd_state_free(&s->nd);
  free(s->plans);
  free(s->sizes);
  free(s);
  op->state = NULL;
}

static stk_status grow(nd_gpu_state *s, int n, uint64_t *alloc_count) {
  if (n <= s->capacity) return STK_OK;
  stk__nd_plan *plans = (stk__nd_plan *)realloc(s->plans, (size_t)n * sizeof *plans);
  if (plans) s->plans = plans;
  size_t *sizes = (size_t *)realloc(s->sizes, (size_t)n * sizeof *sizes);
  if (sizes) s->sizes = sizes;
  if (!plans || !sizes) return STK_ENOMEM;
  s->capacity = n;
  if (alloc_count) __atomic_fetch_add(alloc_count, 1, __ATOMIC_RELAXED);
  return STK_OK;
}

/* Plans every sample (inputs of sample i: regular then argument inputs, as run_sample gets them). */
static stk_status plan_batch(stk__op *op, nd_gpu_state *s, stk__batch_ctx *ctx, stk__tensor_list *const *inputs, int n,
                             int *parts, int *boxes, int64_t *max_elements) {
  int all_inputs = op->num_inputs;
  for (int a = 0; a < op->schema->num_args; a++)
    if (op->args[a].input_slot >= all_inputs) all_inputs = op->args[a].input_slot + 1;
  *parts = *boxes = 0;
  *max_elements = 0;
  /* Per-sample values the plan reads from device memory (positional inputs, an argument bound to a
   * GPU node) are copied back on the legacy stream: first let this batch's uploads land. */
  int wait = s->nd.kind->reads_inputs && op->num_inputs > 1;
  for (int k = op->num_inputs; k < all_inputs; k++) wait |= inputs[k] && inputs[k]->device == STK_DEVICE_GPU;
  if (wait && stk__gpu_stream_synchronize(ctx->cuda_stream) != STK_OK) {
    stk__errorf(ctx->err, ctx->err_size, "waiting for the per-sample inputs on the GPU failed");
    return STK_ECUDA;
  }
  for (int i = 0; i < n; i++) {
    stk__tensor *ins[32];
    for (int k = 0; k < all_inputs && k < 32; k++) {
      if (!inputs[k] || i >= inputs[k]->count) {
        stk__errorf(ctx->err, ctx->err_size, "input %d has %d samples, fewer than the batch's %d", k,
                    inputs[k] ? inputs[k]->count : 0, n);
        return STK_EINVAL;
      }
      ins[k] = &inputs[k]->samples[i];
    }
    char why[512] = "";
    stk__nd_plan *p = &s->plans[i];
    stk_status st = s->nd.kind->plan(op, s->nd.params, ins, op->num_inputs, p, why, sizeof why);
    if (st != STK_OK) {
      stk__errorf(ctx->err, ctx->err_size, "sample %d: %s", i, why);
      return st;
    }
    size_t elements = 1;
    for (int d = 0; d < p->ndim; d++) elements *= (size_t)p->shape[d];
    s->sizes[i] = (elements * stk_dtype_size(p->dtype) + 255) & ~(size_t)255;
    if (s->sizes[i] == 0) s->sizes[i] = 256;
    for (int k = 0; k < p->parts; k++) {
      int64_t count = stk__nd_count(&p->part[k]);
      if (count > *max_elements) *max_elements = count;
      *parts += count > 0;
    }
    *boxes += p->num_boxes;
  }
  return STK_OK;
}

/* The descriptors of every non-empty part, dst set to its sample's output, boxes to the device copy
 * of the sample's boxes (at boxes_at in the arena). */
static void push_descs(nd_gpu_state *s, stk__tensor_list *out, int n, size_t descs_at, size_t boxes_at) {
  stk__nd_copy *descs = (stk__nd_copy *)(s->arena.host + descs_at);
  int64_t *boxes = (int64_t *)(s->arena.host + boxes_at);
  const int64_t *boxes_device = (const int64_t *)(s->arena.device + boxes_at);
  size_t box_words = 0;
  int k = 0;
  for (int i = 0; i < n; i++) {
    const stk__nd_plan *p = &s->plans[i];
    const size_t words = (size_t)p->num_boxes * p->ndim * 2;
    memcpy(boxes + box_words, p->boxes, words * sizeof *boxes);
    for (int q = 0; q < p->parts; q++) {
      if (stk__nd_count(&p->part[q]) == 0) continue;
      descs[k] = p->part[q];
      descs[k].dst = out->samples[i].data;
      descs[k].boxes = boxes_device + box_words;
      descs[k].num_boxes = p->num_boxes;
      stk__nd_coalesce(&descs[k]); /* fewer dimensions to unravel per element, same elements */
      descs[k].inside32 = stk__nd_inside32(&descs[k]);
      k++;
    }
    box_words += words;
  }
}

stk_status stk__nd_gpu_run_batch(stk__op *op, stk__batch_ctx *ctx, stk__tensor_list *const *inputs,
                                 stk__tensor_list *const *outputs) {
  nd_gpu_state *s = (nd_gpu_state *)op->state;
  const int n = inputs[0]->count;
  stk__tensor_list *out = outputs[0];
  if (n == 0) {
    out->count = 0;
    return STK_OK;
  }
  stk_status st = grow(s, n, ctx->alloc_count);
  if (st != STK_OK) return stk__gpu_failure(ctx, st, "the per-sample plans");
  int parts, boxes;
  int64_t max_elements;
  st = plan_batch(op, s, ctx, inputs, n, &parts, &boxes, &max_elements);
  if (st != STK_OK) return st;
  st = stk__gpu_tensor_list_reserve_sizes(out, n, s->sizes, ctx->alloc_count);
  if (st != STK_OK) return stk__gpu_failure(ctx, st, "reserving the output batch on the GPU");
  for (int i = 0; i < n; i++) {
    const stk__nd_plan *p = &s->plans[i];
    stk__gpu_set_sample_shape(&out->samples[i], p->dtype, p->ndim, p->shape, p->layout);
  }
  stk__gpu_tensor_list_settle(out);
  if (parts == 0) return STK_OK;
  const size_t desc_bytes = (size_t)parts * sizeof(stk__nd_copy);
  const size_t box_bytes = (size_t)boxes * STK__ND_DIMS * 2 * sizeof(int64_t) + 16;
  st = stk__gpu_arena_reserve(&s->arena, desc_bytes + box_bytes + 64, s->numa_node, ctx->alloc_count);
  if (st != STK_OK) return stk__gpu_failure(ctx, st, "reserving the parameter upload buffer");
  size_t descs_at = stk__gpu_arena_push(&s->arena, desc_bytes);
  size_t boxes_at = stk__gpu_arena_push(&s->arena, box_bytes);
  push_descs(s, out, n, descs_at, boxes_at);
  cudaStream_t stream = (cudaStream_t)ctx->cuda_stream;
  st = stk__gpu_arena_upload(&s->arena, stream);
  if (st != STK_OK) return stk__gpu_failure(ctx, st, "uploading per-sample parameters");
  st = stk__gpu_nd_copy_batch((const stk__nd_copy *)(s->arena.device + descs_at), parts, max_elements, stream);
  return stk__gpu_failure(ctx, st, "the batched geometry copy kernel launch");
}
