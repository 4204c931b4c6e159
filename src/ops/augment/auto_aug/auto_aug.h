/* src/ops/augment/auto_aug/auto_aug.h: what the AutoAugment applier (`_auto_aug.apply`) and
 * `experimental.equalize` share, CPU and GPU: the augmentation kinds, the parsed table, the
 * per-sample plan (which kind and parameter each stage applies) and the per-pixel arithmetic, as
 * inline functions compiled for the host and the device alike so the CUDA kernels
 * (auto_aug_gpu.cu) and the CPU reference (auto_aug.c) compute the same bytes.
 *
 * Images: HWC uint8 (or HW, one channel), 1 to STK__AA_MAX_CHANNELS channels. Every kind keeps
 * the image's size. The kinds (python/stoker/auto_aug/augmentations.py turns DALI's magnitudes
 * into these parameters):
 *   identity; invert (255 - x); posterize (x & mask, param = the mask); solarize (x < param ? x :
 *   255 - x); solarize_add (x < 128 ? x + param : x); brightness (x * param); contrast (centre +
 *   (x - centre) * param, centre = the channel means weighted 0.299/0.587/0.114 for RGB, their
 *   plain mean otherwise); equalize (per channel, DALI's: the cumulative histogram less its first
 *   non-empty count, scaled to 0..255, rounded half to even; a channel of one value unchanged);
 *   auto_contrast (per channel (x - lo) * (255 / (hi - lo)), unchanged when hi == lo);
 *   color (grey + param * (x - grey), grey = 0.299 R + 0.587 G + 0.114 B; one channel unchanged);
 *   sharpness (param * x + (1 - param) * smooth(x), smooth the 3x3 [1 1 1; 1 5 1; 1 1 1] / 13
 *   filter; the 1-pixel frame unchanged, as PIL); shear_x / shear_y (x' = x + param * y, resp.
 *   y' = y + param * x, about the top-left corner); translate_x / translate_y (param pixels, or
 *   with the _rel kinds param * the width / height of `shape`, the sample's own by default);
 *   rotate (param degrees counter-clockwise about the centre, the input's size). The geometric
 *   kinds use the warp operators' sampler (warp_affine/warp.h) with fill_value (or the border)
 *   and interp_type. Float results are rounded half up and clamped (stk__u8_from_float), except
 *   equalize (DALI rounds its table half to even).
 * Arithmetic is single precision, each operation rounded alone (no FMA contraction: the device
 * side spells __fmul_rn / __fadd_rn), equalize's table double precision. Hot path: per sample. */
#ifndef STOKER_OPS_AUGMENT_AUTO_AUG_AUTO_AUG_H
#define STOKER_OPS_AUGMENT_AUTO_AUG_AUTO_AUG_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>

#include "core/op.h"
#include "ops/augment/warp_affine/warp.h"

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__CUDACC__)
#define STK__AA_HD __host__ __device__
#else
#define STK__AA_HD
#endif

#define STK__AA_MAX_CHANNELS 4
#define STK__AA_MAX_STAGES   8
#define STK__AA_MAX_ENTRIES  65536 /* table entries per stage */

typedef enum stk__aa_kind {
  STK__AA_IDENTITY = 0,
  STK__AA_INVERT,
  STK__AA_POSTERIZE,
  STK__AA_SOLARIZE,
  STK__AA_SOLARIZE_ADD,
  STK__AA_BRIGHTNESS,
  STK__AA_CONTRAST,
  STK__AA_EQUALIZE,
  STK__AA_AUTO_CONTRAST,
  STK__AA_COLOR,
  STK__AA_SHARPNESS,
  STK__AA_SHEAR_X,
  STK__AA_SHEAR_Y,
  STK__AA_TRANSLATE_X,
  STK__AA_TRANSLATE_Y,
  STK__AA_TRANSLATE_X_REL,
  STK__AA_TRANSLATE_Y_REL,
  STK__AA_ROTATE,
  STK__AA_KIND_COUNT
} stk__aa_kind;

/* The kind's name as `kinds` spells it ("shear_x"), and the reverse (-1: no such kind). */
STK_INTERNAL const char *stk__aa_kind_name(int kind);
STK_INTERNAL int stk__aa_kind_parse(const char *name);

/* How a kind is computed: a per-channel 256-entry table (from a histogram when stats), a pixel
 * mix of the channels (color), a 3x3 filter (sharpness), or a warp. */
enum { STK__AA_CLASS_COPY = 0, STK__AA_CLASS_LUT, STK__AA_CLASS_COLOR, STK__AA_CLASS_SHARPEN, STK__AA_CLASS_WARP };
STK_INTERNAL int stk__aa_kind_class(int kind);
/* 1 when the kind's table needs the image's histogram (contrast, equalize, auto_contrast). */
static STK__AA_HD inline int stk__aa_needs_hist(int kind) {
  return kind == STK__AA_CONTRAST || kind == STK__AA_EQUALIZE || kind == STK__AA_AUTO_CONTRAST;
}

