/* src/ops/common/nd_copy.c: the CPU reference of the N-D strided copy with fill (nd_copy.h): rows of
 * the innermost dimension at a time (one memcpy for the in-bounds run of a forward, packed row),
 * then the erase boxes filled. Hot path: per sample. */
#include <math.h>
#include <string.h>

#include "ops/common/dtype.h"
#include "ops/common/nd_copy.h"

int64_t stk__nd_count(const stk__nd_copy *c) {
  int64_t n = 1;
  for (int d = 0; d < c->ndim; d++) n *= c->shape[d];
  return n;
}

void stk__nd_packed_strides(int ndim, const int64_t *shape, int64_t *strides) {
  int64_t s = 1;
  for (int d = ndim - 1; d >= 0; d--) {
    strides[d] = s;
    s *= shape[d];
  }
}

void stk__nd_identity(stk__nd_copy *c, int ndim, const int64_t *shape, int elem_size) {
  memset(c, 0, sizeof *c);
  c->ndim = ndim;
  c->elem_size = elem_size;
  c->fill_dim = -1;
  c->fill_count = 1;
  for (int d = 0; d < ndim; d++) {
    c->shape[d] = shape[d];
    c->src_extent[d] = shape[d];
    c->step[d] = 1;
  }
  stk__nd_packed_strides(ndim, shape, c->dst_stride);
  stk__nd_packed_strides(ndim, shape, c->src_stride);
}

static inline void put(uint8_t *dst, const void *value, int size) { memcpy(dst, value, (size_t)size); }

/* The fill value (raw bytes) of output index o. */
static inline const void *fill_of(const stk__nd_copy *c, const int64_t *o) {
  int k = c->fill_dim < 0 || c->fill_count <= 1 ? 0 : (int)(o[c->fill_dim] % c->fill_count);
  return &c->fill[k];
}

/* Elements [from, to) of the packed row at dst (innermost dimension, o[last] set per element), each
 * its fill value: where that value does not depend on the row's own coordinate, one element
 * written and doubled by memcpy. */
static void fill_run(const stk__nd_copy *c, int64_t *o, uint8_t *dst, int64_t from, int64_t to) {
  if (to <= from) return;
  const int es = c->elem_size, last = c->ndim - 1;
  if (c->fill_count > 1 && c->fill_dim == last) { /* a fill value per channel */
    for (int64_t i = from; i < to; i++) {
      o[last] = i;
      put(dst + i * es, fill_of(c, o), es);
    }
    return;
  }
  uint8_t *at = dst + from * es;
  const size_t total = (size_t)(to - from) * es;
  put(at, fill_of(c, o), es);
  for (size_t done = (size_t)es; done < total;) {
    const size_t more = done < total - done ? done : total - done;
    memcpy(at + done, at, more);
    done += more;
  }
}

/* One row: the innermost dimension at outer index o (o[last] ignored); base_src is the input
 * offset of the outer coordinates, or -1 when one of them is out of bounds (the row is fill). */
