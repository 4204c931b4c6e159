/* src/core/tensor_memory.c: host tensor memory -- grow-only sizing with headroom, the pipeline's
 * host memory budget, pinned blocks from the device runtime's pool (src/device/device.h) and the
 * per-sample output sizing that places a sample straight into a dense batch buffer when the
 * executor offers one. Hot path: stk__tensor_resize is called per sample per operator; it
 * allocates only when a sample is larger than anything that buffer held before, and then checks
 * the budget (one atomic add) when the buffer counts in one. */
#include <stdlib.h>
#include <string.h>

#include "base/tensor.h"
#include "core/op.h"
#include "device/device.h"

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
  stk__tensor_set_shape(t, dtype, ndim, shape, layout, bytes);
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
