/* src/ops/augment/auto_aug/auto_aug.c: `_auto_aug.apply` (the AutoAugment family's applier:
 * python/stoker/auto_aug/ draws each sample's entries with the random operators and calls it once)
 * and `experimental.equalize` (DALI's) -- schemas and the CPU reference: per sample the stages of
 * its plan (auto_aug_plan.c), each a table lookup (built from the sample's histogram where the
 * kind needs one), a colour mix, a 3x3 sharpen or a warp (warp_affine's sampler), stage to stage
 * through two per-thread scratch images. The arithmetic is auto_aug.h's, which the GPU kernels
 * (auto_aug_gpu.cu) share. Hot path: run_sample per sample; no allocation once the scratch and
 * output buffers have grown. */
/* Each float operation rounded alone, as the kernels' __fmul_rn / __fadd_rn: no FMA contraction
 * (GCC contracts a * b + c by default where the target has FMA, aarch64 among them). */
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops/augment/auto_aug/auto_aug.h"
#include "ops/op_impls.h"

static stk_status aa_init(stk__op *op, char *err, size_t err_size) {
  stk__aa_table *t = calloc(1, sizeof *t);
  if (!t) return STK_ENOMEM;
  stk_status s = stk__aa_table_parse(op, t, err, err_size);
  if (s != STK_OK) {
    free(t);
    return s;
  }
  op->state = t;
  return STK_OK;
}

static void aa_destroy(stk__op *op) {
  if (!op->state) return;
  stk__aa_table_free(op->state);
  free(op->state);
  op->state = NULL;
}

/* A table kind over w x h x ch: histogram (when the kind needs one), the 256-entry table per
 * channel, then the lookup. */
static void apply_lut(const stk__aa_stage *st, const uint8_t *src, uint8_t *dst, int w, int h, int ch) {
  const size_t pixels = (size_t)w * h;
  uint32_t hist[STK__AA_MAX_CHANNELS * 256];
  stk__aa_stats stats;
  memset(&stats, 0, sizeof stats);
  if (stk__aa_needs_hist(st->kind)) {
    memset(hist, 0, sizeof(uint32_t) * 256 * (size_t)ch);
    for (size_t p = 0; p < pixels; p++)
      for (int c = 0; c < ch; c++) hist[c * 256 + src[p * ch + c]]++;
    stk__aa_stats_make(hist, ch, (uint32_t)pixels, &stats);
  }
  uint8_t lut[STK__AA_MAX_CHANNELS][256];
  for (int c = 0; c < ch; c++) {
    uint32_t cdf = 0;
    for (int x = 0; x < 256; x++) {
      if (stk__aa_needs_hist(st->kind)) cdf += hist[c * 256 + x];
      lut[c][x] = stk__aa_lut_value(st->kind, st->param, &stats, c, x, cdf);
    }
  }
  for (size_t p = 0; p < pixels; p++)
    for (int c = 0; c < ch; c++) dst[p * ch + c] = lut[c][src[p * ch + c]];
}

/* color: the first three channels mixed with their grey; others (and 1- or 2-channel images) kept. */
static void apply_color(const stk__aa_stage *st, const uint8_t *src, uint8_t *dst, int w, int h, int ch) {
  const size_t pixels = (size_t)w * h;
  if (ch < 3) {
    memcpy(dst, src, pixels * (size_t)ch);
    return;
  }
  for (size_t p = 0; p < pixels; p++) {
    stk__aa_color_pixel(src + p * ch, st->param, dst + p * ch);
    for (int c = 3; c < ch; c++) dst[p * ch + c] = src[p * ch + c];
  }
}

/* sharpness: the frame copied, the inner pixels from three row pointers (stk__aa_sharpen_value's
 * sums, in integers, so in any order). */
static void apply_sharpen(const stk__aa_stage *st, const uint8_t *src, uint8_t *dst, int w, int h, int ch) {
  const size_t stride = (size_t)w * ch;
  if (w < 3 || h < 3) {
    memcpy(dst, src, stride * h);
    return;
  }
  memcpy(dst, src, stride);
  memcpy(dst + (h - 1) * stride, src + (h - 1) * stride, stride);
  for (int y = 1; y < h - 1; y++) {
    const uint8_t *r0 = src + (y - 1) * stride, *r1 = r0 + stride, *r2 = r1 + stride;
    uint8_t *o = dst + y * stride;
    memcpy(o, r1, (size_t)ch);
    memcpy(o + stride - ch, r1 + stride - ch, (size_t)ch);
    for (size_t k = (size_t)ch; k < stride - (size_t)ch; k++) {
      const int sum =
          r0[k - ch] + r0[k] + r0[k + ch] + r1[k - ch] + 5 * r1[k] + r1[k + ch] + r2[k - ch] + r2[k] + r2[k + ch];
      o[k] = stk__aa_sharpen_mix(r1[k], sum, st->param);
    }
  }
}

