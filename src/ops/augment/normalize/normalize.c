/* src/ops/augment/normalize/normalize.c: the `normalize` operator (DALI's fn.normalize) -- schema
 * and CPU implementation: out = (in - mean) * factor + shift per statistic (normalize_params.h),
 * mean and stddev given (constants or per-sample tensor inputs that broadcast) or computed per
 * sample in double precision (two passes: mean, then the squared deviations). Any input dtype;
 * output `dtype` (float by default; integers rounded to nearest and saturated). batch=True with a
 * computed statistic needs the whole batch: the GPU implementation; the CPU refuses it at build.
 * Hot path: run_sample, three passes over the sample. */
#include <string.h>

#include "ops/augment/normalize/normalize_params.h"
#include "ops/common/dtype.h"
#include "ops/op_impls.h"

static stk_status normalize_init(stk__op *op, char *err, size_t err_size) {
  stk__normalize_params p;
  stk_status st = stk__normalize_parse(op, &p, err, err_size);
  if (st != STK_OK) return st;
  if (p.batch && !(p.mean_given && p.stddev_given)) {
    stk__errorf(err, err_size,
                "batch=True computes the mean or stddev over the whole batch, which the CPU implementation (one "
                "sample at a time) cannot: use device=\"gpu\", or give both mean and stddev");
    return STK_EINVAL;
  }
  return stk__op_keep_state(op, &p, sizeof p);
}

/* Element e's value; uint8 and float inline, other types through the generic load. */
static inline double load(const stk__tensor *in, int64_t e) {
  if (in->dtype == STK_DTYPE_UINT8) return ((const uint8_t *)in->data)[e];
  if (in->dtype == STK_DTYPE_FLOAT32) return ((const float *)in->data)[e];
  return stk__dtype_load(in->data, in->dtype, (size_t)e);
}

/* The statistic index of the element after the one at idx (odometer over the input's axes). */
static inline void step(const stk__normalize_plan *plan, int64_t *idx, int64_t *stat) {
  for (int d = plan->ndim - 1; d >= 0; d--) {
    *stat += plan->stat_stride[d];
    if (++idx[d] < plan->shape[d]) return;
    *stat -= plan->stat_stride[d] * plan->shape[d];
    idx[d] = 0;
  }
}

/* Sums of the sample's elements (pass 0) or of their squared deviations from mean[] (pass 1), per statistic. */
static void accumulate(const stk__normalize_plan *plan, const stk__tensor *in, const double *mean, double *sum) {
  const int64_t n = (int64_t)stk__tensor_numel(in);
  int64_t idx[STK_MAX_DIMS] = {0}, stat = 0;
  memset(sum, 0, sizeof(double) * (size_t)plan->stats);
  for (int64_t e = 0; e < n; e++) {
    double v = load(in, e);
    if (mean) v = (v - mean[stat]) * (v - mean[stat]);
    sum[stat] += v;
    step(plan, idx, &stat);
  }
}

static stk_status statistics(const stk__op *op, const stk__normalize_params *p, const stk__normalize_plan *plan,
                             stk__tensor *const *inputs, double *mean, double *factor, char *err, size_t err_size) {
  const stk__tensor *in = inputs[0];
  stk_status st = STK_OK;
  if (p->mean_given)
    st = stk__normalize_given(p, plan, stk__arg_input(op, inputs, "mean"), stk__arg_float(op, "mean"), 0, mean, err,
                              err_size);
  else {
    accumulate(plan, in, NULL, mean);
    for (int64_t k = 0; k < plan->stats; k++) mean[k] /= (double)plan->per_stat;
  }
  if (st != STK_OK) return st;
  if (p->stddev_given)
    return stk__normalize_given(p, plan, stk__arg_input(op, inputs, "stddev"), stk__arg_float(op, "stddev"), 1, factor,
                                err, err_size);
  if (plan->per_stat - p->ddof <= 0) {
    stk__errorf(err, err_size, "ddof %d leaves no degrees of freedom: %lld elements per statistic", p->ddof,
                (long long)plan->per_stat);
    return STK_EINVAL;
  }
  accumulate(plan, in, mean, factor);
  for (int64_t k = 0; k < plan->stats; k++)
    factor[k] = stk__normalize_factor(factor[k] / (double)(plan->per_stat - p->ddof), p->epsilon, p->scale);
  return STK_OK;
}

/* Float output with one statistic for the sample or one per channel (the last axis kept, every
 * other reduced): the general loop's expression, in double as there, without its odometer; a
 * uint8 sample with one statistic through a 256-entry table of that expression. 0 when the plan is
 * another shape (the general loop runs). */
