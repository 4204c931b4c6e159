/* src/ops/augment/colour/colour_gpu.cu: the GPU implementation (run_batch) of the colour family
 * (colour.c): per sample, the affine map of colour_params.c computed on the host from the
 * sample's argument values (constants or per-sample inputs), descriptors uploaded with one copy,
 * and ONE launch of colour_batch_kernel for the batch (blockIdx.y = sample, a grid-stride loop over
 * its pixels). Tensors: channels-last uint8 or float input ([..., C], packed), output [..., out_c]
 * as uint8 / float / float16. Same float coefficients and operation order as the CPU loop (no FMA
 * contraction: __fmul_rn / __fadd_rn), so the outputs are bitwise equal to the CPU reference
 * (tests/python/test_ops_colour.py and test_gpu_colour.c compare them). Hot path (per batch). */
#include <cuda_fp16.h>
#include <cuda_runtime_api.h>
#include <string.h>

extern "C" {
#include "ops/augment/colour/colour_params.h"
#include "ops/common/sample_gpu.h"
}
#include "ops/op_impls.h"

typedef struct colour_desc {
  const void *src;
  void *dst;
  long long pixels;
  stk__colour_transform t;
} colour_desc;

__device__ static inline unsigned char u8_round(float v) { /* stk__u8_from_float */
  float r = __fadd_rn(v, 0.5f);
  r = r < 0.0f ? 0.0f : (r > 255.0f ? 255.0f : r);
  return (unsigned char)(int)r;
}

__global__ static void colour_batch_kernel(const colour_desc *descs, int in_u8, int out_dtype) {
  const colour_desc d = descs[blockIdx.y];
  const int ic = d.t.in_c, oc = d.t.out_c;
  for (long long p = (long long)blockIdx.x * blockDim.x + threadIdx.x; p < d.pixels;
       p += (long long)gridDim.x * blockDim.x) {
    float x[4], y[4];
    for (int k = 0; k < ic; k++)
      x[k] = in_u8 ? (float)((const unsigned char *)d.src)[p * ic + k] : ((const float *)d.src)[p * ic + k];
    if (d.t.per_channel) {
      for (int k = 0; k < ic; k++) y[k] = __fadd_rn(__fmul_rn(x[k], d.t.scale), d.t.offset[0]);
    } else {
      for (int r = 0; r < oc; r++) {
        float acc = __fmul_rn(d.t.m[r * 3], x[0]);
        if (ic > 1) acc = __fadd_rn(acc, __fmul_rn(d.t.m[r * 3 + 1], x[1]));
        if (ic > 2) acc = __fadd_rn(acc, __fmul_rn(d.t.m[r * 3 + 2], x[2]));
        y[r] = __fadd_rn(acc, d.t.offset[r]);
      }
    }
    for (int r = 0; r < oc; r++) {
      long long i = p * oc + r;
      if (out_dtype == STK_DTYPE_UINT8) ((unsigned char *)d.dst)[i] = u8_round(y[r]);
      else if (out_dtype == STK_DTYPE_FLOAT32) ((float *)d.dst)[i] = y[r];
      else ((__half *)d.dst)[i] = __float2half_rn(y[r]);
    }
  }
}

/* One launch for `count` samples (descs on the device), max_pixels the largest sample's. */
static stk_status colour_batch(const colour_desc *descs, int count, long long max_pixels, int in_u8, int out_dtype,
                               cudaStream_t stream) {
  if (count <= 0) return STK_OK;
  if (count > 65535) return STK_ERANGE;
  long long blocks = (max_pixels + 255) / 256;
  dim3 grid((unsigned)(blocks < 1 ? 1 : (blocks > 1024 ? 1024 : blocks)), (unsigned)count);
  colour_batch_kernel<<<grid, 256, 0, stream>>>(descs, in_u8, out_dtype);
  return cudaGetLastError() == cudaSuccess ? STK_OK : STK_ECUDA;
}

static stk_status colour_gpu_init(stk__op *op, char *err, size_t err_size) {
  stk__colour_params p;
  stk_status s = stk__colour_params_get(op, &p, err, err_size);
  return s == STK_OK ? stk__sample_gpu_state_new(op, &p, sizeof p, err, err_size) : s;
}

