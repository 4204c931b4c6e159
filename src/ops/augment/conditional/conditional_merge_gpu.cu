/* src/ops/augment/conditional/conditional_merge_gpu.cu: `_conditional.merge` on the GPU: per
 * sample, one device-to-device copy of the chosen branch's value into the output batch (no kernel:
 * the samples are whole contiguous tensors). The predicate is a per-sample scalar argument input,
 * normally on the host (random.coin_flip, a comparison on the CPU); a GPU predicate is read back
 * one scalar at a time. Same choice and checks as the CPU implementation (conditional_merge.c).
 * Hot path: run_batch once per batch. */
#include <stdlib.h>
#include <string.h>

#include "ops/augment/conditional/conditional_merge.h"
extern "C" {
#include "device/device.h"
#include "ops/common/gpu_ops.h"
}

typedef struct merge_gpu_state {
  size_t *sizes;
  int capacity;
} merge_gpu_state;

static stk_status merge_gpu_init(stk__op *op, char *err, size_t err_size) {
  (void)err, (void)err_size;
  op->state = calloc(1, sizeof(merge_gpu_state));
  return op->state ? STK_OK : STK_ENOMEM;
}

static void merge_gpu_destroy(stk__op *op) {
  merge_gpu_state *s = (merge_gpu_state *)op->state;
  if (s) free(s->sizes);
  free(s);
  op->state = NULL;
}

/* Sample i's predicate: the constant, or the bound argument input (host, or GPU read back). */
static stk_status read_predicate(const stk__op *op, const stk__batch_ctx *ctx, stk__tensor_list *const *inputs, int i,
                                 const stk__tensor **tensor, int *take_then) {
  const stk__arg_value *v = stk__arg(op, "predicate");
  *tensor = NULL;
  if (!v || v->input_slot < 0) {
    *take_then = stk__arg_bool(op, "predicate");
    return STK_OK;
  }
  const stk__tensor_list *list = inputs[v->input_slot];
  if (!list || i >= list->count) return STK_EINVAL;
  const stk__tensor *t = &list->samples[i];
  *tensor = t;
  if (stk__tensor_numel(t) != 1) return STK_OK; /* stk__merge_check names it */
  if (t->device == STK_DEVICE_GPU) {
    uint8_t raw[8] = {0};
    size_t bytes = stk_dtype_size(t->dtype);
    if (bytes == 0 || bytes > sizeof raw) return STK_EINVAL;
    stk_status st = stk__gpu_memcpy_d2h(raw, t->data, bytes, ctx->cuda_stream);
    if (st != STK_OK) return st;
    stk__tensor host = *t;
    host.data = raw;
    host.nbytes = bytes;
    *take_then = stk__tensor_scalar(&host) != 0.0;
  } else {
    *take_then = stk__tensor_scalar(t) != 0.0;
  }
  return STK_OK;
}

static stk_status merge_gpu_run_batch(stk__op *op, stk__batch_ctx *ctx, stk__tensor_list *const *inputs,
                                      stk__tensor_list *const *outputs) {
  merge_gpu_state *s = (merge_gpu_state *)op->state;
  const stk__tensor_list *then_list = inputs[0], *else_list = inputs[1];
  const int n = then_list->count;
  if (else_list->count != n) {
    stk__errorf(ctx->err, ctx->err_size, "the branches' batches differ in size (%d and %d samples)", n,
                else_list->count);
    return STK_EINVAL;
  }
  if (n > s->capacity) {
    size_t *grown = (size_t *)realloc(s->sizes, sizeof(size_t) * (size_t)n);
    if (!grown) return STK_ENOMEM;
    s->sizes = grown;
    s->capacity = n;
  }
  const stk__tensor **chosen = (const stk__tensor **)malloc(sizeof(stk__tensor *) * (size_t)(n ? n : 1));
  if (!chosen) return STK_ENOMEM;
  stk_status st = STK_OK;
  for (int i = 0; st == STK_OK && i < n; i++) {
    const stk__tensor *predicate;
    int take_then = 0;
    st = read_predicate(op, ctx, inputs, i, &predicate, &take_then);
    if (st != STK_OK) {
      stk__errorf(ctx->err, ctx->err_size, "could not read the `if` condition of sample %d", i);
      break;
    }
    st = stk__merge_check(&then_list->samples[i], &else_list->samples[i], predicate, i, ctx->err, ctx->err_size);
    chosen[i] = take_then ? &then_list->samples[i] : &else_list->samples[i];
    s->sizes[i] = (chosen[i]->nbytes + 255) & ~(size_t)255;
  }
  if (st == STK_OK) st = stk__gpu_tensor_list_reserve_sizes(outputs[0], n, s->sizes, ctx->alloc_count);
  for (int i = 0; st == STK_OK && i < n; i++) {
    stk__tensor *t = &outputs[0]->samples[i];
    char layout[sizeof t->layout];
    memcpy(layout, chosen[i]->layout, sizeof layout);
    stk__tensor_set_shape(t, chosen[i]->dtype, chosen[i]->ndim, chosen[i]->shape, layout, chosen[i]->nbytes);
    t->device = STK_DEVICE_GPU;
    if (chosen[i]->nbytes)
      st = stk__gpu_memcpy_d2d_async(t->data, chosen[i]->data, chosen[i]->nbytes, ctx->cuda_stream);
  }
  free(chosen);
  if (st == STK_OK) stk__gpu_tensor_list_settle(outputs[0]);
  return st;
}

extern "C" {
const stk__op_impl stk__gpu_impl_conditional_merge = {
    merge_gpu_init, merge_gpu_destroy, NULL, NULL, NULL, NULL, merge_gpu_run_batch};
}
