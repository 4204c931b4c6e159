/* src/ops/augment/gaussian_blur/gaussian_blur.c: the `gaussian_blur` operator (DALI's
 * fn.gaussian_blur) -- schema and CPU implementation: the separable path, one 1-d convolution per
 * spatial axis (blur_params.h: axes, windows, reflect-101 borders) in float, each pass reading
 * the previous one's result; the first pass reads the input (any dtype), the last writes `dtype`
 * (default: the input's; integers rounded to nearest and saturated). Channels ('C') and frames
 * ('F') are never blurred. sigma and window_size may be bound per sample. Hot path: run_sample,
 * one pass per spatial axis, each O(elements x window). */
#include <string.h>

#include "ops/augment/gaussian_blur/blur_params.h"
#include "ops/common/dtype.h"
#include "ops/op_impls.h"

static stk_status blur_init(stk__op *op, char *err, size_t err_size) {
  stk__blur_params p;
  stk_status st = stk__blur_parse(op, &p, err, err_size);
  return st == STK_OK ? stk__op_keep_state(op, &p, sizeof p) : st;
}

static inline float load(const void *src, stk_dtype dtype, int64_t i) {
  if (dtype == STK_DTYPE_FLOAT32) return ((const float *)src)[i];
  if (dtype == STK_DTYPE_UINT8) return ((const uint8_t *)src)[i];
  return (float)stk__dtype_load(src, dtype, (size_t)i);
}

/* One pass: dst = src convolved with w (2r + 1 taps) along the middle axis of (outer, n, inner),
 * accumulated in float, tap after tap, in a row of `inner` floats. */
static void convolve_axis(const void *src, stk_dtype src_type, void *dst, stk_dtype dst_type, float *row,
                          int64_t outer, int64_t n, int64_t inner, const float *w, int r) {
  for (int64_t o = 0; o < outer; o++)
    for (int64_t i = 0; i < n; i++) {
      for (int64_t j = 0; j < inner; j++) row[j] = 0.0f;
      for (int t = -r; t <= r; t++) {
        const int64_t base = (o * n + stk__blur_reflect(i + t, n)) * inner;
        const float wt = w[t + r];
        if (src_type == STK_DTYPE_FLOAT32) {
          const float *s = (const float *)src + base;
          for (int64_t j = 0; j < inner; j++) row[j] += wt * s[j];
        } else {
          for (int64_t j = 0; j < inner; j++) row[j] += wt * load(src, src_type, base + j);
        }
      }
      const int64_t at = (o * n + i) * inner;
      if (dst_type == STK_DTYPE_FLOAT32) memcpy((float *)dst + at, row, sizeof(float) * (size_t)inner);
      else
        for (int64_t j = 0; j < inner; j++) stk__dtype_store(dst, dst_type, (size_t)(at + j), row[j]);
    }
}

static stk_status blur_run(stk__op *op, stk__sample_ctx *ctx, stk__tensor *const *inputs, stk__tensor *const *outputs) {
  const stk__blur_params *p = op->state;
  const stk__tensor *in = inputs[0];
  stk__blur_plan plan;
  stk_status st = stk__blur_make_plan(op, in, stk__arg_input(op, inputs, "sigma"),
                                      stk__arg_input(op, inputs, "window_size"), &plan, ctx->err, ctx->err_size);
  const stk_dtype out_type = p->dtype_given ? p->dtype : in->dtype;
  if (st == STK_OK) st = stk__sample_output_resize(ctx, outputs, 0, out_type, in->ndim, in->shape, in->layout);
  if (st != STK_OK) return st;
  const size_t numel = stk__tensor_numel(in);
  if (numel == 0) return STK_OK;
  int64_t widest = 1;
  for (int k = 0; k < plan.num_axes; k++)
    if (plan.inner[k] > widest) widest = plan.inner[k];
  float *weights = stk__scratch_get(ctx, 0, sizeof(float) * (size_t)plan.total_taps);
  float *row = stk__scratch_get(ctx, 1, sizeof(float) * (size_t)widest);
  float *tmp[2] = {plan.num_axes > 1 ? stk__scratch_get(ctx, 2, sizeof(float) * numel) : NULL,
                   plan.num_axes > 2 ? stk__scratch_get(ctx, 3, sizeof(float) * numel) : NULL};
  if (!weights || !row || (plan.num_axes > 1 && !tmp[0]) || (plan.num_axes > 2 && !tmp[1])) return STK_ENOMEM;
  stk__blur_weights(&plan, weights);
  const void *src = in->data;
  stk_dtype src_type = in->dtype;
  const float *w = weights;
  for (int k = 0; k < plan.num_axes; k++) {
    const int last = k == plan.num_axes - 1;
    void *dst = last ? outputs[0]->data : tmp[k % 2];
    convolve_axis(src, src_type, dst, last ? out_type : STK_DTYPE_FLOAT32, row, plan.outer[k], plan.extent[k],
                  plan.inner[k], w, plan.radius[k]);
    w += 2 * plan.radius[k] + 1;
    src = dst;
    src_type = STK_DTYPE_FLOAT32;
  }
  return STK_OK;
}

const stk__op_impl stk__cpu_impl_gaussian_blur = {
    .init = blur_init, .destroy = stk__op_free_state, .run_sample = blur_run};

static const stk__arg_schema blur_args[] = {
    {"sigma", STK_ARG_FLOAT_LIST, "[0.0]", 0, 1,
     "standard deviation of the kernel: one value or one per spatial axis (outermost first); 0: from "
     "window_size; may be bound per sample"},
    {"window_size", STK_ARG_INT_LIST, "[0]", 0, 1,
     "odd kernel width: one value or one per spatial axis; 0: 2 * ceil(3 sigma) + 1; may be bound per sample"},
    {"dtype", STK_ARG_STRING, "", 0, 0, "output type (default: the input's): " STK__DTYPE_NAMES},
};

const stk__op_schema stk__op_gaussian_blur = {
    .name = "gaussian_blur",
    .doc = "Blurs the spatial axes (not channels C or frames F) with a separable Gaussian kernel; borders "
           "reflect without repeating the edge (reflect-101).",
    .min_inputs = 1,
    .max_inputs = 1,
    .num_outputs = 1,
    .devices = STK_OPDEV_CPU | STK_OPDEV_GPU,
    .args = blur_args,
    .num_args = (int)(sizeof blur_args / sizeof blur_args[0]),
    .array_outputs = 1u << 0,
};
