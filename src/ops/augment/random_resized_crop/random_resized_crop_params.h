/* src/ops/augment/random_resized_crop/random_resized_crop_params.h: the `random_resized_crop` operator's parameters,
 * parsed once for its CPU (src/ops/augment/random_resized_crop/random_resized_crop.c) and GPU (src/ops/augment/resize/resize_gpu.cu)
 * implementations, and the window draw both make per sample, keyed by (seed, operator, epoch,
 * sample), so CPU and GPU crop the same windows. C-callable from .cu files. */
#ifndef STOKER_OPS_COMMON_RANDOM_RESIZED_CROP_PARAMS_H
#define STOKER_OPS_COMMON_RANDOM_RESIZED_CROP_PARAMS_H

#include <stddef.h>

#include "core/op.h"
#include "ops/common/image.h"
#include "ops/augment/resize/resample.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct stk__random_resized_crop_params {
  int out_w, out_h;            /* size */
  double area_min, area_max;   /* random_area */
  double ratio_min, ratio_max; /* random_aspect_ratio */
  int attempts;                /* num_attempts */
  stk__interp interp;
  int antialias;
} stk__random_resized_crop_params;

/* Reads and checks the arguments; STK_EINVAL with a message naming the argument otherwise. */
STK_INTERNAL stk_status stk__random_resized_crop_params_get(const stk__op *op, stk__random_resized_crop_params *out,
                                                            char *err, size_t err_size);

/* The window of one sample of a width x height image (op's seed and id, epoch, dataset sample id). */
STK_INTERNAL stk__window stk__random_resized_crop_window(const stk__random_resized_crop_params *params,
                                                         const stk__op *op, uint64_t epoch, int64_t sample_id,
                                                         int width, int height);

#ifdef __cplusplus
}
#endif
#endif
