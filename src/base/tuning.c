/* src/base/tuning.c: the knob table and its one reader (see tuning.h). docs/tuning.md says the
 * same in prose; tests/test_tuning.c fails when the two disagree. Not on a hot path. */
#include "base/tuning.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* clang-format off */
static const stk__knob_row kRows[STK__KNOB_COUNT] = {
  [STK__KNOB_AFFINITY_MASK] = {"STOKER_AFFINITY_MASK", STK__KNOB_TEXT, STK__KNOB_USER, 0, 0, 0, "unset",
    "src/core/exec/affinity.c",
    "One CPU per worker thread, in order: worker i on the i-th entry of a comma-separated list such as "
    "0,2,4,6 (as DALI_AFFINITY_MASK); workers beyond the list, or on an entry that is not one allowed CPU "
    "(warned about), take the default CPUs. Used when the pipeline option affinity_mask is not given; the "
    "option wins."},
  [STK__KNOB_HW_DECODER_LOAD] = {"STOKER_HW_DECODER_LOAD", STK__KNOB_FLOAT, STK__KNOB_USER, -1, -1, 1, "-1",
    "src/ops/decode/decoder_mixed_router.cu",
    "The mixed JPEG decoder's share of the images sent to the hardware engines, for decoders whose "
    "hw_decoder_load argument is not given (the argument wins). -1 (the default): the router "
    "calibrates the engines and the CPU lanes on the first batches, tries the candidate splits on the "
    "pipeline and keeps the fastest, per machine (docs/gpu.md, \"The default split, and the router\"); "
    "0 to 1: that share, fixed (1: every image the engines can take)."},
  [STK__KNOB_ROUTER_TRIAL_BATCHES] = {"STOKER_ROUTER_TRIAL_BATCHES", STK__KNOB_INT, STK__KNOB_USER, 24, 0, 1000, "24",
    "src/ops/decode/decoder_mixed_router.cu",
    "Batches in each arm of the automatic router's trial: when its model chose a CPU share, that "
    "share runs this many batches with the CPU lanes, as many with nvJPEG's CUDA decoder (unless "
    "cuda_decoder_load is given), then load 1 as many, and a share is kept only if it delivered more "
    "than 5% more images per second than load 1 (at least prefetch_queue_depth + 4 each). 0: no "
    "trial, the model's load is kept."},
  [STK__KNOB_ROUTER_CACHE] = {"STOKER_ROUTER_CACHE", STK__KNOB_TEXT, STK__KNOB_USER, 0, 0, 0, "unset",
    "src/ops/decode/decoder_mixed_router.cu",
    "Directory where the router (hw_decoder_load -1, the default) keeps its decisions, one file per key, so later "
    "processes with the same key route as the first did (same bytes across processes; unset: "
    "$XDG_CACHE_HOME/stoker/router, else $HOME/.cache/stoker/router); off: each process measures and "
    "decides anew."},
  [STK__KNOB_ROUTER_BATCHES] = {"STOKER_ROUTER_BATCHES", STK__KNOB_INT, STK__KNOB_USER, 4, 1, 1000, "4",
    "src/ops/decode/decoder_mixed_router.cu",
    "Batches the automatic router calibrates on, at load 0.95, after one warm-up batch; the chosen "
    "load applies from batch 1 + this + prefetch_queue_depth + 6 on. More batches: steadier costs, "
    "a later decision."},
  [STK__KNOB_FUSED_SPLIT] = {"STOKER_FUSED_SPLIT", STK__KNOB_INT, STK__KNOB_USER, 1, 1, 65535, "1",
    "src/ops/common/image_gpu.cu",
    "The fused resize/crop/normalize kernel launches a batch in this many launches one after the "
    "other, so a training step's kernels wait at most one launch's time for the SMs (the training "
    "example uses 8 with --stream-priority normal). Same pixels, same bits."},
  [STK__KNOB_TRACE_ALLOC] = {"STOKER_TRACE_ALLOC", STK__KNOB_BOOL, STK__KNOB_DIAGNOSTIC, 0, 0, 1, "0",
    "src/device/pinned_pool.c",
    "1: one stderr line per page-locked or device allocation stoker makes (size, duration, time "
    "since the first), to tell which allocation held up a training step. nvJPEG's own are not in it."},
  [STK__KNOB_MIXED_TRACE] = {"STOKER_MIXED_TRACE", STK__KNOB_BOOL, STK__KNOB_DIAGNOSTIC, 0, 0, 1, "0",
    "src/ops/decode/decoder_mixed.cu",
    "1: the mixed decoder prints where its batches' time went (run_batch, planning, lanes, engine "
    "set wait and batched-decode call, ms per batch) to stderr when it is destroyed."},
  [STK__KNOB_NVDEC_TRACE] = {"STOKER_NVDEC_TRACE", STK__KNOB_BOOL, STK__KNOB_DIAGNOSTIC, 0, 0, 1, "0",
    "src/ops/video/video_nvdec.cu",
    "1: one stderr line per NVDEC session when it ends: sequences, pictures, frames, and the time in "
    "demux, parser, decode, map, conversion and waits."},
  [STK__KNOB_MIXED_ALLOC] = {"STOKER_MIXED_ALLOC", STK__KNOB_BOOL, STK__KNOB_AB, 0, 0, 1, "0",
    "src/ops/decode/decoder_mixed_alloc.cu",
    "1: nvJPEG's handles and buffers allocate from stoker's stream-ordered device pool and pinned "
    "block pool (its V2 allocators), so nvJPEG's buffer growth calls no cudaFree/cudaHostAlloc. "
    "Ignored where nvJPEG lacks the V2 calls. Output unchanged."},
  [STK__KNOB_MIXED_PIN_RESERVE] = {"STOKER_MIXED_PIN_RESERVE", STK__KNOB_INT, STK__KNOB_AB, 0, 0, 1048576, "0",
    "src/ops/decode/decoder_mixed.cu",
    "MiB of page-locked memory the pinned pool takes when a mixed decoder starts, so sample buffers "
    "growing mid-run are carved from it instead of pinning new chunks (up to 1 GiB each) mid-run. "
    "0: grow on demand."},
  [STK__KNOB_ENGINE_CALLS] = {"STOKER_ENGINE_CALLS", STK__KNOB_INT, STK__KNOB_AB, 0, 0, 8, "0",
    "src/ops/decode/decoder_mixed_hw.cu",
    "Batched calls to the hardware JPEG engines in flight at once (0: as many as batches prepared "
    "ahead). On the H200 two submitting threads decoded 24% more small photographs than one but 9% "
    "fewer 2.5 MP ones (bench/results/h200-nvprobe-c9b9c18): 1 tries one at a time. Output unchanged."},
  [STK__KNOB_GPU_SERIAL_WEIGHTS] = {"STOKER_GPU_SERIAL_WEIGHTS", STK__KNOB_BOOL, STK__KNOB_AB, 0, 0, 1, "0",
    "src/ops/common/image_gpu.cu",
    "1: the GPU resize operators build their weight tables on the GPU stage alone instead of "
    "sharing the work with the workers. Same tables."},
  [STK__KNOB_ARENA_RING] = {"STOKER_ARENA_RING", STK__KNOB_INT, STK__KNOB_AB, 4, 1, 4, "4",
    "src/ops/common/gpu_ops.c",
    "Parameter-upload buffer pairs the GPU operators use in turn (1 waits for each upload before "
    "the next batch's)."},
  [STK__KNOB_NVDEC_DISPLAY_DELAY] = {"STOKER_NVDEC_DISPLAY_DELAY", STK__KNOB_INT, STK__KNOB_AB, 2, 0, 4, "2",
    "src/ops/video/video_nvdec.cu",
    "Pictures NVDEC decodes ahead of the one readers.video maps and converts (0 serialises decode "
    "and conversion). Output unchanged."},
  [STK__KNOB_NVDEC_OUTPUT_SURFACES] = {"STOKER_NVDEC_OUTPUT_SURFACES", STK__KNOB_INT, STK__KNOB_AB, 4, 0, 8, "4",
    "src/ops/video/video_nvdec.cu",
    "Pictures readers.video keeps mapped while their conversion kernels run (0: waits for each "
    "frame's kernel before unmapping it). Output unchanged."},
  [STK__KNOB_NVDEC_SKIP_NONREF] = {"STOKER_NVDEC_SKIP_NONREF", STK__KNOB_BOOL, STK__KNOB_AB, 1, 0, 1, "1",
    "src/ops/video/video_nvdec.cu",
    "1: H.264 non-reference pictures before a sequence's first frame are not decoded on NVDEC. "
    "Output unchanged."},
  [STK__KNOB_FUSED_BLOCKS] = {"STOKER_FUSED_BLOCKS", STK__KNOB_INT, STK__KNOB_KEPT, -1, -1, 65535, "-1",
    "src/ops/common/image_gpu.cu",
    "The fused resize/crop/normalize kernel's resident looping blocks. -1: 4 per SM (the measured "
    "best); 0: one block per 32x8 tile, the grid tests/test_gpu_ops.c compares bit for bit."},
  [STK__KNOB_DENSE_IN_PLACE] = {"STOKER_DENSE_IN_PLACE", STK__KNOB_BOOL, STK__KNOB_KEPT, 1, 0, 1, "1",
    "src/core/exec/executor.c",
    "0: every sample of a dense CPU output is read into its own buffer and copied into the batch "
    "tensor instead of written in place. Same bytes."},
  [STK__KNOB_PINNED_OUTPUTS] = {"STOKER_PINNED_OUTPUTS", STK__KNOB_BOOL, STK__KNOB_KEPT, 1, 0, 1, "1",
    "src/core/exec/executor.c",
    "0: a GPU pipeline's host outputs in malloc'd memory instead of page-locked memory. Same bytes."},
  [STK__KNOB_PINNED_SHRINK] = {"STOKER_PINNED_SHRINK", STK__KNOB_BOOL, STK__KNOB_KEPT, 1, 0, 1, "1",
    "src/core/exec/executor.c",
    "0: pinned sample buffers grow to their list's high-water mark and are never given back "
    "(docs/pipeline.md, \"Host memory\"). Same bytes."},
  [STK__KNOB_PACKED_UPLOAD] = {"STOKER_PACKED_UPLOAD", STK__KNOB_BOOL, STK__KNOB_KEPT, 1, 0, 1, "1",
    "src/core/exec/executor.c",
    "0: each sample of a CPU list a GPU operator reads is uploaded on its own instead of packed "
    "into one pinned block and one DMA per batch. Same bytes."},
  [STK__KNOB_SHARED_UPLOAD] = {"STOKER_SHARED_UPLOAD", STK__KNOB_BOOL, STK__KNOB_KEPT, 1, 0, 1, "1",
    "src/core/exec/executor.c",
    "0: every batch slot gets its own device copy of an uploaded CPU list instead of one per "
    "pipeline. Same bytes."},
  [STK__KNOB_NVDEC_EARLY] = {"STOKER_NVDEC_EARLY", STK__KNOB_BOOL, STK__KNOB_KEPT, 1, 0, 1, "1",
    "src/ops/video/video_reader_gpu.cu",
    "1: readers.video on NVDEC decodes each sequence in its sample's CPU chain; 0: in the GPU stage, "
    "the batch's sequences waited for together. Same bytes for good files."},
  [STK__KNOB_HEVC_CRA_START] = {"STOKER_HEVC_CRA_START", STK__KNOB_BOOL, STK__KNOB_KEPT, 1, 0, 1, "1",
    "src/ops/video/video_demux.c",
    "1: an HEVC seek starts at the wanted keyframe and a CRA there is decoded as a BLA (its leading "
    "pictures dropped); 0: decoding starts where the container's seek lands."},
  [STK__KNOB_TORCH_UPLOAD] = {"STOKER_TORCH_UPLOAD", STK__KNOB_TEXT, STK__KNOB_KEPT, 0, 0, 0, "record",
    "python/stoker/torch.py",
    "How stoker.torch hands over a host output marked .gpu(): record (the side stream's copy, "
    "record_stream for the training stream) or clone (a clone made on the training stream). Read "
    "by Python, listed here so every knob has one home."},
};
/* clang-format on */

