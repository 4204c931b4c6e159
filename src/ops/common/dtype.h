/* src/ops/common/dtype.h: DALI-style dtype names and the IEEE binary16 conversions shared by
 * cast, crop_mirror_normalize (CPU reference) and the tests. C-callable from .cu files; the inline
 * binary16 conversions are host and device functions (cast's kernel uses them). */
#ifndef STOKER_OPS_COMMON_DTYPE_H
#define STOKER_OPS_COMMON_DTYPE_H

#include <stdint.h>
#include <string.h>

#include "core/op.h"
#include "ops/common/elem_access.h"

#ifdef __cplusplus
extern "C" {
#endif

/* DALI-style dtype names, lower or upper case: "float"/"float32", "float16"/"half", "float64"/"double",
 * "uint8", "uint16", "uint32", "uint64", "int8", "int16", "int32", "int64", "bool" (and DALI's
 * "DALIDataType.FLOAT" spelling) -> stk_dtype. STK_EINVAL otherwise. */
STK_INTERNAL stk_status stk__dtype_parse(const char *text, stk_dtype *out);
/* "uint8, int8, ..., float64, bool": every name stk__dtype_parse takes, for messages. */
#define STK__DTYPE_NAMES "uint8, uint16, uint32, uint64, int8, int16, int32, int64, float16, float, float64 or bool"

/* Element i of a tensor of `dtype` as double (exact for every type but 64-bit integers beyond 2^53). */
STK_INTERNAL double stk__dtype_load(const void *data, stk_dtype dtype, size_t i);
/* Stores v as element i of `dtype` the way cast converts: to integers rounded to nearest (halves away
 * from zero) and saturated, NaN -> 0; bool is v != 0; float16 rounds to nearest even. */
STK_INTERNAL void stk__dtype_store(void *data, stk_dtype dtype, size_t i, double v);
/* The largest value of an integer dtype, 1.0 for floating types (DALI's "output range"). */
STK_INTERNAL double stk__dtype_range_max(stk_dtype dtype);
/* 1 for the floating types (float16/32/64). */
static inline int stk__dtype_is_float(stk_dtype dtype) {
  return dtype == STK_DTYPE_FLOAT32 || dtype == STK_DTYPE_FLOAT16 || dtype == STK_DTYPE_FLOAT64;
}

/* IEEE binary16 from float, round-to-nearest-even (shared by CPU code and tests). */
STK_INTERNAL uint16_t stk__float_to_half(float value);
/* float from IEEE binary16 (exact; shared by cast and tests). */
STK_INTERNAL float stk__half_to_float(uint16_t bits);

/* stk__float_to_half, inlined into per-element loops (crop_mirror_normalize, cast on CPU and GPU). */
STK_ELEM_HD static inline __attribute__((always_inline)) uint16_t stk__half_from_float_inline(float value) {
  uint32_t bits;
  memcpy(&bits, &value, sizeof bits);
  uint32_t sign = (bits >> 16) & 0x8000u;
  uint32_t mag = bits & 0x7fffffffu;
  if (mag >= 0x7f800000u) return (uint16_t)(sign | 0x7c00u | (mag > 0x7f800000u ? 0x200u : 0u)); /* inf/NaN */
  if (mag >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u); /* >= 65520 rounds to infinity */
  if (mag < 0x38800000u) {                                   /* below 2^-14: subnormal half */
    if (mag < 0x33000000u) return (uint16_t)sign;            /* below 2^-25: rounds to zero */
    uint32_t exponent = mag >> 23;
    uint32_t mantissa = (mag & 0x7fffffu) | 0x800000u;
    uint32_t shift = 126u - exponent; /* value / 2^-24 = mantissa >> shift */
    uint32_t result = mantissa >> shift;
    uint32_t rest = mantissa & ((1u << shift) - 1u), half = 1u << (shift - 1u);
    if (rest > half || (rest == half && (result & 1u))) result++;
    return (uint16_t)(sign | result);
  }
  uint32_t result = ((((mag >> 23) - 112u) << 10) | ((mag & 0x7fffffu) >> 13));
  uint32_t rest = mag & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (result & 1u))) result++;
  return (uint16_t)(sign | result);
}

/* stk__half_to_float, inlined (cast on CPU and GPU): exact; NaN keeps its payload bits. */
STK_ELEM_HD static inline __attribute__((always_inline)) float stk__half_to_float_inline(uint16_t bits) {
  uint32_t sign = (uint32_t)(bits & 0x8000u) << 16;
  uint32_t exponent = (bits >> 10) & 0x1fu, mantissa = bits & 0x3ffu;
  uint32_t out;
  if (exponent == 0x1fu) {
    out = sign | 0x7f800000u | (mantissa << 13); /* inf / NaN */
  } else if (exponent != 0) {
    out = sign | ((exponent + 112u) << 23) | (mantissa << 13);
  } else if (mantissa == 0) {
    out = sign;
  } else { /* subnormal half: normalise */
    uint32_t e = 113u;
    while (!(mantissa & 0x400u)) {
      mantissa <<= 1;
      e--;
    }
    out = sign | (e << 23) | ((mantissa & 0x3ffu) << 13);
  }
  float value;
  memcpy(&value, &out, sizeof value);
  return value;
}

#ifdef __cplusplus
}
#endif
#endif
