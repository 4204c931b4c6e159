/* src/ops/augment/auto_aug/auto_aug_gpu.cu: the GPU implementation (run_batch) of `_auto_aug.apply`
 * and `experimental.equalize`: every sample planned on the host by the CPU implementation's plan
 * (auto_aug_plan.c), then per stage the whole batch in at most three launches, each switching per
 * sample on its kind: histograms (only when a sample's kind needs one: contrast, equalize,
 * auto_contrast), 256-entry tables (one block per sample), and the pixel pass (table lookup, colour
 * mix, 3x3 sharpen, or the warp sampler of warp_sample.cuh). Stages go input -> ping -> pong ... ->
 * output, each sample writing its last stage straight into the output. Tensors: uint8 HWC (or HW),
 * 1..4 channels, packed. The arithmetic is auto_aug.h's, shared with the CPU reference, so the two
 * agree to the byte but for the warp sampler's floorf ties (tests/test_gpu_auto_aug.c). Hot path;
 * device scratch and descriptors grow only (counted), nothing is allocated after warm-up. */
#include <cuda_runtime.h>
#include <stdlib.h>
#include <string.h>

#include "ops/augment/warp_affine/warp_sample.cuh"
extern "C" {
#include "ops/augment/auto_aug/auto_aug.h"
#include "ops/common/sample_gpu.h"
#include "device/device.h"
}
#include "ops/op_impls.h"

#define STATS_BYTES (STK__AA_MAX_CHANNELS * 256 * 4) /* a sample's histogram, uint32 [c][256] */
#define LUT_BYTES   (STK__AA_MAX_CHANNELS * 256)     /* its tables, uint8 [c][256] */

typedef struct aa_desc {
  const uint8_t *src;
  uint8_t *dst;
  int w, h, c;
  int kind, cls;
  float param;
  uint32_t *hist;
  uint8_t *lut;
  stk__warp_desc warp; /* warp kinds */
} aa_desc;

/* The sample's values into the block's histogram (I: 32-bit below 2^31 values -- a 64-bit modulo is
 * many instructions on the GPU -- 64-bit otherwise). */
template <typename I>
__device__ static void aa_hist_values(const aa_desc &d, I values, uint32_t *hist) {
  for (I k = (I)blockIdx.x * blockDim.x + threadIdx.x; k < values; k += (I)gridDim.x * blockDim.x)
    atomicAdd(&hist[(int)(k % (I)d.c) * 256 + d.src[k]], 1u);
}

__global__ static void aa_hist_kernel(const aa_desc *descs) {
  const aa_desc &d = descs[blockIdx.y];
  if (!stk__aa_needs_hist(d.kind)) return;
  __shared__ uint32_t hist[STK__AA_MAX_CHANNELS * 256];
  for (int k = threadIdx.x; k < d.c * 256; k += blockDim.x) hist[k] = 0;
  __syncthreads();
  const long long values = (long long)d.w * d.h * d.c;
  if (values < (1ll << 31)) aa_hist_values<unsigned>(d, (unsigned)values, hist);
  else aa_hist_values<long long>(d, values, hist);
  __syncthreads();
  for (int k = threadIdx.x; k < d.c * 256; k += blockDim.x)
    if (hist[k]) atomicAdd(&d.hist[k], hist[k]);
}

/* One block (256 threads) per sample: the histogram into shared memory, its statistics (thread 0),
 * then thread x writes entry x of every channel's table. */
__global__ static void aa_lut_kernel(const aa_desc *descs) {
  const aa_desc &d = descs[blockIdx.x];
  if (d.cls != STK__AA_CLASS_LUT) return;
  __shared__ uint32_t hist[STK__AA_MAX_CHANNELS * 256];
  __shared__ stk__aa_stats stats;
  const int needs = stk__aa_needs_hist(d.kind);
  if (needs)
    for (int k = threadIdx.x; k < d.c * 256; k += blockDim.x) hist[k] = d.hist[k];
  __syncthreads();
  if (threadIdx.x == 0) {
    if (needs) stk__aa_stats_make(hist, d.c, (uint32_t)((long long)d.w * d.h), &stats);
    else memset(&stats, 0, sizeof stats);
  }
  __syncthreads();
  const int x = threadIdx.x;
  for (int c = 0; c < d.c; c++) {
    uint32_t cdf = 0;
    if (needs)
      for (int v = 0; v <= x; v++) cdf += hist[c * 256 + v];
    d.lut[c * 256 + x] = stk__aa_lut_value(d.kind, d.param, &stats, c, x, cdf);
  }
}

