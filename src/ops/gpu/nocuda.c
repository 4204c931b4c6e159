/* src/ops/gpu/nocuda.c: the operator lookups of a build without CUDA: no mixed/GPU
 * implementation exists. Compiled always; empty when STOKER_HAVE_CUDA is defined
 * (gpu_registry.c provides the real ones). The device runtime's no-CUDA twin lives in
 * src/device/nocuda/. */
#include "core/op.h"

#if !defined(STOKER_HAVE_CUDA)
const stk__op_impl *stk__gpu_impl_find(const char *name, stk__op_device device) { return NULL; }
const stk__op_impl *stk__gpu_fused_impl_find(const char *first, const char *second) { return NULL; }
#endif
