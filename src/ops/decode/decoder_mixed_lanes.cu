/* src/ops/decode/decoder_mixed_lanes.cu: every image of a mixed batch that the hardware engines do
 * not take.
 *   - Decoded by the CPU pre-stage (in a pipeline): its pinned pixels are uploaded by DMA on the
 *     consumer's stream.
 *   - Otherwise (routed to nvJPEG: the operator on its own, or cuda_decoder_load's share in a
 *     pipeline; and what nvJPEG refuses) on the worker lanes, one lane per worker (a CUDA stream
 *     and three slots, each a jpeg stream, decode params and a state with attached pinned and
 *     device buffers: two for the CUDA decoder, one for the hybrid decoder): nvJPEG's CUDA decoder
 *     (STK__JPEG_ROUTE_CUDA, Huffman on the GPU) or hybrid decoder, Huffman on the CPU
 *     (STK__JPEG_ROUTE_HYBRID), through the decoupled API (JpegStreamParse -> DecoderJpegSupported
 *     -> DecodeJpegHost -> TransferToDevice -> DecodeJpegDevice, only the window for random crops:
 *     DecodeParamsSetROI); anything nvJPEG refuses, and STK__JPEG_ROUTE_CPU, is decoded by
 *     libjpeg-turbo (window only) and uploaded from the lane's pinned staging buffer.
 * Concurrency: the lanes' images are a parallel_for over the workers (jumping the queue), so up to
 * one image per worker is in its host stage at once, each lane on its own stream; a lane does not
 * wait for its device stages -- the CUDA decoder's two slots alternate, so an image's host stage
 * overlaps the previous image's device stage, and a slot waits only for its own previous image.
 * The consumer's stream waits for the lanes' events (no device-wide sync), so the encoded bytes
 * and output slots the queued work still reads stay valid: the executor reuses a batch slot, its
 * host lists included, only after the batch's event on that stream. A device-stage error
 * that nvJPEG reports only asynchronously then surfaces as the batch's CUDA error (no CPU
 * fallback for it). With skip_bad_files a file libjpeg rejects is marked failed (the shell
 * replaces it). Hot path: per image on a worker. */
#include <stdlib.h>
#include <string.h>

#include "ops/decode/decoder_mixed.h"
#include "ops/decode/image_route.h" /* the CPU fallback decodes every format */

/* ---- Lanes --------------------------------------------------------------------------------- */
static void lane_destroy(const mixed_state *s, mixed_lane *l) {
  const stk__nvjpeg_api *api = s->api;
  if (l->stream) cudaStreamSynchronize(l->stream);
  if (api) {
    for (int k = 0; k < MIXED_LANE_SLOTS; k++) {
      mixed_lane_slot *t = &l->slot[k];
      if (t->state) api->JpegStateDestroy(t->state);
      if (t->pinned) api->BufferPinnedDestroy(t->pinned);
      if (t->device) api->BufferDeviceDestroy(t->device);
      if (t->jpeg_stream) api->JpegStreamDestroy(t->jpeg_stream);
      if (t->params) api->DecodeParamsDestroy(t->params);
    }
  }
  for (int k = 0; k < MIXED_LANE_SLOTS; k++)
    if (l->slot[k].done) cudaEventDestroy(l->slot[k].done);
  if (l->done) cudaEventDestroy(l->done);
  if (l->stream) cudaStreamDestroy(l->stream);
  stk__tensor_free(&l->host_image);
  stk__gpu_pinned_free(l->staging);
  mixed_host_recount(s, &l->host_counted, 0);
  memset(l, 0, sizeof *l);
}

/* Waits (asleep: the lane's event has blocking sync) until the lane's queued work is done. */
static cudaError_t lane_wait(mixed_lane *l) {
  cudaError_t rc = cudaEventRecord(l->done, l->stream);
  return rc == cudaSuccess ? cudaEventSynchronize(l->done) : rc;
}

/* The decoder of slot k: GPU_HYBRID (s->decoder[0]) for the CUDA slots, HYBRID (s->decoder[1]). */
static int slot_decoder(int k) { return k < MIXED_LANE_CUDA_SLOTS ? 0 : 1; }

/* 1 when the lane is ready; else 0 with *what naming the call that failed and *nv its nvJPEG
 * status (-1: a CUDA stream or event). */