/* The pixels of one sample (I: 32-bit below 2^31 pixels, 64-bit otherwise). */
template <typename I>
__device__ static void aa_apply_pixels(const aa_desc &d, const uint8_t *lut) {
  const I pixels = (I)d.w * (I)d.h, w = (I)d.w;
  for (I p = (I)blockIdx.x * blockDim.x + threadIdx.x; p < pixels; p += (I)gridDim.x * blockDim.x) {
    const I row = p / w;
    const int x = (int)(p - row * w), y = (int)row;
    const uint8_t *s = d.src + (long long)p * d.c;
    uint8_t *o = d.dst + (long long)p * d.c;
    switch (d.cls) {
      case STK__AA_CLASS_LUT:
        for (int c = 0; c < d.c; c++) o[c] = lut[c * 256 + s[c]];
        break;
      case STK__AA_CLASS_COLOR:
        if (d.c >= 3) stk__aa_color_pixel(s, d.param, o);
        for (int c = d.c >= 3 ? 3 : 0; c < d.c; c++) o[c] = s[c];
        break;
      case STK__AA_CLASS_SHARPEN:
        for (int c = 0; c < d.c; c++) o[c] = stk__aa_sharpen_value(d.src, d.w, d.h, d.c, x, y, c, d.param);
        break;
      case STK__AA_CLASS_WARP:
        stk__warp_pixel(d.warp, x, y);
        break;
      default:
        for (int c = 0; c < d.c; c++) o[c] = s[c];
        break;
    }
  }
}

__global__ static void aa_apply_kernel(const aa_desc *descs) {
  const aa_desc &d = descs[blockIdx.y];
  __shared__ uint8_t lut[LUT_BYTES];
  if (d.cls == STK__AA_CLASS_LUT) {
    for (int k = threadIdx.x; k < d.c * 256; k += blockDim.x) lut[k] = d.lut[k];
    __syncthreads();
  }
  if ((long long)d.w * d.h < (1ll << 31)) aa_apply_pixels<unsigned>(d, lut);
  else aa_apply_pixels<long long>(d, lut);
}

typedef struct aa_gpu_state {
  stk__aa_table table;
  stk__sample_gpu_state *gpu; /* arena and per-sample sizes */
  stk__aa_plan *plans;
  int plans_cap;
  size_t *offsets;  /* each sample's offset in a scratch half */
  uint8_t *scratch; /* device: ping and pong halves */
  size_t scratch_cap;
  uint8_t *stats; /* device: per sample STATS_BYTES of histogram then LUT_BYTES of tables */
  size_t stats_cap;
} aa_gpu_state;

static stk_status aa_gpu_init(stk__op *op, char *err, size_t err_size) {
  aa_gpu_state *s = (aa_gpu_state *)calloc(1, sizeof *s);
  if (!s) return STK_ENOMEM;
  stk_status st = stk__aa_table_parse(op, &s->table, err, err_size);
  if (st != STK_OK) {
    free(s);
    return st;
  }
  st = stk__sample_gpu_state_new(op, NULL, 0, err, err_size);
  if (st != STK_OK) {
    stk__aa_table_free(&s->table);
    free(s);
    return st;
  }
  s->gpu = (stk__sample_gpu_state *)op->state;
  op->state = s;
  return STK_OK;
}

static void aa_gpu_destroy(stk__op *op) {
  aa_gpu_state *s = (aa_gpu_state *)op->state;
  if (!s) return;
  op->state = s->gpu;
  stk__sample_gpu_state_destroy(op);
  stk__aa_table_free(&s->table);
  if (s->scratch) stk__gpu_free(s->scratch, NULL);
  if (s->stats) stk__gpu_free(s->stats, NULL);
  free(s->plans);
  free(s->offsets);
  free(s);
  op->state = NULL;
}

/* A grow-only device buffer of at least `bytes`. */
static stk_status device_grow(uint8_t **buf, size_t *cap, size_t bytes, const stk__batch_ctx *ctx) {
  if (bytes <= *cap) return STK_OK;
  if (*buf) stk__gpu_free(*buf, ctx->cuda_stream);
  *buf = NULL;
  *cap = 0;
  void *p = NULL;
  stk_status st = stk__gpu_malloc(&p, bytes, ctx->alloc_count);
  if (st != STK_OK) return st;
  *buf = (uint8_t *)p;
  *cap = bytes;
  return STK_OK;
}

