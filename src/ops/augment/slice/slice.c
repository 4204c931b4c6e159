/* src/ops/augment/slice/slice.c: the `slice` operator (DALI's fn.slice) -- schema, parse,
 * per-sample plan and CPU implementation: a sub-tensor of each sample along the axes named by
 * axis_names (default "WH") or axes, given by named arguments (start / rel_start, and end /
 * rel_end or shape / rel_shape; absolute or relative to the extent) or by the positional inputs
 * anchor and shape (normalized_anchor / normalized_shape say whether they are relative). Values are
 * in the order of the axes; start and end are rounded to the nearest element (end = start + shape
 * before rounding). out_of_bounds_policy and fill_values as in crop. Any dtype. Every named
 * argument may be bound per sample. The plan is shared with the GPU implementation (slice_gpu.cu).
 * Hot path: plan + copy per sample. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "ops/common/nd_kinds.h"
#include "ops/op_impls.h"

typedef struct slice_params {
  stk__nd_oob oob;
  int normalized_anchor, normalized_shape;
  size_t fill_count;
  double fill[STK__ND_FILLS];
} slice_params;

static stk_status slice_parse(const stk__op *op, void *params, char *err, size_t err_size) {
  slice_params *p = params;
  if (stk__arg_is_set(op, "start") && stk__arg_is_set(op, "rel_start")) {
    stk__errorf(err, err_size, "give either 'start' or 'rel_start', not both");
    return STK_EINVAL;
  }
  int ends = stk__arg_is_set(op, "end") + stk__arg_is_set(op, "rel_end") + stk__arg_is_set(op, "shape") +
             stk__arg_is_set(op, "rel_shape");
  if (ends > 1) {
    stk__errorf(err, err_size, "give one of 'end', 'rel_end', 'shape' and 'rel_shape', not %d of them", ends);
    return STK_EINVAL;
  }
  p->normalized_anchor = stk__arg_bool(op, "normalized_anchor");
  p->normalized_shape = stk__arg_bool(op, "normalized_shape");
  const double *fill = stk__arg_float_list(op, "fill_values", &p->fill_count);
  if (p->fill_count > STK__ND_FILLS) {
    stk__errorf(err, err_size, "argument 'fill_values' takes at most %d values", STK__ND_FILLS);
    return STK_EINVAL;
  }
  for (size_t k = 0; k < p->fill_count; k++) p->fill[k] = fill[k];
  return stk__nd_oob_parse(op, &p->oob, err, err_size);
}

/* Start and end (in elements, before rounding) along each of n axes with extents ext[]. */
typedef struct slice_window {
  double start[STK__ND_DIMS], end[STK__ND_DIMS];
} slice_window;

static stk_status named_window(const stk__op *op, stk__tensor *const *inputs, int n, const int64_t *ext,
                               slice_window *w, char *err, size_t err_size) {
  static const char *const names[6] = {"start", "rel_start", "end", "rel_end", "shape", "rel_shape"};
  double v[6][STK__ND_DIMS];
  int count[6];
  for (int a = 0; a < 6; a++) {
    stk_status s = stk__nd_arg_list(op, inputs, names[a], v[a], STK__ND_DIMS, &count[a], err, err_size);
    if (s != STK_OK) return s;
    if (count[a] != 0 && count[a] != n) {
      stk__errorf(err, err_size, "argument '%s' has %d values but the slice has %d axes", names[a], count[a], n);
      return STK_EINVAL;
    }
  }
  for (int k = 0; k < n; k++) {
    const double e = (double)ext[k];
    w->start[k] = count[0] ? v[0][k] : count[1] ? v[1][k] * e : 0.0;
    w->end[k] = count[2]   ? v[2][k]
                : count[3] ? v[3][k] * e
                : count[4] ? w->start[k] + v[4][k]
                : count[5] ? w->start[k] + v[5][k] * e
                           : e;
  }
  return STK_OK;
}

static stk_status positional_window(const slice_params *p, stk__tensor *const *inputs, int n, const int64_t *ext,
                                    slice_window *w, char *err, size_t err_size) {
  double anchor[STK__ND_DIMS], shape[STK__ND_DIMS];
  int na = 0, ns = 0;
  stk_status s = stk__nd_tensor_numbers(inputs[1], anchor, STK__ND_DIMS, &na, err, err_size, "input 'anchor'");
  if (s == STK_OK) s = stk__nd_tensor_numbers(inputs[2], shape, STK__ND_DIMS, &ns, err, err_size, "input 'shape'");
  if (s != STK_OK) return s;
  if (na != n || ns != n) {
    stk__errorf(err, err_size, "inputs 'anchor' and 'shape' have %d and %d values but the slice has %d axes", na, ns,
                n);
    return STK_EINVAL;
  }
  for (int k = 0; k < n; k++) {
    w->start[k] = p->normalized_anchor ? anchor[k] * (double)ext[k] : anchor[k];
    w->end[k] = w->start[k] + (p->normalized_shape ? shape[k] * (double)ext[k] : shape[k]);
  }
  return STK_OK;
}

