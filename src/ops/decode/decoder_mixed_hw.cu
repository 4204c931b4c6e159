/* src/ops/decode/decoder_mixed_hw.cu: the mixed JPEG decoder's hardware-engine batch. The images
 * routed to STK__JPEG_ROUTE_HW go to the GPU's JPEG engines in one nvjpegDecodeBatched submission
 * per batch (NVJPEG_BACKEND_HARDWARE), made on a worker. MIXED_HW_SETS sets of state / stream /
 * buffers are held by the batches in flight (a batch takes the lowest-numbered free one, so sets
 * no batch needs never grow buffers), and batch N+1 is submitted while the engines still decode
 * batch N. Encoded bytes
 * are read in place when the engine pinned them (a pipeline), else copied into the set's pinned
 * staging buffer (GPU's NUMA node, grow-only). decoders.image decodes straight into the output
 * slots; the random-crop decoder has the engines decode each window straight into its slot
 * (s->hw_roi: where nvJPEG has DecodeBatchedEx), else decodes the full image into a
 * device scratch buffer and one batched crop kernel cuts the windows. Hot path: once per batch. */
#include <stdlib.h>
#include <string.h>

#include "ops/decode/decoder_mixed.h"

/* ---- Setup --------------------------------------------------------------------------------- */
void stk__mixed_hw_open(mixed_state *s) {
  const stk__nvjpeg_api *a = s->api;
  /* The hardware engines are optional (A100/H100 and later). One handle: submissions on several
   * did not overlap on the engines any better. */
  int ok = mixed_nv_ok(stk__mixed_handle_create(s, NVJPEG_BACKEND_HARDWARE, &s->hw_handle));
  for (int k = 0; ok && k < MIXED_HW_SETS; k++) {
    s->hw[k].handle = s->hw_handle;
    ok = mixed_nv_ok(a->JpegStateCreate(s->hw[k].handle, &s->hw[k].state));
  }
  if (!ok || !mixed_nv_ok(a->GetHardwareDecoderInfo(s->hw_handle, &s->hw_engines, &s->hw_cores)) ||
      s->hw_engines == 0) {
    stk__mixed_hw_close(s);
    return;
  }
  s->hw_roi = a->DecodeBatchedEx != NULL; /* else whole images into scratch, then cut */
  /* The engines' memory pool up front (its sizes are hints; the pool grows as needed). */
  for (int k = 0; a->DecodeBatchedPreAllocate && k < MIXED_HW_SETS; k++)
    a->DecodeBatchedPreAllocate(s->hw[k].handle, s->hw[k].state, 1, 1, 1, NVJPEG_CSS_444, s->format);
}

/* Waits for what set h's streams still have queued: the engines' batch, the lanes' join. */
static void set_synchronize(const mixed_hw_set *h) {
  if (h->stream) cudaStreamSynchronize(h->stream);
  if (h->join) cudaStreamSynchronize(h->join);
}

void stk__mixed_hw_close(mixed_state *s) {
  const stk__nvjpeg_api *a = s->api;
  for (int k = 0; k < MIXED_HW_SETS; k++) set_synchronize(&s->hw[k]); /* the engines and lanes may still work */
  for (int k = 0; k < MIXED_HW_SETS; k++) {
    mixed_hw_set *h = &s->hw[k];
    for (int q = 0; q < h->params_capacity; q++) a->DecodeParamsDestroy(h->params[q]);
    free(h->params);
    h->params = NULL;
    h->params_capacity = 0;
    if (h->state) a->JpegStateDestroy(h->state);
    h->state = NULL;
  }
  if (s->hw_handle) a->Destroy(s->hw_handle);
  for (int k = 0; k < MIXED_HW_SETS; k++) s->hw[k].handle = NULL;
  s->hw_handle = NULL;
  s->hw_engines = 0;
}

stk_status stk__mixed_hw_sets_create(mixed_state *s) {
  if (pthread_mutex_init(&s->set_lock, NULL) != 0) return STK_ENOMEM;
  if (pthread_cond_init(&s->set_freed, NULL) != 0) {
    pthread_mutex_destroy(&s->set_lock);
    return STK_ENOMEM;
  }
  s->set_lock_made = 1;
  for (int k = 0; k < MIXED_HW_SETS; k++)
    if (stk__gpu_stream_create((void **)&s->hw[k].stream, s->stream_priority) != STK_OK ||
        stk__gpu_event_create((void **)&s->hw[k].done) != STK_OK ||
        stk__gpu_event_create((void **)&s->hw[k].lanes_done) != STK_OK ||
        stk__gpu_stream_create((void **)&s->hw[k].join, s->stream_priority) != STK_OK)
      return STK_ECUDA;
  return STK_OK;
}

