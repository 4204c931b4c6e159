/* src/ops/decode/decoder_mixed.h: private to the mixed JPEG decoder (decoders.image and
 * decoders.image_random_crop, device "mixed"), shared by its three files, one per part:
 *   - decoder_mixed.cu        the operator shell: init/destroy, the CPU pre-stage (run_sample),
 *                             run_batch's wiring (jobs from the plans, output slots, bad files, stats);
 *   - decoder_mixed_hw.cu     the hardware-engine batch (nvJPEG's hardware backend, batched API);
 *   - decoder_mixed_lanes.cu  the pre-stage's pixels' upload, nvJPEG's CUDA and hybrid decoders on
 *                             worker lanes (in a pipeline: cuda_decoder_load's share), and
 *                             libjpeg-turbo as the fallback for what they refuse;
 *   - decoder_mixed_router.cu hw_decoder_load: the user's, or the automatic router's calibration and
 *                             decision (its rule: jpeg_route_split.h), and the routing record.
 * Where each image goes is decided once per image by src/ops/decode/jpeg_route.h (plain C).
 * Included by CUDA files only. Hot path: the jobs and sets are used per batch. */
#ifndef STOKER_OPS_GPU_DECODER_MIXED_H
#define STOKER_OPS_GPU_DECODER_MIXED_H

#include <cuda_runtime_api.h>
#include <pthread.h>
#include <stdint.h>

#include "ops/common/kernels.h"
#include "base/common.h"
#include "base/tuning.h"
#include "device/cuda/nvjpeg_api.h"
#include "device/device.h"
#include "ops/decode/jpeg_route.h"
#include "ops/decode/jpeg_route_split.h"
#include "ops/decode/decoders.h"
#include "ops/common/image_ops.h"
#include "ops/decode/jpeg.h"
#include "ops/common/gpu_ops.h"
#include "ops/op_impls.h"

/* One decode in flight on a lane: a jpeg stream, decode params and a state of one decoupled
 * decoder with its pinned and device buffers, free again once `done` (recorded on the lane's
 * stream after the image's device stage) has passed. */
typedef struct mixed_lane_slot {
  nvjpegJpegStream_t jpeg_stream;
  nvjpegDecodeParams_t params;
  nvjpegJpegState_t state;
  nvjpegBufferPinned_t pinned;
  nvjpegBufferDevice_t device;
  cudaEvent_t done;
  int pending; /* work was queued on it since its last wait */
} mixed_lane_slot;

/* Slots of a lane: two for the CUDA decoder (GPU_HYBRID), taken in turn so the host stage of one
 * image runs while the device stage of the one before is still on the GPU, and one for the hybrid
 * decoder (HYBRID). */
#define MIXED_LANE_CUDA_SLOTS 2
#define MIXED_LANE_SLOTS      (MIXED_LANE_CUDA_SLOTS + 1)

/* One worker's decoupled decoders: a CUDA stream and its slots. */
typedef struct mixed_lane {
  cudaStream_t stream;
  cudaEvent_t done;
  mixed_lane_slot slot[MIXED_LANE_SLOTS]; /* [0..1] GPU_HYBRID decoder, [2] HYBRID decoder */
  int cuda_turn;                          /* the CUDA slot the next CUDA-decoder image takes */
  stk__tensor host_image;                 /* CPU fallback decode */
  uint8_t *staging;                       /* pinned, for the CPU fallback upload */
  size_t staging_capacity;
  size_t host_counted; /* host bytes counted in the budget: staging, host_image, nvJPEG's pinned */
} mixed_lane;

/* One image of the batch being decoded. */
typedef struct mixed_job {
  const uint8_t *data;
  size_t size;
  int pinned;                /* data is page-locked (the engine pins a pre-staged op's inputs) */
  const stk__tensor *staged; /* decoded by the CPU pre-stage: the pixels, else NULL */
  stk__jpeg_plan plan;       /* header, window, planned route (made once per image) */
  int route;                 /* how it is decoded: the plan's route, or CPU after an nvJPEG refusal */
  int failed;                /* bad file, skipped (skip_bad_files) */
  int replaced;              /* failed in the executor's CPU chain (counted there) */
  int early;                 /* decoded on a lane by prepare_batch (stk__mixed_lanes_early) */
  int out_w, out_h;          /* plan.crop.w x plan.crop.h */
  uint8_t *out;              /* device */
} mixed_job;

