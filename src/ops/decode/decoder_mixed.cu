/* src/ops/decode/decoder_mixed.cu: decoders.image and decoders.image_random_crop with
 * device="mixed": encoded bytes on the host in, HWC u8 images on the GPU out. This file is the
 * operator shell; the decode paths are its neighbours (decoder_mixed.h lists the files):
 *   - the GPU's hardware JPEG engines, one batched submission per batch (decoder_mixed_hw.cu);
 *   - libjpeg-turbo on the pinned worker threads in the CPU pre-stage (run_sample, here): the
 *     images the engines do not take are decoded (window only) into pinned stage tensors while
 *     earlier batches are on the GPU, then uploaded by DMA (decoder_mixed_lanes.cu);
 *   - nvJPEG's CUDA and hybrid decoders on worker lanes when there is no pre-stage (the operator
 *     used on its own), and the CUDA decoder for cuda_decoder_load's share of the non-engine
 *     baseline images when there is one, with libjpeg-turbo + upload as the last resort for what
 *     nvJPEG refuses (decoder_mixed_lanes.cu).
 * Each image is planned once -- header, window, route (src/ops/decode/jpeg_route.h) -- by the
 * pre-stage in a pipeline, which hands the plan to run_batch in the sample's stage tensor
 * (stage_record), or by run_batch when there is no pre-stage. Routing depends on the header, the
 * position in the batch, cuda_decoder_load and the batch's hw_decoder_load only: the user's, or
 * the automatic router's, a function of the batch's number and a decision recorded once per
 * process (decoder_mixed_router.cu), so one seed gives the same bytes on every run of a process,
 * and across processes where the decision is the same or hw_decoder_load is pinned. Arguments and windows are the CPU decoder's (stk__decoder_params_get /
 * stk__decoder_crop_window); hint_size is ignored (exact windows). With options.skip_bad_files a
 * file that is not a JPEG or that libjpeg rejects becomes a copy of the nearest good sample and is
 * counted in stats->skipped_files (else: STK_EBADIMAGE naming the file).
 * Hot path: run_sample per sample on the workers, run_batch per batch on the GPU stage. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ops/decode/decoder_mixed.h"
#include "ops/decode/image_route.h" /* PNG, WebP, BMP, TIFF, PNM: planned and decoded on the CPU */

/* ---- Setup --------------------------------------------------------------------------------- */
static void nvjpeg_teardown(mixed_state *s) {
  const stk__nvjpeg_api *a = s->api;
  if (!a) return;
  stk__mixed_hw_close(s);
  for (int k = 0; k < 2; k++)
    if (s->decoder[k]) a->DecoderDestroy(s->decoder[k]);
  if (s->handle) a->Destroy(s->handle);
  s->decoder[0] = s->decoder[1] = NULL;
  s->handle = NULL;
}

/* Brings up nvJPEG (the decoupled decoders, then the engines when the GPU has them); any failure
 * leaves s->api NULL and a note saying why (CPU decoding then). */
static void nvjpeg_setup(mixed_state *s) {
  char why[400] = "";
  const stk__nvjpeg_api *a = stk__nvjpeg_load(why, sizeof why);
  if (!a) {
    snprintf(s->nvjpeg_note, sizeof s->nvjpeg_note, "%s; decoding on the CPU", why);
    return;
  }
  s->api = a;
  stk__mixed_alloc_open(s);
  nvjpegStatus_t st = stk__mixed_handle_create(s, NVJPEG_BACKEND_DEFAULT, &s->handle);
  if (mixed_nv_ok(st)) st = a->DecoderCreate(s->handle, NVJPEG_BACKEND_GPU_HYBRID, &s->decoder[0]);
  if (mixed_nv_ok(st)) st = a->DecoderCreate(s->handle, NVJPEG_BACKEND_HYBRID, &s->decoder[1]);
  if (!mixed_nv_ok(st)) {
    snprintf(s->nvjpeg_note, sizeof s->nvjpeg_note, "nvJPEG initialisation failed (%s); decoding on the CPU",
             stk__nvjpeg_status_name(st));
    nvjpeg_teardown(s);
    s->api = NULL;
    return;
  }
  stk__mixed_hw_open(s);
}

