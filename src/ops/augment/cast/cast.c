/* src/ops/augment/cast/cast.c: the `cast` operator (DALI's fn.cast) -- schema and CPU implementation:
 * converts every element to `dtype`, keeping shape and layout. Float to integer rounds to nearest
 * (halves away from zero) and saturates, NaN becomes 0; integer narrowing saturates; bool is
 * value != 0; float16 rounds to nearest even. Each element through stk__cast_elem (cast_elem.h),
 * which the GPU kernel (cast_gpu.cu) runs too. Hot path: run_sample per sample (one loop). */
#include <stdlib.h>
#include <string.h>

#include "ops/augment/cast/cast_elem.h"
#include "ops/common/dtype.h"
#include "ops/op_impls.h"

typedef struct cast_state {
  stk_dtype dtype;
} cast_state;

stk_status stk__cast_parse(const stk__op *op, stk_dtype *dtype, char *err, size_t err_size) {
  const char *name = stk__arg_string(op, "dtype");
  if (stk__dtype_parse(name, dtype) != STK_OK) {
    stk__errorf(err, err_size, "argument 'dtype' expects " STK__DTYPE_NAMES ", got \"%s\"", name);
    return STK_EINVAL;
  }
  return STK_OK;
}

static stk_status cast_init(stk__op *op, char *err, size_t err_size) {
  stk_dtype dtype;
  stk_status s = stk__cast_parse(op, &dtype, err, err_size);
  if (s != STK_OK) return s;
  cast_state *state = malloc(sizeof *state);
  if (!state) return STK_ENOMEM;
  state->dtype = dtype;
  op->state = state;
  return STK_OK;
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
  if (in->dtype == STK_DTYPE_UINT8 && st->dtype == STK_DTYPE_FLOAT32) { /* the common case, vectorizable */
    const uint8_t *src = in->data;
    float *dst = outputs[0]->data;
    for (size_t i = 0; i < n; i++) dst[i] = (float)src[i];
    return STK_OK;
  }
  for (size_t i = 0; i < n; i++) stk__cast_elem(in->data, in->dtype, outputs[0]->data, st->dtype, (int64_t)i);
  return STK_OK;
}

const stk__op_impl stk__cpu_impl_cast = {.init = cast_init, .destroy = stk__op_free_state, .run_sample = cast_run};

static const stk__arg_schema cast_args[] = {
    {"dtype", STK_ARG_STRING, NULL, 1, 0, "output type: " STK__DTYPE_NAMES},
};

const stk__op_schema stk__op_cast = {
    .name = "cast",
    .doc =
        "Converts every element to dtype (float -> integer rounds to nearest and saturates; shape and layout "
        "are kept).",
    .min_inputs = 1,
    .max_inputs = 1,
    .num_outputs = 1,
    .devices = STK_OPDEV_CPU | STK_OPDEV_GPU,
    .args = cast_args,
    .num_args = (int)(sizeof cast_args / sizeof cast_args[0]),
    .is_reader = 0,
};
