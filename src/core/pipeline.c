/* src/core/pipeline.c: the public stk_pipeline API: make and destroy a pipeline, add operators
 * (add_op: schema, device and arguments checked), set_outputs, build (graph.c lowers the graph,
 * then operator init, the reader's epoch 0 and the executor's start), next/reset (the executor,
 * src/core/exec/), reader metadata, stats and batch views. Options' defaults and the last-error
 * string are in engine.c. Not on a hot path; the per-sample work is in src/core/exec/. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/tuning.h"
#include "core/args.h"
#include "core/checkpoint.h"
#include "core/exec/executor.h"
#include "device/device.h"
#include "core/graph.h"

static char *dup_str(const char *s) {
  size_t n = strlen(s) + 1;
  char *d = malloc(n);
  if (d) memcpy(d, s, n);
  return d;
}

stk_status stk_pipeline_new(const stk_pipeline_options *options, stk_pipeline **out) {
  if (!out) return STK_EINVAL;
  *out = NULL;
  stk_pipeline_options o;
  if (options) o = *options;
  else stk_pipeline_options_default(&o);
  if (o.batch_size < 1 || o.num_threads < 1 || o.num_threads > 256 || o.prefetch_queue_depth < 0 || o.device_id < -1 ||
      o.stream_priority < STK_STREAM_PRIORITY_HIGH || o.stream_priority > STK_STREAM_PRIORITY_NORMAL)
    return STK_EINVAL;
  stk_pipeline *pipe = calloc(1, sizeof *pipe);
  if (!pipe) return STK_ENOMEM;
  pipe->options = o;
  pipe->reader = -1;
  if (o.affinity_mask) {
    pipe->affinity_mask = dup_str(o.affinity_mask);
    if (!pipe->affinity_mask) {
      free(pipe);
      return STK_ENOMEM;
    }
  }
  pipe->options.affinity_mask = pipe->affinity_mask;
  pipe->options.bad_files_log = NULL;
  if (o.bad_files_log && !(pipe->options.bad_files_log = pipe->bad_files_log = dup_str(o.bad_files_log))) {
    free(pipe->affinity_mask);
    free(pipe);
    return STK_ENOMEM;
  }
  if (o.checkpoint) { /* checked at build (stk__checkpoint_apply) */
    pipe->restore_text = dup_str(o.checkpoint);
    if (!pipe->restore_text) {
      free(pipe->bad_files_log);
      free(pipe->affinity_mask);
      free(pipe);
      return STK_ENOMEM;
    }
  }
  pipe->options.checkpoint = NULL; /* not kept: the caller's string */
  *out = pipe;
  return STK_OK;
}

static void free_node(stk__node *n) {
  if (n->fused_op) {
    if (n->fused_op->impl && n->fused_op->impl->destroy && n->fused_op->state) n->fused_op->impl->destroy(n->fused_op);
    free(n->fused_op);
  }
  for (int i = 0; i < n->num_regular_inputs; i++) free(n->input_refs[i]);
  free(n->input_refs);
  free(n->src_node);
  free(n->src_output);
  stk__arg_values_free(n->op.args, n->op.schema->num_args);
  free(n->op.name);
}

void stk_pipeline_destroy(stk_pipeline *pipe) {
  if (!pipe) return;
  stk__executor_stop(pipe);
  for (int i = 0; i < pipe->num_nodes; i++) {
    stk__node *n = &pipe->nodes[i];
    if (n->op.state && n->op.impl && n->op.impl->destroy) n->op.impl->destroy(&n->op);
    free_node(n);
  }
  free(pipe->nodes);
  free(pipe->list_high_water);
  free(pipe->list_upload);
  free(pipe->upload_sizes);
  free(pipe->order);
  for (int i = 0; i < pipe->num_outputs; i++) free(pipe->output_refs[i]);
  free(pipe->output_refs);
  free(pipe->out_node);
  free(pipe->out_reader);
  free(pipe->out_index);
  stk__executor_free_record(pipe);
  free(pipe->bad_files_log);
  free(pipe->affinity_mask);
  free(pipe->restore_text);
  free(pipe);
}

const char *stk_pipeline_last_error(const stk_pipeline *pipe) { return pipe ? pipe->last_error : ""; }