/* What one batch owns from its planning (prepare_batch, or run_batch on its own) to the end of its
 * run_batch -- its jobs -- and its hardware batch until the engines are done with it. */
typedef struct mixed_hw_set {
  uint64_t seq;    /* the batch holding the set (ctx->batch_seq, or a private number for
                                a batch planned by run_batch itself); 0 = free. Under set_lock */
  int prepared;    /* prepare_batch finished for seq; under set_lock */
  mixed_job *jobs; /* the batch's images, jobs_capacity made (grow-only) */
  size_t *room;    /* jobs_capacity of them: each image's bytes in the output list (whole image) */
  int jobs_capacity;
  int n;        /* images of the batch */
  int hw_count; /* of which the engines decode (after a refusal: 0) */
  nvjpegJpegState_t state;
  cudaStream_t stream;
  cudaEvent_t done;
  nvjpegHandle_t handle;  /* the hardware handle this set submits on (hw_handle, not owned) */
  int pending;            /* work was queued; wait on done before reusing the buffers */
  cudaStream_t join;      /* waits for the lanes that decoded the batch's jobs in prepare_batch */
  cudaEvent_t lanes_done; /* recorded on join after the jobs prepare_batch decoded on the lanes */
  int lanes_pending;      /* lanes_done was recorded for this batch: run_batch's stream waits on it */
  uint8_t *staging;       /* pinned copy of encoded bytes that were not pinned already */
  size_t staging_capacity;
  size_t host_counted; /* host bytes counted in the budget (the staging) */
  void *scratch;       /* full-size hardware decodes of random-crop samples */
  size_t scratch_capacity;
  stk__gpu_arena crop_arena;  /* crop descriptors for hardware-decoded random crops */
  const unsigned char **data; /* DecodeBatched's arrays, capacity entries */
  size_t *lengths;
  nvjpegImage_t *dest;
  int *index;                   /* job of each entry */
  nvjpegDecodeParams_t *params; /* per entry, window decodes (hw_roi): params_capacity made */
  int capacity, params_capacity;
} mixed_hw_set;

/* Engine sets: batches prepared ahead each hold one (4 and the engines' memory pool made at init
 * were the fastest at prefetch 4). */
#define MIXED_HW_SETS 4

/* The mixed decoder's knobs (src/base/tuning.c), read at init. None of them changes the routing
 * or the output bytes. */
typedef struct mixed_hw_tuning {
  int trace;       /* STOKER_MIXED_TRACE: where run_batch's time went, printed when the operator is destroyed */
  int alloc;       /* STOKER_MIXED_ALLOC: nvJPEG's memory from stoker's pools (decoder_mixed_alloc.cu) */
  int pin_reserve; /* STOKER_MIXED_PIN_RESERVE: MiB of page-locked memory the pinned pool takes at init */
  int engine_calls; /* STOKER_ENGINE_CALLS: batched engine calls in flight at once (0: as many as sets) */
} mixed_hw_tuning;

/* Nanoseconds summed over batches (tuning.trace): run_batch on the GPU stage, of which planning and
 * submitting there (~0 when the prepare task did it) and the lanes; the engine submission's set wait
 * and DecodeBatched call, on whichever thread made them. */
typedef struct mixed_trace {
  uint64_t run_batch, plan, hw_set_wait, hw_decode_call, lanes, batches;
} mixed_trace;

/* hw_decoder_load's source and, when automatic, the router's state (decoder_mixed_router.cu; the
 * batches by number: stk__route_schedule). */