/* Every sample's map and output size; the input's dtype and channels must agree across the batch. */
static stk_status plan(stk__op *op, stk__batch_ctx *ctx, stk__tensor_list *const *inputs, int n, colour_desc *descs,
                       size_t *sizes, stk_dtype *out_dtype, long long *max_pixels) {
  stk__sample_gpu_state *s = (stk__sample_gpu_state *)op->state;
  const stk__colour_params *p = (const stk__colour_params *)s->params;
  const stk__tensor_list *in = inputs[0];
  double *values;
  stk_status st = stk__sample_gpu_args(s, op, ctx, inputs, stk__colour_arg_names, STK__COLOUR_NUM_ARGS, n, &values);
  for (int i = 0; st == STK_OK && i < n; i++) {
    const stk__tensor *t = &in->samples[i];
    const int channels = (int)t->shape[t->ndim - 1];
    stk_dtype dtype;
    st = stk__colour_check(p, t->dtype, channels, &dtype, ctx->err, ctx->err_size);
    if (st == STK_OK && i > 0 && (dtype != *out_dtype || t->dtype != in->samples[0].dtype)) {
      stk__errorf(ctx->err, ctx->err_size, "sample %d: every sample of a batch must have the same dtype", i);
      st = STK_EINVAL;
    }
    if (st != STK_OK) break;
    if (dtype != STK_DTYPE_UINT8 && dtype != STK_DTYPE_FLOAT32 && dtype != STK_DTYPE_FLOAT16) {
      stk__errorf(ctx->err, ctx->err_size, "on the GPU, dtype must be uint8, float or float16");
      return STK_EINVAL;
    }
    *out_dtype = dtype;
    stk__colour_values v;
    stk__colour_values_default(&v);
    for (int k = 0; k < STK__COLOUR_NUM_ARGS; k++)
      if (stk__arg(op, stk__colour_arg_names[k])) *stk__colour_value_slot(&v, k) = values[(size_t)k * n + i];
    st = stk__colour_transform_make(p, &v, t->dtype, dtype, channels, &descs[i].t, ctx->err, ctx->err_size);
    descs[i].src = t->data;
    descs[i].pixels = (long long)(t->nbytes / stk_dtype_size(t->dtype) / (size_t)channels);
    if (descs[i].pixels > *max_pixels) *max_pixels = descs[i].pixels;
    sizes[i] = ((size_t)descs[i].pixels * descs[i].t.out_c * stk_dtype_size(dtype) + 255) & ~(size_t)255;
  }
  return st;
}

static stk_status colour_run_batch(stk__op *op, stk__batch_ctx *ctx, stk__tensor_list *const *inputs,
                                   stk__tensor_list *const *outputs) {
  stk__sample_gpu_state *s = (stk__sample_gpu_state *)op->state;
  const stk__tensor_list *in = inputs[0];
  const int n = in->count;
  stk_status st = stk__sample_gpu_check_input(ctx, in, n, 3);
  if (st != STK_OK || n == 0) return st;
  size_t at = 0;
  st = stk__sample_gpu_descs(s, ctx, (size_t)n * sizeof(colour_desc), &at);
  size_t *sizes = st == STK_OK ? stk__sample_gpu_sizes(s, n, ctx->alloc_count) : NULL;
  if (st == STK_OK && !sizes) st = STK_ENOMEM;
  if (st != STK_OK) return st;
  colour_desc *descs = (colour_desc *)(s->arena.host + at);
  stk_dtype out_dtype = STK_DTYPE_UINT8;
  long long max_pixels = 0;
  st = plan(op, ctx, inputs, n, descs, sizes, &out_dtype, &max_pixels);
  if (st == STK_OK) st = stk__sample_gpu_reserve(ctx, outputs[0], n, sizes);
  if (st != STK_OK) return st;
  for (int i = 0; i < n; i++) {
    const stk__tensor *t = &in->samples[i];
    int64_t shape[STK_MAX_DIMS];
    memcpy(shape, t->shape, sizeof shape);
    shape[t->ndim - 1] = descs[i].t.out_c;
    stk__sample_gpu_set_shape(&outputs[0]->samples[i], out_dtype, t->ndim, shape, t->layout);
    descs[i].dst = outputs[0]->samples[i].data;
  }
  stk__gpu_tensor_list_settle(outputs[0]);
  st = stk__sample_gpu_upload(s, ctx);
  if (st != STK_OK) return st;
  st = colour_batch((const colour_desc *)(s->arena.device + at), n, max_pixels, in->samples[0].dtype == STK_DTYPE_UINT8,
                    (int)out_dtype, (cudaStream_t)ctx->cuda_stream);
  if (st != STK_OK) stk__errorf(ctx->err, ctx->err_size, "the colour kernel launch failed (%s)", stk_strerror(st));
  return st;
}

extern "C" {
const stk__op_impl stk__gpu_impl_colour = {colour_gpu_init, stk__sample_gpu_state_destroy, NULL, NULL, NULL, NULL,
                                           colour_run_batch};
}
