/* src/ops/augment/crop_mirror_normalize/cmn_params.h: the `crop_mirror_normalize` operator's parameters, parsed once for
 * its CPU (src/ops/augment/crop_mirror_normalize/crop_mirror_normalize.c) and GPU (src/ops/augment/crop_mirror_normalize/cmn_gpu.cu, and the fused
 * node) implementations, and the per-sample decisions both make the same way: the channel check,
 * the crop's placement under out_of_bounds_policy and the mirror flag. C-callable from .cu files.
 * Parse: build time; the rest per sample. */
#ifndef STOKER_OPS_COMMON_CMN_PARAMS_H
#define STOKER_OPS_COMMON_CMN_PARAMS_H

#include <stddef.h>

#include "core/op.h"
#include "ops/common/image.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum stk__oob_policy { STK__OOB_ERROR = 0, STK__OOB_PAD, STK__OOB_TRIM } stk__oob_policy;

typedef struct stk__cmn_params {
  int crop_h, crop_w; /* 0 = no crop in that dimension (whole extent) */
  double pos_x, pos_y;
  size_t mean_count, std_count, fill_count;
  float mean[4], inv_std[4], fill[5]; /* inv_std = scale / std */
  float shift;
  int mirror_constant;    /* the mirror argument when it is not bound to a per-sample input */
  stk__out_layout layout; /* of each image / frame: HWC or CHW */
  /* output_layout names a sequence layout (FHWC, FCHW, CFHW): 1, an image layout (HWC, CHW): 0;
   * left at its default, it fits either input (CHW for images, FCHW for sequences). */
  int sequence_layout, layout_default;
  int channels_outer; /* CFHW: channel planes hold every frame, [C, F, H, W] */
  stk_dtype dtype;    /* FLOAT32, FLOAT16 or UINT8 */
  int pad_output;
  stk__oob_policy oob;
} stk__cmn_params;

/* Reads and checks the arguments; STK_EINVAL with a message naming the argument otherwise. */
STK_INTERNAL stk_status stk__cmn_params_get(const stk__op *op, stk__cmn_params *out, char *err, size_t err_size);

/* STK_EINVAL (message in err) when mean or std has one value per channel and `channels` differs. */
STK_INTERNAL stk_status stk__cmn_check_channels(const stk__cmn_params *p, int channels, char *err, size_t err_size);

/* The crop of a w x h image, placed with stk__crop_start and checked or trimmed by
 * out_of_bounds_policy (with "pad" it may reach outside the image); STK_EINVAL with a message
 * when it does not fit under "error". */
STK_INTERNAL stk_status stk__cmn_crop(const stk__cmn_params *p, int w, int h, stk__window *crop, char *err,
                                      size_t err_size);

/* STK_EINVAL (message naming the argument in err) when output_layout is an image layout and the
 * input a sequence (sequence = 1), or the reverse. */
STK_INTERNAL stk_status stk__cmn_check_layout(const stk__cmn_params *p, int sequence, char *err, size_t err_size);

/* The output of one sample of `frames` frames (sequence = 1: 4-D) of crop_h x crop_w x
 * out_channels each: its shape (ndim 3 or 4), layout string, and where frame f starts and the
 * distance between its channel planes (CHW-style frame layouts), both in elements. */
typedef struct stk__cmn_output {
  int ndim;
  int64_t shape[4];
  const char *layout;
  size_t frame_step, plane_stride;
} stk__cmn_output;
STK_INTERNAL stk__cmn_output stk__cmn_output_shape(const stk__cmn_params *p, int sequence, int frames, int crop_h,
                                                   int crop_w, int out_channels);

/* Output channels for `channels` input channels (pad_output adds one to RGB). */
static inline int stk__cmn_out_channels(const stk__cmn_params *p, int channels) {
  return channels + (p->pad_output && channels == 3);
}

#ifdef __cplusplus
}
#endif
#endif
