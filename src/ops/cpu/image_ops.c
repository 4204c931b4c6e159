/* src/ops/cpu/image_ops.c: the pure image algorithms behind resize, random_resized_crop and
 * crop_mirror_normalize (see image_ops.h, the contract). These functions are both the CPU
 * implementations and the references the CUDA kernels are tested against, so every number they
 * produce is defined here once: the crop-window draw, the separable resampling weights, the u8
 * rounding rule and the float16 conversion. Hot path: resize and crop_mirror_normalize run once
 * per sample; they allocate nothing (callers pass scratch) and their inner loops are branch-free
 * over precomputed taps. */
#include <math.h>
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "ops/cpu/image_ops.h"

#define ALWAYS_INLINE static inline __attribute__((always_inline))
#define SCRATCH_ALIGN 64
#define MAX_OUTPUT_SIDE 65535

/* ---- Small parsers ------------------------------------------------------------------------ */

stk_status stk__interp_parse(const char *text, stk__interp *out) {
  static const struct {
    const char *name;
    stk__interp value;
  } names[] = {
      {"INTERP_NN", STK__INTERP_NN},        {"nearest", STK__INTERP_NN},     {"nn", STK__INTERP_NN},
      {"INTERP_LINEAR", STK__INTERP_LINEAR}, {"linear", STK__INTERP_LINEAR}, {"INTERP_CUBIC", STK__INTERP_CUBIC},
      {"cubic", STK__INTERP_CUBIC},
  };
  if (!text) return STK_EINVAL;
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    if (strcmp(text, names[i].name) == 0) {
      *out = names[i].value;
      return STK_OK;
    }
  return STK_EINVAL;
}

stk_status stk__resize_mode_parse(const char *text, stk__resize_mode *out) {
  static const char *const names[] = {"default", "stretch", "not_larger", "not_smaller"};
  if (!text) return STK_EINVAL;
  for (int i = 0; i < 4; i++)
    if (strcmp(text, names[i]) == 0) {
      *out = (stk__resize_mode)i;
      return STK_OK;
    }
  return STK_EINVAL;
}

int stk__crop_start(double pos, int in_size, int crop_size) {
  return (int)floor(pos * (double)(in_size - crop_size) + 0.5);
}

/* ---- Crop window generator ------------------------------------------------------------------ */

stk__window stk__random_crop_window(stk__rng *rng, int width, int height, double area_min, double area_max,
                                    double ratio_min, double ratio_max, int attempts) {
  stk__window win = {0, 0, width, height};
  if (width <= 0 || height <= 0) return win;
  const double area = (double)width * (double)height;
  const double log_ratio_min = log(ratio_min), log_ratio_max = log(ratio_max);
  for (int attempt = 0; attempt < attempts; attempt++) {
    /* Two draws per attempt (area, then log aspect ratio), two more for the placement. */
    double target_area = area * (area_min + (area_max - area_min) * stk__rng_uniform(rng));
    double aspect = exp(log_ratio_min + (log_ratio_max - log_ratio_min) * stk__rng_uniform(rng));
    int w = (int)lround(sqrt(target_area * aspect));
    int h = (int)lround(sqrt(target_area / aspect));
    if (w > 0 && h > 0 && w <= width && h <= height) {
      int x = (int)floor(stk__rng_uniform(rng) * (double)(width - w + 1));
      int y = (int)floor(stk__rng_uniform(rng) * (double)(height - h + 1));
      win.x = x > width - w ? width - w : x;
      win.y = y > height - h ? height - h : y;
      win.w = w;
      win.h = h;
      return win;
    }
  }
  /* Fallback: the whole image, with its aspect ratio clamped into [ratio_min, ratio_max],
   * centred. */
  double in_ratio = (double)width / (double)height;
  int w = width, h = height;
  if (in_ratio < ratio_min) {
    h = (int)lround((double)width / ratio_min);
  } else if (in_ratio > ratio_max) {
    w = (int)lround((double)height * ratio_max);
  }
  if (w < 1) w = 1;
  if (h < 1) h = 1;
  if (w > width) w = width;
  if (h > height) h = height;
  win.w = w;
  win.h = h;
  win.x = (width - w) / 2;
  win.y = (height - h) / 2;
  return win;
}

