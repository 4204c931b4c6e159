/* src/ops/decode/image_format.h: the image formats decoders.image reads besides JPEG -- PNG, WebP,
 * BMP, TIFF and PNM -- behind one interface, and the dispatch that picks a decoder from the bytes
 * (magic numbers, never the file name).
 *
 * Every format decodes in two steps: a header read (stk__image_peek: size, channels and sample
 * depth as the decoder will deliver them, nothing decoded) and a decode into a caller-provided
 * buffer of exactly that size ("raw" pixels: channels 1 gray, 2 gray+alpha, 3 RGB, 4 RGBA; 8- or
 * 16-bit samples, 16-bit in host byte order). stk__image_emit then writes the requested window,
 * colour format and dtype into the output tensor (image_emit.c), so every format gets the same
 * output_type and dtype semantics. JPEG keeps its own path (jpeg.c: ROI decode, DCT scaling, EXIF
 * orientation), reached through stk__image_decode unchanged.
 *
 * Libraries: PNG (libpng16), WebP (libwebp) and TIFF (libtiff) are loaded at run time with dlopen
 * behind one small function table each (png.c, webp.c, tiff.c), so the wheel carries none of them
 * and a machine without one gets an error naming it; BMP and PNM are parsed here (bmp.c, pnm.c,
 * bounds-checked and fuzzed: tests/fuzz/fuzz_bmp.c, fuzz_pnm.c, fuzz_image_peek.c).
 *
 * Thread contract: every function is reentrant; the library tables load once (pthread_once).
 * Hot path: stk__image_decode once per sample on a worker. */
#ifndef STOKER_OPS_DECODE_IMAGE_FORMAT_H
#define STOKER_OPS_DECODE_IMAGE_FORMAT_H

#include <stddef.h>
#include <stdint.h>

#include "core/op.h"
#include "ops/common/image_ops.h"
#include "ops/decode/jpeg.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum stk__image_format {
  STK__IMAGE_UNKNOWN = 0,
  STK__IMAGE_JPEG,
  STK__IMAGE_PNG,
  STK__IMAGE_WEBP,
  STK__IMAGE_BMP,
  STK__IMAGE_TIFF,
  STK__IMAGE_PNM,
  /* recognised only to name them in an error: */
  STK__IMAGE_GIF,
  STK__IMAGE_JPEG2000,
  STK__IMAGE_JPEGXL,
  STK__IMAGE_HEIF, /* HEIC / AVIF */
} stk__image_format;

/* The format of an encoded image from its first bytes. */
STK_INTERNAL stk__image_format stk__image_format_detect(const uint8_t *data, size_t size);
/* "JPEG", "PNG", ... ("unknown" for STK__IMAGE_UNKNOWN). */
STK_INTERNAL const char *stk__image_format_name(stk__image_format format);

/* Largest width or height any format accepts, and largest raw image in bytes: a header that
 * claims more is refused before anything is allocated. */
#define STK__IMAGE_MAX_SIDE  65535
#define STK__IMAGE_MAX_BYTES ((size_t)1 << 31)

typedef struct stk__image_info {
  stk__image_format format;
  int width, height; /* as stored (JPEG: before EXIF orientation) */
  int channels;      /* what the decoder delivers: 1 gray, 2 gray+alpha, 3 RGB, 4 RGBA */
  int depth;         /* bits per delivered sample: 8 or 16 */
  int orientation;   /* EXIF orientation 1..8 (JPEG only; 1 for the other formats) */
} stk__image_info;

/* Raw pixels as a format decoder delivers them. */
typedef struct stk__raw_image {
  const uint8_t *data;
  size_t stride; /* bytes from one row to the next */
  int width, height, channels, depth;
} stk__raw_image;

/* Bytes of a raw image of `info` (rows packed). */
STK_INTERNAL size_t stk__image_raw_bytes(const stk__image_info *info);

/* Reads the header of any supported format (STK_EBADIMAGE with a message naming the format and
 * what is wrong; an unsupported format is named). JPEG: stk__jpeg_peek, channels = its output
 * channels (1 gray, else 3). */
STK_INTERNAL stk_status stk__image_peek(const uint8_t *data, size_t size, stk__image_info *info, char *err,
                                        size_t err_size);

/* ---- Per-format decoders: peek and decode into `dst` (stk__image_raw_bytes(info) bytes, rows
 * width * channels * depth / 8 bytes apart). `info` is what the same format's peek returned. ---- */