static const char *const device_ignored[] = {"device", NULL};

/* add_op's checks of the instance name (generated when empty: "<op>_<k>", written to
 * `generated`) and of the inputs. */
static stk_status check_name_and_inputs(stk_pipeline *pipe, const stk__op_schema *schema, const char *op_name,
                                        const char **instance_name, char *generated, size_t generated_size,
                                        const char *const *inputs, size_t num_inputs) {
  if (!*instance_name || !**instance_name) {
    for (int k = 0;; k++) {
      snprintf(generated, generated_size, "%s_%d", op_name, k);
      if (stk__graph_find_node(pipe, generated, strlen(generated)) < 0) break;
    }
    *instance_name = generated;
  }
  const char *name = *instance_name;
  if (strchr(name, '[') || stk__graph_find_node(pipe, name, strlen(name)) >= 0) {
    stk__pipe_error(pipe, "operator %s: instance name '%s' is %s", op_name, name,
                    strchr(name, '[') ? "not allowed ('[' is reserved)" : "already used");
    return STK_EINVAL;
  }
  if ((int)num_inputs < schema->min_inputs || (int)num_inputs > schema->max_inputs) {
    stk__pipe_error(pipe, "operator %s (%s): takes %d..%d input(s), got %zu", name, op_name, schema->min_inputs,
                    schema->max_inputs, num_inputs);
    return STK_EINVAL;
  }
  for (size_t i = 0; i < num_inputs; i++) {
    if (!inputs || !inputs[i] || !*inputs[i]) {
      stk__pipe_error(pipe, "operator %s (%s): input %zu is empty", name, op_name, i);
      return STK_EINVAL;
    }
  }
  return STK_OK;
}

/* add_op's `device` argument ("cpu" unless given) -> the device and its implementation, checked
 * against the schema, the build and the pipeline's options. */
static stk_status choose_impl(stk_pipeline *pipe, const stk__op_schema *schema, const char *op_name,
                              const char *instance_name, const stk_args *args, stk__op_device *dev_out,
                              const stk__op_impl **impl_out) {
  const stk__arg_value *dev_arg = stk__args_find(args, "device");
  const char *device = "cpu";
  if (dev_arg) {
    if (dev_arg->type != STK_ARG_STRING) {
      stk__pipe_error(pipe,
                      "operator %s (%s): argument 'device' expects string (\"cpu\", \"mixed\" or \"gpu\"), got %s",
                      instance_name, op_name, stk_arg_type_name(dev_arg->type));
      return STK_EINVAL;
    }
    device = dev_arg->s;
  }
  stk__op_device dev;
  if (stk__device_parse(device, &dev) != STK_OK) {
    stk__pipe_error(pipe, "operator %s (%s): argument 'device' expects \"cpu\", \"mixed\" or \"gpu\", got \"%s\"",
                    instance_name, op_name, device);
    return STK_EINVAL;
  }
  if (!(schema->devices & stk__device_bit(dev))) {
    stk__pipe_error(pipe, "operator %s (%s): no \"%s\" implementation (devices:%s%s%s)", instance_name, op_name, device,
                    schema->devices & STK_OPDEV_CPU ? " cpu" : "", schema->devices & STK_OPDEV_MIXED ? " mixed" : "",
                    schema->devices & STK_OPDEV_GPU ? " gpu" : "");
    return STK_ENOTSUP;
  }
  if (dev != STK__DEV_CPU && pipe->options.device_id < 0) {
    stk__pipe_error(pipe, "operator %s (%s): device=\"%s\" needs a GPU, but options.device_id is -1 (CPU only)",
                    instance_name, op_name, device);
    return STK_EINVAL;
  }
  const stk__op_impl *impl = stk__op_impl_find(schema, dev);
  if (!impl) {
    stk__pipe_error(pipe, "operator %s (%s): the \"%s\" implementation is not in this build%s", instance_name, op_name,
                    device, dev == STK__DEV_CPU ? "" : " (built without CUDA?)");
    return STK_ENOTSUP;
  }
  /* A reader plans batches; one on the GPU (readers.video's NVDEC) produces them in run_batch. */
  if (schema->is_reader && (!impl->plan_batch || (dev != STK__DEV_CPU && !impl->run_batch))) {
    stk__pipe_error(pipe, "operator %s (%s): a reader must plan batches", instance_name, op_name);
    return STK_EINVAL;
  }
  if (dev == STK__DEV_CPU ? !impl->run_sample && !schema->is_reader : !impl->run_batch) {
    stk__pipe_error(pipe, "operator %s (%s): the \"%s\" implementation has no run function", instance_name, op_name,
                    device);
    return STK_EINTERNAL;
  }
  *dev_out = dev;
  *impl_out = impl;
  return STK_OK;
}

