/* src/ops/common/nd_op.h: how a geometry operator that only moves elements is written once for the
 * CPU and the GPU. The operator gives a kind: its parameter parse (build time) and its plan (per
 * sample: from the input's shape/dtype/layout and its per-sample argument values, the output's
 * shape and the parts of stk__nd_copy that fill it). The CPU implementation (stk__nd_run_sample)
 * runs the parts with the reference (nd_copy.c); the GPU one (nd_gpu.cu) plans every sample the
 * same way on the host and runs all parts of the batch in one kernel launch. The plan only reads
 * input metadata, never input data, except small per-sample argument tensors (read on the host).
 * Also: the per-sample argument readers (a constant, or a bound node's tensor), layout lookups.
 * C-callable from .cu files. Hot path: the plan, per sample. */
#ifndef STOKER_OPS_COMMON_ND_OP_H
#define STOKER_OPS_COMMON_ND_OP_H

#include <stddef.h>
#include <stdint.h>

#include "core/op.h"
#include "ops/common/nd_copy.h"

#ifdef __cplusplus
extern "C" {
#endif

#define STK__ND_PARTS 16 /* cat/stack: inputs of one sample */
#define STK__ND_BOXES 64 /* erase: regions of one sample */

/* One sample's output and the parts that write it (dst and src of each part set by the plan's
 * caller for dst; the plan sets src to the input's data). */
typedef struct stk__nd_plan {
  stk_dtype dtype;
  int ndim;
  int64_t shape[STK__ND_DIMS];
  char layout[8];
  int parts;
  stk__nd_copy part[STK__ND_PARTS];
  int num_boxes; /* erase: boxes (num_boxes x ndim x {lo, hi}) every part points at */
  int64_t boxes[STK__ND_BOXES * STK__ND_DIMS * 2];
} stk__nd_plan;

/* inputs: the sample's regular inputs (num_inputs) then its argument inputs, as run_sample gets them
 * (on the GPU: the device tensors of regular inputs -- metadata only -- and host argument tensors). */
typedef stk_status (*stk__nd_plan_fn)(const stk__op *op, const void *params, stk__tensor *const *inputs, int num_inputs,
                                      stk__nd_plan *plan, char *err, size_t err_size);
typedef stk_status (*stk__nd_parse_fn)(const stk__op *op, void *params, char *err, size_t err_size);

typedef struct stk__nd_kind {
  stk__nd_parse_fn parse;
  stk__nd_plan_fn plan;
  size_t params_size;
  int reads_inputs; /* 1: the plan reads the data of regular inputs after the first (slice's anchor and
                       shape), so the GPU implementation waits for their upload before planning */
} stk__nd_kind;

/* op->state of a CPU geometry operator (a GPU one starts with it too). */
typedef struct stk__nd_state {
  const stk__nd_kind *kind;
  void *params;
} stk__nd_state;

/* Fills st: params allocated and parsed. On failure nothing is held. */
STK_INTERNAL stk_status stk__nd_state_init(stk__nd_state *st, const stk__op *op, const stk__nd_kind *kind, char *err,
                                           size_t err_size);
STK_INTERNAL void stk__nd_state_free(stk__nd_state *st);
/* CPU implementation pieces: init with a kind, destroy, run_sample. */
STK_INTERNAL stk_status stk__nd_cpu_init(stk__op *op, const stk__nd_kind *kind, char *err, size_t err_size);
STK_INTERNAL void stk__nd_cpu_destroy(stk__op *op);
STK_INTERNAL stk_status stk__nd_run_sample(stk__op *op, stk__sample_ctx *ctx, stk__tensor *const *inputs,
                                           stk__tensor *const *outputs);

/* ---- Plan helpers --------------------------------------------------------------------------- */
/* plan's output = in's dtype/ndim/shape/layout, one identity part from in (the starting point of
 * most plans). */
STK_INTERNAL void stk__nd_plan_identity(stk__nd_plan *plan, const stk__tensor *in);
/* The input's layout, or the default for its rank when it has none ("HW", "HWC", "FHWC", "" else). */
STK_INTERNAL const char *stk__nd_layout(const stk__tensor *in);
/* Index of axis letter `name` in layout, or -1. */
STK_INTERNAL int stk__nd_axis(const char *layout, char name);
/* Sets every part's fill values from values[count] (one = all; more: per channel, fill_dim = the
 * layout's 'C' axis) in the plan's dtype; STK_EINVAL when count > 1 and the channel count differs. */
STK_INTERNAL stk_status stk__nd_plan_fill(stk__nd_plan *plan, const double *values, size_t count, char *err,
                                          size_t err_size);

/* out_of_bounds_policy (crop, slice): "error", "pad" (fill), "trim_to_shape". */
typedef enum stk__nd_oob { STK__ND_OOB_ERROR = 0, STK__ND_OOB_PAD, STK__ND_OOB_TRIM } stk__nd_oob;
STK_INTERNAL stk_status stk__nd_oob_parse(const stk__op *op, stk__nd_oob *out, char *err, size_t err_size);
/* Narrows part 0 (an identity plan's) and the output along axis ax to the input window
 * [start, start + size): under "error" a window reaching outside the input fails (message names
 * the axis letter and extents), under "trim_to_shape" it is cut to the input, under "pad" the
 * outside reads the fill values. */
STK_INTERNAL stk_status stk__nd_plan_window(stk__nd_plan *plan, int ax, int64_t start, int64_t size, stk__nd_oob oob,
                                            char *err, size_t err_size);
/* The axes an operator's axis_names (letters of layout) or axes (indices, negative from the back)
 * name, in the order given, into out (*count of them, at most STK__ND_DIMS): axis_names when the
 * user set it, else axes when the user set it, else axis_names' default when it has one, else
 * axes' default (DALI: "if axis_names is given, axes is ignored"). */
STK_INTERNAL stk_status stk__nd_pick_axes(const stk__op *op, const char *layout, int ndim, int *out, int *count,
                                          char *err, size_t err_size);

/* ---- Per-sample arguments ------------------------------------------------------------------- */
/* The value of numeric argument `name` for this sample: the bound node's tensor (first element; any
 * dtype) or the constant. STK_EINVAL when a bound tensor is empty or not readable on the host. */
STK_INTERNAL stk_status stk__nd_arg_scalar(const stk__op *op, stk__tensor *const *inputs, const char *name,
                                           double *value, char *err, size_t err_size);
/* A numeric list argument for this sample (at most max values; *count = how many; 0 = unset): the
 * bound tensor's elements or the constant list. STK_EINVAL when there are more than max. */
STK_INTERNAL stk_status stk__nd_arg_list(const stk__op *op, stk__tensor *const *inputs, const char *name,
                                         double *values, int max, int *count, char *err, size_t err_size);
/* The elements of tensor t (any dtype, host or GPU memory) as doubles: at most max, *count = how
 * many. For positional inputs (slice's anchor and shape). */
STK_INTERNAL stk_status stk__nd_tensor_numbers(const stk__tensor *t, double *values, int max, int *count, char *err,
                                               size_t err_size, const char *what);
/* 1 when argument `name` is given (a constant the user set, or a bound node). */
STK_INTERNAL int stk__nd_arg_given(const stk__op *op, const char *name);

#ifdef __cplusplus
}
#endif
#endif
