/* src/core/graph.c: graph lowering at build (graph.h): the reader, input wiring (regular and
 * argument inputs), the topological order, output resolution, the GPU fusion pass, the list
 * layout of a batch (node outputs, mixed ops' pre-stages, device copies of CPU lists) and the
 * upload plan. The executor (src/core/exec/) runs what this leaves in the pipeline. Build-time
 * only; messages go to pipe->last_error and name the operator, its type and the input. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/graph.h"

int stk__graph_find_node(const stk_pipeline *pipe, const char *name, size_t len) {
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
  int n = stk__graph_find_node(pipe, ref, len);
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

/* The readers: the epoch reader (pipe->reader) is the external source when there is one (its
 * data ending ends the epoch, as in DALI), else the first reader added; every other reader is a
 * further reader (pipe->side, exec/side_readers.c), which runs on the CPU. */
static stk_status find_readers(stk_pipeline *pipe) {
  int readers = 0, fed = -1;
  pipe->reader = -1;
  pipe->num_side = 0;
  for (int k = 0; k < pipe->num_nodes; k++) {
    pipe->nodes[k].side = -1;
    if (!pipe->nodes[k].op.schema->is_reader) continue;
    readers++;
    if (pipe->reader < 0) pipe->reader = k;
    if (pipe->nodes[k].op.impl->feed && fed < 0) fed = k;
  }
  if (readers == 0) {
    stk__pipe_error(pipe, "build: a pipeline needs a reader (readers.*, external_source), it has none");
    return STK_EINVAL;
  }
  if (fed >= 0) pipe->reader = fed;
  for (int k = 0; k < pipe->num_nodes; k++) {
    stk__node *n = &pipe->nodes[k];
    if (!n->op.schema->is_reader || k == pipe->reader) continue;
    const char *why = n->op.impl->feed ? "a pipeline has one external_source node (stoker's Python layer feeds "
                                         "every external source through one)"
                      : n->op.device != STK__DEV_CPU ? "a further reader runs on the cpu (device='cpu')"
                      : pipe->num_side == STK__MAX_SIDE_READERS ? "too many readers"
                                                                 : NULL;
    if (why) {
      stk__pipe_error(pipe, "build: reader %s (%s) besides reader %s (%s): %s", n->op.name, n->op_type,
                      pipe->nodes[pipe->reader].op.name, pipe->nodes[pipe->reader].op_type, why);
      return STK_EINVAL;
    }
    n->side = pipe->num_side;
    pipe->side[pipe->num_side++] = (stk__side_reader){.node = k};
  }
  return STK_OK;
}

/* An argument input of a scalar argument (mirror=coin) must come from an output that holds one
 * number per sample: refuses an output its operator declares an array (an image, bytes). */
static stk_status check_arg_input_kind(stk_pipeline *pipe, const char *arg_who, const stk__arg_schema *as,
                                       const char *ref, const stk__node *src, int output) {
  const int scalar = as->type == STK_ARG_INT || as->type == STK_ARG_FLOAT || as->type == STK_ARG_BOOL;
  if (!scalar || output >= 32 || !((src->op.schema->array_outputs >> output) & 1u)) return STK_OK;
  stk__pipe_error(pipe,
                  "%s expects one %s per sample, but '%s' is output %d of operator %s (%s), which holds an "
                  "array per sample (an image, bytes or a tensor)",
                  arg_who, stk_arg_type_name(as->type), ref, output, src->op.name, src->op_type);
  return STK_EINVAL;
}

/* Checks the argument inputs of node k against the nodes added before it (the pipeline text
 * calls this right after adding a node, so its message can name the line). */
