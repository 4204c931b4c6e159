/* src/ops/augment/flip/flip_gpu.cu: the GPU implementation of `flip`: its plan (flip.c, the CPU
 * implementation's) run by the geometry frame's batched copy (ops/common/nd_gpu.cu, one launch a
 * batch). Test: tests/test_gpu_geometry.c (bytes equal to the CPU's). Hot path (per batch). */
#include "ops/common/nd_gpu.h"
#include "ops/common/nd_kinds.h"
#include "ops/op_impls.h"

STK__ND_GPU_IMPL(stk__gpu_impl_flip, stk__nd_kind_flip);
