/* src/ops/augment/normalize/normalize_params.c: normalize's parameter parse, per-sample plan
 * (reduced axes, statistic strides) and given mean/stddev values (normalize_params.h). Build time
 * (parse) and once per sample (plan, given values: O(statistics)). */
#include <string.h>

#include "ops/augment/normalize/normalize_params.h"
#include "ops/common/dtype.h"

stk_status stk__normalize_parse(const stk__op *op, stk__normalize_params *p, char *err, size_t err_size) {
  memset(p, 0, sizeof *p);
  size_t count = 0;
  const int64_t *axes = stk__arg_int_list(op, "axes", &count);
  const char *names = stk__arg_string(op, "axis_names");
  if (names[0]) {
    if (strlen(names) > STK_MAX_DIMS) {
      stk__errorf(err, err_size, "argument 'axis_names' \"%s\" names more than %d axes", names, STK_MAX_DIMS);
      return STK_EINVAL;
    }
    if (count > 0) {
      stk__errorf(err, err_size, "give 'axes' or 'axis_names', not both");
      return STK_EINVAL;
    }
    strcpy(p->axis_names, names);
    p->axes_given = 1;
  } else if (stk__arg_is_set(op, "axes")) {
    if (count > STK_MAX_DIMS) {
      stk__errorf(err, err_size, "argument 'axes' lists %zu axes; at most %d", count, STK_MAX_DIMS);
      return STK_EINVAL;
    }
    for (size_t k = 0; k < count; k++) p->axes[k] = (int)axes[k];
    p->num_axes = (int)count;
    p->axes_given = 1;
  }
  p->batch = stk__arg_bool(op, "batch");
  p->scale = stk__arg_float(op, "scale");
  p->shift = stk__arg_float(op, "shift");
  p->epsilon = stk__arg_float(op, "epsilon");
  p->ddof = (int)stk__arg_int(op, "ddof");
  if (p->epsilon < 0 || p->ddof < 0) {
    stk__errorf(err, err_size, "arguments 'epsilon' (%g) and 'ddof' (%d) must be >= 0", p->epsilon, p->ddof);
    return STK_EINVAL;
  }
  const char *dtype = stk__arg_string(op, "dtype");
  if (stk__dtype_parse(dtype, &p->dtype) != STK_OK) {
    stk__errorf(err, err_size, "argument 'dtype' expects " STK__DTYPE_NAMES ", got \"%s\"", dtype);
    return STK_EINVAL;
  }
  const stk__arg_value *mean = stk__arg(op, "mean"), *stddev = stk__arg(op, "stddev");
  p->mean_bound = mean && mean->input_slot >= 0;
  p->stddev_bound = stddev && stddev->input_slot >= 0;
  p->mean_given = p->mean_bound || stk__arg_is_set(op, "mean");
  p->stddev_given = p->stddev_bound || stk__arg_is_set(op, "stddev");
  return STK_OK;
}

/* Reduced axes from axes / axis_names; STK_EINVAL naming the axis that the input lacks. */
static stk_status reduced_from_args(const stk__normalize_params *p, const stk__tensor *in, unsigned *reduced,
                                    char *err, size_t err_size) {
  *reduced = 0;
  for (const char *c = p->axis_names; *c; c++) {
    const char *at = strchr(in->layout, *c);
    if (!at) {
      stk__errorf(err, err_size, "argument 'axis_names': axis '%c' is not in the input's layout \"%s\"", *c,
                  in->layout);
      return STK_EINVAL;
    }
    *reduced |= 1u << (at - in->layout);
  }
  for (int k = 0; k < p->num_axes; k++) {
    int a = p->axes[k] < 0 ? p->axes[k] + in->ndim : p->axes[k];
    if (a < 0 || a >= in->ndim) {
      stk__errorf(err, err_size, "argument 'axes': axis %d is out of range for a %d-d input", p->axes[k], in->ndim);
      return STK_EINVAL;
    }
    *reduced |= 1u << a;
  }
  return STK_OK;
}

/* Checks that t broadcasts against the input (right-aligned, each extent 1 or the input's, and 1
 * on every reduced axis); a single value always does. */
