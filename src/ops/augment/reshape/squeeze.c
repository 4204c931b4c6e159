/* src/ops/augment/reshape/squeeze.c: the `squeeze` and `expand_dims` operators (DALI's fn.squeeze,
 * fn.expand_dims) -- schemas, parses, per-sample plans and CPU implementations: squeeze removes the
 * extent-1 axes named by axes or axis_names (their layout letters go too); expand_dims inserts
 * extent-1 axes at the output positions `axes`, named by new_axis_names when the input has a
 * layout. The elements keep their order (one flat copy). Any dtype. The plans are shared with the
 * GPU implementations (reshape_gpu.cu). Hot path: plan + copy per sample. */
#include <stdio.h>
#include <string.h>

#include "ops/common/nd_kinds.h"
#include "ops/op_impls.h"

/* The plan's output is its shape/layout; one flat copy of the input's bytes. */
static void flat_copy(stk__nd_plan *plan, const stk__tensor *in) {
  const int64_t count = (int64_t)stk__tensor_numel(in);
  stk__nd_identity(&plan->part[0], 1, &count, (int)stk_dtype_size(in->dtype));
  plan->part[0].src = in->data;
}

static stk_status squeeze_parse(const stk__op *op, void *params, char *err, size_t err_size) {
  (void)params;
  if (!stk__arg_is_set(op, "axes") && !stk__arg_is_set(op, "axis_names")) {
    stk__errorf(err, err_size, "give the axes to remove ('axes' or 'axis_names')");
    return STK_EINVAL;
  }
  return STK_OK;
}

static stk_status squeeze_plan(const stk__op *op, const void *params, stk__tensor *const *inputs, int num_inputs,
                               stk__nd_plan *plan, char *err, size_t err_size) {
  (void)params;
  (void)num_inputs;
  const stk__tensor *in = inputs[0];
  stk__nd_plan_identity(plan, in);
  int axes[STK__ND_DIMS], n = 0;
  stk_status s = stk__nd_pick_axes(op, stk__nd_layout(in), in->ndim, axes, &n, err, err_size);
  if (s != STK_OK) return s;
  unsigned removed = 0;
  for (int k = 0; k < n; k++) {
    if (in->shape[axes[k]] != 1) {
      stk__errorf(err, err_size, "axis %d has extent %lld, not 1: it cannot be removed", axes[k],
                  (long long)in->shape[axes[k]]);
      return STK_EINVAL;
    }
    removed |= 1u << axes[k];
  }
  const int has_layout = (int)strlen(in->layout) == in->ndim;
  int out = 0;
  for (int d = 0; d < in->ndim; d++) {
    if ((removed >> d) & 1u) continue;
    plan->shape[out] = in->shape[d];
    plan->layout[out] = has_layout ? in->layout[d] : '\0';
    out++;
  }
  plan->ndim = out;
  plan->layout[has_layout ? out : 0] = '\0';
  flat_copy(plan, in);
  return STK_OK;
}

typedef struct expand_params {
  int axes[STK__ND_DIMS];
  int count;
  char names[8];
} expand_params;

static stk_status expand_parse(const stk__op *op, void *params, char *err, size_t err_size) {
  expand_params *p = params;
  size_t n = 0;
  const int64_t *axes = stk__arg_int_list(op, "axes", &n);
  const char *names = stk__arg_string(op, "new_axis_names");
  if (n == 0 || n > STK__ND_DIMS || (names[0] && strlen(names) != n)) {
    stk__errorf(err, err_size, "'axes' needs 1 to %d positions and 'new_axis_names' one letter per axis or none",
                STK__ND_DIMS);
    return STK_EINVAL;
  }
  for (size_t k = 0; k < n; k++) p->axes[k] = (int)axes[k];
  p->count = (int)n;
  snprintf(p->names, sizeof p->names, "%s", names);
  return STK_OK;
}

