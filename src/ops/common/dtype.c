/* src/ops/common/dtype.c: dtype names (DALI's spellings) and the IEEE binary16 conversions shared
 * by cast, crop_mirror_normalize and the tests. Hot path: the conversions run per element. */
#include <string.h>

#include "ops/common/dtype.h"

uint16_t stk__float_to_half(float value) { return stk__half_from_float_inline(value); }

float stk__half_to_float(uint16_t bits) {
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

stk_status stk__dtype_parse(const char *text, stk_dtype *out) {
  static const struct {
    const char *name;
    stk_dtype dtype;
  } names[] = {{"float", STK_DTYPE_FLOAT32},   {"float32", STK_DTYPE_FLOAT32}, {"FLOAT", STK_DTYPE_FLOAT32},
               {"float16", STK_DTYPE_FLOAT16}, {"FLOAT16", STK_DTYPE_FLOAT16}, {"half", STK_DTYPE_FLOAT16},
               {"uint8", STK_DTYPE_UINT8},     {"UINT8", STK_DTYPE_UINT8},     {"int32", STK_DTYPE_INT32},
               {"INT32", STK_DTYPE_INT32},     {"int64", STK_DTYPE_INT64},     {"INT64", STK_DTYPE_INT64},
               {"bool", STK_DTYPE_BOOL},       {"BOOL", STK_DTYPE_BOOL}};
  if (!text) return STK_EINVAL;
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    if (strcmp(text, names[i].name) == 0) {
      *out = names[i].dtype;
      return STK_OK;
    }
  return STK_EINVAL;
}
