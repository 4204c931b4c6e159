/* src/ops/augment/resize/resize_reference.c: the CPU resize of HWC u8 images (stk__resize_u8,
 * stk__resize_u8_roi): the `resize` and `random_resized_crop` CPU implementations and the
 * reference the CUDA kernel (src/ops/augment/resize/resize_kernels.cu, resample_device.cuh) is tested
 * against (src/ops/augment/resize/test_resize.c, tests/test_gpu_ops.c). Hot path: once per sample; it allocates
 * nothing (callers pass scratch) and its inner loops are branch-free over precomputed taps. */
#include <math.h>
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "ops/augment/resize/resize_reference.h"

#define ALWAYS_INLINE static inline __attribute__((always_inline))
#define SCRATCH_ALIGN 64

/* Order of work (the same order of float operations as the GPU kernel, resample_device.cuh):
 *   1. each source row the output needs is converted to float once (only the columns the
 *      horizontal filter reads);
 *   2. the horizontal filter runs on it once, up to ROW_BATCH rows per pass, into a ring of
 *      taps_y + ROW_BATCH - 1 filtered rows of dst_w * channels floats:
 *      h = 0 + wx[0] * src[first] + wx[1] * src[first + 1] + ..., k in order from 0;
 *   3. each output row combines the taps_y filtered rows it needs: v = 0 + wy[0] * h_0 + ..., k
 *      in order from 0, 16 values at a time held in registers, then rounded to u8.
 * Every source row is filtered horizontally once, whatever the vertical scale. With 3 or 4
 * channels a pixel's channels are filtered together in one 4-lane vector (GCC/Clang vector
 * extension, so any target gets SIMD or a plain scalar fallback); each lane adds its products in
 * the same order as the scalar formula, so the results are identical, bit for bit. The few SSE2
 * intrinsics (u8 <-> float conversion only, never the sums) sit behind __SSE2__ with a scalar
 * fallback next to them. There is no FMA: the build targets baseline x86-64 and ISO C11 (which
 * keeps GCC from contracting a * b + c). */

typedef float v4f __attribute__((vector_size(16)));

ALWAYS_INLINE v4f load_v4f(const float *p) {
  v4f v;
  memcpy(&v, p, sizeof v);
  return v;
}

ALWAYS_INLINE void store_v4f(float *p, v4f v) { memcpy(p, &v, sizeof v); }

ALWAYS_INLINE v4f splat_v4f(float value) { return (v4f){value, value, value, value}; }

/* Floats after a converted source row and after each filtered row: a 4-lane load or store of the
 * last 3-channel pixel reaches one float past the row. */
#define ROW_PAD_FLOATS 4

/* Source rows filtered horizontally in one pass (they share each pixel's index and weight loads
 * and the loop overhead). The ring of filtered rows holds taps_y + ROW_BATCH - 1 of them, so that
 * a batch may run ahead of the rows the current output row needs. horizontal_dispatch has a case
 * per batch size. */
enum { ROW_BATCH = 4 };

static size_t align_up(size_t n) { return (n + SCRATCH_ALIGN - 1) & ~(size_t)(SCRATCH_ALIGN - 1); }

/* Source pixels along one axis touched by the filter (upper bound used for the scratch size). */
static int span_bound(int in_size, double start, double end, int out_size, stk__interp interp, int antialias) {
  double scale = (end - start) / (double)out_size;
  double radius = interp == STK__INTERP_NN ? 0.5 : stk__resample_filter_radius(interp, scale, antialias);
  double span = ceil(end - start + 2.0 * radius) + 2.0;
  return span >= (double)in_size ? in_size : (int)span;
}

typedef struct resize_layout {
  int taps_x, taps_y, cols;
  size_t ring_stride; /* floats per filtered row */
  size_t off_xfirst, off_xw, off_xw_splat, off_yfirst, off_yw, off_src_rows, off_ring, off_ring_rows, total;
} resize_layout;

