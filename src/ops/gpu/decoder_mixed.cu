/* src/ops/gpu/decoder_mixed.cu: decoders.image and decoders.image_random_crop with
 * device="mixed": encoded bytes on the host in, HWC u8 images on the GPU out. Decoders working
 * on one batch at once:
 *   - the GPU's hardware JPEG engines (NVJPEG_BACKEND_HARDWARE, batched API), fed from two sets of
 *     state/stream/buffers in turn so batch N+1 is submitted while the engines finish batch N;
 *   - libjpeg-turbo on the pinned worker threads, in the CPU pre-stage (run_sample): the samples
 *     the engines do not take are decoded (window only) into pinned stage tensors while earlier
 *     batches are on the GPU, then uploaded by DMA;
 *   - nvJPEG's CUDA decoder (decoupled NVJPEG_BACKEND_GPU_HYBRID) and hybrid decoder (decoupled
 *     NVJPEG_BACKEND_HYBRID, Huffman on the CPU) on worker lanes (one nvJPEG state + buffers +
 *     CUDA stream per worker) when there is no pre-stage (the operator used on its own);
 *   - libjpeg-turbo + upload as the last resort for what nvJPEG refuses.
 * Routing (route_sample) by the JPEG header, the sample's position in the batch and
 * hw_decoder_load only, never by timing, so one seed gives the same bytes on every run: the
 * engines take baseline 4:4:4/4:2:2/4:2:0/4:4:0/gray; CMYK, EXIF-rotated and progressive files
 * and the share 1 - hw_decoder_load go to the CPU. The random-crop decoder decodes only the window
 * on the CPU and the decoupled paths (nvjpegDecodeParamsSetROI); the hardware path decodes the
 * full image into a scratch buffer and crops on the device. Encoded bytes reach the engines in
 * place when the engine pinned them (a pipeline), else through a pinned staging buffer on the
 * GPU's NUMA node, allocated once (grow-only). Arguments and windows come from the CPU decoder's
 * stk__decoder_params_get / stk__decoder_crop_window; hint_size is ignored (exact windows). With
 * options.skip_bad_files a file that is not a JPEG or that libjpeg rejects becomes a copy of the
 * nearest good sample and is counted in stats->skipped_files (else: STK_EBADIMAGE naming the file).
 * Hot path: run_sample per sample on the workers, run_batch per batch on the GPU stage. */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device/cuda/nvjpeg_api.h"
#include "device/device.h"
#include "ops/cpu/decoders.h"
#include "ops/cpu/image_ops.h"
#include "ops/cpu/jpeg.h"
#include "ops/gpu/gpu_ops.h"
#include "ops/gpu/kernels.h"

/* ROUTE_FAILED: a bad file skipped under skip_bad_files (not counted as decoded). */
enum { ROUTE_HW = 0, ROUTE_CUDA, ROUTE_HYBRID, ROUTE_CPU, ROUTE_COUNT, ROUTE_FAILED = ROUTE_COUNT };

typedef struct lane {
  cudaStream_t stream;
  cudaEvent_t done;
  nvjpegJpegStream_t jpeg_stream;
  nvjpegDecodeParams_t params;
  nvjpegJpegState_t state[2]; /* [0] GPU_HYBRID decoder, [1] HYBRID decoder */
  nvjpegBufferPinned_t pinned[2];
  nvjpegBufferDevice_t device[2];
  stk__tensor host_image;     /* CPU fallback decode */
  uint8_t *staging;           /* pinned, for the CPU fallback upload */
  size_t staging_capacity;
  int used;                   /* work was queued on this lane during the batch */
} lane;

typedef struct sample_job {
  const uint8_t *data;
  size_t size;
  int pinned;        /* data is page-locked (the engine pins a pre-staged op's inputs) */
  const stk__tensor *staged; /* ROUTE_CPU decoded by the pre-stage: the pixels, else NULL */
  stk__jpeg_info info;
  stk__window crop;  /* window to produce (whole image for decoders.image) */
  int route;
  int failed;        /* bad file, skipped (skip_bad_files) */
  int replaced;      /* failed in the executor's CPU chain (counted there) */
  int out_w, out_h;
  uint8_t *out;      /* device */
} sample_job;

/* What one hardware batch owns until the engines are done with it. */
typedef struct hw_set {
  nvjpegJpegState_t state;
  cudaStream_t stream;
  cudaEvent_t done;
  int pending;               /* work was queued; wait on done before reusing the buffers */
  uint8_t *staging;          /* pinned copy of encoded bytes that were not pinned already */
  size_t staging_capacity;
  void *scratch;             /* full-size hardware decodes of random-crop samples */
  size_t scratch_capacity;
  stk__gpu_arena crop_arena; /* crop descriptors for hardware-decoded random crops */
  const unsigned char **data; /* DecodeBatched's arrays, hw_capacity entries */
  size_t *lengths;
  nvjpegImage_t *dest;
  int *index;                /* job of each entry */
  int capacity;
} hw_set;


