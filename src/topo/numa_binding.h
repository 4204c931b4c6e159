/* src/topo/numa_binding.h: state shared by numa_binding.c (options, node resolution, node and
 * socket modes) and numa_share.c (exclusive and core-complex division). Internal. Not hot. */
#ifndef STOKER_TOPO_NUMA_BINDING_H
#define STOKER_TOPO_NUMA_BINDING_H

#include "topo_internal.h"

typedef struct stk__numa_plan {
  const stk_topology *topo;
  const stk_numa_binding_options *options;
  stk_plan_rank *ranks;
  int nproc;
  stk_cpuset allowed; /* options' or the topology's allowed CPUs, within the online ones */
  int visible_count;
  int visible[STK_MAX_VISIBLE_GPUS];
  /* Per rank (stoker rules): the node whose CPUs it gets, -1 when it failed. */
  int cpu_node[STK_MAX_VISIBLE_GPUS];
} stk__numa_plan;

/* Sets ranks[r] to a failure with a formatted message. */
STK_INTERNAL void stk__numa_fail(stk_plan_rank *rank, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Node `id`'s online CPUs within the allowed set (empty when the node is not online). */
STK_INTERNAL void stk__numa_node_allowed(const stk__numa_plan *plan, int node_id, stk_cpuset *out);
/* The CPUs of `cpus` grouped by physical core, cores ordered by the core's lowest CPU: fills
 * groups[0..count-1] (room for STK_MAX_CPUS) and returns count. Key = the core's lowest CPU. */
STK_INTERNAL int stk__numa_group_by_core(const stk_topology *topo, const stk_cpuset *cpus, stk_cpuset *groups);

/* exclusive / core-complex: torch's rules and stoker's (numa_share.c). */
STK_INTERNAL void stk__numa_exclusive_torch(stk__numa_plan *plan, int rank);
STK_INTERNAL void stk__numa_core_complex_torch(stk__numa_plan *plan, int rank);
STK_INTERNAL void stk__numa_exclusive_stoker(stk__numa_plan *plan, int rank);
STK_INTERNAL void stk__numa_core_complex_stoker(stk__numa_plan *plan, int rank);
/* torch's node for a GPU: max(numa_node, 0), the raw value when it is not online. */
STK_INTERNAL int stk__numa_torch_node(const stk__numa_plan *plan, int gpu);
/* Gives `cpus` of a domain to the member at `position` of `members`: torch's slicing of the
 * physical cores (the first cores % members get one more); when cores are fewer than members,
 * the hyperthreads are sliced the same way (a note says so). 0 on success, -1 (rank failed). */
STK_INTERNAL int stk__numa_slice(const stk__numa_plan *plan, int rank, const stk_cpuset *cpus, int position,
                                 int members, const char *domain);

#endif
