/* src/ops/augment/random/random_common.c: the random.* operators' shared argument parse, output
 * sizing and draws (random_common.h). Parse: build time; draws: per element, hot path. */
#include <math.h>
#include <string.h>

#include "ops/augment/random/random_common.h"
#include "ops/common/dtype.h"

stk_status stk__random_out_parse(const stk__op *op, stk_dtype default_dtype, stk__random_out *out, char *err,
                                 size_t err_size) {
  memset(out, 0, sizeof *out);
  size_t count = 0;
  const int64_t *shape = stk__arg_int_list(op, "shape", &count);
  if (count > STK_MAX_DIMS) {
    stk__errorf(err, err_size, "argument 'shape' has %zu dimensions, at most %d are supported", count, STK_MAX_DIMS);
    return STK_EINVAL;
  }
  for (size_t d = 0; d < count; d++) {
    if (shape[d] < 0 || shape[d] > ((int64_t)1 << 31)) {
      stk__errorf(err, err_size, "argument 'shape' has dimension %zu = %lld; it must lie in [0, 2^31]", d,
                  (long long)shape[d]);
      return STK_EINVAL;
    }
    out->shape[d] = shape[d];
  }
  out->ndim = (int)count;
  out->dtype = default_dtype;
  const char *dtype = stk__arg_string(op, "dtype");
  if (dtype[0] && stk__dtype_parse(dtype, &out->dtype) != STK_OK) {
    stk__errorf(err, err_size, "argument 'dtype' expects " STK__DTYPE_NAMES ", got \"%s\"", dtype);
    return STK_EINVAL;
  }
  return STK_OK;
}

stk_status stk__random_out_resize(stk__sample_ctx *ctx, const stk__random_out *o, stk__tensor *const *outputs,
                                  size_t *count) {
  stk_status s = stk__sample_output_resize(ctx, outputs, 0, o->dtype, o->ndim, o->shape, "");
  *count = s == STK_OK ? stk__tensor_numel(outputs[0]) : 0;
  return s;
}

double stk__rng_normal(stk__rng *rng, double *spare, int *have_spare) {
  if (*have_spare) {
    *have_spare = 0;
    return *spare;
  }
  double radius = sqrt(-2.0 * log(stk__rng_uniform_open0(rng)));
  double angle = 2.0 * M_PI * stk__rng_uniform(rng);
  *spare = radius * sin(angle);
  *have_spare = 1;
  return radius * cos(angle);
}

double stk__rng_gamma(stk__rng *rng, double shape) {
  if (shape < 1.0) { /* Gamma(a) = Gamma(a + 1) * U^(1/a) */
    double u = stk__rng_uniform_open0(rng);
    return stk__rng_gamma(rng, shape + 1.0) * pow(u, 1.0 / shape);
  }
  const double d = shape - 1.0 / 3.0, c = 1.0 / sqrt(9.0 * d);
  double spare = 0;
  int have_spare = 0;
  for (;;) { /* accepts with probability > 0.95 per try */
    double x = stk__rng_normal(rng, &spare, &have_spare), v = 1.0 + c * x;
    if (v <= 0) continue;
    v = v * v * v;
    double u = stk__rng_uniform_open0(rng);
    if (log(u) < 0.5 * x * x + d - d * v + d * log(v)) return d * v;
  }
}
