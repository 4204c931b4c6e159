/* src/core/op.h: the internal operator contract between the engine (src/core) and the operator
 * implementations (src/ops/cpu, src/ops/gpu). Hot path: run_sample/run_batch are called for every
 * sample/batch; everything else runs at build time.
 *
 * An operator is a schema (name, doc, inputs, outputs, typed arguments with defaults, devices)
 * plus up to three implementations (cpu, mixed, gpu) sharing that schema, so adding a GPU
 * implementation never changes the operator's interface. One table row (stk__op_entry, in
 * src/ops/op_table.c) ties them together; the CPU and GPU implementations read the same parsed
 * parameters (src/ops/common/).
 *
 * Execution model (see src/core/exec/: scheduler.c plans, cpu_stage.c runs the per-sample chains
 * on the workers of pool.c, gpu_stage.c runs run_batch; docs/pipeline.md):
 *   - readers (schema.is_reader) get plan_batch() serially, in batch order, on the scheduler: they
 *     decide which dataset sample fills each slot (sample_id, label, file) -- deterministic;
 *   - CPU implementations get run_sample() for one sample on any worker thread; the whole CPU
 *     chain of one sample runs on one thread, samples of one or more batches run concurrently;
 *   - mixed/GPU implementations get run_batch() for the whole batch on the GPU stage thread, with
 *     a CUDA stream (mixed ops may use the worker pool via stk__parallel_for for CPU sub-work);
 *   - a mixed implementation may also have run_sample(): its CPU pre-stage, run per sample on the
 *     workers inside the sample's CPU chain (so it overlaps the GPU stage of earlier batches).
 *     It gets the op's regular inputs and writes one pinned host tensor per sample (the "stage");
 *     run_batch then finds the batch's stage list in ctx->stage. A stage must never fail for a
 *     bad file under skip_bad_files: it records the failure for run_batch instead.
 * Randomness: stk__rng_init(&rng, op->seed, op->id, ctx->epoch, ctx->sample_id) -- identical on
 * CPU and GPU implementations, independent of threads and timing. */
#ifndef STOKER_CORE_OP_H
#define STOKER_CORE_OP_H

#include <stddef.h>
#include <stdint.h>

#include "base/common.h"
#include "base/tensor.h"
#include "stoker/pipeline.h"
#include "stoker/topology.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Arguments ------------------------------------------------------------------------------ */
typedef struct stk__arg_schema {
  const char *name;
  stk_arg_type type;         /* for argument inputs: the type of the constant form; see accepts_input */
  const char *default_value; /* text ("224", "[0.485, 0.456]", "cpu"); NULL = no default */
  int required;
  int accepts_input; /* 1: may be bound to a per-sample node output (e.g. mirror=coin) */
  const char *doc;
} stk__arg_schema;

typedef struct stk__arg_value {
  stk_arg_type type;
  int is_set;    /* given by the user (vs. default) */
  int has_value; /* given or defaulted */
  int64_t i;
  double f;
  char *s;
  int64_t *ilist;
  double *flist;
  char **slist;
  size_t count;
  char *input_ref; /* argument input: "node" or "node[k]" */
  int input_slot;  /* index into the inputs array passed to run_*, or -1 */
} stk__arg_value;

/* ---- Operator instances --------------------------------------------------------------------- */
typedef struct stk__op stk__op;
typedef struct stk__op_schema stk__op_schema;

typedef enum stk__op_device { STK__DEV_CPU = 0, STK__DEV_MIXED = 1, STK__DEV_GPU = 2 } stk__op_device;

/* What a reader decided for one slot of a batch. */
typedef struct stk__sample_plan {
  int64_t sample_id;  /* index of the sample in the whole data set (RNG key) */
  int64_t file_index; /* reader's own index */
  int32_t label;
  const char *source; /* file path for messages; borrowed from the reader, lives as long as it */
  int is_fill;        /* 1: padding/wrap-around fill beyond the epoch's real samples */
} stk__sample_plan;

typedef struct stk__batch_plan {
  uint64_t epoch;
  int64_t batch_index; /* within the epoch */
  int batch_size;
  int valid_samples;
  int last_in_epoch;         /* 1: no more batches this epoch after this one */
  stk__sample_plan *samples; /* batch_size entries, owned by the executor */
} stk__batch_plan;

