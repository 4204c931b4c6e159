/* src/ops/common/sample_gpu.cuh: the launch every per-sample GPU operator of sample_gpu.h repeats
 * around its kernel (cast, noise, jitter, one_hot, normalize, gaussian_blur): the grid -- blockIdx.y
 * one sample, x 256-thread blocks covering the largest sample, at least 1 and at most `cap` (the
 * kernels loop over the rest) -- and the launch's error, named. Included by .cu files only, after
 * sample_gpu.h. Hot path (per batch); no allocation. */
#ifndef STOKER_OPS_COMMON_SAMPLE_GPU_CUH
#define STOKER_OPS_COMMON_SAMPLE_GPU_CUH

#include <cuda_runtime_api.h>

static inline dim3 stk__sample_gpu_grid(long long max_elements, int samples, long long cap) {
  const long long blocks = (max_elements + 255) / 256;
  return dim3((unsigned)(blocks < 1 ? 1 : (blocks > cap ? cap : blocks)), (unsigned)samples);
}

/* After the operator's launches: STK_ECUDA with "the <op_name> kernel launch failed" when CUDA
 * refused one, else STK_OK. */
static inline stk_status stk__sample_gpu_launched(stk__batch_ctx *ctx, const char *op_name) {
  if (cudaGetLastError() == cudaSuccess) return STK_OK;
  stk__errorf(ctx->err, ctx->err_size, "the %s kernel launch failed", op_name);
  return STK_ECUDA;
}

#endif