/* The decoder's knobs (src/base/tuning.c; stk__tuning_check refused bad values at build). */
static void read_tuning(mixed_hw_tuning *t) {
  t->trace = stk__tuning_int(STK__KNOB_MIXED_TRACE) != 0;
  t->alloc = stk__tuning_int(STK__KNOB_MIXED_ALLOC) != 0;
  t->pin_reserve = (int)stk__tuning_int(STK__KNOB_MIXED_PIN_RESERVE);
  t->engine_calls = (int)stk__tuning_int(STK__KNOB_ENGINE_CALLS);
}

/* Device, arguments and output format: everything init decides before creating GPU objects. */
static stk_status read_options(stk__op *op, mixed_state *s, char *err, size_t err_size) {
  s->device_id = op->options && op->options->device_id >= 0 ? op->options->device_id : 0;
  if (stk__gpu_set_device(s->device_id) != STK_OK) {
    stk__errorf(err, err_size, "%s: CUDA device %d cannot be used", mixed_op_label(op), s->device_id);
    return STK_ENODEV;
  }
  s->numa_node = stk__gpu_device_numa_node(s->device_id);
  if (s->numa_node < 0) s->numa_node = 0;
  stk_status pst = stk__decoder_params_get(op, &s->params, err, err_size);
  if (pst == STK_OK) pst = stk__decoder_verified_open(&s->params, err, err_size);
  if (pst != STK_OK) return pst;
  s->color = s->params.color;
  s->skip_bad_files = op->options ? op->options->skip_bad_files : 0;
  s->host_budget = op->host_budget;
  s->channels = s->color == STK__COLOR_GRAY ? 1 : 3;
  s->format = s->color == STK__COLOR_GRAY  ? NVJPEG_OUTPUT_Y
              : s->color == STK__COLOR_BGR ? NVJPEG_OUTPUT_BGRI
                                           : NVJPEG_OUTPUT_RGBI;
  s->stream_priority = op->options ? op->options->stream_priority : STK_STREAM_PRIORITY_HIGH;
  /* hw_decoder_load: stk__mixed_route_init, once the engines are known */
  s->router.cuda_load = stk__jpeg_hw_load_clamp(stk__arg_float(op, "cuda_decoder_load"));
  read_tuning(&s->tuning);
  s->router.channels = s->channels;
  return STK_OK;
}

static stk_status mixed_init_common(stk__op *op, int random_crop, char *err, size_t err_size) {
  mixed_state *s = (mixed_state *)calloc(1, sizeof *s);
  if (!s) return STK_ENOMEM;
  op->state = s;
  s->random_crop = random_crop;
  stk_status st = read_options(op, s, err, err_size);
  if (st != STK_OK) return st;
  if (s->tuning.pin_reserve > 0 &&
      stk__gpu_pinned_reserve((size_t)s->tuning.pin_reserve << 20, s->numa_node, NULL) != STK_OK)
    fprintf(stderr, "stoker: STOKER_MIXED_PIN_RESERVE=%d MiB could not be pinned; going on without\n",
            s->tuning.pin_reserve);
  nvjpeg_setup(s);
  s->router.nvjpeg = s->api != NULL;
  s->router.hw_engines = s->hw_handle != NULL;
  st = stk__mixed_route_init(op, s, err, err_size);
  if (st != STK_OK) return st;
  if (s->nvjpeg_note[0] && op->options && op->options->verbose)
    fprintf(stderr, "stoker: %s: %s\n", mixed_op_label(op), s->nvjpeg_note);
  if (stk__mixed_hw_sets_create(s) != STK_OK) {
    stk__errorf(err, err_size, "%s: could not create CUDA streams/events", mixed_op_label(op));
    return STK_ECUDA;
  }
  return stk__mixed_lanes_create(op, s, err, err_size);
}