void stk__mixed_hw_sets_free(mixed_state *s) {
  for (int k = 0; k < MIXED_HW_SETS; k++) set_synchronize(&s->hw[k]);
  for (int k = 0; k < MIXED_HW_SETS; k++) {
    mixed_hw_set *h = &s->hw[k];
    if (h->done) cudaEventDestroy(h->done);
    if (h->lanes_done) cudaEventDestroy(h->lanes_done);
    if (h->stream) cudaStreamDestroy(h->stream);
    if (h->join) cudaStreamDestroy(h->join);
    stk__gpu_pinned_free(h->staging);
    mixed_host_recount(s, &h->host_counted, 0);
    stk__gpu_free(h->scratch, NULL); /* its stream was synchronized above */
    stk__gpu_arena_free(&h->crop_arena);
    free(h->data);
    free(h->lengths);
    free(h->dest);
    free(h->index);
    free(h->jobs);
    free(h->room);
    h->jobs = NULL;
    h->room = NULL;
  }
  if (s->set_lock_made) {
    pthread_cond_destroy(&s->set_freed);
    pthread_mutex_destroy(&s->set_lock);
    s->set_lock_made = 0;
  }
}

/* ---- Submission ------------------------------------------------------------------------------ */
/* Grows a pinned (host) or device buffer to at least `bytes` with headroom; counted. */
static stk_status grow(void **buf, size_t *capacity, size_t bytes, int pinned, int numa_node, uint64_t *alloc_count) {
  if (bytes <= *capacity) return STK_OK;
  void *p = NULL;
  size_t want = bytes + bytes / 4 + 4096;
  stk_status st =
      pinned ? stk__gpu_pinned_alloc(&p, want, numa_node, NULL, alloc_count) : stk__gpu_malloc(&p, want, alloc_count);
  if (st != STK_OK) return st;
  if (pinned) stk__gpu_pinned_free(*buf);
  else stk__gpu_free(*buf, NULL); /* callers waited for the work that read it */
  *buf = p;
  *capacity = want;
  return STK_OK;
}

/* 1 when the batch goes through DecodeBatchedEx: window decodes (s->hw_roi). */
static int uses_params(const mixed_state *s) { return s->random_crop && s->hw_roi; }

/* DecodeBatchedEx's decode-parameters objects, one per image, m of them (grow-only, counted). */
static stk_status params_reserve(const mixed_state *s, mixed_hw_set *h, int m, uint64_t *alloc_count) {
  if (!uses_params(s) || m <= h->params_capacity) return STK_OK;
  nvjpegDecodeParams_t *grown = (nvjpegDecodeParams_t *)realloc(h->params, (size_t)m * sizeof *grown);
  if (!grown) return STK_ENOMEM;
  h->params = grown;
  for (; h->params_capacity < m; h->params_capacity++) {
    if (!mixed_nv_ok(s->api->DecodeParamsCreate(h->handle, &h->params[h->params_capacity]))) return STK_ENVJPEG;
    s->api->DecodeParamsSetOutputFormat(h->params[h->params_capacity], s->format);
  }
  if (alloc_count) __atomic_fetch_add(alloc_count, 1, __ATOMIC_RELAXED);
  return STK_OK;
}

/* DecodeBatched's per-image arrays for m images (grow-only, counted). */
static stk_status arrays_reserve(mixed_hw_set *h, int m, uint64_t *alloc_count) {
  if (m <= h->capacity) return STK_OK;
  free(h->data);
  free(h->lengths);
  free(h->dest);
  free(h->index);
  h->data = (const unsigned char **)calloc((size_t)m, sizeof *h->data);
  h->lengths = (size_t *)calloc((size_t)m, sizeof *h->lengths);
  h->dest = (nvjpegImage_t *)calloc((size_t)m, sizeof *h->dest);
  h->index = (int *)calloc((size_t)m, sizeof *h->index);
  if (!h->data || !h->lengths || !h->dest || !h->index) {
    h->capacity = 0;
    return STK_ENOMEM;
  }
  h->capacity = m;
  if (alloc_count) __atomic_fetch_add(alloc_count, 1, __ATOMIC_RELAXED);
  return STK_OK;
}