/* ---- Resampling weights --------------------------------------------------------------------- */
/* Definition (the tests re-implement it in 2-D, in double):
 *   scale s = (roi_end - roi_start) / out_size    (source pixels per output pixel)
 *   output pixel o is centred at source coordinate c = roi_start + (o + 0.5) * s, where source
 *   pixel i covers [i, i + 1) and is centred at i + 0.5;
 *   NN: the single source pixel clamp(floor(c), 0, in_size - 1);
 *   linear: triangle f(t) = max(0, 1 - |t|), radius 1; cubic: Keys with a = -0.5 (Catmull-Rom),
 *   radius 2; with antialias and s > 1 the filter is stretched: f(t / s), radius r * s;
 *   w_i = f((i + 0.5) - c) for every i with |i + 0.5 - c| < radius, normalised to sum 1;
 *   pixels outside [0, in_size) are replaced by the nearest edge pixel (clamp-to-edge). */

static double filter_radius(stk__interp interp, double scale, int antialias) {
  double radius = interp == STK__INTERP_CUBIC ? 2.0 : 1.0;
  if (antialias && scale > 1.0) radius *= scale;
  return radius;
}

static double filter_value(stk__interp interp, double t) {
  t = fabs(t);
  if (interp == STK__INTERP_CUBIC) {
    const double a = -0.5;
    if (t < 1.0) return ((a + 2.0) * t - (a + 3.0)) * t * t + 1.0;
    if (t < 2.0) return ((a * t - 5.0 * a) * t + 8.0 * a) * t - 4.0 * a;
    return 0.0;
  }
  return t < 1.0 ? 1.0 - t : 0.0;
}

static int raw_tap_count(stk__interp interp, double scale, int antialias) {
  if (interp == STK__INTERP_NN) return 1;
  /* An open interval of length 2r holds at most ceil(2r) pixel centres. */
  double width = 2.0 * filter_radius(interp, scale, antialias);
  int taps = (int)ceil(width - 1e-9);
  return taps < 1 ? 1 : taps;
}

int stk__resample_max_taps(int in_size, int out_size, double roi_start, double roi_end, stk__interp interp,
                           int antialias) {
  if (in_size <= 0 || out_size <= 0) return 0;
  double scale = (roi_end - roi_start) / (double)out_size;
  int taps = raw_tap_count(interp, scale, antialias);
  return taps > in_size ? in_size : taps;
}

int stk__resample_weights(int in_size, int out_size, double roi_start, double roi_end, stk__interp interp,
                          int antialias, int32_t *first, float *weights) {
  if (in_size <= 0 || out_size <= 0) return 0;
  const double scale = (roi_end - roi_start) / (double)out_size;
  const int raw_taps = raw_tap_count(interp, scale, antialias);
  const int taps = raw_taps > in_size ? in_size : raw_taps;
  if (interp == STK__INTERP_NN) {
    for (int o = 0; o < out_size; o++) {
      double c = roi_start + ((double)o + 0.5) * scale;
      long i = (long)floor(c);
      first[o] = (int32_t)(i < 0 ? 0 : (i >= in_size ? in_size - 1 : i));
      weights[o] = 1.0f;
    }
    return 1;
  }
  const double radius = filter_radius(interp, scale, antialias);
  const double stretch = (antialias && scale > 1.0) ? scale : 1.0;
  for (int o = 0; o < out_size; o++) {
    const double c = roi_start + ((double)o + 0.5) * scale;
    const long lo = (long)floor(c - radius - 0.5) + 1; /* first centre inside the support */
    long start = lo;
    if (start > in_size - taps) start = in_size - taps;
    if (start < 0) start = 0;
    /* The filter values are computed once: the first HELD of them are kept for the second loop
     * (any wider filter recomputes the rest, which gives the same doubles). */
    enum { HELD = 64 };
    double held[HELD];
    double sum = 0.0;
    for (int k = 0; k < raw_taps; k++) {
      const double w = filter_value(interp, ((double)(lo + k) + 0.5 - c) / stretch);
      if (k < HELD) held[k] = w;
      sum += w;
    }
    float *out_w = weights + (size_t)o * (size_t)taps;
    for (int k = 0; k < taps; k++) out_w[k] = 0.0f;
    if (sum > 0.0) {
      for (int k = 0; k < raw_taps; k++) {
        long i = lo + k;
        double w = k < HELD ? held[k] : filter_value(interp, ((double)i + 0.5 - c) / stretch);
        if (w == 0.0) continue;
        long clamped = i < 0 ? 0 : (i >= in_size ? in_size - 1 : i);
        out_w[clamped - start] += (float)(w / sum);
      }
    } else {
      /* Cannot happen for radius >= 0.5 (the nearest centre is within 0.5); kept defined. */
      long nearest = (long)floor(c);
      nearest = nearest < 0 ? 0 : (nearest >= in_size ? in_size - 1 : nearest);
      out_w[nearest - start] = 1.0f;
    }
    first[o] = (int32_t)start;
  }
  return taps;
}

