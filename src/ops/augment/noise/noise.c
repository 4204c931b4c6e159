/* src/ops/augment/noise/noise.c: DALI's noise.gaussian, noise.shot and noise.salt_and_pepper --
 * schemas and the CPU implementation: every element gets the noise of noise_math.h keyed by
 * (seed, operator, epoch, sample, element), clamped to the type's range (uint8 rounded half up;
 * float unclamped). Inputs: uint8 or float tensors, channels last for salt_and_pepper's
 * per-pixel draw. Arguments may be bound per sample. Hot path: run_sample, one pass. */
#include <math.h>
#include <string.h>

#include "ops/augment/noise/noise_params.h"
#include "ops/op_impls.h"

const char *const stk__noise_arg_names[STK__NOISE_NUM_ARGS] = {"mean",           "stddev",   "factor",    "prob",
                                                               "salt_vs_pepper", "salt_val", "pepper_val"};

stk_status stk__noise_kind_of(const stk__op *op, int *kind, char *err, size_t err_size) {
  const char *name = op->schema->name;
  if (strcmp(name, "noise.gaussian") == 0) *kind = STK__NOISE_GAUSSIAN;
  else if (strcmp(name, "noise.shot") == 0) *kind = STK__NOISE_SHOT;
  else if (strcmp(name, "noise.salt_and_pepper") == 0) *kind = STK__NOISE_SALT_AND_PEPPER;
  else {
    stk__errorf(err, err_size, "operator %s is not a noise operator", name);
    return STK_EINVAL;
  }
  return STK_OK;
}

stk_status stk__noise_sample_make(const stk__op *op, int kind, const double *values, stk_dtype dtype, int channels,
                                  uint64_t epoch, int64_t sample_id, stk__noise_sample *s, char *err,
                                  size_t err_size) {
  memset(s, 0, sizeof *s);
  if (dtype != STK_DTYPE_UINT8 && dtype != STK_DTYPE_FLOAT32) {
    stk__errorf(err, err_size, "the input must be uint8 or float");
    return STK_EINVAL;
  }
  const int u8 = dtype == STK_DTYPE_UINT8;
  s->kind = kind;
  s->mean = (float)values[0];
  s->stddev = (float)values[1];
  s->factor = (float)values[2];
  s->prob = (float)values[3];
  s->salt_vs_pepper = (float)values[4];
  s->salt = stk__arg_is_set(op, "salt_val") ? (float)values[5] : (u8 ? 255.0f : 1.0f);
  s->pepper = stk__arg_is_set(op, "pepper_val") ? (float)values[6] : (u8 ? 0.0f : -1.0f);
  s->per_channel = stk__arg(op, "per_channel") ? stk__arg_bool(op, "per_channel") : 1;
  s->channels = channels;
  if (kind == STK__NOISE_GAUSSIAN && !(values[1] >= 0)) {
    stk__errorf(err, err_size, "argument 'stddev' is %g; it must be >= 0", values[1]);
    return STK_EINVAL;
  }
  if (kind == STK__NOISE_SHOT && !(values[2] >= 0)) {
    stk__errorf(err, err_size, "argument 'factor' is %g; it must be >= 0", values[2]);
    return STK_EINVAL;
  }
  if (kind == STK__NOISE_SALT_AND_PEPPER &&
      (!(values[3] >= 0 && values[3] <= 1) || !(values[4] >= 0 && values[4] <= 1))) {
    stk__errorf(err, err_size, "arguments 'prob' and 'salt_vs_pepper' must lie in [0, 1], got %g and %g", values[3],
                values[4]);
    return STK_EINVAL;
  }
  s->key[0] = (uint32_t)op->seed;
  s->key[1] = (uint32_t)(op->seed >> 32);
  s->ctr[0] = (uint32_t)(uint64_t)sample_id;
  s->ctr[1] = (uint32_t)epoch;
  s->ctr[2] = ((uint32_t)op->id << 16) | 0x8000u;
  s->lo = u8 ? 0.0f : -INFINITY;
  s->hi = u8 ? 255.0f : INFINITY;
  s->round_u8 = u8;
  return STK_OK;
}

typedef struct noise_state {
  int kind;
} noise_state;

static stk_status noise_init(stk__op *op, char *err, size_t err_size) {
  noise_state st;
  stk_status s = stk__noise_kind_of(op, &st.kind, err, err_size);
  return s == STK_OK ? stk__op_keep_state(op, &st, sizeof st) : s;
}