static stk_status expand_plan(const stk__op *op, const void *params, stk__tensor *const *inputs, int num_inputs,
                              stk__nd_plan *plan, char *err, size_t err_size) {
  (void)op;
  (void)num_inputs;
  const expand_params *p = params;
  const stk__tensor *in = inputs[0];
  stk__nd_plan_identity(plan, in);
  const int ndim = in->ndim + p->count;
  int new_at[STK__ND_DIMS + 1];
  memset(new_at, -1, sizeof new_at);
  for (int k = 0; k < p->count; k++) {
    if (ndim > STK__ND_DIMS || p->axes[k] < 0 || p->axes[k] >= ndim || new_at[p->axes[k]] >= 0) {
      stk__errorf(err, err_size, "argument 'axes': position %d is out of range or repeated for a %d-D output",
                  p->axes[k], ndim);
      return STK_EINVAL;
    }
    new_at[p->axes[k]] = k;
  }
  const int has_layout = in->layout[0] && (int)strlen(in->layout) == in->ndim;
  if (!has_layout && p->names[0] && in->ndim > 0) {
    stk__errorf(err, err_size, "argument 'new_axis_names' needs an input with a layout");
    return STK_EINVAL;
  }
  for (int d = 0, src = 0; d < ndim; d++) {
    const int k = new_at[d];
    plan->shape[d] = k >= 0 ? 1 : in->shape[src];
    plan->layout[d] = k >= 0 ? p->names[0] ? p->names[k] : '\0' : has_layout ? in->layout[src] : '\0';
    src += k < 0;
  }
  plan->ndim = ndim;
  plan->layout[(has_layout || in->ndim == 0) && p->names[0] ? ndim : 0] = '\0';
  flat_copy(plan, in);
  return STK_OK;
}

const stk__nd_kind stk__nd_kind_squeeze = {squeeze_parse, squeeze_plan, 0};
const stk__nd_kind stk__nd_kind_expand_dims = {expand_parse, expand_plan, sizeof(expand_params)};

static stk_status squeeze_init(stk__op *op, char *err, size_t err_size) {
  return stk__nd_cpu_init(op, &stk__nd_kind_squeeze, err, err_size);
}
static stk_status expand_init(stk__op *op, char *err, size_t err_size) {
  return stk__nd_cpu_init(op, &stk__nd_kind_expand_dims, err, err_size);
}

const stk__op_impl stk__cpu_impl_squeeze = {
    .init = squeeze_init, .destroy = stk__nd_cpu_destroy, .run_sample = stk__nd_run_sample};
const stk__op_impl stk__cpu_impl_expand_dims = {
    .init = expand_init, .destroy = stk__nd_cpu_destroy, .run_sample = stk__nd_run_sample};

static const stk__arg_schema squeeze_args[] = {
    {"axes", STK_ARG_INT_LIST, "[]", 0, 0, "the extent-1 axes to remove, as indices (negative: from the back)"},
    {"axis_names", STK_ARG_STRING, "", 0, 0, "the extent-1 axes to remove, as layout letters"},
};
static const stk__arg_schema expand_args[] = {
    {"axes", STK_ARG_INT_LIST, NULL, 1, 0, "output positions of the new extent-1 axes"},
    {"new_axis_names", STK_ARG_STRING, "", 0, 0, "layout letters of the new axes (one per axis)"},
};

const stk__op_schema stk__op_squeeze = {
    .name = "squeeze",
    .doc = "Removes the given extent-1 axes of each sample (and their layout letters); any dtype.",
    .min_inputs = 1,
    .max_inputs = 1,
    .num_outputs = 1,
    .devices = STK_OPDEV_CPU | STK_OPDEV_GPU,
    .args = squeeze_args,
    .num_args = (int)(sizeof squeeze_args / sizeof squeeze_args[0]),
    .array_outputs = 1u << 0,
};

const stk__op_schema stk__op_expand_dims = {
    .name = "expand_dims",
    .doc =
        "Inserts extent-1 axes at the given output positions of each sample (named by new_axis_names); any "
        "dtype.",
    .min_inputs = 1,
    .max_inputs = 1,
    .num_outputs = 1,
    .devices = STK_OPDEV_CPU | STK_OPDEV_GPU,
    .args = expand_args,
    .num_args = (int)(sizeof expand_args / sizeof expand_args[0]),
    .array_outputs = 1u << 0,
};
