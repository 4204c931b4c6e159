/* src/ops/augment/crop_mirror_normalize/cmn_gpu.cu: the GPU implementation (run_batch) of crop_mirror_normalize, and the
 * batch steps the fused node (fused_resize_cmn_gpu.cu) shares with it: parameters from the
 * operator's own parse and per-sample crop placement (src/ops/augment/crop_mirror_normalize/cmn_params.c, the CPU
 * implementation's), per-sample descriptors uploaded with one copy, one launch of the batched
 * kernel (cmn_kernels.cu). Reference: src/ops/augment/crop_mirror_normalize/cmn_reference.c; tests: tests/test_gpu_ops.c,
 * tests/test_gpu_sequence_ops.c. Hot path (per batch). Output: CHW/HWC float/float16/uint8 per image;
 * an FHWC sequence's frames are images of the batch writing into their sample's FCHW/CFHW/FHWC output. */
#include <stdlib.h>
#include <string.h>

#include "ops/common/image_batch.cuh"
#include "ops/common/image_gpu.h"
#include "ops/op_impls.h"

static stk_status cmn_init(stk__op *op, char *err, size_t err_size) {
  stk__cmn_params params;
  stk_status st = stk__cmn_params_get(op, &params, err, err_size);
  return st == STK_OK ? stk__gpu_image_state_install(op, NULL, &params, err, err_size) : st;
}

stk_status stk__gpu_cmn_normalize(const stk__cmn_params *c, int channels, stk__gpu_normalize *n,
                                  const stk__batch_ctx *ctx) {
  stk_status st = stk__cmn_check_channels(c, channels, ctx->err, ctx->err_size);
  if (st != STK_OK) return st;
  memset(n, 0, sizeof *n);
  memcpy(n->mean, c->mean, sizeof n->mean);
  memcpy(n->inv_std, c->inv_std, sizeof n->inv_std);
  memcpy(n->fill, c->fill, sizeof n->fill);
  n->shift = c->shift;
  n->channels = channels;
  n->out_channels = stk__cmn_out_channels(c, channels);
  n->layout_chw = c->layout == STK__LAYOUT_CHW;
  n->dtype = c->dtype;
  return STK_OK;
}

/* Per-sample mirror flag: the constant, or the argument input (one scalar per sample, e.g.
 * random.coin_flip, normally a host tensor list). `inputs` is the array of the node that runs:
 * for a fused node the engine puts crop_mirror_normalize's argument inputs after the first
 * operator's inputs and rewrites their input_slot (the graph's fusion pass). */
static stk_status read_mirror(const stk__op *cmn, const stk__cmn_params *c, const stk__batch_ctx *ctx,
                              stk__tensor_list *const *inputs, int i, int *mirror) {
  const stk__arg_value *v = stk__arg(cmn, "mirror");
  *mirror = c->mirror_constant;
  if (!v || v->input_slot < 0) return STK_OK;
  const stk__tensor_list *list = inputs[v->input_slot];
  if (!list || i >= list->count || !list->samples) return STK_EINVAL;
  const stk__tensor *t = &list->samples[i];
  if (t->device == STK_DEVICE_GPU) {
    uint8_t raw[8] = {0};
    size_t bytes = stk_dtype_size(t->dtype);
    if (bytes == 0 || bytes > sizeof raw) return STK_EINVAL;
    stk_status st = stk__gpu_memcpy_d2h(raw, t->data, bytes, ctx->cuda_stream);
    if (st != STK_OK) return st;
    stk__tensor host = *t;
    host.data = raw;
    host.nbytes = bytes;
    *mirror = stk__tensor_scalar(&host) != 0.0;
  } else {
    *mirror = stk__tensor_scalar(t) != 0.0;
  }
  return STK_OK;
}

stk_status stk__gpu_cmn_sample(const stk__op *cmn, const stk__cmn_params *c, const stk__batch_ctx *ctx,
                               stk__tensor_list *const *inputs, int w, int h, stk__gpu_sample_geom *g) {
  char why[512] = "";
  const int i = g->sample;
  stk_status st = stk__cmn_check_layout(c, g->sequence, why, sizeof why);
  if (st == STK_OK) st = stk__cmn_crop(c, w, h, &g->crop, why, sizeof why);
  if (st != STK_OK) {
    stk__errorf(ctx->err, ctx->err_size, "sample %d (%s): %s", i, stk__gpu_sample_source(ctx, i), why);
    return st;
  }
  st = read_mirror(cmn, c, ctx, inputs, i, &g->mirror);
  if (st != STK_OK) stk__errorf(ctx->err, ctx->err_size, "could not read mirror for sample %d", i);
  return st;
}

