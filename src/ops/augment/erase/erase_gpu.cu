/* src/ops/augment/erase/erase_gpu.cu: the GPU implementation of `erase`: its plan (erase.c; a copy
 * with erase boxes) run by the geometry frame's batched copy (ops/common/nd_gpu.cu). Test:
 * tests/test_gpu_geometry.c. Hot path (per batch). */
#include "ops/common/nd_gpu.h"
#include "ops/common/nd_kinds.h"
#include "ops/op_impls.h"

STK__ND_GPU_IMPL(stk__gpu_impl_erase, stk__nd_kind_erase);
