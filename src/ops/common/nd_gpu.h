/* src/ops/common/nd_gpu.h: the GPU side of the geometry operators' shared frame (nd_op.h): the
 * batched N-D copy kernel's launcher (nd_copy_kernels.cu) and the generic run_batch (nd_gpu.cu)
 * each geometry operator's .cu file names in its implementation row. Per batch, on the GPU stage
 * thread: every sample planned on the host by the operator's own plan (the CPU implementation's),
 * the output reserved with one grow-only ragged reservation, all parts' descriptors and erase boxes
 * uploaded with one copy, ONE kernel launch for the batch. Included by .cu files only. Hot path;
 * no allocation after warm-up (plans, arena and output storage are grow-only, counted). */
#ifndef STOKER_OPS_COMMON_ND_GPU_H
#define STOKER_OPS_COMMON_ND_GPU_H

#include <cuda_runtime_api.h>

extern "C" {
#include "ops/common/gpu_ops.h"
#include "ops/common/nd_op.h"

/* Runs count parts (descs_device: device copies of stk__nd_copy, dst and src device pointers, boxes
 * pointing into device memory) whose largest has max_elements elements: grid (blocks over the
 * elements, parts), each thread a grid-stride loop over its part's elements. */
stk_status stk__gpu_nd_copy_batch(const stk__nd_copy *descs_device, int count, int64_t max_elements,
                                  cudaStream_t stream);

/* The GPU implementation pieces: init with a kind (parse + device + upload arena), destroy, and
 * the batch run. */
STK_INTERNAL stk_status stk__nd_gpu_init(stk__op *op, const stk__nd_kind *kind, char *err, size_t err_size);
STK_INTERNAL void stk__nd_gpu_destroy(stk__op *op);
STK_INTERNAL stk_status stk__nd_gpu_run_batch(stk__op *op, stk__batch_ctx *ctx, stk__tensor_list *const *inputs,
                                              stk__tensor_list *const *outputs);
}

/* Defines `const stk__op_impl impl` (an operator's GPU row) running `kind` (nd_kinds.h). */
#define STK__ND_GPU_IMPL(impl, kind)                                       \
  static stk_status impl##_init(stk__op *op, char *err, size_t err_size) { \
    return stk__nd_gpu_init(op, &(kind), err, err_size);                   \
  }                                                                        \
  extern "C" const stk__op_impl impl = {impl##_init, stk__nd_gpu_destroy, NULL, NULL, NULL, NULL, stk__nd_gpu_run_batch}
#endif