typedef struct stk__sample_ctx {
  int thread_index;
  int sample_in_batch;
  int batch_slot; /* the executor's batch slot the sample is in (stk__batch_ctx.batch_slot): 0, 1, ...
                     (slots are only added, a few: prefetch_queue_depth + 2 and rarely more); a slot
                     holds one batch at a time and is planned again only once the GPU and the
                     consumer are done with its last batch. 0 outside the executor */
  uint64_t epoch;
  uint64_t batch_seq; /* the batch's identity in the pipeline (stk__batch_ctx.batch_seq, >= 1); 0 outside
                         the executor */
  int64_t sample_id;
  int32_t label;
  const char *source; /* file the sample came from (for messages) */
  const stk__sample_plan *plan;
  char *err; /* on failure write a message here (the engine adds operator + sample) */
  size_t err_size;
  uint64_t *alloc_count;
  void *thread_scratch; /* per-thread scratch owned by the worker: see stk__scratch_get */
  /* The executor's answer to stk__sample_output_resize: where output `output` of this sample,
   * `nbytes` of (dtype, ndim, shape), may be written in its batch's dense output tensor, or NULL
   * (write it into the output's own buffer). NULL hook: never (standalone operators, pre-stages). */
  void *(*dense_place)(void *arg, int output, stk_dtype dtype, int ndim, const int64_t *shape, size_t nbytes);
  void *dense_place_arg;
  /* A reader whose plan has no source (readers.webdataset: "shard:key") may write the sample's
   * name here in run_sample: the engine then names it in a later operator's failure message and
   * in the quarantine record. NULL (name_size 0) outside the executor. */
  char *name;
  size_t name_size;
} stk__sample_ctx;

/* For an operator whose output's shape is known before its bytes are produced (a reader that
 * learnt it from a file header or size): sizes outputs[output] as stk__tensor_resize does, or,
 * when the executor can take the sample straight into its slot of the batch's dense output tensor
 * (the output is a CPU pipeline output, and this batch's samples so far have this shape),
 * places the tensor there (stk__tensor_place), so the bytes the operator writes are not copied
 * again. Either way the operator must then write all nbytes of t->data and rely on none of its
 * previous contents. */
STK_INTERNAL stk_status stk__sample_output_resize(stk__sample_ctx *ctx, stk__tensor *const *outputs, int output,
                                                  stk_dtype dtype, int ndim, const int64_t *shape, const char *layout);

/* Scratch buffers each worker thread keeps: slots 0 .. STK__SCRATCH_SLOTS - 1. */
#define STK__SCRATCH_SLOTS 8

/* A per-thread scratch buffer (slot 0 .. STK__SCRATCH_SLOTS - 1) of at least `bytes`, kept and
 * reused by the worker thread (counts an allocation only when it grows). NULL on out-of-memory
 * or a slot out of range. */
STK_INTERNAL void *stk__scratch_get(stk__sample_ctx *ctx, int slot, size_t bytes);

typedef struct stk__batch_ctx {
  uint64_t epoch;
  int batch_size;
  const stk__batch_plan *plan;
  void *cuda_stream; /* cudaStream_t of the GPU stage */
  int device_id;
  char *err;
  size_t err_size;
  uint64_t *alloc_count;
  stk_pipeline_stats *stats; /* mixed decoders add to decoded_* */
  struct stk__pool_runner *pool;
  stk__tensor_list *stage;  /* the op's CPU pre-stage outputs for this batch (pinned host), or
                                NULL when run_sample did not run (standalone operator use) */
  const int *sample_failed; /* per sample: 1 when the executor replaced it by a copy of a good
                                neighbour (skip_bad_files); may be NULL */
  uint64_t batch_seq;       /* the batch's identity in this pipeline (>= 1), the same in
                                prepare_batch and run_batch; 0 outside the executor */
  int batch_slot;           /* the batch slot its samples' CPU chains saw (stk__sample_ctx.batch_slot) */
  int worker;               /* in prepare_batch: 1 + the index of the worker running it (the
                               thread_index its parallel_for items would get); 0 elsewhere */
} stk__batch_ctx;

/* Runs fn(arg, i, thread_index) for i in [0, n) on the worker pool and waits; the first error
 * wins. Callable from run_batch (the GPU stage thread) and from prepare_batch (a worker, which runs
 * queued items of its own job while it waits, as thread_index ctx->worker - 1). Items are queued
 * ahead of other work, the last one first. */
STK_INTERNAL stk_status stk__parallel_for(stk__batch_ctx *ctx, int n,
                                          stk_status (*fn)(void *arg, int i, int thread_index), void *arg);
/* The same, but the caller runs queued items of its job too wherever it is called from (off a
 * worker as thread_index -1, so fn must keep no per-worker state then): for short CPU sub-work of
 * the GPU stage (weight tables), which then never waits longer than doing it alone would take
 * plus one item, however busy the workers are with longer tasks. */