static void copy_row(const stk__nd_copy *c, int64_t *o, int64_t dst_at, int64_t base_src) {
  const int last = c->ndim - 1, es = c->elem_size;
  uint8_t *dst = (uint8_t *)c->dst;
  const uint8_t *src = (const uint8_t *)c->src;
  const int64_t n = c->shape[last], step = c->step[last], start = c->src_start[last], ext = c->src_extent[last];
  const int64_t ds = c->dst_stride[last], ss = c->src_stride[last];
  if (ds == 1 && (base_src < 0 || (step == 1 && ss == 1))) { /* forward packed row: fill, memcpy, fill */
    int64_t lo = start < 0 ? -start : 0, hi = ext - start < n ? ext - start : n;
    if (base_src < 0) lo = hi = n; /* the whole row is fill */
    if (lo > n) lo = n;
    if (hi < lo) hi = lo;
    fill_run(c, o, dst + dst_at * es, 0, lo);
    if (hi > lo) memcpy(dst + (dst_at + lo) * es, src + (base_src + start + lo) * es, (size_t)(hi - lo) * es);
    fill_run(c, o, dst + dst_at * es, hi, n);
    return;
  }
  const int64_t end = start + step * (n - 1);
  if (base_src >= 0 && start >= 0 && start < ext && end >= 0 && end < ext) { /* in bounds: a strided gather */
    uint8_t *to = dst + dst_at * es;
    const uint8_t *from = src + (base_src + start * ss) * es;
    const int64_t to_step = ds * es, from_step = step * ss * es;
    if (es == 1)
      for (int64_t i = 0; i < n; i++) to[i * to_step] = from[i * from_step];
    else if (es == 4)
      for (int64_t i = 0; i < n; i++) memcpy(to + i * to_step, from + i * from_step, 4);
    else
      for (int64_t i = 0; i < n; i++) memcpy(to + i * to_step, from + i * from_step, (size_t)es);
    return;
  }
  for (int64_t i = 0; i < n; i++) {
    int64_t coord = start + step * i;
    o[last] = i;
    uint8_t *to = dst + (dst_at + i * ds) * es;
    if (base_src < 0 || coord < 0 || coord >= ext) put(to, fill_of(c, o), es);
    else put(to, src + (base_src + coord * ss) * es, es);
  }
}

/* Fills the erase boxes (clipped to the part). */
static void fill_boxes(const stk__nd_copy *c) {
  const int nd = c->ndim;
  for (int b = 0; b < c->num_boxes; b++) {
    const int64_t *box = c->boxes + (size_t)b * nd * 2;
    int64_t lo[STK__ND_DIMS], hi[STK__ND_DIMS], o[STK__ND_DIMS];
    int empty = 0;
    for (int d = 0; d < nd; d++) {
      lo[d] = box[2 * d] < 0 ? 0 : box[2 * d];
      hi[d] = box[2 * d + 1] > c->shape[d] ? c->shape[d] : box[2 * d + 1];
      empty |= hi[d] <= lo[d];
      o[d] = lo[d];
    }
    if (empty) continue;
    for (;;) {
      int64_t at = c->dst_offset;
      for (int d = 0; d < nd; d++) at += o[d] * c->dst_stride[d];
      put((uint8_t *)c->dst + at * c->elem_size, fill_of(c, o), c->elem_size);
      int d = nd - 1;
      while (d >= 0 && ++o[d] == hi[d]) {
        o[d] = lo[d];
        d--;
      }
      if (d < 0) break;
    }
  }
}

/* Whether c's rows are a few bytes each (an HWC image's pixels, flipped, cut or padded along W):
 * then the second-innermost dimension's run is one tight loop over its in-bounds part
 * (copy_short_rows) instead of a copy_row call and its set-up per pixel. */
static int short_rows(const stk__nd_copy *c) {
  const int last = c->ndim - 1;
  if (last < 1) return 0;
  const int64_t n = c->shape[last];
  return c->step[last] == 1 && c->dst_stride[last] == 1 && c->src_stride[last] == 1 && c->src_start[last] == 0 &&
         c->src_extent[last] == n && n * c->elem_size <= 16;
}

/* The rows of the second-innermost dimension p at outer index o / offsets dst_at, base_src (>= 0):
 * the in-bounds ones copied, the others filled through copy_row. */
