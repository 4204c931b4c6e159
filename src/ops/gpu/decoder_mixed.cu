/* src/ops/gpu/decoder_mixed.cu: decoders.image and decoders.image_random_crop with
 * device="mixed": encoded bytes on the host in, HWC u8 images on the GPU out. Three nvJPEG
 * decoders work on one batch at once, plus the CPU as the last resort:
 *   - hardware JPEG engines (NVJPEG_BACKEND_HARDWARE, batched API) on their own stream;
 *   - the CUDA decoder (decoupled NVJPEG_BACKEND_GPU_HYBRID) and the hybrid decoder (decoupled
 *     NVJPEG_BACKEND_HYBRID, Huffman on the CPU) on the worker threads via stk__parallel_for, one
 *     lane (nvJPEG state + buffers + CUDA stream) per worker;
 *   - libjpeg-turbo (stk__jpeg_decode) + upload for what nvJPEG cannot or will not take.
 * Routing by stk__jpeg_peek: the hardware engines take baseline 4:4:4/4:2:2/4:2:0/4:4:0/gray;
 * progressive / 4:1:1 go to the hybrid decoders; CMYK and EXIF-rotated images go to the CPU. The
 * hardware share is hw_decoder_load when given, else chosen from per-backend EWMA costs per pixel
 * so the engines and the worker lanes finish together. The random-crop decoder decodes only the
 * window on the decoupled paths (nvjpegDecodeParamsSetROI) and on the CPU; the hardware path
 * decodes the full image into a scratch buffer and crops on the device.
 * Encoded bytes for the hardware engines are staged in a pinned buffer on the GPU's NUMA node,
 * allocated once (grow-only) and reused. Hot path: run_batch runs per batch on the GPU stage. */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ops/gpu/kernels.h"
#include "ops/gpu/nvjpeg_api.h"
extern "C" {
#include "core/gpu_backend.h"
#include "ops/cpu/image_ops.h"
#include "ops/cpu/jpeg.h"
}
#include "ops/gpu/gpu_ops.h"

/* TEMPORARY until the CPU image algorithms land on main (see image_ops_gpu.cu). */
#pragma weak stk__random_crop_window
#pragma weak stk__jpeg_peek
#pragma weak stk__jpeg_decode
#pragma weak stk__color_parse
#pragma weak stk__parallel_for

enum { ROUTE_HW = 0, ROUTE_CUDA, ROUTE_HYBRID, ROUTE_CPU, ROUTE_COUNT };
static const char *const kRouteName[ROUTE_COUNT] = {"hardware", "cuda", "hybrid", "cpu"};

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
  stk__jpeg_info info;
  stk__window crop;  /* window to produce (whole image for decoders.image) */
  int route;
  int out_w, out_h;
  uint8_t *out;      /* device */
  double seconds;    /* measured on the lanes */
} sample_job;

typedef struct mixed_state {
  const stk__nvjpeg_api *api;
  char nvjpeg_note[512];   /* why nvJPEG is not used, "" when it is */
  int device_id, numa_node;
  int random_crop;
  stk__color color;
  int channels;
  nvjpegOutputFormat_t format;
  double hw_load;          /* < 0: automatic */
  double area[2], ratio[2];
  int attempts;
  /* nvJPEG objects */
  nvjpegHandle_t handle;   /* DEFAULT backend handle for the decoupled decoders */
  nvjpegJpegDecoder_t decoder[2];
  nvjpegHandle_t hw_handle;
  nvjpegJpegState_t hw_state;
  unsigned hw_engines, hw_cores;
  cudaStream_t hw_stream;
  cudaEvent_t hw_start, hw_done;
  int hw_pending;
  lane *lanes;
  int num_lanes;
  /* per batch, grow-only */
  sample_job *jobs;
  int jobs_capacity;
  uint8_t *hw_staging;     /* pinned encoded bytes for the hardware engines */
  size_t hw_staging_capacity;
  const unsigned char **hw_data;
  size_t *hw_lengths;
  nvjpegImage_t *hw_dest;
  int *hw_index;
  int hw_capacity;
  stk__gpu_arena crop_arena; /* crop descriptors for hardware-decoded random crops */
  void *hw_scratch;          /* full-size hardware decodes of random-crop samples */
  size_t hw_scratch_capacity;
  double cost[ROUTE_COUNT];  /* EWMA seconds per pixel (per lane for the lane routes) */
  uint64_t batches;
} mixed_state;

