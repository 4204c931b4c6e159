/* src/ops/augment/constant/constant.c: the `constant` operator (DALI's fn.constant) -- schema and
 * CPU implementation: the same tensor for every sample, from `fdata` (floats) or `idata`
 * (integers), shaped by `shape` (default: 1-d, the data's length), one value broadcast to the whole
 * shape, converted to `dtype` (default float for fdata, int32 for idata) with rounding and
 * saturation. The bytes are made once, at init; each sample copies them. types.Constant of an
 * array builds one of these nodes. */
#include <stdlib.h>
#include <string.h>

#include "ops/common/dtype.h"
#include "ops/op_impls.h"

typedef struct constant_state {
  stk_dtype dtype;
  int ndim;
  int64_t shape[STK_MAX_DIMS];
  char layout[STK_MAX_DIMS + 1];
  size_t nbytes;
  unsigned char bytes[]; /* the sample, made at init */
} constant_state;

static stk_status constant_shape(const stk__op *op, size_t count, constant_state *s, char *err, size_t err_size) {
  size_t given = 0;
  const int64_t *shape = stk__arg_is_set(op, "shape") ? stk__arg_int_list(op, "shape", &given) : NULL;
  if (!shape) { /* DALI: 1-d, the data's length */
    s->ndim = 1;
    s->shape[0] = (int64_t)count;
    return STK_OK;
  }
  if (given > STK_MAX_DIMS) {
    stk__errorf(err, err_size, "argument 'shape' has %zu axes; at most %d", given, STK_MAX_DIMS);
    return STK_EINVAL;
  }
  int64_t volume = 1;
  for (size_t d = 0; d < given; d++) {
    if (shape[d] < 0 || (shape[d] > 0 && volume > INT64_MAX / shape[d] / 16)) {
      stk__errorf(err, err_size, "argument 'shape' extent %lld (axis %zu) is negative or too large",
                  (long long)shape[d], d);
      return STK_EINVAL;
    }
    s->shape[d] = shape[d];
    volume *= shape[d];
  }
  s->ndim = (int)given;
  if (count != 1 && (int64_t)count != volume) {
    stk__errorf(err, err_size,
                "%zu data values for shape of %lld elements: give one value (broadcast) or exactly one per element",
                count, (long long)volume);
    return STK_EINVAL;
  }
  return STK_OK;
}

static stk_status constant_init(stk__op *op, char *err, size_t err_size) {
  const int has_f = stk__arg_is_set(op, "fdata"), has_i = stk__arg_is_set(op, "idata");
  if (has_f == has_i) {
    stk__errorf(err, err_size, "give exactly one of 'fdata' (floats) and 'idata' (integers)%s",
                has_f ? ", not both" : "");
    return STK_EINVAL;
  }
  size_t count = 0;
  const double *fdata = has_f ? stk__arg_float_list(op, "fdata", &count) : NULL;
  const int64_t *idata = has_i ? stk__arg_int_list(op, "idata", &count) : NULL;
  if (count == 0) {
    stk__errorf(err, err_size, "argument '%s' is empty", has_f ? "fdata" : "idata");
    return STK_EINVAL;
  }
  constant_state head;
  memset(&head, 0, sizeof head);
  head.dtype = has_f ? STK_DTYPE_FLOAT32 : STK_DTYPE_INT32;
  const char *dtype = stk__arg_string(op, "dtype");
  if (dtype[0] && stk__dtype_parse(dtype, &head.dtype) != STK_OK) {
    stk__errorf(err, err_size, "argument 'dtype' expects " STK__DTYPE_NAMES ", got \"%s\"", dtype);
    return STK_EINVAL;
  }
  stk_status st = constant_shape(op, count, &head, err, err_size);
  if (st != STK_OK) return st;
  const char *layout = stk__arg_string(op, "layout");
  if (layout[0] && (int)strlen(layout) != head.ndim) {
    stk__errorf(err, err_size, "argument 'layout' \"%s\" has %zu letters for %d axes", layout, strlen(layout),
                head.ndim);
    return STK_EINVAL;
  }
  memcpy(head.layout, layout, strlen(layout));
  size_t n = 1;
  for (int d = 0; d < head.ndim; d++) n *= (size_t)head.shape[d];
  head.nbytes = n * stk_dtype_size(head.dtype);
  if (head.nbytes > ((size_t)1 << 30)) {
    stk__errorf(err, err_size, "a constant of %zu bytes per sample; at most 1 GiB", head.nbytes);
    return STK_EINVAL;
  }
  constant_state *s = malloc(sizeof *s + (head.nbytes ? head.nbytes : 1));
  if (!s) return STK_ENOMEM;
  *s = head;
  for (size_t i = 0; i < n; i++) {
    const size_t k = count == 1 ? 0 : i;
    stk__dtype_store(s->bytes, s->dtype, i, fdata ? fdata[k] : (double)idata[k]);
  }
  op->state = s; /* stk__op_free_state frees it */
  return STK_OK;
}

static stk_status constant_run(stk__op *op, stk__sample_ctx *ctx, stk__tensor *const *inputs,
                               stk__tensor *const *outputs) {
  (void)inputs;
  const constant_state *s = op->state;
  stk_status st = stk__sample_output_resize(ctx, outputs, 0, s->dtype, s->ndim, s->shape, s->layout);
  if (st == STK_OK && s->nbytes) memcpy(outputs[0]->data, s->bytes, s->nbytes);
  return st;
}

const stk__op_impl stk__cpu_impl_constant = {
    .init = constant_init, .destroy = stk__op_free_state, .run_sample = constant_run};

static const stk__arg_schema constant_args[] = {
    {"fdata", STK_ARG_FLOAT_LIST, NULL, 0, 0, "the values as floats (one value fills the whole shape)"},
    {"idata", STK_ARG_INT_LIST, NULL, 0, 0, "the values as integers (one value fills the whole shape)"},
    {"shape", STK_ARG_INT_LIST, NULL, 0, 0, "each sample's shape (unset: 1-d, the data's length)"},
    {"dtype", STK_ARG_STRING, "", 0, 0, "output type (default float for fdata, int32 for idata): " STK__DTYPE_NAMES},
    {"layout", STK_ARG_STRING, "", 0, 0, "the output's layout, one letter per axis (default none)"},
};

const stk__op_schema stk__op_constant = {
    .name = "constant",
    .doc = "The same tensor for every sample, from fdata or idata, shaped by shape (one value is broadcast), "
           "converted to dtype with rounding and saturation.",
    .min_inputs = 0,
    .max_inputs = 0,
    .num_outputs = 1,
    .devices = STK_OPDEV_CPU,
    .args = constant_args,
    .num_args = (int)(sizeof constant_args / sizeof constant_args[0]),
    .array_outputs = 0,
};