/* The parsed operator: num_stages stages, each a row of `entries` (kind, param) pairs; a sample
 * applies, at stage s, row s's entry entry[s] (or entry[0] for every stage when it gives one). */
typedef struct stk__aa_table {
  int num_stages;
  int entries;
  int *kinds;    /* [num_stages][entries] */
  float *params; /* [num_stages][entries] */
  int nearest;   /* interp_type */
  int has_fill;  /* fill_value given (else the border repeats) */
  float fill;
} stk__aa_table;

/* Parses the operator's arguments (`_auto_aug.apply`'s table, or `experimental.equalize`: one
 * stage of equalize) into *t (malloc'd arrays: stk__aa_table_free). STK_EINVAL naming the argument. */
STK_INTERNAL stk_status stk__aa_table_parse(const stk__op *op, stk__aa_table *t, char *err, size_t err_size);
STK_INTERNAL void stk__aa_table_free(stk__aa_table *t);

/* One stage of one sample. */
typedef struct stk__aa_stage {
  int kind;
  float param;
  float m[6]; /* warp kinds: destination -> source (warp.h's convention) */
} stk__aa_stage;

/* One sample: its size and the stages it applies (identity stages dropped). */
typedef struct stk__aa_plan {
  int width, height, channels;
  int num_stages;
  stk__aa_stage stages[STK__AA_MAX_STAGES];
} stk__aa_plan;

/* Checks the sample's image (HWC/HW uint8, 1..4 channels) and plans its stages from the per-sample
 * `entry` (and `shape`) argument values in `inputs` (the sample's tensors, host memory). */
STK_INTERNAL stk_status stk__aa_plan_sample(const stk__op *op, const stk__aa_table *t, const stk__tensor *image,
                                            stk__tensor *const *inputs, stk__aa_plan *plan, char *err, size_t err_size);
/* The warp descriptor (warp.h) of a warp stage over a w x h x c image. */
STK_INTERNAL void stk__aa_warp_desc(const stk__aa_table *t, const stk__aa_stage *st, int w, int h, int c,
                                    stk__warp_desc *d);

/* warp.c's sampler (stk__warp_run) for a uint8 -> uint8 descriptor, the same bytes, faster. */
STK_INTERNAL void stk__aa_warp_u8(const stk__warp_desc *d);
/* The CPU reference of one stage of a sample: src -> dst, distinct w x h x ch buffers. */
STK_INTERNAL void stk__aa_apply_stage_cpu(const stk__aa_table *t, const stk__aa_stage *st, const uint8_t *src,
                                          uint8_t *dst, int w, int h, int ch);

/* ---- the arithmetic, host and device ------------------------------------------------------- */
#if defined(__CUDA_ARCH__)
#define STK__AA_MUL(a, b)  __fmul_rn((a), (b))
#define STK__AA_ADD(a, b)  __fadd_rn((a), (b))
#define STK__AA_SUB(a, b)  __fsub_rn((a), (b))
#define STK__AA_DMUL(a, b) __dmul_rn((a), (b))
#else
#define STK__AA_MUL(a, b)  ((float)(a) * (float)(b))
#define STK__AA_ADD(a, b)  ((float)(a) + (float)(b))
#define STK__AA_SUB(a, b)  ((float)(a) - (float)(b))
#define STK__AA_DMUL(a, b) ((double)(a) * (double)(b))
#endif

/* Round half up and clamp to 0..255 (stk__u8_from_float's rule). */
static STK__AA_HD inline uint8_t stk__aa_u8(float v) {
  float r = STK__AA_ADD(v, 0.5f);
  r = r < 0.0f ? 0.0f : (r > 255.0f ? 255.0f : r);
  return (uint8_t)(int)r;
}

/* What a histogram tells the table kinds: per channel the lowest and highest value present and the
 * count of the lowest (equalize's first non-empty bin), the pixel count, and contrast's centre. */
typedef struct stk__aa_stats {
  int lo[STK__AA_MAX_CHANNELS], hi[STK__AA_MAX_CHANNELS];
  uint32_t first[STK__AA_MAX_CHANNELS];
  uint32_t total;
  float centre;
} stk__aa_stats;