/* Appends the node (taking `values`, freed here on failure). */
static stk_status append_node(stk_pipeline *pipe, const stk__op_schema *schema, stk__op_device dev,
                              const stk__op_impl *impl, stk__arg_value *values, const char *instance_name,
                              const char *const *inputs, size_t num_inputs) {
  if (pipe->num_nodes == pipe->cap_nodes) {
    int cap = pipe->cap_nodes ? pipe->cap_nodes * 2 : 8;
    stk__node *bigger = realloc(pipe->nodes, (size_t)cap * sizeof *bigger);
    if (!bigger) {
      stk__arg_values_free(values, schema->num_args);
      return STK_ENOMEM;
    }
    pipe->nodes = bigger;
    pipe->cap_nodes = cap;
  }
  stk__node *n = &pipe->nodes[pipe->num_nodes];
  memset(n, 0, sizeof *n);
  n->op.schema = schema;
  n->op.impl = impl;
  n->op.device = dev;
  n->op.id = pipe->num_nodes;
  n->op.args = values;
  n->op.seed = pipe->options.seed;
  n->op.num_inputs = (int)num_inputs;
  n->op_type = schema->name;
  n->num_outputs = schema->num_outputs;
  n->num_regular_inputs = (int)num_inputs;
  n->fused_first = -1;
  n->op.name = dup_str(instance_name);
  n->input_refs = calloc(num_inputs + 1, sizeof *n->input_refs);
  int ok = n->op.name && n->input_refs;
  for (size_t i = 0; ok && i < num_inputs; i++) ok = (n->input_refs[i] = dup_str(inputs[i])) != NULL;
  if (!ok) {
    n->num_regular_inputs = (int)num_inputs;
    free_node(n);
    return STK_ENOMEM;
  }
  pipe->num_nodes++;
  return STK_OK;
}

stk_status stk_pipeline_add_op(stk_pipeline *pipe, const char *op_name, const char *instance_name,
                               const char *const *inputs, size_t num_inputs, const stk_args *args) {
  if (!pipe) return STK_EINVAL;
  pipe->last_error[0] = '\0';
  if (pipe->built) {
    stk__pipe_error(pipe, "add_op: the pipeline is already built");
    return STK_ESTATE;
  }
  const stk__op_schema *schema = stk__op_schema_find(op_name);
  if (!schema) {
    stk__pipe_error(pipe, "unknown operator '%s' (see `stoker ops`)", op_name ? op_name : "(null)");
    return STK_EINVAL;
  }
  if (pipe->num_nodes >= STK__MAX_NODES) {
    stk__pipe_error(pipe, "operator %s: a pipeline holds at most %d operators", op_name, STK__MAX_NODES);
    return STK_ERANGE;
  }
  char generated[128];
  stk_status st =
      check_name_and_inputs(pipe, schema, op_name, &instance_name, generated, sizeof generated, inputs, num_inputs);
  stk__op_device dev = STK__DEV_CPU;
  const stk__op_impl *impl = NULL;
  if (st == STK_OK) st = choose_impl(pipe, schema, op_name, instance_name, args, &dev, &impl);
  if (st != STK_OK) return st;
  stk__arg_value *values = calloc((size_t)schema->num_args + 1, sizeof *values);
  if (!values) return STK_ENOMEM;
  char err[1024] = "";
  st = stk__args_resolve(schema, instance_name, args, device_ignored, values, err, sizeof err);
  if (st != STK_OK) {
    stk__pipe_error(pipe, "%s", err);
    free(values);
    return st;
  }
  return append_node(pipe, schema, dev, impl, values, instance_name, inputs, num_inputs);
}

