/* src/ops/augment/arithmetic/math_element.h: the one definition of what math.elementwise computes
 * for one element -- loading an element of any dtype into the compute kind, applying the operation,
 * storing into the result dtype -- shared by the CPU implementation (math_elementwise.c) and the
 * CUDA kernel (math_elementwise_gpu.cu), so both produce the same bytes. Plain C that also compiles
 * as CUDA C++ (every function is host+device there). Hot path: called per element.
 *
 * Compute kinds: integers (bool included) compute in int64 with two's complement wrap-around, and
 * the result is truncated to the result type (the same bits as computing in that type); uint64
 * results compute in uint64; float16/float32 results compute in float32 (float16 rounds to nearest
 * even on store), float64 in double. Transcendental functions (exp, log, sin, ...) evaluate in
 * double and round once to the result type, so CPU and GPU agree bit for bit for float32/float16
 * wherever the two libraries' double results round to the same float (all but ~1 in 10^8 values);
 * float64 results may differ in the last unit between glibc and CUDA's libdevice. */
#ifndef STOKER_OPS_AUGMENT_ARITHMETIC_MATH_ELEMENT_H
#define STOKER_OPS_AUGMENT_ARITHMETIC_MATH_ELEMENT_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "stoker/pipeline.h"

#ifdef __CUDACC__
#define STK_MATH_FN static __host__ __device__ __forceinline__
#else
#define STK_MATH_FN static inline
#endif

/* The operations (the `op` argument's names are in math_params.c, in this order). */
typedef enum stk__math_op {
  /* binary */
  STK__MATH_ADD = 0,
  STK__MATH_SUB,
  STK__MATH_MUL,
  STK__MATH_DIV,      /* true division: float result */
  STK__MATH_FLOORDIV, /* integers: truncates toward zero (DALI's //); floats: plain division */
  STK__MATH_MOD,      /* C remainder: sign of the dividend (integers %, floats fmod) */
  STK__MATH_MIN,
  STK__MATH_MAX,
  STK__MATH_POW,
  STK__MATH_FPOW, /* pow in floating point */
  STK__MATH_EQ,
  STK__MATH_NE,
  STK__MATH_LT,
  STK__MATH_LE,
  STK__MATH_GT,
  STK__MATH_GE,
  STK__MATH_BITAND,
  STK__MATH_BITOR,
  STK__MATH_BITXOR,
  STK__MATH_ATAN2,
  /* unary */
  STK__MATH_NEG,
  STK__MATH_POS,
  STK__MATH_ABS,
  STK__MATH_INVERT,
  STK__MATH_FABS,
  STK__MATH_SQRT,
  STK__MATH_RSQRT,
  STK__MATH_CBRT,
  STK__MATH_EXP,
  STK__MATH_LOG,
  STK__MATH_LOG2,
  STK__MATH_LOG10,
  STK__MATH_SIN,
  STK__MATH_COS,
  STK__MATH_TAN,
  STK__MATH_ASIN,
  STK__MATH_ACOS,
  STK__MATH_ATAN,
  STK__MATH_SINH,
  STK__MATH_COSH,
  STK__MATH_TANH,
  STK__MATH_FLOOR,
  STK__MATH_CEIL,
  /* unary with two constant bounds */
  STK__MATH_CLAMP,
  STK__MATH_OP_COUNT
} stk__math_op;

#define STK__MATH_FIRST_UNARY STK__MATH_NEG

typedef enum stk__math_kind { STK__MK_INT = 0, STK__MK_UINT, STK__MK_F32, STK__MK_F64 } stk__math_kind;

typedef union stk__math_value {
  int64_t i;
  uint64_t u;
  float f32;
  double f64;
} stk__math_value;

STK_MATH_FN int stk__math_is_compare(int op) { return op >= STK__MATH_EQ && op <= STK__MATH_GE; }

