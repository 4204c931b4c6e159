/* src/ops/augment/warp_affine/warp_affine.c: the `warp_affine` operator (DALI's fn.warp_affine) --
 * schema, parse, per-sample plan and CPU implementation: each HWC image (FHWC: each frame alike)
 * resampled through a 2x3 affine matrix (`matrix`, or the second positional input, e.g. a
 * transforms.* output; per sample), destination -> source unless inverse_map=False (then it is
 * inverted), into `size` ([H, W]; default the input's), fill_value outside (else the border
 * repeats), linear or nearest. Sampling: warp.h. The plan is shared with the GPU implementation
 * (warp_gpu.cu). Hot path: plan + resampling per sample. */
#include <math.h>

#include "ops/augment/warp_affine/warp.h"
#include "ops/common/nd_op.h"
#include "ops/op_impls.h"

typedef struct affine_params {
  stk__warp_common common;
  int inverse_map;
} affine_params;

static stk_status affine_parse(const stk__op *op, void *params, char *err, size_t err_size) {
  affine_params *p = params;
  p->inverse_map = stk__arg_bool(op, "inverse_map");
  return stk__warp_common_parse(op, &p->common, err, err_size);
}

/* The output size: size=[H, W] (per sample), else the input's. */
static stk_status output_size(const stk__op *op, stk__tensor *const *inputs, stk__warp_desc *d, char *err,
                              size_t err_size) {
  double size[2];
  int n = 0;
  stk_status s = stk__nd_arg_list(op, inputs, "size", size, 2, &n, err, err_size);
  if (s != STK_OK) return s;
  d->dst_h = d->src_h;
  d->dst_w = d->src_w;
  if (n == 0) return STK_OK;
  if (n != 2 || !(size[0] >= 0 && size[0] <= 65535 && size[1] >= 0 && size[1] <= 65535)) {
    stk__errorf(err, err_size, "argument 'size' expects [height, width] within 0..65535");
    return STK_EINVAL;
  }
  d->dst_h = (int)llround(size[0]);
  d->dst_w = (int)llround(size[1]);
  return STK_OK;
}

static stk_status affine_plan(const stk__op *op, const void *params, stk__tensor *const *inputs, int num_inputs,
                              stk__warp_desc *d, char *err, size_t err_size) {
  const affine_params *p = params;
  double m[6], inv[6];
  int n = 0;
  stk_status s = num_inputs >= 2 ? stk__nd_tensor_numbers(inputs[1], m, 6, &n, err, err_size, "input 'mtx'")
                                 : stk__nd_arg_list(op, inputs, "matrix", m, 6, &n, err, err_size);
  if (s != STK_OK) return s;
  if (n != 6) {
    stk__errorf(err, err_size, "the matrix needs 6 values (2x3), got %d", n);
    return STK_EINVAL;
  }
  if (!p->inverse_map) {
    if (stk__warp_invert(m, inv) != STK_OK) {
      stk__errorf(err, err_size, "the matrix is singular (inverse_map=False needs its inverse)");
      return STK_EINVAL;
    }
    for (int k = 0; k < 6; k++) m[k] = inv[k];
  }
  for (int k = 0; k < 6; k++) d->m[k] = (float)m[k];
  return output_size(op, inputs, d, err, err_size);
}

const stk__warp_kind stk__warp_kind_affine = {affine_parse, affine_plan, sizeof(affine_params)};

static stk_status affine_init(stk__op *op, char *err, size_t err_size) {
  return stk__warp_cpu_init(op, &stk__warp_kind_affine, err, err_size);
}

const stk__op_impl stk__cpu_impl_warp_affine = {
    .init = affine_init, .destroy = stk__warp_cpu_destroy, .run_sample = stk__warp_run_sample};

static const stk__arg_schema affine_args[] = {
    {"matrix", STK_ARG_FLOAT_LIST, "[]", 0, 1, "2x3 matrix (M11, M12, M13, M21, M22, M23); per sample"},
    {"size", STK_ARG_FLOAT_LIST, "[]", 0, 1, "output [height, width] (default: the input's); per sample"},
    {"inverse_map", STK_ARG_BOOL, "True", 0, 0, "the matrix maps destination to source (False: the reverse)"},
    {"fill_value", STK_ARG_FLOAT, "0.0", 0, 0, "value outside the source (not given: the border repeats)"},
    {"interp_type", STK_ARG_STRING, "INTERP_LINEAR", 0, 0, "INTERP_LINEAR | INTERP_NN"},
    {"dtype", STK_ARG_STRING, "", 0, 0, "output type: uint8 or float (default: the input's)"},
};

const stk__op_schema stk__op_warp_affine = {
    .name = "warp_affine",
    .doc =
        "Applies a 2x3 affine transform to HWC uint8/float images (matrix argument or second input, per "
        "sample; destination -> source unless inverse_map=False), linear or nearest, fill or border.",
    .min_inputs = 1,
    .max_inputs = 2,
    .num_outputs = 1,
    .devices = STK_OPDEV_CPU | STK_OPDEV_GPU,
    .args = affine_args,
    .num_args = (int)(sizeof affine_args / sizeof affine_args[0]),
    .array_outputs = 1u << 0,
};
