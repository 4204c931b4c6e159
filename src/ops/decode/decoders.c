/* src/ops/decode/decoders.c: decoders.image and decoders.image_random_crop, CPU implementation
 * (libjpeg-turbo through jpeg.c). Hot path: run_sample, once per sample on a worker thread.
 *
 * decoders.image_random_crop chooses the crop window FIRST -- from the header's size after EXIF
 * orientation, with the counter-based RNG keyed by (seed, op id, epoch, sample id) -- and then
 * decodes only that region (jpeg_crop_scanline / jpeg_skip_scanlines). With hint_size = [w, h]
 * (the size a following resize will produce, e.g. 224 for ResNet-50) the region may also be
 * DCT-scaled by n/8 (libjpeg's scale_num) to no less than w x h: the output is then the crop window
 * at that scale (ceil(window * n / 8) pixels), which the resize brings to the final size. */
#include "ops/common/dali_hints.h"
#include "ops/decode/decoders.h"
#include "ops/op_impls.h"

#include <stdlib.h>
#include <string.h>

stk_status stk__decoder_params_get(const stk__op *op, stk__decoder_params *out, char *err, size_t err_size) {
  memset(out, 0, sizeof *out);
  const char *type = stk__arg_string(op, "output_type");
  if (!type[0]) type = "RGB";
  if (stk__color_parse(type, &out->color) != STK_OK) {
    stk__errorf(err, err_size, "output_type \"%s\" is not one of RGB, BGR, GRAY", type);
    return STK_EINVAL;
  }
  const stk__arg_value *seed = stk__arg(op, "seed");
  out->seed = seed && seed->has_value && seed->i >= 0 ? (uint64_t)seed->i : op->seed;
  out->validate_entropy = stk__arg(op, "validate_entropy") && stk__arg_bool(op, "validate_entropy");
  out->random_crop = stk__arg(op, "random_area") != NULL;
  if (!out->random_crop) return STK_OK;

  size_t n;
  const double *area = stk__arg_float_list(op, "random_area", &n);
  if (n == 1) out->area_min = out->area_max = area[0];
  else if (n == 2) out->area_min = area[0], out->area_max = area[1];
  if (n < 1 || n > 2 || !(out->area_min > 0.0) || out->area_max > 1.0 || out->area_min > out->area_max) {
    stk__errorf(err, err_size, "random_area must be [min, max] with 0 < min <= max <= 1");
    return STK_EINVAL;
  }
  const double *ratio = stk__arg_float_list(op, "random_aspect_ratio", &n);
  if (n == 1) out->ratio_min = out->ratio_max = ratio[0];
  else if (n == 2) out->ratio_min = ratio[0], out->ratio_max = ratio[1];
  if (n < 1 || n > 2 || !(out->ratio_min > 0.0) || out->ratio_min > out->ratio_max) {
    stk__errorf(err, err_size, "random_aspect_ratio must be [min, max] with 0 < min <= max");
    return STK_EINVAL;
  }
  int64_t attempts = stk__arg_int(op, "num_attempts");
  if (attempts < 1 || attempts > 1000000) {
    stk__errorf(err, err_size, "num_attempts %lld must be in [1, 1000000]", (long long)attempts);
    return STK_EINVAL;
  }
  out->attempts = (int)attempts;
  const int64_t *hint = stk__arg_int_list(op, "hint_size", &n);
  if (n == 1) out->hint_w = out->hint_h = (int)hint[0];
  else if (n == 2) out->hint_w = (int)hint[0], out->hint_h = (int)hint[1];
  if (n > 2 || (n >= 1 && (hint[0] < 0 || hint[n - 1] < 0 || hint[0] > 65535 || hint[n - 1] > 65535))) {
    stk__errorf(err, err_size, "hint_size must be [] or [size] or [width, height] with sizes in [0, 65535]");
    return STK_EINVAL;
  }
  return STK_OK;
}

stk__window stk__decoder_crop_window(const stk__decoder_params *p, int op_id, uint64_t epoch, int64_t sample_id,
                                     int width, int height) {
  stk__rng rng;
  stk__rng_init(&rng, p->seed, (uint32_t)op_id, epoch, sample_id);
  return stk__random_crop_window(&rng, width, height, p->area_min, p->area_max, p->ratio_min, p->ratio_max,
                                 p->attempts);
}

/* ---- CPU implementation --------------------------------------------------------------------- */
static stk_status decoder_init(stk__op *op, char *err, size_t err_size) {
  stk__decoder_params *p = calloc(1, sizeof *p);
  if (!p) return STK_ENOMEM;
  stk_status st = stk__decoder_params_get(op, p, err, err_size);
  if (st != STK_OK) {
    free(p);
    return st;
  }
  op->state = p;
  return STK_OK;
}