/* ---- float16 (IEEE binary16), round to nearest even: the same results as ops/common/dtype.h ---- */
STK_MATH_FN float stk__math_half_load(uint16_t bits) {
  uint32_t sign = (uint32_t)(bits & 0x8000u) << 16;
  uint32_t exponent = (bits >> 10) & 0x1fu, mantissa = bits & 0x3ffu, out;
  if (exponent == 0x1fu) {
    out = sign | 0x7f800000u | (mantissa << 13);
  } else if (exponent != 0) {
    out = sign | ((exponent + 112u) << 23) | (mantissa << 13);
  } else if (mantissa == 0) {
    out = sign;
  } else { /* subnormal: value = mantissa * 2^-24, exact in float */
    float v = (float)mantissa * 5.9604644775390625e-08f;
    return sign ? -v : v;
  }
  float value;
  memcpy(&value, &out, sizeof value);
  return value;
}

STK_MATH_FN uint16_t stk__math_half_store(float value) {
  uint32_t bits;
  memcpy(&bits, &value, sizeof bits);
  uint32_t sign = (bits >> 16) & 0x8000u, mag = bits & 0x7fffffffu;
  if (mag >= 0x7f800000u) return (uint16_t)(sign | 0x7c00u | (mag > 0x7f800000u ? 0x200u : 0u));
  if (mag >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u);
  if (mag < 0x38800000u) {
    if (mag < 0x33000000u) return (uint16_t)sign;
    uint32_t exponent = mag >> 23, mantissa = (mag & 0x7fffffu) | 0x800000u;
    uint32_t shift = 126u - exponent, result = mantissa >> shift;
    uint32_t rest = mantissa & ((1u << shift) - 1u), half = 1u << (shift - 1u);
    if (rest > half || (rest == half && (result & 1u))) result++;
    return (uint16_t)(sign | result);
  }
  uint32_t result = ((((mag >> 23) - 112u) << 10) | ((mag & 0x7fffffu) >> 13)), rest = mag & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (result & 1u))) result++;
  return (uint16_t)(sign | result);
}

/* ---- load / store ------------------------------------------------------------------------------ */
/* Element i of `data` (of `dtype`) as a value of compute kind `kind`. */
STK_MATH_FN stk__math_value stk__math_load(const void *data, int dtype, size_t i, int kind) {
  stk__math_value v;
  int64_t si = 0;
  uint64_t ui = 0;
  double f = 0;
  int is_float = 0, is_unsigned = 0;
  switch (dtype) {
    case STK_DTYPE_UINT8: case STK_DTYPE_BOOL: ui = ((const uint8_t *)data)[i]; is_unsigned = 1; break;
    case STK_DTYPE_UINT16: ui = ((const uint16_t *)data)[i]; is_unsigned = 1; break;
    case STK_DTYPE_UINT32: ui = ((const uint32_t *)data)[i]; is_unsigned = 1; break;
    case STK_DTYPE_UINT64: ui = ((const uint64_t *)data)[i]; is_unsigned = 1; break;
    case STK_DTYPE_INT8: si = ((const int8_t *)data)[i]; break;
    case STK_DTYPE_INT16: si = ((const int16_t *)data)[i]; break;
    case STK_DTYPE_INT32: si = ((const int32_t *)data)[i]; break;
    case STK_DTYPE_INT64: si = ((const int64_t *)data)[i]; break;
    case STK_DTYPE_FLOAT16: f = stk__math_half_load(((const uint16_t *)data)[i]); is_float = 1; break;
    case STK_DTYPE_FLOAT32: f = ((const float *)data)[i]; is_float = 1; break;
    default: f = ((const double *)data)[i]; is_float = 1; break;
  }
  if (kind == STK__MK_F32) {
    v.f32 = is_float ? (float)f : (is_unsigned ? (float)ui : (float)si);
  } else if (kind == STK__MK_F64) {
    v.f64 = is_float ? f : (is_unsigned ? (double)ui : (double)si);
  } else if (kind == STK__MK_UINT) {
    v.u = is_unsigned ? ui : (uint64_t)si;
  } else {
    v.i = is_unsigned ? (int64_t)ui : si;
  }
  return v;
}

