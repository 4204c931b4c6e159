/* src/ops/decode/jpeg_route_split.h: the automatic router of the mixed JPEG decoder, in plain C (no
 * CUDA), tested on its own with measured-cost fixtures (src/ops/decode/test_jpeg_route_split.c).
 *
 * hw_decoder_load (the share of the batch positions whose images the hardware engines take, the
 * rest decoded by libjpeg-turbo on the worker threads) is chosen from what each path costs on this
 * machine and these images, measured on the first batches (the calibration, jpeg_route_calib_*):
 *   - the engines: seconds of engine time per image (the union of the batched submissions' wall
 *     intervals, call to `done` event, over the images they decoded: the engines are one resource,
 *     whatever set submits; nvJPEG's hardware call returns when the engines are done -- on the H200
 *     the event followed the return by ~3 us an image -- so the interval is the call);
 *   - a CPU lane: one thread's CPU seconds to decode one image (CLOCK_THREAD_CPUTIME_ID around
 *     libjpeg-turbo);
 *   - everything else every image costs on the CPU whatever its route (reading, planning, the
 *     other operators): the CPU time of the pipeline's threads (stk__pool_cpu_seconds: not the
 *     process's, where a training loop runs too) in the window minus the decodes', per image
 *     planned in it;
 *   - the CPUs the work may use: the process's affinity mask and the pipeline's worker threads.
 * The rule (stk__route_choose) models throughput at a load L as the slower of the engines
 * (1 / (L q e)) and the CPUs (P / (o + (1 - L q) c)), q the share of images the engines can take,
 * P = min(CPUs, threads), and picks, on a grid of 0.05 steps, the largest L (the fewest CPU cores
 * per image) whose throughput is within STK__ROUTE_TOLERANCE of the best: all to the engines unless
 * they would be the bottleneck, then the CPU lanes take just the excess.
 * Not on a hot path (a few calls per batch during calibration, one decision). */
#ifndef STOKER_OPS_DECODE_JPEG_ROUTE_SPLIT_H
#define STOKER_OPS_DECODE_JPEG_ROUTE_SPLIT_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "base/common.h"

