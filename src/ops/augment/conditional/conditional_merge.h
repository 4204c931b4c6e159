/* src/ops/augment/conditional/conditional_merge.h: the check `_conditional.merge` makes of each
 * sample, shared by its CPU (conditional_merge.c) and GPU (conditional_merge_gpu.cu)
 * implementations. Once per sample. */
#ifndef STOKER_OPS_AUGMENT_CONDITIONAL_MERGE_H
#define STOKER_OPS_AUGMENT_CONDITIONAL_MERGE_H

#include "core/op.h"

#ifdef __cplusplus
extern "C" {
#endif

/* STK_EINVAL (message naming the sample and both types) when the branch values differ in dtype or
 * number of dimensions, or the predicate (NULL: a constant) is not one element. */
STK_INTERNAL stk_status stk__merge_check(const stk__tensor *then_value, const stk__tensor *else_value,
                                         const stk__tensor *predicate, int sample, char *err, size_t err_size);

#ifdef __cplusplus
}
#endif
#endif
