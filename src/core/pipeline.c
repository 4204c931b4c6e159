/* src/core/pipeline.c: the public stk_pipeline API: options, graph construction (add_op,
 * set_outputs), build (validation, topological order, argument-input binding, GPU fusion pass,
 * operator init, executor start), next/reset, reader metadata, stats and batch views.
 * Not on a hot path; the per-sample work is in executor.c. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/args.h"
#include "core/engine.h"
#include "core/gpu_backend.h"

void stk_pipeline_options_default(stk_pipeline_options *options) {
  if (!options) return;
  memset(options, 0, sizeof *options);
  options->batch_size = 256;
  options->num_threads = 4;
  options->device_id = -1;
  options->seed = 42;
  options->prefetch_queue_depth = 2;
  options->pin_threads = 1;
  options->affinity_mask = NULL;
  options->verbose = 0;
  options->stream_priority = STK_STREAM_PRIORITY_HIGH;
}

void stk__pipe_error(stk_pipeline *pipe, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(pipe->last_error, sizeof pipe->last_error, fmt, ap);
  va_end(ap);
}

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
  if (o.batch_size < 1 || o.num_threads < 1 || o.num_threads > 256 || o.prefetch_queue_depth < 1 || o.device_id < -1 ||
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
  free(pipe->order);
  for (int i = 0; i < pipe->num_outputs; i++) free(pipe->output_refs[i]);
  free(pipe->output_refs);
  free(pipe->out_node);
  free(pipe->out_index);
  free(pipe->skipped_names);
  free(pipe->affinity_mask);
  free(pipe);
}

const char *stk_pipeline_last_error(const stk_pipeline *pipe) { return pipe ? pipe->last_error : ""; }

static int find_node(const stk_pipeline *pipe, const char *name, size_t len) {
  for (int i = 0; i < pipe->num_nodes; i++)
    if (strlen(pipe->nodes[i].op.name) == len && strncmp(pipe->nodes[i].op.name, name, len) == 0) return i;
  return -1;
}

/* "name" -> (node, 0); "name[k]" -> (node, k). STK_EINVAL with a message when unknown. */
static stk_status resolve_ref(stk_pipeline *pipe, const char *ref, const char *who, int *node, int *output) {
  const char *br = strchr(ref, '[');
  size_t len = br ? (size_t)(br - ref) : strlen(ref);
  long k = 0;
  if (br) {
    char *end = NULL;
    k = strtol(br + 1, &end, 10);
    if (end == br + 1 || *end != ']' || end[1] || k < 0) {
      stk__pipe_error(pipe, "%s: malformed node output '%s' (expected \"name\" or \"name[k]\")", who, ref);
      return STK_EINVAL;
    }
  }
  int n = find_node(pipe, ref, len);
  if (n < 0) {
    stk__pipe_error(pipe, "%s: input '%s' names no operator in the pipeline", who, ref);
    return STK_EINVAL;
  }
  if (k >= pipe->nodes[n].num_outputs) {
    stk__pipe_error(pipe, "%s: input '%s': operator %s (%s) has %d output(s)", who, ref, pipe->nodes[n].op.name,
                    pipe->nodes[n].op_type, pipe->nodes[n].num_outputs);
    return STK_EINVAL;
  }
  *node = n;
  *output = (int)k;
  return STK_OK;
}