STK_INTERNAL stk_status stk__parallel_for_helped(stk__batch_ctx *ctx, int n,
                                                 stk_status (*fn)(void *arg, int i, int thread_index), void *arg);

/* CPU seconds the pipeline's own threads (its workers, GPU stage and scheduler) have run so far --
 * not the process's, where a training loop shares it; the process's CPU time in standalone
 * operator use (no pipeline). For costs per image measured over a window of batches. */
STK_INTERNAL double stk__pool_cpu_seconds(const stk__batch_ctx *ctx);

/* One earlier sharding of a resharded epoch (docs/checkpoint.md, Resharding). */
#define STK__RESHARD_MAX_CUTS 16
typedef struct stk__reshard_cut {
  int num_shards;
  int64_t position; /* batches of the epoch every rank had received when it stopped */
} stk__reshard_cut;

typedef struct stk__op_impl {
  stk_status (*init)(stk__op *op, char *err, size_t err_size);
  void (*destroy)(stk__op *op);
  stk_status (*plan_batch)(stk__op *op, stk__batch_plan *plan, char *err, size_t err_size); /* readers */
  stk_status (*reset)(stk__op *op, uint64_t epoch);                                         /* readers */
  void (*reader_meta)(const stk__op *op, uint64_t epoch, stk_reader_meta *out);             /* readers */
  stk_status (*run_sample)(stk__op *op, stk__sample_ctx *ctx, stk__tensor *const *inputs, stk__tensor *const *outputs);
  stk_status (*run_batch)(stk__op *op, stk__batch_ctx *ctx, stk__tensor_list *const *inputs,
                          stk__tensor_list *const *outputs);
  /* Readers, optional (exact checkpoint/resume, src/core/checkpoint.c). NULL: a pipeline with this
   * reader cannot be checkpointed (the error names the reader).
   * seek: positions the reader so that its next plan_batch plans batch `batch_index` of epoch
   * `epoch` (batch_index == the epoch's batch count: the epoch is over, plan_batch says EOF),
   * reading and decoding nothing: planning must be a pure function of (seed, epoch, batch index).
   * data_fingerprint: a hash of the data set listing (paths, labels, count), so a checkpoint is
   * refused on another data set; *num_samples gets the data set's size. Safe while plan_batch
   * runs on another thread (reads only what init listed). */
  stk_status (*seek)(stk__op *op, uint64_t epoch, int64_t batch_index, char *err, size_t err_size);
  uint64_t (*data_fingerprint)(const stk__op *op, int64_t *num_samples);
  /* Readers fed from outside (external_source; NULL for every other operator):
   * feed takes one batch (or, with count < 0, the end of the data: the plan after the batches fed
   * before it returns STK_EOF_EPOCH) from stk_pipeline_feed_input on the consumer's thread;
   * input_ready says whether plan_batch has a fed batch (or end) to plan, so the scheduler plans
   * nothing ahead of the data (any thread; it must not block). */
  stk_status (*feed)(stk__op *op, const stk_tensor_view *samples, int count, unsigned flags, char *err,
                     size_t err_size);
  int (*input_ready)(stk__op *op);
  /* Mixed operators, optional: prepare_batch runs on a worker once the batch's CPU part is done,
   * before the GPU stage takes the batch (same inputs/outputs as run_batch; ctx->worker set), for
   * work that blocks its thread while a device works, e.g. the JPEG engines' batched submission
   * (stk__parallel_for there spreads work over the pool, the calling worker helping);
   * run_batch then finds that work by ctx->batch_seq (and does it itself when it finds none).
   * discard_batch releases what prepare_batch holds for a batch whose run_batch did not run or
   * failed (the executor calls it after every prepared batch's GPU part; a no-op for a batch
   * run_batch consumed). */
  stk_status (*prepare_batch)(stk__op *op, stk__batch_ctx *ctx, stk__tensor_list *const *inputs,
                              stk__tensor_list *const *outputs);
  void (*discard_batch)(stk__op *op, uint64_t batch_seq);
  /* GPU readers, optional: a CPU-side check of one planned sample, run first in the sample's CPU
   * chain on a worker (ctx as run_sample's, no tensors). A failure there is a failed sample like any
   * CPU-stage failure, so skip_bad_files refills it from the reader exactly as on the CPU
   * (readers.video on NVDEC: a file found bad at start-up, or a sequence that fails to decode).
   * It may also do the sample's device work there, into storage the reader keeps per batch slot
   * (ctx->batch_slot, sample_in_batch) and hands to run_batch's outputs (readers.video decodes
   * each sequence there: STOKER_NVDEC_EARLY). The executor may move or copy samples within a batch
   * afterwards (skip_bad_files' fills): run_batch finds a sample by its plan, not its position.
   * Its time counts in the reader's stats.op_seconds. */
  stk_status (*check_sample)(stk__op *op, stk__sample_ctx *ctx);
  /* Readers, optional (resharding mid-epoch, src/core/checkpoint_reshard.c; last in the struct so
   * the .cu files' positional initializers stay valid). NULL: the reader cannot go on with an
   * epoch under another num_shards, and the error names it. set_reshard: the next seek to `epoch`
   * reads the epoch's remainder: the samples the earlier shardings cuts[0..num_cuts)
   * left unread (each cut: the num_shards in force and the epoch position where it stopped),
   * split into this reader's num_shards; num_cuts 0: the epoch reads normally. Only seek reads
   * what it sets (consumer thread). get_reshard: the cuts in force for `epoch` (count returned),
   * for a checkpoint. */
  stk_status (*set_reshard)(stk__op *op, uint64_t epoch, const stk__reshard_cut *cuts, int num_cuts, char *err,
                            size_t err_size);
  int (*get_reshard)(const stk__op *op, uint64_t epoch, stk__reshard_cut *cuts);
} stk__op_impl;