/* The engines' entries in submission order, into h->index: the batch's STK__JPEG_ROUTE_HW jobs in
 * batch order. */
static void hw_order(mixed_hw_set *h, const mixed_job *jobs, int n) {
  int m = 0;
  for (int i = 0; i < n; i++)
    if (jobs[i].route == STK__JPEG_ROUTE_HW) h->index[m++] = i;
}

/* Fills DecodeBatched's arrays for the m entries of h->index: source bytes (in place when pinned,
 * else copied into staging) and destination: the output slot (a window decode's too, its window in
 * the parameters), else full images in scratch for random crops, cut afterwards, `stride` apart. */
static void fill_batch(const mixed_state *s, mixed_hw_set *h, const mixed_job *jobs, int n, int m, size_t stride) {
  size_t at = 0, scratch_at = 0;
  hw_order(h, jobs, n);
  for (int k = 0; k < m; k++) {
    const mixed_job *j = &jobs[h->index[k]];
    if (j->pinned) {
      h->data[k] = j->data;
    } else {
      memcpy(h->staging + at, j->data, j->size);
      h->data[k] = h->staging + at;
      at += j->size;
    }
    h->lengths[k] = j->size;
    memset(&h->dest[k], 0, sizeof h->dest[k]);
    if (s->random_crop && s->hw_roi) { /* the window, straight into the output slot */
      s->api->DecodeParamsSetROI(h->params[k], j->plan.crop.x, j->plan.crop.y, j->plan.crop.w, j->plan.crop.h);
      h->dest[k].channel[0] = j->out;
      h->dest[k].pitch[0] = (size_t)j->out_w * s->channels;
      continue;
    }
    if (s->random_crop) { /* full image into scratch, cropped afterwards */
      h->dest[k].channel[0] = (unsigned char *)h->scratch + scratch_at;
      h->dest[k].pitch[0] = (size_t)j->plan.info.width * s->channels;
      scratch_at += stride;
    } else {
      h->dest[k].channel[0] = j->out;
      h->dest[k].pitch[0] = (size_t)j->out_w * s->channels;
    }
  }
}

/* tuning.engine_calls > 0: at most that many batched engine calls at once (nvJPEG's hardware call
 * returns when the engines are done, so a call in flight is the engines at work). An A/B of whether
 * a second call in flight slows large images (docs/tuning.md); the output is the same. */
static void engine_call_begin(mixed_state *s) {
  if (s->tuning.engine_calls <= 0) return;
  pthread_mutex_lock(&s->set_lock);
  while (s->engine_calls >= s->tuning.engine_calls) pthread_cond_wait(&s->set_freed, &s->set_lock);
  s->engine_calls++;
  pthread_mutex_unlock(&s->set_lock);
}

static void engine_call_end(mixed_state *s) {
  if (s->tuning.engine_calls <= 0) return;
  pthread_mutex_lock(&s->set_lock);
  s->engine_calls--;
  pthread_cond_broadcast(&s->set_freed);
  pthread_mutex_unlock(&s->set_lock);
}