static const char *const device_ignored[] = {"device", NULL};

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
  if (!instance_name || !*instance_name) {
    for (int k = 0;; k++) {
      snprintf(generated, sizeof generated, "%s_%d", op_name, k);
      if (find_node(pipe, generated, strlen(generated)) < 0) break;
    }
    instance_name = generated;
  }
  if (strchr(instance_name, '[') || find_node(pipe, instance_name, strlen(instance_name)) >= 0) {
    stk__pipe_error(pipe, "operator %s: instance name '%s' is %s", op_name, instance_name,
                    strchr(instance_name, '[') ? "not allowed ('[' is reserved)" : "already used");
    return STK_EINVAL;
  }
  if ((int)num_inputs < schema->min_inputs || (int)num_inputs > schema->max_inputs) {
    stk__pipe_error(pipe, "operator %s (%s): takes %d..%d input(s), got %zu", instance_name, op_name,
                    schema->min_inputs, schema->max_inputs, num_inputs);
    return STK_EINVAL;
  }
  for (size_t i = 0; i < num_inputs; i++) {
    if (!inputs || !inputs[i] || !*inputs[i]) {
      stk__pipe_error(pipe, "operator %s (%s): input %zu is empty", instance_name, op_name, i);
      return STK_EINVAL;
    }
  }
  /* Device. */
  const stk__arg_value *dev_arg = stk__args_find(args, "device");
  const char *device = "cpu";
  if (dev_arg) {
    if (dev_arg->type != STK_ARG_STRING) {
      stk__pipe_error(pipe, "operator %s (%s): argument 'device' expects string (\"cpu\", \"mixed\" or \"gpu\"), got %s",
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
    stk__pipe_error(pipe, "operator %s (%s): no \"%s\" implementation (devices:%s%s%s)", instance_name, op_name,
                    device, schema->devices & STK_OPDEV_CPU ? " cpu" : "", schema->devices & STK_OPDEV_MIXED ? " mixed" : "",
                    schema->devices & STK_OPDEV_GPU ? " gpu" : "");
    return STK_ENOTSUP;
  }
  if (dev != STK__DEV_CPU && pipe->options.device_id < 0) {
    stk__pipe_error(pipe, "operator %s (%s): device=\"%s\" needs a GPU, but options.device_id is -1 (CPU only)",
                    instance_name, op_name, device);
    return STK_EINVAL;
  }
  const stk__op_impl *impl = dev == STK__DEV_CPU ? schema->cpu : stk__gpu_impl_find(schema->name, dev);
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
  stk__arg_value *values = calloc((size_t)schema->num_args + 1, sizeof *values);
  if (!values) return STK_ENOMEM;
  char err[1024] = "";
  stk_status st = stk__args_resolve(schema, instance_name, args, device_ignored, values, err, sizeof err);
  if (st != STK_OK) {
    stk__pipe_error(pipe, "%s", err);
    free(values);
    return st;
  }
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

/* Wires inputs and argument inputs of every node. */
static stk_status wire_graph(stk_pipeline *pipe) {
  for (int k = 0; k < pipe->num_nodes; k++) {
    stk__node *n = &pipe->nodes[k];
    char who[256];
    snprintf(who, sizeof who, "operator %s (%s)", n->op.name, n->op_type);
    int arg_inputs = 0;
    for (int a = 0; a < n->op.schema->num_args; a++) arg_inputs += n->op.args[a].input_ref != NULL;
    n->num_all_inputs = n->num_regular_inputs + arg_inputs;
    if (n->num_all_inputs > 32) {
      stk__pipe_error(pipe, "%s: too many inputs", who);
      return STK_ERANGE;
    }
    n->src_node = calloc((size_t)n->num_all_inputs + 1, sizeof(int));
    n->src_output = calloc((size_t)n->num_all_inputs + 1, sizeof(int));
    if (!n->src_node || !n->src_output) return STK_ENOMEM;
    for (int i = 0; i < n->num_regular_inputs; i++) {
      stk_status st = resolve_ref(pipe, n->input_refs[i], who, &n->src_node[i], &n->src_output[i]);
      if (st != STK_OK) return st;
    }
    int slot = n->num_regular_inputs;
    for (int a = 0; a < n->op.schema->num_args; a++) {
      stk__arg_value *v = &n->op.args[a];
      if (!v->input_ref) {
        v->input_slot = -1;
        continue;
      }
      char arg_who[300];
      snprintf(arg_who, sizeof arg_who, "%s, argument '%s'", who, n->op.schema->args[a].name);
      stk_status st = resolve_ref(pipe, v->input_ref, arg_who, &n->src_node[slot], &n->src_output[slot]);
      if (st != STK_OK) return st;
      v->input_slot = slot++;
    }
    for (int i = 0; i < n->num_all_inputs; i++) {
      stk__node *src = &pipe->nodes[n->src_node[i]];
      if (n->src_node[i] == k) {
        stk__pipe_error(pipe, "%s: takes its own output as input", who);
        return STK_EINVAL;
      }
      if (n->op.device == STK__DEV_CPU && src->op.device != STK__DEV_CPU) {
        stk__pipe_error(pipe, "%s runs on the cpu but its input '%s' comes from %s (%s) on the %s", who,
                        src->op.name, src->op.name, src->op_type, src->op.device == STK__DEV_GPU ? "gpu" : "mixed stage");
        return STK_EINVAL;
      }
    }
  }
  return STK_OK;
}

static stk_status topo_sort(stk_pipeline *pipe) {
  int n = pipe->num_nodes;
  pipe->order = calloc((size_t)n + 1, sizeof(int));
  int *placed = calloc((size_t)n + 1, sizeof(int));
  if (!pipe->order || !placed) {
    free(placed);
    return STK_ENOMEM;
  }
  /* Repeatedly place the first (in order added) node whose inputs are all placed; CPU nodes
   * before GPU nodes where dependencies allow (they run in different stages anyway). */
  for (int count = 0; count < n; count++) {
    int pick = -1;
    for (int pass = 0; pass < 2 && pick < 0; pass++) {
      for (int k = 0; k < n && pick < 0; k++) {
        stk__node *node = &pipe->nodes[k];
        if (placed[k] || (pass == 0 && node->op.device != STK__DEV_CPU)) continue;
        int ready = 1;
        for (int i = 0; i < node->num_all_inputs && ready; i++) ready = placed[node->src_node[i]];
        if (ready) pick = k;
      }
    }
    if (pick < 0) {
      char names[512] = "";
      for (int k = 0; k < n; k++)
        if (!placed[k]) {
          size_t len = strlen(names);
          snprintf(names + len, sizeof names - len, "%s%s", len ? ", " : "", pipe->nodes[k].op.name);
        }
      stk__pipe_error(pipe, "the graph has a cycle through: %s", names);
      free(placed);
      return STK_EINVAL;
    }
    placed[pick] = 1;
    pipe->order[count] = pick;
  }
  free(placed);
  return STK_OK;
}

/* GPU resize/random_resized_crop whose only consumer is a GPU crop_mirror_normalize (as its
 * input 0) becomes one node running the fused implementation. */
static stk_status fuse_gpu_nodes(stk_pipeline *pipe) {
  for (int a = 0; a < pipe->num_nodes; a++) {
    stk__node *first = &pipe->nodes[a];
    if (first->op.device != STK__DEV_GPU || first->skip) continue;
    if (strcmp(first->op_type, "resize") != 0 && strcmp(first->op_type, "random_resized_crop") != 0) continue;
    int consumer = -1, uses = 0;
    for (int k = 0; k < pipe->num_nodes; k++)
      for (int i = 0; i < pipe->nodes[k].num_all_inputs; i++)
        if (pipe->nodes[k].src_node[i] == a) {
          uses++;
          consumer = i == 0 ? k : -2;
        }
    for (int o = 0; o < pipe->num_outputs; o++) uses += pipe->out_node[o] == a;
    if (uses != 1 || consumer < 0) continue;
    stk__node *second = &pipe->nodes[consumer];
    if (second->op.device != STK__DEV_GPU || strcmp(second->op_type, "crop_mirror_normalize") != 0 ||
        second->src_output[0] != 0 || second->fused_op)
      continue;
    const stk__op_impl *fused = stk__gpu_fused_impl_find(first->op_type, second->op_type);
    if (!fused) continue;
    stk__op *op = calloc(1, sizeof *op);
    if (!op) return STK_ENOMEM;
    *op = second->op;
    op->impl = fused;
    op->state = NULL;
    op->num_inputs = first->num_regular_inputs;
    op->fused[0] = &first->op;
    op->fused[1] = &second->op;
    /* Inputs of the fused node: first's inputs (same slots as first's args), then second's
     * argument inputs. */
    int slot = first->num_all_inputs;
    for (int i = 0; i < second->op.schema->num_args; i++)
      if (second->op.args[i].input_ref) second->op.args[i].input_slot = slot++;
    second->fused_op = op;
    second->fused_first = a;
    first->skip = 1;
  }
  return STK_OK;
}

/* CPU -> GPU edges: a GPU operator (not a mixed one, which reads host inputs itself) whose regular
 * input is a CPU node's output reads a device copy of that list, appended after the other lists;
 * the GPU stage makes it (stk__executor: upload_lists) before the batch's first GPU operator.
 * Argument inputs (mirror, ...) stay on the host: the GPU operators read them there. A node fused
 * into another counts too: the fused node reads its inputs. */
static stk_status plan_uploads(stk_pipeline *pipe) {
  /* Each list gets at most one copy: 2 x num_lists entries cover the copies' own (-1) too. */
  const int room = 2 * pipe->num_lists + 1;
  free(pipe->list_upload);
  pipe->list_upload = malloc((size_t)room * sizeof(int));
  if (!pipe->list_upload) return STK_ENOMEM;
  for (int l = 0; l < room; l++) pipe->list_upload[l] = -1;
  for (int k = 0; k < pipe->num_nodes; k++) {
    const stk__node *n = &pipe->nodes[k];
    if (n->op.device != STK__DEV_GPU) continue;
    for (int i = 0; i < n->num_regular_inputs; i++) {
      const stk__node *src = &pipe->nodes[n->src_node[i]];
      int list = src->list_base + n->src_output[i];
      if (src->op.device == STK__DEV_CPU && pipe->list_upload[list] < 0) pipe->list_upload[list] = pipe->num_lists++;
    }
  }
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
  int readers = 0;
  for (int k = 0; k < pipe->num_nodes; k++)
    if (pipe->nodes[k].op.schema->is_reader) {
      readers++;
      pipe->reader = k;
    }
  if (readers != 1) {
    stk__pipe_error(pipe, "build: a pipeline needs exactly one reader, it has %d", readers);
    return STK_EINVAL;
  }
  stk_status st = wire_graph(pipe);
  if (st == STK_OK) st = topo_sort(pipe);
  if (st != STK_OK) return st;
  pipe->out_node = calloc((size_t)pipe->num_outputs, sizeof(int));
  pipe->out_index = calloc((size_t)pipe->num_outputs, sizeof(int));
  if (!pipe->out_node || !pipe->out_index) return STK_ENOMEM;
  for (int o = 0; o < pipe->num_outputs; o++) {
    st = resolve_ref(pipe, pipe->output_refs[o], "set_outputs", &pipe->out_node[o], &pipe->out_index[o]);
    if (st != STK_OK) return st;
  }
  st = fuse_gpu_nodes(pipe);
  if (st != STK_OK) return st;
  pipe->num_lists = 0;
  for (int k = 0; k < pipe->num_nodes; k++) {
    pipe->nodes[k].list_base = pipe->num_lists;
    pipe->num_lists += pipe->nodes[k].num_outputs;
    if (pipe->nodes[k].op.device != STK__DEV_CPU) pipe->has_gpu_nodes = 1;
  }
  /* Pre-stage lists of mixed ops after all node outputs (see op.h: run_sample of a mixed op). */
  for (int k = 0; k < pipe->num_nodes; k++) {
    stk__node *n = &pipe->nodes[k];
    int cpu_inputs = 1;
    for (int i = 0; i < n->num_all_inputs; i++) cpu_inputs &= pipe->nodes[n->src_node[i]].op.device == STK__DEV_CPU;
    n->stage_list = n->op.device == STK__DEV_MIXED && !n->skip && cpu_inputs && n->op.impl->run_sample ? pipe->num_lists++ : -1;
  }
  st = plan_uploads(pipe);
  if (st != STK_OK) return st;
  free(pipe->list_high_water);
  pipe->list_high_water = calloc((size_t)pipe->num_lists + 1, sizeof *pipe->list_high_water);
  if (!pipe->list_high_water) return STK_ENOMEM;
  stk__node *reader = &pipe->nodes[pipe->reader];
  /* The reader's skip_bad_files argument sets the option, which the engine and the operators (the
   * mixed decoder) read. */
  if (stk__arg(&reader->op, "skip_bad_files") && stk__arg_bool(&reader->op, "skip_bad_files"))
    pipe->options.skip_bad_files = 1;
  /* Operators get the pipeline's options (stable address) and are initialised in graph order. */
  for (int k = 0; k < pipe->num_nodes; k++) {
    stk__node *n = &pipe->nodes[pipe->order[k]];
    n->op.options = &pipe->options;
    stk__op *op = n->fused_op ? n->fused_op : &n->op;
    if (n->skip) continue;
    op->options = &pipe->options;
    if (!op->impl->init) continue;
    char err[1024] = "";
    st = op->impl->init(op, err, sizeof err);
    if (st != STK_OK) {
      stk__pipe_error(pipe, "operator %s (%s): %s", n->op.name, n->op_type, err[0] ? err : stk_strerror(st));
      pipe->failed_build = 1;
      return st;
    }
  }
  if (reader->op.impl->reset) {
    st = reader->op.impl->reset(&reader->op, 0);
    if (st != STK_OK) {
      stk__pipe_error(pipe, "operator %s (%s): reset to epoch 0 failed: %s", reader->op.name, reader->op_type,
                      stk_strerror(st));
      pipe->failed_build = 1;
      return st;
    }
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

stk_status stk_pipeline_reader_meta(const stk_pipeline *pipe, const char *reader_name, stk_reader_meta *out) {
  if (!pipe || !out) return STK_EINVAL;
  memset(out, 0, sizeof *out);
  int k = reader_name ? find_node(pipe, reader_name, strlen(reader_name)) : pipe->reader;
  if (!reader_name && k < 0)
    for (int i = 0; i < pipe->num_nodes && k < 0; i++)
      if (pipe->nodes[i].op.schema->is_reader) k = i;
  if (k < 0 || !pipe->nodes[k].op.schema->is_reader) return STK_ENOENT;
  if (!pipe->built || !pipe->nodes[k].op.impl->reader_meta) return STK_ESTATE;
  /* The consumer's epoch: the reader itself may already plan the next one. */
  pipe->nodes[k].op.impl->reader_meta(&pipe->nodes[k].op, pipe->epoch, out);
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
  pthread_mutex_lock(&pipe->lock);
  out->batches = pipe->batches_delivered;
  out->images = pipe->images_delivered;
  /* files the engine replaced plus those the mixed decoder replaced inside its batch */
  out->skipped_files = pipe->skipped_files + pipe->decoder_stats.skipped_files;
  out->time_to_first_batch_s = pipe->batches_delivered ? pipe->first_batch_time - pipe->build_time : 0.0;
  out->decoded_hw = pipe->decoder_stats.decoded_hw;
  out->decoded_cuda = pipe->decoder_stats.decoded_cuda;
  out->decoded_hybrid = pipe->decoder_stats.decoded_hybrid;
  out->decoded_cpu = pipe->decoder_stats.decoded_cpu;
  out->allocations = __atomic_load_n(&pipe->alloc_count, __ATOMIC_RELAXED);
  out->next_wait_s = (double)__atomic_load_n(&pipe->next_wait_ns, __ATOMIC_RELAXED) * 1e-9;
  out->batch_latency_s = (double)__atomic_load_n(&pipe->latency_ns, __ATOMIC_RELAXED) * 1e-9;
  out->gpu_stage_s = (double)__atomic_load_n(&pipe->gpu_stage_ns, __ATOMIC_RELAXED) * 1e-9;
  out->upload_s = (double)__atomic_load_n(&pipe->upload_ns, __ATOMIC_RELAXED) * 1e-9;
  out->slot_wait_s = (double)__atomic_load_n(&pipe->slot_wait_ns, __ATOMIC_RELAXED) * 1e-9;
  out->allocations_after_warmup = pipe->warmup_done ? out->allocations - pipe->alloc_at_warmup : 0;
  pthread_mutex_unlock(&pipe->lock);
  out->bytes_read = __atomic_load_n(&pipe->bytes_read, __ATOMIC_RELAXED);
  out->num_threads = pipe->num_workers;
  for (int i = 0; i < pipe->num_workers && i < 256; i++) out->thread_cpus[i] = pipe->workers[i].cpu;
  out->device_bytes_held = pipe->has_gpu_nodes ? stk__gpu_bytes_held() : 0;
  return STK_OK;
}

const char *stk_pipeline_node_name(const stk_pipeline *pipe, int i) {
  if (!pipe || i < 0 || i >= pipe->num_nodes) return NULL;
  return pipe->nodes[i].op.name;
}

stk_status stk_pipeline_skipped_files(const stk_pipeline *pipe_c, char **out) {
  if (!pipe_c || !out) return STK_EINVAL;
  stk_pipeline *pipe = (stk_pipeline *)pipe_c;
  if (pipe->built) pthread_mutex_lock(&pipe->lock);
  *out = dup_str(pipe->skipped_names ? pipe->skipped_names : "");
  if (pipe->built) pthread_mutex_unlock(&pipe->lock);
  return *out ? STK_OK : STK_ENOMEM;
}

/* ---- Batch views ---------------------------------------------------------------------------- */
int stk_batch_num_outputs(const stk_batch *batch) { return batch ? batch->num_outputs_copy : 0; }
int stk_batch_size(const stk_batch *batch) { return batch ? batch->plan.batch_size : 0; }
int64_t stk_batch_epoch(const stk_batch *batch) { return batch ? (int64_t)batch->plan.epoch : -1; }
int stk_batch_valid_samples(const stk_batch *batch) { return batch ? batch->plan.valid_samples : 0; }
void *stk_batch_cuda_event(const stk_batch *batch) { return batch ? batch->cuda_event : NULL; }

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