static void mixed_destroy(stk__op *op) {
  mixed_state *s = (mixed_state *)op->state;
  if (!s) return;
  if (s->tuning.trace && s->trace.batches) {
    const mixed_trace *t = &s->trace;
    double b = (double)t->batches * 1e6;
    fprintf(stderr,
            "stoker: %s trace over %llu batches, ms per batch: run_batch %.2f (plan and submit there %.2f, "
            "lanes %.2f); engine submission: set wait %.2f, DecodeBatched call %.2f\n",
            mixed_op_label(op), (unsigned long long)t->batches, t->run_batch / b, t->plan / b, t->lanes / b,
            t->hw_set_wait / b, t->hw_decode_call / b);
  }
  stk__mixed_lanes_destroy(s);
  nvjpeg_teardown(s); /* waits for the engines first */
  stk__mixed_route_destroy(s);
  stk__mixed_alloc_close(s);
  stk__mixed_hw_sets_free(s);
  stk__decoder_verified_close(&s->params);
  free(s);
  op->state = NULL;
}

/* init cleans up after itself on failure (the engine never calls destroy after a failed init). */
static stk_status mixed_init_image(stk__op *op, char *err, size_t err_size) {
  stk_status st = mixed_init_common(op, 0, err, err_size);
  if (st != STK_OK) mixed_destroy(op);
  return st;
}
static stk_status mixed_init_random_crop(stk__op *op, char *err, size_t err_size) {
  stk_status st = mixed_init_common(op, 1, err, err_size);
  if (st != STK_OK) mixed_destroy(op);
  return st;
}

/* validate_entropy: a file the plan refuses (its marker structure, jpeg_route.c) takes the CPU
 * decoder's reason when libjpeg-turbo refuses it too, so skip_bad_files records what the CPU
 * decoder records; a file only the plan refuses keeps the plan's reason. Bad files only. */
static stk_status plan_failure_reason(const mixed_state *s, stk_status st, const void *data, size_t size, char *err,
                                      size_t err_size) {
  char cpu[512];
  if (st == STK_EBADIMAGE && s->params.validate_entropy && !stk__image_is_cpu_format((const uint8_t *)data, size) &&
      stk__jpeg_check_entropy((const uint8_t *)data, size, cpu, sizeof cpu) == STK_EBADIMAGE)
    stk__errorf(err, err_size, "%s", cpu); /* cut to err_size, as every message is */
  return st;
}

/* ---- CPU pre-stage (run_sample, on a worker inside the sample's CPU chain) -------------------- */
/* This thread's CPU seconds (the automatic router's calibration times the CPU decodes with it). */
static double thread_cpu_s(void) { return stk__clock_seconds(CLOCK_THREAD_CPUTIME_ID); }

/* Plans the image (the only time its header is parsed) and leaves the plan in the stage tensor's
 * stage_record for run_batch. Decodes the images routed to the CPU into their pinned stage tensor
 * (HWC u8, the window only); for every other image the stage is left empty (ndim 0, nbytes 0). */
