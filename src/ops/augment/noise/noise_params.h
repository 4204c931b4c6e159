/* src/ops/augment/noise/noise_params.h: the noise operators' per-sample setup shared by the CPU
 * (noise.c) and GPU (noise_gpu.cu) implementations: argument names and the stk__noise_sample
 * (noise_math.h) of one sample from its argument values, dtype and RNG key. Per sample. */
#ifndef STOKER_OPS_AUGMENT_NOISE_NOISE_PARAMS_H
#define STOKER_OPS_AUGMENT_NOISE_NOISE_PARAMS_H

#include "core/op.h"
#include "ops/augment/noise/noise_math.h"

#ifdef __cplusplus
extern "C" {
#endif

#define STK__NOISE_NUM_ARGS 7
/* mean, stddev, factor, prob, salt_vs_pepper, salt_val, pepper_val */
STK_INTERNAL extern const char *const stk__noise_arg_names[STK__NOISE_NUM_ARGS];

/* The operator's kind (from its schema name); STK_EINVAL for another operator. */
STK_INTERNAL stk_status stk__noise_kind_of(const stk__op *op, int *kind, char *err, size_t err_size);
/* One sample's noise from the argument values (values[k] for stk__noise_arg_names[k]), the input
 * dtype (uint8 or float; the output keeps it) and channel count; STK_EINVAL with a message. */
STK_INTERNAL stk_status stk__noise_sample_make(const stk__op *op, int kind, const double *values, stk_dtype dtype,
                                               int channels, uint64_t epoch, int64_t sample_id, stk__noise_sample *s,
                                               char *err, size_t err_size);

#ifdef __cplusplus
}
#endif
#endif