static resize_layout resize_layout_of(int src_w, int src_h, int channels, const double roi[4], int dst_w, int dst_h,
                                      stk__interp interp, int antialias) {
  resize_layout l;
  l.taps_x = stk__resample_max_taps(src_w, dst_w, roi[0], roi[2], interp, antialias);
  l.taps_y = stk__resample_max_taps(src_h, dst_h, roi[1], roi[3], interp, antialias);
  l.cols = span_bound(src_w, roi[0], roi[2], dst_w, interp, antialias);
  l.ring_stride = (size_t)dst_w * (size_t)channels + ROW_PAD_FLOATS;
  size_t off = 0;
  l.off_xfirst = off;
  off = align_up(off + sizeof(int32_t) * (size_t)dst_w);
  l.off_xw = off;
  off = align_up(off + sizeof(float) * (size_t)dst_w * (size_t)l.taps_x);
  l.off_xw_splat = off; /* the horizontal weights again, each in all 4 lanes (3 or 4 channels only) */
  if (channels == 3 || channels == 4) off = align_up(off + sizeof(v4f) * (size_t)dst_w * (size_t)l.taps_x);
  l.off_yfirst = off;
  off = align_up(off + sizeof(int32_t) * (size_t)dst_h);
  l.off_yw = off;
  off = align_up(off + sizeof(float) * (size_t)dst_h * (size_t)l.taps_y);
  l.off_src_rows = off;
  off = align_up(off + sizeof(float) * ROW_BATCH * ((size_t)l.cols * (size_t)channels + ROW_PAD_FLOATS));
  l.off_ring = off;
  off = align_up(off + sizeof(float) * l.ring_stride * (size_t)(l.taps_y + ROW_BATCH - 1));
  l.off_ring_rows = off;
  off = align_up(off + sizeof(const float *) * (size_t)l.taps_y);
  l.total = off + SCRATCH_ALIGN; /* room to align the caller's pointer */
  return l;
}

size_t stk__resize_roi_scratch_bytes(int src_w, int src_h, int channels, const double roi[4], int dst_w, int dst_h,
                                     stk__interp interp, int antialias) {
  if (src_w <= 0 || src_h <= 0 || dst_w <= 0 || dst_h <= 0 || channels <= 0) return 0;
  return resize_layout_of(src_w, src_h, channels, roi, dst_w, dst_h, interp, antialias).total;
}

size_t stk__resize_scratch_bytes(int src_w, int src_h, int channels, stk__window roi, int dst_w, int dst_h,
                                 stk__interp interp, int antialias) {
  double r[4] = {roi.x, roi.y, (double)roi.x + roi.w, (double)roi.y + roi.h};
  return stk__resize_roi_scratch_bytes(src_w, src_h, channels, r, dst_w, dst_h, interp, antialias);
}

/* Horizontal pass of `count` (1..ROW_BATCH) source rows (already float, first[] relative to their
 * start) into filtered rows: out[x*C + c] = sum_k w[x][k] * row[(first[x] + k)*C + c], summed from
 * tap 0 up. The rows of a batch share each pixel's index and weight loads and the loop overhead.
 * channels, taps and count fold to constants when inlined. With 3 or 4 channels the weights come
 * from splat_weights (weights[x*taps + k] in all 4 lanes, 16-byte aligned), so each tap is one
 * load and one multiply from memory, with no broadcast; with 3 channels the 4th lane reads the
 * next pixel (or the row's pad) and writes the next output pixel's first value (or the pad), which
 * is rewritten right after. */
ALWAYS_INLINE void horizontal_rows(const float *const *rows, float *const *outs, int dst_w, const int channels,
                                   const int taps, const int count, const int32_t *first, const float *weights,
                                   const v4f *splat_weights) {
  if (channels == 3 || channels == 4) {
    const float *row[ROW_BATCH];
    float *out[ROW_BATCH];
    for (int r = 0; r < count; r++) {
      row[r] = rows[r];
      out[r] = outs[r];
    }
    for (int x = 0; x < dst_w; x++) {
      const size_t at = (size_t)first[x] * (size_t)channels;
      const v4f *w = splat_weights + (size_t)x * (size_t)taps;
      v4f acc[ROW_BATCH];
      for (int r = 0; r < count; r++) acc[r] = (v4f){0.0f, 0.0f, 0.0f, 0.0f};
      for (int k = 0; k < taps; k++) {
        const size_t i = at + (size_t)k * (size_t)channels;
        for (int r = 0; r < count; r++) acc[r] += w[k] * load_v4f(row[r] + i);
      }
      for (int r = 0; r < count; r++) store_v4f(out[r] + (size_t)x * (size_t)channels, acc[r]);
    }
    return;
  }
  for (int r = 0; r < count; r++) {
    const float *row = rows[r];
    float *out = outs[r];
    for (int x = 0; x < dst_w; x++) {
      const float *p = row + (size_t)first[x] * (size_t)channels;
      const float *w = weights + (size_t)x * (size_t)taps;
      for (int c = 0; c < channels; c++) {
        float acc = 0.0f;
        for (int k = 0; k < taps; k++) acc += w[k] * p[(size_t)k * (size_t)channels + (size_t)c];
        out[(size_t)x * (size_t)channels + (size_t)c] = acc;
      }
    }
  }
}

