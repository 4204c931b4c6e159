/* src/ops/augment/arithmetic/math_params.h: math.elementwise's one parameter parse and its typing
 * rules (DALI's type promotion table, docs/operators-math.md), shared by the CPU implementation
 * (math_elementwise.c) and the GPU one (math_elementwise_gpu.cu). Build time (parse) and once per
 * sample or batch (planning); no per-element work here. */
#ifndef STOKER_OPS_AUGMENT_ARITHMETIC_MATH_PARAMS_H
#define STOKER_OPS_AUGMENT_ARITHMETIC_MATH_PARAMS_H

#include "core/op.h"
#include "ops/augment/arithmetic/math_element.h"

#ifdef __cplusplus
extern "C" {
#endif

/* What the arguments say (the operator's state; the same on CPU and GPU). */
typedef struct stk__math_params {
  int op;                  /* stk__math_op */
  int has_constant;        /* a scalar constant is one operand */
  int constant_left;       /* 1: the constant is the left operand (10 - x) */
  stk_dtype constant_dtype; /* its type: int32 for a Python int, float32 for a float (DALI's rule) */
  int64_t constant_int;    /* its value when constant_dtype is an integer or bool */
  double constant_float;   /* its value when it is a float */
  double lo, hi;           /* clamp's bounds (of constant_dtype) */
} stk__math_params;

/* The operation's name ("add", "truediv", "sqrt", ...) -> stk__math_op, or -1. */
STK_INTERNAL int stk__math_op_find(const char *name);
STK_INTERNAL const char *stk__math_op_name(int op);
/* 1 when `op` takes one tensor operand (unary functions and clamp). */
STK_INTERNAL int stk__math_op_is_unary(int op);

/* Any of stoker's dtype names ("float", "float32", "uint16", "float64", ...). */
STK_INTERNAL stk_status stk__math_dtype_parse(const char *text, stk_dtype *out);

/* DALI's promotion of two operand types (commutative; bool is the smallest unsigned type). */
STK_INTERNAL stk_dtype stk__math_promote(stk_dtype a, stk_dtype b);

/* Reads and checks the operator's arguments (names the argument and what is wrong). */
STK_INTERNAL stk_status stk__math_params_get(const stk__op *op, stk__math_params *p, char *err, size_t err_size);

/* STK_EINVAL (message) unless op has as many tensor inputs as its operation and constant need. */
STK_INTERNAL stk_status stk__math_inputs_check(const stk__op *op, const stk__math_params *p, char *err,
                                               size_t err_size);

/* The element plan for operand dtypes (a_dtype, b_dtype: the tensors' dtypes, b_dtype ignored for a
 * unary operation or when the constant stands in for b): result dtype, compute kind, constant
 * converted to the compute kind. STK_EINVAL with a message for a combination the operation does
 * not take (bitwise on floats, two bools in +, % on bool, ...). */
STK_INTERNAL stk_status stk__math_plan_make(const stk__math_params *p, stk_dtype a_dtype, stk_dtype b_dtype,
                                            stk__math_plan *plan, char *err, size_t err_size);

/* Broadcasting of one sample: equal shapes, or one side a per-sample scalar (shape [] or [1]).
 * Sets the output's ndim/shape/layout and whether each side is read at one element (a_step/b_step 0)
 * or elementwise (1). STK_EINVAL naming both shapes otherwise. b may be NULL (one tensor operand). */
STK_INTERNAL stk_status stk__math_broadcast(const stk__tensor *a, const stk__tensor *b, int *ndim, int64_t *shape,
                                            const char **layout, int *a_step, int *b_step, char *err,
                                            size_t err_size);

#ifdef __cplusplus
}
#endif
#endif