stk_status stk_pipeline_set_outputs(stk_pipeline *pipe, const char *const *outputs, size_t count) {
  if (!pipe) return STK_EINVAL;
  pipe->last_error[0] = '\0';
  if (pipe->built) {
    stk__pipe_error(pipe, "set_outputs: the pipeline is already built");
    return STK_ESTATE;
  }
  if (count == 0 || !outputs) {
    stk__pipe_error(pipe, "set_outputs: at least one output is needed");
    return STK_EINVAL;
  }
  char **refs = calloc(count, sizeof *refs);
  if (!refs) return STK_ENOMEM;
  for (size_t i = 0; i < count; i++) {
    if (!outputs[i] || !(refs[i] = dup_str(outputs[i]))) {
      for (size_t j = 0; j < i; j++) free(refs[j]);
      free(refs);
      if (!outputs[i]) stk__pipe_error(pipe, "set_outputs: output %zu is NULL", i);
      return outputs[i] ? STK_ENOMEM : STK_EINVAL;
    }
  }
  for (int i = 0; i < pipe->num_outputs; i++) free(pipe->output_refs[i]);
  free(pipe->output_refs);
  pipe->output_refs = refs;
  pipe->num_outputs = (int)count;
  return STK_OK;
}

stk_status stk_pipeline_build(stk_pipeline *pipe) {
  if (!pipe) return STK_EINVAL;
  pipe->last_error[0] = '\0';
  if (pipe->built || pipe->failed_build) {
    stk__pipe_error(pipe, "build: the pipeline was already %s", pipe->built ? "built" : "built and failed");
    return STK_ESTATE;
  }
  if (pipe->num_nodes == 0) {
    stk__pipe_error(pipe, "build: the pipeline has no operators");
    return STK_EINVAL;
  }
  if (pipe->num_outputs == 0) {
    stk__pipe_error(pipe, "build: no outputs (call set_outputs)");
    return STK_EINVAL;
  }
  char knob_err[512] = "";
  stk_status st = stk__tuning_check(knob_err, sizeof knob_err); /* a bad knob fails here, named */
  if (st != STK_OK) {
    stk__pipe_error(pipe, "build: %s", knob_err);
    return st;
  }
  st = stk__graph_lower(pipe);
  if (st != STK_OK) return st;
  /* The default depth: at 2, the JPEG engines' blocking batched call has ~1.2 submissions in flight
   * and the engines wait between batches; a third batch in flight keeps them fed (docs/gpu.md,
   * "Batches in flight and the JPEG engines"). Pipelines without a prepare stage keep DALI's 2. */
  if (pipe->options.prefetch_queue_depth == 0) pipe->options.prefetch_queue_depth = pipe->has_prepare ? 3 : 2;
  stk__node *reader = &pipe->nodes[pipe->reader];
  /* The reader's skip_bad_files argument sets the option, which the engine and the operators (the
   * mixed decoder) read. */
  if (stk__arg(&reader->op, "skip_bad_files") && stk__arg_bool(&reader->op, "skip_bad_files"))
    pipe->options.skip_bad_files = 1;
  if (pipe->options.skip_bad_files && pipe->num_side) {
    stk__pipe_error(pipe,
                    "build: skip_bad_files with several readers (%s and %s): a bad sample is replaced by the next "
                    "one of the epoch reader only; use it with one reader",
                    reader->op.name, pipe->nodes[pipe->side[0].node].op.name);
    return STK_EINVAL;
  }
  stk__exec_host_budget_init(pipe); /* before init: readers that read ahead are bounded by it */
  /* Operators get the pipeline's options (stable address) and are initialised in graph order. */
  for (int k = 0; k < pipe->num_nodes; k++) {
    stk__node *n = &pipe->nodes[pipe->order[k]];
    n->op.options = &pipe->options;
    stk__op *op = n->fused_op ? n->fused_op : &n->op;
    if (n->skip) continue;
    op->options = &pipe->options;
    op->host_budget = &pipe->host_budget;
    if (!op->impl->init) continue;
    char err[1024] = "";
    st = op->impl->init(op, err, sizeof err);
    if (st != STK_OK) {
      char line[32] = "";
      if (n->text_line > 0) snprintf(line, sizeof line, "line %d: ", n->text_line);
      stk__pipe_error(pipe, "%soperator %s (%s): %s", line, n->op.name, n->op_type, err[0] ? err : stk_strerror(st));
      pipe->failed_build = 1;
      return st;
    }
    if (err[0]) stk__pipe_warn(pipe, "operator %s (%s): %s", n->op.name, n->op_type, err); /* init's warning */
  }
  int restored = 0;
  st = stk__checkpoint_apply(pipe, &restored); /* a restore positions the reader instead of reset */
  if (st != STK_OK) {
    pipe->failed_build = 1;
    return st;
  }
  if (reader->op.impl->reset && !restored) {
    st = reader->op.impl->reset(&reader->op, 0);
    if (st != STK_OK) {
      stk__pipe_error(pipe, "operator %s (%s): reset to epoch 0 failed: %s", reader->op.name, reader->op_type,
                      stk_strerror(st));
      pipe->failed_build = 1;
      return st;
    }
  }
  char side_err[768] = ""; /* further readers: epoch 0, or the checkpoint's positions */
  st = stk__executor_side_rewind(pipe, side_err, sizeof side_err);
  if (st != STK_OK) {
    stk__pipe_error(pipe, "build: %s", side_err);
    pipe->failed_build = 1;
    return st;
  }
  st = stk__executor_start(pipe);
  if (st != STK_OK) {
    if (!pipe->last_error[0]) stk__pipe_error(pipe, "build: starting the executor failed: %s", stk_strerror(st));
    pipe->failed_build = 1;
    stk__executor_stop(pipe);
    return st;
  }
  pipe->built = 1;
  return STK_OK;
}

