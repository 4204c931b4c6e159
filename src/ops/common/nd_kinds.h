/* src/ops/common/nd_kinds.h: the geometry operators' kinds (nd_op.h: parse + per-sample plan), each
 * defined beside its operator's schema (src/ops/augment/<operator>/) and named by both its CPU
 * implementation there and its GPU row (the operator's *_gpu.cu, STK__ND_GPU_IMPL). Build time. */
#ifndef STOKER_OPS_COMMON_ND_KINDS_H
#define STOKER_OPS_COMMON_ND_KINDS_H

#include "ops/common/nd_op.h"

#ifdef __cplusplus
extern "C" {
#endif

STK_INTERNAL extern const stk__nd_kind stk__nd_kind_flip;        /* flip/flip.c */
STK_INTERNAL extern const stk__nd_kind stk__nd_kind_transpose;   /* transpose/transpose.c */
STK_INTERNAL extern const stk__nd_kind stk__nd_kind_crop;        /* slice/crop.c */
STK_INTERNAL extern const stk__nd_kind stk__nd_kind_slice;       /* slice/slice.c */
STK_INTERNAL extern const stk__nd_kind stk__nd_kind_pad;         /* pad/pad.c */
STK_INTERNAL extern const stk__nd_kind stk__nd_kind_paste;       /* pad/paste.c */
STK_INTERNAL extern const stk__nd_kind stk__nd_kind_erase;       /* erase/erase.c */
STK_INTERNAL extern const stk__nd_kind stk__nd_kind_reshape;     /* reshape/reshape.c */
STK_INTERNAL extern const stk__nd_kind stk__nd_kind_squeeze;     /* reshape/squeeze.c */
STK_INTERNAL extern const stk__nd_kind stk__nd_kind_expand_dims; /* reshape/squeeze.c */
STK_INTERNAL extern const stk__nd_kind stk__nd_kind_cat;         /* cat/cat.c */
STK_INTERNAL extern const stk__nd_kind stk__nd_kind_stack;       /* cat/cat.c */

#ifdef __cplusplus
}
#endif
#endif
