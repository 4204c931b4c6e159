/* src/ops/common/image_ops.h: all of the shared image math in one include, for the decoders
 * (decoders.h, jpeg.h, decoder_mixed.cu). The code lives in the operators' folders under
 * src/ops/augment/ (parameter parses and the CPU references the GPU kernels are tested against);
 * new code includes the header it needs from there. */
#ifndef STOKER_OPS_CPU_IMAGE_OPS_H
#define STOKER_OPS_CPU_IMAGE_OPS_H

#include "ops/augment/crop_mirror_normalize/cmn_params.h"
#include "ops/augment/crop_mirror_normalize/cmn_reference.h"
#include "ops/common/dtype.h"
#include "ops/common/image.h"
#include "ops/augment/random_resized_crop/random_resized_crop_params.h"
#include "ops/augment/resize/resample.h"
#include "ops/augment/resize/resize_params.h"
#include "ops/augment/resize/resize_reference.h"

#endif
