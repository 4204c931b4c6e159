/* src/ops/decode/image_decode.c: decoders.image's one entry for every format (image_format.h,
 * stk__image_decode). JPEG with a uint8 RGB/BGR/GRAY output goes to stk__jpeg_decode_counted
 * untouched (window-only decode, DCT scaling, EXIF orientation: the same bytes as before formats
 * were added); everything else is decoded whole into a raw buffer -- the output tensor itself when
 * the raw pixels already are the output, else the worker's scratch -- and stk__image_emit writes
 * the window, colour format and dtype. Hot path: once per sample on a worker. */
#include <stdlib.h>
#include <string.h>

#include "ops/decode/image_format.h"

/* The worker scratch slot the raw pixels use (others: resize, random_resized_crop use slot 0). */
#define RAW_SCRATCH_SLOT 5

typedef stk_status (*format_decode_fn)(const uint8_t *, size_t, const stk__image_info *, uint8_t *, char *, size_t);

static format_decode_fn decoder_of(stk__image_format format) {
  switch (format) {
    case STK__IMAGE_PNG:
      return stk__png_decode;
    case STK__IMAGE_WEBP:
      return stk__webp_decode;
    case STK__IMAGE_BMP:
      return stk__bmp_decode;
    case STK__IMAGE_TIFF:
      return stk__tiff_decode;
    case STK__IMAGE_PNM:
      return stk__pnm_decode;
    default:
      return NULL;
  }
}

/* JPEG to a dtype other than uint8, or to ANY_DATA: libjpeg-turbo's uint8 decode (the window only),
 * then the dtype and channels. */
static stk_status jpeg_other(const uint8_t *data, size_t size, const stk__image_info *info, const stk__image_spec *spec,
                             const stk__window *crop, stk__host_budget *budget, stk__tensor *out, char *err,
                             size_t err_size) {
  const stk__color color = (spec->any_data ? info->channels == 1 : spec->color == STK__COLOR_GRAY) ? STK__COLOR_GRAY
                           : spec->color == STK__COLOR_BGR && !spec->any_data                      ? STK__COLOR_BGR
                                                                                                   : STK__COLOR_RGB;
  if (spec->dtype == STK_DTYPE_UINT8)
    return stk__jpeg_decode_counted(data, size, color, crop, 0, 0, budget, spec->verified, out, NULL, err, err_size);
  stk__tensor pixels = {0};
  stk_status st =
      stk__jpeg_decode_counted(data, size, color, crop, 0, 0, budget, spec->verified, &pixels, NULL, err, err_size);
  if (st == STK_OK) {
    stk__raw_image raw = {(const uint8_t *)pixels.data, (size_t)pixels.shape[1] * (size_t)pixels.shape[2],
                          (int)pixels.shape[1],         (int)pixels.shape[0],
                          (int)pixels.shape[2],         8};
    stk__image_spec any = *spec;
    any.any_data = 1; /* the channels are already the output's */
    st = stk__image_emit(&raw, NULL, &any, out, err, err_size);
  }
  stk__tensor_free(&pixels);
  return st;
}

/* 1 when the raw pixels of `info` are exactly the output (8-bit, uint8, same channels in order,
 * whole image), so the format decoder can write into the output tensor directly. */
static int raw_is_output(const stk__image_info *info, const stk__image_spec *spec, const stk__window *crop) {
  if (info->depth != 8 || spec->dtype != STK_DTYPE_UINT8) return 0;
  if (crop && (crop->x != 0 || crop->y != 0 || crop->w != info->width || crop->h != info->height)) return 0;
  if (spec->any_data) return 1;
  if (spec->color == STK__COLOR_GRAY) return info->channels == 1;
  return info->channels == 3 && spec->color == STK__COLOR_RGB;
}

stk_status stk__image_decode(const uint8_t *data, size_t size, const stk__image_spec *spec, const stk__window *crop,
                             int min_w, int min_h, stk__host_budget *budget, stk__sample_ctx *ctx, stk__tensor *out,
                             char *err, size_t err_size) {
  const stk__image_format format = stk__image_format_detect(data, size);
  if (format == STK__IMAGE_JPEG && spec->dtype == STK_DTYPE_UINT8 && !spec->any_data)
    return stk__jpeg_decode_counted(data, size, spec->color, crop, min_w, min_h, budget, spec->verified, out, NULL, err,
                                    err_size);
  stk__image_info info;
  stk_status st = stk__image_peek(data, size, &info, err, err_size);
  if (st != STK_OK) return st;
  if (format == STK__IMAGE_JPEG) return jpeg_other(data, size, &info, spec, crop, budget, out, err, err_size);
  const format_decode_fn decode = decoder_of(format);
  if (raw_is_output(&info, spec, crop)) {
    const int64_t shape[3] = {info.height, info.width, info.channels};
    st = stk__tensor_resize(out, STK_DTYPE_UINT8, 3, shape, "HWC");
    return st == STK_OK ? decode(data, size, &info, (uint8_t *)out->data, err, err_size) : st;
  }
  /* The raw buffer must fit the budget: a worker's scratch (counted by stk__scratch_get) only
   * checks it here; a malloc'd one (no worker) holds its bytes while in use. */
  const size_t bytes = stk__image_raw_bytes(&info);
  if (!stk__host_budget_take(budget, bytes)) {
    stk__errorf(err, err_size,
                "a %dx%d %s image needs %.1f MiB decoded; the pipeline's host memory budget has no room for it "
                "(options.host_memory_budget)",
                info.width, info.height, stk__image_format_name(format), (double)bytes / (1 << 20));
    return STK_ERANGE;
  }
  void *owned = NULL;
  uint8_t *pixels = ctx ? (uint8_t *)stk__scratch_get(ctx, RAW_SCRATCH_SLOT, bytes) : NULL;
  if (pixels) stk__host_budget_give(budget, bytes);
  else pixels = owned = malloc(bytes ? bytes : 1);
  if (!pixels) st = STK_ENOMEM;
  else st = decode(data, size, &info, pixels, err, err_size);
  if (st == STK_OK) {
    const stk__raw_image raw = {pixels,        (size_t)info.width * (size_t)info.channels * (size_t)(info.depth / 8),
                                info.width,    info.height,
                                info.channels, info.depth};
    st = stk__image_emit(&raw, crop, spec, out, err, err_size);
  }
  if (owned || !pixels) stk__host_budget_give(budget, bytes);
  free(owned);
  return st;
}
