/* src/ops/augment/gaussian_blur/gaussian_blur_gpu.cu: the GPU implementation (run_batch) of
 * `gaussian_blur`: the CPU's parse, plan and weights (blur_params.h), and the same separable
 * passes -- per spatial axis ONE launch for the batch (blockIdx.y = sample), each thread one
 * output element: the taps of its window in order (reflected only in the border rows; 32-bit
 * indices below 2^31 elements), accumulated in float from the previous pass
 * (the first reads the input's dtype, the last stores `dtype`, rounded and saturated for
 * integers), borders reflect-101. Intermediate passes go to two float buffers the operator keeps
 * (grow-only). Descriptors and weights: one upload per batch. Tensors: any dtype but float16,
 * any layout with 1-3 spatial axes; output like the input. Hot path (per batch). */
#include <cuda_runtime_api.h>
#include <stdlib.h>
#include <string.h>

extern "C" {
#include "device/device.h"
#include "ops/augment/gaussian_blur/blur_params.h"
#include "ops/common/sample_gpu.h"
}
#include "ops/common/sample_gpu.cuh"
#include "ops/op_impls.h"

typedef struct blur_pass {
  const void *src;
  void *dst;
  long long outer, extent, inner;
  long long weights; /* offset (floats) of the pass's taps in the batch's weights */
  int radius;
  stk_dtype src_type, dst_type;
} blur_pass;

typedef struct blur_state {
  stk__blur_params p;
  stk__tensor_list tmp[2]; /* float intermediates of passes 1 and 2 */
  stk__blur_plan *plans;   /* the batch's plans (grow-only) */
  int plans_cap;
} blur_state;

/* The pass's input element at, as float. */
__device__ static inline float blur_tap(const blur_pass &d, int64_t at) {
  return d.src_type == STK_DTYPE_FLOAT32 ? ((const float *)d.src)[at] : (float)stk__elem_load(d.src, d.src_type, at);
}

/* One pass over one sample (d in registers; I: the index type, 32-bit where the sample has fewer
 * than 2^31 elements -- 64-bit division is many instructions on the GPU). Rows whose window stays
 * inside the axis read their taps directly; only the border rows reflect. Same taps, same order,
 * same float steps as the CPU in either branch. */
template <typename I>
__device__ static void blur_pass_run(const blur_pass &d, const float *w, I total) {
  const I inner = (I)d.inner, extent = (I)d.extent, r = (I)d.radius;
  const int taps = 2 * d.radius + 1;
  for (I e = (I)blockIdx.x * blockDim.x + threadIdx.x; e < total; e += (I)gridDim.x * blockDim.x) {
    const I j = e % inner, line = e / inner, i = line % extent, first = line - i; /* first: (o, 0) */
    float acc = 0.0f;
    if (i >= r && i + r < extent) {
      I at = (first + i - r) * inner + j;
      for (int k = 0; k < taps; k++, at += inner) {
        acc = __fadd_rn(acc, __fmul_rn(w[k], blur_tap(d, (int64_t)at))); /* no FMA: the CPU's float steps */
      }
    } else {
      for (int k = 0; k < taps; k++) {
        const I at = (first + (I)stk__blur_reflect((int64_t)i - d.radius + k, (int64_t)extent)) * inner + j;
        acc = __fadd_rn(acc, __fmul_rn(w[k], blur_tap(d, (int64_t)at)));
      }
    }
    if (d.dst_type == STK_DTYPE_FLOAT32) ((float *)d.dst)[e] = acc;
    else stk__elem_store(d.dst, d.dst_type, (int64_t)e, acc);
  }
}

__global__ static void blur_pass_kernel(const blur_pass *passes, const float *weights) {
  const blur_pass d = passes[blockIdx.y];
  const long long total = d.outer * d.extent * d.inner;
  const float *w = weights + d.weights;
  if (total < (1ll << 31)) blur_pass_run<unsigned>(d, w, (unsigned)total);
  else blur_pass_run<long long>(d, w, total);
}

