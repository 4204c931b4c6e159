/* src/ops/augment/random/distributions.c: DALI's random.uniform, random.normal, random.beta and
 * random.choice -- schemas and CPU implementations. Each sample gets `shape` values (default: one,
 * a 0-d tensor) drawn from its own stream keyed by (seed, operator id, epoch, sample id) and
 * converted to `dtype` with cast's rounding and saturation. Numeric arguments may be bound per
 * sample (range=fn.random.uniform(...), mean=..., alpha=...). Hot path: run_sample per sample. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops/augment/random/random_common.h"
#include "ops/common/dtype.h"
#include "ops/op_impls.h"

#define MAX_VALUES 4096 /* values / a / p: at most this many entries */

typedef struct dist_state {
  stk__random_out out;
  double values[MAX_VALUES]; /* uniform's discrete values (count > 0), choice's a */
  double cumulative[MAX_VALUES];
  size_t count;
  int has_p;
} dist_state;

static stk_status keep(stk__op *op, const dist_state *st) { return stk__op_keep_state(op, st, sizeof *st); }

static stk_status bad(char *err, size_t err_size, const char *what) {
  stk__errorf(err, err_size, "%s", what);
  return STK_EINVAL;
}

/* ---- random.uniform --------------------------------------------------------------------------- */
static stk_status uniform_init(stk__op *op, char *err, size_t err_size) {
  dist_state st;
  memset(&st, 0, sizeof st);
  stk_status s = stk__random_out_parse(op, STK_DTYPE_FLOAT32, &st.out, err, err_size);
  if (s != STK_OK) return s;
  size_t count = 0;
  const double *values = stk__arg_float_list(op, "values", &count);
  if (count > 0 && stk__arg_is_set(op, "range")) return bad(err, err_size, "give either 'range' or 'values', not both");
  if (count > MAX_VALUES) return bad(err, err_size, "argument 'values' takes at most 4096 values");
  if (stk__arg_is_set(op, "values") && count == 0) return bad(err, err_size, "argument 'values' is empty");
  if (count) memcpy(st.values, values, count * sizeof *values);
  st.count = count;
  size_t rc = 0;
  const double *range = stk__arg_float_list(op, "range", &rc);
  if (stk__arg(op, "range")->input_ref == NULL &&
      (rc != 2 || !(range[0] <= range[1]) || !isfinite(range[0]) || !isfinite(range[1])))
    return bad(err, err_size, "argument 'range' expects [min, max] with min <= max");
  return keep(op, &st);
}

static stk_status uniform_run(stk__op *op, stk__sample_ctx *ctx, stk__tensor *const *inputs,
                              stk__tensor *const *outputs) {
  const dist_state *st = op->state;
  double range[2] = {-1.0, 1.0};
  size_t rc = 0;
  if (!st->count) {
    stk__arg_sample_floats(op, inputs, "range", range, 2, &rc);
    if (rc != 2 || !(range[0] <= range[1])) {
      stk__errorf(ctx->err, ctx->err_size, "argument 'range' for this sample is not [min, max] with min <= max");
      return STK_EINVAL;
    }
  }
  size_t n;
  stk_status s = stk__random_out_resize(ctx, &st->out, outputs, &n);
  if (s != STK_OK) return s;
  stk__rng rng;
  stk__random_sample_rng(op, ctx, &rng);
  for (size_t i = 0; i < n; i++) {
    double u = stk__rng_uniform(&rng);
    double v = st->count ? st->values[(size_t)(u * (double)st->count)] : range[0] + u * (range[1] - range[0]);
    stk__dtype_store(outputs[0]->data, st->out.dtype, i, v);
  }
  return STK_OK;
}