ALWAYS_INLINE void horizontal_taps(const float *const *rows, float *const *outs, int dst_w, const int channels,
                                   int taps, const int count, const int32_t *first, const float *weights,
                                   const v4f *splat_weights) {
#define HORIZONTAL_ROWS(taps_value) \
  horizontal_rows(rows, outs, dst_w, channels, taps_value, count, first, weights, splat_weights)
  switch (taps) {
    case 1:
      HORIZONTAL_ROWS(1);
      return;
    case 2:
      HORIZONTAL_ROWS(2);
      return;
    case 3:
      HORIZONTAL_ROWS(3);
      return;
    case 4:
      HORIZONTAL_ROWS(4);
      return;
    case 5:
      HORIZONTAL_ROWS(5);
      return;
    case 6:
      HORIZONTAL_ROWS(6);
      return;
    default:
      HORIZONTAL_ROWS(taps);
      return;
  }
#undef HORIZONTAL_ROWS
}

/* count: 1..ROW_BATCH. Kept out of line so that each instantiation has the registers to itself
 * (inlined into the caller's row loop, its counters spilled to the stack). */
__attribute__((noinline)) static void horizontal_dispatch(const float *const *rows, float *const *outs, int count,
                                                          int dst_w, int channels, int taps, const int32_t *first,
                                                          const float *weights, const v4f *splat_weights) {
  _Static_assert(ROW_BATCH == 4, "one case per batch size");
  if (channels == 3 || channels == 4) {
    const int c = channels;
    switch (count) {
      case 1:
        horizontal_taps(rows, outs, dst_w, c, taps, 1, first, weights, splat_weights);
        return;
      case 2:
        horizontal_taps(rows, outs, dst_w, c, taps, 2, first, weights, splat_weights);
        return;
      case 3:
        horizontal_taps(rows, outs, dst_w, c, taps, 3, first, weights, splat_weights);
        return;
      default:
        horizontal_taps(rows, outs, dst_w, c, taps, 4, first, weights, splat_weights);
        return;
    }
  }
  horizontal_rows(rows, outs, dst_w, channels, taps, count, first, weights, splat_weights);
}

/* u8 from the float sum, as stk__u8_from_float (the vertical pass's scalar form, for rows shorter
 * than one block and for targets without SSE2). */
ALWAYS_INLINE uint8_t u8_from_float_clamped(float value) {
  float r = value + 0.5f;
  r = r < 0.0f ? 0.0f : r;
  r = r > 255.0f ? 255.0f : r;
  return (uint8_t)(int)r;
}

/* 16 sums (four 4-lane vectors, in order) -> 16 u8 by stk__u8_from_float's rule: + 0.5, clamp
 * into [0, 255], truncate. With SSE2 the clamp at 0 is folded into the conversion: after the same
 * float add, min(255, r) keeps every value small enough for the truncating int32 conversion, and
 * the two saturating packs (int32 -> int16 -> u8) turn every negative result into 0 and leave
 * 0..255 alone. The bytes equal the scalar rule's for every float that is not a NaN (checked over
 * all 2^32 bit patterns when this was written). Other targets take the scalar rule per value. */
ALWAYS_INLINE void store_u8x16(uint8_t *out, v4f s0, v4f s1, v4f s2, v4f s3) {
#if defined(__SSE2__)
  const __m128 half = _mm_set1_ps(0.5f), top = _mm_set1_ps(255.0f);
  const __m128i q0 = _mm_cvttps_epi32(_mm_min_ps(top, _mm_add_ps((__m128)s0, half)));
  const __m128i q1 = _mm_cvttps_epi32(_mm_min_ps(top, _mm_add_ps((__m128)s1, half)));
  const __m128i q2 = _mm_cvttps_epi32(_mm_min_ps(top, _mm_add_ps((__m128)s2, half)));
  const __m128i q3 = _mm_cvttps_epi32(_mm_min_ps(top, _mm_add_ps((__m128)s3, half)));
  _mm_storeu_si128((__m128i *)(void *)out, _mm_packus_epi16(_mm_packs_epi32(q0, q1), _mm_packs_epi32(q2, q3)));
#else
  float sums[16];
  store_v4f(sums, s0);
  store_v4f(sums + 4, s1);
  store_v4f(sums + 8, s2);
  store_v4f(sums + 12, s3);
  for (int i = 0; i < 16; i++) out[i] = u8_from_float_clamped(sums[i]);
#endif
}