/* Every sample's plan (host), its output size and scratch offset; *stages = the most stages. */
static stk_status plan_all(stk__op *op, aa_gpu_state *s, stk__batch_ctx *ctx, stk__tensor_list *const *inputs, int n,
                           int *stages, size_t *half) {
  if (n > s->plans_cap) {
    stk__aa_plan *plans = (stk__aa_plan *)realloc(s->plans, (size_t)n * sizeof *plans);
    if (plans) s->plans = plans;
    size_t *offsets = (size_t *)realloc(s->offsets, (size_t)n * sizeof *offsets);
    if (offsets) s->offsets = offsets;
    if (!plans || !offsets) return STK_ENOMEM;
    s->plans_cap = n;
    if (ctx->alloc_count) __atomic_fetch_add(ctx->alloc_count, 1, __ATOMIC_RELAXED);
  }
  size_t *sizes = stk__sample_gpu_sizes(s->gpu, n, ctx->alloc_count);
  if (!sizes) return STK_ENOMEM;
  int all_inputs = op->num_inputs;
  for (int a = 0; a < op->schema->num_args; a++)
    if (op->args[a].input_slot >= all_inputs) all_inputs = op->args[a].input_slot + 1;
  *stages = 1;
  *half = 0;
  for (int i = 0; i < n; i++) {
    stk__tensor *ins[32];
    for (int k = 0; k < all_inputs && k < 32; k++) {
      if (!inputs[k] || i >= inputs[k]->count || (k > 0 && inputs[k]->samples[i].device == STK_DEVICE_GPU)) {
        stk__errorf(ctx->err, ctx->err_size,
                    "input %d lacks sample %d or is on the GPU (per-sample arguments come "
                    "from CPU operators such as random.choice)",
                    k, i);
        return STK_EINVAL;
      }
      ins[k] = &inputs[k]->samples[i];
    }
    char why[512] = "";
    stk_status st = stk__aa_plan_sample(op, &s->table, ins[0], ins, &s->plans[i], why, sizeof why);
    if (st != STK_OK) {
      stk__errorf(ctx->err, ctx->err_size, "sample %d: %s", i, why);
      return st;
    }
    if (s->plans[i].num_stages > *stages) *stages = s->plans[i].num_stages;
    sizes[i] = (ins[0]->nbytes + 255) & ~(size_t)255;
    if (sizes[i] == 0) sizes[i] = 256;
    s->offsets[i] = *half;
    *half += sizes[i];
  }
  return STK_OK;
}

/* The descriptors of stage k (count of them in *count), written at descs. */
static void stage_descs(aa_gpu_state *s, const stk__tensor_list *in, stk__tensor_list *out, int n, int k, size_t half,
                        aa_desc *descs, int *count, int *any_hist, int *any_lut, long long *max_pixels) {
  *count = 0;
  for (int i = 0; i < n; i++) {
    const stk__aa_plan *p = &s->plans[i];
    const int last = p->num_stages > 0 ? p->num_stages - 1 : 0;
    if (k > last) continue;
    aa_desc *d = &descs[(*count)++];
    memset(d, 0, sizeof *d);
    d->src = k == 0 ? (const uint8_t *)in->samples[i].data : s->scratch + ((k - 1) % 2) * half + s->offsets[i];
    d->dst = k == last ? (uint8_t *)out->samples[i].data : s->scratch + (k % 2) * half + s->offsets[i];
    d->w = p->width;
    d->h = p->height;
    d->c = p->channels;
    d->kind = p->num_stages ? p->stages[k].kind : STK__AA_IDENTITY;
    d->param = p->num_stages ? p->stages[k].param : 0.0f;
    d->cls = stk__aa_kind_class(d->kind);
    d->hist = (uint32_t *)(s->stats + (size_t)i * (STATS_BYTES + LUT_BYTES));
    d->lut = s->stats + (size_t)i * (STATS_BYTES + LUT_BYTES) + STATS_BYTES;
    if (d->cls == STK__AA_CLASS_WARP) {
      stk__aa_warp_desc(&s->table, &p->stages[k], d->w, d->h, d->c, &d->warp);
      d->warp.src = d->src;
      d->warp.dst = d->dst;
    }
    *any_hist |= stk__aa_needs_hist(d->kind);
    *any_lut |= d->cls == STK__AA_CLASS_LUT;
    if ((long long)d->w * d->h > *max_pixels) *max_pixels = (long long)d->w * d->h;
  }
}