/* ---- random.normal ---------------------------------------------------------------------------- */
static stk_status normal_init(stk__op *op, char *err, size_t err_size) {
  dist_state st;
  memset(&st, 0, sizeof st);
  stk_status s = stk__random_out_parse(op, STK_DTYPE_FLOAT32, &st.out, err, err_size);
  if (s != STK_OK) return s;
  if (!(stk__arg_float(op, "stddev") >= 0)) return bad(err, err_size, "argument 'stddev' must be >= 0");
  return keep(op, &st);
}

static stk_status normal_run(stk__op *op, stk__sample_ctx *ctx, stk__tensor *const *inputs,
                             stk__tensor *const *outputs) {
  const dist_state *st = op->state;
  const double mean = stk__arg_sample_float(op, inputs, "mean"), stddev = stk__arg_sample_float(op, inputs, "stddev");
  if (!(stddev >= 0)) {
    stk__errorf(ctx->err, ctx->err_size, "argument 'stddev' is %g for this sample; it must be >= 0", stddev);
    return STK_EINVAL;
  }
  size_t n;
  stk_status s = stk__random_out_resize(ctx, &st->out, outputs, &n);
  if (s != STK_OK) return s;
  stk__rng rng;
  stk__random_sample_rng(op, ctx, &rng);
  double spare = 0;
  int have_spare = 0;
  for (size_t i = 0; i < n; i++)
    stk__dtype_store(outputs[0]->data, st->out.dtype, i, mean + stddev * stk__rng_normal(&rng, &spare, &have_spare));
  return STK_OK;
}

/* ---- random.beta ------------------------------------------------------------------------------ */
static stk_status beta_init(stk__op *op, char *err, size_t err_size) {
  dist_state st;
  memset(&st, 0, sizeof st);
  stk_status s = stk__random_out_parse(op, STK_DTYPE_FLOAT32, &st.out, err, err_size);
  if (s != STK_OK) return s;
  if (!(stk__arg_float(op, "alpha") > 0) || !(stk__arg_float(op, "beta") > 0))
    return bad(err, err_size, "arguments 'alpha' and 'beta' must be > 0");
  return keep(op, &st);
}

static stk_status beta_run(stk__op *op, stk__sample_ctx *ctx, stk__tensor *const *inputs, stk__tensor *const *outputs) {
  const dist_state *st = op->state;
  const double a = stk__arg_sample_float(op, inputs, "alpha"), b = stk__arg_sample_float(op, inputs, "beta");
  if (!(a > 0) || !(b > 0) || !isfinite(a) || !isfinite(b)) {
    stk__errorf(ctx->err, ctx->err_size, "alpha = %g and beta = %g for this sample; both must be finite and > 0", a, b);
    return STK_EINVAL;
  }
  size_t n;
  stk_status s = stk__random_out_resize(ctx, &st->out, outputs, &n);
  if (s != STK_OK) return s;
  stk__rng rng;
  stk__random_sample_rng(op, ctx, &rng);
  for (size_t i = 0; i < n; i++) {
    double x = stk__rng_gamma(&rng, a), y = stk__rng_gamma(&rng, b);
    stk__dtype_store(outputs[0]->data, st->out.dtype, i, x + y > 0 ? x / (x + y) : (a >= b ? 1.0 : 0.0));
  }
  return STK_OK;
}