static stk_status mixed_run_sample(stk__op *op, stk__sample_ctx *ctx, stk__tensor *const *inputs,
                                   stk__tensor *const *outputs) {
  mixed_state *s = (mixed_state *)op->state;
  const stk__tensor *in = inputs[0];
  stk__tensor *stage = outputs[0];
  stk__jpeg_plan plan;
  stk__jpeg_router router = s->router; /* the load of this sample's batch (automatic: by its number) */
  stk__mixed_route_apply(s, ctx->batch_seq, &router);
  stk_status st = stk__image_plan_make(&router, &s->params, op->id, ctx->epoch, ctx->sample_id, ctx->sample_in_batch, 1,
                                       (const uint8_t *)in->data, in->nbytes, &plan, ctx->err, ctx->err_size);
  if (st != STK_OK) return plan_failure_reason(s, st, in->data, in->nbytes, ctx->err, ctx->err_size);
  stk__jpeg_plan_store(stage, &plan);
  if (plan.route != STK__JPEG_ROUTE_CPU) stk__mixed_route_image(s, ctx->batch_seq, &plan.info, -1.0);
  if (plan.route != STK__JPEG_ROUTE_CPU) {
    /* validate_entropy: nvJPEG decodes corrupt entropy-coded data without an error, so libjpeg-turbo
     * reads it here first; a corrupt file fails this sample exactly as the CPU decoder fails it. */
    if (s->params.validate_entropy) {
      st = stk__jpeg_check_entropy_once((const uint8_t *)in->data, in->nbytes, s->params.verified, ctx->err,
                                        ctx->err_size);
      if (st != STK_OK) return st;
    }
    stage->ndim = 0;
    stage->nbytes = 0;
    return STK_OK;
  }
  /* Room for the whole image first: the stage's size then follows the data set's image sizes, not
   * the random windows, and settles after warm-up (no pinned allocation in steady state). */
  int64_t full[3] = {plan.info.height, plan.info.width, s->channels};
  stk_status rs = stk__tensor_resize(stage, STK_DTYPE_UINT8, 3, full, "HWC");
  if (rs != STK_OK) return rs;
  const int measuring = stk__mixed_route_measuring(s);
  const double cpu0 = measuring ? thread_cpu_s() : 0.0;
  rs = stk__image_decode_plain((const uint8_t *)in->data, in->nbytes, s->color, s->random_crop ? &plan.crop : NULL,
                               s->params.verified, stage, ctx->err, ctx->err_size);
  stk__mixed_route_image(s, ctx->batch_seq, &plan.info, measuring && rs == STK_OK ? thread_cpu_s() - cpu0 : -1.0);
  return rs;
}

/* ---- Bad files under skip_bad_files ---------------------------------------------------------- */
/* The good sample a failed one copies. An executor fill (`replaced`: skip_bad_files refilled the
 * batch, good samples first, and the rest became copies of good ones in every CPU list) copies the
 * good sample of the same data-set sample, so its pixels match its other outputs (label, ...).
 * A sample that failed here (a bad file the operator met itself) copies the nearest good sample,
 * lower index on ties. -1: none. */
static int replacement_of(const stk__batch_ctx *ctx, const mixed_job *jobs, int n, int i) {
  const stk__sample_plan *sp =
      ctx->plan && ctx->plan->samples && n <= ctx->plan->batch_size ? ctx->plan->samples : NULL;
  if (jobs[i].replaced && sp)
    for (int g = 0; g < n; g++)
      if (!jobs[g].failed && sp[g].sample_id == sp[i].sample_id && sp[g].file_index == sp[i].file_index) return g;
  for (int d = 1; d < n; d++) {
    if (i - d >= 0 && !jobs[i - d].failed) return i - d;
    if (i + d < n && !jobs[i + d].failed) return i + d;
  }
  return -1;
}

/* Every failed sample becomes a copy of a good one (replacement_of), or a view of it where the copy
 * would not fit (below); the copies are queued on the consumer's stream after it waited for the
 * decoders. *skipped = number of failed samples. All
 * failed: STK_EBADIMAGE naming the first. */
