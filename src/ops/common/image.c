/* src/ops/common/image.c: image geometry shared by the CPU operators, the GPU implementations and
 * the decoders: the input check every augmentation operator makes, DALI's crop placement and the
 * random crop window generator (random_resized_crop, decoders.image_random_crop). Hot path: called
 * per sample; allocates nothing. */
#include <math.h>
#include <string.h>

#include "ops/common/image.h"

int stk__crop_start(double pos, int in_size, int crop_size) {
  return (int)floor(pos * (double)(in_size - crop_size) + 0.5);
}

/* ---- Crop window generator ------------------------------------------------------------------ */

stk__window stk__random_crop_window(stk__rng *rng, int width, int height, double area_min, double area_max,
                                    double ratio_min, double ratio_max, int attempts) {
  stk__window win = {0, 0, width, height};
  if (width <= 0 || height <= 0) return win;
  const double area = (double)width * (double)height;
  const double log_ratio_min = log(ratio_min), log_ratio_max = log(ratio_max);
  for (int attempt = 0; attempt < attempts; attempt++) {
    /* Two draws per attempt (area, then log aspect ratio), two more for the placement. */
    double target_area = area * (area_min + (area_max - area_min) * stk__rng_uniform(rng));
    double aspect = exp(log_ratio_min + (log_ratio_max - log_ratio_min) * stk__rng_uniform(rng));
    int w = (int)lround(sqrt(target_area * aspect));
    int h = (int)lround(sqrt(target_area / aspect));
    if (w > 0 && h > 0 && w <= width && h <= height) {
      int x = (int)floor(stk__rng_uniform(rng) * (double)(width - w + 1));
      int y = (int)floor(stk__rng_uniform(rng) * (double)(height - h + 1));
      win.x = x > width - w ? width - w : x;
      win.y = y > height - h ? height - h : y;
      win.w = w;
      win.h = h;
      return win;
    }
  }
  /* Fallback: the whole image, with its aspect ratio clamped into [ratio_min, ratio_max],
   * centred. */
  double in_ratio = (double)width / (double)height;
  int w = width, h = height;
  if (in_ratio < ratio_min) {
    h = (int)lround((double)width / ratio_min);
  } else if (in_ratio > ratio_max) {
    w = (int)lround((double)height * ratio_max);
  }
  if (w < 1) w = 1;
  if (h < 1) h = 1;
  if (w > width) w = width;
  if (h > height) h = height;
  win.w = w;
  win.h = h;
  win.x = (width - w) / 2;
  win.y = (height - h) / 2;
  return win;
}

static int is_hwc_u8_image(const stk__tensor *in) {
  return in->dtype == STK_DTYPE_UINT8 && in->ndim == 3 && in->shape[0] >= 1 && in->shape[1] >= 1 && in->shape[2] >= 1 &&
         in->shape[2] <= 4;
}

stk_status stk__check_hwc_u8_image(const stk__tensor *in, char *err, size_t err_size) {
  if (!is_hwc_u8_image(in)) {
    stk__errorf(err, err_size, "input must be a non-empty HWC uint8 image with 1..4 channels");
    return STK_EINVAL;
  }
  return STK_OK;
}

stk_status stk__check_u8_frames(const stk__tensor *in, stk__u8_frames *out, char *err, size_t err_size) {
  if (in->ndim == 4) {
    if (in->dtype != STK_DTYPE_UINT8 || strcmp(in->layout, "FHWC") != 0 || in->shape[0] < 1 || in->shape[1] < 1 ||
        in->shape[2] < 1 || in->shape[3] < 1 || in->shape[3] > 4) {
      stk__errorf(err, err_size,
                  "a 4-D input must be a non-empty FHWC uint8 sequence with 1..4 channels (got layout \"%s\")",
                  in->layout);
      return STK_EINVAL;
    }
    *out = (stk__u8_frames){(int)in->shape[0], (int)in->shape[1], (int)in->shape[2], (int)in->shape[3], 1};
    return STK_OK;
  }
  if (!is_hwc_u8_image(in)) {
    stk__errorf(err, err_size, "input must be a non-empty HWC uint8 image or FHWC uint8 sequence with 1..4 channels");
    return STK_EINVAL;
  }
  *out = (stk__u8_frames){1, (int)in->shape[0], (int)in->shape[1], (int)in->shape[2], 0};
  return STK_OK;
}