/* Vertical pass of one output row: out[i] = u8(0 + w[0] * rows[0][i] + w[1] * rows[1][i] + ...),
 * summed from tap 0 up, over len values. 16 values at a time stay in four 4-lane registers across
 * all the taps and go to u8 together: each sum is read and written once, never spilled to memory
 * between taps. A row whose length is not a multiple of 16 ends with a block that overlaps the
 * previous one (the overlapped values are recomputed, identically); rows shorter than 16 values
 * take the scalar loop. taps folds to a constant when inlined (then the row pointers and the
 * splatted weights live in registers). */
ALWAYS_INLINE void vertical_row(const float *const *rows, const float *w, const int taps, size_t len,
                                uint8_t *restrict out) {
  enum { BLOCK = 16 };
  if (len < BLOCK) {
    for (size_t i = 0; i < len; i++) {
      float sum = 0.0f + w[0] * rows[0][i];
      for (int k = 1; k < taps; k++) sum += w[k] * rows[k][i];
      out[i] = u8_from_float_clamped(sum);
    }
    return;
  }
  for (size_t i = 0;; i += BLOCK) {
    if (i + BLOCK > len) i = len - BLOCK;
    const v4f zero = {0.0f, 0.0f, 0.0f, 0.0f}, w0 = splat_v4f(w[0]);
    const float *r0 = rows[0] + i;
    v4f s0 = zero + w0 * load_v4f(r0), s1 = zero + w0 * load_v4f(r0 + 4);
    v4f s2 = zero + w0 * load_v4f(r0 + 8), s3 = zero + w0 * load_v4f(r0 + 12);
    for (int k = 1; k < taps; k++) {
      const v4f wk = splat_v4f(w[k]);
      const float *rk = rows[k] + i;
      s0 += wk * load_v4f(rk);
      s1 += wk * load_v4f(rk + 4);
      s2 += wk * load_v4f(rk + 8);
      s3 += wk * load_v4f(rk + 12);
    }
    store_u8x16(out + i, s0, s1, s2, s3);
    if (i + BLOCK == len) break;
  }
}

static void vertical_dispatch(const float *const *rows, const float *w, int taps, size_t len, uint8_t *out) {
  switch (taps) {
    case 1:
      vertical_row(rows, w, 1, len, out);
      return;
    case 2:
      vertical_row(rows, w, 2, len, out);
      return;
    case 3:
      vertical_row(rows, w, 3, len, out);
      return;
    case 4:
      vertical_row(rows, w, 4, len, out);
      return;
    case 5:
      vertical_row(rows, w, 5, len, out);
      return;
    case 6:
      vertical_row(rows, w, 6, len, out);
      return;
    default:
      vertical_row(rows, w, taps, len, out);
      return;
  }
}

/* u8 -> float for the `len` values of one source row (exact). With SSE2, 16 bytes at a time are
 * zero-extended by interleaving with zero bytes and words, then converted (the compiler's own
 * vectorisation of the scalar loop takes half again as many instructions); the rest, and other
 * targets, take the scalar loop. */
static void row_to_float(const uint8_t *restrict src, size_t len, float *restrict out) {
  size_t i = 0;
#if defined(__SSE2__)
  const __m128i zero = _mm_setzero_si128();
  for (; i + 16 <= len; i += 16) {
    const __m128i bytes = _mm_loadu_si128((const __m128i *)(const void *)(src + i));
    const __m128i low = _mm_unpacklo_epi8(bytes, zero), high = _mm_unpackhi_epi8(bytes, zero);
    _mm_storeu_ps(out + i, _mm_cvtepi32_ps(_mm_unpacklo_epi16(low, zero)));
    _mm_storeu_ps(out + i + 4, _mm_cvtepi32_ps(_mm_unpackhi_epi16(low, zero)));
    _mm_storeu_ps(out + i + 8, _mm_cvtepi32_ps(_mm_unpacklo_epi16(high, zero)));
    _mm_storeu_ps(out + i + 12, _mm_cvtepi32_ps(_mm_unpackhi_epi16(high, zero)));
  }
#endif
  for (; i < len; i++) out[i] = (float)src[i];
}

