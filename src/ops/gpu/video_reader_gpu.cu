/* src/ops/gpu/video_reader_gpu.cu: readers.video with device="gpu" -- the same data set, order and
 * outputs as the CPU implementation (src/ops/cpu/reader_video.c), decoded by NVDEC into device
 * memory. Hot path: run_batch, once per batch on the GPU stage thread: the batch's sequences are
 * spread over the worker pool (stk__parallel_for), each worker thread with its own NVDEC session
 * and CUDA stream, so several sessions keep the GPU's NVDEC engines busy; the side outputs
 * (label, first frame, timestamps) are uploaded on the pipeline's stream.
 *
 * A file found bad at start-up fails its sample in the CPU chain (check_sample), so skip_bad_files
 * refills it from the reader exactly as on the CPU. A sequence that fails while NVDEC decodes it
 * fails the batch, or under skip_bad_files is replaced by a device copy of its nearest good
 * neighbour in the batch and counted in stats.skipped_files. */
#include <cuda_runtime.h>
#include <stdlib.h>
#include <string.h>

#include "device/nvcuvid_loader.h"
#include "ops/gpu/video_nvdec.h"
extern "C" { /* C headers without C++ guards */
#include "device/device.h"
#include "ops/cpu/video_dataset.h"
}
#include "ops/gpu/gpu_ops.h"

typedef struct video_reader_gpu {
  stk__video_dataset *dataset;
  stk__video_format format;
  int sequence_length, stride, skip_bad_files;
  int device_id;
  int num_sessions;
  stk__video_nvdec **sessions; /* per worker thread, created by that thread on first use */
  void **streams;              /* per worker thread */
  stk_status *status;          /* per sample of the batch being decoded */
  char (*errors)[512];
  int batch_capacity;
  void *side_host; /* host staging of outputs 1..3 */
  size_t side_capacity;
} video_reader_gpu;

static void reader_destroy(stk__op *op) {
  video_reader_gpu *r = (video_reader_gpu *)op->state;
  if (!r) return;
  for (int i = 0; i < r->num_sessions; i++) {
    stk__video_nvdec_free(r->sessions[i]);
    if (r->streams[i]) stk__gpu_stream_destroy(r->streams[i]);
  }
  free(r->sessions);
  free(r->streams);
  free(r->status);
  free(r->errors);
  free(r->side_host);
  stk__video_dataset_free(r->dataset);
  free(r);
  op->state = NULL;
}

static stk_status reader_init(stk__op *op, char *err, size_t err_size) {
  if (!stk__nvcuvid_load(err, err_size)) return STK_ENOLIB; /* a clear message before any indexing */
  video_reader_gpu *r = (video_reader_gpu *)calloc(1, sizeof *r);
  if (!r) return STK_ENOMEM;
  op->state = r;
  stk__video_dataset_config c;
  stk_status st = stk__video_format_from_op(op, &r->format, err, err_size);
  if (st == STK_OK) st = stk__video_dataset_config_from_op(op, &c, err, err_size);
  if (st == STK_OK) st = stk__video_dataset_new(&c, &r->dataset, err, err_size);
  if (st == STK_OK) {
    r->sequence_length = c.sequence_length, r->stride = c.stride, r->skip_bad_files = c.skip_bad_files;
    r->device_id = op->options ? op->options->device_id : 0;
    r->num_sessions = (op->options && op->options->num_threads > 0 ? op->options->num_threads : 1) + 1;
    r->sessions = (stk__video_nvdec **)calloc((size_t)r->num_sessions, sizeof *r->sessions);
    r->streams = (void **)calloc((size_t)r->num_sessions, sizeof *r->streams);
    if (!r->sessions || !r->streams) st = STK_ENOMEM;
  }
  if (st != STK_OK) reader_destroy(op);
  return st;
}

static stk_status reader_plan_batch(stk__op *op, stk__batch_plan *plan, char *err, size_t err_size) {
  stk_status st = stk__video_dataset_plan(((video_reader_gpu *)op->state)->dataset, plan);
  if (st == STK_EOF_EPOCH) stk__errorf(err, err_size, "end of epoch: reset the reader");
  return st;
}

