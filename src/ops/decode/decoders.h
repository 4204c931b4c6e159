/* src/ops/decode/decoders.h: what decoders.image / decoders.image_random_crop decide from their
 * arguments, shared by the CPU implementation (decoders.c) and the mixed (nvJPEG) one so both
 * produce the same colour format and the same crop windows for the same (seed, op, epoch, sample).
 * stk__decoder_params_get runs at init; stk__decoder_crop_window per sample (hot, cheap). */
#ifndef STOKER_OPS_CPU_DECODERS_H
#define STOKER_OPS_CPU_DECODERS_H

#include "core/op.h"
#include "ops/common/image_ops.h"
#include "ops/decode/image_format.h"
#include "ops/decode/jpeg.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct stk__decoder_params {
  stk__color color;            /* output_type (RGB, BGR, GRAY; RGB when any_data) */
  int any_data;                /* output_type ANY_DATA: the image's own channels (cpu only) */
  stk_dtype dtype;             /* dtype: UINT8 (default), UINT16 or FLOAT32 (cpu only) */
  int random_crop;             /* 1 for decoders.image_random_crop */
  double area_min, area_max;   /* random_area */
  double ratio_min, ratio_max; /* random_aspect_ratio */
  int attempts;                /* num_attempts */
  int hint_w, hint_h;          /* hint_size: smallest useful decode size (0 = no DCT scaling) */
  uint64_t seed;               /* seed argument, or the pipeline's seed when -1 */
  int validate_entropy;        /* mixed only: libjpeg-turbo checks the entropy-coded data of the
                                  images nvJPEG decodes (stk__jpeg_check_entropy) */
} stk__decoder_params;

/* Reads and checks the arguments of either decoder op; STK_EINVAL with a message naming the
 * argument and what was expected. */
STK_INTERNAL stk_status stk__decoder_params_get(const stk__op *op, stk__decoder_params *out, char *err,
                                                size_t err_size);

/* The crop window of one sample, in oriented image coordinates (image width x height after EXIF
 * orientation): stk__random_crop_window with rng keyed by (seed, op id, epoch, sample id). */
STK_INTERNAL stk__window stk__decoder_crop_window(const stk__decoder_params *params, int op_id, uint64_t epoch,
                                                  int64_t sample_id, int width, int height);

/* The output_type / dtype part of params as stk__image_decode takes it. */
STK_INTERNAL stk__image_spec stk__decoder_spec(const stk__decoder_params *params);

/* Operator schemas (rows of the operator table, src/ops/op_table.c). */
STK_INTERNAL extern const stk__op_schema stk__op_decoders_image;
STK_INTERNAL extern const stk__op_schema stk__op_decoders_image_random_crop;

#ifdef __cplusplus
}
#endif
#endif