stk_status stk__graph_check_arg_inputs(stk_pipeline *pipe, int k) {
  stk__node *n = &pipe->nodes[k];
  for (int a = 0; a < n->op.schema->num_args; a++) {
    if (!n->op.args[a].input_ref) continue;
    char arg_who[300];
    snprintf(arg_who, sizeof arg_who, "operator %s (%s), argument '%s'", n->op.name, n->op_type,
             n->op.schema->args[a].name);
    int src, output;
    stk_status st = resolve_ref(pipe, n->op.args[a].input_ref, arg_who, &src, &output);
    if (st == STK_OK)
      st = check_arg_input_kind(pipe, arg_who, &n->op.schema->args[a], n->op.args[a].input_ref, &pipe->nodes[src],
                                output);
    if (st != STK_OK) return st;
  }
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
      if (st == STK_OK)
        st = check_arg_input_kind(pipe, arg_who, &n->op.schema->args[a], v->input_ref, &pipe->nodes[n->src_node[slot]],
                                  n->src_output[slot]);
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
        stk__pipe_error(pipe, "%s runs on the cpu but its input '%s' comes from %s (%s) on the %s", who, src->op.name,
                        src->op.name, src->op_type, src->op.device == STK__DEV_GPU ? "gpu" : "mixed stage");
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

/* set_outputs' references -> (out_node, out_index). */
static stk_status resolve_outputs(stk_pipeline *pipe) {
  pipe->out_node = calloc((size_t)pipe->num_outputs, sizeof(int));
  pipe->out_index = calloc((size_t)pipe->num_outputs, sizeof(int));
  if (!pipe->out_node || !pipe->out_index) return STK_ENOMEM;
  for (int o = 0; o < pipe->num_outputs; o++) {
    stk_status st = resolve_ref(pipe, pipe->output_refs[o], "set_outputs", &pipe->out_node[o], &pipe->out_index[o]);
    if (st != STK_OK) return st;
  }
  free(pipe->out_reader);
  pipe->out_reader = calloc((size_t)pipe->num_outputs + 1, sizeof(int));
  if (!pipe->out_reader) return STK_ENOMEM;
  for (int o = 0; o < pipe->num_outputs; o++) { /* whose samples: the reader up its first inputs */
    int k = pipe->out_node[o];
    for (int hops = 0; hops < pipe->num_nodes && !pipe->nodes[k].op.schema->is_reader; hops++) {
      if (pipe->nodes[k].num_regular_inputs == 0) break;
      k = pipe->nodes[k].src_node[0];
    }
    pipe->out_reader[o] = pipe->nodes[k].side + 1; /* 0: the epoch reader, or no reader above */
  }
  return STK_OK;
}

/* A GPU node whose only consumer is a GPU node reading it as input 0 becomes one node running
 * the fused implementation, when the operator table has one for the pair (stk__op_fusions). */
static stk_status fuse_gpu_nodes(stk_pipeline *pipe) {
  for (int a = 0; a < pipe->num_nodes; a++) {
    stk__node *first = &pipe->nodes[a];
    if (first->op.device != STK__DEV_GPU || first->skip) continue;
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
    if (second->op.device != STK__DEV_GPU || second->src_output[0] != 0 || second->fused_op) continue;
    const stk__op_impl *fused = stk__op_fused_impl_find(first->op.schema, second->op.schema);
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

/* The lists of a batch: every node's outputs in node order (list_base), then the pre-stage list
 * of each mixed op whose CPU pre-stage runs in the sample chains (see op.h: run_sample of a mixed
 * op; only when all its inputs come from CPU nodes). */
static void lay_out_lists(stk_pipeline *pipe) {
  pipe->num_lists = 0;
  for (int k = 0; k < pipe->num_nodes; k++) {
    pipe->nodes[k].list_base = pipe->num_lists;
    pipe->num_lists += pipe->nodes[k].num_outputs;
    if (pipe->nodes[k].op.device != STK__DEV_CPU) pipe->has_gpu_nodes = 1;
  }
  for (int k = 0; k < pipe->num_nodes; k++) {
    stk__node *n = &pipe->nodes[k];
    int cpu_inputs = 1;
    for (int i = 0; i < n->num_all_inputs; i++) cpu_inputs &= pipe->nodes[n->src_node[i]].op.device == STK__DEV_CPU;
    n->stage_list =
        n->op.device == STK__DEV_MIXED && !n->skip && cpu_inputs && n->op.impl->run_sample ? pipe->num_lists++ : -1;
    n->prepare = n->op.device == STK__DEV_MIXED && !n->skip && !n->fused_op && cpu_inputs && n->op.impl->prepare_batch;
    if (n->prepare) pipe->has_prepare = 1;
  }
}

/* CPU -> GPU edges: a GPU operator (not a mixed one, which reads host inputs itself) whose regular
 * input is a CPU node's output reads a device copy of that list, appended after the other lists;
 * the GPU stage makes it (src/core/exec/gpu_stage.c: upload_lists) before the batch's first GPU operator.
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

stk_status stk__graph_lower(stk_pipeline *pipe) {
  stk_status st = find_readers(pipe);
  if (st == STK_OK) st = wire_graph(pipe);
  if (st == STK_OK) st = topo_sort(pipe);
  if (st == STK_OK) st = resolve_outputs(pipe);
  if (st == STK_OK) st = fuse_gpu_nodes(pipe);
  if (st != STK_OK) return st;
  lay_out_lists(pipe);
  st = plan_uploads(pipe); /* after the layout: device copies are lists of their own, appended */
  if (st != STK_OK) return st;
  free(pipe->list_high_water);
  pipe->list_high_water = calloc((size_t)pipe->num_lists + 1, sizeof *pipe->list_high_water);
  return pipe->list_high_water ? STK_OK : STK_ENOMEM;
}
