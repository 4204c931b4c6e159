/* src/core/graph.h: graph lowering, for pipeline.c's build: from the nodes as the user added them
 * (names, input references, arguments) to what the executor runs: inputs wired to producers,
 * a topological order, fused GPU pairs, the per-batch list layout (node outputs, pre-stages,
 * device copies) and the outputs resolved. Build-time only. Depends on engine.h; pipeline.c
 * includes it, and pipeline_text.c for the early argument-input check. */
#ifndef STOKER_CORE_GRAPH_H
#define STOKER_CORE_GRAPH_H

#include <stddef.h>

#include "core/engine.h"

/* Index of the node whose instance name is the len bytes at name, or -1. */
STK_INTERNAL int stk__graph_find_node(const stk_pipeline *pipe, const char *name, size_t len);

/* Resolves the argument inputs of node k (mirror=coin) against the nodes already added and
 * refuses one bound to an output that holds an array per sample (mirror=images). The same check
 * runs again at build; the pipeline text calls it after each statement so the message gets the
 * line. STK_EINVAL with the message in pipe->last_error. */
STK_INTERNAL stk_status stk__graph_check_arg_inputs(stk_pipeline *pipe, int k);

/* Lowers the graph of an unbuilt pipeline with at least one node and one output: finds the
 * reader, wires inputs and argument inputs, orders the nodes, resolves the outputs, fuses GPU
 * pairs, lays out the lists and plans uploads (pipe->reader, nodes[].src_*, order, out_node,
 * out_index, nodes[].list_base/stage_list/skip/fused_op, num_lists, list_upload,
 * list_high_water, has_gpu_nodes). The message of a failure is in pipe->last_error; what was
 * allocated is freed by stk_pipeline_destroy. */
STK_INTERNAL stk_status stk__graph_lower(stk_pipeline *pipe);

#endif
