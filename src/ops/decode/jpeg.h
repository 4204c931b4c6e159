/* src/ops/decode/jpeg.h: CPU JPEG decoding with libjpeg-turbo, the reference and the fallback for
 * the mixed (nvJPEG) decoder. libjpeg's longjmp error path is caught inside jpeg.c and turned
 * into a status with a message; nothing escapes past cleanup. Hot path (per sample). */
#ifndef STOKER_OPS_CPU_JPEG_H
#define STOKER_OPS_CPU_JPEG_H

#include <stddef.h>
#include <stdint.h>

#include "core/op.h"
#include "ops/common/image_ops.h"
#include "ops/decode/jpeg_verified.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum stk__color { STK__COLOR_RGB = 0, STK__COLOR_BGR, STK__COLOR_GRAY } stk__color;
STK_INTERNAL stk_status stk__color_parse(const char *text, stk__color *out); /* "RGB","BGR","GRAY" */
STK_INTERNAL int stk__color_channels(stk__color color);

typedef struct stk__jpeg_info {
  int width, height; /* as stored (before EXIF orientation) */
  int components;    /* 1 gray, 3 YCbCr/RGB, 4 CMYK/YCCK */
  int progressive;
  int cmyk;        /* Adobe CMYK or YCCK */
  int subsampling; /* 444, 422, 420, 440, 411, 0 = gray/other */
  int orientation; /* EXIF orientation 1..8 (1 when absent) */
} stk__jpeg_info;

/* Reads the header only. STK_EBADIMAGE with a message for anything that is not a decodable JPEG
 * (empty, truncated header, PNG, ...). */
STK_INTERNAL stk_status stk__jpeg_peek(const uint8_t *data, size_t size, stk__jpeg_info *info, char *err,
                                       size_t err_size);

/* Decodes into out (HWC u8, resized by stk__tensor_resize), converting to `color`, applying the
 * EXIF orientation. When crop is non-NULL only that window (in oriented image coordinates) is
 * produced, and only the needed part is decoded (jpeg_crop_scanline / jpeg_skip_scanlines); when
 * min_w/min_h > 0 and the crop is much larger, DCT-domain scaling (scale_num/8) may reduce it to
 * no less than min_w x min_h -- *scale_out (may be NULL) receives the scale applied (1.0 = none).
 * Errors: STK_EBADIMAGE with a message (corrupt data, truncated, unsupported). */
STK_INTERNAL stk_status stk__jpeg_decode(const uint8_t *data, size_t size, stk__color color, const stk__window *crop,
                                         int min_w, int min_h, stk__tensor *out, double *scale_out, char *err,
                                         size_t err_size);

/* stk__jpeg_decode with two additions (NULL turns either off; stk__jpeg_decode is this with both
 * NULL):
 *   - `budget` (the pipeline's host memory budget) counts, while it runs, the whole-image
 *     coefficient buffers libjpeg allocates for a progressive or multi-scan file: STK_ERANGE,
 *     before anything is allocated, with a message naming the size and the budget when they do
 *     not fit;
 *   - `verified` remembers the files it accepted, and a file whose bytes are already there is
 *     decoded without the corrupt-data check (jpeg_verified.h: the same pixels, libjpeg-turbo's
 *     fast Huffman path, nothing decoded below the window). */
STK_INTERNAL stk_status stk__jpeg_decode_counted(const uint8_t *data, size_t size, stk__color color,
                                                 const stk__window *crop, int min_w, int min_h,
                                                 stk__host_budget *budget, stk__jpeg_verified *verified,
                                                 stk__tensor *out, double *scale_out, char *err, size_t err_size);

/* The entropy-coded data only, the strict check of the mixed decoder (validate_entropy): header
 * limits, then every scan Huffman- (or arithmetic-) decoded to EOI -- no IDCT but for the last
 * row at 1/8 scale, no colour conversion, no coefficient buffer for a baseline file -- under the
 * same error manager, data source and warning rule as stk__jpeg_decode, so a file is refused here
 * exactly when a full CPU decode refuses it, with the same message. STK_EBADIMAGE with a message. */
STK_INTERNAL stk_status stk__jpeg_check_entropy(const uint8_t *data, size_t size, char *err, size_t err_size);
/* stk__jpeg_check_entropy once per file's bytes: STK_OK at once when they are in `verified` (a
 * check or a checking decode accepted them before), else the check, and the bytes remembered when
 * it passes. verified NULL: the check every time. */
STK_INTERNAL stk_status stk__jpeg_check_entropy_once(const uint8_t *data, size_t size, stk__jpeg_verified *verified,
                                                     char *err, size_t err_size);

#ifdef __cplusplus
}
#endif
#endif
