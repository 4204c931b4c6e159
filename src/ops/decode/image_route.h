/* src/ops/decode/image_route.h: the formats other than JPEG in the mixed decoder (decoders.image
 * and decoders.image_random_crop on device "mixed"). nvJPEG decodes JPEG only, so a PNG, WebP,
 * BMP, TIFF or PNM image takes the CPU route: the decoder's CPU pre-stage (or, used on its own, a
 * worker lane) decodes it and its pixels are uploaded like a libjpeg-turbo decode's. The mixed
 * decoder calls these two instead of stk__jpeg_plan_make / stk__jpeg_decode; for a JPEG they are
 * exactly those calls. Plain C, shared with the CUDA files. Hot path: per sample. */
#ifndef STOKER_OPS_DECODE_IMAGE_ROUTE_H
#define STOKER_OPS_DECODE_IMAGE_ROUTE_H

#include "ops/decode/image_format.h"
#include "ops/decode/jpeg_route.h"

#ifdef __cplusplus
extern "C" {
#endif

/* 1 when the bytes are PNG, WebP, BMP, TIFF or PNM (a format decoded on the CPU only). */
STK_INTERNAL int stk__image_is_cpu_format(const uint8_t *data, size_t size);

/* stk__jpeg_plan_make for a JPEG (or bytes of no known format: its message); for a CPU-only
 * format a plan with its header's size (info.components = its channels, orientation 1), the
 * window the CPU decoder chooses, and route STK__JPEG_ROUTE_CPU. STK_EBADIMAGE naming the format. */
STK_INTERNAL stk_status stk__image_plan_make(const stk__jpeg_router *router, const stk__decoder_params *params,
                                             int op_id, uint64_t epoch, int64_t sample_id, int position, int staged,
                                             const uint8_t *data, size_t size, stk__jpeg_plan *plan, char *err,
                                             size_t err_size);

/* stk__jpeg_decode_counted(data, size, color, crop, 0, 0, NULL, verified, out, NULL, ...) for a JPEG
 * (verified: the decoder's set of files already checked, or NULL); the uint8 decode of window
 * `crop` (NULL: whole) in `color` for a CPU-only format. */
STK_INTERNAL stk_status stk__image_decode_plain(const uint8_t *data, size_t size, stk__color color,
                                                const stk__window *crop, stk__jpeg_verified *verified,
                                                stk__tensor *out, char *err, size_t err_size);

#ifdef __cplusplus
}
#endif
#endif
