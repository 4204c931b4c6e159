/* stoker/pipeline.h: the declarative data-loading pipeline.
 *
 * Lifecycle: stk_pipeline_options_default() -> stk_pipeline_new() -> stk_pipeline_add_op()... ->
 * stk_pipeline_set_outputs() -> stk_pipeline_build() -> stk_pipeline_next()/stk_batch_release()
 * in a loop (stk_pipeline_reset() at the end of an epoch) -> stk_pipeline_destroy().
 *
 * Operators are added by registry name ("readers.file", "decoders.image", ...) with named, typed
 * arguments collected in an stk_args (copied by add_op). Every argument is checked against the
 * operator's schema; an unknown name, a wrong type or a missing input fails with STK_EINVAL and a
 * message in stk_pipeline_last_error() naming the operator and the argument.
 *
 * Node outputs are referred to by the instance name given to add_op: "name" is output 0,
 * "name[1]" is output 1 (readers.file has outputs 0 = encoded bytes, 1 = labels).
 *
 * Thread contract: one pipeline is driven by one thread at a time (all stk_pipeline_* calls on a
 * given handle must be serialized by the caller); different pipelines are independent. Batches
 * may be released from any thread. The registry queries (stk_op_*) are safe from any thread.
 * The library never prints unless options.verbose is set. */
#ifndef STOKER_PIPELINE_H
#define STOKER_PIPELINE_H

#include <stddef.h>
#include <stdint.h>

#include "stoker/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Values --------------------------------------------------------------------------------- */
typedef enum stk_dtype {
  STK_DTYPE_UINT8 = 0,
  STK_DTYPE_INT32,
  STK_DTYPE_INT64,
  STK_DTYPE_FLOAT32,
  STK_DTYPE_FLOAT16,
  STK_DTYPE_BOOL,
  /* Added for readers.numpy (.npy files carry any of numpy's common types); codes only grow. */
  STK_DTYPE_INT8,
  STK_DTYPE_INT16,
  STK_DTYPE_UINT16,
  STK_DTYPE_UINT32,
  STK_DTYPE_UINT64,
  STK_DTYPE_FLOAT64
} stk_dtype;

/* "uint8", "int32", "int64", "float", "float16", "bool", "int8", "int16", "uint16", "uint32",
 * "uint64", "float64". */
STK_EXPORT const char *stk_dtype_name(stk_dtype dtype);
STK_EXPORT size_t stk_dtype_size(stk_dtype dtype);

typedef enum stk_device_type { STK_DEVICE_CPU = 0, STK_DEVICE_GPU = 1 } stk_device_type;

#define STK_MAX_DIMS 6

/* A view of one output of a batch. Borrowed: valid until stk_batch_release(). */
typedef struct stk_tensor_view {
  void *data; /* host pointer (CPU) or device pointer (GPU) */
  stk_dtype dtype;
  int ndim; /* including the leading batch dimension when dense */
  int64_t shape[STK_MAX_DIMS];
  char layout[8]; /* "NCHW", "NHWC", "N" (labels), ... */
  stk_device_type device_type;
  int device_id; /* CUDA ordinal for GPU data, -1 for host data */
  size_t nbytes;
  int dense; /* 1: one contiguous batch tensor; 0: per-sample (ragged) */
} stk_tensor_view;

/* ---- Arguments ------------------------------------------------------------------------------ */
typedef enum stk_arg_type {
  STK_ARG_INT = 0,
  STK_ARG_FLOAT,
  STK_ARG_BOOL,
  STK_ARG_STRING,
  STK_ARG_INT_LIST,
  STK_ARG_FLOAT_LIST,
  STK_ARG_STRING_LIST,
  STK_ARG_INPUT /* argument input: bound to another node's per-sample output ("mirror=coin") */
} stk_arg_type;

STK_EXPORT const char *stk_arg_type_name(stk_arg_type type);

typedef struct stk_args stk_args;
STK_EXPORT stk_status stk_args_new(stk_args **out);
STK_EXPORT void stk_args_destroy(stk_args *args);
/* Setters copy their values. Setting a name twice replaces the earlier value. An int given where
 * the schema wants a float is accepted (as in Python); every other mismatch fails at add_op. */