typedef struct mixed_state {
  const stk__nvjpeg_api *api;
  char nvjpeg_note[512];   /* why nvJPEG is not used, "" when it is */
  int device_id, numa_node;
  int random_crop;
  stk__decoder_params params; /* the CPU decoder's reading of the arguments (same windows, colour) */
  stk__color color;
  int channels;
  nvjpegOutputFormat_t format;
  double hw_load;          /* share of hardware-candidate pixels for the engines, 0..1 */
  int stream_priority;     /* the pipeline's stk_stream_priority for this op's streams */
  int skip_bad_files;      /* options.skip_bad_files: bad files are replaced and counted, not fatal */
  /* nvJPEG objects */
  nvjpegHandle_t handle;   /* DEFAULT backend handle for the decoupled decoders */
  nvjpegJpegDecoder_t decoder[2];
  nvjpegHandle_t hw_handle;
  unsigned hw_engines, hw_cores;
  hw_set hw[2];            /* batches alternate between two sets, so batch N+1 is submitted while
                              the engines still decode batch N */
  int hw_turn;
  lane *lanes;
  int num_lanes;
  /* per batch, grow-only */
  sample_job *jobs;
  int jobs_capacity;
  size_t max_image_bytes;  /* largest decoded image so far (256-aligned): hardware scratch stride */
  uint64_t batches;
} mixed_state;

static const char *op_label(const stk__op *op) { return op->name ? op->name : op->schema->name; }

static const char *source_of(const stk__batch_ctx *ctx, int i) {
  if (ctx->plan && ctx->plan->samples && i < ctx->plan->batch_size && ctx->plan->samples[i].source)
    return ctx->plan->samples[i].source;
  return "(unknown file)";
}

/* ---- Setup --------------------------------------------------------------------------------- */
static int nv_ok(nvjpegStatus_t st) { return st == NVJPEG_STATUS_SUCCESS; }

static void lane_destroy(const stk__nvjpeg_api *api, lane *l) {
  if (l->stream) cudaStreamSynchronize(l->stream);
  if (api) {
    for (int k = 0; k < 2; k++) {
      if (l->state[k]) api->JpegStateDestroy(l->state[k]);
      if (l->pinned[k]) api->BufferPinnedDestroy(l->pinned[k]);
      if (l->device[k]) api->BufferDeviceDestroy(l->device[k]);
    }
    if (l->jpeg_stream) api->JpegStreamDestroy(l->jpeg_stream);
    if (l->params) api->DecodeParamsDestroy(l->params);
  }
  if (l->done) cudaEventDestroy(l->done);
  if (l->stream) cudaStreamDestroy(l->stream);
  stk__tensor_free(&l->host_image);
  stk__gpu_pinned_free(l->staging);
  memset(l, 0, sizeof *l);
}

/* Waits (asleep: the lane's event has blocking sync) until the lane's queued work is done. */
static cudaError_t lane_wait(lane *l) {
  cudaError_t rc = cudaEventRecord(l->done, l->stream);
  return rc == cudaSuccess ? cudaEventSynchronize(l->done) : rc;
}

static int lane_create(mixed_state *s, lane *l) {
  if (stk__gpu_stream_create((void **)&l->stream, s->stream_priority) != STK_OK) return 0;
  if (stk__gpu_event_create((void **)&l->done) != STK_OK) return 0;
  if (!s->api) return 1; /* CPU-only lane */
  const stk__nvjpeg_api *a = s->api;
  if (!nv_ok(a->JpegStreamCreate(s->handle, &l->jpeg_stream))) return 0;
  if (!nv_ok(a->DecodeParamsCreate(s->handle, &l->params))) return 0;
  if (!nv_ok(a->DecodeParamsSetOutputFormat(l->params, s->format))) return 0;
  for (int k = 0; k < 2; k++) {
    if (!nv_ok(a->DecoderStateCreate(s->handle, s->decoder[k], &l->state[k]))) return 0;
    if (!nv_ok(a->BufferPinnedCreate(s->handle, NULL, &l->pinned[k]))) return 0;
    if (!nv_ok(a->BufferDeviceCreate(s->handle, NULL, &l->device[k]))) return 0;
    if (!nv_ok(a->StateAttachPinnedBuffer(l->state[k], l->pinned[k]))) return 0;
    if (!nv_ok(a->StateAttachDeviceBuffer(l->state[k], l->device[k]))) return 0;
  }
  return 1;
}

/* The hardware engines' nvJPEG objects (states, handle); the engines are then off. */
static void hw_teardown(mixed_state *s) {
  const stk__nvjpeg_api *a = s->api;
  for (int k = 0; k < 2; k++) {
    hw_set *h = &s->hw[k];
    if (h->state) a->JpegStateDestroy(h->state);
    h->state = NULL;
  }
  if (s->hw_handle) a->Destroy(s->hw_handle);
  s->hw_handle = NULL;
  s->hw_engines = 0;
}

static void nvjpeg_teardown(mixed_state *s) {
  const stk__nvjpeg_api *a = s->api;
  if (!a) return;
  hw_teardown(s);
  for (int k = 0; k < 2; k++)
    if (s->decoder[k]) a->DecoderDestroy(s->decoder[k]);
  if (s->handle) a->Destroy(s->handle);
  s->decoder[0] = s->decoder[1] = NULL;
  s->handle = NULL;
}

