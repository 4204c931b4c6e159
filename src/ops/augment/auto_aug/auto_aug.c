/* src/ops/augment/auto_aug/auto_aug.c: `_auto_aug.apply` (the AutoAugment family's applier:
 * python/stoker/auto_aug/ draws each sample's entries with the random operators and calls it once)
 * and `experimental.equalize` (DALI's) -- schemas and the CPU reference: per sample the stages of
 * its plan (auto_aug_plan.c), each a table lookup (built from the sample's histogram where the
 * kind needs one), a colour mix, a 3x3 sharpen or a warp (warp_affine's sampler), stage to stage
 * through two per-thread scratch images. The arithmetic is auto_aug.h's, which the GPU kernels
 * (auto_aug_gpu.cu) share. Hot path: run_sample per sample; no allocation once the scratch and
 * output buffers have grown. */
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

static void apply_sharpen(const stk__aa_stage *st, const uint8_t *src, uint8_t *dst, int w, int h, int ch) {
  for (int y = 0; y < h; y++)
    for (int x = 0; x < w; x++)
      for (int c = 0; c < ch; c++)
        dst[((size_t)y * w + x) * ch + c] = stk__aa_sharpen_value(src, w, h, ch, x, y, c, st->param);
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
      stk__warp_run(&d);
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