STK_EXPORT stk_status stk_args_set_int(stk_args *args, const char *name, int64_t value);
STK_EXPORT stk_status stk_args_set_float(stk_args *args, const char *name, double value);
STK_EXPORT stk_status stk_args_set_bool(stk_args *args, const char *name, int value);
STK_EXPORT stk_status stk_args_set_string(stk_args *args, const char *name, const char *value);
STK_EXPORT stk_status stk_args_set_int_list(stk_args *args, const char *name, const int64_t *values, size_t count);
STK_EXPORT stk_status stk_args_set_float_list(stk_args *args, const char *name, const double *values, size_t count);
STK_EXPORT stk_status stk_args_set_string_list(stk_args *args, const char *name, const char *const *values,
                                               size_t count);
/* Binds argument `name` to the per-sample output `node_output` of another node ("coin"). */
STK_EXPORT stk_status stk_args_set_input(stk_args *args, const char *name, const char *node_output);

/* ---- Operator registry ---------------------------------------------------------------------- */
/* Device bits for stk_op_schema_info.devices. */
#define STK_OPDEV_CPU   1u
#define STK_OPDEV_MIXED 2u
#define STK_OPDEV_GPU   4u

typedef struct stk_op_arg_info {
  const char *name;
  stk_arg_type type;
  const char *default_value; /* text form ("224", "[0.08, 1.0]", "\"cpu\""), NULL = required/none */
  int required;
  const char *doc;
} stk_op_arg_info;

typedef struct stk_op_schema_info {
  const char *name; /* "decoders.image" */
  const char *doc;
  int min_inputs, max_inputs, num_outputs;
  unsigned devices; /* STK_OPDEV_* bits */
  int num_args;
} stk_op_schema_info;

/* All strings returned by the registry are static and live as long as the program. */
STK_EXPORT int stk_op_count(void);
STK_EXPORT stk_status stk_op_schema(int index, stk_op_schema_info *out);
STK_EXPORT stk_status stk_op_find(const char *name, int *index_out);
STK_EXPORT stk_status stk_op_arg(int op_index, int arg_index, stk_op_arg_info *out);

/* ---- Pipeline ------------------------------------------------------------------------------- */
typedef struct stk_pipeline stk_pipeline;
typedef struct stk_batch stk_batch;

/* Priority of the CUDA streams a pipeline's GPU work runs on. CUDA's default priority is also its
 * lowest, and a training loop's streams run at it, so a loader can only rank above them or beside
 * them. HIGH lets the loader's short kernels and copies start as soon as SMs free up instead of
 * queueing behind a training step's kernels; the work the GPU does is the same either way.
 * docs/gpu.md has the measurements. */
typedef enum stk_stream_priority {
  STK_STREAM_PRIORITY_HIGH = 0,  /* the greatest priority the device allows (default) */
  STK_STREAM_PRIORITY_NORMAL = 1 /* CUDA's default priority, the same as the caller's streams */
} stk_stream_priority;