static stk_status replace_failed(const stk__op *op, stk__batch_ctx *ctx, mixed_state *s, mixed_job *jobs,
                                 const size_t *room, stk__tensor_list *out, int n, uint64_t *skipped) {
  *skipped = 0;
  int copies = 0;
  cudaStream_t stream = (cudaStream_t)ctx->cuda_stream;
  for (int i = 0; i < n; i++) {
    if (!jobs[i].failed) continue;
    copies++;
    int good = replacement_of(ctx, jobs, n, i);
    if (good < 0) {
      stk__errorf(ctx->err, ctx->err_size, "%s: every sample of the batch is a bad file (first: %s)",
                  mixed_op_label(op), mixed_source_of(ctx, i));
      return STK_EBADIMAGE;
    }
    stk__tensor *bad = &out->samples[i];
    const stk__tensor *src = &out->samples[good];
    void *data = bad->data;
    *bad = *src;
    /* A sample known bad when the batch was planned has the batch's largest room (setup_jobs); one
     * found bad while decoding (a lane's libjpeg-turbo) has its own image's, which a larger
     * replacement would overrun: that one shares the replacement's pixels (the list is ragged
     * then, its images differing in size). */
    if (src->nbytes <= room[i]) bad->data = data;
    if (bad->data == data &&
        cudaMemcpyAsync(data, src->data, src->nbytes, cudaMemcpyDeviceToDevice, stream) != cudaSuccess) {
      stk__errorf(ctx->err, ctx->err_size, "%s: copying a replacement for %s failed", mixed_op_label(op),
                  mixed_source_of(ctx, i));
      return STK_ECUDA;
    }
    if (jobs[i].replaced) continue;
    (*skipped)++;
    if (op->options && op->options->verbose)
      fprintf(stderr, "stoker: %s: skipped bad file %s\n", mixed_op_label(op), mixed_source_of(ctx, i));
  }
  if (copies) stk__gpu_tensor_list_settle(out);
  return STK_OK;
}

/* ---- run_batch --------------------------------------------------------------------------------- */
/* The plan of image i: the pre-stage's (ctx->stage), else made here (the operator on its own). A
 * bad file under skip_bad_files returns STK_OK with the job marked failed. */
static stk_status job_plan(stk__op *op, stk__batch_ctx *ctx, mixed_state *s, const stk__tensor *t, int i,
                           mixed_job *j) {
  int64_t sample_id =
      ctx->plan && ctx->plan->samples && i < ctx->plan->batch_size ? ctx->plan->samples[i].sample_id : i;
  char err[256] = "";
  stk_status st;
  if (ctx->stage)
    st = i < ctx->stage->count ? stk__jpeg_plan_load(&ctx->stage->samples[i], sample_id, &j->plan, err, sizeof err)
                               : STK_EINTERNAL;
  else {
    stk__jpeg_router router = s->router;
    stk__mixed_route_apply(s, ctx->batch_seq, &router);
    st = stk__image_plan_make(&router, &s->params, op->id, ctx->epoch, sample_id, i, 0, (const uint8_t *)t->data,
                             t->nbytes, &j->plan, err, sizeof err);
    st = plan_failure_reason(s, st, t->data, t->nbytes, err, sizeof err);
    /* No pre-stage (the operator on its own): validate_entropy's check runs here, for the images
     * nvJPEG decodes (the CPU route's libjpeg-turbo decode checks the others). */
    if (st == STK_OK && s->params.validate_entropy && j->plan.route != STK__JPEG_ROUTE_CPU)
      st = stk__jpeg_check_entropy_once((const uint8_t *)t->data, t->nbytes, s->params.verified, err, sizeof err);
  }
  if (st == STK_EBADIMAGE && s->skip_bad_files) {
    j->failed = 1;
    j->route = STK__JPEG_ROUTE_FAILED;
    return STK_OK;
  }
  if (st != STK_OK) {
    stk__errorf(ctx->err, ctx->err_size, "%s: %s: %s", mixed_op_label(op), mixed_source_of(ctx, i),
                err[0] ? err : "the CPU pre-stage did not run for this sample");
    return st;
  }
  j->data = (const uint8_t *)t->data;
  j->size = t->nbytes;
  j->pinned = t->pinned;
  j->route = j->plan.route;
  j->out_w = j->plan.crop.w;
  j->out_h = j->plan.crop.h;
  return STK_OK;
}

/* Jobs for the batch: plans, output sizes, and the pre-stage's pixels when there is one. room[i]:
 * image i's bytes in the output list, its window 256-aligned (a bad file's: the largest, as its
 * replacement is a copy of another image of the batch);
 * *max_full: the largest whole image, 256-aligned, whatever the rooms (the hardware scratch holds
 * whole images `stride` apart: a window-sized stride overlapped them, which broke crop_rooms). */