/* Brings up nvJPEG; any failure leaves s->api NULL and a note saying why (CPU decoding then). */
static void nvjpeg_setup(mixed_state *s) {
  char why[400] = "";
  const stk__nvjpeg_api *a = stk__nvjpeg_load(why, sizeof why);
  if (!a) {
    snprintf(s->nvjpeg_note, sizeof s->nvjpeg_note, "%s; decoding on the CPU", why);
    return;
  }
  s->api = a;
  nvjpegStatus_t st = a->CreateEx(NVJPEG_BACKEND_DEFAULT, NULL, NULL, NVJPEG_FLAGS_DEFAULT, &s->handle);
  if (nv_ok(st)) st = a->DecoderCreate(s->handle, NVJPEG_BACKEND_GPU_HYBRID, &s->decoder[0]);
  if (nv_ok(st)) st = a->DecoderCreate(s->handle, NVJPEG_BACKEND_HYBRID, &s->decoder[1]);
  if (!nv_ok(st)) {
    snprintf(s->nvjpeg_note, sizeof s->nvjpeg_note, "nvJPEG initialisation failed (%s); decoding on the CPU",
             stk__nvjpeg_status_name(st));
    nvjpeg_teardown(s);
    s->api = NULL;
    return;
  }
  /* The hardware engines are optional (A100/H100 and later). */
  int ok = nv_ok(a->CreateEx(NVJPEG_BACKEND_HARDWARE, NULL, NULL, NVJPEG_FLAGS_DEFAULT, &s->hw_handle));
  for (int k = 0; ok && k < 2; k++) ok = nv_ok(a->JpegStateCreate(s->hw_handle, &s->hw[k].state));
  if (!ok || !nv_ok(a->GetHardwareDecoderInfo(s->hw_handle, &s->hw_engines, &s->hw_cores)) || s->hw_engines == 0)
    hw_teardown(s);
}

static stk_status mixed_init_common(stk__op *op, int random_crop, char *err, size_t err_size) {
  mixed_state *s = (mixed_state *)calloc(1, sizeof *s);
  if (!s) return STK_ENOMEM;
  op->state = s;
  s->random_crop = random_crop;
  s->device_id = op->options && op->options->device_id >= 0 ? op->options->device_id : 0;
  if (stk__gpu_set_device(s->device_id) != STK_OK) {
    stk__errorf(err, err_size, "%s: CUDA device %d cannot be used", op_label(op), s->device_id);
    return STK_ENODEV;
  }
  s->numa_node = stk__gpu_device_numa_node(s->device_id);
  if (s->numa_node < 0) s->numa_node = 0;
  stk_status pst = stk__decoder_params_get(op, &s->params, err, err_size);
  if (pst != STK_OK) return pst;
  s->color = s->params.color;
  s->skip_bad_files = op->options ? op->options->skip_bad_files : 0;
  s->channels = s->color == STK__COLOR_GRAY ? 1 : 3;
  s->format = s->color == STK__COLOR_GRAY ? NVJPEG_OUTPUT_Y
              : s->color == STK__COLOR_BGR ? NVJPEG_OUTPUT_BGRI
                                           : NVJPEG_OUTPUT_RGBI;
  s->hw_load = stk__arg_float(op, "hw_decoder_load"); /* schema default 0.8, tuned on the H100 (bench/RESULTS.md) */
  if (!(s->hw_load >= 0.0)) s->hw_load = 0.0;
  if (s->hw_load > 1.0) s->hw_load = 1.0;
  s->stream_priority = op->options ? op->options->stream_priority : STK_STREAM_PRIORITY_HIGH;
  nvjpeg_setup(s);
  if (s->nvjpeg_note[0] && op->options && op->options->verbose)
    fprintf(stderr, "stoker: %s: %s\n", op_label(op), s->nvjpeg_note);
  for (int k = 0; k < 2; k++)
    if (stk__gpu_stream_create((void **)&s->hw[k].stream, s->stream_priority) != STK_OK ||
        stk__gpu_event_create((void **)&s->hw[k].done) != STK_OK) {
      stk__errorf(err, err_size, "%s: could not create CUDA streams/events", op_label(op));
      return STK_ECUDA;
    }
  s->num_lanes = op->options && op->options->num_threads > 0 ? op->options->num_threads : 1;
  s->lanes = (lane *)calloc((size_t)s->num_lanes, sizeof(lane));
  if (!s->lanes) return STK_ENOMEM;
  for (int i = 0; i < s->num_lanes; i++) {
    if (!lane_create(s, &s->lanes[i])) {
      stk__errorf(err, err_size, "%s: could not create decoder lane %d (nvJPEG states/buffers or CUDA stream)",
                  op_label(op), i);
      return STK_ENVJPEG;
    }
  }
  return STK_OK;
}

static void mixed_destroy(stk__op *op);

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

static void mixed_destroy(stk__op *op) {
  mixed_state *s = (mixed_state *)op->state;
  if (!s) return;
  for (int k = 0; k < 2; k++)
    if (s->hw[k].stream) cudaStreamSynchronize(s->hw[k].stream);
  for (int i = 0; i < s->num_lanes && s->lanes; i++) lane_destroy(s->api, &s->lanes[i]);
  free(s->lanes);
  nvjpeg_teardown(s);
  for (int k = 0; k < 2; k++) {
    hw_set *h = &s->hw[k];
    if (h->done) cudaEventDestroy(h->done);
    if (h->stream) cudaStreamDestroy(h->stream);
    stk__gpu_pinned_free(h->staging);
    stk__gpu_free(h->scratch, NULL); /* its stream was synchronized above */
    stk__gpu_arena_free(&h->crop_arena);
    free(h->data);
    free(h->lengths);
    free(h->dest);
    free(h->index);
  }
  free(s->jobs);
  free(s);
  op->state = NULL;
}

/* ---- Per-sample decode on a lane (worker thread) -------------------------------------------- */
typedef struct lane_work {
  mixed_state *s;
  sample_job *jobs;
  int *order;       /* indexes of the jobs for the lanes */
  int count;
  stk__batch_ctx *ctx;
  const stk__op *op;
} lane_work;

