/* src/ops/augment/normalize/normalize_gpu.cu: the GPU implementation (run_batch) of `normalize`:
 * the CPU's parse and per-sample plan (normalize_params.h), the statistics in double precision
 * like the CPU's, and batch=True (one set of statistics for the whole batch; every sample must
 * then keep the same extents on its kept axes). One upload per batch carries the descriptors, the
 * given means/factors and zeroed accumulators; up to five launches over the batch (blockIdx.y =
 * sample): sum -> mean, squared deviations -> factor, apply. A sample with one statistic is
 * summed in registers and by warp shuffles, one atomic add a warp; else a block accumulates up to
 * SHARED_STATS statistics in shared memory before one atomic add each, and more go straight to
 * global atomics. Tensors: any dtype but float16, any shape (<= STK_MAX_DIMS axes); output like the
 * input in `dtype`. Hot path (per batch). */
#include <cuda_runtime_api.h>
#include <string.h>

extern "C" {
#include "ops/augment/normalize/normalize_params.h"
#include "ops/common/elem_access.h"
#include "ops/common/sample_gpu.h"
}
#include "ops/common/sample_gpu.cuh"
#include "ops/op_impls.h"

#define SHARED_STATS 256

typedef struct norm_desc {
  const void *src;
  void *dst;
  long long elements;
  long long stats;     /* this sample's statistics */
  long long stat_base; /* where they start in the batch's arrays (0 for every sample with batch=True) */
  int ndim;
  long long shape[STK_MAX_DIMS];
  long long stat_stride[STK_MAX_DIMS];
} norm_desc;

typedef struct norm_state {
  stk__normalize_params p;
} norm_state;

/* The statistic of element e: its coordinates on the kept axes (stat_stride != 0) against the
 * statistics' strides. Only the axes from the outermost kept one inwards are unravelled (a
 * per-channel HWC normalize: one modulo), in I (32-bit below 2^31 elements: 64-bit division is many
 * instructions on the GPU); a sample with one statistic (every axis reduced) needs none. */
template <typename I>
__device__ static inline long long stat_of(const norm_desc *d, int first_kept, I e) {
  long long stat = 0;
  for (int a = d->ndim - 1; a >= first_kept; a--) {
    const I extent = (I)d->shape[a], q = e / extent;
    stat += (long long)(e - q * extent) * d->stat_stride[a];
    e = q;
  }
  return stat;
}

/* The outermost axis whose coordinate names the statistic (ndim when every axis is reduced). */
__device__ static inline int first_kept_axis(const norm_desc *d) {
  for (int a = 0; a < d->ndim; a++)
    if (d->stat_stride[a] != 0) return a;
  return d->ndim;
}

/* Sums of one sample with a single statistic: each thread in a register over its elements, the
 * warp by shuffles, one atomic add a warp (instead of one a element into one shared address). */
template <typename I>
__device__ static void accumulate_one(const norm_desc *d, stk_dtype in_type, const double *mean, double *acc) {
  const double m = mean ? mean[d->stat_base] : 0.0;
  double sum = 0.0;
  for (I e = (I)blockIdx.x * blockDim.x + threadIdx.x; e < (I)d->elements; e += (I)gridDim.x * blockDim.x) {
    double v = stk__elem_load(d->src, in_type, (long long)e);
    if (mean) v = (v - m) * (v - m);
    sum += v;
  }
  for (int offset = 16; offset > 0; offset >>= 1) sum += __shfl_down_sync(0xffffffffu, sum, offset);
  if ((threadIdx.x & 31) == 0 && sum != 0) atomicAdd(&acc[d->stat_base], sum);
}

template <typename I>
__device__ static void accumulate_many(const norm_desc *d, stk_dtype in_type, const double *mean, double *acc,
                                       double *local, int shared) {
  const int first_kept = first_kept_axis(d);
  for (I e = (I)blockIdx.x * blockDim.x + threadIdx.x; e < (I)d->elements; e += (I)gridDim.x * blockDim.x) {
    const long long s = stat_of<I>(d, first_kept, e);
    double v = stk__elem_load(d->src, in_type, (long long)e);
    if (mean) v = (v - mean[d->stat_base + s]) * (v - mean[d->stat_base + s]);
    if (shared) atomicAdd(&local[s], v);
    else atomicAdd(&acc[d->stat_base + s], v);
  }
}