typedef struct mixed_route {
  int automatic;             /* 0: hw_decoder_load fixed (router.hw_load) */
  stk__route_schedule when; /* which batches calibrate, and where the decision applies */
  int stage;                 /* 0 calibrating, 1 the model's load known (trial), 2 judged; written under
                                lock after the loads (release), read unlocked (acquire) */
  int gave_up;               /* under lock: a wait for a stage timed out (never again) */
  double model_load;         /* the model's load: the trial's arms (stage >= 1) */
  double user_cuda;          /* cuda_decoder_load outside the trial's CUDA arm (the user's, else 0) */
  stk__route_split arms[STK__ROUTE_MAX_ARMS]; /* the trial's splits (stage >= 1) */
  stk__route_split verdict;  /* the split from when.final_at on (stage 2) */
  stk__route_trial trial;    /* the trial's clock (under lock) */
  char key[128];             /* the decision's key (stage >= 1) */
  char cache_dir[1024];      /* where decisions are kept, "" when nowhere (stage >= 1) */
  char model_line[320];      /* the model's decision, one line (stage >= 1) */
  stk__route_calib calib;    /* the window's totals (open from batch 1's end to batch last's) */
  uint64_t key_pixels, key_images; /* batches first..last by number (deterministic): the record key */
  int cpus, threads;
  pthread_mutex_t lock;
  pthread_cond_t decided_cond;
  int made;
  char record[320];          /* the routing record (stats.decoder_route) */
  int record_sent;           /* the record went into a batch's stats */
} mixed_route;

typedef struct mixed_nv_alloc mixed_nv_alloc; /* decoder_mixed_alloc.cu */

typedef struct mixed_state {
  const stk__nvjpeg_api *api; /* NULL: nvJPEG not loaded, everything on the CPU */
  mixed_nv_alloc *nv_alloc;   /* tuning.alloc: the allocators nvJPEG's handles and buffers use; NULL: its own */
  char nvjpeg_note[512];      /* why nvJPEG is not used, "" when it is */
  int device_id, numa_node;
  int random_crop;
  stk__decoder_params params; /* the CPU decoder's reading of the arguments (same windows, colour) */
  stk__jpeg_router router;    /* what the routing may use (nvJPEG, engines, hw_ and cuda_decoder_load, channels);
                                 automatic: hw_load is the calibration's, stk__mixed_route_load says per batch */
  mixed_route route;
  stk__color color;
  int channels;
  nvjpegOutputFormat_t format;
  int stream_priority;           /* the pipeline's stk_stream_priority for this op's streams */
  int skip_bad_files;            /* options.skip_bad_files: bad files are replaced and counted, not fatal */
  stk__host_budget *host_budget; /* op->host_budget: the pipeline's, NULL on its own (mixed_host_recount) */
  /* nvJPEG objects */
  nvjpegHandle_t handle; /* DEFAULT backend handle for the decoupled decoders */
  nvjpegJpegDecoder_t decoder[2];
  nvjpegHandle_t hw_handle; /* NULL: no hardware engines; every set submits on it */
  unsigned hw_engines, hw_cores;
  int hw_roi;                     /* random crops: the engines decode the window only (nvJPEG has
                                     DecodeBatchedEx); else whole images into scratch, then cut */
  mixed_hw_set hw[MIXED_HW_SETS]; /* a batch takes the lowest-numbered free set, so batch N+1 is
                                     submitted while the engines still decode batch N */
  mixed_hw_tuning tuning;
  mixed_trace trace;        /* atomics: prepare tasks and run_batch add to it */
  pthread_mutex_t set_lock; /* the sets' seq/prepared, max_image_bytes, private_seq */
  pthread_cond_t set_freed;  /* also signalled when an engine call ends (tuning.engine_calls) */
  int set_lock_made;
  int engine_calls;          /* under set_lock: batched engine calls in flight (tuning.engine_calls > 0) */
  uint64_t private_seq; /* numbers for batches run_batch plans itself (counting down from max) */
  mixed_lane *lanes;
  int num_lanes;
  size_t max_image_bytes; /* largest decoded image so far (256-aligned): hardware scratch stride */
} mixed_state;

static inline const char *mixed_op_label(const stk__op *op) { return op->name ? op->name : op->schema->name; }

