/* src/ops/augment/random/random_common.h: what the random.* operators share (coin_flip.c,
 * distributions.c): the `shape` and `dtype` arguments, the per-sample output they size, the
 * per-sample RNG keyed by (seed, operator id, epoch, sample id), and the draws (uniform in [0, 1)
 * and (0, 1], standard normal, gamma). Every draw comes from the sample's own Philox stream, so one
 * seed gives the same bytes whatever the threads, prefetch or batch composition. Per sample. */
#ifndef STOKER_OPS_AUGMENT_RANDOM_RANDOM_COMMON_H
#define STOKER_OPS_AUGMENT_RANDOM_RANDOM_COMMON_H

#include "core/op.h"

/* The output of every sample: `shape` (ndim 0 = DALI's one value a sample) and dtype. */
typedef struct stk__random_out {
  int ndim;
  int64_t shape[STK_MAX_DIMS];
  stk_dtype dtype;
} stk__random_out;

/* Reads `shape` (unset: a scalar) and `dtype` (unset: default_dtype); STK_EINVAL naming the
 * argument when a dimension is negative, there are too many, or the dtype is unknown. */
STK_INTERNAL stk_status stk__random_out_parse(const stk__op *op, stk_dtype default_dtype, stk__random_out *out,
                                              char *err, size_t err_size);
/* Sizes outputs[0] for one sample; *count = its element count. */
STK_INTERNAL stk_status stk__random_out_resize(stk__sample_ctx *ctx, const stk__random_out *o,
                                               stk__tensor *const *outputs, size_t *count);
/* The sample's RNG stream. */
static inline void stk__random_sample_rng(const stk__op *op, const stk__sample_ctx *ctx, stk__rng *rng) {
  stk__rng_init(rng, op->seed, (uint32_t)op->id, ctx->epoch, ctx->sample_id);
}
/* Uniform in (0, 1] (never 0, for logarithms). */
static inline double stk__rng_uniform_open0(stk__rng *rng) { return 1.0 - stk__rng_uniform(rng); }
/* Standard normal draws (Box-Muller: two uniforms give two values; *spare keeps the second). */
STK_INTERNAL double stk__rng_normal(stk__rng *rng, double *spare, int *have_spare);
/* Gamma(shape, 1) (Marsaglia-Tsang; shape < 1 through Gamma(shape + 1) * U^(1/shape)); shape > 0. */
STK_INTERNAL double stk__rng_gamma(stk__rng *rng, double shape);

#endif