typedef struct stk_pipeline_options {
  int batch_size;            /* default 256 */
  int num_threads;           /* worker threads; default 4 */
  int device_id;             /* CUDA device for mixed/GPU operators; -1 (default) = CPU only */
  uint64_t seed;             /* default 42 */
  int prefetch_queue_depth;  /* batches in flight ahead of the consumer. 0 (default): decided at build,
                                3 when an operator prepares batches ahead (the mixed JPEG decoder: a
                                third batch keeps the hardware engines fed, docs/gpu.md), else 2;
                                stk_pipeline_stats.prefetch_queue_depth reports it */
  int pin_threads;           /* 1 (default): pin workers (STOKER_AFFINITY_MASK, else GPU-local cores) */
  const char *affinity_mask; /* "c0,c1,...": worker i on CPU ci (overrides STOKER_AFFINITY_MASK);
                                NULL = the env's (copied) */
  int verbose;               /* 1: warnings (e.g. invalid affinity entries) also go to stderr */
  int skip_bad_files;        /* 1: as if the reader had skip_bad_files=True (default 0) */
  int stream_priority;       /* stk_stream_priority of the pipeline's CUDA streams (default HIGH) */
  const char *bad_files_log; /* skip_bad_files: file the quarantine record is written to as JSON lines
                                (stk_pipeline_bad_files_json), created/truncated at build; NULL = none
                                (copied) */
  int enable_checkpointing;  /* 1: build fails unless the pipeline can be checkpointed (its reader can
                                seek); stk_pipeline_checkpoint works either way when it can. Default 0 */
  const char *checkpoint;    /* a stk_pipeline_checkpoint() text to resume from at build (copied);
                                NULL (default) = start at epoch 0. Same as stk_pipeline_restore */
  int exec_dynamic;          /* 1: each batch's size is what external_source was fed, 1..batch_size
                                (batch_size is then the maximum); 0 (default): every fed batch
                                must hold exactly batch_size samples. docs/pipeline.md */
  size_t host_memory_budget; /* bytes the batch slots' host sample buffers may hold in all; a sample
                                whose output would grow them past it fails (a bad sample under
                                skip_bad_files). 0 (default): min(batch_size x (prefetch_queue_depth
                                + 2) x 64 MiB, half the machine's RAM), at least 256 MiB;
                                SIZE_MAX ((size_t)-1): unlimited. docs/pipeline.md */
  const volatile int *stop;  /* NULL (default), or a flag the caller sets (from a SIGINT/SIGTERM
                                handler: a volatile sig_atomic_t) to stop waiting: a reader waiting
                                on a slow source (an HTTP retry or backoff, a stalled pipe:) gives
                                up within 100 ms and stk_pipeline_next fails with STK_ESHUTDOWN */
} stk_pipeline_options;

STK_EXPORT void stk_pipeline_options_default(stk_pipeline_options *options);

STK_EXPORT stk_status stk_pipeline_new(const stk_pipeline_options *options, stk_pipeline **out);
/* Stops all threads (batches in flight are dropped; batches the caller still holds stay valid
 * until released) and frees everything. NULL is a no-op. */
STK_EXPORT void stk_pipeline_destroy(stk_pipeline *pipe);
/* Borrowed; valid until the next call on pipe. "" when there was no error. */
STK_EXPORT const char *stk_pipeline_last_error(const stk_pipeline *pipe);

/* Adds operator `op_name` as node `instance_name` (unique; NULL = generated "op_name_N"), with
 * its regular inputs (node outputs by name) and arguments (copied; args may be NULL).
 * The special argument "device" ("cpu", "mixed", "gpu") picks the implementation. */
STK_EXPORT stk_status stk_pipeline_add_op(stk_pipeline *pipe, const char *op_name, const char *instance_name,
                                          const char *const *inputs, size_t num_inputs, const stk_args *args);
STK_EXPORT stk_status stk_pipeline_set_outputs(stk_pipeline *pipe, const char *const *outputs, size_t count);
/* Validates the graph, starts the worker threads and begins prefetching. */
STK_EXPORT stk_status stk_pipeline_build(stk_pipeline *pipe);

/* Builds a named built-in pipeline ("rn50-train", "rn50-val") or a pipeline text file (see
 * docs/pipeline-files.md) reading from data_dir. The pipeline must be new (no ops yet). */
STK_EXPORT stk_status stk_pipeline_add_builtin(stk_pipeline *pipe, const char *name, const char *data_dir);
/* The same with the decoder's device chosen: NULL = "mixed" when the pipeline has a GPU, else
 * "cpu"; "cpu" on a GPU pipeline decodes and resizes on the worker threads and normalizes on the
 * GPU (DALI's ResNet-50 example with --dali_cpu). */
STK_EXPORT stk_status stk_pipeline_add_builtin_on(stk_pipeline *pipe, const char *name, const char *data_dir,
                                                  const char *decoder);
STK_EXPORT stk_status stk_pipeline_load_text(stk_pipeline *pipe, const char *text, const char *data_dir);
/* Options of a built-in pipeline; initialize with stk_builtin_options_default() so new fields
 * never break callers. Strings are copied where kept. */