static int normalize_flat(const stk__normalize_plan *plan, const stk__tensor *in, stk__tensor *out, const double *mean,
                          const double *factor, double shift, int64_t n) {
  if (out->dtype != STK_DTYPE_FLOAT32 || plan->ndim < 1) return 0;
  if (in->dtype != STK_DTYPE_UINT8 && in->dtype != STK_DTYPE_FLOAT32) return 0;
  const int last = plan->ndim - 1;
  int64_t channels = 1;
  for (int d = 0; d < last; d++)
    if (plan->stat_stride[d] != 0) return 0;
  if (plan->stats != 1) {
    if (plan->stat_stride[last] != 1 || plan->stats != plan->shape[last]) return 0;
    channels = plan->stats;
  } else if (plan->stat_stride[last] != 0) {
    return 0;
  }
  float *dst = (float *)out->data;
  if (in->dtype == STK_DTYPE_UINT8 && channels == 1) {
    float table[256];
    for (int v = 0; v < 256; v++) table[v] = (float)(((double)v - mean[0]) * factor[0] + shift);
    const uint8_t *src = (const uint8_t *)in->data;
    for (int64_t e = 0; e < n; e++) dst[e] = table[src[e]];
    return 1;
  }
  for (int64_t e = 0; e < n; e += channels)
    for (int64_t k = 0; k < channels; k++) dst[e + k] = (float)((load(in, e + k) - mean[k]) * factor[k] + shift);
  return 1;
}

static stk_status normalize_run(stk__op *op, stk__sample_ctx *ctx, stk__tensor *const *inputs,
                                stk__tensor *const *outputs) {
  const stk__normalize_params *p = op->state;
  const stk__tensor *in = inputs[0];
  stk__normalize_plan plan;
  stk_status st = stk__normalize_make_plan(p, in, stk__arg_input(op, inputs, "mean"),
                                           stk__arg_input(op, inputs, "stddev"), &plan, ctx->err, ctx->err_size);
  if (st != STK_OK) return st;
  double *mean = stk__scratch_get(ctx, 0, sizeof(double) * 2 * (size_t)(plan.stats ? plan.stats : 1));
  if (!mean) return STK_ENOMEM;
  double *factor = mean + plan.stats;
  const int64_t n = (int64_t)stk__tensor_numel(in);
  if (n > 0) st = statistics(op, p, &plan, inputs, mean, factor, ctx->err, ctx->err_size);
  if (st == STK_OK) st = stk__sample_output_resize(ctx, outputs, 0, p->dtype, in->ndim, in->shape, in->layout);
  if (st != STK_OK) return st;
  stk__tensor *out = outputs[0];
  if (normalize_flat(&plan, in, out, mean, factor, p->shift, n)) return STK_OK;
  int64_t idx[STK_MAX_DIMS] = {0}, stat = 0;
  for (int64_t e = 0; e < n; e++) {
    double v = (load(in, e) - mean[stat]) * factor[stat] + p->shift;
    if (p->dtype == STK_DTYPE_FLOAT32) ((float *)out->data)[e] = (float)v;
    else stk__dtype_store(out->data, p->dtype, (size_t)e, v);
    step(&plan, idx, &stat);
  }
  return STK_OK;
}

const stk__op_impl stk__cpu_impl_normalize = {
    .init = normalize_init, .destroy = stk__op_free_state, .run_sample = normalize_run};

static const stk__arg_schema normalize_args[] = {
    {"axes", STK_ARG_INT_LIST, "[]", 0, 0,
     "reduced axes as indices (negative: from the end); none and no axis_names: inferred from mean/stddev, else all"},
    {"axis_names", STK_ARG_STRING, "", 0, 0, "reduced axes as layout letters (instead of axes)"},
    {"batch", STK_ARG_BOOL, "False", 0, 0,
     "compute mean/stddev over the whole batch (GPU; the CPU takes it only with both given)"},
    {"mean", STK_ARG_FLOAT, NULL, 0, 1,
     "mean to subtract (default: computed); may be bound per sample to a tensor broadcasting to the input"},
    {"stddev", STK_ARG_FLOAT, NULL, 0, 1,
     "standard deviation (> 0) to divide by (default: computed); may be bound per sample like mean"},
    {"scale", STK_ARG_FLOAT, "1.0", 0, 0, "factor applied after normalising"},
    {"shift", STK_ARG_FLOAT, "0.0", 0, 0, "value added after scaling"},
    {"epsilon", STK_ARG_FLOAT, "0.0", 0, 0, "added to a computed variance before its square root"},
    {"ddof", STK_ARG_INT, "0", 0, 0, "delta degrees of freedom of a computed variance: divides by count - ddof"},
    {"dtype", STK_ARG_STRING, "float", 0, 0,
     "output type: " STK__DTYPE_NAMES " (integers rounded to nearest and saturated)"},
};

const stk__op_schema stk__op_normalize = {
    .name = "normalize",
    .doc = "Normalizes: out = scale * (in - mean) / stddev + shift, mean and stddev given or computed over the "
           "reduced axes (per sample, or the batch with batch=True); a computed stddev is sqrt(var + epsilon).",
    .min_inputs = 1,
    .max_inputs = 1,
    .num_outputs = 1,
    .devices = STK_OPDEV_CPU | STK_OPDEV_GPU,
    .args = normalize_args,
    .num_args = (int)(sizeof normalize_args / sizeof normalize_args[0]),
    .array_outputs = 1u << 0,
};
