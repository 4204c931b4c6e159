/* src/ops/augment/resize_crop_mirror/resize_crop_mirror.h: the `resize_crop_mirror` operator's crop
 * and mirror step as crop_mirror_normalize parameters (uint8 HWC out, no normalisation), so the CPU
 * implementation runs resize then crop_mirror_normalize's reference and the GPU one runs the fused
 * resize+crop_mirror_normalize batch (never storing the resized image). C-callable from .cu files.
 * Build time. */
#ifndef STOKER_OPS_AUGMENT_RESIZE_CROP_MIRROR_H
#define STOKER_OPS_AUGMENT_RESIZE_CROP_MIRROR_H

#include "ops/augment/crop_mirror_normalize/cmn_params.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The crop/mirror arguments of op (crop, crop_h/crop_w, crop_pos_x/y, mirror, out_of_bounds_policy,
 * fill_values) as stk__cmn_params of a uint8 HWC identity normalisation. */
STK_INTERNAL stk_status stk__rcm_crop_params(const stk__op *op, stk__cmn_params *out, char *err, size_t err_size);

#ifdef __cplusplus
}
#endif
#endif
