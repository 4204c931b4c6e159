/* src/ops/augment/jitter/jitter_gpu.cu: the GPU implementation (run_batch) of `jitter`: per sample
 * the CPU's setup (jitter_params.h, from the constants or a per-sample mask input), descriptors
 * uploaded with one copy, ONE launch for the batch (blockIdx.y = sample, grid-stride over its
 * pixels), each pixel drawing its source with stk__jitter_source -- the CPU's function, so the
 * bytes are the CPU's. Tensors: HWC of any dtype but float16; output like the input. Hot path
 * (per batch). */
#include <cuda_runtime_api.h>
#include <string.h>

extern "C" {
#include "ops/augment/jitter/jitter_params.h"
#include "ops/common/sample_gpu.h"
}
#include "ops/common/sample_gpu.cuh"
#include "ops/op_impls.h"

typedef struct jitter_desc {
  const unsigned char *src;
  unsigned char *dst;
  stk__jitter_sample s;
} jitter_desc;

__global__ static void jitter_kernel(const jitter_desc *descs) {
  const jitter_desc *d = &descs[blockIdx.y];
  const long long pixels = d->s.height * d->s.width;
  const int bytes = d->s.pixel_bytes;
  for (long long p = (long long)blockIdx.x * blockDim.x + threadIdx.x; p < pixels;
       p += (long long)gridDim.x * blockDim.x) {
    int64_t sy, sx;
    const unsigned char *from =
        stk__jitter_source(&d->s, p / d->s.width, p % d->s.width, &sy, &sx) ? d->src + (sy * d->s.width + sx) * bytes
                                                                             : d->s.fill;
    for (int b = 0; b < bytes; b++) d->dst[p * bytes + b] = from[b];
  }
}

static const char *const kArgNames[1] = {"mask"};

static stk_status jitter_gpu_init(stk__op *op, char *err, size_t err_size) {
  stk__jitter_params p;
  stk_status s = stk__jitter_parse(op, &p, err, err_size);
  return s == STK_OK ? stk__sample_gpu_state_new(op, &p, sizeof p, err, err_size) : s;
}

static stk_status jitter_run_batch(stk__op *op, stk__batch_ctx *ctx, stk__tensor_list *const *inputs,
                                   stk__tensor_list *const *outputs) {
  stk__sample_gpu_state *s = (stk__sample_gpu_state *)op->state;
  const stk__jitter_params *p = (const stk__jitter_params *)s->params;
  const stk__tensor_list *in = inputs[0];
  const int n = in->count;
  stk_status st = stk__sample_gpu_check_input(ctx, in, n, 3);
  if (st != STK_OK || n == 0) return st;
  if (n > 65535) return STK_ERANGE;
  double *masks;
  size_t at = 0;
  st = stk__sample_gpu_args(s, op, ctx, inputs, kArgNames, 1, n, &masks);
  if (st == STK_OK) st = stk__sample_gpu_descs(s, ctx, (size_t)n * sizeof(jitter_desc), &at);
  size_t *sizes = st == STK_OK ? stk__sample_gpu_sizes(s, n, ctx->alloc_count) : NULL;
  if (st == STK_OK && !sizes) st = STK_ENOMEM;
  if (st != STK_OK) return st;
  jitter_desc *descs = (jitter_desc *)(s->arena.host + at);
  long long max_pixels = 0;
  for (int i = 0; i < n; i++) {
    const stk__tensor *t = &in->samples[i];
    const int64_t sample_id = ctx->plan && ctx->plan->samples ? ctx->plan->samples[i].sample_id : i;
    st = stk__jitter_sample_make(op, p, t, masks[i], ctx->epoch, sample_id, &descs[i].s, ctx->err, ctx->err_size);
    if (st != STK_OK) return st;
    descs[i].src = (const unsigned char *)t->data;
    if (descs[i].s.height * descs[i].s.width > max_pixels) max_pixels = descs[i].s.height * descs[i].s.width;
    sizes[i] = (t->nbytes + 255) & ~(size_t)255;
  }
  st = stk__sample_gpu_reserve(ctx, outputs[0], n, sizes);
  if (st != STK_OK) return st;
  for (int i = 0; i < n; i++) {
    const stk__tensor *t = &in->samples[i];
    stk__sample_gpu_set_shape(&outputs[0]->samples[i], t->dtype, t->ndim, t->shape, t->layout);
    descs[i].dst = (unsigned char *)outputs[0]->samples[i].data;
  }
  stk__gpu_tensor_list_settle(outputs[0]);
  st = stk__sample_gpu_upload(s, ctx);
  if (st != STK_OK) return st;
  const dim3 grid = stk__sample_gpu_grid(max_pixels, n, 2048);
  jitter_kernel<<<grid, 256, 0, (cudaStream_t)ctx->cuda_stream>>>((const jitter_desc *)(s->arena.device + at));
  return stk__sample_gpu_launched(ctx, "jitter");
}

extern "C" {
const stk__op_impl stk__gpu_impl_jitter = {jitter_gpu_init, stk__sample_gpu_state_destroy, NULL, NULL, NULL, NULL,
                                           jitter_run_batch};
}
