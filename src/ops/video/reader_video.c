/* src/ops/video/reader_video.c: readers.video -- reads sequences of frames from video files (DALI's
 * names and semantics, docs/operators-video.md). This file is the operator: its arguments, the
 * CPU implementation (libavcodec decode on the worker threads, video_decode_cpu.c) and the schema;
 * the data set (listing, start-up index, sequences, order) is video_dataset.c, shared with the
 * NVDEC implementation (device="gpu": src/ops/video/video_reader_gpu.cu).
 * Hot path: run_sample (one sequence per call, worker threads); plan_batch (per batch).
 *
 * Outputs (always all four; the Python front end returns those enable_* asks for, in DALI's order):
 *   0 video      [F, H, W, 3] uint8 or float32, layout "FHWC" (F = sequence_length)
 *   1 label      int32 [1]
 *   2 frame_num  int32 [1]: the sequence's first frame number
 *   3 timestamps float32 [F]: each frame's time in seconds (-1 for padded frames)
 * Each worker thread keeps one decoder session (its file stays open between samples). */
#include <stdlib.h>
#include <string.h>

#include "ops/video/video_dataset.h"
#include "ops/op_impls.h"
#include "ops/video/video_decode_cpu.h"
#include "ops/common/dali_hints.h"

typedef struct video_reader {
  stk__video_dataset *dataset;
  stk__video_format format;
  int sequence_length;
  int num_sessions;
  stk__video_cpu_decoder **sessions; /* per worker thread, created by that thread on first use */
} video_reader;

stk_status stk__video_format_from_op(const stk__op *op, stk__video_format *fmt, char *err, size_t err_size) {
  const char *dtype = stk__arg_string(op, "dtype"), *image_type = stk__arg_string(op, "image_type");
  memset(fmt, 0, sizeof *fmt);
  if (strcmp(dtype, "uint8") == 0) fmt->as_float = 0;
  else if (strcmp(dtype, "float") == 0 || strcmp(dtype, "float32") == 0) fmt->as_float = 1;
  else {
    stk__errorf(err, err_size, "readers.video: dtype \"%s\" is not uint8 or float", dtype);
    return STK_EINVAL;
  }
  if (strcmp(image_type, "RGB") == 0) fmt->image_type = STK__VIDEO_RGB;
  else if (strcmp(image_type, "YCbCr") == 0) fmt->image_type = STK__VIDEO_YCBCR;
  else {
    stk__errorf(err, err_size, "readers.video: image_type \"%s\" is not RGB or YCbCr", image_type);
    return STK_EINVAL;
  }
  fmt->normalized = stk__arg_bool(op, "normalized");
  if (fmt->normalized && !fmt->as_float) {
    stk__errorf(err, err_size, "readers.video: normalized=true needs dtype=float");
    return STK_EINVAL;
  }
  return STK_OK;
}