static stk_status reader_reset(stk__op *op, uint64_t epoch) {
  return stk__video_dataset_reset(((video_reader_gpu *)op->state)->dataset, epoch);
}

static void reader_meta(const stk__op *op, uint64_t epoch, stk_reader_meta *out) {
  stk__video_dataset_meta(((const video_reader_gpu *)op->state)->dataset, epoch, out);
}

typedef struct decode_job {
  video_reader_gpu *reader;
  const stk__batch_plan *plan;
  stk__tensor_list *frames;
} decode_job;

/* One sample of the batch on worker `thread`: its sequence into frames->samples[i] (padding zeroed). */
static stk_status decode_one(void *arg, int i, int thread) {
  decode_job *job = (decode_job *)arg;
  video_reader_gpu *r = job->reader;
  char *err = r->errors[i];
  err[0] = '\0';
  stk_status st = STK_OK;
  const stk__video_sequence *seq = stk__video_dataset_sequence(r->dataset, job->plan->samples[i].file_index);
  const stk__video_file *f = stk__video_dataset_file(r->dataset, seq->file);
  if (thread < 0 || thread >= r->num_sessions) thread = r->num_sessions - 1;
  if (f->error) {
    stk__errorf(err, 512, "%s", f->error);
    st = f->status;
  }
  if (st == STK_OK && !r->streams[thread]) {
    stk__gpu_set_device(r->device_id);
    st = stk__gpu_stream_create(&r->streams[thread], 0);
  }
  if (st == STK_OK && !r->sessions[thread]) st = stk__video_nvdec_new(r->device_id, &r->sessions[thread], err, 512);
  stk__tensor *out = &job->frames->samples[i];
  const size_t frame_bytes = out->nbytes / (size_t)r->sequence_length;
  if (st == STK_OK && seq->frames < r->sequence_length &&
      cudaMemsetAsync((uint8_t *)out->data + (size_t)seq->frames * frame_bytes, 0,
                      (size_t)(r->sequence_length - seq->frames) * frame_bytes,
                      (cudaStream_t)r->streams[thread]) != cudaSuccess)
    st = STK_ECUDA;
  if (st == STK_OK) {
    const stk__video_span span = {seq->file, f->path, &f->index, seq->first, r->stride, seq->frames};
    st = stk__video_nvdec_decode_sequence(r->sessions[thread], &span, &r->format, out->data, r->streams[thread], err,
                                          512);
  }
  if (st == STK_OK) st = stk__gpu_stream_synchronize(r->streams[thread]);
  r->status[i] = st;
  /* Bad data is handled by run_batch (replace or fail); only resource errors stop the batch here. */
  return st == STK_ENOMEM || st == STK_ECUDA || st == STK_ENOLIB ? st : STK_OK;
}

static void set_meta(stk__tensor *t, stk_dtype dtype, int ndim, const int64_t *shape, const char *layout) {
  t->dtype = dtype;
  t->ndim = ndim;
  size_t n = 1;
  for (int d = 0; d < ndim; d++) t->shape[d] = shape[d], n *= (size_t)shape[d];
  strncpy(t->layout, layout, sizeof t->layout - 1);
  t->layout[sizeof t->layout - 1] = '\0';
  t->nbytes = n * stk_dtype_size(dtype);
  t->device = STK_DEVICE_GPU;
}

