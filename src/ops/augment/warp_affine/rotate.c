/* src/ops/augment/warp_affine/rotate.c: the `rotate` operator (DALI's fn.rotate) -- schema, parse,
 * per-sample plan and CPU implementation: each HWC image rotated by `angle` degrees
 * counter-clockwise (as seen, the top-left corner at (0, 0)) about its centre, into the input's
 * size (keep_size), `size` ([H, W]), or by default the bounding box of the rotated image (extents
 * |w cos| + |h sin| and |w sin| + |h cos|, rounded up), centre to centre; fill_value outside (else
 * the border repeats), linear or nearest. angle and size may be bound per sample. The matrix feeds
 * the warp sampler (warp.h), shared with the GPU implementation (warp_gpu.cu). Hot path: plan +
 * resampling per sample. */
#include <math.h>

#include "ops/augment/warp_affine/warp.h"
#include "ops/common/nd_op.h"
#include "ops/op_impls.h"

typedef struct rotate_params {
  stk__warp_common common;
  int keep_size;
} rotate_params;

static stk_status rotate_parse(const stk__op *op, void *params, char *err, size_t err_size) {
  rotate_params *p = params;
  p->keep_size = stk__arg_bool(op, "keep_size");
  return stk__warp_common_parse(op, &p->common, err, err_size);
}

/* ceil(v), ignoring what float rounding adds to an exact integer. */
static int extent_up(double v) { return (int)ceil(v - 1e-6); }

static stk_status rotate_plan(const stk__op *op, const void *params, stk__tensor *const *inputs, int num_inputs,
                              stk__warp_desc *d, char *err, size_t err_size) {
  (void)num_inputs;
  const rotate_params *p = params;
  double angle = 0, size[2];
  int n = 0;
  stk_status s = stk__nd_arg_scalar(op, inputs, "angle", &angle, err, err_size);
  if (s == STK_OK) s = stk__nd_arg_list(op, inputs, "size", size, 2, &n, err, err_size);
  if (s != STK_OK) return s;
  if (!isfinite(angle) || (n != 0 && n != 2)) {
    stk__errorf(err, err_size, "'angle' must be finite and 'size' [height, width]");
    return STK_EINVAL;
  }
  const double rad = fmod(angle, 360.0) * (3.14159265358979323846 / 180.0), c = cos(rad), sn = sin(rad);
  if (n == 2) {
    if (!(size[0] >= 0 && size[0] <= 65535 && size[1] >= 0 && size[1] <= 65535)) {
      stk__errorf(err, err_size, "argument 'size' must lie within 0..65535");
      return STK_EINVAL;
    }
    d->dst_h = (int)llround(size[0]);
    d->dst_w = (int)llround(size[1]);
  } else if (p->keep_size) {
    d->dst_w = d->src_w;
    d->dst_h = d->src_h;
  } else {
    d->dst_w = extent_up(fabs(d->src_w * c) + fabs(d->src_h * sn));
    d->dst_h = extent_up(fabs(d->src_w * sn) + fabs(d->src_h * c));
  }
  /* source = centre_in + [cos -sin; sin cos] (destination - centre_out) */
  const double cx_in = d->src_w / 2.0, cy_in = d->src_h / 2.0, cx_out = d->dst_w / 2.0, cy_out = d->dst_h / 2.0;
  const double m[6] = {c, -sn, cx_in - (c * cx_out - sn * cy_out), sn, c, cy_in - (sn * cx_out + c * cy_out)};
  for (int k = 0; k < 6; k++) d->m[k] = (float)m[k];
  return STK_OK;
}

const stk__warp_kind stk__warp_kind_rotate = {rotate_parse, rotate_plan, sizeof(rotate_params)};

static stk_status rotate_init(stk__op *op, char *err, size_t err_size) {
  return stk__warp_cpu_init(op, &stk__warp_kind_rotate, err, err_size);
}

const stk__op_impl stk__cpu_impl_rotate = {
    .init = rotate_init, .destroy = stk__warp_cpu_destroy, .run_sample = stk__warp_run_sample};

static const stk__arg_schema rotate_args[] = {
    {"angle", STK_ARG_FLOAT, NULL, 1, 1, "degrees, counter-clockwise; per sample"},
    {"keep_size", STK_ARG_BOOL, "False", 0, 0, "keep the input's size (else: the rotated bounding box)"},
    {"size", STK_ARG_FLOAT_LIST, "[]", 0, 1, "output [height, width] (wins over keep_size); per sample"},
    {"fill_value", STK_ARG_FLOAT, "0.0", 0, 0, "value outside the source (not given: the border repeats)"},
    {"interp_type", STK_ARG_STRING, "INTERP_LINEAR", 0, 0, "INTERP_LINEAR | INTERP_NN"},
    {"dtype", STK_ARG_STRING, "", 0, 0, "output type: uint8 or float (default: the input's)"},
};

const stk__op_schema stk__op_rotate = {
    .name = "rotate",
    .doc =
        "Rotates HWC uint8/float images by angle degrees counter-clockwise about the centre (output: the rotated "
        "bounding box, the input size with keep_size, or size), linear or nearest, fill or border.",
    .min_inputs = 1,
    .max_inputs = 1,
    .num_outputs = 1,
    .devices = STK_OPDEV_CPU | STK_OPDEV_GPU,
    .args = rotate_args,
    .num_args = (int)(sizeof rotate_args / sizeof rotate_args[0]),
    .array_outputs = 1u << 0,
};