static void copy_short_rows(const stk__nd_copy *c, int64_t *o, int64_t dst_at, int64_t base_src) {
  const int last = c->ndim - 1, p = last - 1, es = c->elem_size;
  const size_t bytes = (size_t)(c->shape[last] * es);
  const int64_t count = c->shape[p], start = c->src_start[p], ext = c->src_extent[p], step = c->step[p];
  /* i in [lo, hi): start + step * i within [0, ext) */
  int64_t lo = step > 0 ? -start : start - ext + 1, hi = step > 0 ? ext - start : start + 1;
  lo = lo < 0 ? 0 : (lo > count ? count : lo);
  hi = hi > count ? count : (hi < lo ? lo : hi);
  for (o[p] = 0; o[p] < count; o[p]++)
    if (o[p] < lo || o[p] >= hi) copy_row(c, o, dst_at + o[p] * c->dst_stride[p], -1);
  o[p] = 0;
  const int64_t dst_step = c->dst_stride[p] * es, src_step = c->src_stride[p] * step * es;
  uint8_t *dst = (uint8_t *)c->dst + (dst_at + lo * c->dst_stride[p]) * es;
  const uint8_t *src = (const uint8_t *)c->src + (base_src + (start + step * lo) * c->src_stride[p]) * es;
  if (dst_step == (int64_t)bytes && src_step == (int64_t)bytes) { /* not flipped: one contiguous run */
    if (hi > lo) memcpy(dst, src, (size_t)(hi - lo) * bytes);
    return;
  }
  if (bytes == 3) { /* RGB uint8 pixels, the common case: a fixed-size copy the compiler unrolls */
    for (int64_t i = lo; i < hi; i++, dst += dst_step, src += src_step) {
      dst[0] = src[0];
      dst[1] = src[1];
      dst[2] = src[2];
    }
    return;
  }
  for (int64_t i = lo; i < hi; i++, dst += dst_step, src += src_step)
    for (size_t b = 0; b < bytes; b++) dst[b] = src[b];
}

void stk__nd_copy_run(const stk__nd_copy *c) {
  if (stk__nd_count(c) == 0) return;
  if (c->ndim == 0) { /* a scalar */
    put((uint8_t *)c->dst + c->dst_offset * c->elem_size, c->src, c->elem_size);
    return;
  }
  const int nd = c->ndim, last = nd - 1;
  const int shortened = short_rows(c);
  const int inner = shortened ? last - 1 : last; /* the odometer runs over the dimensions before it */
  int64_t o[STK__ND_DIMS] = {0};
  for (;;) {
    int64_t dst_at = c->dst_offset, src_at = 0;
    for (int d = 0; d < inner; d++) {
      int64_t coord = c->src_start[d] + c->step[d] * o[d];
      dst_at += o[d] * c->dst_stride[d];
      if (src_at >= 0 && coord >= 0 && coord < c->src_extent[d]) src_at += coord * c->src_stride[d];
      else src_at = -1;
    }
    if (!shortened) {
      copy_row(c, o, dst_at, src_at);
    } else if (src_at >= 0) {
      copy_short_rows(c, o, dst_at, src_at);
    } else { /* an outer coordinate out of bounds: every row of the run is fill */
      for (o[inner] = 0; o[inner] < c->shape[inner]; o[inner]++)
        copy_row(c, o, dst_at + o[inner] * c->dst_stride[inner], -1);
      o[inner] = 0;
    }
    int d = inner - 1;
    while (d >= 0 && ++o[d] == c->shape[d]) {
      o[d] = 0;
      d--;
    }
    if (d < 0) break;
  }
  fill_boxes(c);
}

/* Whether dimensions k and k + 1 of c can be one: both forward, the inner one whole and in bounds
 * (its output row is the input's whole row) and packed under the outer one on both sides, neither
 * the fill's channel dimension, no erase boxes (they name output coordinates per dimension). */
static int mergeable(const stk__nd_copy *c, int k) {
  const int j = k + 1;
  const int64_t n = c->shape[j];
  const int fill_here = c->fill_count > 1 && (c->fill_dim == k || c->fill_dim == j);
  return c->num_boxes == 0 && !fill_here && c->step[k] == 1 && c->step[j] == 1 && c->src_start[j] == 0 &&
         c->src_extent[j] == n && c->dst_stride[k] == c->dst_stride[j] * n && c->src_stride[k] == c->src_stride[j] * n;
}

