/* src/ops/common/nd_op.c: the CPU side of the geometry operators' shared frame (nd_op.h): state,
 * run_sample (plan, size the output, run the parts with the reference), the plan helpers and the
 * per-sample argument readers. Hot path: run_sample and the argument readers, per sample. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device/device.h"
#include "ops/common/dtype.h"
#include "ops/common/nd_op.h"

stk_status stk__nd_state_init(stk__nd_state *st, const stk__op *op, const stk__nd_kind *kind, char *err,
                              size_t err_size) {
  st->kind = kind;
  st->params = calloc(1, kind->params_size ? kind->params_size : 1);
  if (!st->params) return STK_ENOMEM;
  stk_status s = kind->parse ? kind->parse(op, st->params, err, err_size) : STK_OK;
  if (s != STK_OK) {
    free(st->params);
    st->params = NULL;
  }
  return s;
}

void stk__nd_state_free(stk__nd_state *st) {
  free(st->params);
  st->params = NULL;
}

stk_status stk__nd_cpu_init(stk__op *op, const stk__nd_kind *kind, char *err, size_t err_size) {
  stk__nd_state *st = calloc(1, sizeof *st);
  if (!st) return STK_ENOMEM;
  stk_status s = stk__nd_state_init(st, op, kind, err, err_size);
  if (s != STK_OK) {
    free(st);
    return s;
  }
  op->state = st;
  return STK_OK;
}

void stk__nd_cpu_destroy(stk__op *op) {
  stk__nd_state *st = op->state;
  if (!st) return;
  stk__nd_state_free(st);
  free(st);
  op->state = NULL;
}

stk_status stk__nd_run_sample(stk__op *op, stk__sample_ctx *ctx, stk__tensor *const *inputs,
                              stk__tensor *const *outputs) {
  const stk__nd_state *st = op->state;
  stk__nd_plan *plan = stk__scratch_get(ctx, 7, sizeof *plan);
  stk__nd_plan local;
  if (!plan) plan = &local; /* outside the executor (no worker scratch) */
  stk_status s = st->kind->plan(op, st->params, inputs, op->num_inputs, plan, ctx->err, ctx->err_size);
  if (s != STK_OK) return s;
  s = stk__tensor_resize(outputs[0], plan->dtype, plan->ndim, plan->shape, plan->layout);
  if (s != STK_OK) return s;
  for (int p = 0; p < plan->parts; p++) {
    plan->part[p].dst = outputs[0]->data;
    plan->part[p].boxes = plan->boxes;
    plan->part[p].num_boxes = plan->num_boxes;
    stk__nd_coalesce(&plan->part[p]); /* an HWC crop's rows of pixels as one memcpy each */
    stk__nd_copy_run(&plan->part[p]);
  }
  return STK_OK;
}

/* ---- Plan helpers --------------------------------------------------------------------------- */
const char *stk__nd_layout(const stk__tensor *in) {
  if (in->layout[0]) return in->layout;
  switch (in->ndim) {
    case 2:
      return "HW";
    case 3:
      return "HWC";
    case 4:
      return "FHWC";
    default:
      return "";
  }
}

int stk__nd_axis(const char *layout, char name) {
  const char *at = strchr(layout, name);
  return name && at ? (int)(at - layout) : -1;
}

void stk__nd_plan_identity(stk__nd_plan *plan, const stk__tensor *in) {
  plan->dtype = in->dtype;
  plan->ndim = in->ndim;
  memcpy(plan->shape, in->shape, sizeof plan->shape);
  snprintf(plan->layout, sizeof plan->layout, "%s", in->layout);
  plan->parts = 1;
  plan->num_boxes = 0;
  stk__nd_identity(&plan->part[0], in->ndim, in->shape, (int)stk_dtype_size(in->dtype));
  plan->part[0].src = in->data;
}

