/* src/ops/augment/arithmetic/math_elementwise.c: the `math.elementwise` operator (what DALI's
 * DataNode arithmetic, comparisons, bitwise operators and nvidia.dali.math functions build) --
 * schema and CPU implementation. One or two tensor operands and an optional scalar constant; the
 * operation is the `op` argument; result types follow DALI's promotion table
 * (docs/operators-math.md, math_params.c); broadcasting is equal shapes or a per-sample scalar
 * side. The per-element definition is math_element.h, shared with the CUDA kernel
 * (math_elementwise_gpu.cu). Hot path: run_sample per sample (one loop over the elements). */
#include <stdlib.h>
#include <string.h>

#include "ops/augment/arithmetic/math_params.h"
#include "ops/op_impls.h"

static stk_status math_init(stk__op *op, char *err, size_t err_size) {
  stk__math_params params;
  stk_status st = stk__math_params_get(op, &params, err, err_size);
  return st == STK_OK ? stk__op_keep_state(op, &params, sizeof params) : st;
}

/* The element loop, with the common float32 cases written out so the compiler vectorizes them. */
static void run_elements(const stk__math_plan *plan, const void *a, int a_step, const void *b, int b_step, void *out,
                         size_t n) {
  if (plan->kind == STK__MK_F32 && plan->out_dtype == STK_DTYPE_FLOAT32 && plan->constant == 0 &&
      plan->a_dtype == STK_DTYPE_FLOAT32 && plan->b_dtype == STK_DTYPE_FLOAT32 && a_step && b_step &&
      plan->op <= STK__MATH_DIV) {
    const float *x = a, *y = b;
    float *o = out;
    switch (plan->op) {
      case STK__MATH_ADD: for (size_t i = 0; i < n; i++) o[i] = x[i] + y[i]; return;
      case STK__MATH_SUB: for (size_t i = 0; i < n; i++) o[i] = x[i] - y[i]; return;
      case STK__MATH_MUL: for (size_t i = 0; i < n; i++) o[i] = x[i] * y[i]; return;
      default: for (size_t i = 0; i < n; i++) o[i] = x[i] / y[i]; return;
    }
  }
  for (size_t i = 0; i < n; i++) stk__math_element(plan, a, a_step ? i : 0, b, b_step ? i : 0, out, i);
}

static stk_status math_run(stk__op *op, stk__sample_ctx *ctx, stk__tensor *const *inputs, stk__tensor *const *outputs) {
  const stk__math_params *p = op->state;
  const stk__tensor *a = inputs[0], *b = op->num_inputs > 1 ? inputs[1] : NULL;
  stk__math_plan plan;
  stk_status st = stk__math_inputs_check(op, p, ctx->err, ctx->err_size);
  if (st != STK_OK) return st;
  st = stk__math_plan_make(p, a->dtype, b ? b->dtype : a->dtype, &plan, ctx->err, ctx->err_size);
  if (st != STK_OK) return st;
  int ndim, a_step, b_step;
  int64_t shape[STK_MAX_DIMS];
  const char *layout;
  st = stk__math_broadcast(a, b, &ndim, shape, &layout, &a_step, &b_step, ctx->err, ctx->err_size);
  if (st != STK_OK) return st;
  char layout_copy[sizeof a->layout];
  memcpy(layout_copy, layout, sizeof layout_copy); /* the output may alias nothing, but copy anyway */
  st = stk__tensor_resize(outputs[0], (stk_dtype)plan.out_dtype, ndim, shape, layout_copy);
  if (st != STK_OK) return st;
  size_t n = stk__tensor_numel(outputs[0]);
  if (p->has_constant && p->constant_left && !stk__math_op_is_unary(p->op)) /* the tensor is the right operand */
    run_elements(&plan, NULL, 0, a->data, a_step, outputs[0]->data, n);
  else
    run_elements(&plan, a->data, a_step, b ? b->data : NULL, b_step, outputs[0]->data, n);
  return STK_OK;
}

const stk__op_impl stk__cpu_impl_math_elementwise = {
    .init = math_init, .destroy = stk__op_free_state, .run_sample = math_run};

static const stk__arg_schema math_args[] = {
    {"op", STK_ARG_STRING, NULL, 1, 0,
     "the operation: add, sub, mul, truediv, floordiv, mod, min, max, pow, fpow, atan2, eq, ne, lt, le, gt, ge, "
     "bitand, bitor, bitxor (two operands); neg, pos, abs, invert, fabs, sqrt, rsqrt, cbrt, exp, log, log2, log10, "
     "sin, cos, tan, asin, acos, atan, sinh, cosh, tanh, floor, ceil (one); clamp (one, with lo and hi)"},
    {"scalar_dtype", STK_ARG_STRING, "", 0, 0,
     "type of the scalar constant operand (int32 for a Python int, float32 for a float, as DALI); empty: none"},
    {"scalar_int", STK_ARG_INT, "0", 0, 0, "the constant's value when scalar_dtype is an integer or bool"},
    {"scalar", STK_ARG_FLOAT, "0", 0, 0, "the constant's value when scalar_dtype is a float"},
    {"scalar_left", STK_ARG_BOOL, "false", 0, 0, "the constant is the left operand (10 - x)"},
    {"lo", STK_ARG_FLOAT, NULL, 0, 0, "clamp: lower bound (of type scalar_dtype, float32 when unset)"},
    {"hi", STK_ARG_FLOAT, NULL, 0, 0, "clamp: upper bound"},
};

const stk__op_schema stk__op_math_elementwise = {
    .name = "math.elementwise",
    .doc =
        "Elementwise arithmetic, comparison, bitwise and math functions on one or two tensors and an optional "
        "scalar constant, with DALI's type promotion; shapes equal or one side a per-sample scalar "
        "(docs/operators-math.md). Python's DataNode operators and stoker.math build it.",
    .min_inputs = 1,
    .max_inputs = 2,
    .num_outputs = 1,
    .devices = STK_OPDEV_CPU | STK_OPDEV_GPU,
    .args = math_args,
    .num_args = (int)(sizeof math_args / sizeof math_args[0]),
    .is_reader = 0,
    .array_outputs = 0,
};