typedef struct stk_builtin_options {
  const char *decoder;  /* as stk_pipeline_add_builtin_on's decoder (NULL = by device) */
  int decode_size_hint; /* 1: rn50-train's CPU decoder may decode at a reduced size (libjpeg DCT
                           scaling, never below the 224 x 224 output): faster, but the pixels
                           differ from a full decode. Default 0, as in DALI's example. */
  const char *reader;   /* the reader call giving (jpegs, labels), in the text form, instead of
                           readers.file over data_dir: e.g. readers.webdataset(paths=[...],
                           ext=["jpg;jpeg", "cls"], label_ext="cls", name="Reader") to read tar
                           shards (`stoker bench --shards`). NULL = readers.file. */
} stk_builtin_options;
STK_EXPORT void stk_builtin_options_default(stk_builtin_options *options);
/* stk_pipeline_add_builtin_on with options (NULL = defaults). */
STK_EXPORT stk_status stk_pipeline_add_builtin_ex(stk_pipeline *pipe, const char *name, const char *data_dir,
                                                  const stk_builtin_options *options);

/* Waits for the next batch. STK_EOF_EPOCH when the reader's epoch is over (call reset);
 * any other error carries a message naming the file, operator and sample. */
STK_EXPORT stk_status stk_pipeline_next(stk_pipeline *pipe, stk_batch **out);
/* Starts the next epoch. After STK_EOF_EPOCH it keeps the next epoch's batches the pipeline
 * prefetched meanwhile (it plans across the boundary); mid-epoch, in-flight batches are discarded
 * and the next epoch starts at its first batch. Either way the epoch's content is the same. */
STK_EXPORT stk_status stk_pipeline_reset(stk_pipeline *pipe);

typedef struct stk_reader_meta {
  int64_t epoch_size; /* samples in the whole data set */
  int64_t
      epoch_size_padded; /* samples per shard, padded to a multiple of batch size when pad_last_batch, times num_shards */
  int64_t shard_size;    /* samples in this shard */
  int shard_id, num_shards;
  int pad_last_batch, stick_to_shard;
  /* The consumer's epoch in batches (docs/python.md, Iterators), -1 where the reader cannot know
   * before reading (readers.webdataset without an index). Batch indices count from the epoch's
   * batch 0, also after a restore or inside a resharded remainder (docs/checkpoint.md). */
  uint64_t epoch;             /* the consumer's epoch (the one stk_pipeline_next delivers from) */
  int64_t epoch_next_batch;   /* index of the batch stk_pipeline_next delivers next: 0 after reset,
                                 the checkpoint's position after a restore, epoch_batches at the end */
  int64_t epoch_batches;      /* batches of the epoch for this shard (every shard has as many) */
  int64_t epoch_full_batches; /* leading batches of the epoch that are full (no fill) on every
                                 shard: where LastBatchPolicy.DROP ends the epoch on every rank */
  int is_epoch_reader; /* 1: this reader's epochs end stk_pipeline_next's (the pipeline's external
                          source, else its first reader); 0: a further reader, which moves into its
                          next epoch by itself (its epoch and next batch above are its own) */
} stk_reader_meta;

/* Metadata of reader node `reader_name` (NULL = the only reader): the consumer's epoch (the reader
 * may already plan the next). Call it on the consumer's thread, between stk_pipeline_next calls.
 * STK_ENOENT when no reader has that name (the last error names it and the pipeline's readers),
 * STK_ESTATE before build. */
STK_EXPORT stk_status stk_pipeline_reader_meta(const stk_pipeline *pipe, const char *reader_name, stk_reader_meta *out);