stk_status stk__nd_plan_fill(stk__nd_plan *plan, const double *values, size_t count, char *err, size_t err_size) {
  static const char *const by_rank[] = {"", "", "HW", "HWC", "FHWC"}; /* stk__nd_layout's defaults */
  const char *layout = plan->layout[0] ? plan->layout : (plan->ndim <= 4 ? by_rank[plan->ndim] : "");
  const int channel_axis = stk__nd_axis(layout, 'C');
  if (count > STK__ND_FILLS) {
    stk__errorf(err, err_size, "at most %d fill values (one per channel), got %zu", STK__ND_FILLS, count);
    return STK_EINVAL;
  }
  if (count > 1 && (channel_axis < 0 || plan->shape[channel_axis] != (int64_t)count)) {
    stk__errorf(err, err_size, "%zu fill values given but the sample has %lld channels (layout \"%s\")", count,
                channel_axis < 0 ? 0LL : (long long)plan->shape[channel_axis], layout);
    return STK_EINVAL;
  }
  for (int p = 0; p < plan->parts; p++) {
    stk__nd_copy *c = &plan->part[p];
    c->fill_count = count > 1 ? (int)count : 1;
    c->fill_dim = count > 1 ? channel_axis : -1;
    for (size_t k = 0; k < (count ? count : 1); k++) c->fill[k] = stk__nd_fill_bits(count ? values[k] : 0, plan->dtype);
  }
  return STK_OK;
}

stk_status stk__nd_oob_parse(const stk__op *op, stk__nd_oob *out, char *err, size_t err_size) {
  const char *text = stk__arg_string(op, "out_of_bounds_policy");
  if (strcmp(text, "error") == 0) *out = STK__ND_OOB_ERROR;
  else if (strcmp(text, "pad") == 0) *out = STK__ND_OOB_PAD;
  else if (strcmp(text, "trim_to_shape") == 0) *out = STK__ND_OOB_TRIM;
  else {
    stk__errorf(err, err_size,
                "argument 'out_of_bounds_policy' expects \"error\", \"pad\" or \"trim_to_shape\", got \"%s\"", text);
    return STK_EINVAL;
  }
  return STK_OK;
}

stk_status stk__nd_plan_window(stk__nd_plan *plan, int ax, int64_t start, int64_t size, stk__nd_oob oob, char *err,
                               size_t err_size) {
  stk__nd_copy *c = &plan->part[0];
  const int64_t extent = c->src_extent[ax];
  const char letter = ax < (int)strlen(plan->layout) ? plan->layout[ax] : '?';
  if (size < 0) {
    stk__errorf(err, err_size, "the window along axis %d (%c) has a negative size %lld", ax, letter, (long long)size);
    return STK_EINVAL;
  }
  if (start < 0 || start + size > extent) {
    if (oob == STK__ND_OOB_ERROR) {
      stk__errorf(err, err_size,
                  "the window [%lld, %lld) along axis %d (%c) reaches outside the input's extent %lld "
                  "(out_of_bounds_policy=\"error\"; use \"pad\" or \"trim_to_shape\")",
                  (long long)start, (long long)(start + size), ax, letter, (long long)extent);
      return STK_EINVAL;
    }
    if (oob == STK__ND_OOB_TRIM) {
      int64_t lo = start < 0 ? 0 : start, hi = start + size > extent ? extent : start + size;
      start = lo > extent ? extent : lo;
      size = hi > start ? hi - start : 0;
    }
  }
  c->src_start[ax] = start;
  c->shape[ax] = size;
  plan->shape[ax] = size;
  stk__nd_packed_strides(plan->ndim, plan->shape, c->dst_stride);
  return STK_OK;
}

