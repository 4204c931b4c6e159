/* src/ops/augment/reshape/reshape_gpu.cu: the GPU implementations of `reshape`, `squeeze` and
 * `expand_dims`: their plans (reshape.c, squeeze.c; one flat copy) run by the geometry frame's
 * batched copy (ops/common/nd_gpu.cu). Test: tests/test_gpu_geometry.c. Hot path (per batch). */
#include "ops/common/nd_gpu.h"
#include "ops/common/nd_kinds.h"
#include "ops/op_impls.h"

STK__ND_GPU_IMPL(stk__gpu_impl_reshape, stk__nd_kind_reshape);
STK__ND_GPU_IMPL(stk__gpu_impl_squeeze, stk__nd_kind_squeeze);
STK__ND_GPU_IMPL(stk__gpu_impl_expand_dims, stk__nd_kind_expand_dims);