static int lane_create(mixed_state *s, mixed_lane *l, const char **what, int *nv) {
  *nv = -1;
  *what = "cudaStreamCreate";
  if (stk__gpu_stream_create((void **)&l->stream, s->stream_priority) != STK_OK) return 0;
  *what = "cudaEventCreate";
  if (stk__gpu_event_create((void **)&l->done) != STK_OK) return 0;
  if (!s->api) return 1; /* CPU-only lane */
  const stk__nvjpeg_api *a = s->api;
#define LANE_NV(fn, args)                       \
  do {                                          \
    *what = #fn;                                \
    if ((*nv = (int)a->fn args) != 0) return 0; \
  } while (0)
  for (int k = 0; k < MIXED_LANE_SLOTS; k++) {
    mixed_lane_slot *t = &l->slot[k];
    *nv = -1, *what = "cudaEventCreate";
    if (stk__gpu_event_create((void **)&t->done) != STK_OK) return 0;
    LANE_NV(JpegStreamCreate, (s->handle, &t->jpeg_stream));
    LANE_NV(DecodeParamsCreate, (s->handle, &t->params));
    LANE_NV(DecodeParamsSetOutputFormat, (t->params, s->format));
    LANE_NV(DecoderStateCreate, (s->handle, s->decoder[slot_decoder(k)], &t->state));
    *what = "BufferPinnedCreate/BufferDeviceCreate";
    if ((*nv = (int)stk__mixed_buffers_create(s, &t->pinned, &t->device)) != 0) return 0;
    LANE_NV(StateAttachPinnedBuffer, (t->state, t->pinned));
    LANE_NV(StateAttachDeviceBuffer, (t->state, t->device));
  }
#undef LANE_NV
  *nv = 0;
  return 1;
}

stk_status stk__mixed_lanes_create(const stk__op *op, mixed_state *s, char *err, size_t err_size) {
  s->num_lanes = op->options && op->options->num_threads > 0 ? op->options->num_threads : 1;
  s->lanes = (mixed_lane *)calloc((size_t)s->num_lanes, sizeof(mixed_lane));
  if (!s->lanes) return STK_ENOMEM;
  for (int i = 0; i < s->num_lanes; i++) {
    const char *what = "";
    int nv = 0, ok = lane_create(s, &s->lanes[i], &what, &nv);
    /* device memory our pools freed but still cache (released at a synchronization) is not
     * nvJPEG's or the driver's to take: given back, one more try */
    if (!ok && stk__gpu_trim_pools()) {
      lane_destroy(s, &s->lanes[i]);
      ok = lane_create(s, &s->lanes[i], &what, &nv);
    }
    if (!ok) {
      cudaError_t cuda = cudaGetLastError();
      const int memory = nv == NVJPEG_STATUS_ALLOCATOR_FAILURE || cuda == cudaErrorMemoryAllocation;
      if (nv >= 0)
        stk__errorf(err, err_size, "%s: could not create decoder lane %d: nvjpeg%s failed (nvJPEG status %d%s)",
                    mixed_op_label(op), i, what, nv, memory ? ": out of device or pinned memory" : "");
      else
        stk__errorf(err, err_size, "%s: could not create decoder lane %d: %s failed (%s)", mixed_op_label(op), i, what,
                    cudaGetErrorString(cuda));
      return memory ? STK_ENOMEM : nv >= 0 ? STK_ENVJPEG : STK_ECUDA;
    }
  }
  return STK_OK;
}

void stk__mixed_lanes_destroy(mixed_state *s) {
  for (int i = 0; i < s->num_lanes && s->lanes; i++) lane_destroy(s, &s->lanes[i]);
  free(s->lanes);
  s->lanes = NULL;
  s->num_lanes = 0;
}

/* ---- Per-image decode on a lane (worker thread) --------------------------------------------- */
typedef struct lane_work {
  mixed_state *s;
  mixed_job *jobs;
  int *order; /* indexes of the jobs for the lanes */
  int count;
  stk__batch_ctx *ctx;
  const stk__op *op;
  unsigned char *used; /* per lane: work was queued on it for this batch (each written by its own worker);
                          NULL: not tracked (lanes_early waits on each lane as it goes) */
} lane_work;

/* Grows the lane's pinned staging buffer to at least `bytes` (+50%); the lane is idle. */
static stk_status staging_reserve(mixed_lane *l, size_t bytes, int numa_node, uint64_t *alloc_count) {
  if (bytes <= l->staging_capacity) return STK_OK;
  void *p = NULL;
  size_t want = bytes + bytes / 2;
  stk_status st = stk__gpu_pinned_alloc(&p, want, numa_node, NULL, alloc_count);
  if (st != STK_OK) return st;
  stk__gpu_pinned_free(l->staging);
  l->staging = (uint8_t *)p;
  l->staging_capacity = want;
  return STK_OK;
}

