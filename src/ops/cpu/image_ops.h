/* src/ops/cpu/image_ops.h: all of the shared image math in one include, for the decoders
 * (decoders.h, jpeg.h, decoder_mixed.cu) that still include it by this name. The code lives in
 * src/ops/common/ (parameter parses and the CPU references the GPU kernels are tested against);
 * new code includes the header it needs from there. */
#ifndef STOKER_OPS_CPU_IMAGE_OPS_H
#define STOKER_OPS_CPU_IMAGE_OPS_H

#include "ops/common/cmn_params.h"
#include "ops/common/cmn_reference.h"
#include "ops/common/dtype.h"
#include "ops/common/image.h"
#include "ops/common/random_resized_crop_params.h"
#include "ops/common/resample.h"
#include "ops/common/resize_params.h"
#include "ops/common/resize_reference.h"

#endif
