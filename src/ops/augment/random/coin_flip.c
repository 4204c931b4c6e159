/* src/ops/augment/random/coin_flip.c: the `random.coin_flip` operator (DALI's fn.random.coin_flip) -- schema
 * and CPU implementation: an int32 tensor of shape [1] per sample, 1 with the given probability.
 * The draw is keyed by (seed, operator id, epoch, sample id), so it is the same whatever the
 * threads or timing. Typically bound to crop_mirror_normalize's mirror (mirror=coin).
 * Hot path (trivial): run_sample per sample. */
#include <stdlib.h>

#include "ops/op_impls.h"

typedef struct coin_state {
  double probability;
} coin_state;

static stk_status coin_init(stk__op *op, char *err, size_t err_size) {
  double p = stk__arg_float(op, "probability");
  if (!(p >= 0.0 && p <= 1.0)) {
    stk__errorf(err, err_size, "argument 'probability' must lie in [0, 1], got %g", p);
    return STK_EINVAL;
  }
  coin_state *state = malloc(sizeof *state);
  if (!state) return STK_ENOMEM;
  state->probability = p;
  op->state = state;
  return STK_OK;
}

static stk_status coin_run(stk__op *op, stk__sample_ctx *ctx, stk__tensor *const *inputs, stk__tensor *const *outputs) {
  const coin_state *st = op->state;
  stk__rng rng;
  stk__rng_init(&rng, op->seed, (uint32_t)op->id, ctx->epoch, ctx->sample_id);
  const int64_t shape[1] = {1};
  stk_status s = stk__tensor_resize(outputs[0], STK_DTYPE_INT32, 1, shape, "");
  if (s != STK_OK) return s;
  *(int32_t *)outputs[0]->data = stk__rng_uniform(&rng) < st->probability ? 1 : 0;
  return STK_OK;
}

const stk__op_impl stk__cpu_impl_random_coin_flip = {
    .init = coin_init, .destroy = stk__op_free_state, .run_sample = coin_run};

static const stk__arg_schema coin_args[] = {
    {"probability", STK_ARG_FLOAT, "0.5", 0, 0, "probability of a 1"},
};

const stk__op_schema stk__op_random_coin_flip = {
    .name = "random.coin_flip",
    .doc =
        "Per-sample Bernoulli draw: int32 [1] holding 1 with `probability`, else 0 (keyed by seed, operator, "
        "epoch and sample).",
    .min_inputs = 0,
    .max_inputs = 0,
    .num_outputs = 1,
    .devices = STK_OPDEV_CPU,
    .args = coin_args,
    .num_args = (int)(sizeof coin_args / sizeof coin_args[0]),
    .is_reader = 0,
};