static stk_status noise_run(stk__op *op, stk__sample_ctx *ctx, stk__tensor *const *inputs, stk__tensor *const *outputs) {
  const noise_state *st = op->state;
  const stk__tensor *in = inputs[0];
  double values[STK__NOISE_NUM_ARGS] = {0};
  for (int k = 0; k < STK__NOISE_NUM_ARGS; k++)
    if (stk__arg(op, stk__noise_arg_names[k])) values[k] = stk__arg_sample_float(op, inputs, stk__noise_arg_names[k]);
  const int channels = in->ndim >= 3 ? (int)in->shape[in->ndim - 1] : 1;
  stk__noise_sample s;
  stk_status status = stk__noise_sample_make(op, st->kind, values, in->dtype, channels, ctx->epoch, ctx->sample_id, &s,
                                             ctx->err, ctx->err_size);
  if (status == STK_OK) status = stk__sample_output_resize(ctx, outputs, 0, in->dtype, in->ndim, in->shape, in->layout);
  if (status != STK_OK) return status;
  const long long n = (long long)stk__tensor_numel(in);
  if (st->kind == STK__NOISE_SALT_AND_PEPPER && !s.per_channel && in->dtype == STK_DTYPE_UINT8 && n % channels == 0) {
    /* one draw per pixel for all its channels (what stk__noise_apply draws for each of them) */
    const uint8_t *src = in->data;
    uint8_t *dst = outputs[0]->data;
    for (long long e = 0; e < n; e += channels) {
      uint32_t r[4];
      float v;
      stk__noise_draw(&s, e, r);
      if (stk__noise_salt_pepper(&s, r, &v)) memset(dst + e, (uint8_t)stk__noise_finish(&s, v), (size_t)channels);
      else memcpy(dst + e, src + e, (size_t)channels); /* kept: a uint8 value clamps and rounds to itself */
    }
    return STK_OK;
  }
  if (in->dtype == STK_DTYPE_UINT8) {
    const uint8_t *src = in->data;
    uint8_t *dst = outputs[0]->data;
    for (long long e = 0; e < n; e++) dst[e] = (uint8_t)stk__noise_apply(&s, e, (int)(e % channels), (float)src[e]);
  } else {
    const float *src = in->data;
    float *dst = outputs[0]->data;
    for (long long e = 0; e < n; e++) dst[e] = stk__noise_apply(&s, e, (int)(e % channels), src[e]);
  }
  return STK_OK;
}

const stk__op_impl stk__cpu_impl_noise = {.init = noise_init, .destroy = stk__op_free_state, .run_sample = noise_run};

static const stk__arg_schema gaussian_args[] = {
    {"mean", STK_ARG_FLOAT, "0.0", 0, 1, "mean of the added noise; may be bound per sample"},
    {"stddev", STK_ARG_FLOAT, "1.0", 0, 1, "standard deviation of the added noise (>= 0); may be bound per sample"},
};
static const stk__arg_schema shot_args[] = {
    {"factor", STK_ARG_FLOAT, "1.0", 0, 1,
     "out = Poisson(in / factor) * factor (0: no noise); may be bound per sample"},
};
static const stk__arg_schema salt_and_pepper_args[] = {
    {"prob", STK_ARG_FLOAT, "0.05", 0, 1, "probability that a pixel (or value) is replaced; may be bound per sample"},
    {"salt_vs_pepper", STK_ARG_FLOAT, "0.5", 0, 1, "probability that a replaced value is salt; may be bound per sample"},
    {"salt_val", STK_ARG_FLOAT, NULL, 0, 1, "salt value (default: 255 for uint8, 1.0 for float)"},
    {"pepper_val", STK_ARG_FLOAT, NULL, 0, 1, "pepper value (default: 0 for uint8, -1.0 for float)"},
    {"per_channel", STK_ARG_BOOL, "False", 0, 0, "draw per value instead of per pixel (channels last)"},
};

#define NOISE_SCHEMA(ident, opname, text, table)                                                                      \
  const stk__op_schema ident = {.name = opname,                                                                       \
                                .doc = text,                                                                          \
                                .min_inputs = 1,                                                                      \
                                .max_inputs = 1,                                                                      \
                                .num_outputs = 1,                                                                     \
                                .devices = STK_OPDEV_CPU | STK_OPDEV_GPU,                                             \
                                .args = table,                                                                        \
                                .num_args = (int)(sizeof table / sizeof table[0]),                                    \
                                .array_outputs = 1u << 0}

NOISE_SCHEMA(stk__op_noise_gaussian, "noise.gaussian",
             "Adds Gaussian noise N(mean, stddev) to every value (uint8: rounded and clamped to [0, 255]).",
             gaussian_args);
NOISE_SCHEMA(stk__op_noise_shot, "noise.shot",
             "Shot (Poisson) noise: out = Poisson(in / factor) * factor (uint8: rounded and clamped).", shot_args);
NOISE_SCHEMA(stk__op_noise_salt_and_pepper, "noise.salt_and_pepper",
             "Replaces a fraction `prob` of the pixels (or values, per_channel) by salt or pepper.",
             salt_and_pepper_args);