/* warp.c's fetch for uint8: a pixel value, fill_value outside (or the nearest border pixel). */
static inline float fetch_u8(const stk__warp_desc *d, int x, int y, int c) {
  if (x < 0 || y < 0 || x >= d->src_w || y >= d->src_h) {
    if (d->has_fill) return d->fill;
    x = x < 0 ? 0 : (x >= d->src_w ? d->src_w - 1 : x);
    y = y < 0 ? 0 : (y >= d->src_h ? d->src_h - 1 : y);
  }
  return (float)((const uint8_t *)d->src)[((size_t)y * d->src_w + x) * d->channels + c];
}

static inline float bounded(float v) { return !(v > -1e7f) ? -1e7f : (v > 1e7f ? 1e7f : v); }

/* floorf of a bounded coordinate, as an int (without a libm call where SSE4.1 is not assumed). */
static inline int floor_int(float v) {
  const int i = (int)v;
  return i - (v < (float)i);
}

/* stk__warp_run for uint8 in and out: warp.c's float operations in its order, uncontracted (the
 * pragma above), so the bytes are the same (test_auto_aug compares), with the neighbours read
 * straight from the rows where all of them lie inside the image. */
void stk__aa_warp_u8(const stk__warp_desc *d) {
  const uint8_t *src = d->src;
  const int w = d->src_w, h = d->src_h, ch = d->channels;
  const size_t stride = (size_t)w * ch;
  for (int y = 0; y < d->dst_h; y++) {
    uint8_t *out = (uint8_t *)d->dst + (size_t)y * d->dst_w * ch;
    for (int x = 0; x < d->dst_w; x++, out += ch) {
      const float cx = (float)x + 0.5f, cy = (float)y + 0.5f;
      const float ax = d->m[0] * cx, bx = d->m[1] * cy, ay = d->m[3] * cx, by = d->m[4] * cy;
      const float sx = bounded((ax + bx) + d->m[2]), sy = bounded((ay + by) + d->m[5]);
      if (d->nearest) {
        const int ix = floor_int(sx), iy = floor_int(sy);
        if (ix >= 0 && iy >= 0 && ix < w && iy < h) memcpy(out, src + iy * stride + (size_t)ix * ch, (size_t)ch);
        else
          for (int c = 0; c < ch; c++) out[c] = stk__aa_u8(fetch_u8(d, ix, iy, c));
        continue;
      }
      const float fx = sx - 0.5f, fy = sy - 0.5f;
      const int ix = floor_int(fx), iy = floor_int(fy);
      const float wx = fx - (float)ix, wy = fy - (float)iy, ux = 1.0f - wx, uy = 1.0f - wy;
      if (ix >= 0 && iy >= 0 && ix + 1 < w && iy + 1 < h) {
        const uint8_t *p0 = src + iy * stride + (size_t)ix * ch, *p1 = p0 + stride;
        for (int c = 0; c < ch; c++) {
          const float t0 = (float)p0[c] * ux, t1 = (float)p0[ch + c] * wx;
          const float b0 = (float)p1[c] * ux, b1 = (float)p1[ch + c] * wx;
          const float top = (t0 + t1) * uy, bottom = (b0 + b1) * wy;
          out[c] = stk__aa_u8(top + bottom);
        }
        continue;
      }
      for (int c = 0; c < ch; c++) {
        const float t0 = fetch_u8(d, ix, iy, c) * ux, t1 = fetch_u8(d, ix + 1, iy, c) * wx;
        const float b0 = fetch_u8(d, ix, iy + 1, c) * ux, b1 = fetch_u8(d, ix + 1, iy + 1, c) * wx;
        const float top = (t0 + t1) * uy, bottom = (b0 + b1) * wy;
        out[c] = stk__aa_u8(top + bottom);
      }
    }
  }
}

void stk__aa_apply_stage_cpu(const stk__aa_table *t, const stk__aa_stage *st, const uint8_t *src, uint8_t *dst, int w,
                             int h, int ch) {
  switch (stk__aa_kind_class(st->kind)) {
    case STK__AA_CLASS_LUT:
      apply_lut(st, src, dst, w, h, ch);
      break;
    case STK__AA_CLASS_COLOR:
      apply_color(st, src, dst, w, h, ch);
      break;
    case STK__AA_CLASS_SHARPEN:
      apply_sharpen(st, src, dst, w, h, ch);
      break;
    case STK__AA_CLASS_WARP: {
      stk__warp_desc d;
      stk__aa_warp_desc(t, st, w, h, ch, &d);
      d.src = src;
      d.dst = dst;
      stk__aa_warp_u8(&d);
      break;
    }
    default:
      memcpy(dst, src, (size_t)w * h * ch);
      break;
  }
}