static stk_status launch_stage(aa_gpu_state *s, const aa_desc *dev, int count, int n, int any_hist, int any_lut,
                               long long max_pixels, cudaStream_t stream) {
  if (count == 0) return STK_OK;
  if (count > 65535) return STK_ERANGE;
  if (any_hist) {
    if (cudaMemsetAsync(s->stats, 0, (size_t)n * (STATS_BYTES + LUT_BYTES), stream) != cudaSuccess) return STK_ECUDA;
    long long blocks = (max_pixels + 4095) / 4096;
    aa_hist_kernel<<<dim3((unsigned)(blocks < 1 ? 1 : (blocks > 64 ? 64 : blocks)), (unsigned)count), 256, 0, stream>>>(
        dev);
  }
  if (any_lut) aa_lut_kernel<<<(unsigned)count, 256, 0, stream>>>(dev);
  long long blocks = (max_pixels + 255) / 256;
  aa_apply_kernel<<<dim3((unsigned)(blocks < 1 ? 1 : (blocks > 1024 ? 1024 : blocks)), (unsigned)count), 256, 0,
                    stream>>>(dev);
  return cudaGetLastError() == cudaSuccess ? STK_OK : STK_ECUDA;
}

static stk_status aa_run_batch(stk__op *op, stk__batch_ctx *ctx, stk__tensor_list *const *inputs,
                               stk__tensor_list *const *outputs) {
  aa_gpu_state *s = (aa_gpu_state *)op->state;
  const stk__tensor_list *in = inputs[0];
  const int n = in->count;
  stk_status st = stk__sample_gpu_check_input(ctx, in, n, 2);
  if (st != STK_OK || n == 0) return st;
  int stages;
  size_t half;
  st = plan_all(op, s, ctx, inputs, n, &stages, &half);
  if (st == STK_OK) st = stk__sample_gpu_reserve(ctx, outputs[0], n, s->gpu->sizes);
  if (st == STK_OK && stages > 1) st = device_grow(&s->scratch, &s->scratch_cap, 2 * half, ctx);
  if (st == STK_OK) st = device_grow(&s->stats, &s->stats_cap, (size_t)n * (STATS_BYTES + LUT_BYTES), ctx);
  size_t at = 0;
  if (st == STK_OK) st = stk__sample_gpu_descs(s->gpu, ctx, (size_t)stages * n * sizeof(aa_desc), &at);
  if (st != STK_OK) {
    if (!ctx->err[0]) stk__errorf(ctx->err, ctx->err_size, "planning the batch failed (%s)", stk_strerror(st));
    return st;
  }
  for (int i = 0; i < n; i++) {
    const stk__tensor *t = &in->samples[i];
    stk__sample_gpu_set_shape(&outputs[0]->samples[i], STK_DTYPE_UINT8, t->ndim, t->shape, t->layout);
  }
  stk__gpu_tensor_list_settle(outputs[0]);
  aa_desc *host = (aa_desc *)(s->gpu->arena.host + at);
  int counts[STK__AA_MAX_STAGES], hist[STK__AA_MAX_STAGES] = {0}, lut[STK__AA_MAX_STAGES] = {0};
  long long max_pixels[STK__AA_MAX_STAGES] = {0};
  for (int k = 0; k < stages; k++)
    stage_descs(s, in, outputs[0], n, k, half, host + (size_t)k * n, &counts[k], &hist[k], &lut[k], &max_pixels[k]);
  st = stk__sample_gpu_upload(s->gpu, ctx);
  if (st != STK_OK) return st;
  const aa_desc *dev = (const aa_desc *)(s->gpu->arena.device + at);
  for (int k = 0; k < stages && st == STK_OK; k++)
    st = launch_stage(s, dev + (size_t)k * n, counts[k], n, hist[k], lut[k], max_pixels[k],
                      (cudaStream_t)ctx->cuda_stream);
  if (st != STK_OK)
    stk__errorf(ctx->err, ctx->err_size, "the AutoAugment kernels failed to launch (%s)", stk_strerror(st));
  return st;
}

extern "C" {
const stk__op_impl stk__gpu_impl_auto_aug_apply = {aa_gpu_init, aa_gpu_destroy, NULL, NULL, NULL, NULL, aa_run_batch};
}