static stk_status setup_jobs(stk__op *op, stk__batch_ctx *ctx, mixed_state *s, const stk__tensor_list *in,
                             mixed_job *jobs, size_t *room, size_t *max_full) {
  int n = in->count;
  size_t max_room = 256; /* every room is a multiple of 256, so their largest is too */
  *max_full = 256;
  for (int i = 0; i < n; i++) {
    room[i] = 0;
    mixed_job *j = &jobs[i];
    memset(j, 0, sizeof *j);
    const stk__tensor *t = &in->samples[i];
    if (t->device != STK_DEVICE_CPU) {
      stk__errorf(ctx->err, ctx->err_size, "%s: encoded input must be in host memory", mixed_op_label(op));
      return STK_EINVAL;
    }
    if (ctx->sample_failed && ctx->sample_failed[i]) {
      /* A fill (skip_bad_files): the executor made it a copy of a good sample of the batch, bytes
       * and stage; that sample's decode is copied on the GPU instead (replace_failed). */
      j->failed = j->replaced = 1;
      j->route = STK__JPEG_ROUTE_FAILED;
      continue;
    }
    stk_status st = job_plan(op, ctx, s, t, i, j);
    if (st != STK_OK) return st;
    if (j->failed) continue;
    if (j->route == STK__JPEG_ROUTE_CPU && ctx->stage) {
      const stk__tensor *px = &ctx->stage->samples[i];
      if (px->ndim != 3 || px->shape[0] != j->out_h || px->shape[1] != j->out_w || px->shape[2] != s->channels) {
        stk__errorf(ctx->err, ctx->err_size, "%s: %s: the CPU pre-stage did not decode this sample", mixed_op_label(op),
                    mixed_source_of(ctx, i));
        return STK_EINTERNAL;
      }
      j->staged = px;
    }
    /* Room for the window's own bytes: a batch's sum of 256 random windows varies by a few percent,
     * inside the quarter of headroom the output list grows by, so it settles in warm-up. */
    size_t full = mixed_full_bytes(s, j);
    size_t window = (size_t)j->out_w * (size_t)j->out_h * (size_t)s->channels;
    size_t bytes = (window + 255) & ~(size_t)255;
    room[i] = bytes;
    if (bytes > max_room) max_room = bytes;
    if (full > *max_full) *max_full = full;
  }
  for (int i = 0; i < n; i++)
    if (jobs[i].failed) room[i] = max_room;
  return STK_OK;
}

/* Output slots: each image's room back to back (the batch's sum, not n times its largest image: on
 * 2-3 MP photographs a fifth less device memory per slot), shapes from the plans; the jobs learn
 * their device address. */
static stk_status reserve_outputs(stk__op *op, stk__batch_ctx *ctx, const mixed_state *s, mixed_job *jobs, int n,
                                  const size_t *room, stk__tensor_list *out) {
  stk_status st = stk__gpu_tensor_list_reserve_sizes(out, n, room, ctx->alloc_count);
  if (st != STK_OK) {
    stk__errorf(ctx->err, ctx->err_size, "%s: no device memory for the decoded batch (%s)", mixed_op_label(op),
                stk_strerror(st));
    return st;
  }
  for (int i = 0; i < n; i++) {
    stk__tensor *t = &out->samples[i];
    jobs[i].out = (uint8_t *)t->data;
    t->dtype = STK_DTYPE_UINT8;
    t->ndim = 3;
    t->shape[0] = jobs[i].out_h;
    t->shape[1] = jobs[i].out_w;
    t->shape[2] = s->channels;
    strcpy(t->layout, "HWC");
    t->nbytes = (size_t)jobs[i].out_w * jobs[i].out_h * s->channels;
  }
  stk__gpu_tensor_list_settle(out); /* ragged unless every image has the same size */
  return STK_OK;
}