static stk_status aa_run(stk__op *op, stk__sample_ctx *ctx, stk__tensor *const *inputs, stk__tensor *const *outputs) {
  const stk__aa_table *t = op->state;
  const stk__tensor *in = inputs[0];
  stk__aa_plan plan;
  stk_status s = stk__aa_plan_sample(op, t, in, inputs, &plan, ctx->err, ctx->err_size);
  if (s != STK_OK) return s;
  s = stk__sample_output_resize(ctx, outputs, 0, STK_DTYPE_UINT8, in->ndim, in->shape, in->layout);
  if (s != STK_OK) return s;
  const size_t bytes = in->nbytes;
  if (plan.num_stages == 0 || bytes == 0) {
    if (bytes) memcpy(outputs[0]->data, in->data, bytes);
    return STK_OK;
  }
  uint8_t *scratch[2] = {NULL, NULL};
  for (int k = 0; k < 2 && k < plan.num_stages - 1; k++) {
    scratch[k] = stk__scratch_get(ctx, k, bytes);
    if (!scratch[k]) return STK_ENOMEM;
  }
  const uint8_t *src = in->data;
  for (int k = 0; k < plan.num_stages; k++) {
    uint8_t *dst = k == plan.num_stages - 1 ? outputs[0]->data : scratch[k % 2];
    stk__aa_apply_stage_cpu(t, &plan.stages[k], src, dst, plan.width, plan.height, plan.channels);
    src = dst;
  }
  return STK_OK;
}

const stk__op_impl stk__cpu_impl_auto_aug_apply = {.init = aa_init, .destroy = aa_destroy, .run_sample = aa_run};

static const stk__arg_schema apply_args[] = {
    {"kinds", STK_ARG_STRING_LIST, NULL, 1, 0,
     "the table: num_stages rows of entries, each an augmentation kind (identity, invert, posterize, solarize, "
     "solarize_add, brightness, contrast, equalize, auto_contrast, color, sharpness, shear_x, shear_y, translate_x, "
     "translate_y, translate_x_rel, translate_y_rel, rotate)"},
    {"params", STK_ARG_FLOAT_LIST, NULL, 1, 0, "each entry's parameter (see docs/operators-augment.md)"},
    {"num_stages", STK_ARG_INT, "1", 0, 0, "stages applied one after the other (rows of the table)"},
    {"entry", STK_ARG_INT_LIST, "[0]", 0, 1,
     "per sample: the entry each stage applies (one value: the same entry index in every row); bind it to "
     "random.choice"},
    {"shape", STK_ARG_FLOAT_LIST, "[]", 0, 1,
     "per sample [H, W(, C)] the _rel translations scale by (default: the image's own); may be bound per sample"},
    {"fill_value", STK_ARG_FLOAT, NULL, 0, 0, "value the warp kinds fill with (not given: the border repeats)"},
    {"interp_type", STK_ARG_STRING, "INTERP_LINEAR", 0, 0, "warp kinds' interpolation: INTERP_LINEAR | INTERP_NN"},
};

const stk__op_schema stk__op_auto_aug_apply = {
    .name = "_auto_aug.apply",
    .doc =
        "The AutoAugment family's applier (stoker.auto_aug builds it): per sample, the augmentations of the "
        "table entries its `entry` picks, one stage after another, on uint8 HWC images (internal).",
    .min_inputs = 1,
    .max_inputs = 1,
    .num_outputs = 1,
    .devices = STK_OPDEV_CPU | STK_OPDEV_GPU,
    .args = apply_args,
    .num_args = (int)(sizeof apply_args / sizeof apply_args[0]),
    .array_outputs = 1u << 0,
};

const stk__op_schema stk__op_equalize = {
    .name = "experimental.equalize",
    .doc =
        "Histogram equalisation of each channel of uint8 HWC (or HW) images, as DALI's: the cumulative histogram "
        "less its first non-empty count, scaled to 0..255 (a channel of one value is kept).",
    .min_inputs = 1,
    .max_inputs = 1,
    .num_outputs = 1,
    .devices = STK_OPDEV_CPU | STK_OPDEV_GPU,
    .args = NULL,
    .num_args = 0,
    .array_outputs = 1u << 0,
};