/* Sizes outputs 0..3 for the batch (frames at the batch's largest size, per-sample shapes). */
static stk_status reserve_outputs(video_reader_gpu *r, stk__batch_ctx *ctx, stk__tensor_list *const *outputs, int n) {
  const stk_dtype dtype = r->format.as_float ? STK_DTYPE_FLOAT32 : STK_DTYPE_UINT8;
  size_t max_bytes = 1;
  for (int i = 0; i < n; i++) {
    const stk__video_file *f = stk__video_dataset_file(
        r->dataset, stk__video_dataset_sequence(r->dataset, ctx->plan->samples[i].file_index)->file);
    size_t bytes = (size_t)r->sequence_length * f->index.width * f->index.height * 3 * stk_dtype_size(dtype);
    if (bytes > max_bytes) max_bytes = bytes;
  }
  const size_t side[3] = {sizeof(int32_t), sizeof(int32_t), (size_t)r->sequence_length * sizeof(float)};
  stk_status st = stk__gpu_tensor_list_reserve(outputs[0], n, max_bytes, ctx->alloc_count);
  for (int o = 1; o < 4 && st == STK_OK; o++)
    st = stk__gpu_tensor_list_reserve(outputs[o], n, side[o - 1], ctx->alloc_count);
  if (st != STK_OK) return st;
  for (int i = 0; i < n; i++) {
    const stk__video_file *f = stk__video_dataset_file(
        r->dataset, stk__video_dataset_sequence(r->dataset, ctx->plan->samples[i].file_index)->file);
    const int64_t shape[4] = {r->sequence_length, f->index.height, f->index.width, 3}, one = 1,
                  length = r->sequence_length;
    set_meta(&outputs[0]->samples[i], dtype, 4, shape, "FHWC");
    set_meta(&outputs[1]->samples[i], STK_DTYPE_INT32, 1, &one, "");
    set_meta(&outputs[2]->samples[i], STK_DTYPE_INT32, 1, &one, "");
    set_meta(&outputs[3]->samples[i], STK_DTYPE_FLOAT32, 1, &length, "F");
  }
  for (int o = 0; o < 4; o++) stk__gpu_tensor_list_settle(outputs[o]);
  return STK_OK;
}

/* Outputs 1..3 (label, first frame, timestamps) written on the host and uploaded. */
static stk_status upload_side_outputs(video_reader_gpu *r, stk__batch_ctx *ctx, stk__tensor_list *const *outputs,
                                      int n) {
  const size_t per_sample = 2 * sizeof(int32_t) + (size_t)r->sequence_length * sizeof(float);
  if (per_sample * (size_t)n > r->side_capacity) {
    void *p = realloc(r->side_host, per_sample * (size_t)n);
    if (!p) return STK_ENOMEM;
    r->side_host = p;
    r->side_capacity = per_sample * (size_t)n;
  }
  int32_t *labels = (int32_t *)r->side_host, *firsts = labels + n;
  float *times = (float *)(firsts + n);
  for (int i = 0; i < n; i++) {
    const stk__video_sequence *seq = stk__video_dataset_sequence(r->dataset, ctx->plan->samples[i].file_index);
    const stk__video_file *f = stk__video_dataset_file(r->dataset, seq->file);
    labels[i] = f->label;
    firsts[i] = (int32_t)seq->first;
    for (int k = 0; k < r->sequence_length; k++)
      times[(size_t)i * r->sequence_length + k] =
          k < seq->frames && !f->error ? (float)stk__video_index_seconds(&f->index, seq->first + (int64_t)k * r->stride)
                                       : -1.0f;
  }
  cudaStream_t stream = (cudaStream_t)ctx->cuda_stream;
  const void *src[3] = {labels, firsts, times};
  for (int o = 1; o < 4; o++)
    if (cudaMemcpyAsync(outputs[o]->samples[0].data, src[o - 1], outputs[o]->samples[0].nbytes * (size_t)n,
                        cudaMemcpyHostToDevice, stream) != cudaSuccess)
      return STK_ECUDA;
  return cudaStreamSynchronize(stream) == cudaSuccess ? STK_OK : STK_ECUDA; /* side_host is reused next batch */
}

