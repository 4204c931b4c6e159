/* src/ops/decode/peek_image_shape.c: peek_image_shape, CPU: the HWC shape of an encoded image of
 * any format decoders.image reads, from its header only (stk__image_peek; nothing decoded). C is
 * the channels the image holds as decoders.image's ANY_DATA delivers them (JPEG: 1 or 3; a PNG with
 * alpha: 4). adjust_orientation (default true) swaps H and W for a JPEG whose EXIF orientation
 * transposes it. Output: 1-D [H, W, C] of dtype int64 (default), int32, uint64, uint32, float or
 * double. Hot path: once per sample (a header read). */
#include <string.h>
#include <strings.h>

#include "ops/decode/image_format.h"
#include "ops/op_impls.h"

typedef struct peek_state {
  stk_dtype dtype;
  int adjust_orientation;
} peek_state;

static stk_status peek_init(stk__op *op, char *err, size_t err_size) {
  static const struct {
    const char *name;
    stk_dtype dtype;
  } names[] = {{"int64", STK_DTYPE_INT64},     {"int32", STK_DTYPE_INT32},   {"uint64", STK_DTYPE_UINT64},
               {"uint32", STK_DTYPE_UINT32},   {"float", STK_DTYPE_FLOAT32}, {"float32", STK_DTYPE_FLOAT32},
               {"float64", STK_DTYPE_FLOAT64}, {"double", STK_DTYPE_FLOAT64}};
  peek_state s = {STK_DTYPE_INT64, stk__arg_bool(op, "adjust_orientation")};
  const char *text = stk__arg_string(op, "dtype");
  const char *dot = strrchr(text, '.'); /* DALI's enum spellings: "types.INT64", "DALIDataType.INT64" */
  if (dot) text = dot + 1;
  int found = !text[0];
  for (size_t i = 0; i < sizeof names / sizeof names[0] && !found; i++)
    if (!strcasecmp(text, names[i].name)) s.dtype = names[i].dtype, found = 1;
  if (!found) {
    stk__errorf(err, err_size, "dtype \"%s\" is not one of int64, int32, uint64, uint32, float, float64", text);
    return STK_EINVAL;
  }
  return stk__op_keep_state(op, &s, sizeof s);
}

static stk_status peek_run_sample(stk__op *op, stk__sample_ctx *ctx, stk__tensor *const *inputs,
                                  stk__tensor *const *outputs) {
  const peek_state *s = (const peek_state *)op->state;
  const stk__tensor *in = inputs[0];
  if (in->dtype != STK_DTYPE_UINT8 || in->ndim != 1) {
    stk__errorf(ctx->err, ctx->err_size, "input must be encoded bytes (uint8, 1-D), got %s with %d dimensions",
                stk_dtype_name(in->dtype), in->ndim);
    return STK_EINVAL;
  }
  stk__image_info info;
  stk_status st = stk__image_peek((const uint8_t *)in->data, in->nbytes, &info, ctx->err, ctx->err_size);
  if (st != STK_OK) return st;
  const int swap = s->adjust_orientation && info.orientation >= 5 && info.orientation <= 8;
  const int64_t hwc[3] = {swap ? info.width : info.height, swap ? info.height : info.width, info.channels};
  const int64_t shape[1] = {3};
  st = stk__tensor_resize(outputs[0], s->dtype, 1, shape, "");
  if (st != STK_OK) return st;
  for (int i = 0; i < 3; i++) {
    void *o = outputs[0]->data;
    switch (s->dtype) {
      case STK_DTYPE_INT32:
        ((int32_t *)o)[i] = (int32_t)hwc[i];
        break;
      case STK_DTYPE_UINT32:
        ((uint32_t *)o)[i] = (uint32_t)hwc[i];
        break;
      case STK_DTYPE_UINT64:
        ((uint64_t *)o)[i] = (uint64_t)hwc[i];
        break;
      case STK_DTYPE_FLOAT32:
        ((float *)o)[i] = (float)hwc[i];
        break;
      case STK_DTYPE_FLOAT64:
        ((double *)o)[i] = (double)hwc[i];
        break;
      default:
        ((int64_t *)o)[i] = hwc[i];
        break;
    }
  }
  return STK_OK;
}

const stk__op_impl stk__cpu_impl_peek_image_shape = {
    .init = peek_init,
    .destroy = stk__op_free_state,
    .run_sample = peek_run_sample,
};

static const stk__arg_schema peek_args[] = {
    {"dtype", STK_ARG_STRING, "int64", 0, 0, "Output type: int64, int32, uint64, uint32, float or float64."},
    {"adjust_orientation", STK_ARG_BOOL, "true", 0, 0,
     "Report the shape after EXIF orientation (H and W swapped for a transposing JPEG orientation)."},
};

const stk__op_schema stk__op_peek_image_shape = {
    .name = "peek_image_shape",
    .doc =
        "The shape [H, W, C] of encoded images (JPEG, PNG, WebP, BMP, TIFF, PNM) read from their headers, "
        "without decoding. Input: encoded bytes. Output: 1-D shape.",
    .min_inputs = 1,
    .max_inputs = 1,
    .num_outputs = 1,
    .devices = STK_OPDEV_CPU,
    .args = peek_args,
    .num_args = (int)(sizeof peek_args / sizeof peek_args[0]),
    .array_outputs = 1u << 0,
};
