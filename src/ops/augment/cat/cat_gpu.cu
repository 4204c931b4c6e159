/* src/ops/augment/cat/cat_gpu.cu: the GPU implementations of `cat` and `stack`: their plans (cat.c;
 * one part per input) run by the geometry frame's batched copy (ops/common/nd_gpu.cu). Test:
 * tests/test_gpu_geometry.c. Hot path (per batch). */
#include "ops/common/nd_gpu.h"
#include "ops/common/nd_kinds.h"
#include "ops/op_impls.h"

STK__ND_GPU_IMPL(stk__gpu_impl_cat, stk__nd_kind_cat);
STK__ND_GPU_IMPL(stk__gpu_impl_stack, stk__nd_kind_stack);