/* ---- Resize --------------------------------------------------------------------------------- */
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
  double radius = interp == STK__INTERP_NN ? 0.5 : filter_radius(interp, scale, antialias);
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
    case 1: HORIZONTAL_ROWS(1); return;
    case 2: HORIZONTAL_ROWS(2); return;
    case 3: HORIZONTAL_ROWS(3); return;
    case 4: HORIZONTAL_ROWS(4); return;
    case 5: HORIZONTAL_ROWS(5); return;
    case 6: HORIZONTAL_ROWS(6); return;
    default: HORIZONTAL_ROWS(taps); return;
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
      case 1: horizontal_taps(rows, outs, dst_w, c, taps, 1, first, weights, splat_weights); return;
      case 2: horizontal_taps(rows, outs, dst_w, c, taps, 2, first, weights, splat_weights); return;
      case 3: horizontal_taps(rows, outs, dst_w, c, taps, 3, first, weights, splat_weights); return;
      default: horizontal_taps(rows, outs, dst_w, c, taps, 4, first, weights, splat_weights); return;
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
    case 1: vertical_row(rows, w, 1, len, out); return;
    case 2: vertical_row(rows, w, 2, len, out); return;
    case 3: vertical_row(rows, w, 3, len, out); return;
    case 4: vertical_row(rows, w, 4, len, out); return;
    case 5: vertical_row(rows, w, 5, len, out); return;
    case 6: vertical_row(rows, w, 6, len, out); return;
    default: vertical_row(rows, w, taps, len, out); return;
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
      horizontal_dispatch(batch_rows, batch_outs, count, dst_w, channels, taps_x, x_first, x_weights,
                          x_splat_weights);
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
  return stk__resize_u8_roi(src, src_w, src_h, src_stride, channels, r, dst, dst_w, dst_h, interp, antialias,
                            scratch);
}

/* ---- Output size rules ---------------------------------------------------------------------- */

stk_status stk__resize_plan(const stk__resize_params *params, int in_w, int in_h, int *out_w, int *out_h,
                            double roi[4]) {
  if (in_w <= 0 || in_h <= 0) return STK_EINVAL;
  double want_x = params->resize_x, want_y = params->resize_y;
  stk__resize_mode mode = params->mode;
  if (params->resize_shorter > 0) {
    want_x = want_y = params->resize_shorter;
    mode = STK__RESIZE_NOT_SMALLER;
  } else if (params->resize_longer > 0) {
    want_x = want_y = params->resize_longer;
    mode = STK__RESIZE_NOT_LARGER;
  }
  double fx = in_w, fy = in_h; /* fractional output size */
  int keeps_aspect = 1;
  if (want_x > 0 && want_y > 0) {
    if (mode == STK__RESIZE_NOT_LARGER || mode == STK__RESIZE_NOT_SMALLER) {
      double sx = want_x / in_w, sy = want_y / in_h;
      double s = mode == STK__RESIZE_NOT_LARGER ? (sx < sy ? sx : sy) : (sx > sy ? sx : sy);
      fx = in_w * s;
      fy = in_h * s;
    } else {
      fx = want_x;
      fy = want_y;
      keeps_aspect = 0;
    }
  } else if (want_x > 0) {
    fx = want_x;
    if (mode == STK__RESIZE_STRETCH)
      keeps_aspect = 0;
    else
      fy = in_h * (want_x / in_w);
  } else if (want_y > 0) {
    fy = want_y;
    if (mode == STK__RESIZE_STRETCH)
      keeps_aspect = 0;
    else
      fx = in_w * (want_y / in_h);
  }
  /* max_size: shrink both extents together when the aspect ratio is kept, each alone otherwise. */
  double cap = 1.0;
  if (params->max_size_x > 0 && fx > params->max_size_x) {
    if (keeps_aspect) cap = params->max_size_x / fx < cap ? params->max_size_x / fx : cap;
    else fx = params->max_size_x;
  }
  if (params->max_size_y > 0 && fy > params->max_size_y) {
    if (keeps_aspect) cap = params->max_size_y / fy < cap ? params->max_size_y / fy : cap;
    else fy = params->max_size_y;
  }
  fx *= cap;
  fy *= cap;
  if (!(fx >= 0.5 && fy >= 0.5) || fx > MAX_OUTPUT_SIDE || fy > MAX_OUTPUT_SIDE) return STK_EINVAL;
  int ox = (int)floor(fx + 0.5), oy = (int)floor(fy + 0.5);
  *out_w = ox;
  *out_h = oy;
  if (params->subpixel_scale) {
    /* Keep the exact scale fx / in_w: the rounded output covers a slightly smaller or larger
     * source interval, centred on the image. */
    double len_x = (double)in_w * (double)ox / fx, len_y = (double)in_h * (double)oy / fy;
    roi[0] = ((double)in_w - len_x) * 0.5;
    roi[1] = ((double)in_h - len_y) * 0.5;
    roi[2] = roi[0] + len_x;
    roi[3] = roi[1] + len_y;
  } else {
    roi[0] = 0.0;
    roi[1] = 0.0;
    roi[2] = in_w;
    roi[3] = in_h;
  }
  return STK_OK;
}

