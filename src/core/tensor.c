/* src/core/tensor.c: host tensor sizing (grow-only, counted), the dtype names and sizes of the
 * public API and the scalar read of argument inputs. Pinned host tensors take their memory from
 * the device runtime's pinned pool (src/device/device.h); nothing here calls into src/ops.
 * Hot path: stk__tensor_resize is called per sample per operator; it allocates only when a
 * sample is larger than anything that buffer held before, and then checks the pipeline's host
 * memory budget (one atomic add) when the buffer counts in one. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/op.h"
#include "core/tensor.h"
#include "device/device.h"

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
static void set_shape(stk__tensor *t, stk_dtype dtype, int ndim, const int64_t *shape, const char *layout,
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
  set_shape(t, dtype, ndim, shape, layout, bytes);
}

stk_status stk__sample_output_resize(stk__sample_ctx *ctx, stk__tensor *const *outputs, int output, stk_dtype dtype,
                                     int ndim, const int64_t *shape, const char *layout) {
  stk__tensor *t = outputs[output];
  if (ctx && ctx->dense_place && ndim >= 0 && ndim <= STK_MAX_DIMS) {
    size_t bytes = stk_dtype_size(dtype);
    int ok = 1;
    for (int d = 0; d < ndim && ok; d++) {
      ok = shape[d] >= 0 && (shape[d] == 0 || bytes <= SIZE_MAX / (size_t)shape[d]);
      if (ok) bytes *= (size_t)shape[d];
    }
    void *place = ok && bytes ? ctx->dense_place(ctx->dense_place_arg, output, dtype, ndim, shape, bytes) : NULL;
    if (place) {
      stk__tensor_place(t, place, dtype, ndim, shape, layout, bytes);
      return STK_OK;
    }
  }
  return stk__tensor_resize(t, dtype, ndim, shape, layout);
}

stk_status stk__tensor_resize(stk__tensor *t, stk_dtype dtype, int ndim, const int64_t *shape, const char *layout) {
  if (ndim < 0 || ndim > STK_MAX_DIMS) return STK_EINVAL;
  stk__tensor_unplace(t);
  size_t bytes = stk_dtype_size(dtype);
  for (int d = 0; d < ndim; d++) {
    if (shape[d] < 0) return STK_EINVAL;
    bytes *= (size_t)shape[d];
  }
  if (bytes > t->capacity) {
    /* Grow with headroom so samples of slowly increasing size do not reallocate each time. */
    size_t want = stk__size_class(bytes + bytes / 4 + 64);
    if (t->high_water) {
      size_t seen = __atomic_load_n(t->high_water, __ATOMIC_RELAXED);
      while (want > seen &&
             !__atomic_compare_exchange_n(t->high_water, &seen, want, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
      }
      if (seen > want) want = seen;
    }
    stk_status st = stk__tensor_reserve(t, want);
    if (st == STK_ERANGE && want > bytes && (st = stk__tensor_reserve(t, bytes)) == STK_OK)
      t->refused = 0; /* the budget had room for the sample, not for the headroom */
    if (st != STK_OK) return st;
  }
  if (bytes > t->peak) t->peak = bytes;
  set_shape(t, dtype, ndim, shape, layout, bytes);
  return STK_OK;
}

int stk__host_budget_take(stk__host_budget *budget, size_t more) {
  if (!budget) return 1;
  size_t held = __atomic_add_fetch(&budget->held, more, __ATOMIC_RELAXED);
  if (held <= budget->limit && held >= more) return 1;
  __atomic_sub_fetch(&budget->held, more, __ATOMIC_RELAXED);
  return 0;
}

void stk__host_budget_count(stk__host_budget *budget, size_t more) {
  if (budget && more) __atomic_add_fetch(&budget->held, more, __ATOMIC_RELAXED);
}

void stk__host_budget_give(stk__host_budget *budget, size_t less) {
  if (budget && less) __atomic_sub_fetch(&budget->held, less, __ATOMIC_RELAXED);
}

/* Takes `more` bytes from t's budget (none: always granted); 0 when that would pass its limit. */
static int budget_take(stk__tensor *t, size_t more) { return stk__host_budget_take(t->budget, more); }

static void budget_give(stk__tensor *t, size_t less) { stk__host_budget_give(t->budget, less); }

stk_status stk__tensor_reserve(stk__tensor *t, size_t bytes) {
  stk__tensor_unplace(t);
  if (bytes > t->peak) t->peak = bytes;
  if (bytes <= t->capacity) return STK_OK;
  if (!budget_take(t, bytes - t->capacity)) {
    t->refused = bytes;
    return STK_ERANGE;
  }
  const size_t asked = bytes, had = t->capacity;
  stk_status st =
      stk__host_block_grow(&t->data, &t->capacity, t->nbytes, bytes, t->pinned, t->numa_node, t->alloc_count);
  if (st != STK_OK) {
    budget_give(t, asked - had);
    return st;
  }
  /* a pinned block may be larger than asked: the budget counts what is held (a small overshoot
     of the limit by block rounding is accepted) */
  if (t->capacity > asked) stk__host_budget_count(t->budget, t->capacity - asked);
  return STK_OK;
}

stk_status stk__host_block_grow(void **data, size_t *capacity, size_t keep, size_t bytes, int pinned, int numa_node,
                                uint64_t *alloc_count) {
  void *old = *capacity ? *data : NULL, *p = NULL;
  size_t got = bytes;
  if (pinned) {
    stk_status st = stk__gpu_pinned_block_get(&p, &got, numa_node, alloc_count);
    if (st != STK_OK) return st;
    if (old && keep) memcpy(p, old, keep);
    if (old) stk__gpu_pinned_block_put(old, *capacity, numa_node);
  } else {
    p = realloc(old, bytes);
    if (!p) return STK_ENOMEM;
    stk__count_alloc(alloc_count);
  }
  *data = p;
  *capacity = got;
  return STK_OK;
}

void stk__host_block_free(void *data, size_t capacity, int pinned, int numa_node) {
  if (capacity && pinned) stk__gpu_pinned_block_put(data, capacity, numa_node);
  else if (capacity) free(data);
}

stk_status stk__tensor_shrink(stk__tensor *t, size_t bytes) {
  stk__tensor_unplace(t);
  if (bytes >= t->capacity) return STK_OK;
  stk__tensor_free(t);
  return bytes ? stk__tensor_reserve(t, bytes) : STK_OK;
}

void stk__tensor_free(stk__tensor *t) {
  stk__tensor_unplace(t);
  budget_give(t, t->capacity);
  stk__host_block_free(t->data, t->capacity, t->pinned, t->numa_node);
  t->data = NULL;
  t->capacity = 0;
  t->nbytes = 0;
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