/* Per statistic: the sum of the elements (mean == NULL) or of their squared deviations from mean. */
__global__ static void normalize_accumulate(const norm_desc *descs, stk_dtype in_type, const double *mean,
                                            double *acc) {
  __shared__ double local[SHARED_STATS];
  const norm_desc *d = &descs[blockIdx.y];
  const bool narrow = d->elements < (1ll << 31);
  if (d->stats == 1) { /* the same for the whole block: no __syncthreads below is skipped by part of it */
    if (narrow) accumulate_one<unsigned>(d, in_type, mean, acc);
    else accumulate_one<long long>(d, in_type, mean, acc);
    return;
  }
  const int shared = d->stats <= SHARED_STATS;
  if (shared)
    for (int k = threadIdx.x; k < d->stats; k += blockDim.x) local[k] = 0;
  __syncthreads();
  if (narrow) accumulate_many<unsigned>(d, in_type, mean, acc, local, shared);
  else accumulate_many<long long>(d, in_type, mean, acc, local, shared);
  __syncthreads();
  if (shared)
    for (int k = threadIdx.x; k < d->stats; k += blockDim.x)
      if (local[k] != 0) atomicAdd(&acc[d->stat_base + k], local[k]);
}

/* mean = acc / count (kind 0) or factor = scale / sqrt(acc / (count - ddof) + epsilon) (kind 1);
 * acc is zeroed for the next pass. */
__global__ static void normalize_finish(int kind, long long total, const double *count, double *acc, double *out,
                                        int ddof, double epsilon, double scale) {
  for (long long k = (long long)blockIdx.x * blockDim.x + threadIdx.x; k < total;
       k += (long long)gridDim.x * blockDim.x) {
    out[k] = kind == 0 ? acc[k] / count[k] : stk__normalize_factor(acc[k] / (count[k] - ddof), epsilon, scale);
    acc[k] = 0;
  }
}

template <typename I>
__device__ static void apply_sample(const norm_desc *d, stk_dtype in_type, stk_dtype out_type, const double *mean,
                                    const double *factor, double shift) {
  const int first_kept = first_kept_axis(d);
  for (I e = (I)blockIdx.x * blockDim.x + threadIdx.x; e < (I)d->elements; e += (I)gridDim.x * blockDim.x) {
    const long long s = d->stat_base + stat_of<I>(d, first_kept, e);
    stk__elem_store(d->dst, out_type, (long long)e,
                    (stk__elem_load(d->src, in_type, (long long)e) - mean[s]) * factor[s] + shift);
  }
}

__global__ static void normalize_apply(const norm_desc *descs, stk_dtype in_type, stk_dtype out_type,
                                       const double *mean, const double *factor, double shift) {
  const norm_desc *d = &descs[blockIdx.y];
  if (d->elements < (1ll << 31)) apply_sample<unsigned>(d, in_type, out_type, mean, factor, shift);
  else apply_sample<long long>(d, in_type, out_type, mean, factor, shift);
}

static stk_status normalize_gpu_init(stk__op *op, char *err, size_t err_size) {
  norm_state st;
  stk_status s = stk__normalize_parse(op, &st.p, err, err_size);
  if (s == STK_OK && !stk__elem_supported_on_gpu(st.p.dtype)) {
    stk__errorf(err, err_size, "dtype float16 is not supported on the GPU; use float and cast");
    s = STK_EINVAL;
  }
  return s == STK_OK ? stk__sample_gpu_state_new(op, &st, sizeof st, err, err_size) : s;
}

/* The arguments that may be bound per sample to tensors read on the host. */
static const char *const kBoundArgs[2] = {"mean", "stddev"};

/* 1 when two plans keep the same axes with the same extents (their statistics line up). */
static int same_statistics(const stk__normalize_plan *a, const stk__normalize_plan *b) {
  if (a->ndim != b->ndim || a->reduced != b->reduced) return 0;
  for (int d = 0; d < a->ndim; d++)
    if (!(a->reduced >> d & 1u) && a->shape[d] != b->shape[d]) return 0;
  return 1;
}

/* The batch's plans: each sample's descriptor into descs (NULL: only count), the number of
 * statistics of the batch's arrays into *total (batch_stats: one sample's) and the elements the
 * batch reduces into each statistic with batch_stats into *batch_count. */