stk_status stk__video_dataset_config_from_op(const stk__op *op, stk__video_dataset_config *c, char *err,
                                             size_t err_size) {
  memset(c, 0, sizeof *c);
  c->file_root = stk__arg_string(op, "file_root");
  c->file_list = stk__arg_string(op, "file_list");
  c->filenames = stk__arg_string_list(op, "filenames", &c->num_filenames);
  c->labels = stk__arg_is_set(op, "labels") ? stk__arg_int_list(op, "labels", &c->num_labels) : NULL;
  c->file_list_frame_num = stk__arg_bool(op, "file_list_frame_num");
  int64_t length = stk__arg_int(op, "sequence_length"), step = stk__arg_int(op, "step");
  int64_t stride = stk__arg_int(op, "stride");
  if (length < 1 || length > 4096) {
    stk__errorf(err, err_size, "readers.video: sequence_length %lld must be in [1, 4096]", (long long)length);
    return STK_EINVAL;
  }
  if (step == -1) step = length;
  if (step < 1 || step > INT32_MAX || stride < 1 || stride > 65536) {
    stk__errorf(err, err_size,
                "readers.video: step (%lld) must be >= 1 or -1 (= sequence_length), stride (%lld) in "
                "[1, 65536]",
                (long long)stk__arg_int(op, "step"), (long long)stride);
    return STK_EINVAL;
  }
  c->sequence_length = (int)length, c->step = (int)step, c->stride = (int)stride;
  c->pad_sequences = stk__arg_bool(op, "pad_sequences");
  c->skip_vfr_check = stk__arg_bool(op, "skip_vfr_check");
  c->skip_bad_files = stk__arg_bool(op, "skip_bad_files") || (op->options && op->options->skip_bad_files);
  c->random_shuffle = stk__arg_bool(op, "random_shuffle");
  c->initial_fill = stk__arg_int(op, "initial_fill");
  c->shard_id = (int)stk__arg_int(op, "shard_id");
  c->num_shards = (int)stk__arg_int(op, "num_shards");
  c->stick_to_shard = stk__arg_bool(op, "stick_to_shard");
  c->pad_last_batch = stk__arg_bool(op, "pad_last_batch");
  int64_t seed = stk__arg_int(op, "seed");
  c->seed = seed >= 0 ? (uint64_t)seed : op->seed;
  c->batch_size = op->options ? op->options->batch_size : 1;
  c->threads = op->options ? op->options->num_threads : 1;
  return STK_OK;
}

static void reader_destroy(stk__op *op) {
  video_reader *r = op->state;
  if (!r) return;
  for (int i = 0; i < r->num_sessions; i++) stk__video_cpu_decoder_free(r->sessions[i]);
  free(r->sessions);
  stk__video_dataset_free(r->dataset);
  free(r);
  op->state = NULL;
}

static stk_status reader_init(stk__op *op, char *err, size_t err_size) {
  video_reader *r = calloc(1, sizeof *r);
  if (!r) return STK_ENOMEM;
  op->state = r;
  stk__video_dataset_config c;
  stk_status st = stk__video_format_from_op(op, &r->format, err, err_size);
  if (st == STK_OK) st = stk__video_dataset_config_from_op(op, &c, err, err_size);
  if (st == STK_OK) st = stk__video_dataset_new(&c, &r->dataset, err, err_size);
  if (st == STK_OK) {
    r->sequence_length = c.sequence_length;
    r->num_sessions = op->options && op->options->num_threads > 0 ? op->options->num_threads : 1;
    r->sessions = calloc((size_t)r->num_sessions, sizeof *r->sessions);
    if (!r->sessions) st = STK_ENOMEM;
  }
  if (st != STK_OK) reader_destroy(op);
  return st;
}

static stk_status reader_plan_batch(stk__op *op, stk__batch_plan *plan, char *err, size_t err_size) {
  stk_status st = stk__video_dataset_plan(((video_reader *)op->state)->dataset, plan);
  if (st == STK_EOF_EPOCH) stk__errorf(err, err_size, "end of epoch: reset the reader");
  return st;
}

static stk_status reader_reset(stk__op *op, uint64_t epoch) {
  return stk__video_dataset_reset(((video_reader *)op->state)->dataset, epoch);
}

static void reader_meta(const stk__op *op, uint64_t epoch, stk_reader_meta *out) {
  stk__video_dataset_meta(((const video_reader *)op->state)->dataset, epoch, out);
}

/* Label, first frame number and per-frame timestamps of one sequence into outputs 1..3. */
static stk_status write_side_outputs(const video_reader *r, const stk__video_sequence *seq,
                                     stk__tensor *const *outputs) {
  const stk__video_file *f = stk__video_dataset_file(r->dataset, seq->file);
  const int64_t one = 1, frames = r->sequence_length;
  const int stride = stk__video_dataset_config_of(r->dataset)->stride;
  stk_status st = stk__tensor_resize(outputs[1], STK_DTYPE_INT32, 1, &one, "");
  if (st == STK_OK) st = stk__tensor_resize(outputs[2], STK_DTYPE_INT32, 1, &one, "");
  if (st == STK_OK) st = stk__tensor_resize(outputs[3], STK_DTYPE_FLOAT32, 1, &frames, "F");
  if (st != STK_OK) return st;
  *(int32_t *)outputs[1]->data = f->label;
  *(int32_t *)outputs[2]->data = (int32_t)seq->first;
  float *times = outputs[3]->data;
  for (int k = 0; k < r->sequence_length; k++)
    times[k] = k < seq->frames ? (float)stk__video_index_seconds(&f->index, seq->first + (int64_t)k * stride) : -1.0f;
  return STK_OK;
}