/* The batch's decode counts by path (bad files skipped are not decoded images). */
static void count_routes(stk__batch_ctx *ctx, const mixed_job *jobs, int n, uint64_t skipped) {
  uint64_t counts[STK__JPEG_ROUTE_COUNT] = {0, 0, 0, 0};
  for (int i = 0; i < n; i++) /* replacements of bad files are copies, not decodes */
    if (!jobs[i].failed) counts[jobs[i].route]++;
  if (!ctx->stats) return;
  __atomic_fetch_add(&ctx->stats->decoded_hw, counts[STK__JPEG_ROUTE_HW], __ATOMIC_RELAXED);
  __atomic_fetch_add(&ctx->stats->decoded_cuda, counts[STK__JPEG_ROUTE_CUDA], __ATOMIC_RELAXED);
  __atomic_fetch_add(&ctx->stats->decoded_hybrid, counts[STK__JPEG_ROUTE_HYBRID], __ATOMIC_RELAXED);
  __atomic_fetch_add(&ctx->stats->decoded_cpu, counts[STK__JPEG_ROUTE_CPU], __ATOMIC_RELAXED);
  __atomic_fetch_add(&ctx->stats->skipped_files, skipped, __ATOMIC_RELAXED);
}

/* Plans batch h->seq into set h (jobs, output slots, the scratch stride) and submits its hardware
 * part: on this worker (prepare_batch) or through a worker (run_batch on its own). prepare_batch
 * also decodes the nvJPEG-lane images on the workers' lanes (one
 * parallel_for with the submission), so their GPU Huffman work overlaps the engines' decode of the
 * same batch and the GPU stage only waits for them. */
static stk_status plan_and_submit(stk__op *op, stk__batch_ctx *ctx, mixed_state *s, mixed_hw_set *h,
                                  const stk__tensor_list *in, stk__tensor_list *out, int on_worker) {
  h->n = in->count;
  h->hw_count = 0;
  h->lanes_pending = 0;
  stk_status st = stk__mixed_set_jobs(h, h->n, ctx->alloc_count);
  size_t max_full = 1;
  if (st == STK_OK) st = setup_jobs(op, ctx, s, in, h->jobs, h->room, &max_full);
  if (st == STK_OK) st = reserve_outputs(op, ctx, s, h->jobs, h->n, h->room, out);
  if (st != STK_OK) return st;
  pthread_mutex_lock(&s->set_lock);
  if (max_full > s->max_image_bytes) s->max_image_bytes = max_full;
  size_t stride = s->max_image_bytes;
  pthread_mutex_unlock(&s->set_lock);
  if (on_worker) return stk__mixed_lanes_early(op, s, ctx, h, stride);
  return stk__mixed_hw_run(op, s, ctx, h, stride, on_worker);
}

/* On a worker, before the GPU stage (op.h): plans the batch and submits its hardware part, which
 * blocks this thread while the engines decode, so the GPU stage is free for the other batches. */
static stk_status mixed_prepare_batch(stk__op *op, stk__batch_ctx *ctx, stk__tensor_list *const *inputs,
                                      stk__tensor_list *const *outputs) {
  mixed_state *s = (mixed_state *)op->state;
  if (!s->hw_handle || !ctx->batch_seq) return STK_OK; /* run_batch does it all */
  mixed_hw_set *h = stk__mixed_set_acquire(s, ctx->batch_seq);
  stk_status st = plan_and_submit(op, ctx, s, h, inputs[0], outputs[0], 1);
  if (st != STK_OK) {
    stk__mixed_set_release(s, h);
    return st;
  }
  pthread_mutex_lock(&s->set_lock);
  h->prepared = 1;
  pthread_mutex_unlock(&s->set_lock);
  return STK_OK;
}

static void mixed_discard_batch(stk__op *op, uint64_t batch_seq) {
  mixed_state *s = (mixed_state *)op->state;
  mixed_hw_set *h = s && batch_seq ? stk__mixed_set_find(s, batch_seq, 0) : NULL;
  if (!h) return;
  if (h->lanes_pending) cudaEventSynchronize(h->lanes_done); /* no stream waits for it: the batch is dropped */
  h->lanes_pending = 0;
  stk__mixed_set_release(s, h);
}