/* Stores v (of compute kind `kind`) as element i of `data` (of `dtype`): integers truncate to the
 * type's width (wrap-around), bool is v != 0. */
STK_MATH_FN void stk__math_store(void *data, int dtype, size_t i, int kind, stk__math_value v) {
  uint64_t bits = kind == STK__MK_UINT ? v.u : (uint64_t)v.i;
  switch (dtype) {
    case STK_DTYPE_BOOL: ((uint8_t *)data)[i] = (uint8_t)(bits != 0); break;
    case STK_DTYPE_UINT8: ((uint8_t *)data)[i] = (uint8_t)bits; break;
    case STK_DTYPE_UINT16: ((uint16_t *)data)[i] = (uint16_t)bits; break;
    case STK_DTYPE_UINT32: ((uint32_t *)data)[i] = (uint32_t)bits; break;
    case STK_DTYPE_UINT64: ((uint64_t *)data)[i] = bits; break;
    case STK_DTYPE_INT8: ((int8_t *)data)[i] = (int8_t)(uint8_t)bits; break;
    case STK_DTYPE_INT16: ((int16_t *)data)[i] = (int16_t)(uint16_t)bits; break;
    case STK_DTYPE_INT32: ((int32_t *)data)[i] = (int32_t)(uint32_t)bits; break;
    case STK_DTYPE_INT64: ((int64_t *)data)[i] = (int64_t)bits; break;
    case STK_DTYPE_FLOAT16: ((uint16_t *)data)[i] = stk__math_half_store(v.f32); break;
    case STK_DTYPE_FLOAT32: ((float *)data)[i] = v.f32; break;
    default: ((double *)data)[i] = v.f64; break;
  }
}

/* ---- operations -------------------------------------------------------------------------------- */
STK_MATH_FN int64_t stk__math_ipow(int64_t base, int64_t exponent) {
  if (exponent < 0) return base == 1 ? 1 : (base == -1 ? ((exponent & 1) ? -1 : 1) : 0);
  uint64_t result = 1, b = (uint64_t)base;
  while (exponent) {
    if (exponent & 1) result *= b;
    b *= b;
    exponent >>= 1;
  }
  return (int64_t)result;
}

STK_MATH_FN uint64_t stk__math_upow(uint64_t base, uint64_t exponent) {
  uint64_t result = 1;
  while (exponent) {
    if (exponent & 1) result *= base;
    base *= base;
    exponent >>= 1;
  }
  return result;
}

/* A floating function of x, evaluated in double (see the file comment). */
STK_MATH_FN double stk__math_float_fn(int op, double x) {
  switch (op) {
    case STK__MATH_FABS: return fabs(x);
    case STK__MATH_SQRT: return sqrt(x);
    case STK__MATH_RSQRT: return 1.0 / sqrt(x);
    case STK__MATH_CBRT: return cbrt(x);
    case STK__MATH_EXP: return exp(x);
    case STK__MATH_LOG: return log(x);
    case STK__MATH_LOG2: return log2(x);
    case STK__MATH_LOG10: return log10(x);
    case STK__MATH_SIN: return sin(x);
    case STK__MATH_COS: return cos(x);
    case STK__MATH_TAN: return tan(x);
    case STK__MATH_ASIN: return asin(x);
    case STK__MATH_ACOS: return acos(x);
    case STK__MATH_ATAN: return atan(x);
    case STK__MATH_SINH: return sinh(x);
    case STK__MATH_COSH: return cosh(x);
    case STK__MATH_TANH: return tanh(x);
    case STK__MATH_FLOOR: return floor(x);
    case STK__MATH_CEIL: return ceil(x);
    case STK__MATH_NEG: return -x;
    case STK__MATH_ABS: return fabs(x);
    default: return x; /* POS */
  }
}