/* libjpeg-turbo decode of the job's window into host memory, then an upload from the lane's
 * pinned staging buffer. */
static stk_status cpu_decode_upload(lane_work *w, lane *l, sample_job *job, int index, uint64_t *alloc_count) {
  char err[256] = "";
  const stk__window *crop = w->s->random_crop ? &job->crop : NULL;
  l->host_image.alloc_count = alloc_count;
  stk_status st = stk__jpeg_decode(job->data, job->size, w->s->color, crop, 0, 0, &l->host_image, NULL, err, sizeof err);
  if (st == STK_EBADIMAGE && w->s->skip_bad_files) {
    job->failed = 1; /* replaced by a good sample of the batch and counted after the decode */
    return STK_OK;
  }
  if (st != STK_OK) {
    stk__errorf(w->ctx->err, w->ctx->err_size, "%s: %s: %s", op_label(w->op), source_of(w->ctx, index), err);
    return st;
  }
  if ((int)l->host_image.shape[0] != job->out_h || (int)l->host_image.shape[1] != job->out_w) {
    stk__errorf(w->ctx->err, w->ctx->err_size, "%s: %s: decoded %lldx%lld, expected %dx%d", op_label(w->op),
                source_of(w->ctx, index), (long long)l->host_image.shape[1], (long long)l->host_image.shape[0],
                job->out_w, job->out_h);
    return STK_EINTERNAL;
  }
  size_t bytes = l->host_image.nbytes;
  if (lane_wait(l) != cudaSuccess) return STK_ECUDA; /* staging free again */
  if (bytes > l->staging_capacity) {
    void *p = NULL;
    size_t want = bytes + bytes / 2;
    st = stk__gpu_pinned_alloc(&p, want, w->s->numa_node, NULL, alloc_count);
    if (st != STK_OK) return st;
    stk__gpu_pinned_free(l->staging);
    l->staging = (uint8_t *)p;
    l->staging_capacity = want;
  }
  memcpy(l->staging, l->host_image.data, bytes);
  if (cudaMemcpyAsync(job->out, l->staging, bytes, cudaMemcpyHostToDevice, l->stream) != cudaSuccess) return STK_ECUDA;
  l->used = 1;
  return STK_OK;
}

/* nvJPEG decoupled decode (GPU_HYBRID or HYBRID) of one job; 0 on success, else the nvJPEG status
 * (the caller falls back to the CPU). */
static nvjpegStatus_t nvjpeg_lane_decode(mixed_state *s, lane *l, sample_job *job) {
  const stk__nvjpeg_api *a = s->api;
  int k = job->route == ROUTE_CUDA ? 0 : 1;
  /* The state's pinned buffer may still feed the previous transfer on this lane. */
  if (lane_wait(l) != cudaSuccess) return NVJPEG_STATUS_EXECUTION_FAILED;
  nvjpegStatus_t st = a->JpegStreamParse(s->handle, job->data, job->size, 0, 0, l->jpeg_stream);
  if (!nv_ok(st)) return st;
  if (s->random_crop)
    st = a->DecodeParamsSetROI(l->params, job->crop.x, job->crop.y, job->crop.w, job->crop.h);
  else
    st = a->DecodeParamsSetROI(l->params, 0, 0, -1, -1); /* whole image */
  if (!nv_ok(st)) return st;
  int unsupported = 1;
  st = a->DecoderJpegSupported(s->decoder[k], l->jpeg_stream, l->params, &unsupported);
  if (!nv_ok(st)) return st;
  if (unsupported != 0) return NVJPEG_STATUS_JPEG_NOT_SUPPORTED;
  st = a->DecodeJpegHost(s->handle, s->decoder[k], l->state[k], l->params, l->jpeg_stream);
  if (!nv_ok(st)) return st;
  st = a->DecodeJpegTransferToDevice(s->handle, s->decoder[k], l->state[k], l->jpeg_stream, l->stream);
  if (!nv_ok(st)) return st;
  nvjpegImage_t dest;
  memset(&dest, 0, sizeof dest);
  dest.channel[0] = job->out;
  dest.pitch[0] = (size_t)job->out_w * s->channels;
  st = a->DecodeJpegDevice(s->handle, s->decoder[k], l->state[k], &dest, l->stream);
  if (nv_ok(st)) l->used = 1;
  return st;
}

static stk_status lane_job(void *arg, int i, int thread_index) {
  lane_work *w = (lane_work *)arg;
  mixed_state *s = w->s;
  if (thread_index < 0 || thread_index >= s->num_lanes) {
    stk__errorf(w->ctx->err, w->ctx->err_size, "%s: worker %d has no decoder lane (%d lanes)", op_label(w->op),
                thread_index, s->num_lanes);
    return STK_EINTERNAL;
  }
  lane *l = &s->lanes[thread_index];
  int index = w->order[i];
  sample_job *job = &w->jobs[index];
  if (job->route != ROUTE_CPU && s->api) {
    nvjpegStatus_t st = nvjpeg_lane_decode(s, l, job);
    if (nv_ok(st)) {
      if (lane_wait(l) == cudaSuccess) return STK_OK; /* errors surface here */
      cudaGetLastError();
    }
    job->route = ROUTE_CPU; /* nvJPEG refused it (or failed): libjpeg-turbo decides */
  }
  return cpu_decode_upload(w, l, job, index, w->ctx->alloc_count);
}