stk_status stk__resize_u8_roi(const uint8_t *src, int src_w, int src_h, size_t src_stride, int channels,
                              const double roi[4], uint8_t *dst, int dst_w, int dst_h, stk__interp interp,
                              int antialias, void *scratch) {
  if (!src || !dst || !scratch || src_w <= 0 || src_h <= 0 || dst_w <= 0 || dst_h <= 0 || channels <= 0 ||
      src_stride < (size_t)src_w * (size_t)channels)
    return STK_EINVAL;
  if (!(roi[2] > roi[0]) || !(roi[3] > roi[1])) return STK_EINVAL;
  resize_layout l = resize_layout_of(src_w, src_h, channels, roi, dst_w, dst_h, interp, antialias);
  uint8_t *base = (uint8_t *)(((uintptr_t)scratch + SCRATCH_ALIGN - 1) & ~(uintptr_t)(SCRATCH_ALIGN - 1));
  int32_t *x_first = (int32_t *)(base + l.off_xfirst);
  float *x_weights = (float *)(base + l.off_xw);
  v4f *x_splat_weights = (v4f *)(void *)(base + l.off_xw_splat);
  int32_t *y_first = (int32_t *)(base + l.off_yfirst);
  float *y_weights = (float *)(base + l.off_yw);
  float *src_rows = (float *)(base + l.off_src_rows); /* ROW_BATCH converted source rows */
  float *ring = (float *)(base + l.off_ring);
  const float **ring_rows = (const float **)(base + l.off_ring_rows);

  int taps_x = stk__resample_weights(src_w, dst_w, roi[0], roi[2], interp, antialias, x_first, x_weights);
  int taps_y = stk__resample_weights(src_h, dst_h, roi[1], roi[3], interp, antialias, y_first, y_weights);
  /* Only the columns the horizontal filter reads are converted and filtered. */
  const int col0 = x_first[0];
  const int cols = x_first[dst_w - 1] + taps_x - col0;
  if (cols > l.cols || taps_y > l.taps_y) return STK_EINTERNAL; /* a scratch bound is wrong: a bug, never overrun */
  for (int x = 0; x < dst_w; x++) x_first[x] -= col0;
  if (channels == 3 || channels == 4)
    for (size_t i = 0; i < (size_t)dst_w * (size_t)taps_x; i++) x_splat_weights[i] = splat_v4f(x_weights[i]);
  const size_t len = (size_t)cols * (size_t)channels, out_len = (size_t)dst_w * (size_t)channels;
  const size_t src_row_stride = len + ROW_PAD_FLOATS;
  const float *batch_rows[ROW_BATCH];
  float *batch_outs[ROW_BATCH];
  for (int r = 0; r < ROW_BATCH; r++) {
    batch_rows[r] = src_rows + (size_t)r * src_row_stride;
    for (int i = 0; i < ROW_PAD_FLOATS; i++) src_rows[(size_t)r * src_row_stride + len + (size_t)i] = 0.0f;
  }
  const uint8_t *src_cols = src + (size_t)col0 * (size_t)channels;
  /* Filtered source row j lives in ring slot j % ring_size. y_first never decreases, so the rows
   * an output row needs, [top, top + taps_y), are never older than the newest ring_size rows: a
   * batch starts at a needed row (>= top, < top + taps_y) and so ends before top + ring_size. */
  const int ring_size = taps_y + ROW_BATCH - 1;
  const int rows_end = y_first[dst_h - 1] + taps_y; /* rows past the last needed one are never filtered */
  int next_row = 0;                                 /* first source row not filtered yet */
  for (int y = 0; y < dst_h; y++) {
    const int top = y_first[y];
    const int end = top + taps_y;
    if (next_row < top) next_row = top; /* rows no output row reads are skipped */
    while (next_row < end) {
      const int count = rows_end - next_row < ROW_BATCH ? rows_end - next_row : ROW_BATCH;
      for (int r = 0; r < count; r++) {
        const int j = next_row + r;
        row_to_float(src_cols + (size_t)j * src_stride, len, src_rows + (size_t)r * src_row_stride);
        batch_outs[r] = ring + (size_t)(j % ring_size) * l.ring_stride;
      }
      horizontal_dispatch(batch_rows, batch_outs, count, dst_w, channels, taps_x, x_first, x_weights, x_splat_weights);
      next_row += count;
    }
    for (int k = 0; k < taps_y; k++) ring_rows[k] = ring + (size_t)((top + k) % ring_size) * l.ring_stride;
    vertical_dispatch(ring_rows, y_weights + (size_t)y * (size_t)taps_y, taps_y, out_len, dst + (size_t)y * out_len);
  }
  return STK_OK;
}

stk_status stk__resize_u8(const uint8_t *src, int src_w, int src_h, size_t src_stride, int channels, stk__window roi,
                          uint8_t *dst, int dst_w, int dst_h, stk__interp interp, int antialias, void *scratch) {
  if (roi.w <= 0 || roi.h <= 0) return STK_EINVAL;
  double r[4] = {roi.x, roi.y, (double)roi.x + roi.w, (double)roi.y + roi.h};
  return stk__resize_u8_roi(src, src_w, src_h, src_stride, channels, r, dst, dst_w, dst_h, interp, antialias, scratch);
}
