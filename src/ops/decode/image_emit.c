/* src/ops/decode/image_emit.c: raw decoded pixels (any format but JPEG, or JPEG for a dtype other
 * than uint8) -> the decoder's output: a window, output_type (RGB, BGR, GRAY, ANY_DATA) and dtype
 * (uint8, uint16, float), the same rules for every format (image_format.h, stk__image_emit).
 * Hot path: once per sample, one pass over the window. */
#include <string.h>

#include "ops/decode/image_format.h"

int stk__image_out_channels(const stk__image_spec *spec, int channels) {
  if (spec->any_data) return channels;
  return spec->color == STK__COLOR_GRAY ? 1 : 3;
}

/* ITU-R 601 luma in 16.16 fixed point, rounded (PIL's "L" conversion). */
static inline uint32_t luma(uint32_t r, uint32_t g, uint32_t b) {
  return (uint32_t)(((uint64_t)r * 19595u + (uint64_t)g * 38470u + (uint64_t)b * 7471u + 0x8000u) >> 16);
}

static inline uint32_t sample_at(const uint8_t *p, int depth, int k) {
  if (depth == 8) return p[k];
  uint16_t v;
  memcpy(&v, p + 2 * k, 2);
  return v;
}

/* One output sample from a raw sample of `depth` bits. */
static inline void put(void *out, size_t i, stk_dtype dtype, int depth, uint32_t v) {
  switch (dtype) {
    case STK_DTYPE_UINT8:
      ((uint8_t *)out)[i] = (uint8_t)(depth == 8 ? v : (v + 128u) / 257u);
      break;
    case STK_DTYPE_UINT16:
      ((uint16_t *)out)[i] = (uint16_t)(depth == 16 ? v : v * 257u);
      break;
    default:
      ((float *)out)[i] = (float)v * (depth == 8 ? 1.0f / 255.0f : 1.0f / 65535.0f);
      break;
  }
}

static size_t dtype_bytes(stk_dtype dtype) { return dtype == STK_DTYPE_UINT8 ? 1 : dtype == STK_DTYPE_UINT16 ? 2 : 4; }

/* The common case, 8-bit samples to uint8 RGB/BGR/GRAY/ANY: plain byte shuffles. */
static void emit_u8_row(const uint8_t *src, int channels, int count, const stk__image_spec *spec, uint8_t *dst) {
  const int out_c = stk__image_out_channels(spec, channels);
  if (out_c == channels && (spec->any_data || spec->color != STK__COLOR_BGR || channels == 1)) {
    memcpy(dst, src, (size_t)count * (size_t)channels);
    return;
  }
  for (int x = 0; x < count; x++, src += channels, dst += out_c) {
    const int gray = channels <= 2;
    const uint8_t r = src[0], g = gray ? src[0] : src[1], b = gray ? src[0] : src[2];
    if (out_c == 1) dst[0] = gray ? r : (uint8_t)luma(r, g, b);
    else if (spec->color == STK__COLOR_BGR) dst[0] = b, dst[1] = g, dst[2] = r;
    else dst[0] = r, dst[1] = g, dst[2] = b;
  }
}

static void emit_row(const uint8_t *src, int channels, int depth, int count, const stk__image_spec *spec, void *dst) {
  const int out_c = stk__image_out_channels(spec, channels);
  const size_t in_pixel = (size_t)channels * (size_t)(depth / 8);
  size_t i = 0;
  for (int x = 0; x < count; x++, src += in_pixel) {
    if (spec->any_data) {
      for (int k = 0; k < channels; k++) put(dst, i++, spec->dtype, depth, sample_at(src, depth, k));
      continue;
    }
    const int gray = channels <= 2;
    const uint32_t r = sample_at(src, depth, 0), g = gray ? r : sample_at(src, depth, 1),
                   b = gray ? r : sample_at(src, depth, 2);
    if (out_c == 1) {
      put(dst, i++, spec->dtype, depth, gray ? r : luma(r, g, b));
    } else if (spec->color == STK__COLOR_BGR) {
      put(dst, i++, spec->dtype, depth, b), put(dst, i++, spec->dtype, depth, g), put(dst, i++, spec->dtype, depth, r);
    } else {
      put(dst, i++, spec->dtype, depth, r), put(dst, i++, spec->dtype, depth, g), put(dst, i++, spec->dtype, depth, b);
    }
  }
}

stk_status stk__image_emit(const stk__raw_image *raw, const stk__window *win, const stk__image_spec *spec,
                           stk__tensor *out, char *err, size_t err_size) {
  stk__window w = win ? *win : (stk__window){0, 0, raw->width, raw->height};
  if (w.x < 0 || w.y < 0 || w.w < 1 || w.h < 1 || w.x > raw->width - w.w || w.y > raw->height - w.h) {
    stk__errorf(err, err_size, "window %dx%d at (%d, %d) is not inside the %dx%d image", w.w, w.h, w.x, w.y, raw->width,
                raw->height);
    return STK_EINVAL;
  }
  const int out_c = stk__image_out_channels(spec, raw->channels);
  const int64_t shape[3] = {w.h, w.w, out_c};
  stk_status st = stk__tensor_resize(out, spec->dtype, 3, shape, "HWC");
  if (st != STK_OK) return st;
  const size_t in_pixel = (size_t)raw->channels * (size_t)(raw->depth / 8);
  const size_t out_row = (size_t)w.w * (size_t)out_c * dtype_bytes(spec->dtype);
  for (int y = 0; y < w.h; y++) {
    const uint8_t *src = raw->data + (size_t)(w.y + y) * raw->stride + (size_t)w.x * in_pixel;
    uint8_t *dst = (uint8_t *)out->data + (size_t)y * out_row;
    if (raw->depth == 8 && spec->dtype == STK_DTYPE_UINT8) emit_u8_row(src, raw->channels, w.w, spec, dst);
    else emit_row(src, raw->channels, raw->depth, w.w, spec, dst);
  }
  return STK_OK;
}
