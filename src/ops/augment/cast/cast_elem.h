/* src/ops/augment/cast/cast_elem.h: `cast`'s argument parse and one element of it, written once
 * for the CPU loop (cast.c) and the CUDA kernel (cast_gpu.cu), so both give the same bytes for every (input, output) dtype
 * pair: the same dtype is a bit copy (NaN payloads and 64-bit integers kept); int64 -> int32
 * saturates exactly; every other pair goes through double (exact but for 64-bit integers beyond
 * 2^53) and stores the way ops/common/elem_access.h does: integers rounded to nearest (halves away
 * from zero) and saturated, NaN -> 0, bool is value != 0; float16 is read exactly and written from
 * (float)value with round-to-nearest-even. Inline, hot path (per element). */
#ifndef STOKER_OPS_AUGMENT_CAST_CAST_ELEM_H
#define STOKER_OPS_AUGMENT_CAST_CAST_ELEM_H

#include <stdint.h>

#include "core/op.h"
#include "ops/common/dtype.h"
#include "ops/common/elem_access.h"

#ifdef __cplusplus
extern "C" {
#endif
/* The output dtype from argument 'dtype'; STK_EINVAL naming the argument and the names it takes. */
STK_INTERNAL stk_status stk__cast_parse(const stk__op *op, stk_dtype *dtype, char *err, size_t err_size);
#ifdef __cplusplus
}
#endif

/* Element i of `src` (dtype `from`) converted into element i of `dst` (dtype `to`). */
STK_ELEM_HD static inline void stk__cast_elem(const void *src, stk_dtype from, void *dst, stk_dtype to, int64_t i) {
  if (from == to) {
    switch (to) {
      case STK_DTYPE_UINT8:
      case STK_DTYPE_INT8:
      case STK_DTYPE_BOOL:
        ((uint8_t *)dst)[i] = ((const uint8_t *)src)[i];
        return;
      case STK_DTYPE_INT16:
      case STK_DTYPE_UINT16:
      case STK_DTYPE_FLOAT16:
        ((uint16_t *)dst)[i] = ((const uint16_t *)src)[i];
        return;
      case STK_DTYPE_INT32:
      case STK_DTYPE_UINT32:
      case STK_DTYPE_FLOAT32:
        ((uint32_t *)dst)[i] = ((const uint32_t *)src)[i];
        return;
      default:
        ((uint64_t *)dst)[i] = ((const uint64_t *)src)[i];
        return;
    }
  }
  if (from == STK_DTYPE_INT64 && to == STK_DTYPE_INT32) { /* exact, no double round trip */
    const int64_t v = ((const int64_t *)src)[i];
    ((int32_t *)dst)[i] = v < INT32_MIN ? INT32_MIN : (v > INT32_MAX ? INT32_MAX : (int32_t)v);
    return;
  }
  const double v = from == STK_DTYPE_FLOAT16 ? (double)stk__half_to_float_inline(((const uint16_t *)src)[i])
                                             : stk__elem_load(src, from, i);
  if (to == STK_DTYPE_FLOAT16) ((uint16_t *)dst)[i] = stk__half_from_float_inline((float)v);
  else stk__elem_store(dst, to, i, v);
}

#endif