/* ---- Routing --------------------------------------------------------------------------------- */
static int hw_can_take(const mixed_state *s, const stk__jpeg_info *info) {
  if (!s->hw_handle || info->progressive || info->cmyk) return 0;
  if (info->components != 1 && info->components != 3) return 0;
  return info->subsampling == 444 || info->subsampling == 422 || info->subsampling == 420 ||
         info->subsampling == 440 || info->subsampling == 0;
}

/* Where the sample at `position` of its batch is decoded. The engines take an even share
 * hw_decoder_load of the positions (position p when floor((p+1)L) > floor(pL)) among the images
 * they can take; with a CPU pre-stage (`staged`) everything else is decoded by libjpeg-turbo on the
 * worker threads while earlier batches are on the GPU; without one (standalone use) the rest goes
 * to nvJPEG's CUDA decoder, progressive files to its hybrid decoder. A pure function of the
 * header, the position and the arguments: one seed gives the same bytes on every run, whatever
 * the thread count or timing. */
static int route_sample(const mixed_state *s, const stk__jpeg_info *info, int position, int staged) {
  if (!s->api || info->cmyk || info->orientation != 1 || (info->components != 1 && info->components != 3))
    return ROUTE_CPU;
  if (hw_can_take(s, info) && floor((position + 1) * s->hw_load) > floor(position * s->hw_load)) return ROUTE_HW;
  if (staged) return ROUTE_CPU;
  return info->progressive ? ROUTE_HYBRID : ROUTE_CUDA;
}

/* Header, oriented size and the window to produce for one sample (the CPU decoder's window: same
 * seed, operator id, epoch and sample id). */
static stk_status sample_setup(const mixed_state *s, const stk__op *op, uint64_t epoch, int64_t sample_id,
                               const uint8_t *data, size_t size, sample_job *j, char *err, size_t err_size) {
  j->data = data;
  j->size = size;
  stk_status st = stk__jpeg_peek(data, size, &j->info, err, err_size);
  if (st != STK_OK) return st;
  int w = j->info.width, h = j->info.height;
  if (j->info.orientation >= 5 && j->info.orientation <= 8) { /* EXIF transposes */
    int tmp = w;
    w = h;
    h = tmp;
  }
  if (s->random_crop) {
    j->crop = stk__decoder_crop_window(&s->params, op->id, epoch, sample_id, w, h);
  } else {
    j->crop.x = j->crop.y = 0;
    j->crop.w = w;
    j->crop.h = h;
  }
  j->out_w = j->crop.w;
  j->out_h = j->crop.h;
  return STK_OK;
}

/* ---- CPU pre-stage (run_sample, on a worker inside the sample's CPU chain) -------------------- */
/* Decodes the samples routed to the CPU into their pinned stage tensor (HWC u8, the window
 * only); for every other sample the stage is left empty (ndim 0). */
static stk_status mixed_run_sample(stk__op *op, stk__sample_ctx *ctx, stk__tensor *const *inputs,
                                   stk__tensor *const *outputs) {
  const mixed_state *s = (const mixed_state *)op->state;
  const stk__tensor *in = inputs[0];
  stk__tensor *stage = outputs[0];
  sample_job j;
  memset(&j, 0, sizeof j);
  stk_status st = sample_setup(s, op, ctx->epoch, ctx->sample_id, (const uint8_t *)in->data, in->nbytes, &j,
                               ctx->err, ctx->err_size);
  if (st != STK_OK) return st;
  if (route_sample(s, &j.info, ctx->sample_in_batch, 1) != ROUTE_CPU) {
    stage->ndim = 0;
    stage->nbytes = 0;
    return STK_OK;
  }
  /* Room for the whole image first: the stage's size then follows the data set's image sizes, not
   * the random windows, and settles after warm-up (no pinned allocation in steady state). */
  int64_t full[3] = {j.info.height, j.info.width, s->channels};
  stk_status rs = stk__tensor_resize(stage, STK_DTYPE_UINT8, 3, full, "HWC");
  if (rs != STK_OK) return rs;
  return stk__jpeg_decode(j.data, j.size, s->color, s->random_crop ? &j.crop : NULL, 0, 0, stage, NULL, ctx->err,
                          ctx->err_size);
}

/* ---- Hardware batch ------------------------------------------------------------------------- */
/* Grows a pinned (host) or device buffer to at least `bytes` with headroom; counted. */
static stk_status grow(void **buf, size_t *capacity, size_t bytes, int pinned, int numa_node, uint64_t *alloc_count) {
  if (bytes <= *capacity) return STK_OK;
  void *p = NULL;
  size_t want = bytes + bytes / 4 + 4096;
  stk_status st = pinned ? stk__gpu_pinned_alloc(&p, want, numa_node, NULL, alloc_count)
                         : stk__gpu_malloc(&p, want, alloc_count);
  if (st != STK_OK) return st;
  if (pinned) stk__gpu_pinned_free(*buf);
  else stk__gpu_free(*buf, NULL); /* callers waited for the work that read it */
  *buf = p;
  *capacity = want;
  return STK_OK;
}

/* Submits the batch's ROUTE_HW samples to the engines on hardware set h. Encoded bytes already
 * pinned (the pre-staged pipeline path) are read in place; others are copied into h's staging. */
