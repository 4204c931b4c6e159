/* src/ops/augment/cast/cast.c: the `cast` operator (DALI's fn.cast) -- schema and CPU implementation:
 * converts every element to `dtype`, keeping shape and layout. Float to integer rounds to nearest
 * (halves away from zero) and saturates, NaN becomes 0; integer narrowing saturates; bool is
 * value != 0; float16 rounds to nearest even. Hot path: run_sample per sample (one loop). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops/common/dtype.h"
#include "ops/op_impls.h"

typedef struct cast_state {
  stk_dtype dtype;
} cast_state;

static stk_status cast_init(stk__op *op, char *err, size_t err_size) {
  stk_dtype dtype;
  const char *name = stk__arg_string(op, "dtype");
  if (stk__dtype_parse(name, &dtype) != STK_OK) {
    stk__errorf(err, err_size, "argument 'dtype' expects uint8, int32, int64, float, float16 or bool, got \"%s\"",
                name);
    return STK_EINVAL;
  }
  cast_state *state = malloc(sizeof *state);
  if (!state) return STK_ENOMEM;
  state->dtype = dtype;
  op->state = state;
  return STK_OK;
}

/* Element i of a tensor of `dtype` as double (exact for every type but int64 beyond 2^53). */
static inline double load(const void *data, stk_dtype dtype, size_t i) {
  switch (dtype) {
    case STK_DTYPE_UINT8:
    case STK_DTYPE_BOOL:
      return ((const uint8_t *)data)[i];
    case STK_DTYPE_INT32:
      return ((const int32_t *)data)[i];
    case STK_DTYPE_INT64:
      return (double)((const int64_t *)data)[i];
    case STK_DTYPE_FLOAT32:
      return ((const float *)data)[i];
    case STK_DTYPE_FLOAT16:
      return stk__half_to_float(((const uint16_t *)data)[i]);
    case STK_DTYPE_INT8:
      return ((const int8_t *)data)[i];
    case STK_DTYPE_INT16:
      return ((const int16_t *)data)[i];
    case STK_DTYPE_UINT16:
      return ((const uint16_t *)data)[i];
    case STK_DTYPE_UINT32:
      return ((const uint32_t *)data)[i];
    case STK_DTYPE_UINT64:
      return (double)((const uint64_t *)data)[i];
    case STK_DTYPE_FLOAT64:
      return ((const double *)data)[i];
  }
  return 0;
}

static inline double round_saturate(double v, double lo, double hi) {
  if (isnan(v)) return 0;
  v = round(v);
  return v < lo ? lo : (v > hi ? hi : v);
}

static void store(void *data, stk_dtype dtype, size_t i, double v) {
  switch (dtype) {
    case STK_DTYPE_UINT8:
      ((uint8_t *)data)[i] = (uint8_t)round_saturate(v, 0, 255);
      break;
    case STK_DTYPE_BOOL:
      ((uint8_t *)data)[i] = v != 0;
      break;
    case STK_DTYPE_INT32:
      ((int32_t *)data)[i] = (int32_t)round_saturate(v, -2147483648.0, 2147483647.0);
      break;
    case STK_DTYPE_INT64: {
      /* 2^63 is not representable as int64: saturate below it. */
      double r = round_saturate(v, -9223372036854775808.0, 9223372036854774784.0);
      ((int64_t *)data)[i] = (int64_t)r;
      break;
    }
    case STK_DTYPE_FLOAT32:
      ((float *)data)[i] = (float)v;
      break;
    case STK_DTYPE_FLOAT16:
      ((uint16_t *)data)[i] = stk__float_to_half((float)v);
      break;
    case STK_DTYPE_INT8:
      ((int8_t *)data)[i] = (int8_t)round_saturate(v, -128, 127);
      break;
    case STK_DTYPE_INT16:
      ((int16_t *)data)[i] = (int16_t)round_saturate(v, -32768, 32767);
      break;
    case STK_DTYPE_UINT16:
      ((uint16_t *)data)[i] = (uint16_t)round_saturate(v, 0, 65535);
      break;
    case STK_DTYPE_UINT32:
      ((uint32_t *)data)[i] = (uint32_t)round_saturate(v, 0, 4294967295.0);
      break;
    case STK_DTYPE_UINT64:
      ((uint64_t *)data)[i] = (uint64_t)round_saturate(v, 0, 18446744073709549568.0);
      break;
    case STK_DTYPE_FLOAT64:
      ((double *)data)[i] = v;
      break;
  }
}

static stk_status cast_run(stk__op *op, stk__sample_ctx *ctx, stk__tensor *const *inputs, stk__tensor *const *outputs) {
  const cast_state *st = op->state;
  const stk__tensor *in = inputs[0];
  stk_status s = stk__tensor_resize(outputs[0], st->dtype, in->ndim, in->shape, in->layout);
  if (s != STK_OK) return s;
  size_t n = stk__tensor_numel(in);
  if (n == 0) return STK_OK;
  if (in->dtype == st->dtype) {
    memcpy(outputs[0]->data, in->data, n * stk_dtype_size(st->dtype));
    return STK_OK;
  }
  if (in->dtype == STK_DTYPE_INT64 && st->dtype == STK_DTYPE_INT32) { /* exact, no double round trip */
    const int64_t *src = in->data;
    int32_t *dst = outputs[0]->data;
    for (size_t i = 0; i < n; i++)
      dst[i] = src[i] < INT32_MIN ? INT32_MIN : (src[i] > INT32_MAX ? INT32_MAX : (int32_t)src[i]);
    return STK_OK;
  }
  if (in->dtype == STK_DTYPE_UINT8 && st->dtype == STK_DTYPE_FLOAT32) { /* the common case, vectorizable */
    const uint8_t *src = in->data;
    float *dst = outputs[0]->data;
    for (size_t i = 0; i < n; i++) dst[i] = (float)src[i];
    return STK_OK;
  }
  for (size_t i = 0; i < n; i++) store(outputs[0]->data, st->dtype, i, load(in->data, in->dtype, i));
  return STK_OK;
}

const stk__op_impl stk__cpu_impl_cast = {.init = cast_init, .destroy = stk__op_free_state, .run_sample = cast_run};

static const stk__arg_schema cast_args[] = {
    {"dtype", STK_ARG_STRING, NULL, 1, 0, "output type: uint8, int32, int64, float, float16 or bool"},
};

const stk__op_schema stk__op_cast = {
    .name = "cast",
    .doc =
        "Converts every element to dtype (float -> integer rounds to nearest and saturates; shape and layout "
        "are kept).",
    .min_inputs = 1,
    .max_inputs = 1,
    .num_outputs = 1,
    .devices = STK_OPDEV_CPU,
    .args = cast_args,
    .num_args = (int)(sizeof cast_args / sizeof cast_args[0]),
    .is_reader = 0,
};
