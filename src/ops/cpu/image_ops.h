/* src/ops/cpu/image_ops.h: the pure image algorithms behind the augmentation operators. They
 * are the CPU implementations AND the references the CUDA kernels are tested against, so the GPU
 * code uses the same window generator and the same resampling weights (computed on the host by
 * stk__resample_weights and uploaded). Hot path: called per sample.
 * Images are HWC uint8, row stride in bytes. C-callable from .cu files. */
#ifndef STOKER_OPS_CPU_IMAGE_OPS_H
#define STOKER_OPS_CPU_IMAGE_OPS_H

#include <stddef.h>
#include <stdint.h>

#include "core/op.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum stk__interp { STK__INTERP_NN = 0, STK__INTERP_LINEAR, STK__INTERP_CUBIC } stk__interp;

/* "nearest"/"INTERP_NN", "linear"/"INTERP_LINEAR", "cubic"/"INTERP_CUBIC" -> enum. */
STK_INTERNAL stk_status stk__interp_parse(const char *text, stk__interp *out);

/* A crop window in source pixels (integers, inside the image). */
typedef struct stk__window {
  int x, y, w, h;
} stk__window;

/* random_resized_crop / decoders.image_random_crop window choice (DALI / torchvision semantics):
 * up to `attempts` tries of area ~ U[area_min, area_max]·W·H and log-uniform aspect ratio in
 * [ratio_min, ratio_max]; a try fits when w<=W and h<=H, placed uniformly. Fallback: the
 * central crop with the aspect ratio clamped into [ratio_min, ratio_max] (whole image if it fits). */
STK_INTERNAL stk__window stk__random_crop_window(stk__rng *rng, int width, int height, double area_min,
                                                 double area_max, double ratio_min, double ratio_max, int attempts);

/* Separable resampling filter for one axis: output pixel o reads input pixels
 * first[o] .. first[o]+taps-1 with weights[o*taps + k] (weights sum to 1; indices already clamped
 * into [0, in_size)). roi_start/roi_end select the source interval (in pixels, may be fractional).
 * With antialias and downscaling, linear/cubic filters are widened by the scale (DALI's default).
 * Returns the tap count; first/weights must hold out_size and out_size*max_taps entries, where
 * max_taps = stk__resample_max_taps(...). */
STK_INTERNAL int stk__resample_max_taps(int in_size, int out_size, double roi_start, double roi_end,
                                        stk__interp interp, int antialias);
STK_INTERNAL int stk__resample_weights(int in_size, int out_size, double roi_start, double roi_end,
                                       stk__interp interp, int antialias, int32_t *first, float *weights);

/* Resizes the region `roi` of src (HWC u8) to dst_w x dst_h (HWC u8, tightly packed), separable:
 * horizontal pass of each needed source row (float, once per row, into a ring of taps_y rows),
 * then the vertical pass into u8, round half up and clamp -- the same float operations in the
 * same order as the GPU kernel (resample_device.cuh). scratch must hold
 * stk__resize_scratch_bytes(...) bytes. */
STK_INTERNAL size_t stk__resize_scratch_bytes(int src_w, int src_h, int channels, stk__window roi, int dst_w,
                                              int dst_h, stk__interp interp, int antialias);
STK_INTERNAL stk_status stk__resize_u8(const uint8_t *src, int src_w, int src_h, size_t src_stride, int channels,
                                       stk__window roi, uint8_t *dst, int dst_w, int dst_h, stk__interp interp,
                                       int antialias, void *scratch);

typedef enum stk__out_layout { STK__LAYOUT_HWC = 0, STK__LAYOUT_CHW } stk__out_layout;

/* crop_mirror_normalize on one image: takes the crop (crop_x, crop_y, crop_w, crop_h; parts outside
 * the image are filled with 0 after normalization is skipped, as DALI's out-of-bounds fill), mirrors
 * horizontally when mirror != 0, computes (x - mean[c]) * inv_std[c], writes dtype
 * (FLOAT32 / FLOAT16 / UINT8 with rounding and clamping) in layout; pad_output adds a 4th channel of 0
 * for 3-channel input. dst must hold crop_w*crop_h*(channels + pad)*dtype_size bytes. */
STK_INTERNAL stk_status stk__crop_mirror_normalize(const uint8_t *src, int src_w, int src_h, size_t src_stride,
                                                   int channels, int crop_x, int crop_y, int crop_w, int crop_h,
                                                   int mirror, const float *mean, const float *inv_std,
                                                   stk__out_layout layout, stk_dtype dtype, int pad_output, void *dst);

/* Checks that `in` is a non-empty HWC uint8 image with 1..4 channels (the input every
 * augmentation operator takes); STK_EINVAL with a message in err otherwise. */