static_assert(sizeof(blur_state) <= STK__SAMPLE_GPU_PARAMS, "blur_state must fit the GPU state");

static stk_status blur_gpu_init(stk__op *op, char *err, size_t err_size) {
  blur_state st;
  memset(&st, 0, sizeof st);
  stk_status s = stk__blur_parse(op, &st.p, err, err_size);
  if (s == STK_OK && st.p.dtype_given && !stk__elem_supported_on_gpu(st.p.dtype)) {
    stk__errorf(err, err_size, "dtype float16 is not supported on the GPU; use float and cast");
    s = STK_EINVAL;
  }
  st.tmp[0].device = st.tmp[1].device = STK_DEVICE_GPU;
  return s == STK_OK ? stk__sample_gpu_state_new(op, &st, sizeof st, err, err_size) : s;
}

static void blur_gpu_destroy(stk__op *op) {
  stk__sample_gpu_state *s = (stk__sample_gpu_state *)op->state;
  if (s) {
    blur_state *bs = (blur_state *)s->params;
    stk__gpu_tensor_list_free(&bs->tmp[0]);
    stk__gpu_tensor_list_free(&bs->tmp[1]);
    free(bs->plans);
  }
  stk__sample_gpu_state_destroy(op);
}

/* The arguments that may be bound per sample to tensors read on the host. */
static const char *const kBoundArgs[2] = {"sigma", "window_size"};

/* Every sample's plan (into plans), the batch's pass count, taps and largest sample. */
static stk_status plan_batch(const stk__op *op, stk__batch_ctx *ctx, stk__tensor_list *const *inputs, int n,
                             stk__blur_plan *plans, int *passes, long long *taps, long long *max_elements) {
  const stk__tensor_list *in = inputs[0];
  *taps = 0;
  *max_elements = 0;
  for (int i = 0; i < n; i++) {
    const stk__tensor *t = &in->samples[i];
    if (!stk__elem_supported_on_gpu(t->dtype)) {
      stk__errorf(ctx->err, ctx->err_size, "sample %d: float16 input is not supported on the GPU", i);
      return STK_EINVAL;
    }
    stk_status st = stk__blur_make_plan(op, t, stk__sample_gpu_bound(op, inputs, "sigma", i),
                                        stk__sample_gpu_bound(op, inputs, "window_size", i), &plans[i], ctx->err,
                                        ctx->err_size);
    if (st != STK_OK) return st;
    if (i > 0 && plans[i].num_axes != plans[0].num_axes) {
      stk__errorf(ctx->err, ctx->err_size, "sample %d has %d spatial axes, sample 0 %d", i, plans[i].num_axes,
                  plans[0].num_axes);
      return STK_EINVAL;
    }
    *taps += plans[i].total_taps;
    long long elements = (long long)stk__tensor_numel(t);
    if (elements > *max_elements) *max_elements = elements;
  }
  *passes = plans[0].num_axes;
  return STK_OK;
}

/* The pass descriptors ([pass][sample]) and weights into the upload block. */
static void fill_passes(const blur_state *bs, const stk__tensor_list *in, stk__tensor_list *out, int n, int passes,
                        const stk__blur_plan *plans, blur_pass *descs, float *weights) {
  long long at = 0;
  for (int i = 0; i < n; i++) {
    const stk__blur_plan *plan = &plans[i];
    const stk__tensor *t = &in->samples[i];
    stk__blur_weights(plan, weights + at);
    const void *src = t->data;
    stk_dtype src_type = t->dtype;
    for (int k = 0; k < passes; k++) {
      blur_pass *d = &descs[(size_t)k * n + i];
      const int last = k == passes - 1;
      d->src = src;
      d->src_type = src_type;
      d->dst = last ? out->samples[i].data : bs->tmp[k % 2].samples[i].data;
      d->dst_type = last ? out->samples[i].dtype : STK_DTYPE_FLOAT32;
      d->outer = plan->outer[k];
      d->extent = plan->extent[k];
      d->inner = plan->inner[k];
      d->radius = plan->radius[k];
      d->weights = at;
      at += 2 * plan->radius[k] + 1;
      src = d->dst;
      src_type = STK_DTYPE_FLOAT32;
    }
  }
}