STK_MATH_FN double stk__math_float_binary(int op, double a, double b) {
  switch (op) {
    case STK__MATH_ADD: return a + b;
    case STK__MATH_SUB: return a - b;
    case STK__MATH_MUL: return a * b;
    case STK__MATH_DIV: case STK__MATH_FLOORDIV: return a / b;
    case STK__MATH_MOD: return fmod(a, b);
    case STK__MATH_MIN: return b < a ? b : a;
    case STK__MATH_MAX: return b > a ? b : a;
    case STK__MATH_ATAN2: return atan2(a, b);
    default: return pow(a, b); /* POW, FPOW */
  }
}

/* a <op> b for the comparisons (1/0). */
STK_MATH_FN int stk__math_compare(int op, int kind, stk__math_value a, stk__math_value b) {
  int lt, eq;
  if (kind == STK__MK_F32) lt = a.f32 < b.f32, eq = a.f32 == b.f32;
  else if (kind == STK__MK_F64) lt = a.f64 < b.f64, eq = a.f64 == b.f64;
  else if (kind == STK__MK_UINT) lt = a.u < b.u, eq = a.u == b.u;
  else lt = a.i < b.i, eq = a.i == b.i;
  if (kind == STK__MK_F32 || kind == STK__MK_F64) { /* NaN compares unequal and unordered */
    int gt = kind == STK__MK_F32 ? a.f32 > b.f32 : a.f64 > b.f64;
    switch (op) {
      case STK__MATH_EQ: return eq;
      case STK__MATH_NE: return !eq;
      case STK__MATH_LT: return lt;
      case STK__MATH_LE: return lt || eq;
      case STK__MATH_GT: return gt;
      default: return gt || eq;
    }
  }
  switch (op) {
    case STK__MATH_EQ: return eq;
    case STK__MATH_NE: return !eq;
    case STK__MATH_LT: return lt;
    case STK__MATH_LE: return lt || eq;
    case STK__MATH_GT: return !lt && !eq;
    default: return !lt;
  }
}

/* Binary (and unary, b unused) operations on integers in int64 with wrap-around. Division and
 * remainder by zero give 0 (no trap); INT64_MIN / -1 wraps. */
STK_MATH_FN int64_t stk__math_int_op(int op, int64_t a, int64_t b) {
  switch (op) {
    case STK__MATH_ADD: return (int64_t)((uint64_t)a + (uint64_t)b);
    case STK__MATH_SUB: return (int64_t)((uint64_t)a - (uint64_t)b);
    case STK__MATH_MUL: return (int64_t)((uint64_t)a * (uint64_t)b);
    case STK__MATH_FLOORDIV: return b == 0 ? 0 : (b == -1 ? (int64_t)(0 - (uint64_t)a) : a / b);
    case STK__MATH_MOD: return (b == 0 || b == -1) ? 0 : a % b;
    case STK__MATH_MIN: return b < a ? b : a;
    case STK__MATH_MAX: return b > a ? b : a;
    case STK__MATH_POW: return stk__math_ipow(a, b);
    case STK__MATH_BITAND: return a & b;
    case STK__MATH_BITOR: return a | b;
    case STK__MATH_BITXOR: return a ^ b;
    case STK__MATH_NEG: return (int64_t)(0 - (uint64_t)a);
    case STK__MATH_ABS: return a < 0 ? (int64_t)(0 - (uint64_t)a) : a;
    case STK__MATH_INVERT: return ~a;
    default: return a; /* POS, FLOOR, CEIL */
  }
}