void stk__nd_coalesce(stk__nd_copy *c) {
  for (int k = c->ndim - 2; k >= 0; k--) {
    if (!mergeable(c, k)) continue;
    const int j = k + 1;
    const int64_t n = c->shape[j];
    c->shape[k] *= n; /* the outer coordinate times the row, plus the position in it */
    c->src_start[k] *= n;
    c->src_extent[k] *= n;
    c->dst_stride[k] = c->dst_stride[j];
    c->src_stride[k] = c->src_stride[j];
    for (int d = j; d + 1 < c->ndim; d++) {
      c->shape[d] = c->shape[d + 1];
      c->dst_stride[d] = c->dst_stride[d + 1];
      c->src_stride[d] = c->src_stride[d + 1];
      c->src_start[d] = c->src_start[d + 1];
      c->src_extent[d] = c->src_extent[d + 1];
      c->step[d] = c->step[d + 1];
    }
    if (c->fill_dim > j) c->fill_dim--;
    c->ndim--;
  }
}

int stk__nd_inside32(const stk__nd_copy *c) {
  if (c->num_boxes > 0) return 0;
  const int64_t limit = (int64_t)1 << 31;
  int64_t dst_max = 0, src_max = 0;
  for (int k = 0; k < c->ndim; k++) {
    const int64_t first = c->src_start[k], last = c->src_start[k] + c->step[k] * (c->shape[k] - 1);
    if (c->shape[k] <= 0 || first < 0 || first >= c->src_extent[k] || last < 0 || last >= c->src_extent[k]) return 0;
    if (c->dst_stride[k] < 0 || c->src_stride[k] < 0) return 0;
    dst_max += (c->shape[k] - 1) * c->dst_stride[k];
    src_max += (first > last ? first : last) * c->src_stride[k];
    if (dst_max >= limit || src_max >= limit) return 0;
  }
  return stk__nd_count(c) < limit;
}

uint64_t stk__nd_fill_bits(double v, stk_dtype dtype) {
  uint64_t bits = 0;
  double r = isnan(v) ? 0 : round(v);
#define SAT(T, lo, hi)                                  \
  do {                                                  \
    T x = (T)(r < (lo) ? (lo) : (r > (hi) ? (hi) : r)); \
    memcpy(&bits, &x, sizeof x);                        \
  } while (0)
  switch (dtype) {
    case STK_DTYPE_UINT8:
      SAT(uint8_t, 0, 255);
      break;
    case STK_DTYPE_BOOL: {
      uint8_t x = v != 0;
      memcpy(&bits, &x, 1);
      break;
    }
    case STK_DTYPE_INT8:
      SAT(int8_t, -128, 127);
      break;
    case STK_DTYPE_INT16:
      SAT(int16_t, -32768, 32767);
      break;
    case STK_DTYPE_UINT16:
      SAT(uint16_t, 0, 65535);
      break;
    case STK_DTYPE_INT32:
      SAT(int32_t, -2147483648.0, 2147483647.0);
      break;
    case STK_DTYPE_UINT32:
      SAT(uint32_t, 0, 4294967295.0);
      break;
    case STK_DTYPE_INT64:
      SAT(int64_t, -9223372036854775808.0, 9223372036854774784.0);
      break;
    case STK_DTYPE_UINT64:
      SAT(uint64_t, 0, 18446744073709549568.0);
      break;
    case STK_DTYPE_FLOAT32: {
      float x = (float)v;
      memcpy(&bits, &x, sizeof x);
      break;
    }
    case STK_DTYPE_FLOAT64:
      memcpy(&bits, &v, sizeof v);
      break;
    case STK_DTYPE_FLOAT16: {
      uint16_t x = stk__float_to_half((float)v);
      memcpy(&bits, &x, sizeof x);
      break;
    }
  }
#undef SAT
  return bits;
}