/* libjpeg-turbo decode of the job's window into host memory, then an upload from the lane's
 * pinned staging buffer. */
static stk_status cpu_decode_upload(lane_work *w, mixed_lane *l, mixed_job *job, int index, uint64_t *alloc_count) {
  char err[256] = "";
  const stk__window *crop = w->s->random_crop ? &job->plan.crop : NULL;
  l->host_image.alloc_count = alloc_count;
  stk_status st =
      stk__image_decode_plain(job->data, job->size, w->s->color, crop, w->s->params.verified, &l->host_image, err,
                              sizeof err);
  if (st == STK_EBADIMAGE && w->s->skip_bad_files) {
    job->failed = 1; /* replaced by a good sample of the batch and counted after the decode */
    return STK_OK;
  }
  if (st != STK_OK) {
    stk__errorf(w->ctx->err, w->ctx->err_size, "%s: %s: %s", mixed_op_label(w->op), mixed_source_of(w->ctx, index),
                err);
    return st;
  }
  if ((int)l->host_image.shape[0] != job->out_h || (int)l->host_image.shape[1] != job->out_w) {
    stk__errorf(w->ctx->err, w->ctx->err_size, "%s: %s: decoded %lldx%lld, expected %dx%d", mixed_op_label(w->op),
                mixed_source_of(w->ctx, index), (long long)l->host_image.shape[1], (long long)l->host_image.shape[0],
                job->out_w, job->out_h);
    return STK_EINTERNAL;
  }
  size_t bytes = l->host_image.nbytes;
  if (lane_wait(l) != cudaSuccess) return STK_ECUDA; /* staging free again */
  st = staging_reserve(l, bytes, w->s->numa_node, alloc_count);
  if (st != STK_OK) return st;
  memcpy(l->staging, l->host_image.data, bytes);
  if (cudaMemcpyAsync(job->out, l->staging, bytes, cudaMemcpyHostToDevice, l->stream) != cudaSuccess) return STK_ECUDA;
  return STK_OK;
}

/* nvJPEG decoupled decode (GPU_HYBRID or HYBRID) of one job on a slot of the lane; 0 on success,
 * else the nvJPEG status (the caller falls back to the CPU). Asynchronous: the device stage is
 * queued on the lane's stream and the slot's event recorded after it; the worker goes on to its
 * next image, whose host stage overlaps it (the other CUDA slot). A slot is reused once its
 * event has passed (its pinned buffer may still feed its previous transfer). */
static nvjpegStatus_t nvjpeg_lane_decode(mixed_state *s, mixed_lane *l, mixed_job *job) {
  const stk__nvjpeg_api *a = s->api;
  int k = MIXED_LANE_CUDA_SLOTS; /* the hybrid decoder's slot */
  if (job->route == STK__JPEG_ROUTE_CUDA) {
    k = l->cuda_turn;
    l->cuda_turn = (l->cuda_turn + 1) % MIXED_LANE_CUDA_SLOTS;
  }
  mixed_lane_slot *t = &l->slot[k];
  nvjpegJpegDecoder_t decoder = s->decoder[slot_decoder(k)];
  if (t->pending) {
    if (cudaEventSynchronize(t->done) != cudaSuccess) return NVJPEG_STATUS_EXECUTION_FAILED;
    t->pending = 0;
  }
  nvjpegStatus_t st = a->JpegStreamParse(s->handle, job->data, job->size, 0, 0, t->jpeg_stream);
  if (!mixed_nv_ok(st)) return st;
  const stk__window *crop = &job->plan.crop;
  if (s->random_crop) st = a->DecodeParamsSetROI(t->params, crop->x, crop->y, crop->w, crop->h);
  else st = a->DecodeParamsSetROI(t->params, 0, 0, -1, -1); /* whole image */
  if (!mixed_nv_ok(st)) return st;
  int unsupported = 1;
  st = a->DecoderJpegSupported(decoder, t->jpeg_stream, t->params, &unsupported);
  if (!mixed_nv_ok(st)) return st;
  if (unsupported != 0) return NVJPEG_STATUS_JPEG_NOT_SUPPORTED;
  st = a->DecodeJpegHost(s->handle, decoder, t->state, t->params, t->jpeg_stream);
  if (!mixed_nv_ok(st)) return st;
  st = a->DecodeJpegTransferToDevice(s->handle, decoder, t->state, t->jpeg_stream, l->stream);
  if (mixed_nv_ok(st)) {
    nvjpegImage_t dest;
    memset(&dest, 0, sizeof dest);
    dest.channel[0] = job->out;
    dest.pitch[0] = (size_t)job->out_w * s->channels;
    st = a->DecodeJpegDevice(s->handle, decoder, t->state, &dest, l->stream);
  }
  /* Whatever was queued (a transfer at least) holds the slot until its event. */
  if (cudaEventRecord(t->done, l->stream) != cudaSuccess) return NVJPEG_STATUS_EXECUTION_FAILED;
  t->pending = 1;
  return st;
}