/* ---- float16 -------------------------------------------------------------------------------- */

ALWAYS_INLINE uint16_t half_from_float(float value) {
  uint32_t bits;
  memcpy(&bits, &value, sizeof bits);
  uint32_t sign = (bits >> 16) & 0x8000u;
  uint32_t mag = bits & 0x7fffffffu;
  if (mag >= 0x7f800000u) return (uint16_t)(sign | 0x7c00u | (mag > 0x7f800000u ? 0x200u : 0u)); /* inf/NaN */
  if (mag >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u); /* >= 65520 rounds to infinity */
  if (mag < 0x38800000u) {                                    /* below 2^-14: subnormal half */
    if (mag < 0x33000000u) return (uint16_t)sign;           /* below 2^-25: rounds to zero */
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

uint16_t stk__float_to_half(float value) { return half_from_float(value); }

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

/* ---- crop_mirror_normalize ------------------------------------------------------------------ */

ALWAYS_INLINE void store_value(void *dst, size_t index, float value, const stk_dtype dtype) {
  if (dtype == STK_DTYPE_FLOAT32)
    ((float *)dst)[index] = value;
  else if (dtype == STK_DTYPE_FLOAT16)
    ((uint16_t *)dst)[index] = half_from_float(value);
  else
    ((uint8_t *)dst)[index] = stk__u8_from_float(value);
}

typedef struct cmn_args {
  const uint8_t *src;
  int src_w, src_h;
  size_t src_stride;
  int crop_x, crop_y, crop_w, crop_h, mirror;
  const float *mean, *inv_std;
  float shift;
  float fill[5];
} cmn_args;

/* One instantiation per (dtype, layout, channel count, pad): the constants fold after inlining
 * so the inner loops are straight-line per pixel. */
ALWAYS_INLINE void cmn_kernel(const cmn_args *a, void *dst, const int channels, const int pad, const int chw,
                              const stk_dtype dtype) {
  const int out_channels = channels + pad;
  const size_t plane = (size_t)a->crop_w * (size_t)a->crop_h;
  float mean[4] = {0, 0, 0, 0}, inv_std[4] = {1, 1, 1, 1};
  for (int c = 0; c < channels; c++) {
    mean[c] = a->mean[c];
    inv_std[c] = a->inv_std[c];
  }
  const float shift = a->shift;
  /* Output columns whose source column lies inside the image: [x_begin, x_end). */
  int x_begin, x_end;
  if (a->mirror) {
    x_begin = a->crop_x + a->crop_w - a->src_w; /* source x = crop_x + crop_w - 1 - x */
    x_end = a->crop_x + a->crop_w;
  } else {
    x_begin = -a->crop_x;
    x_end = a->src_w - a->crop_x;
  }
  if (x_begin < 0) x_begin = 0;
  if (x_begin > a->crop_w) x_begin = a->crop_w;
  if (x_end > a->crop_w) x_end = a->crop_w;
  if (x_end < x_begin) x_end = x_begin;
  const ptrdiff_t step = a->mirror ? -(ptrdiff_t)channels : (ptrdiff_t)channels;

#define OUT_INDEX(row_base, x, c) \
  (chw ? (size_t)(c) * plane + (row_base) + (size_t)(x) : ((row_base) + (size_t)(x)) * (size_t)out_channels + (size_t)(c))

  for (int y = 0; y < a->crop_h; y++) {
    const int sy = a->crop_y + y;
    const size_t row_base = (size_t)y * (size_t)a->crop_w;
    int fill_to = x_begin, fill_from = x_end;
    if (sy < 0 || sy >= a->src_h) {
      fill_to = a->crop_w;
      fill_from = a->crop_w;
    }
    for (int x = 0; x < fill_to; x++)
      for (int c = 0; c < out_channels; c++) store_value(dst, OUT_INDEX(row_base, x, c), a->fill[c], dtype);
    if (fill_to < fill_from) {
      const int first_sx = a->mirror ? a->crop_x + a->crop_w - 1 - x_begin : a->crop_x + x_begin;
      const uint8_t *p = a->src + (size_t)sy * a->src_stride + (size_t)first_sx * (size_t)channels;
      for (int x = x_begin; x < x_end; x++, p += step) {
        for (int c = 0; c < channels; c++)
          store_value(dst, OUT_INDEX(row_base, x, c), ((float)p[c] - mean[c]) * inv_std[c] + shift, dtype);
        if (pad) store_value(dst, OUT_INDEX(row_base, x, channels), a->fill[channels], dtype);
      }
    }
    for (int x = fill_from; x < a->crop_w; x++)
      for (int c = 0; c < out_channels; c++) store_value(dst, OUT_INDEX(row_base, x, c), a->fill[c], dtype);
  }
#undef OUT_INDEX
}

#define CMN_FOR_DTYPE(channels, pad, chw)                                                          \
  do {                                                                                             \
    if (dtype == STK_DTYPE_FLOAT32)                                                                \
      cmn_kernel(&a, dst, channels, pad, chw, STK_DTYPE_FLOAT32);                                  \
    else if (dtype == STK_DTYPE_FLOAT16)                                                           \
      cmn_kernel(&a, dst, channels, pad, chw, STK_DTYPE_FLOAT16);                                  \
    else                                                                                           \
      cmn_kernel(&a, dst, channels, pad, chw, STK_DTYPE_UINT8);                                    \
  } while (0)

stk_status stk__crop_mirror_normalize_ex(const uint8_t *src, int src_w, int src_h, size_t src_stride, int channels,
                                         int crop_x, int crop_y, int crop_w, int crop_h, int mirror,
                                         const float *mean, const float *inv_std, float shift, const float *fill,
                                         stk__out_layout layout, stk_dtype dtype, int pad_output, void *dst) {
  if (!src || !dst || !mean || !inv_std || src_w <= 0 || src_h <= 0 || channels < 1 || channels > 4 ||
      crop_w <= 0 || crop_h <= 0 || src_stride < (size_t)src_w * (size_t)channels)
    return STK_EINVAL;
  if (dtype != STK_DTYPE_FLOAT32 && dtype != STK_DTYPE_FLOAT16 && dtype != STK_DTYPE_UINT8) return STK_ENOTSUP;
  const int pad = (pad_output && channels == 3) ? 1 : 0;
  cmn_args a = {src, src_w, src_h, src_stride, crop_x, crop_y, crop_w, crop_h, mirror != 0, mean, inv_std, shift,
                {0, 0, 0, 0, 0}};
  if (fill)
    for (int c = 0; c < channels + pad; c++) a.fill[c] = fill[c];
  const int chw = layout == STK__LAYOUT_CHW;
  if (channels == 3 && !pad && chw)
    CMN_FOR_DTYPE(3, 0, 1);
  else if (channels == 3 && !pad)
    CMN_FOR_DTYPE(3, 0, 0);
  else if (channels == 3 && chw)
    CMN_FOR_DTYPE(3, 1, 1);
  else if (channels == 3)
    CMN_FOR_DTYPE(3, 1, 0);
  else if (channels == 1 && chw)
    CMN_FOR_DTYPE(1, 0, 1);
  else if (channels == 1)
    CMN_FOR_DTYPE(1, 0, 0);
  else if (chw)
    CMN_FOR_DTYPE(channels, 0, 1);
  else
    CMN_FOR_DTYPE(channels, 0, 0);
  return STK_OK;
}

stk_status stk__crop_mirror_normalize(const uint8_t *src, int src_w, int src_h, size_t src_stride, int channels,
                                      int crop_x, int crop_y, int crop_w, int crop_h, int mirror, const float *mean,
                                      const float *inv_std, stk__out_layout layout, stk_dtype dtype, int pad_output,
                                      void *dst) {
  return stk__crop_mirror_normalize_ex(src, src_w, src_h, src_stride, channels, crop_x, crop_y, crop_w, crop_h, mirror,
                                       mean, inv_std, 0.0f, NULL, layout, dtype, pad_output, dst);
}

stk_status stk__check_hwc_u8_image(const stk__tensor *in, char *err, size_t err_size) {
  if (in->dtype != STK_DTYPE_UINT8 || in->ndim != 3 || in->shape[2] < 1 || in->shape[2] > 4 || in->shape[0] < 1 ||
      in->shape[1] < 1) {
    stk__errorf(err, err_size, "input must be a non-empty HWC uint8 image with 1..4 channels");
    return STK_EINVAL;
  }
  return STK_OK;
}