STK_MATH_FN uint64_t stk__math_uint_op(int op, uint64_t a, uint64_t b) {
  switch (op) {
    case STK__MATH_ADD: return a + b;
    case STK__MATH_SUB: return a - b;
    case STK__MATH_MUL: return a * b;
    case STK__MATH_FLOORDIV: return b == 0 ? 0 : a / b;
    case STK__MATH_MOD: return b == 0 ? 0 : a % b;
    case STK__MATH_MIN: return b < a ? b : a;
    case STK__MATH_MAX: return b > a ? b : a;
    case STK__MATH_POW: return stk__math_upow(a, b);
    case STK__MATH_BITAND: return a & b;
    case STK__MATH_BITOR: return a | b;
    case STK__MATH_BITXOR: return a ^ b;
    case STK__MATH_NEG: return 0 - a;
    case STK__MATH_INVERT: return ~a;
    default: return a; /* POS, ABS, FLOOR, CEIL */
  }
}

/* a <op> b (b ignored by unary operations) in compute kind `kind`; not for comparisons or clamp. */
STK_MATH_FN stk__math_value stk__math_apply(int op, int kind, stk__math_value a, stk__math_value b) {
  stk__math_value r;
  int unary = op >= STK__MATH_FIRST_UNARY;
  if (kind == STK__MK_F32) {
    /* + - * / are single IEEE float operations; the rest go through double (one rounding). */
    switch (op) {
      case STK__MATH_ADD: r.f32 = a.f32 + b.f32; break;
      case STK__MATH_SUB: r.f32 = a.f32 - b.f32; break;
      case STK__MATH_MUL: r.f32 = a.f32 * b.f32; break;
      case STK__MATH_DIV: case STK__MATH_FLOORDIV: r.f32 = a.f32 / b.f32; break;
      case STK__MATH_NEG: r.f32 = -a.f32; break;
      default:
        r.f32 = (float)(unary ? stk__math_float_fn(op, a.f32) : stk__math_float_binary(op, a.f32, b.f32));
    }
  } else if (kind == STK__MK_F64) {
    r.f64 = unary ? stk__math_float_fn(op, a.f64) : stk__math_float_binary(op, a.f64, b.f64);
  } else if (kind == STK__MK_UINT) {
    r.u = stk__math_uint_op(op, a.u, b.u);
  } else {
    r.i = stk__math_int_op(op, a.i, b.i);
  }
  return r;
}

/* The parameters one element needs, the same for a whole batch (passed by value to the kernel). */
typedef struct stk__math_plan {
  int op;
  int kind;       /* stk__math_kind the operands are computed in */
  int a_dtype;    /* left operand's dtype (the constant's when it is on the left) */
  int b_dtype;    /* right operand's dtype */
  int out_dtype;  /* result dtype */
  int constant;   /* 0: both operands are tensors; 1: a is the constant; 2: b is the constant */
  stk__math_value constant_value; /* in compute kind */
  stk__math_value lo, hi;         /* clamp's bounds, in compute kind */
} stk__math_plan;

/* Output element i from operand elements ia (of a) and ib (of b): a and b point at the tensors'
 * data (NULL for the constant operand or b of a unary operation). */
STK_MATH_FN void stk__math_element(const stk__math_plan *p, const void *a, size_t ia, const void *b, size_t ib,
                                   void *out, size_t i) {
  stk__math_value x = p->constant == 1 ? p->constant_value : stk__math_load(a, p->a_dtype, ia, p->kind);
  stk__math_value y;
  y.i = 0;
  if (p->op < STK__MATH_FIRST_UNARY)
    y = p->constant == 2 ? p->constant_value : stk__math_load(b, p->b_dtype, ib, p->kind);
  stk__math_value r;
  if (stk__math_is_compare(p->op)) {
    r.i = stk__math_compare(p->op, p->kind, x, y);
    stk__math_store(out, p->out_dtype, i, STK__MK_INT, r);
    return;
  }
  if (p->op == STK__MATH_CLAMP) {
    r = stk__math_apply(STK__MATH_MIN, p->kind, stk__math_apply(STK__MATH_MAX, p->kind, x, p->lo), p->hi);
  } else {
    r = stk__math_apply(p->op, p->kind, x, y);
  }
  stk__math_store(out, p->out_dtype, i, p->kind, r);
}

#endif