typedef struct stk_pipeline_stats {
  uint64_t batches, images;
  uint64_t bytes_read;               /* encoded bytes read from files */
  uint64_t skipped_files;            /* bad files replaced (skip_bad_files) in the delivered batches */
  uint64_t allocations;              /* buffer allocations (host+device) since build */
  uint64_t allocations_after_warmup; /* since warm-up: every initial slot used twice (docs/pipeline.md) */
  double time_to_first_batch_s;
  double op_seconds[32]; /* busy seconds per node, indexed like stk_pipeline_node_name() */
  int num_nodes;
  int num_threads;
  int thread_cpus[256];                                           /* CPU each worker was pinned to, -1 = not pinned */
  uint64_t decoded_hw, decoded_cuda, decoded_hybrid, decoded_cpu; /* mixed decoder split, delivered batches */
  uint64_t device_bytes_held; /* device memory held by stoker's device pools (process-wide: every
                                     pipeline's GPU lists and operator buffers; 0 without GPU nodes) */
  uint64_t pinned_bytes_held; /* page-locked host memory held by the pinned block pool (process-wide;
                                     the pinned sample buffers in it also count in host_bytes_held) */
  /* Where the time went (seconds since build), to see what holds a consumer up: */
  double next_wait_s;          /* stk_pipeline_next blocked, waiting for the next batch */
  double batch_latency_s;      /* summed over batches: planned -> ready (CPU and GPU stages done) */
  double gpu_stage_s;          /* GPU stage thread busy (uploads and GPU operators' launches) */
  double upload_s;             /* of which copying CPU outputs that GPU operators read */
  double slot_wait_s;          /* scheduler waiting for a slot's last GPU work / consumer stream */
  uint64_t host_bytes_held;    /* host memory the pipeline holds now: the batch slots' sample buffers
                                     (pinned ones included), the dense batch tensors of CPU outputs
                                     and the workers' scratch buffers (docs/pipeline.md) */
  uint64_t host_memory_budget; /* the limit on host_bytes_held (options.host_memory_budget resolved;
                                     UINT64_MAX: unlimited; 0 before the first batch slot is made) */
  uint64_t batches_discarded;  /* batches planned, then dropped unseen by a reset mid-epoch or a
                                     restore (prefetched work thrown away; 0 when every reset
                                     follows the epoch's last batch) */
  char decoder_route[320];     /* the mixed JPEG decoder's routing record, one line: the
                                     hw_decoder_load it uses and why (automatic: the calibration's
                                     costs and the choice, docs/gpu.md); "" without one */
  int prefetch_queue_depth;    /* options.prefetch_queue_depth resolved (0 before build when the
                                     option was 0) */
} stk_pipeline_stats;

STK_EXPORT stk_status stk_pipeline_stats_get(const stk_pipeline *pipe, stk_pipeline_stats *out);
/* Name of node i (0 <= i < stats.num_nodes); borrowed, lives as long as pipe. */
STK_EXPORT const char *stk_pipeline_node_name(const stk_pipeline *pipe, int i);
/* The quarantine record (skip_bad_files): each bad file once per run, in the order the consumer
 * met them. Names, one per line, JSON-escaped without the quotes (a newline in a name is "\n", a
 * backslash "\\", a byte that is not UTF-8 "\udcXX"), so every line is one file; malloc'd, free
 * with stk_free(). */
STK_EXPORT stk_status stk_pipeline_skipped_files(const stk_pipeline *pipe, char **out);
/* The same record as JSON lines, one object per bad file:
 * {"file": NAME, "reason": MESSAGE, "epoch": E, "sample": DATASET_SAMPLE_ID}\n (docs/pipeline.md);
 * malloc'd, free with stk_free(). */
STK_EXPORT stk_status stk_pipeline_bad_files_json(const stk_pipeline *pipe, char **out);

/* The body of a JSON string (no quotes) for any byte string: '"' and '\\' escaped, '\n' as \n, other
 * control characters as \u00XX, each byte that is not part of valid UTF-8 as the lone surrogate
 * \udcXX (Python's surrogateescape: json.loads then os.fsencode gives back the exact bytes). The
 * rule of every JSON stoker writes. malloc'd (free with stk_free); NULL when out of memory. */
STK_EXPORT char *stk_json_escape(const char *bytes);

/* Reads the file at path whole into *out (malloc'd and '\0'-terminated; free with stk_free), the
 * way the library reads every file it is given: a FIFO, a device (/dev/zero) or a directory is
 * refused at once, never waited on or read for ever, and a file over max_bytes (0: 16 MiB) is
 * refused once that many bytes are read. With size NULL the file is text (a pipeline text, a
 * checkpoint) and a NUL byte in it is refused; otherwise *size gets its length. `what` names the
 * file's role in the message written to err ("checkpoint /x/ck.txt is a FIFO, not a regular
 * file"). Returns STK_ENOENT, STK_EINVAL (not a regular file), STK_ERANGE (too long), STK_EPARSE
 * (NUL byte in a text), STK_EIO or STK_ENOMEM on failure, with *out = NULL. Thread-safe. */