/* ---- random.choice ---------------------------------------------------------------------------- */
static stk_status choice_init(stk__op *op, char *err, size_t err_size) {
  dist_state st;
  memset(&st, 0, sizeof st);
  size_t count = 0, pc = 0;
  const double *a = stk__arg_float_list(op, "a", &count);
  const double *p = stk__arg_float_list(op, "p", &pc);
  if (count == 0 && op->num_inputs == 0 && !stk__arg_is_set(op, "a"))
    return bad(err, err_size, "argument 'a' (or the input) is required: a count n or the values to choose from");
  if (count > MAX_VALUES) return bad(err, err_size, "argument 'a' takes at most 4096 values");
  int integral = 1;
  if (count == 1) { /* a scalar n: choose from 0 .. n-1 */
    if (!(a[0] >= 1 && a[0] <= MAX_VALUES && a[0] == floor(a[0])))
      return bad(err, err_size, "argument 'a' as one value is a count n: an integer in [1, 4096]");
    st.count = (size_t)a[0];
    for (size_t k = 0; k < st.count; k++) st.values[k] = (double)k;
  } else {
    st.count = count;
    for (size_t k = 0; k < count; k++) {
      st.values[k] = a[k];
      integral &= a[k] == floor(a[k]) && fabs(a[k]) < 2147483648.0;
    }
  }
  if (st.count == 0) st.count = pc; /* the values come from the input, p fixes their count */
  if (pc > 0 && pc != st.count) {
    stk__errorf(err, err_size, "argument 'p' has %zu probabilities for %zu choices", pc, st.count);
    return STK_EINVAL;
  }
  double sum = 0;
  for (size_t k = 0; k < pc; k++) {
    if (!(p[k] >= 0)) return bad(err, err_size, "argument 'p' holds a negative probability");
    sum += p[k];
    st.cumulative[k] = sum;
  }
  if (pc > 0 && fabs(sum - 1.0) > 1e-4) {
    stk__errorf(err, err_size, "argument 'p' sums to %g; the probabilities must sum to 1", sum);
    return STK_EINVAL;
  }
  st.has_p = pc > 0;
  stk_status s = stk__random_out_parse(op, integral ? STK_DTYPE_INT32 : STK_DTYPE_FLOAT32, &st.out, err, err_size);
  return s == STK_OK ? keep(op, &st) : s;
}

/* Index of the first cumulative probability above u (the last one for rounding leftovers). */
static size_t pick(const double *cumulative, size_t count, double u) {
  size_t lo = 0, hi = count - 1;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if (u < cumulative[mid]) hi = mid;
    else lo = mid + 1;
  }
  return lo;
}

static stk_status choice_run(stk__op *op, stk__sample_ctx *ctx, stk__tensor *const *inputs,
                             stk__tensor *const *outputs) {
  const dist_state *st = op->state;
  const stk__tensor *in = op->num_inputs > 0 ? inputs[0] : NULL;
  size_t choices = st->count;
  if (in) { /* a per-sample input: a scalar n, or the values */
    size_t numel = in->data ? stk__tensor_numel(in) : 0;
    double first = numel ? stk__tensor_scalar(in) : 0;
    choices = in->ndim == 0 ? (size_t)(first >= 1 ? first : 0) : numel;
    if (choices == 0 || (st->has_p && choices != st->count)) {
      stk__errorf(ctx->err, ctx->err_size, "the input gives %zu choices for this sample (with p: %zu needed)", choices,
                  st->count);
      return STK_EINVAL;
    }
  }
  size_t n;
  stk_status s = stk__random_out_resize(ctx, &st->out, outputs, &n);
  if (s != STK_OK) return s;
  stk__rng rng;
  stk__random_sample_rng(op, ctx, &rng);
  const size_t elem = in ? stk_dtype_size(in->dtype) : 0;
  for (size_t i = 0; i < n; i++) {
    double u = stk__rng_uniform(&rng);
    size_t k = st->has_p ? pick(st->cumulative, st->count, u) : (size_t)(u * (double)choices);
    double v = st->values[k < MAX_VALUES ? k : 0];
    if (in && in->ndim == 0) v = (double)k;
    else if (in) {
      stk__tensor one = *in;
      one.data = (uint8_t *)in->data + k * elem;
      one.nbytes = elem;
      v = stk__tensor_scalar(&one);
    }
    stk__dtype_store(outputs[0]->data, st->out.dtype, i, v);
  }
  return STK_OK;
}

