/* src/ops/augment/random/coin_flip.c: the `random.coin_flip` operator (DALI's fn.random.coin_flip) --
 * schema and CPU implementation: per sample `shape` Bernoulli draws (default one, a 0-d tensor),
 * 1 with `probability` (a constant, or bound per sample), as `dtype` (default int32). The draws
 * are keyed by (seed, operator id, epoch, sample id), so they are the same whatever the threads or
 * timing. Typically bound to a per-sample flag (crop_mirror_normalize's mirror=coin).
 * Hot path (trivial): run_sample per sample. */
#include <stdlib.h>

#include "ops/augment/random/random_common.h"
#include "ops/common/dtype.h"
#include "ops/op_impls.h"

static stk_status coin_init(stk__op *op, char *err, size_t err_size) {
  double p = stk__arg_float(op, "probability");
  if (!(p >= 0.0 && p <= 1.0)) {
    stk__errorf(err, err_size, "argument 'probability' must lie in [0, 1], got %g", p);
    return STK_EINVAL;
  }
  stk__random_out out;
  stk_status s = stk__random_out_parse(op, STK_DTYPE_INT32, &out, err, err_size);
  return s == STK_OK ? stk__op_keep_state(op, &out, sizeof out) : s;
}

static stk_status coin_run(stk__op *op, stk__sample_ctx *ctx, stk__tensor *const *inputs, stk__tensor *const *outputs) {
  const stk__random_out *out = op->state;
  const double p = stk__arg_sample_float(op, inputs, "probability");
  if (!(p >= 0.0 && p <= 1.0)) {
    stk__errorf(ctx->err, ctx->err_size, "argument 'probability' is %g for this sample; it must lie in [0, 1]", p);
    return STK_EINVAL;
  }
  stk__rng rng;
  stk__random_sample_rng(op, ctx, &rng);
  size_t n;
  stk_status s = stk__random_out_resize(ctx, out, outputs, &n);
  for (size_t i = 0; s == STK_OK && i < n; i++)
    stk__dtype_store(outputs[0]->data, out->dtype, i, stk__rng_uniform(&rng) < p ? 1.0 : 0.0);
  return s;
}

const stk__op_impl stk__cpu_impl_random_coin_flip = {
    .init = coin_init, .destroy = stk__op_free_state, .run_sample = coin_run};

static const stk__arg_schema coin_args[] = {
    {"probability", STK_ARG_FLOAT, "0.5", 0, 1, "probability of a 1; may be bound per sample"},
    {"shape", STK_ARG_INT_LIST, NULL, 0, 0, "output shape of each sample (unset: one value, a 0-d tensor)"},
    {"dtype", STK_ARG_STRING, "", 0, 0, "output type (default int32): " STK__DTYPE_NAMES},
};

const stk__op_schema stk__op_random_coin_flip = {
    .name = "random.coin_flip",
    .doc =
        "Per-sample Bernoulli draws: `shape` values (default one, 0-d) each 1 with `probability`, else 0, as dtype "
        "(default int32; keyed by seed, operator, epoch and sample).",
    .min_inputs = 0,
    .max_inputs = 0,
    .num_outputs = 1,
    .devices = STK_OPDEV_CPU,
    .args = coin_args,
    .num_args = (int)(sizeof coin_args / sizeof coin_args[0]),
    .is_reader = 0,
};