static stk_status hw_submit(mixed_state *s, hw_set *h, sample_job *jobs, int n, size_t stride, uint64_t *alloc_count,
                            int *hw_count) {
  int m = 0;
  size_t bytes = 0;
  for (int i = 0; i < n; i++)
    if (jobs[i].route == ROUTE_HW) {
      m++;
      if (!jobs[i].pinned) bytes += jobs[i].size;
    }
  /* Random crops: one full image per job of the part, `stride` (the largest image so far) apart,
   * so the scratch settles with the data set's largest image, not with each batch's mix. */
  size_t scratch = s->random_crop ? (size_t)n * stride : 0;
  *hw_count = m;
  if (m == 0) return STK_OK;
  if (h->pending) cudaEventSynchronize(h->done); /* its buffers still read by the batch before last? */
  h->pending = 0;
  if (m > h->capacity) {
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
  }
  stk_status st = grow((void **)&h->staging, &h->staging_capacity, bytes, 1, s->numa_node, alloc_count);
  if (st == STK_OK) st = grow(&h->scratch, &h->scratch_capacity, scratch, 0, -1, alloc_count);
  if (st != STK_OK) return st;
  size_t at = 0, scratch_at = 0;
  int k = 0;
  for (int i = 0; i < n; i++) {
    sample_job *j = &jobs[i];
    if (j->route != ROUTE_HW) continue;
    if (j->pinned) {
      h->data[k] = j->data;
    } else {
      memcpy(h->staging + at, j->data, j->size);
      h->data[k] = h->staging + at;
      at += j->size;
    }
    h->lengths[k] = j->size;
    memset(&h->dest[k], 0, sizeof h->dest[k]);
    if (s->random_crop) { /* full image into scratch, cropped afterwards */
      h->dest[k].channel[0] = (unsigned char *)h->scratch + scratch_at;
      h->dest[k].pitch[0] = (size_t)j->info.width * s->channels;
      scratch_at += stride;
    } else {
      h->dest[k].channel[0] = j->out;
      h->dest[k].pitch[0] = (size_t)j->out_w * s->channels;
    }
    h->index[k] = i;
    k++;
  }
  const stk__nvjpeg_api *a = s->api;
  nvjpegStatus_t nst = a->DecodeBatchedInitialize(s->hw_handle, h->state, m, 1, s->format);
  if (nv_ok(nst)) nst = a->DecodeBatched(s->hw_handle, h->state, h->data, h->lengths, h->dest, h->stream);
  cudaEventRecord(h->done, h->stream);
  h->pending = 1;
  if (!nv_ok(nst)) {
    /* The engines refused the batch: every one of its images goes to the CPU instead. */
    cudaStreamSynchronize(h->stream);
    for (int q = 0; q < m; q++) jobs[h->index[q]].route = ROUTE_CPU;
    *hw_count = 0;
  }
  return STK_OK;
}

/* Crops the hardware-decoded full images of a random-crop batch into the outputs. */
static stk_status hw_crop(mixed_state *s, hw_set *h, sample_job *jobs, int hw_count, uint64_t *alloc_count) {
  if (!s->random_crop || hw_count == 0) return STK_OK;
  stk_status st = stk__gpu_arena_reserve(&h->crop_arena, (size_t)hw_count * sizeof(stk__gpu_crop_desc) + 64,
                                         s->numa_node, alloc_count);
  if (st != STK_OK) return st;
  size_t at = stk__gpu_arena_push(&h->crop_arena, (size_t)hw_count * sizeof(stk__gpu_crop_desc));
  stk__gpu_crop_desc *d = (stk__gpu_crop_desc *)(h->crop_arena.host + at);
  int max_w = 0, max_h = 0;
  for (int q = 0; q < hw_count; q++) {
    const sample_job *j = &jobs[h->index[q]];
    d[q].src = h->dest[q].channel[0];
    d[q].src_stride = (int)h->dest[q].pitch[0];
    d[q].x = j->crop.x;
    d[q].y = j->crop.y;
    d[q].w = j->crop.w;
    d[q].h = j->crop.h;
    d[q].channels = s->channels;
    d[q].dst = j->out;
    if (j->crop.w > max_w) max_w = j->crop.w;
    if (j->crop.h > max_h) max_h = j->crop.h;
  }
  st = stk__gpu_arena_upload(&h->crop_arena, h->stream);
  if (st != STK_OK) return st;
  st = stk__gpu_crop_u8_batch((const stk__gpu_crop_desc *)(h->crop_arena.device + at), hw_count, max_w, max_h,
                              h->stream);
  if (st == STK_OK && cudaEventRecord(h->done, h->stream) != cudaSuccess) st = STK_ECUDA;
  return st;
}

/* The batch's hardware submission and crop, run on a worker (a one-item parallel_for: workers are
 * pinned next to the GPU and parallel_for items go to the front of their queue). */
typedef struct hw_work {
  mixed_state *s;
  hw_set *h;
  sample_job *jobs;
  int n;
  uint64_t *alloc_count;
  int count;
} hw_work;

static stk_status hw_task(void *arg, int k, int thread_index) {
  (void)k, (void)thread_index;
  hw_work *w = (hw_work *)arg;
  if (stk__gpu_set_device(w->s->device_id) != STK_OK) return STK_ECUDA;
  stk_status st = hw_submit(w->s, w->h, w->jobs, w->n, w->s->max_image_bytes, w->alloc_count, &w->count);
  if (st == STK_OK) st = hw_crop(w->s, w->h, w->jobs, w->count, w->alloc_count);
  return st;
}

