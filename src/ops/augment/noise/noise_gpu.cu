/* src/ops/augment/noise/noise_gpu.cu: the GPU implementation (run_batch) of noise.gaussian,
 * noise.shot and noise.salt_and_pepper: per sample the stk__noise_sample of noise_params.h (the
 * CPU implementation's setup, from constants or per-sample argument inputs), descriptors uploaded
 * with one copy, ONE launch for the batch (blockIdx.y = sample, grid-stride over its elements),
 * each element computing stk__noise_apply (noise_math.h), the CPU's function. Tensors: uint8 or
 * float, any shape, channels last; output like the input. Hot path (per batch). */
#include <cuda_runtime_api.h>
#include <string.h>

extern "C" {
#include "ops/augment/noise/noise_params.h"
#include "ops/common/sample_gpu.h"
}
#include "ops/common/sample_gpu.cuh"
#include "ops/op_impls.h"

typedef struct noise_desc {
  const void *src;
  void *dst;
  long long elements;
  stk__noise_sample s;
} noise_desc;

__global__ static void noise_batch_kernel(const noise_desc *descs, int u8) {
  const noise_desc *d = &descs[blockIdx.y];
  const stk__noise_sample s = d->s;
  for (long long e = (long long)blockIdx.x * blockDim.x + threadIdx.x; e < d->elements;
       e += (long long)gridDim.x * blockDim.x) {
    int channel = (int)(e % s.channels);
    if (u8) ((unsigned char *)d->dst)[e] = (unsigned char)stk__noise_apply(&s, e, channel, (float)((const unsigned char *)d->src)[e]);
    else ((float *)d->dst)[e] = stk__noise_apply(&s, e, channel, ((const float *)d->src)[e]);
  }
}

static stk_status noise_gpu_init(stk__op *op, char *err, size_t err_size) {
  int kind;
  stk_status s = stk__noise_kind_of(op, &kind, err, err_size);
  return s == STK_OK ? stk__sample_gpu_state_new(op, &kind, sizeof kind, err, err_size) : s;
}

static stk_status noise_run_batch(stk__op *op, stk__batch_ctx *ctx, stk__tensor_list *const *inputs,
                                  stk__tensor_list *const *outputs) {
  stk__sample_gpu_state *s = (stk__sample_gpu_state *)op->state;
  int kind;
  memcpy(&kind, s->params, sizeof kind); /* stored as bytes by stk__sample_gpu_state_new */
  const stk__tensor_list *in = inputs[0];
  const int n = in->count;
  stk_status st = stk__sample_gpu_check_input(ctx, in, n, 1);
  if (st != STK_OK || n == 0) return st;
  double *values;
  size_t at = 0;
  st = stk__sample_gpu_args(s, op, ctx, inputs, stk__noise_arg_names, STK__NOISE_NUM_ARGS, n, &values);
  if (st == STK_OK) st = stk__sample_gpu_descs(s, ctx, (size_t)n * sizeof(noise_desc), &at);
  size_t *sizes = st == STK_OK ? stk__sample_gpu_sizes(s, n, ctx->alloc_count) : NULL;
  if (st == STK_OK && !sizes) st = STK_ENOMEM;
  if (st != STK_OK) return st;
  noise_desc *descs = (noise_desc *)(s->arena.host + at);
  long long max_elements = 0;
  const stk_dtype dtype = in->samples[0].dtype;
  for (int i = 0; st == STK_OK && i < n; i++) {
    const stk__tensor *t = &in->samples[i];
    double v[STK__NOISE_NUM_ARGS];
    for (int k = 0; k < STK__NOISE_NUM_ARGS; k++) v[k] = values[(size_t)k * n + i];
    const int channels = t->ndim >= 3 ? (int)t->shape[t->ndim - 1] : 1;
    if (t->dtype != dtype) {
      stk__errorf(ctx->err, ctx->err_size, "sample %d: every sample of a batch must have the same dtype", i);
      return STK_EINVAL;
    }
    const int64_t sample_id = ctx->plan && ctx->plan->samples ? ctx->plan->samples[i].sample_id : i;
    st = stk__noise_sample_make(op, kind, v, t->dtype, channels, ctx->epoch, sample_id, &descs[i].s, ctx->err,
                                ctx->err_size);
    descs[i].src = t->data;
    descs[i].elements = (long long)(t->nbytes / (stk_dtype_size(t->dtype) ? stk_dtype_size(t->dtype) : 1));
    if (descs[i].elements > max_elements) max_elements = descs[i].elements;
    sizes[i] = (t->nbytes + 255) & ~(size_t)255;
  }
  if (st == STK_OK) st = stk__sample_gpu_reserve(ctx, outputs[0], n, sizes);
  if (st != STK_OK) return st;
  for (int i = 0; i < n; i++) {
    const stk__tensor *t = &in->samples[i];
    stk__sample_gpu_set_shape(&outputs[0]->samples[i], t->dtype, t->ndim, t->shape, t->layout);
    descs[i].dst = outputs[0]->samples[i].data;
  }
  stk__gpu_tensor_list_settle(outputs[0]);
  st = stk__sample_gpu_upload(s, ctx);
  if (st != STK_OK) return st;
  if (n > 65535) return STK_ERANGE;
  const dim3 grid = stk__sample_gpu_grid(max_elements, n, 2048);
  noise_batch_kernel<<<grid, 256, 0, (cudaStream_t)ctx->cuda_stream>>>((const noise_desc *)(s->arena.device + at),
                                                                       dtype == STK_DTYPE_UINT8);
  return stk__sample_gpu_launched(ctx, "noise");
}

extern "C" {
const stk__op_impl stk__gpu_impl_noise = {noise_gpu_init, stk__sample_gpu_state_destroy, NULL, NULL, NULL, NULL,
                                          noise_run_batch};
}