/* What the lane holds in host memory now (mixed_host_recount): its staging, its host_image and the
 * pinned buffers nvJPEG grew for its decoders (nvjpegBufferPinnedRetrieve). */
static void lane_recount(const mixed_state *s, mixed_lane *l) {
  size_t bytes = l->staging_capacity + l->host_image.capacity;
  for (int k = 0; k < MIXED_LANE_SLOTS && s->api; k++) {
    size_t size = 0;
    void *ptr = NULL;
    if (l->slot[k].pinned && mixed_nv_ok(s->api->BufferPinnedRetrieve(l->slot[k].pinned, &size, &ptr))) bytes += size;
  }
  mixed_host_recount(s, &l->host_counted, bytes);
}

static stk_status lane_decode(lane_work *w, mixed_lane *l, mixed_job *job, int index) {
  mixed_state *s = w->s;
  if (job->route != STK__JPEG_ROUTE_CPU && s->api) {
    /* Not waited for: the consumer's stream waits for the lane's event (stk__mixed_lanes_run). */
    if (mixed_nv_ok(nvjpeg_lane_decode(s, l, job))) return STK_OK;
    job->route = STK__JPEG_ROUTE_CPU; /* nvJPEG refused it (or failed): libjpeg-turbo decides */
  }
  return cpu_decode_upload(w, l, job, index, w->ctx->alloc_count);
}

static stk_status lane_job(void *arg, int i, int thread_index) {
  lane_work *w = (lane_work *)arg;
  mixed_state *s = w->s;
  if (thread_index < 0 || thread_index >= s->num_lanes) {
    stk__errorf(w->ctx->err, w->ctx->err_size, "%s: worker %d has no decoder lane (%d lanes)", mixed_op_label(w->op),
                thread_index, s->num_lanes);
    return STK_EINTERNAL;
  }
  mixed_lane *l = &s->lanes[thread_index];
  int index = w->order[i];
  if (w->used) w->used[thread_index] = 1; /* whatever happens below may queue work on the lane's stream */
  stk_status st = lane_decode(w, l, &w->jobs[index], index);
  lane_recount(s, l);
  return st;
}

/* ---- The batch's share ---------------------------------------------------------------------- */
/* The pre-stage's pixels go up on the consumer's stream (pinned, so the copies are DMA and the
 * slot's stages are rewritten only after the batch's event). Collects the other jobs for the lanes
 * in order[] (*lane_jobs of them). */
static stk_status upload_staged(const stk__op *op, stk__batch_ctx *ctx, mixed_job *jobs, int n, int *order,
                                int *lane_jobs) {
  cudaStream_t stream = (cudaStream_t)ctx->cuda_stream;
  *lane_jobs = 0;
  for (int i = 0; i < n; i++) {
    mixed_job *j = &jobs[i];
    if (j->route == STK__JPEG_ROUTE_HW || j->route == STK__JPEG_ROUTE_FAILED || j->early) continue;
    if (j->staged) {
      if (cudaMemcpyAsync(j->out, j->staged->data, j->staged->nbytes, cudaMemcpyHostToDevice, stream) != cudaSuccess) {
        stk__errorf(ctx->err, ctx->err_size, "%s: %s: uploading the decoded image failed", mixed_op_label(op),
                    mixed_source_of(ctx, i));
        return STK_ECUDA;
      }
      continue;
    }
    order[(*lane_jobs)++] = i;
  }
  return STK_OK;
}

