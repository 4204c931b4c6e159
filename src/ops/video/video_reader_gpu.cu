/* src/ops/video/video_reader_gpu.cu: readers.video with device="gpu" -- the same data set, order and
 * outputs as the CPU implementation (src/ops/video/reader_video.c), decoded by NVDEC into device
 * memory. Each worker thread has its own NVDEC session and CUDA stream, so several sessions keep
 * the GPU's NVDEC engines busy. Two ways to spread the work (STOKER_NVDEC_EARLY, docs/tuning.md):
 *   - early (1, the default): each sequence is decoded in its sample's CPU chain (check_sample, hot
 *     path, per sample on a worker) into the reader's storage for the sample's batch slot, so a
 *     worker takes the next sample as soon as its sequence is done and the sequences of the
 *     prefetched batches overlap; run_batch (GPU stage thread) then hands that storage to output 0
 *     (swapped in, no copy, when the batch's samples lie where the output wants them; else one
 *     device copy per sample);
 *   - per batch (0; early is the default): run_batch spreads the batch's sequences over the worker pool
 *     (stk__parallel_for) and waits for all of them before the next batch starts.
 * run_batch also decodes whatever the chains did not (a standalone operator, a resource failure
 * there) and uploads the side outputs (label, first frame, timestamps) on the pipeline's stream.
 *
 * Bad files: a file found bad at start-up, or (early) one whose sequence fails to decode, fails its
 * sample in the CPU chain, so skip_bad_files refills it from the reader exactly as on the CPU. A
 * sequence that fails while run_batch decodes it (the per-batch way) fails the batch, or under skip_bad_files is
 * replaced by a device copy of its nearest good neighbour in the batch and counted in
 * stats.skipped_files. */
#include <cuda_runtime.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "device/nvcuvid_loader.h"
#include "ops/video/video_nvdec.h"
extern "C" { /* C headers without C++ guards */
#include "device/device.h"
#include "ops/video/video_dataset.h"
}
#include "ops/common/gpu_ops.h"
#include "base/tuning.h"

/* Early decode: one batch slot's sequences, decoded in its samples' CPU chains. */
typedef struct slot_frames {
  void *storage;    /* device memory (stk__gpu_malloc): the sequence of sample position k at k * slot_stride */
  size_t capacity;  /* bytes at storage */
  int64_t *decoded; /* per sample position: the sequence decoded there (its dataset index), -1: none */
} slot_frames;

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
  int *todo; /* run_batch: 2 x batch_capacity (samples to decode, early sources) */
  int batch_capacity;
  void *side_host; /* host staging of outputs 1..3 */
  size_t side_capacity;
  int early;                  /* STOKER_NVDEC_EARLY: decode in the samples' CPU chains (check_sample) */
  size_t slot_stride;         /* bytes of the data set's largest sequence (0: early decode off) */
  int slot_samples;           /* options.batch_size: sample positions per slot */
  pthread_mutex_t slots_lock; /* guards slots / num_slots and each slot's storage pointer */
  slot_frames *slots;         /* per batch slot (stk__sample_ctx.batch_slot), made on first use */
  int num_slots;
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
  free(r->todo);
  free(r->side_host);
  for (int i = 0; i < r->num_slots; i++) {
    stk__gpu_free(r->slots[i].storage, NULL); /* the executor stopped: nothing reads it */
    free(r->slots[i].decoded);
  }
  free(r->slots);
  pthread_mutex_destroy(&r->slots_lock);
  stk__video_dataset_free(r->dataset);
  free(r);
  op->state = NULL;
}