STK_INTERNAL stk_status stk__png_peek(const uint8_t *data, size_t size, stk__image_info *info, char *err,
                                      size_t err_size);
STK_INTERNAL stk_status stk__png_decode(const uint8_t *data, size_t size, const stk__image_info *info, uint8_t *dst,
                                        char *err, size_t err_size);
STK_INTERNAL stk_status stk__webp_peek(const uint8_t *data, size_t size, stk__image_info *info, char *err,
                                       size_t err_size);
STK_INTERNAL stk_status stk__webp_decode(const uint8_t *data, size_t size, const stk__image_info *info, uint8_t *dst,
                                         char *err, size_t err_size);
STK_INTERNAL stk_status stk__bmp_peek(const uint8_t *data, size_t size, stk__image_info *info, char *err,
                                      size_t err_size);
STK_INTERNAL stk_status stk__bmp_decode(const uint8_t *data, size_t size, const stk__image_info *info, uint8_t *dst,
                                        char *err, size_t err_size);
STK_INTERNAL stk_status stk__tiff_peek(const uint8_t *data, size_t size, stk__image_info *info, char *err,
                                       size_t err_size);
STK_INTERNAL stk_status stk__tiff_decode(const uint8_t *data, size_t size, const stk__image_info *info, uint8_t *dst,
                                         char *err, size_t err_size);
STK_INTERNAL stk_status stk__pnm_peek(const uint8_t *data, size_t size, stk__image_info *info, char *err,
                                      size_t err_size);
STK_INTERNAL stk_status stk__pnm_decode(const uint8_t *data, size_t size, const stk__image_info *info, uint8_t *dst,
                                        char *err, size_t err_size);

/* ---- Output (image_emit.c) ------------------------------------------------------------------- */
/* What decoders.image produces: output_type and dtype. */
typedef struct stk__image_spec {
  stk__color color; /* RGB, BGR or GRAY (ignored when any_data) */
  int any_data;     /* output_type ANY_DATA: the image's own channels (alpha kept) */
  stk_dtype dtype;  /* UINT8, UINT16 or FLOAT32 */
  stk__jpeg_verified *verified; /* the decoder's set of JPEG files already checked (NULL: check all) */
} stk__image_spec;

/* Output channels for an image of `channels` raw channels. */
STK_INTERNAL int stk__image_out_channels(const stk__image_spec *spec, int channels);

/* Writes window `win` of `raw` (NULL: the whole image) into `out` as HWC of spec's channels and
 * dtype: RGB/BGR drop alpha and repeat gray; GRAY from colour is (19595 R + 38470 G + 7471 B +
 * 2^15) >> 16 (ITU-R 601 luma, PIL's "L"); samples are scaled to the dtype's range: 16 -> 8 bits
 * round(v / 257), 8 -> 16 bits v * 257, float v / (2^depth - 1). Resizes out (stk__tensor_resize). */
STK_INTERNAL stk_status stk__image_emit(const stk__raw_image *raw, const stk__window *win, const stk__image_spec *spec,
                                        stk__tensor *out, char *err, size_t err_size);

/* ---- Dispatch (image_decode.c) --------------------------------------------------------------- */
/* Decodes any supported image into out (HWC, spec's channels and dtype): JPEG through
 * stk__jpeg_decode_counted exactly as before (the window decoded only, hint_size DCT scaling,
 * EXIF orientation, `budget` counting its coefficient buffers) when spec is uint8 RGB/BGR/GRAY;
 * every other case decodes the whole image into a scratch buffer (the worker's, through ctx, or
 * malloc'd when ctx is NULL; taken from `budget` while in use) and emits the window. `crop` in
 * oriented coordinates (NULL: whole image). STK_EBADIMAGE naming the format; STK_ENOLIB naming a
 * missing library; STK_ERANGE when the budget has no room. */
STK_INTERNAL stk_status stk__image_decode(const uint8_t *data, size_t size, const stk__image_spec *spec,
                                          const stk__window *crop, int min_w, int min_h, stk__host_budget *budget,
                                          stk__sample_ctx *ctx, stk__tensor *out, char *err, size_t err_size);

/* The oriented size (width x height after EXIF orientation) of an image from its header. */
STK_INTERNAL stk_status stk__image_oriented_size(const uint8_t *data, size_t size, int *width, int *height, char *err,
                                                 size_t err_size);

#ifdef __cplusplus
}
#endif
#endif
