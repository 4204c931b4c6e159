/* src/ops/common/dtype.c: dtype names (DALI's spellings) and the IEEE binary16 conversions shared
 * by cast, crop_mirror_normalize, the random and colour operators and the tests; element load/store
 * with cast's rounding and saturation. Hot path: the conversions run per element. */
#include <math.h>
#include <string.h>

#include "ops/common/dtype.h"
#include "ops/common/elem_access.h"

uint16_t stk__float_to_half(float value) { return stk__half_from_float_inline(value); }

float stk__half_to_float(uint16_t bits) { return stk__half_to_float_inline(bits); }

stk_status stk__dtype_parse(const char *text, stk_dtype *out) {
  static const struct {
    const char *name;
    stk_dtype dtype;
  } names[] = {{"float", STK_DTYPE_FLOAT32},   {"float32", STK_DTYPE_FLOAT32}, {"float16", STK_DTYPE_FLOAT16},
               {"half", STK_DTYPE_FLOAT16},    {"float64", STK_DTYPE_FLOAT64}, {"double", STK_DTYPE_FLOAT64},
               {"uint8", STK_DTYPE_UINT8},     {"uint16", STK_DTYPE_UINT16},   {"uint32", STK_DTYPE_UINT32},
               {"uint64", STK_DTYPE_UINT64},   {"int8", STK_DTYPE_INT8},       {"int16", STK_DTYPE_INT16},
               {"int32", STK_DTYPE_INT32},     {"int64", STK_DTYPE_INT64},     {"bool", STK_DTYPE_BOOL}};
  if (!text) return STK_EINVAL;
  if (strncmp(text, "DALIDataType.", 13) == 0) text += 13;
  char lower[16];
  size_t n = strlen(text);
  if (n == 0 || n >= sizeof lower) return STK_EINVAL;
  for (size_t i = 0; i <= n; i++) lower[i] = (char)(text[i] >= 'A' && text[i] <= 'Z' ? text[i] - 'A' + 'a' : text[i]);
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    if (strcmp(lower, names[i].name) == 0) {
      *out = names[i].dtype;
      return STK_OK;
    }
  return STK_EINVAL;
}

/* Every dtype but float16 through the loads and stores kernels use too (ops/common/elem_access.h),
 * so the CPU and the GPU convert alike. */
double stk__dtype_load(const void *data, stk_dtype dtype, size_t i) {
  if (dtype == STK_DTYPE_FLOAT16) return stk__half_to_float(((const uint16_t *)data)[i]);
  return stk__elem_load(data, dtype, (int64_t)i);
}

void stk__dtype_store(void *data, stk_dtype dtype, size_t i, double v) {
  if (dtype == STK_DTYPE_FLOAT16)
    ((uint16_t *)data)[i] = stk__float_to_half((float)v);
  else
    stk__elem_store(data, dtype, (int64_t)i, v);
}

double stk__dtype_range_max(stk_dtype dtype) {
  switch (dtype) {
    case STK_DTYPE_UINT8:
      return 255.0;
    case STK_DTYPE_INT8:
      return 127.0;
    case STK_DTYPE_INT16:
      return 32767.0;
    case STK_DTYPE_UINT16:
      return 65535.0;
    case STK_DTYPE_INT32:
      return 2147483647.0;
    case STK_DTYPE_UINT32:
      return 4294967295.0;
    case STK_DTYPE_INT64:
      return 9223372036854775807.0;
    case STK_DTYPE_UINT64:
      return 18446744073709551615.0;
    default:
      return 1.0;
  }
}