/* ---- Bad files under skip_bad_files ---------------------------------------------------------- */
/* Every failed sample becomes a copy of the nearest good sample (lower index on ties), the rule the
 * executor uses for CPU chains; the copies are queued on the consumer's stream after it waited for
 * the decoders. *skipped = number of failed samples. All failed: STK_EBADIMAGE naming the first. */
static stk_status replace_failed(const stk__op *op, stk__batch_ctx *ctx, mixed_state *s, sample_job *jobs,
                                 stk__tensor_list *out, int n, uint64_t *skipped) {
  *skipped = 0;
  int copies = 0;
  cudaStream_t stream = (cudaStream_t)ctx->cuda_stream;
  for (int i = 0; i < n; i++) {
    if (!jobs[i].failed) continue;
    copies++;
    int good = -1;
    for (int d = 1; d < n && good < 0; d++) {
      if (i - d >= 0 && !jobs[i - d].failed) good = i - d;
      else if (i + d < n && !jobs[i + d].failed) good = i + d;
    }
    if (good < 0) {
      stk__errorf(ctx->err, ctx->err_size, "%s: every sample of the batch is a bad file (first: %s)", op_label(op),
                  source_of(ctx, i));
      return STK_EBADIMAGE;
    }
    stk__tensor *bad = &out->samples[i];
    const stk__tensor *src = &out->samples[good];
    void *data = bad->data;
    *bad = *src;
    bad->data = data; /* the bad slot keeps its own room (>= every good image: the list's stride) */
    if (cudaMemcpyAsync(data, src->data, src->nbytes, cudaMemcpyDeviceToDevice, stream) != cudaSuccess) {
      stk__errorf(ctx->err, ctx->err_size, "%s: copying a replacement for %s failed", op_label(op), source_of(ctx, i));
      return STK_ECUDA;
    }
    if (jobs[i].replaced) continue;
    (*skipped)++;
    if (op->options && op->options->verbose)
      fprintf(stderr, "stoker: %s: skipped bad file %s\n", op_label(op), source_of(ctx, i));
  }
  if (copies) stk__gpu_tensor_list_settle(out);
  return STK_OK;
}

/* ---- run_batch --------------------------------------------------------------------------------- */
/* Jobs for the batch: headers, windows, routes (and the pre-stage's pixels when there is one). */
static stk_status setup_jobs(stk__op *op, stk__batch_ctx *ctx, mixed_state *s, const stk__tensor_list *in,
                             sample_job *jobs, size_t *max_bytes) {
  int n = in->count;
  *max_bytes = 1;
  for (int i = 0; i < n; i++) {
    sample_job *j = &jobs[i];
    memset(j, 0, sizeof *j);
    const stk__tensor *t = &in->samples[i];
    if (t->device != STK_DEVICE_CPU) {
      stk__errorf(ctx->err, ctx->err_size, "%s: encoded input must be in host memory", op_label(op));
      return STK_EINVAL;
    }
    if (ctx->sample_failed && ctx->sample_failed[i]) {
      /* The executor replaced a bad file by its neighbour's bytes and stage; the neighbour's
       * decode is copied on the GPU instead (replace_failed), already counted as skipped. */
      j->failed = j->replaced = 1;
      j->route = ROUTE_FAILED;
      continue;
    }
    int64_t sample_id = ctx->plan && ctx->plan->samples && i < ctx->plan->batch_size ? ctx->plan->samples[i].sample_id : i;
    char err[256] = "";
    stk_status st = sample_setup(s, op, ctx->epoch, sample_id, (const uint8_t *)t->data, t->nbytes, j, err, sizeof err);
    if (st == STK_EBADIMAGE && s->skip_bad_files) {
      j->failed = 1;
      j->route = ROUTE_FAILED;
      continue;
    }
    if (st != STK_OK) {
      stk__errorf(ctx->err, ctx->err_size, "%s: %s: %s", op_label(op), source_of(ctx, i), err);
      return st;
    }
    j->pinned = t->pinned;
    j->route = route_sample(s, &j->info, i, ctx->stage != NULL);
    if (j->route == ROUTE_CPU && ctx->stage) {
      const stk__tensor *px = i < ctx->stage->count ? &ctx->stage->samples[i] : NULL;
      if (!px || px->ndim != 3 || px->shape[0] != j->out_h || px->shape[1] != j->out_w ||
          px->shape[2] != s->channels) {
        stk__errorf(ctx->err, ctx->err_size, "%s: %s: the CPU pre-stage did not decode this sample", op_label(op),
                    source_of(ctx, i));
        return STK_EINTERNAL;
      }
      j->staged = px;
    }
    /* Room for the whole image even when only a window is decoded: the slot size then depends on
     * the data set's image sizes, not on the random windows, so it settles after warm-up. */
    size_t bytes = (size_t)j->info.width * j->info.height * s->channels;
    if (bytes > *max_bytes) *max_bytes = bytes;
  }
  *max_bytes = (*max_bytes + 255) & ~(size_t)255; /* each decoded image 256-byte aligned for nvJPEG */
  return STK_OK;
}

