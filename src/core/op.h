/* src/core/op.h: the internal operator contract between the engine (src/core) and the operator
 * implementations (src/ops/cpu, src/ops/gpu). Hot path: run_sample/run_batch are called for every
 * sample/batch; everything else runs at build time.
 *
 * An operator is a schema (name, doc, inputs, outputs, typed arguments with defaults, devices)
 * plus up to three implementations (cpu, mixed, gpu) sharing that schema, so adding a GPU
 * implementation never changes the operator's interface.
 *
 * Execution model (see src/core/executor.c):
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

#include "stoker/pipeline.h"
#include "stoker/topology.h"

#define STK_INTERNAL __attribute__((visibility("hidden")))

/* ---- Tensors -------------------------------------------------------------------------------- */
typedef struct stk__tensor {
  void *data;
  size_t nbytes;     /* bytes of the current contents */
  size_t capacity;   /* bytes allocated at data (0 when data is borrowed) */
  stk_dtype dtype;
  int ndim;
  int64_t shape[STK_MAX_DIMS];
  char layout[8];
  stk_device_type device;
  uint64_t *alloc_count; /* pipeline counter bumped (atomically) on each (re)allocation; may be NULL */
  size_t *high_water;    /* shared by all samples of one node output: the largest capacity any of
                            them needed; a growing buffer grows straight to it, so every slot reaches
                            steady state (no allocation) after a few batches; may be NULL */
  int pinned;            /* 1: host memory is page-locked (stk__gpu_pinned_alloc on numa_node), so
                            the GPU reads it by DMA; set by the engine on lists a mixed op reads */
  int numa_node;         /* where pinned memory is placed (-1: anywhere) */
  uint64_t stage_record[8]; /* a mixed op's CPU pre-stage writes here what it decided for the
                               sample (e.g. the parsed JPEG header and route: jpeg_route.h) for its
                               run_batch, so a stage with no pixels (nbytes 0) still carries it
                               and needs no buffer; the engine never reads it */
} stk__tensor;

/* Sets dtype/shape/layout and makes sure capacity >= the byte size, growing (never shrinking)
 * host memory (pinned when t->pinned; growing keeps the old contents either way). GPU tensors are sized by stk__gpu_tensor_resize (src/core/gpu_backend.h). */
STK_INTERNAL stk_status stk__tensor_resize(stk__tensor *t, stk_dtype dtype, int ndim, const int64_t *shape,
                                           const char *layout);
/* The smallest 2^k or 1.5 x 2^k (>= 4096) >= bytes: host buffers grow in half-octave steps (at
 * most 50% unused), so the high-water mark of an output rises only a few times however its
 * sample sizes vary, and pinned blocks come in few sizes the pool can recycle. */
STK_INTERNAL size_t stk__size_class(size_t bytes);
/* Position of bytes' class in that sequence (4096 -> 0, 6144 -> 1, 8192 -> 2, ...). */
STK_INTERNAL int stk__size_class_index(size_t bytes);
/* Makes sure capacity >= bytes (keeps the contents); counted like a resize's growth. Pinned
 * tensors take blocks from the pinned pool (stk__gpu_pinned_block_get). */
STK_INTERNAL stk_status stk__tensor_reserve(stk__tensor *t, size_t bytes);
STK_INTERNAL size_t stk__tensor_numel(const stk__tensor *t);
STK_INTERNAL void stk__tensor_free(stk__tensor *t);

/* One node output for a whole batch. When dense, samples[i].data points into base. */
typedef struct stk__tensor_list {
  int count;
  stk__tensor *samples;
  int dense;
  void *base;        /* dense storage (host or device) */
  size_t base_capacity;
  stk_device_type device;
  int samples_capacity; /* entries allocated at samples when larger than count (0: exactly count);
                           kept by stk__gpu_tensor_list_reserve so shrinking then regrowing a
                           batch does not reallocate */
} stk__tensor_list;

/* ---- Arguments ------------------------------------------------------------------------------ */
typedef struct stk__arg_schema {
  const char *name;
  stk_arg_type type;      /* for argument inputs: the type of the constant form; see accepts_input */
  const char *default_value; /* text ("224", "[0.485, 0.456]", "cpu"); NULL = no default */
  int required;
  int accepts_input;      /* 1: may be bound to a per-sample node output (e.g. mirror=coin) */
  const char *doc;
} stk__arg_schema;

typedef struct stk__arg_value {
  stk_arg_type type;
  int is_set;             /* given by the user (vs. default) */
  int has_value;          /* given or defaulted */
  int64_t i;
  double f;
  char *s;
  int64_t *ilist;
  double *flist;
  char **slist;
  size_t count;
  char *input_ref;        /* argument input: "node" or "node[k]" */
  int input_slot;         /* index into the inputs array passed to run_*, or -1 */
} stk__arg_value;

/* ---- Operator instances --------------------------------------------------------------------- */
typedef struct stk__op stk__op;
typedef struct stk__op_schema stk__op_schema;

typedef enum stk__op_device { STK__DEV_CPU = 0, STK__DEV_MIXED = 1, STK__DEV_GPU = 2 } stk__op_device;

/* What a reader decided for one slot of a batch. */
typedef struct stk__sample_plan {
  int64_t sample_id;   /* index of the sample in the whole data set (RNG key) */
  int64_t file_index;  /* reader's own index */
  int32_t label;
  const char *source;  /* file path for messages; borrowed from the reader, lives as long as it */
  int is_fill;         /* 1: padding/wrap-around fill beyond the epoch's real samples */
} stk__sample_plan;