struct stk__op_schema {
  const char *name;
  const char *doc;
  int min_inputs, max_inputs, num_outputs;
  unsigned devices; /* STK_OPDEV_* */
  const stk__arg_schema *args;
  int num_args;
  int is_reader;
  /* Bit k set: output k holds an array per sample (encoded bytes, an image, a tensor), never the
   * one number a scalar argument input (mirror=coin) takes, so the build refuses that binding
   * (graph.c). 0 = not declared. */
  unsigned array_outputs;
  /* 1: a non-reader whose run_sample names the sample it made in ctx->name (io.file.read: the path
   * it read); the engine keeps that name as the source_info of the samples of the reader up its
   * first inputs, as it keeps a reader's. */
  int names_samples;
  /* The implementations are in the operator table (stk__op_entry), not here. */
};

/* One row of the operator table: an operator's schema and its implementations (NULL: none in
 * this build -- a build without CUDA has no mixed/gpu ones). */
typedef struct stk__op_entry {
  const stk__op_schema *schema;
  const stk__op_impl *cpu;
  const stk__op_impl *mixed;
  const stk__op_impl *gpu;
} stk__op_entry;

/* A fusion pair: a `first` node (on the GPU) whose only consumer is a `second` node (on the GPU,
 * reading it as input 0) runs as one node with the `fused` implementation (NULL: not in this
 * build). The fused node keeps both originals in stk__op.fused[]. */
typedef struct stk__op_fusion {
  const stk__op_schema *first;
  const stk__op_schema *second;
  const stk__op_impl *fused;
} stk__op_fusion;

/* The operator table and the fusion pairs (src/ops/op_table.c): read-only, in listing order. */
STK_INTERNAL extern const stk__op_entry stk__op_table[];
STK_INTERNAL extern const int stk__op_table_count;
STK_INTERNAL extern const stk__op_fusion stk__op_fusions[];
STK_INTERNAL extern const int stk__op_fusions_count;

struct stk__op {
  const stk__op_schema *schema;
  const stk__op_impl *impl;
  char *name; /* instance name */
  int id;     /* position in the graph (order added): the RNG key */
  stk__op_device device;
  stk__arg_value *args; /* parallel to schema->args */
  const stk_pipeline_options *options;
  stk__host_budget *host_budget; /* the pipeline's host memory budget, for host buffers an operator
                                    keeps itself (the mixed decoder's); NULL outside a pipeline */
  uint64_t seed;
  int num_inputs; /* regular inputs; argument inputs follow them in the inputs array */
  void *state;    /* the implementation's */
  /* A fused node (built by the engine for a fusion pair of the operator table, stk__op_fusion):
   * the two original nodes, whose args and ids (RNG keys) it uses. */
  struct stk__op *fused[2];
};

/* Operator state kept as one plain struct: init copies it into op->state (malloc'd) with
 * stk__op_keep_state; stk__op_free_state frees it and can serve as impl->destroy. */
STK_INTERNAL stk_status stk__op_keep_state(stk__op *op, const void *state, size_t size);
STK_INTERNAL void stk__op_free_state(stk__op *op);

