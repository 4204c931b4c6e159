/* src/ops/common/sample_gpu.h: the batch plumbing of the GPU implementations of per-sample
 * operators that are not resize/crop geometry (colour, noise, filters, equalize, the AutoAugment
 * applier): a state with the operator's parsed parameters (the same parse as its CPU
 * implementation) and an upload arena, the per-sample values of its numeric arguments for a batch
 * (constants, or per-sample argument inputs: stk__arg_batch_floats), output storage sized per
 * sample, and the descriptors uploaded with one copy before ONE kernel launch. Plain C on the
 * device runtime (src/device/device.h), so it builds with and without CUDA; the kernels are in
 * the operators' .cu files. Hot path (per batch); allocations grow only, counted. */
#ifndef STOKER_OPS_COMMON_SAMPLE_GPU_H
#define STOKER_OPS_COMMON_SAMPLE_GPU_H

#include "core/op.h"
#include "ops/common/gpu_ops.h"

#ifdef __cplusplus
extern "C" {
#endif

#define STK__SAMPLE_GPU_PARAMS 1024 /* bytes of parsed parameters a state keeps */

typedef struct stk__sample_gpu_state {
  stk__gpu_arena arena;
  int numa_node;
  double *values; /* per-sample argument values, [argument][sample] */
  size_t values_cap;
  size_t *sizes; /* per-sample output bytes */
  int sizes_cap;
  double params[STK__SAMPLE_GPU_PARAMS / sizeof(double)]; /* the operator's parsed parameters (aligned) */
} stk__sample_gpu_state;

/* op->state = a new state on the op's device holding a copy of params (size <= STK__SAMPLE_GPU_PARAMS). */
STK_INTERNAL stk_status stk__sample_gpu_state_new(stk__op *op, const void *params, size_t size, char *err,
                                                  size_t err_size);
STK_INTERNAL void stk__sample_gpu_state_destroy(stk__op *op);

/* The values of `count` numeric arguments `names` for samples 0..n-1: (*values)[k * n + i]
 * (names the operator lacks: 0). Valid until the next call on this state. */
STK_INTERNAL stk_status stk__sample_gpu_args(stk__sample_gpu_state *s, const stk__op *op, stk__batch_ctx *ctx,
                                             stk__tensor_list *const *inputs, const char *const *names, int count,
                                             int n, double **values);

/* Room for n output samples of bytes[i] each (ragged, grow-only) in out; the caller then sets each
 * sample's shape (stk__sample_gpu_set_shape) and calls stk__gpu_tensor_list_settle. `bytes` may be
 * stk__sample_gpu_sizes(s, n). */
STK_INTERNAL size_t *stk__sample_gpu_sizes(stk__sample_gpu_state *s, int n, uint64_t *alloc_count);
STK_INTERNAL stk_status stk__sample_gpu_reserve(const stk__batch_ctx *ctx, stk__tensor_list *out, int n,
                                                const size_t *bytes);
STK_INTERNAL void stk__sample_gpu_set_shape(stk__tensor *t, stk_dtype dtype, int ndim, const int64_t *shape,
                                            const char *layout);

/* The arena for one batch: `bytes` reserved, *at = the offset of the first block pushed (host:
 * s->arena.host + *at, device: s->arena.device + *at); stk__sample_gpu_upload copies it. */
STK_INTERNAL stk_status stk__sample_gpu_descs(stk__sample_gpu_state *s, const stk__batch_ctx *ctx, size_t bytes,
                                              size_t *at);
STK_INTERNAL stk_status stk__sample_gpu_upload(stk__sample_gpu_state *s, const stk__batch_ctx *ctx);

/* Checks that every sample of a GPU input list is on the GPU with ndim >= min_ndim; STK_EINVAL
 * naming the sample otherwise. */
STK_INTERNAL stk_status stk__sample_gpu_check_input(const stk__batch_ctx *ctx, const stk__tensor_list *in, int n,
                                                    int min_ndim);

/* Per-sample tensor arguments (lists: sigma, mean, ...) read on the host: checks that every bound
 * argument among `names` comes from a host list holding n samples (STK_EINVAL naming it
 * otherwise); then stk__sample_gpu_bound gives sample i's tensor, or NULL for an unbound argument. */
STK_INTERNAL stk_status stk__sample_gpu_check_bound(const stk__batch_ctx *ctx, const stk__op *op,
                                                    stk__tensor_list *const *inputs, const char *const *names,
                                                    int count, int n);
STK_INTERNAL const stk__tensor *stk__sample_gpu_bound(const stk__op *op, stk__tensor_list *const *inputs,
                                                      const char *name, int i);

#ifdef __cplusplus
}
#endif
#endif
