/* src/ops/decode/image_route.c: the mixed decoder's way in for the formats that are not JPEG
 * (image_route.h). A PNG, WebP, BMP, TIFF or PNM image gets a plan like a JPEG's -- its header's
 * size, the window the CPU decoder would choose (same seed, op, epoch, sample) -- with the CPU
 * route always, so it is decoded on a worker (the CPU pre-stage, or a lane's CPU fallback) and
 * uploaded; a JPEG's plan and decode are jpeg_route.c's and jpeg.c's, untouched.
 * Hot path: per sample (one header read). */
#include "ops/decode/image_route.h"

#include <string.h>

int stk__image_is_cpu_format(const uint8_t *data, size_t size) {
  const stk__image_format format = stk__image_format_detect(data, size);
  return format == STK__IMAGE_PNG || format == STK__IMAGE_WEBP || format == STK__IMAGE_BMP ||
         format == STK__IMAGE_TIFF || format == STK__IMAGE_PNM;
}

stk_status stk__image_plan_make(const stk__jpeg_router *router, const stk__decoder_params *params, int op_id,
                                uint64_t epoch, int64_t sample_id, int position, int staged, const uint8_t *data,
                                size_t size, stk__jpeg_plan *plan, char *err, size_t err_size) {
  if (!stk__image_is_cpu_format(data, size))
    return stk__jpeg_plan_make(router, params, op_id, epoch, sample_id, position, staged, data, size, plan, err,
                               err_size);
  memset(plan, 0, sizeof *plan);
  plan->sample_id = sample_id;
  plan->route = STK__JPEG_ROUTE_FAILED;
  stk__image_info info;
  stk_status st = stk__image_peek(data, size, &info, err, err_size);
  if (st != STK_OK) return st;
  plan->info.width = info.width;
  plan->info.height = info.height;
  plan->info.components = info.channels;
  plan->info.orientation = 1;
  plan->crop = params->random_crop ? stk__decoder_crop_window(params, op_id, epoch, sample_id, info.width, info.height)
                                   : (stk__window){0, 0, info.width, info.height};
  plan->route = STK__JPEG_ROUTE_CPU;
  return STK_OK;
}

stk_status stk__image_decode_plain(const uint8_t *data, size_t size, stk__color color, const stk__window *crop,
                                   stk__jpeg_verified *verified, stk__tensor *out, char *err, size_t err_size) {
  if (!stk__image_is_cpu_format(data, size))
    return stk__jpeg_decode_counted(data, size, color, crop, 0, 0, NULL, verified, out, NULL, err, err_size);
  const stk__image_spec spec = {color, 0, STK_DTYPE_UINT8};
  return stk__image_decode(data, size, &spec, crop, 0, 0, NULL, NULL, out, err, err_size);
}