#ifdef __cplusplus
extern "C" {
#endif

#define STK__ROUTE_STEP       0.05 /* the loads the rule chooses from: 0, 0.05, ..., 1 */
/* A lower load (a larger CPU share) must beat the best higher one by more than this. The model's gain
 * from a CPU share is an upper bound -- it has no term for the GPU stage, the submission path or the
 * contention CPU decodes add -- and a CPU lane costs ~40 times the CPU of an engine image. On the H200
 * (ImageNet-sized photographs) the model promised +18% at 0.85 on 16 CPUs; fixed loads measured
 * +10% at 0.8 for 3.2 times the cores, +0.4% at 0.95 for 1.5 times (bench/RESULTS.md). */
#define STK__ROUTE_TOLERANCE 0.15
/* The split the calibration batches run at: mostly engines, so the few CPU decodes that measure a
 * lane's cost do not load the CPUs the engines' submissions (nvJPEG's host-side parsing) need. */
#define STK__ROUTE_CALIB_LOAD 0.95
#define STK__ROUTE_ALONE_LOAD 1.0

/* What the calibration measured (per image: averaged over the window's images). */
typedef struct stk__route_costs {
  double engine_s;     /* engine seconds per image the engines decoded; <= 0: not measured */
  double cpu_decode_s; /* one thread's CPU seconds per image libjpeg-turbo decoded; <= 0: not measured */
  double cpu_other_s;  /* CPU seconds every image costs besides its decode (>= 0) */
  double eligible;     /* share of the images the engines can take (baseline, 1 or 3 components), 0..1 */
  double mean_pixels;  /* the calibration images' mean size (for the record) */
  int cpus;            /* CPUs the process may run on (its affinity mask) */
  int threads;         /* the pipeline's worker threads (num_threads) */
} stk__route_costs;

typedef struct stk__route_choice {
  double hw_load;       /* the chosen hw_decoder_load, a multiple of STK__ROUTE_STEP */
  double images_per_s;  /* the model's throughput at it */
  double engines_only;  /* the model's throughput at load 1 (no CPU decodes but what the engines refuse) */
  double cpu_cores;     /* CPU cores busy at that throughput (the model's) */
  const char *bound;    /* "engines", "CPU" or "both" at the chosen load; or why nothing was modelled */
} stk__route_choice;

/* The model's images/s at load `load` (0..1); *cpu_cores (may be NULL): CPU cores it keeps busy. */
STK_INTERNAL double stk__route_throughput(const stk__route_costs *c, double load, double *cpu_cores);

/* The rule. Without engine costs (no engines, or none measured): load 0 when the engines took no
 * image, else 1 (nothing to balance against). Without a CPU decode cost: 1 (the engines take all
 * they can). Deterministic: the same costs give the same choice. */
STK_INTERNAL void stk__route_choose(const stk__route_costs *c, stk__route_choice *out);

/* The one-line record of a decision ("hw_decoder_load auto -> 0.95: ..."), into buf. */
STK_INTERNAL void stk__route_describe(const stk__route_costs *c, const stk__route_choice *choice, char *buf,
                                      size_t size);

/* ---- When: the pipeline's batches by number (batch_seq, from 1) -------------------------------- */
/* A split: the engines' share (hw_decoder_load) and the CUDA decoder's share of the rest
 * (cuda_decoder_load). */
typedef struct stk__route_split {
  double hw, cuda;
} stk__route_split;

#define STK__ROUTE_MAX_ARMS 3

/* Batch 1 warms up; batches first..last are calibrated at STK__ROUTE_CALIB_LOAD; the model's load
 * is decided when batch `last` has run and applies from switch_at on: a full set of batch slots
 * (prefetch_queue_depth + 2) and 4 more after it, so no sample of such a batch is planned before
 * the decision (a batch is planned only once the batch a full set of slots earlier was delivered).
 * Then the trial, an A/B of what the model cannot see (the contention a CPU share adds, the
 * engines' true rate, nvJPEG's CUDA decoder, a consumer slower than every split): `arms` arms of
 * arm_len batches each from switch_at on -- the model's load with the CPU lanes, (with 3 arms) the
 * model's load with the CUDA decoder taking the CPU's share, and last load 1 -- each timed over
 * its batches after the first `skip` (a full set of slots, so the arm's own batches fill the
 * pipeline); the verdict applies from final_at on, load 1 in between. Without a trial (trial
 * batches 0) arm_len is 0 and trial_end = final_at = switch_at: the model's load is the verdict. */
typedef struct stk__route_schedule {
  uint64_t first, last, switch_at;
  uint64_t arm_len, trial_end, final_at, skip;
  int arms;
} stk__route_schedule;
/* trial_batches: each arm's length (0: no trial; else at least skip + 2, so >= 2 batches are timed);
 * arms: 2 or 3 (with the CUDA decoder's arm). */
STK_INTERNAL stk__route_schedule stk__route_schedule_make(int calibration_batches, int prefetch_queue_depth,
                                                          int trial_batches, int arms);

/* The trial's arms for the model's load `model` (hw share) when the user's cuda_decoder_load is
 * `cuda` (the CPU arm and load 1 keep it; the CUDA arm, when there are 3, takes 1): when model is 1
 * there is nothing to try and every arm is {1, cuda}. */
STK_INTERNAL void stk__route_trial_arms(const stk__route_schedule *when, double model, double cuda,
                                        stk__route_split arms[STK__ROUTE_MAX_ARMS]);

/* The split batch `batch_seq` is routed with, the router being at `stage` (0 calibrating, 1 the
 * model's load known, trial running, 2 judged): the calibration load before switch_at (and while the
 * model is not decided); arm k's in the trial; {1, arms' last cuda} after it until the verdict
 * applies; the verdict from final_at on once judged (until then {1, ...}). Outside a pipeline
 * (batch_seq 0, no batches to calibrate on) STK__ROUTE_ALONE_LOAD: every image the engines can take.
 * `cuda` is the cuda share outside the trial's arms (the user's). */
STK_INTERNAL stk__route_split stk__route_batch_split(const stk__route_schedule *when, uint64_t batch_seq, int stage,
                                                     const stk__route_split arms[STK__ROUTE_MAX_ARMS],
                                                     stk__route_split verdict, double cuda);

/* The trial's clock: each arm's images, the two done-times that bound them and the process's
 * pinning seconds at each (stk__gpu_pinning_seconds): an arm that moves images to the CPU lanes
 * grows their page-locked buffers while it runs (seconds of cudaHostAlloc on camera-sized images,
 * during which no CUDA call of the process proceeds), a cost paid once that the steady split does
 * not pay, so an arm's time leaves it out. */
typedef struct stk__route_trial {
  double t0[STK__ROUTE_MAX_ARMS], t1[STK__ROUTE_MAX_ARMS]; /* done-time before the timed batches, of the last */
  double pin0[STK__ROUTE_MAX_ARMS], pin1[STK__ROUTE_MAX_ARMS]; /* pinning seconds at t0 and t1 */
  uint64_t images[STK__ROUTE_MAX_ARMS];                   /* images of the timed batches */
  int marks[STK__ROUTE_MAX_ARMS];                         /* bit 0: t0 set, bit 1: t1 set */
} stk__route_trial;

/* A batch of the pipeline is done (`now`, seconds; the process has spent `pinning` seconds pinning
 * memory so far): counts it into its arm. Returns 1 when it is the trial's last batch (time to
 * judge). */
STK_INTERNAL int stk__route_trial_batch(stk__route_trial *t, const stk__route_schedule *when, uint64_t batch_seq,
                                        int images, double now, double pinning);
/* Seconds of pinning left out of arm a's time (0 when it was not timed). */
STK_INTERNAL double stk__route_trial_pinning(const stk__route_trial *t, int a);

/* Another arm must beat the last (load 1) by more than this in the trial to be kept. */
#define STK__ROUTE_TRIAL_MARGIN 0.05
/* The verdict, as the index of an arm: the fastest of the other arms when it delivered more than
 * (1 + STK__ROUTE_TRIAL_MARGIN) times the last arm's images per second, else the last (also when
 * the last or every other arm was not timed). An arm's rate is its images over its time less the
 * pinning in it, that time counted as at least a quarter of the arm's (an arm that was mostly
 * pinning says little). rates (may be NULL): each arm's images per second (0 when not timed). */
STK_INTERNAL int stk__route_trial_verdict(const stk__route_trial *t, const stk__route_schedule *when,
                                          double rates[STK__ROUTE_MAX_ARMS]);

/* The key a decision is recorded under in a process: what the costs depend on (deterministic
 * inputs only: mean_pixels is the calibration batches' by number). */
STK_INTERNAL void stk__route_key(char *buf, size_t size, int device_id, int random_crop, int channels, int threads,
                                 int cpus, double mean_pixels);

/* ---- The calibration's measurements ----------------------------------------------------------- */
#define STK__ROUTE_MAX_INTERVALS 256

/* Totals over the calibration window, filled from the workers (cpu, planned) and from whoever
 * submits to the engines (engine); thread-safe (a mutex: a few calls per image during calibration
 * only). Zero-initialise, then stk__route_calib_init. */
typedef struct stk__route_calib {
  pthread_mutex_t lock;
  int open;                          /* the window is open: measurements count */
  double pipeline_cpu_start, wall_start;
  double cpu_decode_s;               /* summed thread CPU seconds of libjpeg-turbo decodes */
  uint64_t cpu_images, planned, eligible;
  double pixels;                     /* summed pixels of the planned images */
  double interval_start[STK__ROUTE_MAX_INTERVALS], interval_end[STK__ROUTE_MAX_INTERVALS];
  int intervals;
  uint64_t engine_images;
} stk__route_calib;

STK_INTERNAL int stk__route_calib_init(stk__route_calib *k);
STK_INTERNAL void stk__route_calib_destroy(stk__route_calib *k);
/* Opens the window at (the pipeline threads' CPU seconds, wall seconds) = (pipeline_cpu, wall). */
STK_INTERNAL void stk__route_calib_open(stk__route_calib *k, double pipeline_cpu, double wall);
/* 1 while the window is open (a racy read: a measurement that misses the window is dropped). */
STK_INTERNAL int stk__route_calib_is_open(stk__route_calib *k);
/* One image planned in the window: its pixels, whether the engines can take it, and the thread CPU
 * seconds of its libjpeg-turbo decode (< 0: not decoded on the CPU). */
STK_INTERNAL void stk__route_calib_image(stk__route_calib *k, double pixels, int eligible, double cpu_decode_s);
/* One engine submission of `images` images, busy from start to end (wall seconds). */
STK_INTERNAL void stk__route_calib_engine(stk__route_calib *k, double start, double end, int images);
/* Closes the window at (pipeline_cpu, wall) and turns the totals into costs (cpus and threads are
 * the caller's). The union of the engine intervals is their busy time. */
STK_INTERNAL void stk__route_calib_close(stk__route_calib *k, double pipeline_cpu, double wall, int cpus, int threads,
                                         stk__route_costs *out);
/* The union length of n intervals (sorted in place by start). */
STK_INTERNAL double stk__route_interval_union(double *start, double *end, int n);

#ifdef __cplusplus
}
#endif
#endif