static const stk__knob_retired kRetired[] = {
    {"STOKER_MIXED_TUNING",
     "replaced by STOKER_MIXED_TRACE, STOKER_MIXED_ALLOC and STOKER_MIXED_PIN_RESERVE; its other keys were "
     "finished A/Bs and are now fixed (docs/tuning.md, \"Retired\")"},
    {"STOKER_CUDA_BLOCKING_SYNC", "removed: a finished A/B that changed nothing (docs/tuning.md, \"Retired\")"},
};

const stk__knob_row *stk__tuning_row(stk__knob knob) {
  return (int)knob >= 0 && knob < STK__KNOB_COUNT ? &kRows[knob] : NULL;
}

const stk__knob_retired *stk__tuning_retired(size_t *count) {
  *count = sizeof kRetired / sizeof kRetired[0];
  return kRetired;
}

/* Parses `text` as the row's type into *value; 0 when it is one, -1 with err otherwise. */
static int parse_value(const stk__knob_row *row, const char *text, double *value, char *err, size_t err_size) {
  char *end = NULL;
  errno = 0;
  switch (row->type) {
  case STK__KNOB_BOOL:
    if ((text[0] == '0' || text[0] == '1') && !text[1]) {
      *value = text[0] - '0';
      return 0;
    }
    stk__errorf(err, err_size, "%s=%s: not 0 or 1 (docs/tuning.md)", row->name, text);
    return -1;
  case STK__KNOB_INT: {
    long v = strtol(text, &end, 10);
    if (end != text && !*end && errno != ERANGE && v >= row->min && v <= row->max) {
      *value = (double)v;
      return 0;
    }
    stk__errorf(err, err_size, "%s=%s: not a whole number from %.0f to %.0f (docs/tuning.md)", row->name, text,
                row->min, row->max);
    return -1;
  }
  case STK__KNOB_FLOAT: {
    double v = strtod(text, &end);
    if (end != text && !*end && isfinite(v) && v >= row->min && v <= row->max) {
      *value = v;
      return 0;
    }
    stk__errorf(err, err_size, "%s=%s: not a number from %g to %g (docs/tuning.md)", row->name, text, row->min,
                row->max);
    return -1;
  }
  case STK__KNOB_TEXT:
    if (text[0]) return 0;
    stk__errorf(err, err_size, "%s is set but empty (docs/tuning.md)", row->name);
    return -1;
  }
  return -1;
}

