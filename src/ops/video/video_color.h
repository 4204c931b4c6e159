/* src/ops/video/video_color.h: readers.video's colour conversion of 8-bit 4:2:0 pictures (YCbCr
 * with half-size chroma) to RGB or YCbCr 4:4:4, shared by the CPU path (video_decode_cpu.c, planar
 * yuv420p from libavcodec) and the GPU path (video_nvdec_kernels.cu, NV12 from NVDEC), so the two
 * give the same bytes: every step is integer arithmetic, no float rounding that could differ
 * between nvcc's and the host compiler's code. Hot path (per pixel); header-only, static inline.
 *
 * Chroma upsampling is bilinear at the stream's chroma siting (AVChromaLocation: H.264/HEVC's
 * default, "left", puts chroma sample j at luma column 2j and between luma rows 2i and 2i+1).
 * Every siting of 4:2:0 puts the sampling point on a quarter of a chroma sample, so the weights
 * are quarters and the upsampled chroma is an exact integer in 1/16 units. libswscale is not used
 * for these formats because its same-size converters ignore the siting (yuv420p to rgb24 reuses
 * each chroma sample for a 2x2 block; to yuv444p it assumes centred chroma, bicubic), which made
 * the CPU and GPU outputs differ by up to 250 per value.
 *
 * RGB: the BT.601 or BT.709 matrix, limited (Y 16..235, C 16..240) or full range in, full-range RGB
 * out, coefficients in Q16, rounded to nearest and clamped to 0..255. YCbCr: Y as stored, Cb/Cr
 * upsampled and rounded. */
#ifndef STOKER_OPS_COMMON_VIDEO_COLOR_H
#define STOKER_OPS_COMMON_VIDEO_COLOR_H

#include <stdint.h>

#ifdef __CUDACC__
#define STK__VC_FN static inline __host__ __device__
#else
#define STK__VC_FN static inline
#endif

typedef struct stk__video_color {
  int32_t y_off, y_mul;           /* luma: (Y - y_off) * y_mul, Q16 */
  int32_t r_cr, g_cb, g_cr, b_cb; /* chroma terms per 1/16 chroma unit, Q16 */
  int32_t h_pos2, v_pos2; /* chroma siting in half luma samples: h 0 left / 1 centre; v 0 top / 1 centre / 2 bottom */
} stk__video_color;

/* Coefficients for a matrix (bt709: else BT.601), a range (full: else limited) and an
 * AVChromaLocation value (0 unspecified and 1 left: H.264's default; 2 centre; 3 top-left; 4 top;
 * 5 bottom-left; 6 bottom). Host only (doubles, once per stream). */
static inline void stk__video_color_init(stk__video_color *c, int bt709, int full, int chroma_location) {
  const double kr = bt709 ? 0.2126 : 0.299, kb = bt709 ? 0.0722 : 0.114, kg = 1.0 - kr - kb;
  const double ys = full ? 1.0 : 255.0 / 219.0, cs = (full ? 1.0 : 255.0 / 224.0) / 16.0;
  c->y_off = full ? 0 : 16;
  c->y_mul = (int32_t)(ys * 65536.0 + 0.5);
  c->r_cr = (int32_t)(2.0 * (1.0 - kr) * cs * 65536.0 + 0.5);
  c->b_cb = (int32_t)(2.0 * (1.0 - kb) * cs * 65536.0 + 0.5);
  c->g_cb = (int32_t)(2.0 * (1.0 - kb) * kb / kg * cs * 65536.0 + 0.5);
  c->g_cr = (int32_t)(2.0 * (1.0 - kr) * kr / kg * cs * 65536.0 + 0.5);
  static const int32_t h[7] = {0, 0, 1, 0, 1, 0, 1}, v[7] = {1, 1, 1, 0, 0, 2, 2};
  const int loc = chroma_location >= 0 && chroma_location < 7 ? chroma_location : 0;
  c->h_pos2 = h[loc], c->v_pos2 = v[loc];
}

/* Where output position `x` samples a chroma line of `n` samples at siting `pos2`: the two chroma
 * samples *i0, *i1 and the weight (0..3 quarters) of *i1. */
STK__VC_FN void stk__video_chroma_tap(int x, int32_t pos2, int n, int *i0, int *i1, int *w) {
  int q = 2 * x - (int)pos2; /* 4 x the chroma coordinate (x - pos) / 2, pos = pos2 / 2 */
  q = q < 0 ? 0 : (q > 4 * (n - 1) ? 4 * (n - 1) : q);
  *i0 = q >> 2;
  *w = q & 3;
  *i1 = *i0 + 1 < n ? *i0 + 1 : n - 1;
}

/* Host only: one chroma row of cw samples (already x4 from the vertical taps) across to w output
 * samples (x16) at horizontal siting pos2 (0 left, 1 centre): stk__video_chroma_tap's weights
 * written out per sample pair, so the loop has no gathers and vectorises (src/ops/video/test_video_color.c
 * checks it against the taps). */
static inline void stk__video_chroma_across(const int32_t *v, int cw, int w, int32_t pos2, int32_t *out) {
  const int last = cw - 1;
  if (!pos2) { /* left: even x on a sample, odd x halfway to the next */
    for (int j = 0; j < last; j++) out[2 * j] = 4 * v[j], out[2 * j + 1] = 2 * (v[j] + v[j + 1]);
  } else { /* centre: a quarter before / after each sample */
    out[0] = 4 * v[0];
    if (w > 1) out[1] = 3 * v[0] + v[last > 0 ? 1 : 0];
    for (int j = 1; j < last; j++) out[2 * j] = v[j - 1] + 3 * v[j], out[2 * j + 1] = 3 * v[j] + v[j + 1];
  }
  if (last > 0 || !pos2) { /* the last sample, clamped on the right */
    out[2 * last] = pos2 && last > 0 ? v[last - 1] + 3 * v[last] : 4 * v[last];
    if (2 * last + 1 < w) out[2 * last + 1] = 4 * v[last];
  }
}

STK__VC_FN uint8_t stk__video_clamp_q16(int32_t v) { /* round, clamp to 0..255 (min/max: vectorises) */
  v += 32768;
  v = v < 0 ? 0 : v;
  v = v > (255 << 16) ? (255 << 16) : v;
  return (uint8_t)(v >> 16);
}

/* One pixel: luma `y` (0..255), chroma cb16/cr16 in 1/16 units (0..4080); rgb: else YCbCr. */
STK__VC_FN void stk__video_pixel(const stk__video_color c, int32_t y, int32_t cb16, int32_t cr16, int rgb,
                                 uint8_t out[3]) {
  /* c by value: the byte stores through `out` may alias anything, so a pointer would make the
   * compiler reload the coefficients after every store (and not vectorise the caller's loop) */
  if (!rgb) {
    out[0] = (uint8_t)y, out[1] = (uint8_t)((cb16 + 8) >> 4), out[2] = (uint8_t)((cr16 + 8) >> 4);
    return;
  }
  const int32_t yy = (y - c.y_off) * c.y_mul, cb = cb16 - 2048, cr = cr16 - 2048;
  out[0] = stk__video_clamp_q16(yy + c.r_cr * cr);
  out[1] = stk__video_clamp_q16(yy - c.g_cb * cb - c.g_cr * cr);
  out[2] = stk__video_clamp_q16(yy + c.b_cb * cb);
}

#endif