static stk_status reader_init(stk__op *op, char *err, size_t err_size) {
  if (!stk__nvcuvid_load(err, err_size)) return STK_ENOLIB; /* a clear message before any indexing */
  video_reader_gpu *r = (video_reader_gpu *)calloc(1, sizeof *r);
  if (!r) return STK_ENOMEM;
  pthread_mutex_init(&r->slots_lock, NULL);
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
    r->early = stk__tuning_int(STK__KNOB_NVDEC_EARLY) != 0; /* a knob (src/base/tuning.c), default 1 */
    int width = 0, height = 0;
    stk__video_dataset_max_size(r->dataset, &width, &height);
    r->slot_stride = (size_t)r->sequence_length * (size_t)width * (size_t)height * 3 *
                     stk_dtype_size(r->format.as_float ? STK_DTYPE_FLOAT32 : STK_DTYPE_UINT8);
    r->slot_samples = op->options && op->options->batch_size > 0 ? op->options->batch_size : 0;
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

/* Bytes of one sample of output 0 for sequence `sequence` (its file's frame size). */
static size_t sequence_bytes(const video_reader_gpu *r, int64_t sequence) {
  const stk__video_file *f =
      stk__video_dataset_file(r->dataset, stk__video_dataset_sequence(r->dataset, sequence)->file);
  return (size_t)r->sequence_length * (size_t)f->index.width * (size_t)f->index.height * 3 *
         stk_dtype_size(r->format.as_float ? STK_DTYPE_FLOAT32 : STK_DTYPE_UINT8);
}

static int resource_error(stk_status st) { return st == STK_ENOMEM || st == STK_ECUDA || st == STK_ENOLIB; }

/* Sequence `sequence` into device memory `out` (padding zeroed) on worker `thread`'s session and
 * stream; returns once the frames are written. Message in err. */
static stk_status decode_into(video_reader_gpu *r, int thread, int64_t sequence, void *out, char *err,
                              size_t err_size) {
  err[0] = '\0';
  stk_status st = STK_OK;
  const stk__video_sequence *seq = stk__video_dataset_sequence(r->dataset, sequence);
  const stk__video_file *f = stk__video_dataset_file(r->dataset, seq->file);
  if (thread < 0 || thread >= r->num_sessions) thread = r->num_sessions - 1;
  if (f->error) {
    stk__errorf(err, err_size, "%s", f->error);
    st = f->status;
  }
  if (st == STK_OK && !r->streams[thread]) {
    stk__gpu_set_device(r->device_id);
    st = stk__gpu_stream_create(&r->streams[thread], 0);
  }
  if (st == STK_OK && !r->sessions[thread])
    st = stk__video_nvdec_new(r->device_id, &r->sessions[thread], err, err_size);
  const size_t frame_bytes = sequence_bytes(r, sequence) / (size_t)r->sequence_length;
  if (st == STK_OK && seq->frames < r->sequence_length &&
      cudaMemsetAsync((uint8_t *)out + (size_t)seq->frames * frame_bytes, 0,
                      (size_t)(r->sequence_length - seq->frames) * frame_bytes,
                      (cudaStream_t)r->streams[thread]) != cudaSuccess)
    st = STK_ECUDA;
  if (st == STK_OK) {
    const stk__video_span span = {seq->file, f->path, &f->index, seq->first, r->stride, seq->frames};
    st = stk__video_nvdec_decode_sequence(r->sessions[thread], &span, &r->format, out, r->streams[thread], err,
                                          err_size);
  }
  if (st == STK_OK) st = stk__gpu_stream_synchronize(r->streams[thread]);
  return st;
}

typedef struct decode_job {
  video_reader_gpu *reader;
  const stk__batch_plan *plan;
  stk__tensor_list *frames;
  const int *todo; /* the samples to decode (item k: sample todo[k]); NULL: item i is sample i */
} decode_job;

/* One sample of the batch on worker `thread`: its sequence into frames->samples[i]. */
static stk_status decode_one(void *arg, int k, int thread) {
  decode_job *job = (decode_job *)arg;
  video_reader_gpu *r = job->reader;
  const int i = job->todo ? job->todo[k] : k;
  stk_status st = decode_into(r, thread, job->plan->samples[i].file_index, job->frames->samples[i].data, r->errors[i],
                              sizeof r->errors[i]);
  r->status[i] = st;
  /* Bad data is handled by run_batch (replace or fail); only resource errors stop the batch here. */
  return resource_error(st) ? st : STK_OK;
}

/* Early decode: slot `slot`'s storage for a batch of r->slot_samples (made or grown when it has
 * less), copied to *out. Under the lock: several chains of the slot's batch may ask at once; the
 * storage changes only here (before any of them decodes: the size asked never changes) and in
 * run_batch (when no chain of the slot runs). */
static stk_status slot_view(video_reader_gpu *r, int slot, uint64_t *alloc_count, slot_frames *out) {
  stk_status st = STK_OK;
  pthread_mutex_lock(&r->slots_lock);
  if (slot >= r->num_slots) {
    slot_frames *more = (slot_frames *)realloc(r->slots, (size_t)(slot + 1) * sizeof *more);
    if (more) {
      memset(more + r->num_slots, 0, (size_t)(slot + 1 - r->num_slots) * sizeof *more);
      r->slots = more;
      r->num_slots = slot + 1;
    } else {
      st = STK_ENOMEM;
    }
  }
  slot_frames *f = st == STK_OK ? &r->slots[slot] : NULL;
  if (f && !f->decoded) {
    f->decoded = (int64_t *)malloc((size_t)r->slot_samples * sizeof *f->decoded);
    if (!f->decoded) st = STK_ENOMEM;
    for (int k = 0; f->decoded && k < r->slot_samples; k++) f->decoded[k] = -1;
  }
  const size_t need = r->slot_stride * (size_t)r->slot_samples;
  if (st == STK_OK && f->capacity < need) {
    stk__gpu_free(f->storage, NULL); /* an output's earlier storage: its slot's readers are done */
    f->storage = NULL;
    f->capacity = 0;
    for (int k = 0; k < r->slot_samples; k++) f->decoded[k] = -1; /* nothing decoded is kept */
    stk__gpu_set_device(r->device_id);
    st = stk__gpu_malloc(&f->storage, need, alloc_count); /* counted in stats.device_bytes_held */
    if (st == STK_OK) f->capacity = need;
  }
  if (st == STK_OK) *out = *f;
  pthread_mutex_unlock(&r->slots_lock);
  return st;
}

/* Early decode, in the sample's CPU chain: its sequence into its slot's storage. Bad data fails the
 * sample (the executor refills it or fails the batch, naming the file); anything else (a resource
 * failure, a sample the slot has no room for) is left to run_batch, which decodes what the chain
 * did not and fails the batch on a resource error -- never a skipped file. */
static stk_status decode_early(video_reader_gpu *r, stk__sample_ctx *ctx, int64_t sequence) {
  const int position = ctx->sample_in_batch;
  if (!r->early || r->slot_stride == 0 || position < 0 || position >= r->slot_samples || ctx->batch_slot < 0)
    return STK_OK;
  slot_frames view;
  if (slot_view(r, ctx->batch_slot, ctx->alloc_count, &view) != STK_OK) return STK_OK;
  view.decoded[position] = -1; /* until the frames are there */
  stk_status st = decode_into(r, ctx->thread_index, sequence,
                              (uint8_t *)view.storage + (size_t)position * r->slot_stride, ctx->err, ctx->err_size);
  if (st == STK_OK) view.decoded[position] = sequence;
  return resource_error(st) ? STK_OK : st;
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

/* Early decode: for each sample i of the batch, the position in its slot's storage that holds its
 * sequence (i itself first: where its chain put it; another position after the executor moved or
 * copied samples for skip_bad_files), or -1 when no chain decoded it; *view: the slot's storage.
 * Returns the samples found. No chain of this slot runs now (its batch is in run_batch). */
static int early_sources(video_reader_gpu *r, const stk__batch_ctx *ctx, int n, int *source, slot_frames *view) {
  int found = 0;
  for (int i = 0; i < n; i++) source[i] = -1;
  pthread_mutex_lock(&r->slots_lock);
  const int ok = r->early && ctx->batch_slot >= 0 && ctx->batch_slot < r->num_slots &&
                 r->slots[ctx->batch_slot].decoded && n <= r->slot_samples;
  if (ok) *view = r->slots[ctx->batch_slot];
  pthread_mutex_unlock(&r->slots_lock);
  for (int i = 0; ok && i < n; i++) {
    const int64_t want = ctx->plan->samples[i].file_index;
    for (int k = 0; k < r->slot_samples && source[i] < 0; k++) {
      const int at = (i + k) % r->slot_samples;
      if (view->decoded[at] == want) source[i] = at;
    }
    found += source[i] >= 0;
  }
  return found;
}

/* Early decode, every sample where the output wants it (i at i * max_bytes, all of that size): the
 * slot's storage becomes output 0's and the slot takes the output's earlier storage (its batch was
 * consumed before the slot was planned again) to decode its next batch into. */
static stk_status adopt_frames(video_reader_gpu *r, stk__batch_ctx *ctx, stk__tensor_list *frames, int n) {
  pthread_mutex_lock(&r->slots_lock);
  slot_frames *slot = &r->slots[ctx->batch_slot];
  stk_status st =
      stk__gpu_tensor_list_adopt(frames, n, r->slot_stride, &slot->storage, &slot->capacity, ctx->alloc_count);
  if (st == STK_OK)
    for (int k = 0; k < r->slot_samples; k++) slot->decoded[k] = -1; /* the storage it describes is gone */
  pthread_mutex_unlock(&r->slots_lock);
  return st;
}

/* Sizes outputs 0..3 for the batch (frames at max_bytes a sample, per-sample shapes); with
 * `adopt`, output 0 takes the slot's early-decoded storage. */
static stk_status reserve_outputs(video_reader_gpu *r, stk__batch_ctx *ctx, stk__tensor_list *const *outputs, int n,
                                  size_t max_bytes, int adopt) {
  const stk_dtype dtype = r->format.as_float ? STK_DTYPE_FLOAT32 : STK_DTYPE_UINT8;
  const size_t side[3] = {sizeof(int32_t), sizeof(int32_t), (size_t)r->sequence_length * sizeof(float)};
  stk_status st = adopt ? adopt_frames(r, ctx, outputs[0], n)
                        : stk__gpu_tensor_list_reserve(outputs[0], n, max_bytes, ctx->alloc_count);
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

/* Output 0: the early-decoded sequences (adopted, or copied on the pipeline's stream), then the
 * rest decoded over the worker pool. r->status / r->errors per sample. */
static stk_status fill_frames(video_reader_gpu *r, stk__batch_ctx *ctx, stk__tensor_list *const *outputs, int n) {
  int *source = r->todo + n, *todo = r->todo;
  slot_frames view = {NULL, 0, NULL};
  const int found = early_sources(r, ctx, n, source, &view);
  size_t max_bytes = 1;
  int in_place = found == n;
  for (int i = 0; i < n; i++) {
    const size_t bytes = sequence_bytes(r, ctx->plan->samples[i].file_index);
    if (bytes > max_bytes) max_bytes = bytes;
    in_place = in_place && source[i] == i && bytes == r->slot_stride;
  }
  stk_status st = reserve_outputs(r, ctx, outputs, n, max_bytes, in_place);
  if (st != STK_OK) {
    stk__errorf(ctx->err, ctx->err_size, "reserving the output batch on the GPU failed");
    return st;
  }
  int missing = 0;
  for (int i = 0; i < n; i++) {
    r->status[i] = STK_OK;
    if (source[i] < 0) todo[missing++] = i;
    else if (!in_place && cudaMemcpyAsync(outputs[0]->samples[i].data,
                                          (const uint8_t *)view.storage + (size_t)source[i] * r->slot_stride,
                                          outputs[0]->samples[i].nbytes, cudaMemcpyDeviceToDevice,
                                          (cudaStream_t)ctx->cuda_stream) != cudaSuccess)
      return STK_ECUDA; /* synchronised with the side outputs, before the slot's next batch */
  }
  decode_job job = {r, ctx->plan, outputs[0], todo};
  return stk__parallel_for(ctx, missing, decode_one, &job);
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
    int *todo = (int *)realloc(r->todo, 2 * (size_t)n * sizeof *todo);
    if (todo) r->todo = todo;
    if (!status || !errors || !todo) return STK_ENOMEM;
    r->batch_capacity = n;
  }
  stk_status st = fill_frames(r, ctx, outputs, n);
  for (int i = 0; st == STK_OK && i < n; i++) {
    if (r->status[i] == STK_OK) continue;
    if (!r->skip_bad_files || resource_error(r->status[i])) {
      stk__errorf(ctx->err, ctx->err_size, "%s", r->errors[i]);
      st = r->status[i];
    }
  }
  if (st == STK_OK) st = upload_side_outputs(r, ctx, outputs, n);
  if (st == STK_OK && r->skip_bad_files) st = replace_failed(r, ctx, outputs, n);
  /* A failed batch records no event: nothing may still read the slot's storage when it is planned again. */
  if (st != STK_OK) cudaStreamSynchronize((cudaStream_t)ctx->cuda_stream);
  return st;
}

/* check_sample (op.h), first in each sample's CPU chain: a file found bad at start-up fails its
 * sample, so skip_bad_files refills it from the reader as the CPU implementation's run_sample does;
 * then (early decode) the sample's sequence is decoded here, on this worker's session. */
static stk_status reader_check_sample(stk__op *op, stk__sample_ctx *ctx) {
  video_reader_gpu *r = (video_reader_gpu *)op->state;
  const int64_t index = ctx->plan ? ctx->plan->file_index : ctx->sample_id;
  if (index < 0 || index >= stk__video_dataset_size(r->dataset)) return STK_OK; /* run_batch reports it */
  const stk__video_file *f = stk__video_dataset_file(r->dataset, stk__video_dataset_sequence(r->dataset, index)->file);
  if (!f->error) return decode_early(r, ctx, index);
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
