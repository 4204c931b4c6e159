/* src/topo/numa_share.c: the two --numa-binding modes that divide a NUMA node among the ranks on
 * it: exclusive (a contiguous slice of the node's physical cores, the first ones getting one more
 * when they do not divide evenly) and core-complex (one L3 group per rank, groups with more
 * allowed CPUs first), each by torch's rules and by stoker's (ranks instead of visible GPUs, no
 * shared complex, hyperthreads when cores run short, no cache information = exclusive). Pure.
 * Not on a hot path. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "numa_binding.h"

static void append_note(stk_plan_rank *rank, const char *text) {
  size_t used = strlen(rank->note);
  snprintf(rank->note + used, sizeof rank->note - used, "%s%s", used ? "; " : "", text);
}

/* torch: the CUDA devices whose GPU torch puts on `node`, and the rank's position among them. */
static int torch_members(const stk__numa_plan *plan, int rank, int node, int *position) {
  int members = 0;
  for (int c = 0; c < plan->visible_count; c++) {
    if (stk__numa_torch_node(plan, plan->visible[c]) != node) continue;
    if (c == rank) *position = members;
    members++;
  }
  return members;
}

/* stoker: the ranks whose CPUs come from the same node, and the rank's position among them. */
static int stoker_members(const stk__numa_plan *plan, int rank, int *position) {
  int members = 0;
  for (int r = 0; r < plan->nproc; r++) {
    if (plan->cpu_node[r] != plan->cpu_node[rank]) continue;
    if (r == rank) *position = members;
    members++;
  }
  return members;
}

/* torch's slice [start, end) of `count` items for member `position` of `members`. */
static void slice_bounds(int count, int position, int members, int *start, int *end) {
  int per = count / members, extra = count % members;
  *start = position * per + (position < extra ? position : extra);
  *end = *start + per + (position < extra ? 1 : 0);
}

/* Slices whole cores (allow_threads 0: fails like torch when cores are fewer than members). */
static int slice(const stk__numa_plan *plan, int rank, const stk_cpuset *cpus, int position, int members,
                 const char *domain, int allow_threads) {
  stk_plan_rank *out = &plan->ranks[rank];
  stk_cpuset *groups = malloc(sizeof *groups * (size_t)(plan->topo->core_count > 0 ? plan->topo->core_count : 1));
  if (!groups) return stk__numa_fail(out, "out of memory"), -1;
  int cores = stk__numa_group_by_core(plan->topo, cpus, groups), start = 0, end = 0;
  stk_cpuset_zero(&out->cpus);
  if (cores >= members) {
    slice_bounds(cores, position, members, &start, &end);
    for (int i = start; i < end; i++) stk_cpuset_or(&out->cpus, &out->cpus, &groups[i]);
  } else if (allow_threads && stk_cpuset_count(cpus) >= members) {
    /* Fewer cores than ranks: the hyperthreads in core order, sliced the same way. */
    int index = 0;
    slice_bounds(stk_cpuset_count(cpus), position, members, &start, &end);
    for (int g = 0; g < cores; g++)
      for (int cpu = stk_cpuset_first(&groups[g]); cpu >= 0; cpu = stk_cpuset_next(&groups[g], cpu), index++)
        if (index >= start && index < end) stk_cpuset_add(&out->cpus, cpu);
    char note[160];
    snprintf(note, sizeof note, "%d ranks on %s's %d allowed cores: divided its hyperthreads", members, domain, cores);
    append_note(out, note);
  } else {
    stk__numa_fail(out, "GPU %d: %s has %d allowed physical cores (%d CPUs) for %d ranks; %s needs one per rank%s",
                   out->gpu, domain, cores, stk_cpuset_count(cpus), members,
                   allow_threads ? "exclusive" : "torch's exclusive", allow_threads ? "" : " (torch raises)");
  }
  free(groups);
  return out->status == STK_OK ? 0 : -1;
}

int stk__numa_slice(const stk__numa_plan *plan, int rank, const stk_cpuset *cpus, int position, int members,
                    const char *domain) {
  return slice(plan, rank, cpus, position, members, domain, 1);
}

/* torch's node checks shared by exclusive and core-complex: 0 and the node's allowed CPUs, or -1. */
static int torch_node_cpus(stk__numa_plan *plan, int rank, int *node, stk_cpuset *cpus) {
  stk_plan_rank *out = &plan->ranks[rank];
  *node = stk__numa_torch_node(plan, plan->visible[rank]);
  if (stk__topo_node_index(plan->topo, *node) < 0)
    return stk__numa_fail(
               out, "GPU %d: torch reads node%d/cpulist, which does not exist (node %d is not online): torch raises",
               out->gpu, *node, *node),
           -1;
  stk__numa_node_allowed(plan, *node, cpus);
  return 0;
}

void stk__numa_exclusive_torch(stk__numa_plan *plan, int rank) {
  int node = 0, position = 0;
  stk_cpuset cpus;
  if (torch_node_cpus(plan, rank, &node, &cpus) < 0) return;
  if (!plan->topo->has_thread_siblings_list) {
    stk__numa_fail(&plan->ranks[rank],
                   "GPU %d: torch reads cpuN/topology/thread_siblings_list, which is absent here: torch raises",
                   plan->ranks[rank].gpu);
    return;
  }
  int members = torch_members(plan, rank, node, &position);
  char domain[64];
  snprintf(domain, sizeof domain, "node %d", node);
  slice(plan, rank, &cpus, position, members, domain, 0);
}

