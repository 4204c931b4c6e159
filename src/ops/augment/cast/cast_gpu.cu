/* src/ops/augment/cast/cast_gpu.cu: the GPU implementation (run_batch) of `cast`: the CPU's parse
 * (stk__cast_parse), one descriptor per sample uploaded with one copy, ONE launch for the batch
 * (blockIdx.y = sample, grid-stride over its elements), each element converted by stk__cast_elem
 * -- the CPU's function (cast_elem.h), so the bytes are the CPU's for every (input, output) dtype
 * pair, float16 and bool included. Any shape (0-d too), any input dtype (the samples of a batch
 * may differ); shape and layout kept. Output storage and the descriptor buffer grow only; all
 * work is queued on the batch's stream. Hot path (per batch). */
#include <cuda_runtime_api.h>
#include <string.h>

extern "C" {
#include "ops/augment/cast/cast_elem.h"
#include "ops/common/sample_gpu.h"
}
#include "ops/common/sample_gpu.cuh"
#include "ops/op_impls.h"

typedef struct cast_desc {
  const void *src;
  void *dst;
  long long elements;
  stk_dtype from;
} cast_desc;

__global__ static void cast_kernel(const cast_desc *descs, stk_dtype to) {
  const cast_desc *d = &descs[blockIdx.y];
  const stk_dtype from = d->from;
  for (long long e = (long long)blockIdx.x * blockDim.x + threadIdx.x; e < d->elements;
       e += (long long)gridDim.x * blockDim.x)
    stk__cast_elem(d->src, from, d->dst, to, e);
}

static stk_status cast_gpu_init(stk__op *op, char *err, size_t err_size) {
  stk_dtype dtype;
  stk_status s = stk__cast_parse(op, &dtype, err, err_size);
  return s == STK_OK ? stk__sample_gpu_state_new(op, &dtype, sizeof dtype, err, err_size) : s;
}

static stk_status cast_run_batch(stk__op *op, stk__batch_ctx *ctx, stk__tensor_list *const *inputs,
                                 stk__tensor_list *const *outputs) {
  stk__sample_gpu_state *s = (stk__sample_gpu_state *)op->state;
  stk_dtype to;
  memcpy(&to, s->params, sizeof to);
  const stk__tensor_list *in = inputs[0];
  const int n = in->count;
  stk_status st = stk__sample_gpu_check_input(ctx, in, n, 0);
  if (st != STK_OK || n == 0) return st;
  if (n > 65535) {
    stk__errorf(ctx->err, ctx->err_size, "cast on the GPU takes at most 65535 samples a batch, got %d", n);
    return STK_ERANGE;
  }
  size_t at = 0;
  st = stk__sample_gpu_descs(s, ctx, (size_t)n * sizeof(cast_desc), &at);
  size_t *sizes = st == STK_OK ? stk__sample_gpu_sizes(s, n, ctx->alloc_count) : NULL;
  if (st == STK_OK && !sizes) st = STK_ENOMEM;
  if (st != STK_OK) return st;
  cast_desc *descs = (cast_desc *)(s->arena.host + at);
  long long max_elements = 0;
  for (int i = 0; i < n; i++) {
    const stk__tensor *t = &in->samples[i];
    descs[i].src = t->data;
    descs[i].from = t->dtype;
    descs[i].elements = (long long)stk__tensor_numel(t);
    if (descs[i].elements > max_elements) max_elements = descs[i].elements;
    sizes[i] = ((size_t)descs[i].elements * stk_dtype_size(to) + 255) & ~(size_t)255;
  }
  st = stk__sample_gpu_reserve(ctx, outputs[0], n, sizes);
  if (st != STK_OK) return st;
  for (int i = 0; i < n; i++) {
    const stk__tensor *t = &in->samples[i];
    stk__sample_gpu_set_shape(&outputs[0]->samples[i], to, t->ndim, t->shape, t->layout);
    descs[i].dst = outputs[0]->samples[i].data;
  }
  stk__gpu_tensor_list_settle(outputs[0]);
  if (max_elements == 0) return STK_OK; /* every sample empty: nothing to convert */
  st = stk__sample_gpu_upload(s, ctx);
  if (st != STK_OK) return st;
  const dim3 grid = stk__sample_gpu_grid(max_elements, n, 2048);
  cast_kernel<<<grid, 256, 0, (cudaStream_t)ctx->cuda_stream>>>((const cast_desc *)(s->arena.device + at), to);
  return stk__sample_gpu_launched(ctx, "cast");
}

extern "C" {
const stk__op_impl stk__gpu_impl_cast = {cast_gpu_init, stk__sample_gpu_state_destroy, NULL, NULL, NULL, NULL,
                                         cast_run_batch};
}