stk_status stk__gpu_cmn_reserve_output(const stk__batch_ctx *ctx, stk__tensor_list *out, const stk__cmn_params *c,
                                       stk__gpu_sample_geom *geom, int n, const stk__gpu_normalize *norm, int in_w,
                                       int in_h, int *max_w, int *max_h) {
  const size_t element = stk_dtype_size((stk_dtype)norm->dtype);
  size_t max_bytes = 1;
  *max_w = *max_h = 0;
  /* Images no larger than a size the arguments fix (the crop, else the input's fixed size) need no
   * room for larger batches: sized exactly, not with reserve's quarter of headroom. */
  int bound_w = c->crop_w > 0 ? c->crop_w : in_w, bound_h = c->crop_h > 0 ? c->crop_h : in_h;
  int fixed = bound_w > 0 && bound_h > 0;
  for (int i = 0; i < n; i++) {
    const stk__window *w = &geom[i].crop;
    size_t bytes = (size_t)w->w * w->h * norm->out_channels * element * geom[i].frames; /* the whole sample */
    if (bytes > max_bytes) max_bytes = bytes;
    if (w->w > *max_w) *max_w = w->w;
    if (w->h > *max_h) *max_h = w->h;
    if (geom[i].sequence || w->w > bound_w || w->h > bound_h) fixed = 0; /* sequences: frame counts vary */
  }
  int samples = n > 0 ? geom[n - 1].sample + 1 : 0;
  stk_status st = fixed ? stk__gpu_tensor_list_reserve_exact(
                              out, samples, (size_t)bound_w * bound_h * norm->out_channels * element, ctx->alloc_count)
                        : stk__gpu_tensor_list_reserve(out, samples, max_bytes, ctx->alloc_count);
  if (st != STK_OK) return stk__gpu_failure(ctx, st, "reserving the output batch on the GPU");
  for (int i = 0; i < n; i++) {
    stk__gpu_sample_geom *g = &geom[i];
    const stk__cmn_output o =
        stk__cmn_output_shape(c, g->sequence, g->frames, g->crop.h, g->crop.w, norm->out_channels);
    stk__tensor *t = &out->samples[g->sample];
    if (g->frame == 0) stk__gpu_set_sample_shape(t, (stk_dtype)norm->dtype, o.ndim, o.shape, o.layout);
    g->dst = (uint8_t *)t->data + (size_t)g->frame * o.frame_step * element;
    g->plane = o.plane_stride;
  }
  stk__gpu_tensor_list_settle(out);
  return STK_OK;
}

static void fill_descs(const stk__gpu_sample_geom *geom, int n, stk__gpu_cmn_desc *descs) {
  for (int i = 0; i < n; i++) {
    const stk__gpu_sample_geom *g = &geom[i];
    stk__gpu_cmn_desc *d = &descs[i];
    d->src = g->src;
    d->src_w = g->src_w;
    d->src_h = g->src_h;
    d->src_stride = g->src_w * g->channels;
    d->crop_x = g->crop.x;
    d->crop_y = g->crop.y;
    d->crop_w = g->crop.w;
    d->crop_h = g->crop.h;
    d->mirror = g->mirror;
    d->dst = g->dst;
    d->plane_stride = g->plane;
  }
}

static stk_status cmn_run_batch(stk__op *op, stk__batch_ctx *ctx, stk__tensor_list *const *inputs,
                                stk__tensor_list *const *outputs) {
  stk__gpu_image_state *s = (stk__gpu_image_state *)op->state;
  const stk__tensor_list *in = inputs[0];
  int n; /* images: samples, or their frames */
  stk__gpu_sample_geom *geom = NULL;
  stk_status st = stk__gpu_batch_sources(s, ctx, in, &geom, &n);
  if (st == STK_OK) st = stk__gpu_check_same_channels(ctx, geom, n);
  if (st != STK_OK || n == 0) return st;
  stk__gpu_normalize norm;
  st = stk__gpu_cmn_normalize(&s->cmn, geom[0].channels, &norm, ctx);
  for (int i = 0; st == STK_OK && i < n; i++)
    st = stk__gpu_cmn_sample(op, &s->cmn, ctx, inputs, geom[i].src_w, geom[i].src_h, &geom[i]);
  int max_w, max_h;
  if (st == STK_OK) st = stk__gpu_cmn_reserve_output(ctx, outputs[0], &s->cmn, geom, n, &norm, 0, 0, &max_w, &max_h);
  if (st != STK_OK) return st;
  size_t descs_at = 0, desc_bytes = (size_t)n * sizeof(stk__gpu_cmn_desc);
  st = stk__gpu_batch_descs(s, ctx, desc_bytes + 64, desc_bytes, &descs_at);
  if (st != STK_OK) return st;
  fill_descs(geom, n, (stk__gpu_cmn_desc *)(s->arena.host + descs_at));
  cudaStream_t stream;
  st = stk__gpu_batch_upload(s, ctx, &stream);
  if (st != STK_OK) return st;
  st = stk__gpu_crop_mirror_normalize_batch((const stk__gpu_cmn_desc *)(s->arena.device + descs_at), n, max_w, max_h,
                                            &norm, stream);
  return stk__gpu_failure(ctx, st, "the batched crop_mirror_normalize kernel launch");
}

extern "C" {
const stk__op_impl stk__gpu_impl_crop_mirror_normalize = {
    cmn_init, stk__gpu_image_state_destroy, NULL, NULL, NULL, NULL, cmn_run_batch};
}