/* Submits the batch's STK__JPEG_ROUTE_HW jobs to the engines on set h. */
static stk_status hw_submit(mixed_state *s, mixed_hw_set *h, mixed_job *jobs, int n, size_t stride,
                            uint64_t *alloc_count, int *hw_count) {
  int m = 0;
  size_t bytes = 0;
  for (int i = 0; i < n; i++)
    if (jobs[i].route == STK__JPEG_ROUTE_HW) {
      m++;
      if (!jobs[i].pinned) bytes += jobs[i].size;
    }
  /* Random crops without window decodes: one full image per job of the part, `stride` (the largest
   * image so far) apart for every job of the batch, so the scratch settles with the data set's
   * largest image, not with each batch's mix. */
  size_t scratch = 0;
  if (s->random_crop && !s->hw_roi) scratch = (size_t)n * stride;
  *hw_count = m;
  if (m == 0) return STK_OK;
  uint64_t t0 = s->tuning.trace ? stk__now_ns() : 0;
  if (h->pending) cudaEventSynchronize(h->done); /* its buffers still read by the batch before last? */
  uint64_t t1 = s->tuning.trace ? stk__now_ns() : 0;
  h->pending = 0;
  stk_status st = arrays_reserve(h, m, alloc_count);
  if (st == STK_OK) st = params_reserve(s, h, m, alloc_count);
  if (st == STK_OK) st = grow((void **)&h->staging, &h->staging_capacity, bytes, 1, s->numa_node, alloc_count);
  mixed_host_recount(s, &h->host_counted, h->staging_capacity);
  if (st == STK_OK) st = grow(&h->scratch, &h->scratch_capacity, scratch, 0, -1, alloc_count);
  if (st != STK_OK) return st;
  fill_batch(s, h, jobs, n, m, stride);
  const stk__nvjpeg_api *a = s->api;
  const int measuring = stk__mixed_route_measuring(s); /* the router's calibration: engine busy time */
  const double busy_from = measuring ? stk__now() : 0.0;
  engine_call_begin(s);
  nvjpegStatus_t nst = a->DecodeBatchedInitialize(h->handle, h->state, m, 1, s->format);
  if (mixed_nv_ok(nst))
    nst = uses_params(s) ? a->DecodeBatchedEx(h->handle, h->state, h->data, h->lengths, h->dest, h->params, h->stream)
                         : a->DecodeBatched(h->handle, h->state, h->data, h->lengths, h->dest, h->stream);
  engine_call_end(s);
  cudaEventRecord(h->done, h->stream);
  h->pending = 1;
  if (measuring && mixed_nv_ok(nst) && cudaEventSynchronize(h->done) == cudaSuccess)
    stk__mixed_route_engine(s, busy_from, stk__now(), m); /* the submission to the engines' last image */
  if (s->tuning.trace) {
    __atomic_fetch_add(&s->trace.hw_set_wait, t1 - t0, __ATOMIC_RELAXED);
    __atomic_fetch_add(&s->trace.hw_decode_call, stk__now_ns() - t1, __ATOMIC_RELAXED);
  }
  if (!mixed_nv_ok(nst)) {
    /* The engines refused the batch: every one of its images goes to the CPU instead. */
    cudaStreamSynchronize(h->stream);
    for (int q = 0; q < m; q++) jobs[h->index[q]].route = STK__JPEG_ROUTE_CPU;
    *hw_count = 0;
  }
  return STK_OK;
}

/* Crops the hardware-decoded full images of a random-crop batch into the outputs. */
static stk_status hw_crop(mixed_state *s, mixed_hw_set *h, mixed_job *jobs, int hw_count, uint64_t *alloc_count) {
  if (!s->random_crop || s->hw_roi || hw_count == 0) return STK_OK;
  stk_status st = stk__gpu_arena_reserve(&h->crop_arena, (size_t)hw_count * sizeof(stk__gpu_crop_desc) + 64,
                                         s->numa_node, alloc_count);
  if (st != STK_OK) return st;
  size_t at = stk__gpu_arena_push(&h->crop_arena, (size_t)hw_count * sizeof(stk__gpu_crop_desc));
  stk__gpu_crop_desc *d = (stk__gpu_crop_desc *)(h->crop_arena.host + at);
  int max_w = 0, max_h = 0;
  for (int q = 0; q < hw_count; q++) {
    const mixed_job *j = &jobs[h->index[q]];
    d[q].src = h->dest[q].channel[0];
    d[q].src_stride = (int)h->dest[q].pitch[0];
    d[q].x = j->plan.crop.x;
    d[q].y = j->plan.crop.y;
    d[q].w = j->plan.crop.w;
    d[q].h = j->plan.crop.h;
    d[q].channels = s->channels;
    d[q].dst = j->out;
    if (j->plan.crop.w > max_w) max_w = j->plan.crop.w;
    if (j->plan.crop.h > max_h) max_h = j->plan.crop.h;
  }
  st = stk__gpu_arena_upload(&h->crop_arena, h->stream);
  if (st != STK_OK) return st;
  st = stk__gpu_crop_u8_batch((const stk__gpu_crop_desc *)(h->crop_arena.device + at), hw_count, max_w, max_h,
                              h->stream);
  if (st == STK_OK && cudaEventRecord(h->done, h->stream) != cudaSuccess) st = STK_ECUDA;
  return st;
}