static stk_status plan_batch(const stk__op *op, const stk__normalize_params *p, int batch_stats, stk__batch_ctx *ctx,
                             stk__tensor_list *const *inputs, int n, norm_desc *descs, long long *total,
                             long long *max_elements, long long *batch_count) {
  const stk__tensor_list *in = inputs[0];
  stk__normalize_plan first;
  *total = 0;
  *max_elements = 0;
  *batch_count = 0;
  for (int i = 0; i < n; i++) {
    const stk__tensor *t = &in->samples[i];
    stk__normalize_plan plan;
    if (t->dtype != in->samples[0].dtype || !stk__elem_supported_on_gpu(t->dtype)) {
      stk__errorf(ctx->err, ctx->err_size, "sample %d: every sample must have the same dtype, not float16", i);
      return STK_EINVAL;
    }
    stk_status st = stk__normalize_make_plan(p, t, stk__sample_gpu_bound(op, inputs, "mean", i),
                                             stk__sample_gpu_bound(op, inputs, "stddev", i), &plan, ctx->err, ctx->err_size);
    if (st != STK_OK) return st;
    if (i == 0) first = plan;
    if (batch_stats && !same_statistics(&plan, &first)) {
      stk__errorf(ctx->err, ctx->err_size,
                  "batch=True: sample %d keeps other axes or extents than sample 0 (every sample must have the same "
                  "extents on the axes that are not reduced)", i);
      return STK_EINVAL;
    }
    *batch_count += plan.per_stat;
    const long long elements = (long long)stk__tensor_numel(t);
    if (elements > *max_elements) *max_elements = elements;
    if (descs) {
      norm_desc *d = &descs[i];
      memset(d, 0, sizeof *d);
      d->src = t->data;
      d->elements = elements;
      d->stats = plan.stats;
      d->stat_base = batch_stats ? 0 : *total;
      d->ndim = plan.ndim;
      for (int a = 0; a < plan.ndim; a++) {
        d->shape[a] = plan.shape[a];
        d->stat_stride[a] = plan.stat_stride[a];
      }
    }
    if (!batch_stats || i == 0) *total += plan.stats;
  }
  return STK_OK;
}

/* The batch's mean / factor / count arrays: given values, or the divisors of computed ones. */
static stk_status fill_statistics(const stk__op *op, const stk__normalize_params *p, int batch_stats,
                                  stk__batch_ctx *ctx, stk__tensor_list *const *inputs, int n, long long batch_count,
                                  double *mean, double *factor, double *count) {
  const stk__tensor_list *in = inputs[0];
  for (int i = 0; i < (batch_stats ? 1 : n); i++) {
    stk__normalize_plan plan;
    const stk__tensor *mt = stk__sample_gpu_bound(op, inputs, "mean", i), *sd = stk__sample_gpu_bound(op, inputs, "stddev", i);
    stk_status st = stk__normalize_make_plan(p, &in->samples[i], mt, sd, &plan, ctx->err, ctx->err_size);
    if (st == STK_OK && p->mean_given)
      st = stk__normalize_given(p, &plan, mt, stk__arg_float(op, "mean"), 0, mean, ctx->err, ctx->err_size);
    if (st == STK_OK && p->stddev_given)
      st = stk__normalize_given(p, &plan, sd, stk__arg_float(op, "stddev"), 1, factor, ctx->err, ctx->err_size);
    if (st != STK_OK) return st;
    const long long per = batch_stats ? batch_count : (long long)plan.per_stat;
    if (!p->stddev_given && per - p->ddof <= 0) {
      stk__errorf(ctx->err, ctx->err_size, "sample %d: ddof %d leaves no degrees of freedom (%lld elements)", i,
                  p->ddof, per);
      return STK_EINVAL;
    }
    for (long long k = 0; k < plan.stats; k++) count[k] = (double)per;
    mean += plan.stats;
    factor += plan.stats;
    count += plan.stats;
  }
  return STK_OK;
}

