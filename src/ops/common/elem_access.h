/* src/ops/common/elem_access.h: element load and store of any dtype as double, written once for
 * CPU loops and CUDA kernels (normalize, gaussian_blur, one_hot): loads are exact (64-bit integers
 * beyond 2^53 round); stores convert the way cast does (ops/common/dtype.c): integers rounded to
 * nearest, halves away from zero, saturated, NaN -> 0; bool is v != 0. float16 is handled on the
 * host only (stk__elem_supported_on_gpu says which types a kernel takes). Inline, hot path. */
#ifndef STOKER_OPS_COMMON_ELEM_ACCESS_H
#define STOKER_OPS_COMMON_ELEM_ACCESS_H

#include <math.h>
#include <stdint.h>

#include "stoker/pipeline.h"

#ifdef __CUDACC__
#define STK_ELEM_HD __host__ __device__
#else
#define STK_ELEM_HD
#endif

/* 1 for the dtypes the device-side load/store below handle (all but float16). */
static inline int stk__elem_supported_on_gpu(stk_dtype dtype) { return dtype != STK_DTYPE_FLOAT16; }

STK_ELEM_HD static inline double stk__elem_load(const void *data, stk_dtype dtype, int64_t i) {
  switch (dtype) {
    case STK_DTYPE_UINT8:
    case STK_DTYPE_BOOL:
      return ((const uint8_t *)data)[i];
    case STK_DTYPE_INT8:
      return ((const int8_t *)data)[i];
    case STK_DTYPE_INT16:
      return ((const int16_t *)data)[i];
    case STK_DTYPE_UINT16:
      return ((const uint16_t *)data)[i];
    case STK_DTYPE_INT32:
      return ((const int32_t *)data)[i];
    case STK_DTYPE_UINT32:
      return ((const uint32_t *)data)[i];
    case STK_DTYPE_INT64:
      return (double)((const int64_t *)data)[i];
    case STK_DTYPE_UINT64:
      return (double)((const uint64_t *)data)[i];
    case STK_DTYPE_FLOAT32:
      return ((const float *)data)[i];
    case STK_DTYPE_FLOAT64:
      return ((const double *)data)[i];
    default:
      return 0; /* float16: host code uses stk__dtype_load */
  }
}

STK_ELEM_HD static inline double stk__elem_round_saturate(double v, double lo, double hi) {
  if (v != v) return 0;
  v = round(v);
  return v < lo ? lo : (v > hi ? hi : v);
}

STK_ELEM_HD static inline void stk__elem_store(void *data, stk_dtype dtype, int64_t i, double v) {
  switch (dtype) {
    case STK_DTYPE_UINT8:
      ((uint8_t *)data)[i] = (uint8_t)stk__elem_round_saturate(v, 0, 255);
      break;
    case STK_DTYPE_BOOL:
      ((uint8_t *)data)[i] = v != 0;
      break;
    case STK_DTYPE_INT8:
      ((int8_t *)data)[i] = (int8_t)stk__elem_round_saturate(v, -128, 127);
      break;
    case STK_DTYPE_INT16:
      ((int16_t *)data)[i] = (int16_t)stk__elem_round_saturate(v, -32768, 32767);
      break;
    case STK_DTYPE_UINT16:
      ((uint16_t *)data)[i] = (uint16_t)stk__elem_round_saturate(v, 0, 65535);
      break;
    case STK_DTYPE_INT32:
      ((int32_t *)data)[i] = (int32_t)stk__elem_round_saturate(v, -2147483648.0, 2147483647.0);
      break;
    case STK_DTYPE_UINT32:
      ((uint32_t *)data)[i] = (uint32_t)stk__elem_round_saturate(v, 0, 4294967295.0);
      break;
    case STK_DTYPE_INT64:
      ((int64_t *)data)[i] = (int64_t)stk__elem_round_saturate(v, -9223372036854775808.0, 9223372036854774784.0);
      break;
    case STK_DTYPE_UINT64:
      ((uint64_t *)data)[i] = (uint64_t)stk__elem_round_saturate(v, 0, 18446744073709549568.0);
      break;
    case STK_DTYPE_FLOAT32:
      ((float *)data)[i] = (float)v;
      break;
    case STK_DTYPE_FLOAT64:
      ((double *)data)[i] = v;
      break;
    default:
      break; /* float16: host code uses stk__dtype_store */
  }
}

#endif
