/* src/ops/augment/one_hot/one_hot_params.h: the one parameter parse of `one_hot` (DALI's
 * fn.one_hot) and its per-sample output shape, shared by the CPU (one_hot.c) and GPU
 * (one_hot_gpu.cu) implementations, and the value of one output element (both use it).
 *
 * A sample is a scalar (0-d, or a single element when `axis` is not given: DALI's legacy rule,
 * decided here per sample): its output is [num_classes]. Otherwise a new axis of num_classes is
 * inserted at `axis` (-1: last): out[..., c, ...] = on_value where the input's class is c, else
 * off_value; the class is the input value truncated to an integer, and a class outside
 * [0, num_classes) sets no element. The new axis is named axis_name in the output layout when
 * the input has a layout (or is a scalar); otherwise the output has none. Build time (parse),
 * per sample (shape), per element (value). */
#ifndef STOKER_OPS_AUGMENT_ONE_HOT_ONE_HOT_PARAMS_H
#define STOKER_OPS_AUGMENT_ONE_HOT_ONE_HOT_PARAMS_H

#include "core/op.h"
#include "ops/common/elem_access.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct stk__one_hot_params {
  int64_t num_classes;
  int axis, axis_given;
  char axis_name; /* 0: none */
  double on_value, off_value;
  stk_dtype dtype;
} stk__one_hot_params;

/* One sample's output: its shape and layout, and the (outer, classes, inner) split around the new axis. */
typedef struct stk__one_hot_shape {
  int ndim;
  int64_t shape[STK_MAX_DIMS];
  char layout[8];
  int64_t outer, inner;
} stk__one_hot_shape;

STK_INTERNAL stk_status stk__one_hot_parse(const stk__op *op, stk__one_hot_params *p, char *err, size_t err_size);
STK_INTERNAL stk_status stk__one_hot_make_shape(const stk__one_hot_params *p, const stk__tensor *in,
                                                stk__one_hot_shape *s, char *err, size_t err_size);

/* Output element e (of outer x classes x inner) of the input `src` (inner runs over the input's
 * elements after the new axis, outer over those before it). */
STK_ELEM_HD static inline double stk__one_hot_value(const void *src, stk_dtype src_type, int64_t e, int64_t classes,
                                                    int64_t inner, double on_value, double off_value) {
  const int64_t j = e % inner, c = (e / inner) % classes, o = e / (inner * classes);
  const double v = stk__elem_load(src, src_type, o * inner + j);
  return v >= 0 && v < (double)classes && (int64_t)v == c ? on_value : off_value;
}

#ifdef __cplusplus
}
#endif
#endif
