/* src/core/engine.h: the engine's internal data: the graph node, the batch slot and the pipeline
 * object, shared by pipeline.c (public API), graph.c (lowering), the executor (src/core/exec/)
 * and dlpack.c; plus the pipeline's last-error string (engine.c). Data only: no stage's
 * functions are declared here, so every core header sits below the stages that use it
 * (op.h <- engine.h <- graph.h, exec/executor.h <- pipeline.c). Not a hot path by itself; the
 * fields read per sample are in stk__node and stk_batch. */
#ifndef STOKER_CORE_ENGINE_H
#define STOKER_CORE_ENGINE_H

#include <pthread.h>

#include "core/op.h"

#ifdef __cplusplus
extern "C" {
#endif

#define STK__MAX_NODES 32 /* stats.op_seconds has 32 entries */
#define STK__MAX_SIDE_READERS 7 /* readers besides the epoch reader (exec/side_readers.c) */

typedef struct stk__node {
  stk__op op;          /* op.name, op.args owned by the node */
  const char *op_type; /* schema name */
  int text_line;       /* the pipeline text's line of its statement (0: added through the API),
                              so build errors of a text pipeline name the line */
  char **input_refs;   /* regular inputs as given ("name" / "name[k]") */
  int num_regular_inputs;
  int num_all_inputs;         /* regular + argument inputs */
  int *src_node, *src_output; /* per input (regular then argument inputs): producer */
  int num_outputs;
  int list_base;     /* index of output 0 in a batch's lists[] */
  int stage_list;    /* mixed op with a CPU pre-stage (run_sample): index of its pinned stage
                              list in lists[], else -1 */
  int prepare;       /* mixed op with prepare_batch whose inputs are all CPU lists: run on a
                              worker before the GPU stage (exec/gpu_stage.c) */
  int skip;          /* 1: fused into another node; not run */
  stk__op *fused_op; /* when this node runs a fused implementation (owned) */
  int fused_first;   /* node index of the fused producer (its inputs feed fused_op), or -1 */
  uint64_t busy_ns;  /* atomic */
  int side;          /* a further reader: its index in pipe->side (its own plan per batch), else -1 */
} stk__node;

/* A reader besides the pipeline's epoch reader (exec/side_readers.c): it plans every batch too,
 * with its own shuffling and sharding, and moves into its next epoch on its own when its epoch
 * ends (as each reader of a DALI pipeline does); only the epoch reader's epochs end
 * stk_pipeline_next. */
typedef struct stk__side_reader {
  int node;            /* node index */
  uint64_t plan_epoch; /* the scheduler's: the epoch it plans from */
  uint64_t pos_epoch;  /* under lock: the consumer's position, the epoch and the index of the */
  int64_t pos_batch;   /*   next batch it gets from this reader (checkpoints, reader_meta, resets) */
} stk__side_reader;

/* The CPU part of a batch runs in two rounds of worker tasks. */
typedef enum stk__batch_phase {
  STK__PHASE_SAMPLE_CHAINS = 0, /* one task per sample: its whole CPU chain */
  STK__PHASE_DENSE_COPIES = 1   /* one task per sample and dense output: the copy into the batch tensor;
                                   and per sample of a packed upload list: the copy into its staging */
} stk__batch_phase;

typedef enum stk__slot_state {
  STK__SLOT_FREE = 0,
  STK__SLOT_RUNNING, /* planned; per-sample tasks under way */
  STK__SLOT_GPU,     /* waiting for/under the GPU stage */
  STK__SLOT_READY,   /* complete (or failed), not yet handed out */
  STK__SLOT_HELD     /* handed to the consumer, until refcount drops to 0 */
} stk__slot_state;

/* A CPU list the GPU stage uploads, packed (pipe->packed_uploads): round 2 copies the batch's
 * samples into one pinned staging block back to back in sample order, at the offsets the device
 * list gives them (stk__gpu_tensor_list_reserve_sizes), and the upload is one DMA (exec/cpu_stage.c,
 * exec/gpu_stage.c). The samples' own buffers are then ordinary memory. */
typedef struct stk__upload_pack {
  int on;     /* this upload list is packed (the slot did not pin it: not a mixed op's input) */
  int ready;  /* this batch's samples are (being) copied in: set by round 2's start, cleared by the upload */
  void *data; /* pinned (stk__gpu_pinned_block_get on numa_node), capacity bytes, grown with headroom */
  size_t capacity;
  int numa_node;
  size_t total;    /* this batch's bytes */
  size_t *offsets; /* per sample (the slot's batch_size): where it sits in data and on the device */
} stk__upload_pack;

struct stk_batch {
  stk_pipeline *pipe;
  stk__slot_state state;
  uint64_t seq;        /* delivery order, across epochs */
  uint64_t planned_ns; /* when the scheduler planned it (stats: batch latency) */
  int cancelled;       /* reset/destroy: tasks skip the work */
  int used;            /* planned at least once (warm) */
  int slot_index;      /* position in pipe->slots (slots are only ever added): the operators' key for what
                          they keep per slot (stk__sample_ctx.batch_slot) */
  int refcount;        /* consumer + DLPack exports (atomic) */
  stk__batch_plan plan;
  stk__batch_plan side_plans[STK__MAX_SIDE_READERS]; /* per further reader (pipe->side): its plan */
  char *sample_names;      /* per reader (epoch reader first, then pipe->side) and sample: the name the
                              reader gave it in run_sample (stk__sample_ctx.name), STK__SAMPLE_NAME
                              bytes each; "" when it gave none (stk_batch_source_info) */
  int plan_capacity;       /* samples the slot holds (options.batch_size): a row of sample_names */
  int num_readers;         /* rows of sample_names: 1 + pipe->num_side */
  int *out_reader;         /* per output: the row of the reader its samples come from (graph.c) */
  stk__tensor_list *lists; /* one per node output: pipe->num_lists */
  stk__upload_pack *packs; /* per list (pipe->num_lists): on for the packed upload lists */
  /* pipeline outputs as the consumer sees them */
  stk__tensor_list *out_lists; /* one per pipeline output; for dense host outputs base = copy */
  stk__tensor **out_samples;   /* per output: batch_size tensors (views) */
  int *sample_failed;          /* per sample (skip_bad_files): 0 good, STK__SAMPLE_BAD its chain failed
                               (waits for a refill), STK__SAMPLE_FILL to become a copy of a good one */
  struct stk__bad_sample *bad; /* skip_bad_files: this batch's failed samples (quarantine record at
                                  delivery); num_bad used, cap_bad allocated */
  int num_bad, cap_bad;
  int refill_state;           /* STK__REFILL_*: where the batch is in the in-order completion (refill.c) */
  int dropped;                /* skip_bad_files: no good sample was left for it; skipped at delivery */
  int prepared;               /* prepare_batch hooks ran for this batch (gpu_stage.c) */
  stk_pipeline_stats decoded; /* this batch's decoded_* and skipped_files from mixed decoders;
                               * they reach the pipeline's stats when the batch is delivered */
  int pending;                /* tasks still to finish (under the pipeline lock) */
  stk__batch_phase phase;     /* which of the CPU part's task rounds is under way */
  stk_status status;
  char error[1024];
  void *cuda_event;
  void *consumer_event;                 /* recorded on the consumer's stream (stk_batch_record_stream) */
  int consumer_recorded;                /* atomic: consumer_event holds work to wait for before replanning */
  int *out_list_index;                  /* per output: index into lists[] for GPU outputs, -1 = out_lists[o] */
  struct stk__dense_claim *claims;      /* per output: the shape this batch's samples are written in place
                                           at, in its dense tensor (cpu_stage.c); reset when planned */
  int device_id;                        /* CUDA ordinal of GPU outputs */
  int num_lists_copy, num_outputs_copy; /* so an orphaned batch (pipeline destroyed) can be freed */
  size_t bookkeeping_bytes;             /* the slot's per-sample arrays, counted in the host budget (slots.c) */
  pthread_mutex_t owner_lock;           /* guards `pipe` against the pipeline's destruction: the last release
                               * and stk__executor_stop's orphaning take it (never the other way
                               * round with pipe->lock: owner_lock first) */
};

#define STK__SAMPLE_NAME 256 /* bytes of a sample's name kept per batch (stk_batch.sample_names) */

/* The consumer's list for pipeline output o of batch b. */
static inline stk__tensor_list *stk__batch_output(const stk_batch *b, int o) {
  return b->out_list_index[o] >= 0 ? &b->lists[b->out_list_index[o]] : &b->out_lists[o];
}

/* One worker thread of the executor (src/core/exec/pool.c). Operator unit tests make one by hand
 * to give stk__scratch_get a home (stk__sample_ctx.thread_scratch). */
typedef struct stk__worker {
  stk_pipeline *pipe;
  pthread_t thread;
  int index;
  int cpu; /* pinned CPU or -1 */
  void *scratch[STK__SCRATCH_SLOTS];
  size_t scratch_cap[STK__SCRATCH_SLOTS];
  char err[1024];
  char sample_name[512]; /* the running sample's name from its reader (stk__sample_ctx.name), or "" */
} stk__worker;

/* Where a skip_bad_files pipeline's refill cursor resumes (src/core/checkpoint.c writes and parses
 * it, exec/refill.c computes and applies it; docs/checkpoint.md). Positions count the entries of
 * the reader's plans of the epoch, fill entries included: reader batch b, entry i is b *
 * batch_size + i. The resumed cursor starts at `start` (where the first pass of the consumer's
 * next batch began) and passes over the `skip` intervals [from, to) without giving them out: the
 * replacements the original run took for batches the consumer had already received. */
#define STK__REFILL_MAX_SKIPS 256
typedef struct stk__refill_point {
  int depth; /* max(1, prefetch_queue_depth) of the original run */
  int64_t start;
  int num_skips;
  int64_t skip[STK__REFILL_MAX_SKIPS][2]; /* sorted, disjoint, from >= start, to > from */
} stk__refill_point;

struct stk_pipeline {
  stk_pipeline_options options;
  char *affinity_mask; /* copy of options.affinity_mask */
  char *bad_files_log; /* copy of options.bad_files_log */
  char last_error[2048];
  int built, failed_build;

  stk__node *nodes;
  int num_nodes, cap_nodes;
  int *order; /* topological order */
  int num_lists;
  size_t *list_high_water; /* per node output: the largest sample buffer needed (stk__tensor.high_water);
                              decays to the largest of the last few batches (slots.c: shrink-back) */
  size_t *list_window;     /* slots.c: per list, the largest sample of each of the last window_len
                              recycled batches (list l's ring at l * window_len); scheduler thread */
  int window_len, window_pos;
  stk__host_budget host_budget; /* slot buffers' bytes and options.host_memory_budget (slots.c) */
  int *list_upload;             /* per list: index of its device copy when a GPU operator reads this CPU list
                              as a regular input (the GPU stage uploads it first: packed, or from
                              its pinned buffers), else -1 */
  size_t *upload_sizes;         /* GPU stage thread: one upload's sample sizes (grow-only) */
  int upload_sizes_cap;
  stk__tensor_list *upload_shared; /* per list, the one device copy of that upload every slot's
                                      copy borrows (exec/gpu_stage.c; the default);
                                      NULL (STOKER_SHARED_UPLOAD=0): per-slot storage */
  char **output_refs;
  int num_outputs;
  int *out_node, *out_index;
  int *out_was_dense; /* under lock, per output: its last finished batch was dense, so the next ones
                         are written in place (exec/cpu_stage.c); allocated with the slots */
  int dense_in_place; /* samples may be written straight into the dense output (STOKER_DENSE_IN_PLACE) */
  int pinned_outputs; /* CPU outputs' dense batch tensors come from the pinned pool: the pipeline has a
                         GPU, so copying them there is a DMA (STOKER_PINNED_OUTPUTS=0: malloc) */
  int packed_uploads; /* the GPU stage's uploads of CPU lists are packed into one pinned block a batch and
                         copied by one DMA (stk__upload_pack; STOKER_PACKED_UPLOAD=0: each sample's
                         pinned buffer copied on its own) */
  int pinned_shrink;  /* pinned sample buffers sized to their own samples: no list high-water mark, and
                         one far above what its own last batch held is given back at recycle
                         (exec/slots.c), not only one above the list's window (STOKER_PINNED_SHRINK=0: off) */
  int reader;         /* node index of the epoch reader: its epochs are the pipeline's */
  stk__side_reader side[STK__MAX_SIDE_READERS]; /* the further readers (graph.c finds them) */
  int num_side;
  int *out_reader;    /* per pipeline output: 0 when it comes from the epoch reader (or none), 1 + r when
                         from further reader r (graph.c: the first reader up its inputs) */
  int has_gpu_nodes;
  int has_prepare;   /* a mixed node has prepare_batch (gpu_stage.c runs it on a worker) */
  int gpu_numa_node; /* NUMA node for pinned host lists (-1: anywhere) */

  /* executor */
  pthread_mutex_t lock;
  pthread_cond_t cond_work;  /* workers: tasks queued / stopping */
  pthread_cond_t cond_sched; /* scheduler: slot free / reset / stopping */
  pthread_cond_t cond_done;  /* consumer: a batch became READY; reset: drained */
  pthread_cond_t cond_gpu;   /* GPU stage: a batch is waiting */
  int lock_inited;
  stk__worker *workers;
  int num_workers;
  pthread_t scheduler_thread, gpu_thread;
  int scheduler_started, gpu_started;
  int stopping;
  struct stk__task *tasks; /* ring (src/core/exec/pool.c) */
  size_t task_cap, task_head, task_count;
  struct stk_batch **slots;
  int num_slots;
  uint64_t next_plan_seq, next_deliver_seq;
  uint64_t epoch;
  int epoch_planned_all;   /* the reader said last_in_epoch */
  uint64_t epoch_end_seq;  /* seq after the epoch's last batch */
  uint64_t plan_epoch;     /* the reader's epoch: epoch, or epoch + 1 once it moved on */
  int ahead_planned_all;   /* plan_epoch == epoch + 1 and the reader said last_in_epoch */
  uint64_t ahead_end_seq;  /* seq after that epoch's last batch */
  int sched_busy;          /* the scheduler uses the reader outside the lock */
  int roll_failed;         /* moving the reader to the next epoch failed: reset retries */
  int planning_paused;     /* reset in progress */
  int in_flight;           /* planned, not delivered */
  stk_status sched_status; /* reader failure */
  char sched_error[1024];
  struct stk_batch **gpu_queue;
  int gpu_queue_count, gpu_queue_cap;
  void *cuda_stream;
  struct stk__pool_runner *pool_runner;

  /* stats */
  uint64_t alloc_count;                                                     /* atomic */
  uint64_t next_wait_ns, latency_ns, gpu_stage_ns, upload_ns, slot_wait_ns; /* atomic: stats */
  uint64_t alloc_at_warmup;
  uint64_t batches_discarded; /* under lock: slots a mid-epoch reset or a restore dropped (stats) */
  int warmup_done;
  uint64_t batches_delivered, images_delivered;
  uint64_t bytes_read;                /* atomic */
  uint64_t skipped_files;             /* under lock: distinct bad files of delivered batches */
  struct stk__quarantine *quarantine; /* under lock: the record of bad files (exec/quarantine.c) */
  struct stk__refill *refill;         /* skip_bad_files: the refill cursor (exec/refill.c); the scheduler's */
  double build_time, first_batch_time;
  stk_pipeline_stats decoder_stats; /* under lock: decoded_* of delivered batches */

  /* checkpoint/resume (src/core/checkpoint.c) */
  char *restore_text;              /* checkpoint to resume from at build (a copy), or NULL */
  uint64_t pos_epoch;              /* under lock: the consumer's position, the epoch and the index of */
  int64_t pos_batch;               /*   the next batch it gets (executor.c: deliver, reset) */
  int has_refill_resume;           /* skip_bad_files: refill_resume is for the cursor's next start */
  stk__refill_point refill_resume; /* (exec/refill.c: stk__exec_refill_resume applies it) */
};

/* engine.c: sets pipe->last_error (replacing it). Any stage may call it; it calls nothing. */
STK_INTERNAL void stk__pipe_error(stk_pipeline *pipe, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* engine.c: appends a warning to pipe->last_error ("; " between two), and prints it on stderr
 * when options.verbose. */
STK_INTERNAL void stk__pipe_warn(stk_pipeline *pipe, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#ifdef __cplusplus
}
#endif
#endif