/* skip_bad_files: each failed sample becomes a device copy of its nearest good neighbour. */
static stk_status replace_failed(video_reader_gpu *r, stk__batch_ctx *ctx, stk__tensor_list *const *outputs, int n) {
  for (int i = 0; i < n; i++) {
    if (r->status[i] == STK_OK) continue;
    int good = -1;
    for (int d = 1; d < n && good < 0; d++) {
      if (i - d >= 0 && r->status[i - d] == STK_OK) good = i - d;
      else if (i + d < n && r->status[i + d] == STK_OK) good = i + d;
    }
    if (good < 0) {
      stk__errorf(ctx->err, ctx->err_size, "every sequence of the batch failed (skip_bad_files has no good one); %s",
                  r->errors[i]);
      return STK_EBADIMAGE;
    }
    for (int o = 0; o < 4; o++) {
      stk__tensor *dst = &outputs[o]->samples[i];
      const stk__tensor *src = &outputs[o]->samples[good];
      if (cudaMemcpyAsync(dst->data, src->data, src->nbytes, cudaMemcpyDeviceToDevice,
                          (cudaStream_t)ctx->cuda_stream) != cudaSuccess)
        return STK_ECUDA;
      dst->dtype = src->dtype, dst->ndim = src->ndim, dst->nbytes = src->nbytes;
      memcpy(dst->shape, src->shape, sizeof dst->shape);
    }
    if (ctx->stats) ctx->stats->skipped_files++;
  }
  for (int o = 0; o < 4; o++) stk__gpu_tensor_list_settle(outputs[o]);
  return STK_OK;
}

static stk_status reader_run_batch(stk__op *op, stk__batch_ctx *ctx, stk__tensor_list *const *inputs,
                                   stk__tensor_list *const *outputs) {
  video_reader_gpu *r = (video_reader_gpu *)op->state;
  const int n = ctx->plan ? ctx->plan->batch_size : 0;
  if (n <= 0) return STK_OK;
  if (n > r->batch_capacity) {
    stk_status *status = (stk_status *)realloc(r->status, (size_t)n * sizeof *status);
    if (status) r->status = status;
    char(*errors)[512] = (char(*)[512])realloc(r->errors, (size_t)n * sizeof *errors);
    if (errors) r->errors = errors;
    if (!status || !errors) return STK_ENOMEM;
    r->batch_capacity = n;
  }
  stk_status st = reserve_outputs(r, ctx, outputs, n);
  if (st != STK_OK) {
    stk__errorf(ctx->err, ctx->err_size, "reserving the output batch on the GPU failed");
    return st;
  }
  decode_job job = {r, ctx->plan, outputs[0]};
  st = stk__parallel_for(ctx, n, decode_one, &job);
  for (int i = 0; st == STK_OK && i < n; i++) {
    if (r->status[i] == STK_OK) continue;
    const int bad_data = r->status[i] != STK_ENOMEM && r->status[i] != STK_ECUDA && r->status[i] != STK_ENOLIB;
    if (!r->skip_bad_files || !bad_data) {
      stk__errorf(ctx->err, ctx->err_size, "%s", r->errors[i]);
      st = r->status[i];
    }
  }
  if (st == STK_OK) st = upload_side_outputs(r, ctx, outputs, n);
  if (st == STK_OK && r->skip_bad_files) st = replace_failed(r, ctx, outputs, n);
  return st;
}

/* check_sample (op.h): a file found bad at start-up fails its sample in the CPU chain, so
 * skip_bad_files refills it from the reader as the CPU implementation's run_sample does. */
static stk_status reader_check_sample(stk__op *op, stk__sample_ctx *ctx) {
  video_reader_gpu *r = (video_reader_gpu *)op->state;
  const int64_t index = ctx->plan ? ctx->plan->file_index : ctx->sample_id;
  if (index < 0 || index >= stk__video_dataset_size(r->dataset)) return STK_OK; /* run_batch reports it */
  const stk__video_file *f = stk__video_dataset_file(r->dataset, stk__video_dataset_sequence(r->dataset, index)->file);
  if (!f->error) return STK_OK;
  stk__errorf(ctx->err, ctx->err_size, "%s", f->error);
  return f->status;
}

/* init, destroy, plan_batch, reset, reader_meta, run_sample, run_batch, seek, data_fingerprint,
 * feed, input_ready, prepare_batch, discard_batch, check_sample */
extern "C" const stk__op_impl stk__gpu_impl_readers_video = {reader_init,
                                                             reader_destroy,
                                                             reader_plan_batch,
                                                             reader_reset,
                                                             reader_meta,
                                                             NULL,
                                                             reader_run_batch,
                                                             NULL,
                                                             NULL,
                                                             NULL,
                                                             NULL,
                                                             NULL,
                                                             NULL,
                                                             reader_check_sample};
