/* src/ops/common/image.h: the image types and geometry every image operator shares, CPU and GPU:
 * crop windows, DALI's crop placement, the random crop window generator, the u8 rounding rule and
 * the HWC u8 input check. Images are HWC uint8 with a row stride in bytes. C-callable from .cu
 * files. Hot path: per sample. */
#ifndef STOKER_OPS_COMMON_IMAGE_H
#define STOKER_OPS_COMMON_IMAGE_H

#include <stddef.h>
#include <stdint.h>

#include "core/op.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A crop window in source pixels (integers, inside the image). */
typedef struct stk__window {
  int x, y, w, h;
} stk__window;

typedef enum stk__out_layout { STK__LAYOUT_HWC = 0, STK__LAYOUT_CHW } stk__out_layout;

/* random_resized_crop / decoders.image_random_crop window choice (DALI / torchvision semantics):
 * up to `attempts` tries of area ~ U[area_min, area_max]·W·H and log-uniform aspect ratio in
 * [ratio_min, ratio_max]; a try fits when w<=W and h<=H, placed uniformly. Fallback: the
 * central crop with the aspect ratio clamped into [ratio_min, ratio_max] (whole image if it fits). */
STK_INTERNAL stk__window stk__random_crop_window(stk__rng *rng, int width, int height, double area_min, double area_max,
                                                 double ratio_min, double ratio_max, int attempts);

/* DALI's crop placement: start = floor(pos * (in_size - crop_size) + 0.5) (DALI's
 * rounding="round": halves away from zero; the argument is >= 0 inside the image). pos is
 * crop_pos_x / crop_pos_y in [0, 1]. May be negative or exceed in_size - crop_size when the
 * crop is larger than the image (out-of-bounds crop). */
STK_INTERNAL int stk__crop_start(double pos, int in_size, int crop_size);

/* Checks that `in` is a non-empty HWC uint8 image with 1..4 channels (the input every
 * augmentation operator takes); STK_EINVAL with a message in err otherwise. */
STK_INTERNAL stk_status stk__check_hwc_u8_image(const stk__tensor *in, char *err, size_t err_size);

/* The shape of a uint8 image or sequence of images: an HWC image ([H, W, C]: frames = 1,
 * sequence = 0) or an FHWC sequence ([F, H, W, C] with layout "FHWC": sequence = 1). Frames are
 * packed HWC images, frame f at f * h * w * c bytes. */
typedef struct stk__u8_frames {
  int frames, h, w, c;
  int sequence;
} stk__u8_frames;

/* Checks that `in` is a non-empty HWC uint8 image or FHWC uint8 sequence with 1..4 channels (what
 * resize and crop_mirror_normalize take) and fills *out; STK_EINVAL with a message otherwise. */
STK_INTERNAL stk_status stk__check_u8_frames(const stk__tensor *in, stk__u8_frames *out, char *err, size_t err_size);

/* u8 from a float value: round half up, clamp to [0, 255] (the rule every u8 output uses). */
static inline uint8_t stk__u8_from_float(float value) {
  float r = value + 0.5f;
  r = r < 0.0f ? 0.0f : (r > 255.0f ? 255.0f : r);
  return (uint8_t)(int)r;
}

#ifdef __cplusplus
}
#endif
#endif