/* The batch's set: the one prepare_batch filled, else one planned and submitted here. */
static stk_status batch_set(stk__op *op, stk__batch_ctx *ctx, mixed_state *s, const stk__tensor_list *in,
                            stk__tensor_list *out, mixed_hw_set **set) {
  mixed_hw_set *h = ctx->batch_seq ? stk__mixed_set_find(s, ctx->batch_seq, 1) : NULL;
  if (h) {
    *set = h;
    return STK_OK;
  }
  pthread_mutex_lock(&s->set_lock);
  uint64_t seq = --s->private_seq; /* from UINT64_MAX down: never a pipeline's batch_seq */
  pthread_mutex_unlock(&s->set_lock);
  h = stk__mixed_set_acquire(s, seq);
  stk_status st = plan_and_submit(op, ctx, s, h, in, out, 0);
  if (st != STK_OK) {
    stk__mixed_set_release(s, h);
    return st;
  }
  *set = h;
  return STK_OK;
}

static stk_status mixed_run_batch(stk__op *op, stk__batch_ctx *ctx, stk__tensor_list *const *inputs,
                                  stk__tensor_list *const *outputs) {
  mixed_state *s = (mixed_state *)op->state;
  uint64_t t_start = s->tuning.trace ? stk__now_ns() : 0;
  mixed_hw_set *h = NULL;
  stk_status st = batch_set(op, ctx, s, inputs[0], outputs[0], &h);
  if (st != STK_OK) return st;
  uint64_t t_lanes = s->tuning.trace ? stk__now_ns() : 0;
  mixed_job *jobs = h->jobs;
  int n = h->n;
  /* Everything else (the pre-stage's pixels, the lanes) while the engines work. */
  st = stk__mixed_lanes_run(op, s, ctx, h);
  if (s->tuning.trace) {
    uint64_t t_end = stk__now_ns();
    __atomic_fetch_add(&s->trace.plan, t_lanes - t_start, __ATOMIC_RELAXED);
    __atomic_fetch_add(&s->trace.lanes, t_end - t_lanes, __ATOMIC_RELAXED);
  }
  /* The consumer's stream waits for the engines too; no device-wide sync. */
  if (h->hw_count > 0) cudaStreamWaitEvent((cudaStream_t)ctx->cuda_stream, h->done, 0);
  uint64_t skipped = 0;
  if (st == STK_OK) st = replace_failed(op, ctx, s, jobs, h->room, outputs[0], n, &skipped);
  if (st == STK_OK) count_routes(ctx, jobs, n, skipped);
  stk__mixed_set_release(s, h); /* its hardware buffers are reused after its `done` event */
  if (st != STK_OK) return st;
  if (s->tuning.trace) {
    __atomic_fetch_add(&s->trace.run_batch, stk__now_ns() - t_start, __ATOMIC_RELAXED);
    __atomic_fetch_add(&s->trace.batches, 1, __ATOMIC_RELAXED);
  }
  stk__mixed_route_batch_done(op, s, ctx);
  return STK_OK;
}

/* Declared with C linkage in ops/op_impls.h; named by the operator table (src/ops/op_table.c). */
/* init, destroy, plan_batch, reset, reader_meta, run_sample, run_batch, seek, data_fingerprint,
 * feed, input_ready, prepare_batch, discard_batch (positional: C++ has no designated initializers) */
const stk__op_impl stk__gpu_impl_decoders_image = {
    mixed_init_image,   mixed_destroy, NULL, NULL, NULL, mixed_run_sample,
    mixed_run_batch,    NULL,          NULL, NULL, NULL, mixed_prepare_batch,
    mixed_discard_batch};
const stk__op_impl stk__gpu_impl_decoders_image_random_crop = {
    mixed_init_random_crop, mixed_destroy, NULL, NULL, NULL, mixed_run_sample,
    mixed_run_batch,        NULL,          NULL, NULL, NULL, mixed_prepare_batch,
    mixed_discard_batch};