static inline const char *mixed_source_of(const stk__batch_ctx *ctx, int i) {
  if (ctx->plan && ctx->plan->samples && i < ctx->plan->batch_size && ctx->plan->samples[i].source)
    return ctx->plan->samples[i].source;
  return "(unknown file)";
}

static inline int mixed_nv_ok(nvjpegStatus_t st) { return st == NVJPEG_STATUS_SUCCESS; }

/* Job j's whole decoded image in bytes (its pitch is the JPEG's own width: stk__jpeg_plan_full_bytes),
 * 256-aligned as nvJPEG wants its outputs: a whole-image output room, and its place in the engines'
 * scratch. */
static inline size_t mixed_full_bytes(const mixed_state *s, const mixed_job *j) {
  return (stk__jpeg_plan_full_bytes(&s->router, &j->plan) + 255) & ~(size_t)255;
}

/* The host buffers this operator keeps itself -- the sets' pinned staging of encoded bytes, the
 * lanes' host_image (CPU fallback decode), pinned staging and nvJPEG pinned buffers -- count in the
 * pipeline's host memory budget like the workers' scratch: counted whatever the limit (they must
 * exist), so host_bytes_held and the budget's room see them (docs/robustness.md). *counted: what
 * the buffer has counted so far; `now`: what it holds. Called by the buffer's only user. */
static inline void mixed_host_recount(const mixed_state *s, size_t *counted, size_t now) {
  if (now > *counted) stk__host_budget_count(s->host_budget, now - *counted);
  else stk__host_budget_give(s->host_budget, *counted - now);
  *counted = now;
}

/* ---- decoder_mixed_alloc.cu: nvJPEG's allocators ------------------------------------------- */
/* tuning.alloc (where nvJPEG has the V2 calls): s->nv_alloc made; close frees it once every nvJPEG
 * object is destroyed. The creation calls below use it when set, the library's defaults else. */
STK_INTERNAL void stk__mixed_alloc_open(mixed_state *s);
STK_INTERNAL void stk__mixed_alloc_close(mixed_state *s);
STK_INTERNAL nvjpegStatus_t stk__mixed_handle_create(mixed_state *s, nvjpegBackend_t backend, nvjpegHandle_t *handle);
STK_INTERNAL nvjpegStatus_t stk__mixed_buffers_create(mixed_state *s, nvjpegBufferPinned_t *pinned,
                                                      nvjpegBufferDevice_t *device);

/* ---- decoder_mixed_hw.cu: the hardware-engine batch ---------------------------------------- */
/* Brings up the engines (handle, one state per set) on a loaded nvJPEG; leaves them off (hw_handle
 * NULL) when the GPU has none or anything fails. */
STK_INTERNAL void stk__mixed_hw_open(mixed_state *s);
/* Waits for the sets' streams, then destroys the engines' nvJPEG objects (states, handle); the
 * engines are then off. */
STK_INTERNAL void stk__mixed_hw_close(mixed_state *s);
/* The two sets' CUDA streams and events (made even without engines, as before). */
STK_INTERNAL stk_status stk__mixed_hw_sets_create(mixed_state *s);
/* Waits for the sets' work and frees their streams, events and buffers (their nvJPEG states are
 * stk__mixed_hw_close's). */
STK_INTERNAL void stk__mixed_hw_sets_free(mixed_state *s);
/* Submits the batch's STK__JPEG_ROUTE_HW jobs (h->jobs, h->n) to the engines on set h and crops
 * random-crop decodes: on this thread when on_worker, else on a worker (a one-item parallel_for
 * from the GPU stage). Sets h->hw_count: images the engines decode (0 when none, or when they
 * refused the batch: its jobs are then routed to the CPU). `stride`: the scratch stride. A failure
 * is reported in ctx->err, naming op. */
STK_INTERNAL stk_status stk__mixed_hw_run(const stk__op *op, mixed_state *s, stk__batch_ctx *ctx, mixed_hw_set *h,
                                          size_t stride, int on_worker);