STK_INTERNAL stk_status stk__check_hwc_u8_image(const stk__tensor *in, char *err, size_t err_size);

/* IEEE binary16 from float, round-to-nearest-even (shared by CPU code and tests). */
STK_INTERNAL uint16_t stk__float_to_half(float value);


/* ---- Additions (same owner): shared by the CPU operators and the GPU implementations ------- */

/* DALI's crop placement: start = floor(pos * (in_size - crop_size) + 0.5) (DALI's
 * rounding="round": halves away from zero; the argument is >= 0 inside the image). pos is
 * crop_pos_x / crop_pos_y in [0, 1]. May be negative or exceed in_size - crop_size when the
 * crop is larger than the image (out-of-bounds crop). */
STK_INTERNAL int stk__crop_start(double pos, int in_size, int crop_size);

/* One filter tap count / weight table for an arbitrary (fractional) source interval; the
 * contract functions above are this with integer windows. */
typedef enum stk__resize_mode {
  STK__RESIZE_DEFAULT = 0,
  STK__RESIZE_STRETCH,
  STK__RESIZE_NOT_LARGER,
  STK__RESIZE_NOT_SMALLER
} stk__resize_mode;

/* "default", "stretch", "not_larger", "not_smaller" -> enum. */
STK_INTERNAL stk_status stk__resize_mode_parse(const char *text, stk__resize_mode *out);

/* The output-size rules of DALI's resize: all sizes in pixels, 0 = not given. */
typedef struct stk__resize_params {
  double resize_x, resize_y;      /* explicit extents (size=[h, w] maps here) */
  double resize_shorter;          /* shorter side -> this (mode not_smaller, both extents) */
  double resize_longer;           /* longer side -> this (mode not_larger, both extents) */
  double max_size_x, max_size_y;  /* caps on the output extents (0 = none) */
  stk__resize_mode mode;
  int subpixel_scale;             /* 1 (DALI's default): keep the exact fractional scale by
                                   * adjusting the source interval to the rounded output size */
} stk__resize_params;

/* Output size and source interval for one image of in_w x in_h:
 * roi[0..3] = x0, y0, x1, y1 in source pixels (may be fractional with subpixel_scale).
 * STK_EINVAL when the result would be empty or absurdly large (> 65535 per side). */
STK_INTERNAL stk_status stk__resize_plan(const stk__resize_params *params, int in_w, int in_h, int *out_w,
                                         int *out_h, double roi[4]);

/* stk__resize_u8 with a fractional source interval roi = {x0, y0, x1, y1}. */
STK_INTERNAL size_t stk__resize_roi_scratch_bytes(int src_w, int src_h, int channels, const double roi[4], int dst_w,
                                                  int dst_h, stk__interp interp, int antialias);
STK_INTERNAL stk_status stk__resize_u8_roi(const uint8_t *src, int src_w, int src_h, size_t src_stride, int channels,
                                           const double roi[4], uint8_t *dst, int dst_w, int dst_h,
                                           stk__interp interp, int antialias, void *scratch);

/* stk__crop_mirror_normalize with DALI's extra knobs: out = (x - mean[c]) * inv_std[c] + shift
 * (inv_std already holds scale / std), out-of-image pixels get fill[c] and the padded 4th channel
 * gets fill[channels] (fill: channels + pad_output entries, NULL = all 0). The contract function
 * above is this with shift = 0 and fill = NULL. channels <= 4. */
STK_INTERNAL stk_status stk__crop_mirror_normalize_ex(const uint8_t *src, int src_w, int src_h, size_t src_stride,
                                                      int channels, int crop_x, int crop_y, int crop_w, int crop_h,
                                                      int mirror, const float *mean, const float *inv_std,
                                                      float shift, const float *fill, stk__out_layout layout,
                                                      stk_dtype dtype, int pad_output, void *dst);

/* u8 from a float value: round half up, clamp to [0, 255] (the rule every u8 output uses). */
static inline uint8_t stk__u8_from_float(float value) {
  float r = value + 0.5f;
  r = r < 0.0f ? 0.0f : (r > 255.0f ? 255.0f : r);
  return (uint8_t)(int)r;
}

/* float from IEEE binary16 (exact; shared by cast and tests). */
STK_INTERNAL float stk__half_to_float(uint16_t bits);

/* DALI-style dtype names: "float"/"float32"/"FLOAT", "float16"/"FLOAT16"/"half", "uint8"/"UINT8",
 * "int32"/"INT32", "int64"/"INT64", "bool"/"BOOL" -> stk_dtype. STK_EINVAL otherwise. */
STK_INTERNAL stk_status stk__dtype_parse(const char *text, stk_dtype *out);

#ifdef __cplusplus
}
#endif
#endif