static stk_status reader_run_sample(stk__op *op, stk__sample_ctx *ctx, stk__tensor *const *inputs,
                                    stk__tensor *const *outputs) {
  video_reader *r = op->state;
  const int64_t index = ctx->plan ? ctx->plan->file_index : ctx->sample_id;
  if (index < 0 || index >= stk__video_dataset_size(r->dataset) || ctx->thread_index < 0 ||
      ctx->thread_index >= r->num_sessions) {
    stk__errorf(ctx->err, ctx->err_size, "sequence %lld / thread %d is outside the reader's range", (long long)index,
                ctx->thread_index);
    return STK_EINTERNAL;
  }
  const stk__video_sequence *seq = stk__video_dataset_sequence(r->dataset, index);
  const stk__video_file *f = stk__video_dataset_file(r->dataset, seq->file);
  if (f->error) { /* a bad file kept as one failing sample (skip_bad_files) */
    stk__errorf(ctx->err, ctx->err_size, "%s", f->error);
    return f->status;
  }
  stk__video_cpu_decoder **session = &r->sessions[ctx->thread_index];
  if (!*session && stk__video_cpu_decoder_new(1, session) != STK_OK) return STK_ENOMEM;
  const int64_t shape[4] = {r->sequence_length, f->index.height, f->index.width, 3};
  stk_status st =
      stk__tensor_resize(outputs[0], r->format.as_float ? STK_DTYPE_FLOAT32 : STK_DTYPE_UINT8, 4, shape, "FHWC");
  if (st != STK_OK) return st;
  const size_t frame_bytes = (size_t)shape[1] * (size_t)shape[2] * 3 * (r->format.as_float ? sizeof(float) : 1);
  if (seq->frames < r->sequence_length) /* padded: the missing frames are zeros */
    memset((uint8_t *)outputs[0]->data + (size_t)seq->frames * frame_bytes, 0,
           (size_t)(r->sequence_length - seq->frames) * frame_bytes);
  const stk__video_span span = {.file_id = seq->file,
                                .path = f->path,
                                .index = &f->index,
                                .first = seq->first,
                                .stride = stk__video_dataset_config_of(r->dataset)->stride,
                                .count = seq->frames};
  st = stk__video_cpu_decode_sequence(*session, &span, &r->format, outputs[0]->data, ctx->err, ctx->err_size);
  if (st != STK_OK) return st;
  return write_side_outputs(r, seq, outputs);
}

const stk__op_impl stk__cpu_impl_readers_video = {
    .init = reader_init,
    .destroy = reader_destroy,
    .plan_batch = reader_plan_batch,
    .reset = reader_reset,
    .reader_meta = reader_meta,
    .run_sample = reader_run_sample,
};

