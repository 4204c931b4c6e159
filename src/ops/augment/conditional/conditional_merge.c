/* src/ops/augment/conditional/conditional_merge.c: the `_conditional.merge` operator -- schema,
 * the per-sample choice both implementations share, and the CPU implementation. It is what
 * `enable_conditionals=True` (python/stoker/conditionals.py) puts after an `if` on a DataNode:
 * every variable the branches assign becomes merge(then_value, else_value, predicate=cond), which
 * per sample copies the then-value where the predicate is true, else the else-value. Both values
 * must have one dtype and number of dimensions (DALI's rule for a variable leaving an `if`); their
 * shapes may differ per sample. The GPU implementation is conditional_merge_gpu.cu.
 * Hot path: run_sample per sample (one copy). */
#include <string.h>

#include "ops/augment/conditional/conditional_merge.h"
#include "ops/op_impls.h"

stk_status stk__merge_check(const stk__tensor *then_value, const stk__tensor *else_value, const stk__tensor *predicate,
                            int sample, char *err, size_t err_size) {
  if (then_value->dtype != else_value->dtype || then_value->ndim != else_value->ndim) {
    stk__errorf(err, err_size, "sample %d: the branches of an `if` give a variable different types: %s with %d "
                "dimension(s) in the `if` branch, %s with %d in the `else` branch (they must agree, as in DALI)",
                sample, stk_dtype_name(then_value->dtype), then_value->ndim, stk_dtype_name(else_value->dtype),
                else_value->ndim);
    return STK_EINVAL;
  }
  if (predicate && stk__tensor_numel(predicate) != 1) {
    stk__errorf(err, err_size, "sample %d: the `if` condition must be one scalar per sample, got %zu elements", sample,
                stk__tensor_numel(predicate));
    return STK_EINVAL;
  }
  return STK_OK;
}

static stk_status merge_run(stk__op *op, stk__sample_ctx *ctx, stk__tensor *const *inputs, stk__tensor *const *outputs) {
  const stk__tensor *predicate = stk__arg_input(op, inputs, "predicate");
  stk_status st = stk__merge_check(inputs[0], inputs[1], predicate, ctx->sample_in_batch, ctx->err, ctx->err_size);
  if (st != STK_OK) return st;
  int take_then = predicate ? stk__tensor_scalar(predicate) != 0.0 : stk__arg_bool(op, "predicate");
  const stk__tensor *chosen = take_then ? inputs[0] : inputs[1];
  char layout[sizeof chosen->layout];
  memcpy(layout, chosen->layout, sizeof layout);
  st = stk__tensor_resize(outputs[0], chosen->dtype, chosen->ndim, chosen->shape, layout);
  if (st != STK_OK) return st;
  if (chosen->nbytes) memcpy(outputs[0]->data, chosen->data, chosen->nbytes);
  return STK_OK;
}

const stk__op_impl stk__cpu_impl_conditional_merge = {.run_sample = merge_run};

static const stk__arg_schema merge_args[] = {
    {"predicate", STK_ARG_BOOL, NULL, 1, 1, "per sample: take input 0 (the `if` branch's value) when true, else input 1"},
};

const stk__op_schema stk__op_conditional_merge = {
    .name = "_conditional.merge",
    .doc =
        "Per sample, the first input where `predicate` is true, else the second (enable_conditionals' merge of a "
        "variable assigned in an `if`/`else`; the two must agree in dtype and number of dimensions).",
    .min_inputs = 2,
    .max_inputs = 2,
    .num_outputs = 1,
    .devices = STK_OPDEV_CPU | STK_OPDEV_GPU,
    .args = merge_args,
    .num_args = (int)(sizeof merge_args / sizeof merge_args[0]),
    .is_reader = 0,
};
