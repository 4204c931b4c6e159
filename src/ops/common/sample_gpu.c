/* src/ops/common/sample_gpu.c: the GPU batch plumbing of sample_gpu.h, in plain C on the device
 * runtime (without CUDA the device calls fail with STK_ENOTSUP and no GPU implementation is in
 * the operator table). Hot path (per batch): allocations only when a batch needs more room. */
#include <stdlib.h>
#include <string.h>

#include "device/device.h"
#include "ops/common/sample_gpu.h"

stk_status stk__sample_gpu_state_new(stk__op *op, const void *params, size_t size, char *err, size_t err_size) {
  if (size > STK__SAMPLE_GPU_PARAMS) {
    stk__errorf(err, err_size, "internal: %zu bytes of parameters do not fit the GPU state", size);
    return STK_EINVAL;
  }
  stk__sample_gpu_state *s = calloc(1, sizeof *s);
  if (!s) return STK_ENOMEM;
  stk_status dev = stk__gpu_op_device(op, &s->numa_node, err, err_size);
  if (dev != STK_OK) {
    free(s);
    return dev;
  }
  if (size) memcpy(s->params, params, size);
  op->state = s;
  return STK_OK;
}

void stk__sample_gpu_state_destroy(stk__op *op) {
  stk__sample_gpu_state *s = op->state;
  if (!s) return;
  stk__gpu_arena_free(&s->arena);
  free(s->values);
  free(s->sizes);
  free(s);
  op->state = NULL;
}

stk_status stk__sample_gpu_args(stk__sample_gpu_state *s, const stk__op *op, stk__batch_ctx *ctx,
                                stk__tensor_list *const *inputs, const char *const *names, int count, int n,
                                double **values) {
  size_t need = (size_t)count * (size_t)(n > 0 ? n : 1);
  if (need > s->values_cap) {
    double *grown = realloc(s->values, need * sizeof *grown);
    if (!grown) return STK_ENOMEM;
    s->values = grown;
    s->values_cap = need;
    if (ctx->alloc_count) __atomic_fetch_add(ctx->alloc_count, 1, __ATOMIC_RELAXED);
  }
  for (int k = 0; k < count; k++) {
    double *row = s->values + (size_t)k * (size_t)n;
    if (!stk__arg(op, names[k])) {
      for (int i = 0; i < n; i++) row[i] = 0;
      continue;
    }
    stk_status st = stk__arg_batch_floats(op, inputs, names[k], n, ctx->cuda_stream, row, ctx->err, ctx->err_size);
    if (st != STK_OK) return st;
  }
  *values = s->values;
  return STK_OK;
}

size_t *stk__sample_gpu_sizes(stk__sample_gpu_state *s, int n, uint64_t *alloc_count) {
  if (n > s->sizes_cap) {
    size_t *grown = realloc(s->sizes, (size_t)n * sizeof *grown);
    if (!grown) return NULL;
    s->sizes = grown;
    s->sizes_cap = n;
    if (alloc_count) __atomic_fetch_add(alloc_count, 1, __ATOMIC_RELAXED);
  }
  return s->sizes;
}

stk_status stk__sample_gpu_reserve(const stk__batch_ctx *ctx, stk__tensor_list *out, int n, const size_t *bytes) {
  stk_status st = stk__gpu_tensor_list_reserve_sizes(out, n, bytes, ctx->alloc_count);
  if (st != STK_OK) stk__errorf(ctx->err, ctx->err_size, "reserving the output batch on the GPU failed (%s)", stk_strerror(st));
  return st;
}

void stk__sample_gpu_set_shape(stk__tensor *t, stk_dtype dtype, int ndim, const int64_t *shape, const char *layout) {
  size_t elements = 1;
  t->dtype = dtype;
  t->ndim = ndim;
  for (int d = 0; d < ndim; d++) {
    t->shape[d] = shape[d];
    elements *= (size_t)shape[d];
  }
  strncpy(t->layout, layout ? layout : "", sizeof t->layout - 1);
  t->layout[sizeof t->layout - 1] = '\0';
  t->nbytes = elements * stk_dtype_size(dtype);
  t->device = STK_DEVICE_GPU;
}

stk_status stk__sample_gpu_descs(stk__sample_gpu_state *s, const stk__batch_ctx *ctx, size_t bytes, size_t *at) {
  stk_status st = stk__gpu_arena_reserve(&s->arena, bytes + 64, s->numa_node, ctx->alloc_count);
  if (st != STK_OK) {
    stk__errorf(ctx->err, ctx->err_size, "reserving the parameter upload buffer failed (%s)", stk_strerror(st));
    return st;
  }
  *at = stk__gpu_arena_push(&s->arena, bytes);
  return STK_OK;
}

stk_status stk__sample_gpu_upload(stk__sample_gpu_state *s, const stk__batch_ctx *ctx) {
  stk_status st = stk__gpu_arena_upload(&s->arena, ctx->cuda_stream);
  if (st != STK_OK) stk__errorf(ctx->err, ctx->err_size, "uploading per-sample parameters failed (%s)", stk_strerror(st));
  return st;
}

stk_status stk__sample_gpu_check_input(const stk__batch_ctx *ctx, const stk__tensor_list *in, int n, int min_ndim) {
  for (int i = 0; i < n; i++) {
    const stk__tensor *t = in && in->samples && i < in->count ? &in->samples[i] : NULL;
    if (!t || t->device != STK_DEVICE_GPU || t->ndim < min_ndim || (!t->data && t->nbytes)) {
      stk__errorf(ctx->err, ctx->err_size, "sample %d: the input must be a GPU tensor with at least %d dimensions", i,
                  min_ndim);
      return STK_EINVAL;
    }
  }
  return STK_OK;
}

stk_status stk__sample_gpu_check_bound(const stk__batch_ctx *ctx, const stk__op *op, stk__tensor_list *const *inputs,
                                       const char *const *names, int count, int n) {
  for (int k = 0; k < count; k++) {
    const stk__arg_value *v = stk__arg(op, names[k]);
    if (!v || v->input_slot < 0) continue;
    const stk__tensor_list *list = inputs[v->input_slot];
    if (!list || list->device == STK_DEVICE_GPU || !list->samples || list->count < n) {
      stk__errorf(ctx->err, ctx->err_size,
                  "argument '%s' must be bound to a CPU node with a value for each of the %d samples", names[k], n);
      return STK_EINVAL;
    }
  }
  return STK_OK;
}

const stk__tensor *stk__sample_gpu_bound(const stk__op *op, stk__tensor_list *const *inputs, const char *name, int i) {
  const stk__arg_value *v = stk__arg(op, name);
  if (!v || v->input_slot < 0) return NULL;
  const stk__tensor_list *list = inputs[v->input_slot];
  return list && list->samples && i < list->count ? &list->samples[i] : NULL;
}
