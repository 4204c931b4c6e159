/* src/ops/feed/external_source_gpu.c: the `external_source` operator's GPU side -- samples fed in
 * GPU memory (stk_pipeline_feed_input_stream: torch CUDA tensors, CuPy arrays, CUDA DLPack) and
 * the GPU implementation (device="gpu"), whose run_batch copies the batch's fed entry into the
 * batch's GPU lists on the pipeline's stream. Schema, feeding and planning are the CPU file's
 * (src/ops/feed/external_source.c); the state is external_source.h's.
 *
 * Plain C on the device layer (src/device/device.h), so it builds with or without CUDA: without,
 * every device call fails with STK_ENOTSUP and the operator table has no GPU implementation.
 *
 * Copies: a GPU sample fed to a GPU node is copied device-to-device into the entry's own device
 * buffer when fed (on the legacy default stream, waited for before the feed returns, after the
 * producer's stream: pipeline_feed.c), so the producer may reuse its memory at once; borrowed
 * (no_copy), the entry keeps the producer's pointer and run_batch copies from it. Fed to a CPU
 * node, it is copied to the entry's host memory. The device copies of a feed, and those of a
 * run_batch, are queued in the entry's table of parts and launched together, one kernel per 160
 * samples (stk__gpu_copy_parts_async). run_batch records entry->event after its copies;
 * a later feed into the entry waits for it. Threads: feed on the consumer's thread, run_batch on
 * the GPU stage thread. Hot path: once per fed batch and per batch run. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device/device.h"
#include "ops/feed/external_source.h"

const char *stk__extsrc_check_gpu_view(const stk__extsrc_state *s, const stk_tensor_view *v, char *detail,
                                       size_t detail_size) {
  if (s->device_id < 0) {
    snprintf(detail, detail_size, "(the pipeline has no GPU: device_id -1)");
    return "lives in GPU memory";
  }
  if (v->device_id != s->device_id) {
    snprintf(detail, detail_size, "(GPU %d; the pipeline runs on GPU %d)", v->device_id, s->device_id);
    return "is on the wrong GPU";
  }
  if (v->nbytes && !v->data) return "has no data";
  int where = v->nbytes ? stk__gpu_pointer_device(v->data) : s->device_id;
  if (where != s->device_id) {
    if (where < 0) snprintf(detail, detail_size, "(its pointer %p is not GPU memory)", v->data);
    else snprintf(detail, detail_size, "(its pointer is on GPU %d, the pipeline runs on GPU %d)", where, s->device_id);
    return "is not in the pipeline's GPU memory";
  }
  return NULL;
}

stk_status stk__extsrc_entry_wait(stk__extsrc_entry *entry) {
  return entry->event ? stk__gpu_event_synchronize(entry->event) : STK_OK;
}

/* The entry's table of copies: room for every sample of every output, made once. */
static stk_status ensure_parts(const stk__extsrc_state *s, stk__extsrc_entry *entry) {
  if (!entry->parts) entry->parts = calloc((size_t)s->num_outputs * (size_t)s->batch_size, sizeof *entry->parts);
  return entry->parts ? STK_OK : STK_ENOMEM;
}

static void queue_part(stk__extsrc_entry *entry, void *dst, const void *src, size_t bytes) {
  if (bytes) entry->parts[entry->num_parts++] = (stk__gpu_copy_part){dst, src, bytes};
}

/* Launches the queued parts on stream (one kernel per 160) and empties the table. */
static stk_status launch_parts(stk__extsrc_entry *entry, void *stream) {
  stk_status st = entry->num_parts ? stk__gpu_copy_parts_async(entry->parts, entry->num_parts, stream) : STK_OK;
  entry->num_parts = 0;
  return st;
}

stk_status stk__extsrc_copies_finish(stk__extsrc_entry *entry) {
  stk_status st = launch_parts(entry, NULL);
  stk_status wait = stk__gpu_stream_synchronize(NULL);
  return st != STK_OK ? st : wait;
}

/* Host copy of a GPU sample (a CPU node): t's own host memory. */
static stk_status copy_to_host(stk__tensor *t, const stk_tensor_view *v, const char *layout) {
  if (!t->capacity) {
    t->data = NULL;
    t->device = STK_DEVICE_CPU;
  }
  stk_status st = stk__tensor_resize(t, v->dtype, v->ndim, v->shape, layout);
  if (st == STK_OK && t->nbytes != v->nbytes) st = STK_EINVAL;
  if (st == STK_OK && v->nbytes) st = stk__gpu_memcpy_d2h(t->data, v->data, v->nbytes, NULL);
  return st;
}

/* The entry's device buffers (per sample pointers and capacities), made on first use. */
static stk_status ensure_dev_arrays(stk__extsrc_state *s, stk__extsrc_entry *entry) {
  if (entry->dev) return STK_OK;
  size_t n = (size_t)s->num_outputs * (size_t)s->batch_size;
  entry->dev = calloc(n, sizeof *entry->dev);
  entry->dev_cap = calloc(n, sizeof *entry->dev_cap);
  if (entry->dev && entry->dev_cap) return STK_OK;
  free(entry->dev);
  free(entry->dev_cap);
  entry->dev = NULL;
  entry->dev_cap = NULL;
  return STK_ENOMEM;
}