stk_status stk__nd_pick_axes(const stk__op *op, const char *layout, int ndim, int *out, int *count, char *err,
                             size_t err_size) {
  const char *names = stk__arg_string(op, "axis_names");
  size_t n_axes = 0;
  const int64_t *axes = stk__arg_int_list(op, "axes", &n_axes);
  int use_names = stk__arg_is_set(op, "axis_names") || (!stk__arg_is_set(op, "axes") && names[0]);
  *count = 0;
  if (use_names) {
    for (const char *p = names; *p; p++) {
      int ax = stk__nd_axis(layout, *p);
      if (ax < 0 || ax >= ndim) {
        stk__errorf(err, err_size, "argument 'axis_names': axis '%c' is not in the layout \"%s\"", *p, layout);
        return STK_EINVAL;
      }
      if (*count == STK__ND_DIMS) break;
      out[(*count)++] = ax;
    }
    return STK_OK;
  }
  for (size_t k = 0; k < n_axes && k < STK__ND_DIMS; k++) {
    int64_t ax = axes[k] < 0 ? axes[k] + ndim : axes[k];
    if (ax < 0 || ax >= ndim) {
      stk__errorf(err, err_size, "argument 'axes': axis %lld is out of range for a %d-D sample", (long long)axes[k],
                  ndim);
      return STK_EINVAL;
    }
    out[(*count)++] = (int)ax;
  }
  return STK_OK;
}

/* ---- Per-sample arguments ------------------------------------------------------------------- */
stk_status stk__nd_tensor_numbers(const stk__tensor *t, double *values, int max, int *count, char *err, size_t err_size,
                                  const char *what) {
  size_t n = stk__tensor_numel(t), es = stk_dtype_size(t->dtype);
  if ((int64_t)n > max) {
    stk__errorf(err, err_size, "%s: at most %d values, got a tensor of %zu", what, max, n);
    return STK_EINVAL;
  }
  const void *data = t->data;
  uint8_t raw[STK__ND_BOXES * STK__ND_DIMS * 2 * 8];
  if (t->device == STK_DEVICE_GPU && n > 0) { /* a CPU node's list read through its device copy */
    if (n * es > sizeof raw || stk__gpu_memcpy_d2h(raw, t->data, n * es, NULL) != STK_OK) {
      stk__errorf(err, err_size, "%s: could not read the per-sample values from the GPU", what);
      return STK_EINVAL;
    }
    data = raw;
  }
  for (size_t i = 0; i < n; i++) values[i] = stk__dtype_load(data, t->dtype, i);
  *count = (int)n;
  return STK_OK;
}

int stk__nd_arg_given(const stk__op *op, const char *name) { return stk__arg_is_set(op, name); }

stk_status stk__nd_arg_list(const stk__op *op, stk__tensor *const *inputs, const char *name, double *values, int max,
                            int *count, char *err, size_t err_size) {
  char what[96];
  snprintf(what, sizeof what, "argument '%s'", name);
  const stk__tensor *t = stk__arg_input(op, inputs, name);
  if (t) return stk__nd_tensor_numbers(t, values, max, count, err, err_size, what);
  const stk__arg_value *v = stk__arg(op, name);
  *count = 0;
  if (!v || !v->has_value) return STK_OK;
  int n = v->type == STK_ARG_INT_LIST || v->type == STK_ARG_FLOAT_LIST ? (int)v->count : 1;
  if (n > max) {
    stk__errorf(err, err_size, "%s: at most %d values, got %d", what, max, n);
    return STK_EINVAL;
  }
  for (int i = 0; i < n; i++) {
    switch (v->type) {
      case STK_ARG_INT_LIST:
        values[i] = (double)v->ilist[i];
        break;
      case STK_ARG_FLOAT_LIST:
        values[i] = v->flist[i];
        break;
      case STK_ARG_FLOAT:
        values[i] = v->f;
        break;
      default:
        values[i] = (double)v->i;
        break;
    }
  }
  *count = n;
  return STK_OK;
}

stk_status stk__nd_arg_scalar(const stk__op *op, stk__tensor *const *inputs, const char *name, double *value, char *err,
                              size_t err_size) {
  double values[STK__ND_DIMS * 2];
  int n = 0;
  const stk__tensor *t = stk__arg_input(op, inputs, name);
  if (t && stk__tensor_numel(t) != 1) {
    stk__errorf(err, err_size, "argument '%s' takes one number per sample, got a tensor of %zu", name,
                stk__tensor_numel(t));
    return STK_EINVAL;
  }
  stk_status s = stk__nd_arg_list(op, inputs, name, values, STK__ND_DIMS * 2, &n, err, err_size);
  if (s != STK_OK) return s;
  *value = n > 0 ? values[0] : 0.0;
  return STK_OK;
}
