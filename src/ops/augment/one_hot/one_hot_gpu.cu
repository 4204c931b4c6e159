/* src/ops/augment/one_hot/one_hot_gpu.cu: the GPU implementation (run_batch) of `one_hot`: the
 * CPU's parse and per-sample shape (one_hot_params.h), descriptors uploaded with one copy, ONE
 * launch for the batch (blockIdx.y = sample, grid-stride over its output), each element from
 * stk__one_hot_value like the CPU's. Inputs: class indices of any dtype but float16; output
 * `dtype` (any but float16). Hot path (per batch). */
#include <cuda_runtime_api.h>
#include <string.h>

extern "C" {
#include "ops/augment/one_hot/one_hot_params.h"
#include "ops/common/sample_gpu.h"
}
#include "ops/common/sample_gpu.cuh"
#include "ops/op_impls.h"

typedef struct one_hot_desc {
  const void *src;
  void *dst;
  long long elements, inner;
} one_hot_desc;

__global__ static void one_hot_kernel(const one_hot_desc *descs, stk_dtype src_type, stk_dtype dst_type,
                                      long long classes, double on_value, double off_value) {
  const one_hot_desc *d = &descs[blockIdx.y];
  for (long long e = (long long)blockIdx.x * blockDim.x + threadIdx.x; e < d->elements;
       e += (long long)gridDim.x * blockDim.x)
    stk__elem_store(d->dst, dst_type, e,
                    stk__one_hot_value(d->src, src_type, e, classes, d->inner, on_value, off_value));
}

static stk_status one_hot_gpu_init(stk__op *op, char *err, size_t err_size) {
  stk__one_hot_params p;
  stk_status s = stk__one_hot_parse(op, &p, err, err_size);
  if (s == STK_OK && !stk__elem_supported_on_gpu(p.dtype)) {
    stk__errorf(err, err_size, "dtype float16 is not supported on the GPU; use float and cast");
    s = STK_EINVAL;
  }
  return s == STK_OK ? stk__sample_gpu_state_new(op, &p, sizeof p, err, err_size) : s;
}

static stk_status one_hot_run_batch(stk__op *op, stk__batch_ctx *ctx, stk__tensor_list *const *inputs,
                                    stk__tensor_list *const *outputs) {
  stk__sample_gpu_state *s = (stk__sample_gpu_state *)op->state;
  const stk__one_hot_params *p = (const stk__one_hot_params *)s->params;
  const stk__tensor_list *in = inputs[0];
  const int n = in->count;
  stk_status st = stk__sample_gpu_check_input(ctx, in, n, 0);
  if (st != STK_OK || n == 0) return st;
  if (n > 65535) return STK_ERANGE;
  size_t at = 0;
  st = stk__sample_gpu_descs(s, ctx, (size_t)n * sizeof(one_hot_desc), &at);
  size_t *sizes = st == STK_OK ? stk__sample_gpu_sizes(s, n, ctx->alloc_count) : NULL;
  if (st == STK_OK && !sizes) st = STK_ENOMEM;
  if (st != STK_OK) return st;
  one_hot_desc *descs = (one_hot_desc *)(s->arena.host + at);
  const stk_dtype src_type = in->samples[0].dtype;
  long long max_elements = 0;
  for (int i = 0; i < n; i++) {
    const stk__tensor *t = &in->samples[i];
    stk__one_hot_shape shape;
    if (t->dtype != src_type) {
      stk__errorf(ctx->err, ctx->err_size, "sample %d: every sample of a batch must have the same dtype", i);
      return STK_EINVAL;
    }
    st = stk__one_hot_make_shape(p, t, &shape, ctx->err, ctx->err_size);
    if (st != STK_OK) return st;
    descs[i].src = t->data;
    descs[i].inner = shape.inner;
    descs[i].elements = shape.outer * p->num_classes * shape.inner;
    if (descs[i].elements > max_elements) max_elements = descs[i].elements;
    sizes[i] = ((size_t)descs[i].elements * stk_dtype_size(p->dtype) + 255) & ~(size_t)255;
  }
  st = stk__sample_gpu_reserve(ctx, outputs[0], n, sizes);
  if (st != STK_OK) return st;
  for (int i = 0; i < n; i++) {
    stk__one_hot_shape shape;
    stk__one_hot_make_shape(p, &in->samples[i], &shape, ctx->err, ctx->err_size);
    stk__sample_gpu_set_shape(&outputs[0]->samples[i], p->dtype, shape.ndim, shape.shape, shape.layout);
    descs[i].dst = outputs[0]->samples[i].data;
  }
  stk__gpu_tensor_list_settle(outputs[0]);
  st = stk__sample_gpu_upload(s, ctx);
  if (st != STK_OK) return st;
  const dim3 grid = stk__sample_gpu_grid(max_elements, n, 2048);
  one_hot_kernel<<<grid, 256, 0, (cudaStream_t)ctx->cuda_stream>>>((const one_hot_desc *)(s->arena.device + at),
                                                                    src_type, p->dtype, p->num_classes, p->on_value,
                                                                    p->off_value);
  return stk__sample_gpu_launched(ctx, "one_hot");
}

extern "C" {
const stk__op_impl stk__gpu_impl_one_hot = {one_hot_gpu_init, stk__sample_gpu_state_destroy, NULL, NULL, NULL, NULL,
                                            one_hot_run_batch};
}
