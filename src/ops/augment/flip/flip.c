/* src/ops/augment/flip/flip.c: the `flip` operator (DALI's fn.flip) -- schema, parameter parse,
 * per-sample plan and CPU implementation: reverses the W (horizontal), H (vertical) and D
 * (depthwise) axes the layout names, each when its argument is non-zero; any dtype, any layout with
 * those letters (HWC, CHW, FHWC, DHWC, FCHW, ...; no layout: HW / HWC / FHWC by rank). The three
 * arguments may be bound per sample (horizontal=fn.random.coin_flip()). The plan is shared with the
 * GPU implementation (flip_gpu.cu) through ops/common/nd_op.h. Hot path: plan + copy per sample. */
#include "ops/common/nd_kinds.h"
#include "ops/op_impls.h"

static stk_status flip_plan(const stk__op *op, const void *params, stk__tensor *const *inputs, int num_inputs,
                            stk__nd_plan *plan, char *err, size_t err_size) {
  (void)params;
  (void)num_inputs;
  const stk__tensor *in = inputs[0];
  stk__nd_plan_identity(plan, in);
  const char *layout = stk__nd_layout(in);
  static const struct {
    const char *arg;
    char axis;
  } axes[] = {{"horizontal", 'W'}, {"vertical", 'H'}, {"depthwise", 'D'}};
  for (int k = 0; k < 3; k++) {
    double flag = 0;
    stk_status s = stk__nd_arg_scalar(op, inputs, axes[k].arg, &flag, err, err_size);
    if (s != STK_OK) return s;
    int ax = stk__nd_axis(layout, axes[k].axis);
    if (flag == 0 || ax < 0 || ax >= in->ndim) continue;
    plan->part[0].step[ax] = -1;
    plan->part[0].src_start[ax] = in->shape[ax] - 1;
  }
  return STK_OK;
}

const stk__nd_kind stk__nd_kind_flip = {NULL, flip_plan, 0};

static stk_status flip_init(stk__op *op, char *err, size_t err_size) {
  return stk__nd_cpu_init(op, &stk__nd_kind_flip, err, err_size);
}

const stk__op_impl stk__cpu_impl_flip = {
    .init = flip_init, .destroy = stk__nd_cpu_destroy, .run_sample = stk__nd_run_sample};

static const stk__arg_schema flip_args[] = {
    {"horizontal", STK_ARG_INT, "1", 0, 1, "flip the horizontal (W) axis when non-zero; may be bound per sample"},
    {"vertical", STK_ARG_INT, "0", 0, 1, "flip the vertical (H) axis when non-zero; may be bound per sample"},
    {"depthwise", STK_ARG_INT, "0", 0, 1, "flip the depth (D) axis when non-zero; may be bound per sample"},
};

const stk__op_schema stk__op_flip = {
    .name = "flip",
    .doc =
        "Flips each sample along its W (horizontal), H (vertical) and D (depthwise) axes, as the layout names "
        "them (HWC, CHW, FHWC, DHWC, ...); any dtype.",
    .min_inputs = 1,
    .max_inputs = 1,
    .num_outputs = 1,
    .devices = STK_OPDEV_CPU | STK_OPDEV_GPU,
    .args = flip_args,
    .num_args = (int)(sizeof flip_args / sizeof flip_args[0]),
    .array_outputs = 1u << 0,
};
