/* src/ops/augment/normalize/normalize_params.h: the one parameter parse of `normalize` (DALI's
 * fn.normalize) and its per-sample plan, shared by the CPU (normalize.c) and GPU
 * (normalize_gpu.cu) implementations.
 *
 * out = (in - mean) * factor + shift, per statistic: a statistic covers the elements that differ
 * only along the reduced axes (axes / axis_names; neither: inferred from a bound mean/stddev's
 * extents of 1, else every axis). factor = scale / stddev for a given stddev; for a computed one
 * factor = scale / sqrt(var + epsilon), var = sum((in - mean)^2) / (count - ddof), and 0 where
 * var + epsilon is 0 (a constant region maps to shift). With batch=True computed statistics run
 * over the whole batch (GPU only: the CPU runs one sample at a time). Build time (parse) and per
 * sample (plan, given values). */
#ifndef STOKER_OPS_AUGMENT_NORMALIZE_NORMALIZE_PARAMS_H
#define STOKER_OPS_AUGMENT_NORMALIZE_NORMALIZE_PARAMS_H

#include <math.h>

#include "core/op.h"
#include "ops/common/elem_access.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct stk__normalize_params {
  int axes_given;        /* axes or axis_names given */
  int num_axes;          /* entries of axes (axis_names empty) */
  int axes[STK_MAX_DIMS]; /* may be negative (from the end) */
  char axis_names[STK_MAX_DIMS + 2];
  int batch;
  double scale, shift, epsilon;
  int ddof;
  stk_dtype dtype;
  int mean_given, stddev_given; /* constant or bound: not computed */
  int mean_bound, stddev_bound; /* bound to a per-sample input */
} stk__normalize_params;

/* One sample's reduction: the input's shape, which axes are reduced and where each element's
 * statistic lives (stat index = sum over axes of index * stat_stride; 0 on reduced axes). */
typedef struct stk__normalize_plan {
  int ndim;
  unsigned reduced; /* bit d: axis d reduced */
  int64_t shape[STK_MAX_DIMS];
  int64_t stat_stride[STK_MAX_DIMS];
  int64_t stats;    /* number of statistics (product of the kept extents) */
  int64_t per_stat; /* elements reduced into each statistic */
} stk__normalize_plan;

STK_INTERNAL stk_status stk__normalize_parse(const stk__op *op, stk__normalize_params *p, char *err, size_t err_size);

/* The plan of input `in` (mean_t / stddev_t: the bound per-sample tensors, or NULL); STK_EINVAL
 * with a message (unknown axis letter, axis out of range, mean/stddev shape that does not
 * broadcast). */
STK_INTERNAL stk_status stk__normalize_make_plan(const stk__normalize_params *p, const stk__tensor *in,
                                                 const stk__tensor *mean_t, const stk__tensor *stddev_t,
                                                 stk__normalize_plan *plan, char *err, size_t err_size);

/* The given values of `name` ("mean" or "stddev") per statistic into out[plan->stats]: from the
 * bound tensor t (broadcast: extents 1 repeat) or the constant. stddev: out = scale / stddev,
 * STK_EINVAL when a stddev is not > 0. */
STK_INTERNAL stk_status stk__normalize_given(const stk__normalize_params *p, const stk__normalize_plan *plan,
                                             const stk__tensor *t, double constant, int is_stddev, double *out,
                                             char *err, size_t err_size);

/* The factor of a computed variance: scale / sqrt(var + epsilon), 0 when var + epsilon <= 0 (CPU and GPU). */
STK_ELEM_HD static inline double stk__normalize_factor(double var, double epsilon, double scale) {
  double v = var + epsilon;
  return v > 0 ? scale / sqrt(v) : 0.0;
}

#ifdef __cplusplus
}
#endif
#endif