typedef struct stk__batch_plan {
  uint64_t epoch;
  int64_t batch_index;    /* within the epoch */
  int batch_size;
  int valid_samples;
  int last_in_epoch;      /* 1: no more batches this epoch after this one */
  stk__sample_plan *samples; /* batch_size entries, owned by the executor */
} stk__batch_plan;

typedef struct stk__sample_ctx {
  int thread_index;
  int sample_in_batch;
  uint64_t epoch;
  int64_t sample_id;
  int32_t label;
  const char *source;     /* file the sample came from (for messages) */
  const stk__sample_plan *plan;
  char *err;              /* on failure write a message here (the engine adds operator + sample) */
  size_t err_size;
  uint64_t *alloc_count;
  void *thread_scratch;   /* per-thread scratch owned by the worker: see stk__scratch_get */
} stk__sample_ctx;

/* A per-thread scratch buffer (slot 0..7) of at least `bytes`, kept and reused by the worker
 * thread (counts an allocation only when it grows). NULL on out-of-memory. */
STK_INTERNAL void *stk__scratch_get(stk__sample_ctx *ctx, int slot, size_t bytes);

typedef struct stk__batch_ctx {
  uint64_t epoch;
  int batch_size;
  const stk__batch_plan *plan;
  void *cuda_stream;      /* cudaStream_t of the GPU stage */
  int device_id;
  char *err;
  size_t err_size;
  uint64_t *alloc_count;
  stk_pipeline_stats *stats; /* mixed decoders add to decoded_* */
  struct stk__pool_runner *pool;
  stk__tensor_list *stage;   /* the op's CPU pre-stage outputs for this batch (pinned host), or
                                NULL when run_sample did not run (standalone operator use) */
  const int *sample_failed;  /* per sample: 1 when the executor replaced it by a copy of a good
                                neighbour (skip_bad_files); may be NULL */
} stk__batch_ctx;

/* Runs fn(arg, i, thread_index) for i in [0, n) on the worker pool and waits; the first error
 * wins. Callable from run_batch (the GPU stage thread). */
STK_INTERNAL stk_status stk__parallel_for(stk__batch_ctx *ctx, int n,
                                          stk_status (*fn)(void *arg, int i, int thread_index), void *arg);

typedef struct stk__op_impl {
  stk_status (*init)(stk__op *op, char *err, size_t err_size);
  void (*destroy)(stk__op *op);
  stk_status (*plan_batch)(stk__op *op, stk__batch_plan *plan, char *err, size_t err_size); /* readers */
  stk_status (*reset)(stk__op *op, uint64_t epoch);                                         /* readers */
  void (*reader_meta)(const stk__op *op, uint64_t epoch, stk_reader_meta *out);             /* readers */
  stk_status (*run_sample)(stk__op *op, stk__sample_ctx *ctx, stk__tensor *const *inputs, stk__tensor *const *outputs);
  stk_status (*run_batch)(stk__op *op, stk__batch_ctx *ctx, stk__tensor_list *const *inputs,
                          stk__tensor_list *const *outputs);
} stk__op_impl;

struct stk__op_schema {
  const char *name;
  const char *doc;
  int min_inputs, max_inputs, num_outputs;
  unsigned devices;       /* STK_OPDEV_* */
  const stk__arg_schema *args;
  int num_args;
  int is_reader;
  const stk__op_impl *cpu;   /* NULL when no CPU implementation */
  /* mixed/gpu implementations are looked up with stk__gpu_impl_find() (src/ops/gpu) */
};

struct stk__op {
  const stk__op_schema *schema;
  const stk__op_impl *impl;
  char *name;             /* instance name */
  int id;                 /* position in the graph (order added): the RNG key */
  stk__op_device device;
  stk__arg_value *args;   /* parallel to schema->args */
  const stk_pipeline_options *options;
  uint64_t seed;
  int num_inputs;         /* regular inputs; argument inputs follow them in the inputs array */
  void *state;            /* the implementation's */
  /* A fused node (built by the engine when a GPU resize/random_resized_crop feeds only a GPU
   * crop_mirror_normalize): the two original nodes, whose args and ids (RNG keys) it uses. */
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

/* ---- Registry ------------------------------------------------------------------------------- */
STK_INTERNAL const stk__op_schema *stk__op_schema_find(const char *name);
/* The mixed/gpu implementation of op `name`, or NULL (not built with CUDA, or none). */
STK_INTERNAL const stk__op_impl *stk__gpu_impl_find(const char *name, stk__op_device device);

/* A standalone operator instance outside any pipeline (for operator unit tests and tools):
 * args resolved against the schema exactly as add_op does (defaults filled, types checked,
 * messages name the operator and argument), then impl->init called. id is the RNG key. */
STK_INTERNAL stk_status stk__op_new_standalone(const char *op_name, const char *device, const stk_args *args,
                                               const stk_pipeline_options *options, int id, stk__op **out,
                                               char *err, size_t err_size);
STK_INTERNAL void stk__op_free_standalone(stk__op *op);

/* The fused GPU implementation of `first` followed by `second` ("random_resized_crop",
 * "crop_mirror_normalize"), or NULL. */
STK_INTERNAL const stk__op_impl *stk__gpu_fused_impl_find(const char *first, const char *second);

/* Thread-safe "first error wins" message formatting helper: snprintf into err. */
STK_INTERNAL void stk__errorf(char *err, size_t err_size, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