static stk_status blur_run_batch(stk__op *op, stk__batch_ctx *ctx, stk__tensor_list *const *inputs,
                                 stk__tensor_list *const *outputs) {
  stk__sample_gpu_state *s = (stk__sample_gpu_state *)op->state;
  blur_state *bs = (blur_state *)s->params;
  const stk__tensor_list *in = inputs[0];
  const int n = in->count;
  stk_status st = stk__sample_gpu_check_input(ctx, in, n, 1);
  if (st != STK_OK || n == 0) return st;
  if (n > 65535) return STK_ERANGE;
  st = stk__sample_gpu_check_bound(ctx, op, inputs, kBoundArgs, 2, n);
  if (st != STK_OK) return st;
  if (n > bs->plans_cap) {
    stk__blur_plan *grown = (stk__blur_plan *)realloc(bs->plans, (size_t)n * sizeof *grown);
    if (!grown) return STK_ENOMEM;
    bs->plans = grown;
    bs->plans_cap = n;
    if (ctx->alloc_count) __atomic_fetch_add(ctx->alloc_count, 1, __ATOMIC_RELAXED);
  }
  stk__blur_plan *plans = bs->plans;
  int passes = 0;
  long long taps = 0, max_elements = 0;
  st = plan_batch(op, ctx, inputs, n, plans, &passes, &taps, &max_elements);
  size_t *sizes = st == STK_OK ? stk__sample_gpu_sizes(s, n, ctx->alloc_count) : NULL;
  if (st == STK_OK && !sizes) st = STK_ENOMEM;
  for (int k = 0; st == STK_OK && k < 2 && k < passes - 1; k++) { /* float intermediates */
    for (int i = 0; i < n; i++) sizes[i] = ((stk__tensor_numel(&in->samples[i]) * sizeof(float)) + 255) & ~(size_t)255;
    st = stk__sample_gpu_reserve(ctx, &bs->tmp[k], n, sizes);
  }
  const stk_dtype out_type = bs->p.dtype_given ? bs->p.dtype : in->samples[0].dtype;
  for (int i = 0; st == STK_OK && i < n; i++)
    sizes[i] = ((stk__tensor_numel(&in->samples[i]) * stk_dtype_size(out_type)) + 255) & ~(size_t)255;
  if (st == STK_OK) st = stk__sample_gpu_reserve(ctx, outputs[0], n, sizes);
  if (st != STK_OK) return st;
  for (int i = 0; i < n; i++) {
    const stk__tensor *t = &in->samples[i];
    stk__sample_gpu_set_shape(&outputs[0]->samples[i], out_type, t->ndim, t->shape, t->layout);
  }
  stk__gpu_tensor_list_settle(outputs[0]);
  const size_t desc_bytes = (size_t)passes * n * sizeof(blur_pass);
  size_t at = 0;
  st = stk__sample_gpu_descs(s, ctx, desc_bytes + (size_t)taps * sizeof(float), &at);
  if (st != STK_OK) return st;
  fill_passes(bs, in, outputs[0], n, passes, plans, (blur_pass *)(s->arena.host + at),
              (float *)(s->arena.host + at + desc_bytes));
  st = stk__sample_gpu_upload(s, ctx);
  if (st != STK_OK) return st;
  const dim3 grid = stk__sample_gpu_grid(max_elements, n, 4096);
  const blur_pass *descs = (const blur_pass *)(s->arena.device + at);
  for (int k = 0; k < passes; k++)
    blur_pass_kernel<<<grid, 256, 0, (cudaStream_t)ctx->cuda_stream>>>(descs + (size_t)k * n,
                                                                       (const float *)(s->arena.device + at + desc_bytes));
  return stk__sample_gpu_launched(ctx, "gaussian_blur");
}

extern "C" {
const stk__op_impl stk__gpu_impl_gaussian_blur = {blur_gpu_init, blur_gpu_destroy, NULL, NULL, NULL, NULL,
                                                  blur_run_batch};
}