STK_EXPORT stk_status stk_read_file(const char *path, const char *what, size_t max_bytes, char **out, size_t *size,
                                    char *err, size_t err_size);

/* ---- Checkpoint and resume (docs/checkpoint.md) -------------------------------------------- */
/* The pipeline's position as the consumer sees it: what a pipeline built from this state delivers
 * first is exactly, byte for byte, the batch this one would deliver after the batches handed out
 * so far (batches prefetched but not yet handed out do not count), whatever the thread count or
 * prefetch depth. A short text (well under 1 KB): format version, seed, fingerprints of the graph
 * and of the data set listing, epoch, position in the epoch, the reader's shard. *out is malloc'd:
 * free it with stk_free(). The pipeline must be built; STK_ENOTSUP when its reader cannot seek
 * (the message names it). Call it on the consumer's thread, between stk_pipeline_next calls. */
STK_EXPORT stk_status stk_pipeline_checkpoint(stk_pipeline *pipe, char **out);
/* Resume from a checkpoint text (copied). Before stk_pipeline_build: build checks it against the
 * pipeline and positions the reader without reading or decoding any skipped sample; another
 * pipeline, seed, batch size, data set or shard then fails the build (STK_EINVAL), the message
 * naming what differs. On a built pipeline: checked at once, then the batches in flight are
 * discarded (as by a mid-epoch reset; batches the caller holds stay valid) and the next
 * stk_pipeline_next returns the checkpoint's next batch. Bad syntax or version: STK_EINVAL here.
 * Resharding: docs/checkpoint.md. */
STK_EXPORT stk_status stk_pipeline_restore(stk_pipeline *pipe, const char *checkpoint);

/* ---- Feeding external_source ---------------------------------------------------------------- */
/* Flags of stk_pipeline_feed_input. */
#define STK_FEED_NO_COPY 1u /* borrow the samples' memory instead of copying it (as no_copy=True) */

/* Feeds one batch to external_source node `name`: `count` samples for each of its num_outputs
 * outputs, samples[o * count + s] being sample s of output o (host memory; GPU memory goes through
 * stk_pipeline_feed_input_stream; every sample of one output has the same dtype and ndim; shapes
 * may differ). count must equal batch_size, or lie in
 * 1..batch_size with options.exec_dynamic. Batches are used in the order fed, one per
 * stk_pipeline_next; the pipeline plans no batch ahead of its data, and stk_pipeline_next fails
 * with STK_ESTATE (instead of waiting forever) when it needs a batch nobody fed.
 * The data is copied before the call returns, unless STK_FEED_NO_COPY or the node's no_copy=True:
 * then it must stay valid and unchanged until the batch made from it has been released
 * (stk_batch_release). Bad input (wrong count, dtype, ndim or layout against the node's dtype /
 * ndim / layout arguments) fails with STK_EINVAL and a message naming the node, the
 * output and the sample. The pipeline must be built. Same thread contract as stk_pipeline_next. */
STK_EXPORT stk_status stk_pipeline_feed_input(stk_pipeline *pipe, const char *name, const stk_tensor_view *samples,
                                              int count, unsigned flags);
/* stk_pipeline_feed_input for samples that may lie in GPU memory (device_type STK_DEVICE_GPU, data a
 * device pointer, device_id the GPU it is on: it must be the pipeline's options.device_id; samples
 * dense in C order). cuda_stream is the stream the producer wrote them on (a cudaStream_t;
 * (void *)1 = the legacy default stream, (void *)2 = the per-thread default stream, as the CUDA
 * array interface spells them); NULL: the data is ready, nothing to wait for. The call waits for
 * the work queued on cuda_stream so far, then: an external_source on the GPU (device "gpu") copies
 * the samples device-to-device into its own GPU memory before returning (with STK_FEED_NO_COPY it
 * borrows them instead: they must stay valid and unchanged until the batch is released, and the
 * pipeline's stream copies them into the batch); one on the CPU copies them to host memory.
 * Host samples behave as in stk_pipeline_feed_input. A build without CUDA fails GPU samples with
 * STK_ENOTSUP. */
STK_EXPORT stk_status stk_pipeline_feed_input_stream(stk_pipeline *pipe, const char *name,
                                                     const stk_tensor_view *samples, int count, unsigned flags,
                                                     void *cuda_stream);
