/* src/ops/decode/decoders.c: decoders.image and decoders.image_random_crop, CPU implementation:
 * JPEG through libjpeg-turbo (jpeg.c), PNG/WebP/BMP/TIFF/PNM through image_decode.c, the format
 * detected from the bytes. Hot path: run_sample, once per sample on a worker thread.
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
#include <strings.h>

/* The name after the last '.': DALI's enum spellings ("types.RGB", "DALIImageType.RGB") as "RGB". */
static const char *enum_name(const char *text) {
  const char *dot = strrchr(text, '.');
  return dot ? dot + 1 : text;
}

/* output_type: RGB, BGR, GRAY or ANY_DATA. */
static stk_status parse_output_type(const char *type, stk__decoder_params *out, char *err, size_t err_size) {
  type = enum_name(type);
  if (!strcmp(type, "ANY_DATA")) {
    out->any_data = 1;
    out->color = STK__COLOR_RGB;
    return STK_OK;
  }
  if (stk__color_parse(type, &out->color) == STK_OK) return STK_OK;
  stk__errorf(err, err_size, "output_type \"%s\" is not one of RGB, BGR, GRAY, ANY_DATA", type);
  return STK_EINVAL;
}

/* dtype: uint8 (default), uint16 or float, any case (DALIDataType.UINT8 too). */
static stk_status parse_dtype(const char *text, stk_dtype *out, char *err, size_t err_size) {
  static const struct {
    const char *name;
    stk_dtype dtype;
  } names[] = {{"", STK_DTYPE_UINT8},
               {"uint8", STK_DTYPE_UINT8},
               {"uint16", STK_DTYPE_UINT16},
               {"float", STK_DTYPE_FLOAT32},
               {"float32", STK_DTYPE_FLOAT32}};
  text = enum_name(text);
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    if (!strcasecmp(text, names[i].name)) {
      *out = names[i].dtype;
      return STK_OK;
    }
  stk__errorf(err, err_size, "dtype \"%s\" is not one of uint8, uint16, float", text);
  return STK_EINVAL;
}

stk_status stk__decoder_params_get(const stk__op *op, stk__decoder_params *out, char *err, size_t err_size) {
  memset(out, 0, sizeof *out);
  const char *type = stk__arg_string(op, "output_type");
  if (!type[0]) type = "RGB";
  stk_status st = parse_output_type(type, out, err, err_size);
  if (st == STK_OK)
    st = parse_dtype(stk__arg(op, "dtype") ? stk__arg_string(op, "dtype") : "", &out->dtype, err, err_size);
  if (st != STK_OK) return st;
  if (op->device == STK__DEV_MIXED && (out->any_data || out->dtype != STK_DTYPE_UINT8)) {
    stk__errorf(err, err_size,
                "%s on device \"mixed\" produces uint8 RGB, BGR or GRAY only; output_type ANY_DATA "
                "and dtype uint16/float need device \"cpu\"",
                op->schema->name);
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

stk__image_spec stk__decoder_spec(const stk__decoder_params *p) {
  stk__image_spec spec = {p->color, p->any_data, p->dtype, p->verified};
  return spec;
}

stk_status stk__decoder_verified_open(stk__decoder_params *params, char *err, size_t err_size) {
  params->verified = stk__jpeg_verified_new();
  if (params->verified) return STK_OK;
  stk__errorf(err, err_size, "out of memory for the set of checked JPEG files");
  return STK_ENOMEM;
}

void stk__decoder_verified_close(stk__decoder_params *params) {
  stk__jpeg_verified_free(params->verified);
  params->verified = NULL;
}

/* ---- CPU implementation --------------------------------------------------------------------- */
static stk_status decoder_init(stk__op *op, char *err, size_t err_size) {
  stk__decoder_params *p = calloc(1, sizeof *p);
  if (!p) return STK_ENOMEM;
  stk_status st = stk__decoder_params_get(op, p, err, err_size);
  if (st == STK_OK) st = stk__decoder_verified_open(p, err, err_size);
  if (st != STK_OK) {
    free(p);
    return st;
  }
  op->state = p;
  return STK_OK;
}

static void decoder_destroy(stk__op *op) {
  stk__decoder_params *p = (stk__decoder_params *)op->state;
  if (p) stk__decoder_verified_close(p);
  stk__op_free_state(op);
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
  const stk__image_spec spec = stk__decoder_spec(p);
  if (!p->random_crop)
    return stk__image_decode(data, in->nbytes, &spec, NULL, 0, 0, op->host_budget, ctx, outputs[0], ctx->err,
                             ctx->err_size);
  int width, height;
  stk_status st = stk__image_oriented_size(data, in->nbytes, &width, &height, ctx->err, ctx->err_size);
  if (st != STK_OK) return st;
  stk__window win = stk__decoder_crop_window(p, op->id, ctx->epoch, ctx->sample_id, width, height);
  return stk__image_decode(data, in->nbytes, &spec, &win, p->hint_w, p->hint_h, op->host_budget, ctx, outputs[0],
                           ctx->err, ctx->err_size);
}

const stk__op_impl stk__cpu_impl_decoders_image = {
    .init = decoder_init,
    .destroy = decoder_destroy,
    .run_sample = decoder_run_sample,
};

/* ---- Schemas -------------------------------------------------------------------------------- */
static const stk__arg_schema decoder_args[] = {STK__DECODER_COMMON_ARGS, STK__DALI_DECODER_HINT_ARGS};

static const stk__arg_schema random_crop_args[] = {
    STK__DECODER_COMMON_ARGS,
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
        "Decodes JPEG (baseline, progressive, grayscale, CMYK/YCCK; EXIF orientation applied), PNG, WebP, BMP, "
        "TIFF and PNM images, the format detected from the bytes, to HWC. Input: encoded bytes. Output: image "
        "(HWC).",
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
        "Decodes a random crop of images (the formats of decoders.image): the window (random area and aspect "
        "ratio, as random_resized_crop) is chosen first and, for JPEG, only that region is decoded (other "
        "formats: the whole image, then the window). Output: HWC.",
    .min_inputs = 1,
    .max_inputs = 1,
    .num_outputs = 1,
    .devices = STK_OPDEV_CPU | STK_OPDEV_MIXED,
    .args = random_crop_args,
    .num_args = (int)(sizeof random_crop_args / sizeof random_crop_args[0]),
    .is_reader = 0,
    .array_outputs = 1u << 0, /* HWC images */
};
