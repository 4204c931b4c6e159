/* src/ops/augment/crop_mirror_normalize/fused_resize_cmn_gpu.cu: the fused node of the operator table's fusion pairs
 * (resize | random_resized_crop) -> crop_mirror_normalize on the GPU: the two original operators'
 * parameters from their own parses, the resize step planned like resize_gpu.cu and the crop like
 * cmn_gpu.cu, and ONE launch of the fused kernel (cmn_kernels.cu) that never stores the resized
 * image. FHWC sequences are fused too: each frame is an image of the batch, planned alike.
 * Reference: the two CPU operators in sequence; tests: tests/test_gpu_ops.c,
 * tests/test_gpu_sequence_ops.c. Hot path (per batch). */
#include <stdlib.h>
#include <string.h>

#include "ops/common/image_batch.cuh"
#include "ops/common/image_gpu.h"
#include "ops/op_impls.h"

static stk_status fused_init(stk__op *op, char *err, size_t err_size) {
  if (!op->fused[0] || !op->fused[1]) {
    stk__errorf(err, err_size, "fused GPU node built without its two original operators");
    return STK_EINTERNAL;
  }
  stk__gpu_resize_step step;
  stk__cmn_params cmn;
  char why[768] = "";
  stk_status st = stk__gpu_resize_step_get(op->fused[0], &step, why, sizeof why);
  if (st != STK_OK) {
    /* The engine names the node that runs (the crop_mirror_normalize); say which input failed. */
    stk__errorf(err, err_size, "its input %s (%s), fused into it: %s", op->fused[0]->name, op->fused[0]->schema->name,
                why);
    return st;
  }
  st = stk__cmn_params_get(op->fused[1], &cmn, err, err_size);
  return st == STK_OK ? stk__gpu_image_state_install(op, &step, &cmn, err, err_size) : st;
}

static void fill_descs(const stk__gpu_sample_geom *geom, int n, stk__gpu_fused_desc *descs) {
  for (int i = 0; i < n; i++) {
    const stk__gpu_sample_geom *g = &geom[i];
    stk__gpu_fused_desc *d = &descs[i];
    d->src = g->src;
    d->src_w = g->src_w;
    d->src_h = g->src_h;
    d->src_stride = g->src_w * g->channels;
    d->resized_w = g->out_w;
    d->resized_h = g->out_h;
    d->crop_x = g->crop.x;
    d->crop_y = g->crop.y;
    d->crop_w = g->crop.w;
    d->crop_h = g->crop.h;
    d->mirror = g->mirror;
    d->dst = g->dst;
    d->plane_stride = g->plane;
  }
}

stk_status stk__gpu_fused_resize_cmn_run(stk__gpu_image_state *s, const stk__op *first, const stk__op *cmn,
                                         stk__batch_ctx *ctx, stk__tensor_list *const *inputs,
                                         stk__tensor_list *const *outputs) {
  const stk__tensor_list *in = inputs[0];
  int n; /* images: samples, or the frames of FHWC sequences (each planned alike) */
  stk__gpu_sample_geom *geom = NULL;
  stk_status st = stk__gpu_batch_sources(s, ctx, in, &geom, &n);
  if (st == STK_OK) st = stk__gpu_check_same_channels(ctx, geom, n);
  if (st == STK_OK) st = stk__gpu_plan_resize(first, &s->resize, ctx, geom, n);
  if (st != STK_OK || n == 0) return st;
  stk__gpu_normalize norm;
  st = stk__gpu_cmn_normalize(&s->cmn, geom[0].channels, &norm, ctx);
  size_t arena_bytes = (size_t)n * sizeof(stk__gpu_fused_desc) + 64;
  for (int i = 0; st == STK_OK && i < n; i++) {
    stk__gpu_sample_geom *g = &geom[i];
    arena_bytes += stk__gpu_compute_taps(g, &s->resize);
    st = stk__gpu_cmn_sample(cmn, &s->cmn, ctx, inputs, g->out_w, g->out_h, g);
  }
  int max_w, max_h;
  if (st == STK_OK)
    st = stk__gpu_cmn_reserve_output(ctx, outputs[0], &s->cmn, geom, n, &norm, s->fixed_w, s->fixed_h, &max_w, &max_h);
  if (st != STK_OK) return st;
  size_t descs_at = 0;
  st = stk__gpu_batch_descs(s, ctx, arena_bytes, (size_t)n * sizeof(stk__gpu_fused_desc), &descs_at);
  if (st != STK_OK) return st;
  stk__gpu_fused_desc *descs = (stk__gpu_fused_desc *)(s->arena.host + descs_at);
  fill_descs(geom, n, descs);
  st = stk__gpu_push_axes_batch(ctx, s, geom, n, &descs[0].x, &descs[0].y, sizeof *descs);
  if (st != STK_OK) return stk__gpu_failure(ctx, st, "the resize weight tables");
  cudaStream_t stream;
  st = stk__gpu_batch_upload(s, ctx, &stream);
  if (st != STK_OK) return st;
  st = stk__gpu_fused_resize_cmn_batch((const stk__gpu_fused_desc *)(s->arena.device + descs_at), n, max_w, max_h,
                                       &norm, s->fused_blocks, s->fused_launches, stream);
  return stk__gpu_failure(ctx, st, "the fused resize+crop_mirror_normalize kernel launch");
}

static stk_status fused_run_batch(stk__op *op, stk__batch_ctx *ctx, stk__tensor_list *const *inputs,
                                  stk__tensor_list *const *outputs) {
  return stk__gpu_fused_resize_cmn_run((stk__gpu_image_state *)op->state, op->fused[0], op->fused[1], ctx, inputs,
                                       outputs);
}

extern "C" {
const stk__op_impl stk__gpu_impl_fused_resize_cmn = {
    fused_init, stk__gpu_image_state_destroy, NULL, NULL, NULL, NULL, fused_run_batch};
}