stk_status stk_pipeline_next(stk_pipeline *pipe, stk_batch **out) {
  if (!pipe || !out) return STK_EINVAL;
  *out = NULL;
  if (!pipe->built) {
    stk__pipe_error(pipe, "next: the pipeline is not built");
    return STK_ESTATE;
  }
  pipe->last_error[0] = '\0';
  stk_status st = stk__executor_next(pipe, out);
  if (st == STK_EOF_EPOCH)
    stk__pipe_error(pipe, "end of epoch %llu: call stk_pipeline_reset()", (unsigned long long)pipe->epoch);
  return st;
}

stk_status stk_pipeline_reset(stk_pipeline *pipe) {
  if (!pipe) return STK_EINVAL;
  if (!pipe->built) {
    stk__pipe_error(pipe, "reset: the pipeline is not built");
    return STK_ESTATE;
  }
  pipe->last_error[0] = '\0';
  return stk__executor_reset(pipe);
}

/* reader_meta's refusal of `name`: names what it is and the pipeline's readers, so a typo in an
 * iterator's reader_name reads as one (last_error; STK_ENOENT). */
static stk_status no_such_reader(stk_pipeline *pipe, const char *name, int node) {
  char readers[512] = "";
  size_t used = 0;
  for (int i = 0; i < pipe->num_nodes && used < sizeof readers; i++)
    if (pipe->nodes[i].op.schema->is_reader) {
      int n = snprintf(readers + used, sizeof readers - used, "%s\"%s\"", used ? ", " : "", pipe->nodes[i].op.name);
      used = n < 0 ? sizeof readers : used + (size_t)n;
    }
  const char *which = readers[0] ? "its readers are " : "it has no reader";
  if (!name) stk__pipe_error(pipe, "reader_meta: the pipeline has no reader");
  else if (node >= 0)
    stk__pipe_error(pipe, "reader_meta: operator \"%s\" (%s) is not a reader; %s%s", name, pipe->nodes[node].op_type,
                    which, readers);
  else stk__pipe_error(pipe, "reader_meta: the pipeline has no operator named \"%s\"; %s%s", name, which, readers);
  return STK_ENOENT;
}

