/* src/ops/augment/one_hot/one_hot.c: the `one_hot` operator (DALI's fn.one_hot) -- schema,
 * parameter parse, per-sample shape (one_hot_params.h) and CPU implementation: every output
 * element from stk__one_hot_value. Inputs: class indices of any dtype but float16, any shape.
 * Hot path: run_sample, one pass over the output. */
#include <string.h>

#include "ops/augment/one_hot/one_hot_params.h"
#include "ops/common/dtype.h"
#include "ops/op_impls.h"

stk_status stk__one_hot_parse(const stk__op *op, stk__one_hot_params *p, char *err, size_t err_size) {
  memset(p, 0, sizeof *p);
  p->num_classes = stk__arg_int(op, "num_classes");
  if (p->num_classes < 1) {
    stk__errorf(err, err_size, "argument 'num_classes' is %lld; it must be >= 1", (long long)p->num_classes);
    return STK_EINVAL;
  }
  p->axis = (int)stk__arg_int(op, "axis");
  p->axis_given = stk__arg_is_set(op, "axis");
  const char *name = stk__arg_string(op, "axis_name");
  if (strlen(name) > 1) {
    stk__errorf(err, err_size, "argument 'axis_name' \"%s\" must be a single letter", name);
    return STK_EINVAL;
  }
  p->axis_name = name[0];
  p->on_value = stk__arg_float(op, "on_value");
  p->off_value = stk__arg_float(op, "off_value");
  const char *dtype = stk__arg_string(op, "dtype");
  if (stk__dtype_parse(dtype, &p->dtype) != STK_OK) {
    stk__errorf(err, err_size, "argument 'dtype' expects " STK__DTYPE_NAMES ", got \"%s\"", dtype);
    return STK_EINVAL;
  }
  return STK_OK;
}

stk_status stk__one_hot_make_shape(const stk__one_hot_params *p, const stk__tensor *in, stk__one_hot_shape *s,
                                   char *err, size_t err_size) {
  memset(s, 0, sizeof *s);
  if (in->dtype == STK_DTYPE_FLOAT16) {
    stk__errorf(err, err_size, "float16 class indices are not supported; cast them to an integer type");
    return STK_EINVAL;
  }
  const size_t numel = stk__tensor_numel(in);
  if (in->ndim == 0 || (!p->axis_given && numel == 1)) { /* a scalar: [num_classes] */
    s->ndim = 1;
    s->shape[0] = p->num_classes;
    s->layout[0] = p->axis_name;
    s->outer = s->inner = 1;
    return STK_OK;
  }
  if (p->axis < -1 || p->axis > in->ndim || in->ndim + 1 > STK_MAX_DIMS) {
    stk__errorf(err, err_size, "argument 'axis' %d is out of range for a %d-d input (-1 .. %d, at most %d axes out)",
                p->axis, in->ndim, in->ndim, STK_MAX_DIMS);
    return STK_EINVAL;
  }
  const int a = p->axis < 0 ? in->ndim : p->axis;
  s->ndim = in->ndim + 1;
  s->outer = s->inner = 1;
  for (int d = 0, k = 0; d < s->ndim; d++) {
    if (d == a) {
      s->shape[d] = p->num_classes;
      continue;
    }
    s->shape[d] = in->shape[k];
    if (d < a) s->outer *= in->shape[k];
    else s->inner *= in->shape[k];
    k++;
  }
  if (in->layout[0] && p->axis_name && (int)strlen(in->layout) == in->ndim) {
    memcpy(s->layout, in->layout, (size_t)a);
    s->layout[a] = p->axis_name;
    memcpy(s->layout + a + 1, in->layout + a, (size_t)(in->ndim - a));
  }
  return STK_OK;
}

static stk_status one_hot_init(stk__op *op, char *err, size_t err_size) {
  stk__one_hot_params p;
  stk_status st = stk__one_hot_parse(op, &p, err, err_size);
  return st == STK_OK ? stk__op_keep_state(op, &p, sizeof p) : st;
}

static stk_status one_hot_run(stk__op *op, stk__sample_ctx *ctx, stk__tensor *const *inputs,
                              stk__tensor *const *outputs) {
  const stk__one_hot_params *p = op->state;
  const stk__tensor *in = inputs[0];
  stk__one_hot_shape s;
  stk_status st = stk__one_hot_make_shape(p, in, &s, ctx->err, ctx->err_size);
  if (st == STK_OK) st = stk__sample_output_resize(ctx, outputs, 0, p->dtype, s.ndim, s.shape, s.layout);
  if (st != STK_OK) return st;
  const int64_t n = s.outer * p->num_classes * s.inner;
  for (int64_t e = 0; e < n; e++)
    stk__dtype_store(outputs[0]->data, p->dtype, (size_t)e,
                     stk__one_hot_value(in->data, in->dtype, e, p->num_classes, s.inner, p->on_value, p->off_value));
  return STK_OK;
}

const stk__op_impl stk__cpu_impl_one_hot = {.init = one_hot_init, .destroy = stk__op_free_state, .run_sample = one_hot_run};

static const stk__arg_schema one_hot_args[] = {
    {"num_classes", STK_ARG_INT, "0", 0, 0, "number of classes (>= 1): the extent of the new axis"},
    {"axis", STK_ARG_INT, "-1", 0, 0, "where the new axis goes (-1: last); a scalar input gives [num_classes]"},
    {"axis_name", STK_ARG_STRING, "", 0, 0, "layout letter of the new axis (input with a layout; else no layout)"},
    {"dtype", STK_ARG_STRING, "float", 0, 0, "output type: " STK__DTYPE_NAMES},
    {"on_value", STK_ARG_FLOAT, "1.0", 0, 0, "value at the input's class"},
    {"off_value", STK_ARG_FLOAT, "0.0", 0, 0, "value everywhere else"},
};

const stk__op_schema stk__op_one_hot = {
    .name = "one_hot",
    .doc = "One-hot encoding: a new axis of num_classes at `axis` holding on_value at each input class and "
           "off_value elsewhere (classes outside [0, num_classes) set none).",
    .min_inputs = 1,
    .max_inputs = 1,
    .num_outputs = 1,
    .devices = STK_OPDEV_CPU | STK_OPDEV_GPU,
    .args = one_hot_args,
    .num_args = (int)(sizeof one_hot_args / sizeof one_hot_args[0]),
    .array_outputs = 1u << 0,
};