static double now_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

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

static int lane_create(mixed_state *s, lane *l) {
  if (cudaStreamCreateWithFlags(&l->stream, cudaStreamNonBlocking) != cudaSuccess) return 0;
  if (cudaEventCreateWithFlags(&l->done, cudaEventDisableTiming) != cudaSuccess) return 0;
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

static void nvjpeg_teardown(mixed_state *s) {
  const stk__nvjpeg_api *a = s->api;
  if (!a) return;
  if (s->hw_state) a->JpegStateDestroy(s->hw_state);
  if (s->hw_handle) a->Destroy(s->hw_handle);
  for (int k = 0; k < 2; k++)
    if (s->decoder[k]) a->DecoderDestroy(s->decoder[k]);
  if (s->handle) a->Destroy(s->handle);
  s->hw_state = NULL;
  s->hw_handle = NULL;
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
  if (nv_ok(a->CreateEx(NVJPEG_BACKEND_HARDWARE, NULL, NULL, NVJPEG_FLAGS_DEFAULT, &s->hw_handle)) &&
      nv_ok(a->JpegStateCreate(s->hw_handle, &s->hw_state)) &&
      nv_ok(a->GetHardwareDecoderInfo(s->hw_handle, &s->hw_engines, &s->hw_cores)) && s->hw_engines > 0) {
    /* ready */
  } else {
    if (s->hw_state) a->JpegStateDestroy(s->hw_state);
    if (s->hw_handle) a->Destroy(s->hw_handle);
    s->hw_state = NULL;
    s->hw_handle = NULL;
    s->hw_engines = 0;
  }
}

static stk_status mixed_init_common(stk__op *op, int random_crop, char *err, size_t err_size) {
  if (!&stk__jpeg_peek || !&stk__jpeg_decode || !&stk__color_parse || !&stk__parallel_for) {
    stk__errorf(err, err_size, "%s: the CPU JPEG decoder / worker pool is not linked in this build", op_label(op));
    return STK_ENOTSUP;
  }
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
  const char *color = stk__arg_string(op, "output_type");
  s->color = STK__COLOR_RGB;
  if (color[0] && stk__color_parse(color, &s->color) != STK_OK) {
    stk__errorf(err, err_size, "%s: output_type \"%s\" is not RGB, BGR or GRAY", op_label(op), color);
    return STK_EINVAL;
  }
  s->channels = s->color == STK__COLOR_GRAY ? 1 : 3;
  s->format = s->color == STK__COLOR_GRAY ? NVJPEG_OUTPUT_Y
              : s->color == STK__COLOR_BGR ? NVJPEG_OUTPUT_BGRI
                                           : NVJPEG_OUTPUT_RGBI;
  const stk__arg_value *load = stk__arg(op, "hw_decoder_load");
  s->hw_load = load && load->is_set ? stk__arg_float(op, "hw_decoder_load") : -1.0;
  if (s->hw_load > 1.0) s->hw_load = 1.0;
  if (random_crop) {
    if (!&stk__random_crop_window) {
      stk__errorf(err, err_size, "%s: the CPU crop-window generator is not linked in this build", op_label(op));
      return STK_ENOTSUP;
    }
    size_t n = 0;
    const double *v = stk__arg_float_list(op, "random_area", &n);
    s->area[0] = n >= 1 ? v[0] : 0.08;
    s->area[1] = n >= 2 ? v[1] : 1.0;
    v = stk__arg_float_list(op, "random_aspect_ratio", &n);
    s->ratio[0] = n >= 1 ? v[0] : 3.0 / 4.0;
    s->ratio[1] = n >= 2 ? v[1] : 4.0 / 3.0;
    const stk__arg_value *att = stk__arg(op, "num_attempts");
    s->attempts = att && att->has_value ? (int)stk__arg_int(op, "num_attempts") : 10;
  }
  /* Starting costs (seconds per pixel; lanes per lane); replaced by measurements after a batch. */
  s->cost[ROUTE_HW] = 1.0e-9;
  s->cost[ROUTE_CUDA] = 6.0e-9;
  s->cost[ROUTE_HYBRID] = 8.0e-9;
  s->cost[ROUTE_CPU] = 10.0e-9;
  nvjpeg_setup(s);
  if (s->nvjpeg_note[0] && op->options && op->options->verbose)
    fprintf(stderr, "stoker: %s: %s\n", op_label(op), s->nvjpeg_note);
  if (cudaStreamCreateWithFlags(&s->hw_stream, cudaStreamNonBlocking) != cudaSuccess ||
      cudaEventCreate(&s->hw_start) != cudaSuccess || cudaEventCreate(&s->hw_done) != cudaSuccess) {
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
  if (s->hw_stream) cudaStreamSynchronize(s->hw_stream);
  for (int i = 0; i < s->num_lanes && s->lanes; i++) lane_destroy(s->api, &s->lanes[i]);
  free(s->lanes);
  nvjpeg_teardown(s);
  if (s->hw_start) cudaEventDestroy(s->hw_start);
  if (s->hw_done) cudaEventDestroy(s->hw_done);
  if (s->hw_stream) cudaStreamDestroy(s->hw_stream);
  stk__gpu_pinned_free(s->hw_staging);
  stk__gpu_free(s->hw_scratch);
  stk__gpu_arena_free(&s->crop_arena);
  free(s->jobs);
  free(s->hw_data);
  free(s->hw_lengths);
  free(s->hw_dest);
  free(s->hw_index);
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
  if (cudaStreamSynchronize(l->stream) != cudaSuccess) return STK_ECUDA; /* staging free again */
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
  if (cudaStreamSynchronize(l->stream) != cudaSuccess) return NVJPEG_STATUS_EXECUTION_FAILED;
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
  double t0 = now_seconds();
  if (job->route != ROUTE_CPU && s->api) {
    nvjpegStatus_t st = nvjpeg_lane_decode(s, l, job);
    if (nv_ok(st)) {
      if (cudaStreamSynchronize(l->stream) == cudaSuccess) { /* measured cost includes the GPU part */
        job->seconds = now_seconds() - t0;
        return STK_OK;
      }
      cudaGetLastError();
    }
    job->route = ROUTE_CPU; /* nvJPEG refused it (or failed): libjpeg-turbo decides */
  }
  stk_status st = cpu_decode_upload(w, l, job, index, w->ctx->alloc_count);
  job->seconds = now_seconds() - t0;
  return st;
}

/* ---- Routing --------------------------------------------------------------------------------- */
static int hw_can_take(const mixed_state *s, const stk__jpeg_info *info) {
  if (!s->hw_handle || info->progressive || info->cmyk) return 0;
  if (info->components != 1 && info->components != 3) return 0;
  return info->subsampling == 444 || info->subsampling == 422 || info->subsampling == 420 ||
         info->subsampling == 440 || info->subsampling == 0;
}

static void route_batch(mixed_state *s, sample_job *jobs, int n) {
  double total_px = 0;
  for (int i = 0; i < n; i++) {
    sample_job *j = &jobs[i];
    if (!s->api || j->info.cmyk || j->info.orientation != 1 || (j->info.components != 1 && j->info.components != 3))
      j->route = ROUTE_CPU;
    else if (hw_can_take(s, &j->info)) {
      j->route = ROUTE_HW; /* candidate; the split below decides */
      total_px += (double)j->info.width * j->info.height;
    } else
      j->route = j->info.progressive ? ROUTE_HYBRID : ROUTE_CUDA;
  }
  /* Lane routes: the cheaper decoupled decoder per pixel, with every 8th image going to the
   * other one so both costs stay measured. */
  int lane_best = s->cost[ROUTE_CUDA] <= s->cost[ROUTE_HYBRID] ? ROUTE_CUDA : ROUTE_HYBRID;
  int lane_other = lane_best == ROUTE_CUDA ? ROUTE_HYBRID : ROUTE_CUDA;
  /* Hardware share of the candidate pixels: fixed by hw_decoder_load, else so both sides finish
   * together: hw_px * c_hw = (rest_px * c_lane) / lanes. */
  double share = s->hw_load;
  if (share < 0) {
    double lane_rate = s->num_lanes / s->cost[lane_best]; /* pixels per second over all lanes */
    double hw_rate = 1.0 / s->cost[ROUTE_HW];
    share = hw_rate / (hw_rate + lane_rate);
  }
  double hw_budget = share * total_px, hw_px = 0;
  int lane_count = 0;
  for (int i = 0; i < n; i++) {
    sample_job *j = &jobs[i];
    if (j->route == ROUTE_HW) {
      double px = (double)j->info.width * j->info.height;
      if (hw_px + px * 0.5 <= hw_budget) {
        hw_px += px;
        continue;
      }
      j->route = (++lane_count % 8 == 0) ? lane_other : lane_best;
    }
  }
}

static void ewma(double *cost, double sample) {
  if (sample > 0 && isfinite(sample)) *cost = 0.8 * *cost + 0.2 * sample;
}

/* ---- Hardware batch ------------------------------------------------------------------------- */
static stk_status hw_submit(mixed_state *s, sample_job *jobs, int n, uint64_t *alloc_count, int *hw_count) {
  int m = 0;
  size_t bytes = 0, scratch = 0;
  for (int i = 0; i < n; i++)
    if (jobs[i].route == ROUTE_HW) {
      m++;
      bytes += jobs[i].size;
      if (s->random_crop) scratch += (((size_t)jobs[i].info.width * jobs[i].info.height * s->channels) + 255) & ~(size_t)255;
    }
  *hw_count = m;
  if (m == 0) return STK_OK;
  if (s->hw_pending) cudaEventSynchronize(s->hw_done); /* staging still read by the last batch? */
  if (m > s->hw_capacity) {
    free(s->hw_data);
    free(s->hw_lengths);
    free(s->hw_dest);
    free(s->hw_index);
    s->hw_data = (const unsigned char **)calloc((size_t)m, sizeof *s->hw_data);
    s->hw_lengths = (size_t *)calloc((size_t)m, sizeof *s->hw_lengths);
    s->hw_dest = (nvjpegImage_t *)calloc((size_t)m, sizeof *s->hw_dest);
    s->hw_index = (int *)calloc((size_t)m, sizeof *s->hw_index);
    if (!s->hw_data || !s->hw_lengths || !s->hw_dest || !s->hw_index) {
      s->hw_capacity = 0;
      return STK_ENOMEM;
    }
    s->hw_capacity = m;
    if (alloc_count) __atomic_fetch_add(alloc_count, 1, __ATOMIC_RELAXED);
  }
  if (bytes > s->hw_staging_capacity) {
    void *p = NULL;
    size_t want = bytes + bytes / 2 + 4096;
    stk_status st = stk__gpu_pinned_alloc(&p, want, s->numa_node, NULL, alloc_count);
    if (st != STK_OK) return st;
    stk__gpu_pinned_free(s->hw_staging);
    s->hw_staging = (uint8_t *)p;
    s->hw_staging_capacity = want;
  }
  if (scratch > s->hw_scratch_capacity) {
    void *p = NULL;
    size_t want = scratch + scratch / 4 + 4096;
    stk_status st = stk__gpu_malloc(&p, want, alloc_count);
    if (st != STK_OK) return st;
    stk__gpu_free(s->hw_scratch);
    s->hw_scratch = p;
    s->hw_scratch_capacity = want;
  }
  size_t at = 0, scratch_at = 0;
  int k = 0;
  for (int i = 0; i < n; i++) {
    sample_job *j = &jobs[i];
    if (j->route != ROUTE_HW) continue;
    memcpy(s->hw_staging + at, j->data, j->size);
    s->hw_data[k] = s->hw_staging + at;
    s->hw_lengths[k] = j->size;
    at += j->size;
    memset(&s->hw_dest[k], 0, sizeof s->hw_dest[k]);
    if (s->random_crop) { /* full image into scratch, cropped afterwards */
      s->hw_dest[k].channel[0] = (unsigned char *)s->hw_scratch + scratch_at;
      s->hw_dest[k].pitch[0] = (size_t)j->info.width * s->channels;
      scratch_at += (((size_t)j->info.width * j->info.height * s->channels) + 255) & ~(size_t)255;
    } else {
      s->hw_dest[k].channel[0] = j->out;
      s->hw_dest[k].pitch[0] = (size_t)j->out_w * s->channels;
    }
    s->hw_index[k] = i;
    k++;
  }
  const stk__nvjpeg_api *a = s->api;
  cudaEventRecord(s->hw_start, s->hw_stream);
  nvjpegStatus_t st = a->DecodeBatchedInitialize(s->hw_handle, s->hw_state, m, 1, s->format);
  if (nv_ok(st)) st = a->DecodeBatched(s->hw_handle, s->hw_state, s->hw_data, s->hw_lengths, s->hw_dest, s->hw_stream);
  cudaEventRecord(s->hw_done, s->hw_stream);
  s->hw_pending = 1;
  if (!nv_ok(st)) {
    /* The engines refused the batch: every one of its images goes to the CPU instead. */
    cudaStreamSynchronize(s->hw_stream);
    for (int q = 0; q < m; q++) jobs[s->hw_index[q]].route = ROUTE_CPU;
    *hw_count = 0;
  }
  return STK_OK;
}

/* Crops the hardware-decoded full images of a random-crop batch into the outputs. */
static stk_status hw_crop(mixed_state *s, sample_job *jobs, int hw_count, uint64_t *alloc_count) {
  if (!s->random_crop || hw_count == 0) return STK_OK;
  stk_status st = stk__gpu_arena_reserve(&s->crop_arena, (size_t)hw_count * sizeof(stk__gpu_crop_desc) + 64,
                                         s->numa_node, alloc_count);
  if (st != STK_OK) return st;
  size_t at = stk__gpu_arena_push(&s->crop_arena, (size_t)hw_count * sizeof(stk__gpu_crop_desc));
  stk__gpu_crop_desc *d = (stk__gpu_crop_desc *)(s->crop_arena.host + at);
  int max_w = 0, max_h = 0;
  for (int q = 0; q < hw_count; q++) {
    const sample_job *j = &jobs[s->hw_index[q]];
    d[q].src = s->hw_dest[q].channel[0];
    d[q].src_stride = (int)s->hw_dest[q].pitch[0];
    d[q].x = j->crop.x;
    d[q].y = j->crop.y;
    d[q].w = j->crop.w;
    d[q].h = j->crop.h;
    d[q].channels = s->channels;
    d[q].dst = j->out;
    if (j->crop.w > max_w) max_w = j->crop.w;
    if (j->crop.h > max_h) max_h = j->crop.h;
  }
  st = stk__gpu_arena_upload(&s->crop_arena, s->hw_stream);
  if (st != STK_OK) return st;
  st = stk__gpu_crop_u8_batch((const stk__gpu_crop_desc *)(s->crop_arena.device + at), hw_count, max_w, max_h,
                              s->hw_stream);
  if (st == STK_OK && cudaEventRecord(s->hw_done, s->hw_stream) != cudaSuccess) st = STK_ECUDA;
  return st;
}

/* ---- run_batch --------------------------------------------------------------------------------- */
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
  for (int i = 0; i < n; i++) {
    sample_job *j = &jobs[i];
    memset(j, 0, sizeof *j);
    const stk__tensor *t = &in->samples[i];
    if (t->device != STK_DEVICE_CPU) {
      stk__errorf(ctx->err, ctx->err_size, "%s: encoded input must be in host memory", op_label(op));
      return STK_EINVAL;
    }
    j->data = (const uint8_t *)t->data;
    j->size = t->nbytes;
    char err[256] = "";
    stk_status st = stk__jpeg_peek(j->data, j->size, &j->info, err, sizeof err);
    if (st != STK_OK) {
      stk__errorf(ctx->err, ctx->err_size, "%s: %s: %s", op_label(op), source_of(ctx, i), err);
      return st;
    }
    int w = j->info.width, h = j->info.height;
    if (j->info.orientation >= 5 && j->info.orientation <= 8) { /* EXIF transposes */
      int tmp = w;
      w = h;
      h = tmp;
    }
    if (s->random_crop) {
      stk__rng rng;
      int64_t sample_id = ctx->plan && ctx->plan->samples && i < ctx->plan->batch_size ? ctx->plan->samples[i].sample_id : i;
      stk__rng_init(&rng, op->seed, (uint32_t)op->id, ctx->epoch, sample_id);
      j->crop = stk__random_crop_window(&rng, w, h, s->area[0], s->area[1], s->ratio[0], s->ratio[1], s->attempts);
    } else {
      j->crop.x = j->crop.y = 0;
      j->crop.w = w;
      j->crop.h = h;
    }
    j->out_w = j->crop.w;
    j->out_h = j->crop.h;
    size_t bytes = (size_t)j->out_w * j->out_h * s->channels;
    if (bytes > max_bytes) max_bytes = bytes;
  }
  stk__tensor_list *out = outputs[0];
  stk_status st = stk__gpu_tensor_list_reserve(out, n, max_bytes, ctx->alloc_count);
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
  route_batch(s, jobs, n);
  int hw_count = 0;
  double hw_px = 0;
  st = hw_submit(s, jobs, n, ctx->alloc_count, &hw_count);
  if (st == STK_OK) st = hw_crop(s, jobs, hw_count, ctx->alloc_count);
  if (st != STK_OK) {
    stk__errorf(ctx->err, ctx->err_size, "%s: hardware decode submission failed (%s)", op_label(op), stk_strerror(st));
    return st;
  }
  for (int q = 0; q < hw_count; q++) hw_px += (double)jobs[s->hw_index[q]].info.width * jobs[s->hw_index[q]].info.height;
  /* Everything else on the worker lanes, while the engines work. */
  int *order = (int *)alloca(sizeof(int) * (size_t)(n > 0 ? n : 1));
  int lane_jobs = 0;
  for (int i = 0; i < n; i++)
    if (jobs[i].route != ROUTE_HW) order[lane_jobs++] = i;
  for (int l = 0; l < s->num_lanes; l++) s->lanes[l].used = 0;
  lane_work work = {s, jobs, order, lane_jobs, ctx, op};
  if (lane_jobs > 0) st = stk__parallel_for(ctx, lane_jobs, lane_job, &work);
  /* The consumer's stream waits for the engines and the lanes; no device-wide sync. */
  cudaStream_t stream = (cudaStream_t)ctx->cuda_stream;
  if (hw_count > 0) cudaStreamWaitEvent(stream, s->hw_done, 0);
  for (int l = 0; l < s->num_lanes; l++) {
    if (!s->lanes[l].used) continue;
    cudaEventRecord(s->lanes[l].done, s->lanes[l].stream);
    cudaStreamWaitEvent(stream, s->lanes[l].done, 0);
  }
  if (st != STK_OK) return st;
  /* Costs and counts. */
  uint64_t counts[ROUTE_COUNT] = {0, 0, 0, 0};
  double route_seconds[ROUTE_COUNT] = {0}, route_px[ROUTE_COUNT] = {0};
  for (int i = 0; i < n; i++) {
    counts[jobs[i].route]++;
    route_seconds[jobs[i].route] += jobs[i].seconds;
    route_px[jobs[i].route] += (double)jobs[i].out_w * jobs[i].out_h;
  }
  for (int r = ROUTE_CUDA; r < ROUTE_COUNT; r++)
    if (route_px[r] > 0) ewma(&s->cost[r], route_seconds[r] / route_px[r]);
  if (hw_count > 0 && cudaEventSynchronize(s->hw_done) == cudaSuccess) {
    /* Only the engines' own time: the events bracket the batched decode on its stream. */
    float ms = 0;
    if (cudaEventElapsedTime(&ms, s->hw_start, s->hw_done) == cudaSuccess && hw_px > 0) ewma(&s->cost[ROUTE_HW], ms * 1e-3 / hw_px);
  }
  if (ctx->stats) {
    __atomic_fetch_add(&ctx->stats->decoded_hw, counts[ROUTE_HW], __ATOMIC_RELAXED);
    __atomic_fetch_add(&ctx->stats->decoded_cuda, counts[ROUTE_CUDA], __ATOMIC_RELAXED);
    __atomic_fetch_add(&ctx->stats->decoded_hybrid, counts[ROUTE_HYBRID], __ATOMIC_RELAXED);
    __atomic_fetch_add(&ctx->stats->decoded_cpu, counts[ROUTE_CPU], __ATOMIC_RELAXED);
  }
  s->batches++;
  (void)kRouteName;
  return STK_OK;
}

extern "C" {
const stk__op_impl stk__gpu_impl_decoders_image = {mixed_init_image, mixed_destroy, NULL, NULL, NULL, NULL,
                                                   mixed_run_batch};
const stk__op_impl stk__gpu_impl_decoders_image_random_crop = {mixed_init_random_crop, mixed_destroy, NULL, NULL,
                                                               NULL, NULL, mixed_run_batch};
}