stk_status stk_pipeline_reader_meta(const stk_pipeline *pipe, const char *reader_name, stk_reader_meta *out) {
  if (!pipe || !out) return STK_EINVAL;
  memset(out, 0, sizeof *out);
  stk_pipeline *locked = (stk_pipeline *)pipe; /* the lock is taken and last_error written; nothing else changes */
  int k = reader_name ? stk__graph_find_node(pipe, reader_name, strlen(reader_name)) : pipe->reader;
  if (!reader_name && k < 0)
    for (int i = 0; i < pipe->num_nodes && k < 0; i++)
      if (pipe->nodes[i].op.schema->is_reader) k = i;
  if (k < 0 || !pipe->nodes[k].op.schema->is_reader) return no_such_reader(locked, reader_name, k);
  if (!pipe->built || !pipe->nodes[k].op.impl->reader_meta) {
    if (pipe->built)
      stk__pipe_error(locked, "reader_meta: reader \"%s\" (%s) has no metadata", pipe->nodes[k].op.name,
                      pipe->nodes[k].op_type);
    else stk__pipe_error(locked, "reader_meta: the pipeline is not built");
    return STK_ESTATE;
  }
  pthread_mutex_lock(&locked->lock);
  uint64_t epoch = pipe->epoch; /* the consumer's epoch: the reader itself may already plan the next */
  int64_t next_batch = pipe->pos_epoch == epoch ? pipe->pos_batch : 0;
  const int side = pipe->nodes[k].side; /* a further reader: its own epoch (exec/side_readers.c) */
  if (side >= 0) epoch = pipe->side[side].pos_epoch, next_batch = pipe->side[side].pos_batch;
  pthread_mutex_unlock(&locked->lock);
  out->epoch_batches = out->epoch_full_batches = -1; /* unknown unless the reader says */
  pipe->nodes[k].op.impl->reader_meta(&pipe->nodes[k].op, epoch, out);
  out->epoch = epoch;
  out->epoch_next_batch = next_batch;
  out->is_epoch_reader = side < 0;
  return STK_OK;
}

stk_status stk_pipeline_stats_get(const stk_pipeline *pipe_c, stk_pipeline_stats *out) {
  if (!pipe_c || !out) return STK_EINVAL;
  stk_pipeline *pipe = (stk_pipeline *)pipe_c; /* the lock is taken, nothing observable changes */
  memset(out, 0, sizeof *out);
  out->num_nodes = pipe->num_nodes;
  for (int k = 0; k < pipe->num_nodes && k < 32; k++)
    out->op_seconds[k] = (double)__atomic_load_n(&pipe->nodes[k].busy_ns, __ATOMIC_RELAXED) * 1e-9;
  if (!pipe->built) return STK_OK;
  stk__executor_stats(pipe, out);
  return STK_OK;
}

const char *stk_pipeline_node_name(const stk_pipeline *pipe, int i) {
  if (!pipe || i < 0 || i >= pipe->num_nodes) return NULL;
  return pipe->nodes[i].op.name;
}

stk_status stk_pipeline_skipped_files(const stk_pipeline *pipe_c, char **out) {
  if (!pipe_c || !out) return STK_EINVAL;
  stk_pipeline *pipe = (stk_pipeline *)pipe_c; /* the lock is taken, nothing observable changes */
  *out = stk__executor_skipped_names(pipe, 0);
  return *out ? STK_OK : STK_ENOMEM;
}

stk_status stk_pipeline_bad_files_json(const stk_pipeline *pipe_c, char **out) {
  if (!pipe_c || !out) return STK_EINVAL;
  stk_pipeline *pipe = (stk_pipeline *)pipe_c; /* the lock is taken, nothing observable changes */
  *out = stk__executor_skipped_names(pipe, 1);
  return *out ? STK_OK : STK_ENOMEM;
}

/* ---- Batch views ---------------------------------------------------------------------------- */
int stk_batch_num_outputs(const stk_batch *batch) { return batch ? batch->num_outputs_copy : 0; }
int stk_batch_size(const stk_batch *batch) { return batch ? batch->plan.batch_size : 0; }
int64_t stk_batch_epoch(const stk_batch *batch) { return batch ? (int64_t)batch->plan.epoch : -1; }
int stk_batch_valid_samples(const stk_batch *batch) { return batch ? batch->plan.valid_samples : 0; }
void *stk_batch_cuda_event(const stk_batch *batch) { return batch ? batch->cuda_event : NULL; }

