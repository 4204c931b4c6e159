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
  stk__jpeg_verified *verified; /* CPU decoders: the JPEG files already checked whole (owned by the
                                   operator's state: stk__decoder_verified_open / _close) */
} stk__decoder_params;

/* Reads and checks the arguments of either decoder op; STK_EINVAL with a message naming the
 * argument and what was expected. */
STK_INTERNAL stk_status stk__decoder_params_get(const stk__op *op, stk__decoder_params *out, char *err,
                                                size_t err_size);

/* The crop window of one sample, in oriented image coordinates (image width x height after EXIF
 * orientation): stk__random_crop_window with rng keyed by (seed, op id, epoch, sample id). */
STK_INTERNAL stk__window stk__decoder_crop_window(const stk__decoder_params *params, int op_id, uint64_t epoch,
                                                  int64_t sample_id, int width, int height);

/* The CPU decoders' set of JPEG files already checked (jpeg_verified.h) in params->verified:
 * STK_ENOMEM with a message when it cannot be made; _close frees it (params may hold none). */
STK_INTERNAL stk_status stk__decoder_verified_open(stk__decoder_params *params, char *err, size_t err_size);
STK_INTERNAL void stk__decoder_verified_close(stk__decoder_params *params);

/* The output_type / dtype / verified part of params as stk__image_decode takes it. */
STK_INTERNAL stk__image_spec stk__decoder_spec(const stk__decoder_params *params);

/* The arguments every decoders.* operator has (schema rows; the mixed-only ones say so). */
#define STK__DECODER_COMMON_ARGS                                                                           \
  {"output_type",                                                                                          \
   STK_ARG_STRING,                                                                                         \
   "RGB",                                                                                                  \
   0,                                                                                                      \
   0,                                                                                                      \
   "Colour format of the output: RGB, BGR, GRAY or ANY_DATA (the image's own channels, alpha kept; cpu "   \
   "only). RGB/BGR drop alpha."},                                                                          \
      {"dtype",                                                                                            \
       STK_ARG_STRING,                                                                                     \
       "uint8",                                                                                            \
       0,                                                                                                  \
       0,                                                                                                  \
       "Output type: uint8, uint16 or float, scaled to the type's range (16-bit PNG/TIFF/PNM to uint8: "   \
       "round(v / 257); float: v / max). Not uint8: cpu only."},                                           \
      {"hw_decoder_load",                                                                                  \
       STK_ARG_FLOAT,                                                                                      \
       "-1",                                                                                               \
       0,                                                                                                  \
       0,                                                                                                  \
       "mixed only: share of the images (by position in the batch) sent to the GPU's hardware JPEG "       \
       "engines; the rest is decoded by libjpeg-turbo on the worker threads while earlier batches are on " \
       "the GPU. -1 (default): chosen by the router from the engines' and the CPUs' costs measured on "   \
       "the first batches and a trial of the candidate splits on the pipeline, kept per machine "         \
       "(docs/gpu.md, \"The default split, and the router\"); 0 to 1: that share, fixed (1: every image " \
       "the engines can take; progressive, CMYK and EXIF-rotated files go to libjpeg-turbo)."},           \
      {"cuda_decoder_load",                                                                                \
       STK_ARG_FLOAT,                                                                                      \
       "0",                                                                                                \
       0,                                                                                                  \
       0,                                                                                                  \
       "mixed only: share of the images the engines do not take (by position in the batch) that nvJPEG's " \
       "CUDA decoder (Huffman on the GPU) decodes instead of libjpeg-turbo on the worker threads; "        \
       "baseline files only (progressive ones stay on the CPU). 0: none."},                                \
      {"hybrid_huffman_threshold",                                                                         \
       STK_ARG_INT,                                                                                        \
       "1000000",                                                                                          \
       0,                                                                                                  \
       0,                                                                                                  \
       "mixed only: images with more pixels than this have their Huffman decoding done on the GPU."},      \
      {"device_memory_padding",                                                                            \
       STK_ARG_INT,                                                                                        \
       "16777216",                                                                                         \
       0,                                                                                                  \
       0,                                                                                                  \
       "mixed only: extra bytes per device buffer, to avoid reallocations."},                              \
      {"validate_entropy",                                                                                 \
       STK_ARG_BOOL,                                                                                       \
       "false",                                                                                            \
       0,                                                                                                  \
       0,                                                                                                  \
       "mixed only: libjpeg-turbo entropy-decodes (no IDCT, no pixels) every image nvJPEG decodes, in "    \
       "the CPU pre-stage, and a corrupt one is refused as the CPU decoder refuses it (nvJPEG decodes "    \
       "corrupt entropy-coded data without an error). Off by default: it costs CPU time per image that " \
       "makes the mixed path CPU-bound (docs/robustness.md). The CPU decoder always checks."},           \
  {                                                                                                        \
    "host_memory_padding", STK_ARG_INT, "8388608", 0, 0,                                                   \
        "mixed only: extra bytes per pinned host buffer, to avoid reallocations."                          \
  }

/* Operator schemas (rows of the operator table, src/ops/op_table.c). */
STK_INTERNAL extern const stk__op_schema stk__op_decoders_image;
STK_INTERNAL extern const stk__op_schema stk__op_decoders_image_random_crop;
/* decoders_roi.c's CPU implementation, shared by its mixed one (decoders_roi_mixed.c). */
STK_INTERNAL stk_status stk__decoders_crop_init(stk__op *op, char *err, size_t err_size);
STK_INTERNAL stk_status stk__decoders_slice_init(stk__op *op, char *err, size_t err_size);
STK_INTERNAL void stk__decoders_roi_destroy(stk__op *op);
STK_INTERNAL stk_status stk__decoders_roi_run_sample(stk__op *op, stk__sample_ctx *ctx, stk__tensor *const *inputs,
                                                     stk__tensor *const *outputs);
STK_INTERNAL extern const stk__op_schema stk__op_decoders_image_crop;  /* decoders_roi.c */
STK_INTERNAL extern const stk__op_schema stk__op_decoders_image_slice; /* decoders_roi.c */

#ifdef __cplusplus
}
#endif
#endif