stk_status stk__mixed_lanes_run(const stk__op *op, mixed_state *s, stk__batch_ctx *ctx, mixed_hw_set *h) {
  mixed_job *jobs = h->jobs;
  int n = h->n;
  int *order = (int *)alloca(sizeof(int) * (size_t)(n > 0 ? n : 1));
  unsigned char *used = (unsigned char *)alloca((size_t)(s->num_lanes > 0 ? s->num_lanes : 1));
  memset(used, 0, (size_t)(s->num_lanes > 0 ? s->num_lanes : 1));
  int lane_jobs = 0;
  stk_status st = upload_staged(op, ctx, jobs, n, order, &lane_jobs);
  cudaStream_t stream = (cudaStream_t)ctx->cuda_stream;
  /* what prepare_batch decoded (also after an error here: its buffers must outlive that work) */
  if (h->lanes_pending) cudaStreamWaitEvent(stream, h->lanes_done, 0);
  h->lanes_pending = 0;
  if (st != STK_OK) return st;
  lane_work work = {s, jobs, order, lane_jobs, ctx, op, used};
  if (lane_jobs > 0) st = stk__parallel_for(ctx, lane_jobs, lane_job, &work);
  /* The consumer's stream waits for the lanes that queued work (also after an error: the slot's
   * buffers must not be reused under them). */
  for (int l = 0; l < s->num_lanes; l++) {
    if (!used[l]) continue;
    cudaEventRecord(s->lanes[l].done, s->lanes[l].stream);
    cudaStreamWaitEvent(stream, s->lanes[l].done, 0);
  }
  return st;
}

/* ---- lanes_early: the engines' submission and the lanes' images, one parallel_for ------------ */
typedef struct early_work {
  lane_work lanes; /* order[]: the jobs for the lanes, lanes.count of them */
  mixed_hw_set *h;
  size_t stride;
} early_work;

/* Item lanes.count (queued first) submits the engines' part and blocks while they decode; the
 * others decode one lane job each on the running worker's lane, and the set's join stream waits
 * for what that lane queued (recorded on the lane's own thread). */
static stk_status early_item(void *arg, int i, int thread_index) {
  early_work *e = (early_work *)arg;
  lane_work *w = &e->lanes;
  if (i == w->count) return stk__mixed_hw_run(w->op, w->s, w->ctx, e->h, e->stride, 1);
  if (stk__gpu_set_device(w->s->device_id) != STK_OK) return STK_ECUDA;
  stk_status st = lane_job(w, i, thread_index);
  if (thread_index < 0 || thread_index >= w->s->num_lanes) return st; /* lane_job said why */
  mixed_lane *l = &w->s->lanes[thread_index];
  /* also after an error: nothing may reuse the set's buffers while this lane still writes them */
  cudaError_t rc = cudaEventRecord(l->done, l->stream);
  if (rc == cudaSuccess) rc = cudaStreamWaitEvent(e->h->join, l->done, 0);
  if (rc != cudaSuccess && st == STK_OK) {
    stk__errorf(w->ctx->err, w->ctx->err_size, "%s: making the batch wait for decoder lane %d failed (%s)",
                mixed_op_label(w->op), thread_index, cudaGetErrorString(rc));
    st = STK_ECUDA;
  }
  w->jobs[w->order[i]].early = st == STK_OK;
  return st;
}

stk_status stk__mixed_lanes_early(const stk__op *op, mixed_state *s, stk__batch_ctx *ctx, mixed_hw_set *h,
                                  size_t stride) {
  int *order = (int *)alloca(sizeof(int) * (size_t)(h->n > 0 ? h->n : 1));
  int count = 0;
  for (int i = 0; i < h->n && s->api; i++)
    if (h->jobs[i].route == STK__JPEG_ROUTE_CUDA || h->jobs[i].route == STK__JPEG_ROUTE_HYBRID) order[count++] = i;
  early_work e = {{s, h->jobs, order, count, ctx, op, NULL}, h, stride};
  if (count == 0) return early_item(&e, 0, -1); /* the engines' part alone */
  stk_status st = stk__parallel_for(ctx, count + 1, early_item, &e);
  if (cudaEventRecord(h->lanes_done, h->join) != cudaSuccess) {
    cudaStreamSynchronize(h->join);
    if (st == STK_OK) stk__errorf(ctx->err, ctx->err_size, "%s: recording the lanes' event failed", mixed_op_label(op));
    return st == STK_OK ? STK_ECUDA : st;
  }
  if (st != STK_OK) {
    cudaEventSynchronize(h->lanes_done); /* the batch fails: nothing may still write its buffers */
    return st;
  }
  h->lanes_pending = 1;
  return STK_OK;
}