/* The sets as batch slots (set_lock): acquire waits for a free set and gives it to batch seq;
 * find returns the set batch seq holds (prepared only when `prepared`), or NULL; release frees it. */
STK_INTERNAL mixed_hw_set *stk__mixed_set_acquire(mixed_state *s, uint64_t seq);
STK_INTERNAL mixed_hw_set *stk__mixed_set_find(mixed_state *s, uint64_t seq, int prepared);
STK_INTERNAL void stk__mixed_set_release(mixed_state *s, mixed_hw_set *h);
/* Grows h->jobs to n (counted); STK_ENOMEM. */
STK_INTERNAL stk_status stk__mixed_set_jobs(mixed_hw_set *h, int n, uint64_t *alloc_count);

/* ---- decoder_mixed_lanes.cu: the lanes and the CPU fallback --------------------------------- */
/* One lane per worker (nvJPEG objects only when nvJPEG is up); STK_ENVJPEG naming the lane. */
STK_INTERNAL stk_status stk__mixed_lanes_create(const stk__op *op, mixed_state *s, char *err, size_t err_size);
STK_INTERNAL void stk__mixed_lanes_destroy(mixed_state *s);
/* Every job of set h that is not the engines': the pre-stage's pixels are uploaded on the
 * consumer's stream; the others (but those prepare_batch decoded: job.early) are decoded on the
 * worker lanes (nvJPEG, else libjpeg-turbo + upload), and the consumer's stream is made to wait
 * for the lanes, h->lanes_done included. */
STK_INTERNAL stk_status stk__mixed_lanes_run(const stk__op *op, mixed_state *s, stk__batch_ctx *ctx, mixed_hw_set *h);
/* In prepare_batch (on a worker): submits set h's engine part (stk__mixed_hw_run,
 * `stride`) and decodes its nvJPEG-lane jobs (CUDA and hybrid routes) on the workers' lanes, all as
 * one parallel_for (the submission first; the calling worker helps), marks those jobs early and
 * records h->lanes_done on h->join, which waits for every lane that decoded one. */
STK_INTERNAL stk_status stk__mixed_lanes_early(const stk__op *op, mixed_state *s, stk__batch_ctx *ctx, mixed_hw_set *h,
                                               size_t stride);

/* ---- decoder_mixed_router.cu: hw_decoder_load ------------------------------------------------ */
/* Reads hw_decoder_load (argument, else STOKER_HW_DECODER_LOAD, else automatic) into s->router and
 * s->route; STK_EINVAL naming the knob when it is bad. After nvjpeg setup (needs router.hw_engines). */
STK_INTERNAL stk_status stk__mixed_route_init(const stk__op *op, mixed_state *s, char *err, size_t err_size);
STK_INTERNAL void stk__mixed_route_destroy(mixed_state *s);
/* Sets router->hw_load and router->cuda_load to the split the images of batch `batch_seq` are
 * routed with (0: outside a pipeline). May wait for the decision (it is made before such a batch is
 * planned; the wait is a safety net). */
STK_INTERNAL void stk__mixed_route_apply(mixed_state *s, uint64_t batch_seq, stk__jpeg_router *router);
/* 1 while the calibration measures (callers then time what they measure). */
STK_INTERNAL int stk__mixed_route_measuring(mixed_state *s);
/* One image planned (run_sample): its header, and its libjpeg-turbo decode's thread CPU seconds
 * (< 0: not decoded on the CPU). */
STK_INTERNAL void stk__mixed_route_image(mixed_state *s, uint64_t batch_seq, const stk__jpeg_info *info,
                                         double cpu_decode_s);
/* One engine submission of `images` images, busy from start to end (stk__now seconds). */
STK_INTERNAL void stk__mixed_route_engine(mixed_state *s, double start, double end, int images);
/* At the end of run_batch (GPU stage): opens and closes the window, decides, and puts the routing
 * record into the batch's stats (ctx->stats->decoder_route) once it has a new one. */
STK_INTERNAL void stk__mixed_route_batch_done(const stk__op *op, mixed_state *s, stk__batch_ctx *ctx);

#endif