static stk_status mixed_run_batch(stk__op *op, stk__batch_ctx *ctx, stk__tensor_list *const *inputs,
                                  stk__tensor_list *const *outputs) {
  mixed_state *s = (mixed_state *)op->state;
  const stk__tensor_list *in = inputs[0];
  int n = in->count;
  if (n > s->jobs_capacity) {
    sample_job *grown = (sample_job *)realloc(s->jobs, (size_t)n * sizeof *grown);
    if (!grown) return STK_ENOMEM;
    s->jobs = grown;
    s->jobs_capacity = n;
    if (ctx->alloc_count) __atomic_fetch_add(ctx->alloc_count, 1, __ATOMIC_RELAXED);
  }
  sample_job *jobs = s->jobs;
  size_t max_bytes = 1;
  stk_status st = setup_jobs(op, ctx, s, in, jobs, &max_bytes);
  if (st != STK_OK) return st;
  stk__tensor_list *out = outputs[0];
  st = stk__gpu_tensor_list_reserve(out, n, max_bytes, ctx->alloc_count);
  if (st != STK_OK) {
    stk__errorf(ctx->err, ctx->err_size, "%s: no device memory for the decoded batch (%s)", op_label(op),
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
  /* One hardware submission per batch, made on a worker (a one-item parallel_for; the GPU stage
   * waits for it). Measured on the H100 (session 3, rn50-train, 16 threads, two rounds): on a
   * worker 11,885 / 12,208 img/s, on the GPU stage thread 10,566 / 11,036. Cutting it into 4
   * parallel submissions measured slower (13.1k vs 14.7k, session 2, bench/RESULTS.md). */
  if (max_bytes > s->max_image_bytes) s->max_image_bytes = max_bytes;
  hw_set *h = &s->hw[s->hw_turn];
  s->hw_turn ^= 1;
  hw_work hw = {s, h, jobs, n, ctx->alloc_count, 0};
  int any_hw = 0;
  for (int i = 0; i < n && !any_hw; i++) any_hw = jobs[i].route == ROUTE_HW;
  st = any_hw ? stk__parallel_for(ctx, 1, hw_task, &hw) : STK_OK;
  int hw_count = hw.count;
  if (st != STK_OK) {
    stk__errorf(ctx->err, ctx->err_size, "%s: hardware decode submission failed (%s)", op_label(op), stk_strerror(st));
    return st;
  }
  /* The pre-stage's pixels go up on the consumer's stream (pinned, so the copies are DMA and the
   * slot's stages are rewritten only after the batch's event); everything else on the worker
   * lanes, while the engines work. */
  cudaStream_t stream = (cudaStream_t)ctx->cuda_stream;
  int *order = (int *)alloca(sizeof(int) * (size_t)(n > 0 ? n : 1));
  int lane_jobs = 0;
  for (int i = 0; i < n; i++) {
    sample_job *j = &jobs[i];
    if (j->route == ROUTE_HW || j->route == ROUTE_FAILED) continue;
    if (j->staged) {
      if (cudaMemcpyAsync(j->out, j->staged->data, j->staged->nbytes, cudaMemcpyHostToDevice, stream) != cudaSuccess) {
        stk__errorf(ctx->err, ctx->err_size, "%s: %s: uploading the decoded image failed", op_label(op),
                    source_of(ctx, i));
        return STK_ECUDA;
      }
      continue;
    }
    order[lane_jobs++] = i;
  }
  for (int l = 0; l < s->num_lanes; l++) s->lanes[l].used = 0;
  lane_work work = {s, jobs, order, lane_jobs, ctx, op};
  if (lane_jobs > 0) st = stk__parallel_for(ctx, lane_jobs, lane_job, &work);
  /* The consumer's stream waits for the engines and the lanes; no device-wide sync. */
  if (hw_count > 0) cudaStreamWaitEvent(stream, h->done, 0);
  for (int l = 0; l < s->num_lanes; l++) {
    if (!s->lanes[l].used) continue;
    cudaEventRecord(s->lanes[l].done, s->lanes[l].stream);
    cudaStreamWaitEvent(stream, s->lanes[l].done, 0);
  }
  if (st != STK_OK) return st;
  uint64_t skipped = 0;
  st = replace_failed(op, ctx, s, jobs, out, n, &skipped);
  if (st != STK_OK) return st;
  /* Counts (bad files skipped are not decoded images). */
  uint64_t counts[ROUTE_COUNT] = {0, 0, 0, 0};
  for (int i = 0; i < n; i++) /* replacements of bad files are copies, not decodes */
    if (!jobs[i].failed) counts[jobs[i].route]++;
  if (ctx->stats) {
    __atomic_fetch_add(&ctx->stats->decoded_hw, counts[ROUTE_HW], __ATOMIC_RELAXED);
    __atomic_fetch_add(&ctx->stats->decoded_cuda, counts[ROUTE_CUDA], __ATOMIC_RELAXED);
    __atomic_fetch_add(&ctx->stats->decoded_hybrid, counts[ROUTE_HYBRID], __ATOMIC_RELAXED);
    __atomic_fetch_add(&ctx->stats->decoded_cpu, counts[ROUTE_CPU], __ATOMIC_RELAXED);
    __atomic_fetch_add(&ctx->stats->skipped_files, skipped, __ATOMIC_RELAXED);
  }
  s->batches++;
  return STK_OK;
}

extern "C" {
const stk__op_impl stk__gpu_impl_decoders_image = {mixed_init_image, mixed_destroy,   NULL, NULL, NULL,
                                                   mixed_run_sample, mixed_run_batch};
const stk__op_impl stk__gpu_impl_decoders_image_random_crop = {mixed_init_random_crop, mixed_destroy, NULL, NULL,
                                                               NULL, mixed_run_sample, mixed_run_batch};
}