stk_status stk_batch_reader_valid_samples(const stk_batch *batch, const char *reader_name, int *valid,
                                          int *last_in_epoch) {
  if (!batch || !valid || !last_in_epoch) return STK_EINVAL;
  stk_batch *owned = (stk_batch *)batch; /* owner_lock guards batch->pipe against destruction */
  pthread_mutex_lock(&owned->owner_lock);
  const stk_pipeline *pipe = batch->pipe;
  stk_status st = pipe ? STK_OK : STK_ESTATE;
  const stk__batch_plan *plan = &batch->plan;
  if (pipe && reader_name && strcmp(reader_name, pipe->nodes[pipe->reader].op.name)) {
    int r = stk__executor_side_index(pipe, reader_name);
    if (r < 0) st = STK_ENOENT;
    else plan = &batch->side_plans[r];
  }
  pthread_mutex_unlock(&owned->owner_lock);
  *valid = st == STK_OK ? plan->valid_samples : 0;
  *last_in_epoch = st == STK_OK && plan->last_in_epoch;
  return st;
}

const char *stk_batch_source_info(const stk_batch *batch, int output, int sample) {
  if (!batch || output < 0 || output >= batch->num_outputs_copy || sample < 0 || sample >= batch->plan.batch_size ||
      !batch->sample_names)
    return NULL;
  int row = batch->out_reader[output];
  return batch->sample_names + ((size_t)row * (size_t)batch->plan_capacity + (size_t)sample) * STK__SAMPLE_NAME;
}

stk_status stk_batch_copy_to_host(const stk_batch *batch, const stk_tensor_view *view, void *dst, size_t dst_size) {
  if (!batch || !view || !dst || dst_size < view->nbytes) return STK_EINVAL;
  if (view->device_type == STK_DEVICE_CPU) {
    memcpy(dst, view->data, view->nbytes);
    return STK_OK;
  }
  stk_status st = stk__gpu_set_device(batch->device_id);
  if (st == STK_OK && batch->cuda_event) st = stk__gpu_event_synchronize(batch->cuda_event);
  if (st == STK_OK) st = stk__gpu_memcpy_d2h(dst, view->data, view->nbytes, NULL);
  return st;
}

stk_status stk_batch_synchronize(const stk_batch *batch) {
  if (!batch) return STK_EINVAL;
  if (!batch->cuda_event) return STK_OK;
  stk_status st = stk__gpu_set_device(batch->device_id);
  return st == STK_OK ? stk__gpu_event_synchronize(batch->cuda_event) : st;
}

static void fill_sample_view(const stk__tensor *t, stk_device_type device, int device_id, stk_tensor_view *out) {
  memset(out, 0, sizeof *out);
  out->data = t->data;
  out->dtype = t->dtype;
  out->ndim = t->ndim;
  for (int d = 0; d < t->ndim; d++) out->shape[d] = t->shape[d];
  snprintf(out->layout, sizeof out->layout, "%s", t->layout);
  out->device_type = device;
  out->device_id = device == STK_DEVICE_GPU ? device_id : -1;
  out->nbytes = t->nbytes;
  out->dense = 0;
}

stk_status stk_batch_sample(const stk_batch *batch, int output, int sample, stk_tensor_view *out) {
  if (!batch || !out || output < 0 || output >= batch->num_outputs_copy || sample < 0 ||
      sample >= batch->plan.batch_size)
    return STK_EINVAL;
  const stk__tensor_list *l = stk__batch_output(batch, output);
  if (!l->samples) return STK_ESTATE;
  fill_sample_view(&l->samples[sample], l->device, batch->device_id, out);
  return STK_OK;
}

stk_status stk_batch_tensor(const stk_batch *batch, int output, stk_tensor_view *out) {
  if (!batch || !out || output < 0 || output >= batch->num_outputs_copy) return STK_EINVAL;
  const stk__tensor_list *l = stk__batch_output(batch, output);
  if (!l->dense || !l->samples || l->samples[0].ndim + 1 > STK_MAX_DIMS) return STK_ESTATE;
  const stk__tensor *s0 = &l->samples[0];
  fill_sample_view(s0, l->device, batch->device_id, out);
  out->data = l->base ? l->base : s0->data;
  out->ndim = s0->ndim + 1;
  out->shape[0] = batch->plan.batch_size;
  for (int d = 0; d < s0->ndim; d++) out->shape[d + 1] = s0->shape[d];
  snprintf(out->layout, sizeof out->layout, "N%.6s", s0->layout);
  out->nbytes = s0->nbytes * (size_t)batch->plan.batch_size;
  out->dense = 1;
  return STK_OK;
}