/* Argument getters (by schema name; the schema guarantees the type). */
STK_INTERNAL const stk__arg_value *stk__arg(const stk__op *op, const char *name);
STK_INTERNAL int stk__arg_is_set(const stk__op *op, const char *name);
STK_INTERNAL int64_t stk__arg_int(const stk__op *op, const char *name);
STK_INTERNAL double stk__arg_float(const stk__op *op, const char *name);
STK_INTERNAL int stk__arg_bool(const stk__op *op, const char *name);
STK_INTERNAL const char *stk__arg_string(const stk__op *op, const char *name); /* "" when unset */
STK_INTERNAL const double *stk__arg_float_list(const stk__op *op, const char *name, size_t *count);
STK_INTERNAL const int64_t *stk__arg_int_list(const stk__op *op, const char *name, size_t *count);
STK_INTERNAL char *const *stk__arg_string_list(const stk__op *op, const char *name, size_t *count);
/* The per-sample tensor bound to argument `name`, or NULL when it is a constant. */
STK_INTERNAL const stk__tensor *stk__arg_input(const stk__op *op, stk__tensor *const *inputs, const char *name);
/* Reads a scalar from an argument input tensor as double (any dtype). */
STK_INTERNAL double stk__tensor_scalar(const stk__tensor *t);
/* Per-sample arguments (any numeric argument with accepts_input = 1; DALI's "TensorList" arguments).
 * stk__arg_sample_float: on the CPU (run_sample), the bound input's scalar for this sample, else the
 * constant (or default). stk__arg_sample_floats: the same for a list argument: up to `max` values
 * into out, *count set (a bound input gives its elements, any dtype; a scalar input one value).
 * stk__arg_batch_floats: in run_batch, the value of every sample 0..n-1 into out[n] (constant
 * repeated when unbound); a bound list on the host is read directly, one on the GPU with a small
 * synchronous copy a sample on `cuda_stream` (argument inputs normally come from CPU operators,
 * host lists). STK_EINVAL with a message naming the argument and sample when an input lacks
 * sample i or holds no value. Hot path (per sample / per batch), no allocation. */
STK_INTERNAL double stk__arg_sample_float(const stk__op *op, stk__tensor *const *inputs, const char *name);
STK_INTERNAL void stk__arg_sample_floats(const stk__op *op, stk__tensor *const *inputs, const char *name, double *out,
                                         size_t max, size_t *count);
STK_INTERNAL stk_status stk__arg_batch_floats(const stk__op *op, stk__tensor_list *const *inputs, const char *name,
                                              int n, void *cuda_stream, double *out, char *err, size_t err_size);

/* ---- Counter-based RNG (Philox4x32-10) ------------------------------------------------------ */
typedef struct stk__rng {
  uint32_t key[2];
  uint32_t ctr[4];
  uint32_t out[4];
  int used;
} stk__rng;

STK_INTERNAL void stk__rng_init(stk__rng *rng, uint64_t seed, uint32_t op_id, uint64_t epoch, int64_t sample_id);
STK_INTERNAL uint32_t stk__rng_u32(stk__rng *rng);
STK_INTERNAL double stk__rng_uniform(stk__rng *rng); /* [0, 1) with 53 random bits */

/* ---- Registry (src/core/registry.c: the table's rows, then rows registered at run time) ----- */
STK_INTERNAL const stk__op_schema *stk__op_schema_find(const char *name);
/* The table row of the operator named `name`, or NULL. */
STK_INTERNAL const stk__op_entry *stk__op_entry_find(const char *name);
/* The implementation of `schema` on `device`, or NULL (none, or not in this build). */
STK_INTERNAL const stk__op_impl *stk__op_impl_find(const stk__op_schema *schema, stk__op_device device);
/* The fused implementation of a `first` node feeding a `second` one (stk__op_fusion), or NULL. */
STK_INTERNAL const stk__op_impl *stk__op_fused_impl_find(const stk__op_schema *first, const stk__op_schema *second);
/* Adds a row after the table's (test-only operators); the row is copied, its schema and
 * implementations must outlive the process. STK_EINVAL when the name is taken, STK_ERANGE when full. */
STK_INTERNAL stk_status stk__op_register(const stk__op_entry *entry);

/* A standalone operator instance outside any pipeline (for operator unit tests and tools):
 * args resolved against the schema exactly as add_op does (defaults filled, types checked,
 * messages name the operator and argument), then impl->init called. id is the RNG key. */
STK_INTERNAL stk_status stk__op_new_standalone(const char *op_name, const char *device, const stk_args *args,
                                               const stk_pipeline_options *options, int id, stk__op **out, char *err,
                                               size_t err_size);
STK_INTERNAL void stk__op_free_standalone(stk__op *op);

#ifdef __cplusplus
}
#endif
#endif