/* Marks the end of the data fed to `name` so far: once the batches fed before it are delivered,
 * stk_pipeline_next returns STK_EOF_EPOCH; after stk_pipeline_reset, batches fed later form the
 * next epoch. A reset before the end was reached drops the batches fed and not yet delivered, up
 * to and including the next end mark. */
STK_EXPORT stk_status stk_pipeline_feed_end(stk_pipeline *pipe, const char *name);

/* ---- Batches -------------------------------------------------------------------------------- */
STK_EXPORT int stk_batch_num_outputs(const stk_batch *batch);
/* Number of samples in the batch (batch_size; with exec_dynamic, the size fed for it). */
STK_EXPORT int stk_batch_size(const stk_batch *batch);
/* Epoch the batch belongs to and how many of its samples are real (the rest are the reader's
 * fill: padding or samples wrapped from the start of the shard, as DALI's readers do). */
STK_EXPORT int64_t stk_batch_epoch(const stk_batch *batch);
STK_EXPORT int stk_batch_valid_samples(const stk_batch *batch);
/* The same for reader `reader_name` of a pipeline with several readers: how many of the batch's
 * samples from that reader are real, and whether this was the last batch of its epoch. NULL names
 * the epoch reader (stk_reader_meta.is_epoch_reader). STK_ENOENT when no reader has that name;
 * STK_ESTATE once the pipeline was destroyed. */
STK_EXPORT stk_status stk_batch_reader_valid_samples(const stk_batch *batch, const char *reader_name, int *valid,
                                                     int *last_in_epoch);
/* Where sample s of output i came from, as DALI's source_info(): the file path for readers.file,
 * readers.numpy and readers.video, "shard:key" for readers.webdataset ("" for an external source
 * or an output from no reader). The reader is the one up the output's first inputs. Borrowed:
 * valid until stk_batch_release(). NULL for a bad index. */
STK_EXPORT const char *stk_batch_source_info(const stk_batch *batch, int output, int sample);
/* Output i as one dense tensor (when all samples share a shape; STK_ESTATE otherwise). */
STK_EXPORT stk_status stk_batch_tensor(const stk_batch *batch, int output, stk_tensor_view *out);
/* Sample s of output i (always works; for dense outputs a view into the dense tensor). */
STK_EXPORT stk_status stk_batch_sample(const stk_batch *batch, int output, int sample, stk_tensor_view *out);
/* The CUDA event (a cudaEvent_t) recorded after the batch's GPU work, or NULL for host batches.
 * Wait on it (cudaStreamWaitEvent) before reading GPU outputs on another stream. */
STK_EXPORT void *stk_batch_cuda_event(const stk_batch *batch);
/* Waits on the calling thread until the batch's GPU work is done (STK_OK at once for host
 * batches). For timing: a benchmark's clock stops only after its last batch is really ready. */
STK_EXPORT stk_status stk_batch_synchronize(const stk_batch *batch);
/* Copies view `view` (from stk_batch_tensor/stk_batch_sample of this batch) into host memory dst
 * (dst_size >= view->nbytes), waiting for the batch's GPU work first when the data is on the GPU.
 * For checks and digests; a training loop consumes GPU outputs in place (DLPack). */
STK_EXPORT stk_status stk_batch_copy_to_host(const stk_batch *batch, const stk_tensor_view *view, void *dst,
                                             size_t dst_size);
/* Says that GPU work reading this batch is queued on `cuda_stream` (a cudaStream_t; 1 = legacy
 * default stream, 2 = per-thread default stream): the batch's buffers are reused only after the
 * work queued there so far has finished (an event recorded on the stream now; the pipeline waits
 * for it before planning into these buffers again). Call it before stk_batch_release when the
 * consumer's kernels may still be running, e.g. with the training loop's stream; the latest call
 * counts (one consumer stream per batch). STK_ENOTSUP for host batches. */
STK_EXPORT stk_status stk_batch_record_stream(stk_batch *batch, void *cuda_stream);
/* Gives the batch's buffers back to the pipeline. Views of it become invalid. NULL is a no-op. */
STK_EXPORT void stk_batch_release(stk_batch *batch);

#ifdef __cplusplus
}
#endif
#endif