static stk_status check_broadcast(const stk__normalize_plan *plan, const stk__tensor *t, const char *name, char *err,
                                  size_t err_size) {
  if (stk__tensor_numel(t) == 1) return STK_OK;
  int lead = plan->ndim - t->ndim;
  for (int d = 0; d < t->ndim && lead >= 0; d++) {
    int a = d + lead;
    int64_t e = t->shape[d];
    if (e == 1) continue;
    if (e != plan->shape[a] || (plan->reduced >> a & 1u)) {
      stk__errorf(err, err_size,
                  "argument '%s': extent %lld of axis %d does not broadcast to the input's %lld%s", name,
                  (long long)e, a, (long long)plan->shape[a], (plan->reduced >> a & 1u) ? " (a reduced axis)" : "");
      return STK_EINVAL;
    }
  }
  if (lead < 0) {
    stk__errorf(err, err_size, "argument '%s' has %d dimensions, the input %d", name, t->ndim, plan->ndim);
    return STK_EINVAL;
  }
  return STK_OK;
}

stk_status stk__normalize_make_plan(const stk__normalize_params *p, const stk__tensor *in, const stk__tensor *mean_t,
                                    const stk__tensor *stddev_t, stk__normalize_plan *plan, char *err,
                                    size_t err_size) {
  memset(plan, 0, sizeof *plan);
  plan->ndim = in->ndim;
  for (int d = 0; d < in->ndim; d++) plan->shape[d] = in->shape[d];
  const stk__tensor *given = mean_t && stk__tensor_numel(mean_t) != 1 ? mean_t : stddev_t;
  if (given && stk__tensor_numel(given) == 1) given = NULL;
  if (p->axes_given) {
    stk_status st = reduced_from_args(p, in, &plan->reduced, err, err_size);
    if (st != STK_OK) return st;
  } else if (given && given->ndim == in->ndim) { /* DALI: the reduced axes are the extents of 1 */
    for (int d = 0; d < in->ndim; d++)
      if (given->shape[d] == 1) plan->reduced |= 1u << d;
  } else {
    plan->reduced = (1u << in->ndim) - 1u;
  }
  int64_t stride = 1, stats = 1, per = 1;
  for (int d = in->ndim - 1; d >= 0; d--) {
    if (plan->reduced >> d & 1u) {
      plan->stat_stride[d] = 0;
      per *= in->shape[d];
    } else {
      plan->stat_stride[d] = stride;
      stride *= in->shape[d];
      stats *= in->shape[d];
    }
  }
  plan->stats = stats;
  plan->per_stat = per;
  if (mean_t) {
    stk_status st = check_broadcast(plan, mean_t, "mean", err, err_size);
    if (st != STK_OK) return st;
  }
  if (stddev_t) return check_broadcast(plan, stddev_t, "stddev", err, err_size);
  return STK_OK;
}

stk_status stk__normalize_given(const stk__normalize_params *p, const stk__normalize_plan *plan, const stk__tensor *t,
                                double constant, int is_stddev, double *out, char *err, size_t err_size) {
  const int single = !t || stk__tensor_numel(t) == 1;
  int64_t idx[STK_MAX_DIMS] = {0};
  int64_t tstride[STK_MAX_DIMS] = {0}; /* t's element stride per input axis; 0 where it broadcasts */
  if (!single) {
    int lead = plan->ndim - t->ndim;
    int64_t s = 1;
    for (int d = t->ndim - 1; d >= 0; d--) {
      tstride[d + lead] = t->shape[d] == 1 ? 0 : s;
      s *= t->shape[d];
    }
  }
  for (int64_t k = 0; k < plan->stats; k++) {
    int64_t at = 0;
    for (int d = 0; d < plan->ndim; d++) at += idx[d] * tstride[d];
    double v = single ? (t ? stk__dtype_load(t->data, t->dtype, 0) : constant) : stk__dtype_load(t->data, t->dtype, (size_t)at);
    if (is_stddev) {
      if (!(v > 0)) {
        stk__errorf(err, err_size, "argument 'stddev' is %g; it must be > 0", v);
        return STK_EINVAL;
      }
      v = p->scale / v;
    }
    out[k] = v;
    for (int d = plan->ndim - 1; d >= 0; d--) { /* next statistic: the kept axes' odometer */
      if (plan->reduced >> d & 1u) continue;
      if (++idx[d] < plan->shape[d]) break;
      idx[d] = 0;
    }
  }
  return STK_OK;
}
