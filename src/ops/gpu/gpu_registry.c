/* src/ops/gpu/gpu_registry.c: which operators have a mixed/GPU implementation in a CUDA build,
 * and the fused implementation for a GPU resize/random_resized_crop feeding a GPU
 * crop_mirror_normalize. Keep in step with the no-CUDA versions in nocuda.c (which return NULL).
 * Build-time only. */
#include <string.h>

#include "core/gpu_backend.h"

#if defined(STOKER_HAVE_CUDA)
#include "ops/gpu/gpu_ops.h"

const stk__op_impl *stk__gpu_impl_find(const char *name, stk__op_device device) {
  if (!name) return NULL;
  if (device == STK__DEV_GPU) {
    if (strcmp(name, "resize") == 0) return &stk__gpu_impl_resize;
    if (strcmp(name, "random_resized_crop") == 0) return &stk__gpu_impl_random_resized_crop;
    if (strcmp(name, "crop_mirror_normalize") == 0) return &stk__gpu_impl_crop_mirror_normalize;
    if (strcmp(name, "readers.video") == 0) return &stk__gpu_impl_readers_video;
  } else if (device == STK__DEV_MIXED) {
    if (strcmp(name, "decoders.image") == 0) return &stk__gpu_impl_decoders_image;
    if (strcmp(name, "decoders.image_random_crop") == 0) return &stk__gpu_impl_decoders_image_random_crop;
  }
  return NULL;
}

const stk__op_impl *stk__gpu_fused_impl_find(const char *first, const char *second) {
  if (!first || !second) return NULL;
  if (strcmp(second, "crop_mirror_normalize") != 0) return NULL;
  if (strcmp(first, "random_resized_crop") == 0 || strcmp(first, "resize") == 0)
    return &stk__gpu_impl_fused_resize_cmn;
  return NULL;
}
#endif
