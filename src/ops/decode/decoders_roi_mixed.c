/* src/ops/decode/decoders_roi_mixed.c: decoders.image_crop and decoders.image_slice on device
 * "mixed": the CPU implementation's decode of the window (decoders_roi.c: libjpeg-turbo's ROI
 * decode for JPEG, whole image and cut for the other formats) runs in the CPU pre-stage on the
 * workers, into the sample's pinned stage tensor, and run_batch uploads the windows into the
 * batch's device list on the GPU stage's stream. No nvJPEG: a window of a JPEG is a fraction of
 * its decode, which libjpeg-turbo skips and the engines would not (docs/operators-decode.md).
 * Used on its own (no pre-stage), run_batch decodes on its thread first.
 *
 * Plain C on the device layer (src/device/device.h), so it builds with or without CUDA; the
 * operator table names it only in a CUDA build. Hot path: run_sample per sample, run_batch per
 * batch (one asynchronous copy per sample). */
#include <stdlib.h>
#include <string.h>

#include "device/device.h"
#include "ops/common/gpu_ops.h"
#include "ops/decode/decoders.h"

/* Every input slot run_* may see: the regular inputs, then the argument inputs. */
static int input_slots(const stk__op *op) {
  int n = op->num_inputs;
  for (int a = 0; a < op->schema->num_args; a++)
    if (op->args[a].input_slot >= n) n = op->args[a].input_slot + 1;
  return n;
}

/* No pre-stage: sample i decoded here into `host` (the operator used on its own). */
static stk_status decode_here(stk__op *op, stk__batch_ctx *ctx, stk__tensor_list *const *inputs, int i,
                              stk__tensor *host) {
  stk__tensor *per_sample[16];
  const int slots = input_slots(op);
  if (slots > 16) {
    stk__errorf(ctx->err, ctx->err_size, "%s: too many inputs", op->schema->name);
    return STK_EINTERNAL;
  }
  for (int k = 0; k < slots; k++) per_sample[k] = &inputs[k]->samples[i];
  stk__sample_ctx sample = {0};
  sample.sample_in_batch = i;
  sample.epoch = ctx->epoch;
  sample.sample_id = ctx->plan && ctx->plan->samples && i < ctx->plan->batch_size ? ctx->plan->samples[i].sample_id : i;
  sample.err = ctx->err;
  sample.err_size = ctx->err_size;
  sample.alloc_count = ctx->alloc_count;
  stk__tensor *outs[1] = {host};
  return stk__decoders_roi_run_sample(op, &sample, per_sample, outs);
}

static stk_status roi_mixed_run_batch(stk__op *op, stk__batch_ctx *ctx, stk__tensor_list *const *inputs,
                                      stk__tensor_list *const *outputs) {
  const int n = inputs[0]->count;
  stk__tensor *own = ctx->stage ? NULL : calloc((size_t)(n ? n : 1), sizeof *own);
  size_t *sizes = calloc((size_t)(n ? n : 1), sizeof *sizes);
  stk_status st = sizes && (ctx->stage || own) ? STK_OK : STK_ENOMEM;
  for (int i = 0; st == STK_OK && i < n; i++) {
    const stk__tensor *h = ctx->stage ? &ctx->stage->samples[i] : &own[i];
    if (!ctx->stage) st = decode_here(op, ctx, inputs, i, &own[i]);
    if (st == STK_OK && h->ndim != 3) {
      stk__errorf(ctx->err, ctx->err_size, "%s: the CPU pre-stage did not decode sample %d", op->schema->name, i);
      st = STK_EINTERNAL;
    }
    if (st == STK_OK) sizes[i] = (h->nbytes + 255) & ~(size_t)255;
  }
  stk__tensor_list *out = outputs[0];
  if (st == STK_OK) st = stk__gpu_tensor_list_reserve_sizes(out, n, sizes, ctx->alloc_count);
  for (int i = 0; st == STK_OK && i < n; i++) {
    const stk__tensor *h = ctx->stage ? &ctx->stage->samples[i] : &own[i];
    stk__tensor *t = &out->samples[i];
    t->dtype = h->dtype;
    t->ndim = 3;
    memcpy(t->shape, h->shape, sizeof t->shape);
    strcpy(t->layout, "HWC");
    t->nbytes = h->nbytes;
    st = stk__gpu_memcpy_h2d_async(t->data, h->data, h->nbytes, ctx->cuda_stream);
    if (st != STK_OK)
      stk__errorf(ctx->err, ctx->err_size, "%s: uploading sample %d failed (%s)", op->schema->name, i,
                  stk_strerror(st));
  }
  if (st == STK_OK) stk__gpu_tensor_list_settle(out);
  /* pageable copies are staged before cudaMemcpyAsync returns, so own may go now */
  for (int i = 0; own && i < n; i++) stk__tensor_free(&own[i]);
  free(own);
  free(sizes);
  return st;
}

/* init, destroy, plan_batch, reset, reader_meta, run_sample, run_batch */
const stk__op_impl stk__gpu_impl_decoders_image_crop = {
    .init = stk__decoders_crop_init,
    .destroy = stk__decoders_roi_destroy,
    .run_sample = stk__decoders_roi_run_sample,
    .run_batch = roi_mixed_run_batch,
};
const stk__op_impl stk__gpu_impl_decoders_image_slice = {
    .init = stk__decoders_slice_init,
    .destroy = stk__decoders_roi_destroy,
    .run_sample = stk__decoders_roi_run_sample,
    .run_batch = roi_mixed_run_batch,
};