static const stk__arg_schema video_reader_args[] = {
    {"filenames", STK_ARG_STRING_LIST, NULL, 0, 0, "Video files (relative to file_root when given)."},
    {"labels", STK_ARG_INT_LIST, NULL, 0, 0, "Labels of `filenames` (default: 0, 1, 2, ...)."},
    {"file_root", STK_ARG_STRING, NULL, 0, 0,
     "Directory with one subdirectory per class (labels = sorted subdirectory index, every file in it a video); "
     "base of relative paths in file_list/filenames."},
    {"file_list", STK_ARG_STRING, NULL, 0, 0,
     "Text file of \"path label [start [end]]\" lines; start/end in seconds, or frame numbers with "
     "file_list_frame_num (negative = from the end, end exclusive, omitted = to the end)."},
    {"file_list_frame_num", STK_ARG_BOOL, "false", 0, 0, "file_list start/end are frame numbers, not seconds."},
    {"sequence_length", STK_ARG_INT, NULL, 1, 0, "Frames per sequence (F)."},
    {"step", STK_ARG_INT, "-1", 0, 0, "Frames between the starts of consecutive sequences; -1 = sequence_length."},
    {"stride", STK_ARG_INT, "1", 0, 0, "Distance between consecutive frames of a sequence."},
    {"pad_sequences", STK_ARG_BOOL, "false", 0, 0,
     "Also make the sequences that run past a file's end; their missing frames are zeros, timestamps -1."},
    {"dtype", STK_ARG_STRING, "uint8", 0, 0, "Output type: uint8 or float."},
    {"normalized", STK_ARG_BOOL, "false", 0, 0, "float only: values divided by 255 (in [0, 1])."},
    {"image_type", STK_ARG_STRING, "RGB", 0, 0, "RGB or YCbCr."},
    {"enable_frame_num", STK_ARG_BOOL, "false", 0, 0,
     "Python: also return the first frame's number (the C outputs always include it, output 2)."},
    {"enable_timestamps", STK_ARG_BOOL, "false", 0, 0,
     "Python: also return the frames' timestamps (the C outputs always include them, output 3)."},
    {"skip_vfr_check", STK_ARG_BOOL, "false", 0, 0, "Read variable-frame-rate files instead of refusing them."},
    {"random_shuffle", STK_ARG_BOOL, "false", 0, 0,
     "Shuffle the sequences: a full permutation each epoch keyed by (seed, epoch), then a buffer of initial_fill."},
    {"initial_fill", STK_ARG_INT, "1024", 0, 0, "Size of the shuffle buffer used by random_shuffle."},
    {"shard_id", STK_ARG_INT, "0", 0, 0, "Index of the shard this pipeline reads."},
    {"num_shards", STK_ARG_INT, "1", 0, 0, "Number of shards (over sequences; DALI's rule)."},
    {"stick_to_shard", STK_ARG_BOOL, "false", 0, 0, "Keep reading shard_id every epoch (else move to the next)."},
    {"pad_last_batch", STK_ARG_BOOL, "false", 0, 0,
     "Fill the last batch by repeating the shard's last sequence; every shard gives the same number of batches."},
    {"skip_bad_files", STK_ARG_BOOL, "false", 0, 0,
     "Skip (and record) unreadable videos instead of failing: each becomes one sample that is replaced."},
    {"seed", STK_ARG_INT, "-1", 0, 0, "Shuffle seed; -1 = the pipeline's seed. Use the same seed on every shard."},
    STK__DALI_READER_HINT_ARGS,
    STK__DALI_READ_AHEAD_ARG,
    {"additional_decode_surfaces", STK_ARG_INT, "2", 0, 0, STK__DALI_HINT_DOC},
};

const stk__op_schema stk__op_readers_video = {
    .name = "readers.video",
    .doc =
        "Reads sequences of frames from video files (FFmpeg demux; libavcodec on the CPU, NVDEC on the GPU). "
        "Outputs: 0 = frames [F, H, W, 3], 1 = label int32 [1], 2 = first frame number int32 [1], "
        "3 = timestamps float32 [F] (seconds).",
    .min_inputs = 0,
    .max_inputs = 0,
    .num_outputs = 4,
    .devices = STK_OPDEV_CPU | STK_OPDEV_GPU, /* gpu: src/ops/video/video_reader_gpu.cu (NVDEC) */
    .args = video_reader_args,
    .num_args = (int)(sizeof video_reader_args / sizeof video_reader_args[0]),
    .is_reader = 1,
    .array_outputs = 1u << 0 | 1u << 3, /* frames, timestamps */
};