void stk__numa_exclusive_stoker(stk__numa_plan *plan, int rank) {
  int position = 0, members = stoker_members(plan, rank, &position);
  stk_cpuset cpus;
  stk__numa_node_allowed(plan, plan->cpu_node[rank], &cpus);
  char domain[64];
  snprintf(domain, sizeof domain, "node %d", plan->cpu_node[rank]);
  slice(plan, rank, &cpus, position, members, domain, 1);
}

/* ---- core complexes ------------------------------------------------------------------------- */

typedef struct complex_group {
  int key; /* lowest CPU sharing the cache (maybe outside the allowed set) */
  stk_cpuset cpus;
} complex_group;

static int compare_complexes(const void *a, const void *b) {
  const complex_group *x = a, *y = b;
  int cx = stk_cpuset_count(&x->cpus), cy = stk_cpuset_count(&y->cpus);
  if (cx != cy) return cx > cy ? -1 : 1; /* more allowed CPUs first, then the lower key */
  return (x->key > y->key) - (x->key < y->key);
}

/* Groups cpus by their highest-level cache; NULL on allocation failure, *count 0 when empty. */
static complex_group *group_by_complex(const stk_topology *topo, const stk_cpuset *cpus, int *count) {
  complex_group *groups = calloc((size_t)stk_cpuset_count(cpus) + 1, sizeof *groups);
  *count = 0;
  if (!groups) return NULL;
  for (int cpu = stk_cpuset_first(cpus); cpu >= 0; cpu = stk_cpuset_next(cpus, cpu)) {
    int key = topo->cpu_cache_group[cpu], g = 0;
    while (g < *count && groups[g].key != key) g++;
    if (g == *count) groups[(*count)++].key = key;
    stk_cpuset_add(&groups[g].cpus, cpu);
  }
  qsort(groups, (size_t)*count, sizeof *groups, compare_complexes);
  return groups;
}

static int has_cache_info(const stk_topology *topo, const stk_cpuset *cpus) {
  for (int cpu = stk_cpuset_first(cpus); cpu >= 0; cpu = stk_cpuset_next(cpus, cpu))
    if (topo->cpu_cache_group[cpu] < 0) return 0;
  return 1;
}

void stk__numa_core_complex_torch(stk__numa_plan *plan, int rank) {
  stk_plan_rank *out = &plan->ranks[rank];
  int node = 0, position = 0, count = 0;
  stk_cpuset cpus;
  if (torch_node_cpus(plan, rank, &node, &cpus) < 0) return;
  int members = torch_members(plan, rank, node, &position);
  if (!has_cache_info(plan->topo, &cpus)) {
    stk__numa_fail(out,
                   "GPU %d: torch reads cpuN/cache/index*/ (level, type, shared_cpu_list), absent here: torch raises",
                   out->gpu);
    return;
  }
  complex_group *groups = group_by_complex(plan->topo, &cpus, &count);
  if (!groups) {
    stk__numa_fail(out, "out of memory");
    return;
  }
  if (count == 0)
    stk__numa_fail(out, "GPU %d: node %d has no allowed CPUs: torch computes an index modulo 0 (ZeroDivisionError)",
                   out->gpu, node);
  else out->cpus = groups[position % count].cpus;
  (void)members;
  free(groups);
}

void stk__numa_core_complex_stoker(stk__numa_plan *plan, int rank) {
  stk_plan_rank *out = &plan->ranks[rank];
  int node = plan->cpu_node[rank], position = 0, count = 0;
  int members = stoker_members(plan, rank, &position);
  stk_cpuset cpus;
  stk__numa_node_allowed(plan, node, &cpus);
  char domain[96];
  if (!has_cache_info(plan->topo, &cpus)) {
    snprintf(domain, sizeof domain, "node %d", node);
    if (slice(plan, rank, &cpus, position, members, domain, 1) == 0)
      append_note(out, "no cache information (cpuN/cache): an exclusive share of the node instead of a core complex");
    return;
  }
  complex_group *groups = group_by_complex(plan->topo, &cpus, &count);
  if (!groups) {
    stk__numa_fail(out, "out of memory");
    return;
  }
  if (members <= count) {
    out->cpus = groups[position].cpus;
  } else {
    /* More ranks than complexes: torch's assignment (position mod count), and the ranks that
     * land on one complex split it instead of sharing it. */
    int target = position % count, sharers = (members - target + count - 1) / count;
    snprintf(domain, sizeof domain, "node %d's core complex of CPU %d", node, groups[target].key);
    if (slice(plan, rank, &groups[target].cpus, position / count, sharers, domain, 1) == 0) {
      char note[160];
      snprintf(note, sizeof note, "%d ranks for node %d's %d core complexes: %d ranks split one", members, node, count,
               sharers);
      append_note(out, note);
    }
  }
  free(groups);
}