/* hist: [channels][256] counts of a w x h image. */
static STK__AA_HD inline void stk__aa_stats_make(const uint32_t *hist, int channels, uint32_t total, stk__aa_stats *s) {
  float means[STK__AA_MAX_CHANNELS];
  s->total = total;
  for (int c = 0; c < channels; c++) {
    const uint32_t *h = hist + c * 256;
    int lo = 255, hi = 0;
    double sum = 0;
    for (int v = 0; v < 256; v++) {
      if (h[v]) {
        lo = v < lo ? v : lo;
        hi = v;
      }
      sum = sum + STK__AA_DMUL((double)v, (double)h[v]);
    }
    s->lo[c] = lo;
    s->hi[c] = hi;
    s->first[c] = lo <= hi ? h[lo] : 0;
    means[c] = total ? (float)(sum / (double)total) : 0.0f;
  }
  if (channels == 3) {
    s->centre = STK__AA_ADD(STK__AA_ADD(STK__AA_MUL(means[0], 0.299f), STK__AA_MUL(means[1], 0.587f)),
                            STK__AA_MUL(means[2], 0.114f));
  } else {
    float acc = 0.0f;
    for (int c = 0; c < channels; c++) acc = STK__AA_ADD(acc, means[c]);
    s->centre = (float)(acc / (float)channels);
  }
}

/* Table entry for value x of channel c; cdf: the count of values <= x in that channel (equalize). */
static STK__AA_HD inline uint8_t stk__aa_lut_value(int kind, float param, const stk__aa_stats *s, int c, int x,
                                                   uint32_t cdf) {
  switch (kind) {
    case STK__AA_INVERT:
      return (uint8_t)(255 - x);
    case STK__AA_POSTERIZE:
      return (uint8_t)(x & ((int)param & 255));
    case STK__AA_SOLARIZE:
      return (float)x < param ? (uint8_t)x : (uint8_t)(255 - x);
    case STK__AA_SOLARIZE_ADD:
      return x < 128 ? (uint8_t)((x + (int)param) & 255) : (uint8_t)x;
    case STK__AA_BRIGHTNESS:
      return stk__aa_u8(STK__AA_MUL((float)x, param));
    case STK__AA_CONTRAST:
      return stk__aa_u8(STK__AA_ADD(s->centre, STK__AA_MUL(STK__AA_SUB((float)x, s->centre), param)));
    case STK__AA_EQUALIZE: {
      if (s->first[c] >= s->total || x < s->lo[c]) return (uint8_t)x;
      const double scale = 255.0 / (double)(s->total - s->first[c]);
      double v = rint(STK__AA_DMUL((double)(cdf - s->first[c]), scale));
      return (uint8_t)(v < 0 ? 0 : (v > 255 ? 255 : v));
    }
    case STK__AA_AUTO_CONTRAST: {
      if (s->hi[c] <= s->lo[c]) return (uint8_t)x;
      const float scale = 255.0f / (float)(s->hi[c] - s->lo[c]);
      return stk__aa_u8(STK__AA_MUL((float)(x - s->lo[c]), scale));
    }
    default:
      return (uint8_t)x;
  }
}

/* color: one RGB pixel p (3 values) mixed with its grey into out. */
static STK__AA_HD inline void stk__aa_color_pixel(const uint8_t *p, float param, uint8_t *out) {
  const float grey = STK__AA_ADD(STK__AA_ADD(STK__AA_MUL((float)p[0], 0.299f), STK__AA_MUL((float)p[1], 0.587f)),
                                 STK__AA_MUL((float)p[2], 0.114f));
  for (int c = 0; c < 3; c++)
    out[c] = stk__aa_u8(STK__AA_ADD(grey, STK__AA_MUL(STK__AA_SUB((float)p[c], grey), param)));
}

/* sharpness at an inner pixel: `sum` = 5 centre + its 8 neighbours (the 3x3 [1 1 1; 1 5 1; 1 1 1]). */
static STK__AA_HD inline uint8_t stk__aa_sharpen_mix(uint8_t centre, int sum, float param) {
  const float smooth = (float)sum / 13.0f;
  return stk__aa_u8(STK__AA_ADD(smooth, STK__AA_MUL(STK__AA_SUB((float)centre, smooth), param)));
}

/* sharpness: value of (x, y, c) of a w x h x ch image (the 1-pixel frame unchanged). */
static STK__AA_HD inline uint8_t stk__aa_sharpen_value(const uint8_t *src, int w, int h, int ch, int x, int y, int c,
                                                       float param) {
  const uint8_t centre = src[((size_t)y * w + x) * ch + c];
  if (x == 0 || y == 0 || x == w - 1 || y == h - 1) return centre;
  int sum = 4 * (int)centre;
  for (int dy = -1; dy <= 1; dy++)
    for (int dx = -1; dx <= 1; dx++) sum += src[((size_t)(y + dy) * w + (x + dx)) * ch + c];
  return stk__aa_sharpen_mix(centre, sum, param);
}

#ifdef __cplusplus
}
#endif
#endif