stk_status stk__extsrc_fill_gpu(stk__extsrc_state *s, stk__extsrc_entry *entry, int i, const stk_tensor_view *v,
                                const char *layout, int borrow) {
  stk__tensor *t = &entry->samples[i];
  if (!s->on_gpu) return copy_to_host(t, v, layout);
  if (t->capacity) stk__tensor_free(t); /* host memory of an earlier host-fed batch */
  void *data = v->data;
  if (!borrow) {
    stk_status st = ensure_dev_arrays(s, entry);
    if (st == STK_OK && entry->dev_cap[i] < v->nbytes) { /* grow-only, with headroom */
      size_t want = v->nbytes + v->nbytes / 4 + 256;
      void *fresh = NULL;
      st = stk__gpu_malloc(&fresh, want, NULL);
      if (st == STK_OK) {
        stk__gpu_free(entry->dev[i], NULL);
        entry->dev[i] = fresh;
        entry->dev_cap[i] = want;
      }
    }
    if (st == STK_OK) st = ensure_parts(s, entry);
    if (st != STK_OK) return st;
    queue_part(entry, entry->dev[i], v->data, v->nbytes);
    data = entry->dev[i];
  }
  t->data = data;
  t->nbytes = v->nbytes;
  t->dtype = v->dtype;
  t->ndim = v->ndim;
  memcpy(t->shape, v->shape, sizeof t->shape);
  snprintf(t->layout, sizeof t->layout, "%s", layout);
  t->device = STK_DEVICE_GPU;
  return STK_OK;
}

void stk__extsrc_entry_free_gpu(stk__extsrc_state *s, stk__extsrc_entry *entry) {
  if (entry->event) stk__gpu_event_synchronize(entry->event);
  for (int i = 0; entry->dev && i < s->num_outputs * s->batch_size; i++) stk__gpu_free(entry->dev[i], NULL);
  free(entry->dev);
  free(entry->dev_cap);
  free(entry->parts);
  if (entry->event) stk__gpu_event_destroy(entry->event);
  entry->dev = NULL;
  entry->dev_cap = NULL;
  entry->parts = NULL;
  entry->event = NULL;
}

/* Copies output o of the entry (count samples) into the batch's GPU list on the stream: host
 * samples one by one, device samples queued as the entry's parts (extsrc_gpu_run launches them). */
static stk_status copy_output(const stk__extsrc_state *s, stk__extsrc_entry *entry, int o, int count,
                              stk__tensor_list *list, stk__batch_ctx *ctx) {
  size_t largest = 0;
  for (int i = 0; i < count; i++)
    if (entry->samples[o * s->batch_size + i].nbytes > largest) largest = entry->samples[o * s->batch_size + i].nbytes;
  stk_status st = stk__gpu_tensor_list_reserve(list, count, largest, ctx->alloc_count);
  if (st == STK_OK) st = ensure_parts(s, entry);
  for (int i = 0; st == STK_OK && i < count; i++) {
    const stk__tensor *from = &entry->samples[o * s->batch_size + i];
    stk__tensor *to = &list->samples[i];
    stk__tensor_take_shape(to, from, STK_DEVICE_GPU);
    if (!from->nbytes) continue;
    if (from->device == STK_DEVICE_GPU) queue_part(entry, to->data, from->data, from->nbytes);
    else st = stk__gpu_memcpy_h2d_async(to->data, from->data, from->nbytes, ctx->cuda_stream);
  }
  if (st != STK_OK)
    stk__errorf(ctx->err, ctx->err_size,
                "copying output %d of the fed batch (%d samples, %zu bytes the largest) into "
                "the pipeline's GPU memory: %s",
                o, count, largest, stk_strerror(st));
  return st;
}

static stk_status extsrc_gpu_run(stk__op *op, stk__batch_ctx *ctx, stk__tensor_list *const *inputs,
                                 stk__tensor_list *const *outputs) {
  (void)inputs;
  stk__extsrc_state *s = op->state;
  const stk__batch_plan *plan = ctx->plan;
  stk__extsrc_entry *entry = plan && plan->batch_size > 0 ? stk__extsrc_planned(s, plan->samples[0].file_index) : NULL;
  if (!entry || entry->count != plan->batch_size) return STK_EINTERNAL;
  stk_status st = STK_OK;
  for (int o = 0; o < s->num_outputs && st == STK_OK; o++) st = copy_output(s, entry, o, entry->count, outputs[o], ctx);
  stk_status launched = launch_parts(entry, ctx->cuda_stream);
  if (st == STK_OK && launched != STK_OK) {
    stk__errorf(ctx->err, ctx->err_size, "copying the fed batch (%d samples) into the pipeline's GPU memory: %s",
                entry->count, stk_strerror(launched));
    st = launched;
  }
  if (st == STK_OK && !entry->event) st = stk__gpu_event_create(&entry->event);
  if (st == STK_OK) st = stk__gpu_event_record(entry->event, ctx->cuda_stream);
  if (st != STK_OK && entry->event) stk__gpu_stream_synchronize(ctx->cuda_stream); /* nothing may still read it */
  stk__extsrc_release(s, entry);
  return st;
}

static stk_status extsrc_gpu_init(stk__op *op, char *err, size_t err_size) {
  stk_status st = stk__extsrc_init(op, err, err_size);
  if (st == STK_OK && op->options && op->options->device_id < 0) {
    stk__errorf(err, err_size, "device=\"gpu\" needs a GPU pipeline (device_id >= 0)");
    st = STK_EINVAL;
  }
  return st;
}

const stk__op_impl stk__gpu_impl_external_source = {.init = extsrc_gpu_init,
                                                    .destroy = stk__extsrc_destroy,
                                                    .plan_batch = stk__extsrc_plan,
                                                    .reset = stk__extsrc_reset,
                                                    .run_batch = extsrc_gpu_run,
                                                    .feed = stk__extsrc_feed,
                                                    .input_ready = stk__extsrc_input_ready,
                                                    .seek = stk__extsrc_seek,
                                                    .data_fingerprint = stk__extsrc_fingerprint};