static stk_status slice_plan(const stk__op *op, const void *params, stk__tensor *const *inputs, int num_inputs,
                             stk__nd_plan *plan, char *err, size_t err_size) {
  const slice_params *p = params;
  const stk__tensor *in = inputs[0];
  stk__nd_plan_identity(plan, in);
  int axes[STK__ND_DIMS], n = 0;
  stk_status s = stk__nd_pick_axes(op, stk__nd_layout(in), in->ndim, axes, &n, err, err_size);
  if (s != STK_OK) return s;
  int64_t ext[STK__ND_DIMS];
  for (int k = 0; k < n; k++) ext[k] = in->shape[axes[k]];
  slice_window w;
  if (num_inputs == 3) s = positional_window(p, inputs, n, ext, &w, err, err_size);
  else if (num_inputs == 1) s = named_window(op, inputs, n, ext, &w, err, err_size);
  else {
    stk__errorf(err, err_size, "give both positional inputs anchor and shape, or neither");
    s = STK_EINVAL;
  }
  for (int k = 0; s == STK_OK && k < n; k++) {
    if (!isfinite(w.start[k]) || !isfinite(w.end[k])) {
      stk__errorf(err, err_size, "the slice bounds along axis %d are not finite", axes[k]);
      return STK_EINVAL;
    }
    const int64_t start = (int64_t)llround(w.start[k]), end = (int64_t)llround(w.end[k]);
    s = stk__nd_plan_window(plan, axes[k], start, end - start, p->oob, err, err_size);
  }
  if (s == STK_OK) s = stk__nd_plan_fill(plan, p->fill, p->fill_count, err, err_size);
  return s;
}

const stk__nd_kind stk__nd_kind_slice = {slice_parse, slice_plan, sizeof(slice_params), 1};

static stk_status slice_init(stk__op *op, char *err, size_t err_size) {
  return stk__nd_cpu_init(op, &stk__nd_kind_slice, err, err_size);
}

const stk__op_impl stk__cpu_impl_slice = {
    .init = slice_init, .destroy = stk__nd_cpu_destroy, .run_sample = stk__nd_run_sample};

static const stk__arg_schema slice_args[] = {
    {"start", STK_ARG_FLOAT_LIST, NULL, 0, 1, "slice start, absolute, one value per axis; per sample"},
    {"rel_start", STK_ARG_FLOAT_LIST, NULL, 0, 1, "slice start relative to the extent; per sample"},
    {"end", STK_ARG_FLOAT_LIST, NULL, 0, 1, "slice end (exclusive), absolute; per sample"},
    {"rel_end", STK_ARG_FLOAT_LIST, NULL, 0, 1, "slice end relative to the extent; per sample"},
    {"shape", STK_ARG_FLOAT_LIST, NULL, 0, 1, "slice shape, absolute; per sample"},
    {"rel_shape", STK_ARG_FLOAT_LIST, NULL, 0, 1, "slice shape relative to the extent; per sample"},
    {"axes", STK_ARG_INT_LIST, "[1, 0]", 0, 0, "the sliced axes as indices (negative: from the back)"},
    {"axis_names", STK_ARG_STRING, "WH", 0, 0, "the sliced axes as layout letters (wins over axes when given)"},
    {"normalized_anchor", STK_ARG_BOOL, "True", 0, 0, "the positional anchor input is relative to the extent"},
    {"normalized_shape", STK_ARG_BOOL, "True", 0, 0, "the positional shape input is relative to the extent"},
    {"out_of_bounds_policy", STK_ARG_STRING, "error", 0, 0,
     "error | pad | trim_to_shape: what a slice reaching outside the input does"},
    {"fill_values", STK_ARG_FLOAT_LIST, "[0.0]", 0, 0, "the pad policy's value (one, or one per channel)"},
};

const stk__op_schema stk__op_slice = {
    .name = "slice",
    .doc =
        "Extracts a sub-tensor of each sample along the given axes (named start/end/shape arguments, absolute or "
        "relative, or positional inputs anchor and shape); any dtype.",
    .min_inputs = 1,
    .max_inputs = 3,
    .num_outputs = 1,
    .devices = STK_OPDEV_CPU | STK_OPDEV_GPU,
    .args = slice_args,
    .num_args = (int)(sizeof slice_args / sizeof slice_args[0]),
    .array_outputs = 1u << 0,
};
