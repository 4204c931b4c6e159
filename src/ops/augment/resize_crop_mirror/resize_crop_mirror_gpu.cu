/* src/ops/augment/resize_crop_mirror/resize_crop_mirror_gpu.cu: the GPU implementation of
 * `resize_crop_mirror`: the operator's resize step (resize's parse) and its crop/mirror as uint8
 * HWC crop_mirror_normalize parameters (resize_crop_mirror.c), run by the fused
 * resize+crop_mirror_normalize batch (fused_resize_cmn_gpu.cu: one launch, the resized image never
 * stored). Reference: the CPU implementation (resize then crop_mirror_normalize's reference); test:
 * tests/test_gpu_geometry.c. Hot path (per batch). */
#include "ops/common/image_batch.cuh"
#include "ops/common/image_gpu.h"
extern "C" {
#include "ops/augment/resize_crop_mirror/resize_crop_mirror.h"
}
#include "ops/op_impls.h"

static stk_status rcm_gpu_init(stk__op *op, char *err, size_t err_size) {
  stk__gpu_resize_step step;
  stk__cmn_params crop;
  stk_status st = stk__gpu_resize_step_get(op, &step, err, err_size);
  if (st == STK_OK) st = stk__rcm_crop_params(op, &crop, err, err_size);
  return st == STK_OK ? stk__gpu_image_state_install(op, &step, &crop, err, err_size) : st;
}

static stk_status rcm_run_batch(stk__op *op, stk__batch_ctx *ctx, stk__tensor_list *const *inputs,
                                stk__tensor_list *const *outputs) {
  return stk__gpu_fused_resize_cmn_run((stk__gpu_image_state *)op->state, op, op, ctx, inputs, outputs);
}

extern "C" {
const stk__op_impl stk__gpu_impl_resize_crop_mirror = {
    rcm_gpu_init, stk__gpu_image_state_destroy, NULL, NULL, NULL, NULL, rcm_run_batch};
}