/* ---- tables ----------------------------------------------------------------------------------- */
const stk__op_impl stk__cpu_impl_random_uniform = {.init = uniform_init, .destroy = stk__op_free_state, .run_sample = uniform_run};
const stk__op_impl stk__cpu_impl_random_normal = {.init = normal_init, .destroy = stk__op_free_state, .run_sample = normal_run};
const stk__op_impl stk__cpu_impl_random_beta = {.init = beta_init, .destroy = stk__op_free_state, .run_sample = beta_run};
const stk__op_impl stk__cpu_impl_random_choice = {.init = choice_init, .destroy = stk__op_free_state, .run_sample = choice_run};

#define SHAPE_ARG {"shape", STK_ARG_INT_LIST, NULL, 0, 0, "output shape of each sample (unset: one value, a 0-d tensor)"}
#define DTYPE_ARG(what) {"dtype", STK_ARG_STRING, "", 0, 0, "output type (" what "): " STK__DTYPE_NAMES ", rounded and saturated"}

static const stk__arg_schema uniform_args[] = {
    {"range", STK_ARG_FLOAT_LIST, "[-1.0, 1.0]", 0, 1, "[min, max) of the continuous distribution; may be bound per sample"},
    {"values", STK_ARG_FLOAT_LIST, NULL, 0, 0, "discrete values, each equally likely (instead of range)"},
    SHAPE_ARG,
    DTYPE_ARG("default float"),
};
static const stk__arg_schema normal_args[] = {
    {"mean", STK_ARG_FLOAT, "0.0", 0, 1, "mean; may be bound per sample"},
    {"stddev", STK_ARG_FLOAT, "1.0", 0, 1, "standard deviation (>= 0); may be bound per sample"},
    SHAPE_ARG,
    DTYPE_ARG("default float"),
};
static const stk__arg_schema beta_args[] = {
    {"alpha", STK_ARG_FLOAT, "1.0", 0, 1, "first shape parameter (> 0); may be bound per sample"},
    {"beta", STK_ARG_FLOAT, "1.0", 0, 1, "second shape parameter (> 0); may be bound per sample"},
    SHAPE_ARG,
    DTYPE_ARG("default float"),
};
static const stk__arg_schema choice_args[] = {
    {"a", STK_ARG_FLOAT_LIST, NULL, 0, 0,
     "one integer n (choose from 0 .. n-1) or the values to choose from; or give them as the input, per sample"},
    {"p", STK_ARG_FLOAT_LIST, NULL, 0, 0, "probability of each choice (sums to 1; default: all equal)"},
    SHAPE_ARG,
    DTYPE_ARG("default int32 when every value of a is an integer, else float"),
};

#define DIST_SCHEMA(ident, opname, text, argtable, inputs)                                                            \
  const stk__op_schema ident = {.name = opname,                                                                       \
                                .doc = text,                                                                          \
                                .min_inputs = 0,                                                                      \
                                .max_inputs = inputs,                                                                 \
                                .num_outputs = 1,                                                                     \
                                .devices = STK_OPDEV_CPU,                                                             \
                                .args = argtable,                                                                     \
                                .num_args = (int)(sizeof argtable / sizeof argtable[0])}

DIST_SCHEMA(stk__op_random_uniform, "random.uniform",
            "Uniform random numbers per sample: continuous in [range[0], range[1]) or, with `values`, one of the "
            "values, each equally likely (keyed by seed, operator, epoch and sample).",
            uniform_args, 0);
DIST_SCHEMA(stk__op_random_normal, "random.normal",
            "Normally distributed random numbers per sample: mean + stddev * N(0, 1) (keyed by seed, operator, epoch "
            "and sample).",
            normal_args, 0);
DIST_SCHEMA(stk__op_random_beta, "random.beta",
            "Beta(alpha, beta) distributed random numbers in [0, 1] per sample (keyed by seed, operator, epoch and "
            "sample).",
            beta_args, 0);
DIST_SCHEMA(stk__op_random_choice, "random.choice",
            "Random choice per sample from `a` (a count n: 0 .. n-1, or a list of values; or the input, per sample) "
            "with probabilities `p` (keyed by seed, operator, epoch and sample).",
            choice_args, 1);