/* The batch's hardware submission and crop, run on a worker (pinned next to the GPU). */
typedef struct hw_work {
  mixed_state *s;
  mixed_hw_set *h;
  size_t stride;
  uint64_t *alloc_count;
} hw_work;

static stk_status hw_task(void *arg, int k, int thread_index) {
  (void)k, (void)thread_index;
  hw_work *w = (hw_work *)arg;
  if (stk__gpu_set_device(w->s->device_id) != STK_OK) return STK_ECUDA;
  stk_status st = hw_submit(w->s, w->h, w->h->jobs, w->h->n, w->stride, w->alloc_count, &w->h->hw_count);
  if (st == STK_OK) st = hw_crop(w->s, w->h, w->h->jobs, w->h->hw_count, w->alloc_count);
  return st;
}

/* Made on a worker either way: by prepare_batch (the executor's prepare task, so the GPU stage
 * goes on with other batches while the engines' submission blocks: it blocks for as long as the
 * engines decode), or from run_batch as a one-item parallel_for that the GPU stage waits for (a
 * worker, pinned next to the GPU, submits faster than the GPU stage thread). */
stk_status stk__mixed_hw_run(const stk__op *op, mixed_state *s, stk__batch_ctx *ctx, mixed_hw_set *h, size_t stride,
                             int on_worker) {
  hw_work hw = {s, h, stride, ctx->alloc_count};
  h->hw_count = 0;
  int any_hw = 0;
  for (int i = 0; i < h->n && !any_hw; i++) any_hw = h->jobs[i].route == STK__JPEG_ROUTE_HW;
  if (!any_hw) return STK_OK;
  stk_status st = on_worker ? hw_task(&hw, 0, 0) : stk__parallel_for(ctx, 1, hw_task, &hw);
  if (st != STK_OK)
    stk__errorf(ctx->err, ctx->err_size, "%s: hardware decode submission failed (%s)", mixed_op_label(op),
                stk_strerror(st));
  return st;
}

/* ---- The sets as batch slots ------------------------------------------------------------------ */
mixed_hw_set *stk__mixed_set_acquire(mixed_state *s, uint64_t seq) {
  pthread_mutex_lock(&s->set_lock);
  for (;;) {
    for (int k = 0; k < MIXED_HW_SETS; k++) { /* the lowest-numbered free set */
      if (s->hw[k].seq) continue;
      s->hw[k].seq = seq;
      s->hw[k].prepared = 0;
      pthread_mutex_unlock(&s->set_lock);
      return &s->hw[k];
    }
    pthread_cond_wait(&s->set_freed, &s->set_lock); /* every set held by an earlier batch */
  }
}

mixed_hw_set *stk__mixed_set_find(mixed_state *s, uint64_t seq, int prepared) {
  mixed_hw_set *found = NULL;
  pthread_mutex_lock(&s->set_lock);
  for (int k = 0; k < MIXED_HW_SETS && !found; k++)
    if (s->hw[k].seq == seq && (!prepared || s->hw[k].prepared)) found = &s->hw[k];
  pthread_mutex_unlock(&s->set_lock);
  return found;
}

void stk__mixed_set_release(mixed_state *s, mixed_hw_set *h) {
  pthread_mutex_lock(&s->set_lock);
  h->seq = 0;
  h->prepared = 0;
  pthread_cond_broadcast(&s->set_freed);
  pthread_mutex_unlock(&s->set_lock);
}

stk_status stk__mixed_set_jobs(mixed_hw_set *h, int n, uint64_t *alloc_count) {
  if (n <= h->jobs_capacity) return STK_OK;
  mixed_job *grown = (mixed_job *)realloc(h->jobs, (size_t)n * sizeof *grown);
  if (!grown) return STK_ENOMEM;
  h->jobs = grown;
  size_t *room = (size_t *)realloc(h->room, (size_t)n * sizeof *room);
  if (!room) return STK_ENOMEM; /* jobs_capacity stays: the next call grows both again */
  h->room = room;
  h->jobs_capacity = n;
  if (alloc_count) __atomic_fetch_add(alloc_count, 1, __ATOMIC_RELAXED);
  return STK_OK;
}