stk_status stk__tuning_read(stk__knob knob, double *value, const char **text, int *is_set, char *err,
                            size_t err_size) {
  const stk__knob_row *row = stk__tuning_row(knob);
  if (value) *value = row ? row->default_value : 0.0;
  if (text) *text = NULL;
  if (is_set) *is_set = 0;
  if (!row) {
    stk__errorf(err, err_size, "tuning knob %d is not in the table", (int)knob);
    return STK_EINVAL;
  }
  const char *env = getenv(row->name);
  if (!env) return STK_OK;
  double parsed = row->default_value;
  if (parse_value(row, env, &parsed, err, err_size) != 0) return STK_EINVAL;
  if (value) *value = parsed;
  if (text) *text = env;
  if (is_set) *is_set = 1;
  return STK_OK;
}

double stk__tuning_float(stk__knob knob) {
  double v = 0.0;
  char err[8];
  stk__tuning_read(knob, &v, NULL, NULL, err, sizeof err); /* on a bad value v stays the default */
  return v;
}

long stk__tuning_int(stk__knob knob) { return lround(stk__tuning_float(knob)); }

const char *stk__tuning_text(stk__knob knob) {
  const char *t = NULL;
  char err[8];
  stk__tuning_read(knob, NULL, &t, NULL, err, sizeof err);
  return t;
}

stk_status stk__tuning_check(char *err, size_t err_size) {
  for (int k = 0; k < STK__KNOB_COUNT; k++) {
    stk_status st = stk__tuning_read((stk__knob)k, NULL, NULL, NULL, err, err_size);
    if (st != STK_OK) return st;
  }
  for (size_t i = 0; i < sizeof kRetired / sizeof kRetired[0]; i++)
    if (getenv(kRetired[i].name)) {
      stk__errorf(err, err_size, "%s is set but no longer read: %s", kRetired[i].name, kRetired[i].why);
      return STK_EINVAL;
    }
  return STK_OK;
}