static stk_status launch(const stk__normalize_params *p, stk__batch_ctx *ctx, const norm_desc *descs, int n,
                         long long max_elements, long long total, stk_dtype in_type, double *mean, double *factor,
                         double *acc, const double *count) {
  cudaStream_t stream = (cudaStream_t)ctx->cuda_stream;
  const dim3 grid = stk__sample_gpu_grid(max_elements, n, 2048);
  long long finish = (total + 255) / 256;
  unsigned finish_blocks = (unsigned)(finish < 1 ? 1 : (finish > 1024 ? 1024 : finish));
  if (!p->mean_given) {
    normalize_accumulate<<<grid, 256, 0, stream>>>(descs, in_type, NULL, acc);
    normalize_finish<<<finish_blocks, 256, 0, stream>>>(0, total, count, acc, mean, 0, 0, 0);
  }
  if (!p->stddev_given) {
    normalize_accumulate<<<grid, 256, 0, stream>>>(descs, in_type, mean, acc);
    normalize_finish<<<finish_blocks, 256, 0, stream>>>(1, total, count, acc, factor, p->ddof, p->epsilon, p->scale);
  }
  normalize_apply<<<grid, 256, 0, stream>>>(descs, in_type, p->dtype, mean, factor, p->shift);
  return stk__sample_gpu_launched(ctx, "normalize");
}

static stk_status normalize_run_batch(stk__op *op, stk__batch_ctx *ctx, stk__tensor_list *const *inputs,
                                      stk__tensor_list *const *outputs) {
  stk__sample_gpu_state *s = (stk__sample_gpu_state *)op->state;
  const stk__normalize_params *p = &((const norm_state *)s->params)->p;
  const stk__tensor_list *in = inputs[0];
  const int n = in->count;
  stk_status st = stk__sample_gpu_check_input(ctx, in, n, 0);
  if (st != STK_OK || n == 0) return st;
  if (n > 65535) return STK_ERANGE;
  st = stk__sample_gpu_check_bound(ctx, op, inputs, kBoundArgs, 2, n);
  if (st != STK_OK) return st;
  const int batch_stats = p->batch && !(p->mean_given && p->stddev_given);
  if (batch_stats && (p->mean_bound || p->stddev_bound)) {
    stk__errorf(ctx->err, ctx->err_size, "batch=True takes mean and stddev as constants, not per-sample inputs");
    return STK_EINVAL;
  }
  long long total, max_elements, batch_count;
  st = plan_batch(op, p, batch_stats, ctx, inputs, n, NULL, &total, &max_elements, &batch_count);
  /* one upload: descriptors, then mean, factor, accumulators and counts (total doubles each) */
  const size_t desc_bytes = (size_t)n * sizeof(norm_desc), stat_bytes = (size_t)(total ? total : 1) * sizeof(double);
  size_t at = 0;
  if (st == STK_OK) st = stk__sample_gpu_descs(s, ctx, desc_bytes + 4 * stat_bytes, &at);
  size_t *sizes = st == STK_OK ? stk__sample_gpu_sizes(s, n, ctx->alloc_count) : NULL;
  if (st == STK_OK && !sizes) st = STK_ENOMEM;
  if (st != STK_OK) return st;
  uint8_t *host = s->arena.host + at, *dev = s->arena.device + at;
  norm_desc *descs = (norm_desc *)host;
  double *mean = (double *)(host + desc_bytes);
  memset(mean, 0, 4 * stat_bytes);
  st = plan_batch(op, p, batch_stats, ctx, inputs, n, descs, &total, &max_elements, &batch_count);
  if (st == STK_OK)
    st = fill_statistics(op, p, batch_stats, ctx, inputs, n, batch_count, mean, mean + total, mean + 3 * total);
  for (int i = 0; st == STK_OK && i < n; i++)
    sizes[i] = (((size_t)descs[i].elements * stk_dtype_size(p->dtype)) + 255) & ~(size_t)255;
  if (st == STK_OK) st = stk__sample_gpu_reserve(ctx, outputs[0], n, sizes);
  if (st != STK_OK) return st;
  for (int i = 0; i < n; i++) {
    const stk__tensor *t = &in->samples[i];
    stk__sample_gpu_set_shape(&outputs[0]->samples[i], p->dtype, t->ndim, t->shape, t->layout);
    descs[i].dst = outputs[0]->samples[i].data;
  }
  stk__gpu_tensor_list_settle(outputs[0]);
  st = stk__sample_gpu_upload(s, ctx);
  if (st != STK_OK) return st;
  double *dmean = (double *)(dev + desc_bytes);
  return launch(p, ctx, (const norm_desc *)dev, n, max_elements, total, in->samples[0].dtype, dmean, dmean + total,
                dmean + 2 * total, dmean + 3 * total);
}

extern "C" {
const stk__op_impl stk__gpu_impl_normalize = {normalize_gpu_init, stk__sample_gpu_state_destroy, NULL, NULL, NULL,
                                              NULL, normalize_run_batch};
}
