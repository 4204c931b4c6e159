/* src/ops/augment/pad/pad_gpu.cu: the GPU implementations of `pad` and `paste`: their plans (pad.c,
 * paste.c) run by the geometry frame's batched copy (ops/common/nd_gpu.cu). Test:
 * tests/test_gpu_geometry.c. Hot path (per batch). */
#include "ops/common/nd_gpu.h"
#include "ops/common/nd_kinds.h"
#include "ops/op_impls.h"

STK__ND_GPU_IMPL(stk__gpu_impl_pad, stk__nd_kind_pad);
STK__ND_GPU_IMPL(stk__gpu_impl_paste, stk__nd_kind_paste);
