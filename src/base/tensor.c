/* src/base/tensor.c: the dtype names and sizes of the public API, a host tensor's metadata
 * (shape, layout, placement in a caller's buffer), the scalar read of argument inputs and the
 * dense-list test. Pure bookkeeping: no allocation (src/core/tensor_memory.c grows and frees
 * tensors). Hot path: set_shape/place run per sample per operator. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/tensor.h"

size_t stk_dtype_size(stk_dtype dtype) {
  switch (dtype) {
    case STK_DTYPE_UINT8:
      return 1;
    case STK_DTYPE_BOOL:
      return 1;
    case STK_DTYPE_INT32:
      return 4;
    case STK_DTYPE_INT64:
      return 8;
    case STK_DTYPE_FLOAT32:
      return 4;
    case STK_DTYPE_FLOAT16:
      return 2;
    case STK_DTYPE_INT8:
      return 1;
    case STK_DTYPE_INT16:
      return 2;
    case STK_DTYPE_UINT16:
      return 2;
    case STK_DTYPE_UINT32:
      return 4;
    case STK_DTYPE_UINT64:
      return 8;
    case STK_DTYPE_FLOAT64:
      return 8;
  }
  return 0;
}

const char *stk_dtype_name(stk_dtype dtype) {
  switch (dtype) {
    case STK_DTYPE_UINT8:
      return "uint8";
    case STK_DTYPE_BOOL:
      return "bool";
    case STK_DTYPE_INT32:
      return "int32";
    case STK_DTYPE_INT64:
      return "int64";
    case STK_DTYPE_FLOAT32:
      return "float";
    case STK_DTYPE_FLOAT16:
      return "float16";
    case STK_DTYPE_INT8:
      return "int8";
    case STK_DTYPE_INT16:
      return "int16";
    case STK_DTYPE_UINT16:
      return "uint16";
    case STK_DTYPE_UINT32:
      return "uint32";
    case STK_DTYPE_UINT64:
      return "uint64";
    case STK_DTYPE_FLOAT64:
      return "float64";
  }
  return "unknown";
}

size_t stk__tensor_numel(const stk__tensor *t) {
  size_t n = 1;
  for (int d = 0; d < t->ndim; d++) n *= (size_t)t->shape[d];
  return n;
}

/* A host tensor's metadata: dtype, shape, layout, nbytes (its storage is the caller's business). */
void stk__tensor_set_shape(stk__tensor *t, stk_dtype dtype, int ndim, const int64_t *shape, const char *layout,
                      size_t bytes) {
  t->dtype = dtype;
  t->ndim = ndim;
  for (int d = 0; d < ndim; d++) t->shape[d] = shape[d];
  /* per sample on the hot path: a bounded copy (snprintf was ~1% of the readers' samples in a profile) */
  size_t n = 0;
  for (; layout && layout[n] && n + 1 < sizeof t->layout; n++) t->layout[n] = layout[n];
  t->layout[n] = '\0';
  t->nbytes = bytes;
  t->device = STK_DEVICE_CPU;
}

void stk__tensor_unplace(stk__tensor *t) {
  if (!t->placed) return;
  t->data = t->own_data;
  t->capacity = t->own_capacity;
  t->own_data = NULL;
  t->own_capacity = 0;
  t->nbytes = 0;
  t->placed = 0;
}

void stk__tensor_place(stk__tensor *t, void *place, stk_dtype dtype, int ndim, const int64_t *shape, const char *layout,
                       size_t bytes) {
  stk__tensor_unplace(t);
  t->own_data = t->data;
  t->own_capacity = t->capacity;
  t->placed = 1;
  t->data = place;
  t->capacity = 0;
  stk__tensor_set_shape(t, dtype, ndim, shape, layout, bytes);
}

double stk__tensor_scalar(const stk__tensor *t) {
  if (!t || !t->data || t->nbytes == 0) return 0.0;
  switch (t->dtype) {
    case STK_DTYPE_UINT8:
    case STK_DTYPE_BOOL:
      return (double)*(const uint8_t *)t->data;
    case STK_DTYPE_INT32:
      return (double)*(const int32_t *)t->data;
    case STK_DTYPE_INT64:
      return (double)*(const int64_t *)t->data;
    case STK_DTYPE_FLOAT32:
      return (double)*(const float *)t->data;
    case STK_DTYPE_INT8:
      return (double)*(const int8_t *)t->data;
    case STK_DTYPE_INT16:
      return (double)*(const int16_t *)t->data;
    case STK_DTYPE_UINT16:
      return (double)*(const uint16_t *)t->data;
    case STK_DTYPE_UINT32:
      return (double)*(const uint32_t *)t->data;
    case STK_DTYPE_UINT64:
      return (double)*(const uint64_t *)t->data;
    case STK_DTYPE_FLOAT64:
      return *(const double *)t->data;
    case STK_DTYPE_FLOAT16: {
      uint16_t h = *(const uint16_t *)t->data;
      int sign = h >> 15, exp = (h >> 10) & 31, man = h & 1023;
      double v = exp == 0 ? man / 1024.0 / 16384.0 : (1.0 + man / 1024.0) * (double)(1u << exp) / 32768.0;
      if (exp == 31) v = 65504.0;
      return sign ? -v : v;
    }
  }
  return 0.0;
}

void stk__tensor_take_shape(stk__tensor *dst, const stk__tensor *src, stk_device_type device) {
  dst->dtype = src->dtype;
  dst->ndim = src->ndim;
  memcpy(dst->shape, src->shape, sizeof dst->shape);
  memcpy(dst->layout, src->layout, sizeof dst->layout);
  dst->nbytes = src->nbytes;
  dst->device = device;
}

int stk__tensor_list_is_dense(const stk__tensor_list *l, int n) {
  if (!l->samples || n < 0 || l->samples[0].ndim + 1 > STK_MAX_DIMS) return 0;
  const stk__tensor *s0 = &l->samples[0];
  const uint8_t *base = l->base ? (const uint8_t *)l->base : (const uint8_t *)s0->data;
  for (int s = 0; s < n; s++) {
    const stk__tensor *t = &l->samples[s];
    if (t->ndim != s0->ndim || t->dtype != s0->dtype) return 0;
    for (int d = 0; d < s0->ndim; d++)
      if (t->shape[d] != s0->shape[d]) return 0;
    if (s0->nbytes && (const uint8_t *)t->data != base + (size_t)s * s0->nbytes) return 0;
  }
  return 1;
}
