/* src/ops/augment/resize/resize_gpu.cu: the GPU implementations (run_batch) of resize and
 * random_resized_crop: parameters from the operators' own parse (src/ops/augment/<operator>/), geometry and
 * random windows planned on the host exactly as the CPU implementations plan them, the CPU
 * reference's resampling tables uploaded with one copy, and one launch of the batched resize
 * kernel (resize_kernels.cu). Reference: src/ops/augment/resize/resize_reference.c; test:
 * tests/test_gpu_ops.c, tests/test_gpu_sequence_ops.c. Hot path (per batch). Output: HWC u8, or FHWC
 * u8 for an FHWC sequence (its frames planned as images of the batch, all alike). */
#include <stdlib.h>
#include <string.h>

#include "ops/common/image_batch.cuh"
#include "ops/common/image_gpu.h"
#include "ops/op_impls.h"

static stk_status resize_init(stk__op *op, char *err, size_t err_size) {
  stk__gpu_resize_step step;
  stk_status st = stk__gpu_resize_step_get(op, &step, err, err_size);
  return st == STK_OK ? stk__gpu_image_state_install(op, &step, NULL, err, err_size) : st;
}

/* One descriptor per image (its axis tables follow: stk__gpu_push_axes_batch; frame f of a
 * sequence writes frame f of its sample's FHWC output), the output samples' shapes. */
static void fill_descs(const stk__gpu_sample_geom *geom, int n, stk__tensor_list *out, stk__gpu_resize_desc *descs) {
  for (int i = 0; i < n; i++) {
    const stk__gpu_sample_geom *g = &geom[i];
    stk__gpu_resize_desc *d = &descs[i];
    d->src = g->src;
    d->src_w = g->src_w;
    d->src_h = g->src_h;
    d->src_stride = g->src_w * g->channels;
    d->channels = g->channels;
    const size_t frame_bytes = (size_t)g->out_w * g->out_h * g->channels;
    d->dst = (uint8_t *)out->samples[g->sample].data + (size_t)g->frame * frame_bytes;
    d->dst_w = g->out_w;
    d->dst_h = g->out_h;
    const int64_t shape[4] = {g->frames, g->out_h, g->out_w, g->channels};
    if (g->frame == 0)
      stk__gpu_set_sample_shape(&out->samples[g->sample], STK_DTYPE_UINT8, 3 + g->sequence, shape + !g->sequence,
                                g->sequence ? "FHWC" : "HWC");
  }
}

static stk_status resize_run_batch(stk__op *op, stk__batch_ctx *ctx, stk__tensor_list *const *inputs,
                                   stk__tensor_list *const *outputs) {
  stk__gpu_image_state *s = (stk__gpu_image_state *)op->state;
  const stk__tensor_list *in = inputs[0];
  int n; /* images: samples, or their frames */
  stk__gpu_sample_geom *geom = NULL;
  stk_status st = stk__gpu_batch_sources(s, ctx, in, &geom, &n);
  if (st == STK_OK) st = stk__gpu_plan_resize(op, &s->resize, ctx, geom, n);
  if (st != STK_OK) return st;
  size_t max_bytes = 1, arena_bytes = (size_t)n * sizeof(stk__gpu_resize_desc) + 64;
  int max_w = 0, max_h = 0;
  for (int i = 0; i < n; i++) {
    stk__gpu_sample_geom *g = &geom[i];
    arena_bytes += stk__gpu_compute_taps(g, &s->resize);
    size_t bytes = (size_t)g->out_w * g->out_h * g->channels * g->frames; /* the whole sample */
    if (bytes > max_bytes) max_bytes = bytes;
    if (g->out_w > max_w) max_w = g->out_w;
    if (g->out_h > max_h) max_h = g->out_h;
  }
  stk__tensor_list *out = outputs[0];
  st = stk__gpu_tensor_list_reserve(out, in->count, max_bytes, ctx->alloc_count);
  if (st != STK_OK) return stk__gpu_failure(ctx, st, "reserving the output batch on the GPU");
  size_t descs_at = 0;
  st = stk__gpu_batch_descs(s, ctx, arena_bytes, (size_t)n * sizeof(stk__gpu_resize_desc), &descs_at);
  if (st != STK_OK) return st;
  stk__gpu_resize_desc *descs = (stk__gpu_resize_desc *)(s->arena.host + descs_at);
  fill_descs(geom, n, out, descs);
  st = stk__gpu_push_axes_batch(ctx, s, geom, n, &descs[0].x, &descs[0].y, sizeof *descs);
  if (st != STK_OK) return stk__gpu_failure(ctx, st, "the resize weight tables");
  stk__gpu_tensor_list_settle(out);
  cudaStream_t stream;
  st = stk__gpu_batch_upload(s, ctx, &stream);
  if (st != STK_OK) return st;
  st = stk__gpu_resize_batch((const stk__gpu_resize_desc *)(s->arena.device + descs_at), n, max_w, max_h, stream);
  return stk__gpu_failure(ctx, st, "the batched resize kernel launch");
}

extern "C" {
const stk__op_impl stk__gpu_impl_resize = {resize_init,     stk__gpu_image_state_destroy, NULL, NULL, NULL, NULL,
                                           resize_run_batch};
const stk__op_impl stk__gpu_impl_random_resized_crop = {
    resize_init, stk__gpu_image_state_destroy, NULL, NULL, NULL, NULL, resize_run_batch};
}