static stk_status decoder_run_sample(stk__op *op, stk__sample_ctx *ctx, stk__tensor *const *inputs,
                                     stk__tensor *const *outputs) {
  const stk__decoder_params *p = (const stk__decoder_params *)op->state;
  const stk__tensor *in = inputs[0];
  if (in->dtype != STK_DTYPE_UINT8 || in->ndim != 1) {
    stk__errorf(ctx->err, ctx->err_size, "input must be encoded bytes (uint8, 1-D), got %s with %d dimensions",
                stk_dtype_name(in->dtype), in->ndim);
    return STK_EINVAL;
  }
  const uint8_t *data = (const uint8_t *)in->data;
  if (!p->random_crop)
    return stk__jpeg_decode(data, in->nbytes, p->color, NULL, 0, 0, outputs[0], NULL, ctx->err, ctx->err_size);

  stk__jpeg_info info;
  stk_status st = stk__jpeg_peek(data, in->nbytes, &info, ctx->err, ctx->err_size);
  if (st != STK_OK) return st;
  const int swap = info.orientation >= 5;
  const int width = swap ? info.height : info.width, height = swap ? info.width : info.height;
  stk__window win = stk__decoder_crop_window(p, op->id, ctx->epoch, ctx->sample_id, width, height);
  return stk__jpeg_decode(data, in->nbytes, p->color, &win, p->hint_w, p->hint_h, outputs[0], NULL, ctx->err,
                          ctx->err_size);
}

const stk__op_impl stk__cpu_impl_decoders_image = {
    .init = decoder_init,
    .destroy = stk__op_free_state,
    .run_sample = decoder_run_sample,
};

/* ---- Schemas -------------------------------------------------------------------------------- */
#define DECODER_COMMON_ARGS                                                                                \
  {"output_type", STK_ARG_STRING, "RGB", 0, 0, "Colour format of the output: RGB, BGR or GRAY."},          \
      {"hw_decoder_load",                                                                                  \
       STK_ARG_FLOAT,                                                                                      \
       "0.8",                                                                                              \
       0,                                                                                                  \
       0,                                                                                                  \
       "mixed only: share of the images (by position in the batch) sent to the GPU's hardware JPEG "       \
       "engines; the rest is decoded by libjpeg-turbo on the worker threads while earlier batches are on " \
       "the GPU. Default tuned on an H100 with 16 cores (bench/mixed-sweep.sh)."},                         \
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
       "mixed only: libjpeg-turbo entropy-decodes (no IDCT) every image nvJPEG decodes, in the CPU "       \
       "pre-stage, and a corrupt one is refused as the CPU decoder refuses it (nvJPEG decodes corrupt "    \
       "entropy-coded data without an error). The CPU decoder always checks."},                            \
  {                                                                                                        \
    "host_memory_padding", STK_ARG_INT, "8388608", 0, 0,                                                   \
        "mixed only: extra bytes per pinned host buffer, to avoid reallocations."                          \
  }

static const stk__arg_schema decoder_args[] = {DECODER_COMMON_ARGS, STK__DALI_DECODER_HINT_ARGS};

static const stk__arg_schema random_crop_args[] = {
    DECODER_COMMON_ARGS,
    {"seed", STK_ARG_INT, "-1", 0, 0, "Random seed of the crop windows; -1 = the pipeline's seed."},
    {"random_area", STK_ARG_FLOAT_LIST, "[0.08, 1.0]", 0, 0,
     "Range of the crop's area as a fraction of the image's area."},
    {"random_aspect_ratio", STK_ARG_FLOAT_LIST, "[0.75, 1.333333]", 0, 0,
     "Range of the crop's aspect ratio (width / height), drawn log-uniformly."},
    {"num_attempts", STK_ARG_INT, "10", 0, 0, "Tries at a window that fits before falling back to a central crop."},
    {"hint_size", STK_ARG_INT_LIST, "[0, 0]", 0, 0,
     "stoker extension: [width, height] a following resize produces; the crop may then be decoded DCT-scaled "
     "by n/8 to no less than this (output = the crop window at that scale). [0, 0] = exact crop."},
    STK__DALI_DECODER_HINT_ARGS,
};

const stk__op_schema stk__op_decoders_image = {
    .name = "decoders.image",
    .doc =
        "Decodes JPEG images (baseline, progressive, grayscale, CMYK/YCCK) to HWC uint8, applying the EXIF "
        "orientation. Input: encoded bytes. Output: image (HWC).",
    .min_inputs = 1,
    .max_inputs = 1,
    .num_outputs = 1,
    .devices = STK_OPDEV_CPU | STK_OPDEV_MIXED,
    .args = decoder_args,
    .num_args = (int)(sizeof decoder_args / sizeof decoder_args[0]),
    .is_reader = 0,
    .array_outputs = 1u << 0, /* HWC images */
};

const stk__op_schema stk__op_decoders_image_random_crop = {
    .name = "decoders.image_random_crop",
    .doc =
        "Decodes a random crop of JPEG images: the window (random area and aspect ratio, as "
        "random_resized_crop) is chosen first and only that region is decoded. Output: HWC uint8.",
    .min_inputs = 1,
    .max_inputs = 1,
    .num_outputs = 1,
    .devices = STK_OPDEV_CPU | STK_OPDEV_MIXED,
    .args = random_crop_args,
    .num_args = (int)(sizeof random_crop_args / sizeof random_crop_args[0]),
    .is_reader = 0,
    .array_outputs = 1u << 0, /* HWC images */
};
