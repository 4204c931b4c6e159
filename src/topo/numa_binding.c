/* src/topo/numa_binding.c: torchrun's --numa-binding modes (PyTorch 2.9, torch/numa/binding.py):
 * the options, which NUMA node a rank's GPU is on (torch's max(numa_node, 0), or stoker's sound
 * resolution of unknown nodes and of nodes without allowed CPUs), the node and socket modes, and
 * the entry point. exclusive and core-complex are in numa_share.c. Pure: reads the loaded
 * topology only, no system call, no numactl. Not on a hot path (once per launch). */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "numa_binding.h"

static const char *const binding_names[] = {
    [STK_NUMA_BINDING_NODE] = "node",
    [STK_NUMA_BINDING_SOCKET] = "socket",
    [STK_NUMA_BINDING_EXCLUSIVE] = "exclusive",
    [STK_NUMA_BINDING_CORE_COMPLEX] = "core-complex",
};

const char *stk_numa_binding_name(stk_numa_binding mode) {
  return mode >= STK_NUMA_BINDING_NODE && mode <= STK_NUMA_BINDING_CORE_COMPLEX ? binding_names[mode] : "unknown";
}

stk_status stk_numa_binding_parse(const char *name, stk_numa_binding *out) {
  if (!name || !out) return STK_EINVAL;
  for (int m = STK_NUMA_BINDING_NODE; m <= STK_NUMA_BINDING_CORE_COMPLEX; m++)
    if (strcmp(name, binding_names[m]) == 0) {
      *out = (stk_numa_binding)m;
      return STK_OK;
    }
  if (strcmp(name, "core_complex") == 0) {
    *out = STK_NUMA_BINDING_CORE_COMPLEX;
    return STK_OK;
  }
  return STK_EINVAL;
}

const char *stk_numa_rules_name(stk_numa_rules rules) {
  return rules == STK_NUMA_RULES_TORCH ? "torch" : rules == STK_NUMA_RULES_STOKER ? "stoker" : "unknown";
}

stk_status stk_numa_rules_parse(const char *name, stk_numa_rules *out) {
  if (!name || !out) return STK_EINVAL;
  if (strcmp(name, "stoker") == 0) *out = STK_NUMA_RULES_STOKER;
  else if (strcmp(name, "torch") == 0) *out = STK_NUMA_RULES_TORCH;
  else return STK_EINVAL;
  return STK_OK;
}

void stk_numa_binding_options_default(stk_numa_binding_options *options) {
  memset(options, 0, sizeof *options);
  options->mode = STK_NUMA_BINDING_NODE;
  options->rules = STK_NUMA_RULES_STOKER;
  options->nproc_per_node = 1;
}

void stk__numa_fail(stk_plan_rank *rank, const char *fmt, ...) {
  rank->status = STK_EPLAN;
  stk_cpuset_zero(&rank->cpus);
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(rank->error, sizeof rank->error, fmt, ap);
  va_end(ap);
}

void stk__numa_node_allowed(const stk__numa_plan *plan, int node_id, stk_cpuset *out) {
  int index = stk__topo_node_index(plan->topo, node_id);
  stk_cpuset_zero(out);
  if (index >= 0) stk_cpuset_and(out, &plan->topo->nodes[index].cpus, &plan->allowed);
}

int stk__numa_group_by_core(const stk_topology *topo, const stk_cpuset *cpus, stk_cpuset *groups) {
  /* topo->cores is ordered by each core's lowest CPU: torch's key (min of thread_siblings_list),
   * which may be a CPU outside `cpus`. */
  int count = 0;
  for (int core = 0; core < topo->core_count; core++) {
    stk_cpuset_and(&groups[count], &topo->cores[core], cpus);
    if (!stk_cpuset_is_empty(&groups[count])) count++;
  }
  return count;
}

int stk__numa_torch_node(const stk__numa_plan *plan, int gpu) {
  int raw = plan->topo->gpus[gpu].numa_node_raw;
  return raw < 0 ? 0 : raw;
}

static int node_mem_node(const stk_topology *topo, int node_id) {
  int index = stk__topo_node_index(topo, node_id);
  return index >= 0 && topo->nodes[index].mem_kb > 0 ? node_id : -1;
}

/* ---- stoker's node of a rank ---------------------------------------------------------------- */

/* The node holding every one of the GPU's local CPUs, when they are narrower than the machine. */
static int node_from_local_cpus(const stk_topology *topo, const stk_gpu_info *gpu) {
  stk_cpuset local;
  stk_cpuset_and(&local, &gpu->local_cpus, &topo->online);
  if (stk_cpuset_is_empty(&local) || stk_cpuset_equal(&local, &topo->online)) return -1;
  for (int i = 0; i < topo->node_count; i++)
    if (stk_cpuset_is_subset(&local, &topo->nodes[i].cpus)) return topo->nodes[i].id;
  return -1;
}

/* Nodes with allowed CPUs, id order; returns the count. */
static int cpu_nodes(const stk__numa_plan *plan, int *ids) {
  int count = 0;
  for (int i = 0; i < plan->topo->node_count; i++)
    if (stk_cpuset_intersects(&plan->topo->nodes[i].cpus, &plan->allowed)) ids[count++] = plan->topo->nodes[i].id;
  return count;
}

/* The GPU's node, or -1 when neither sysfs nor its local CPUs say. */
static int known_node(const stk_topology *topo, int gpu_id) {
  const stk_gpu_info *gpu = &topo->gpus[gpu_id];
  return gpu->numa_node_unknown ? node_from_local_cpus(topo, gpu) : gpu->numa_node_raw;
}

/* The node with allowed CPUs nearest to node_id (distance, then id). */
static int nearest_cpu_node(const stk__numa_plan *plan, int node_id) {
  const stk_topology *topo = plan->topo;
  int from = stk__topo_node_index(topo, node_id), best = -1, best_distance = 1 << 30;
  for (int j = 0; j < topo->node_count; j++) {
    if (!stk_cpuset_intersects(&topo->nodes[j].cpus, &plan->allowed)) continue;
    int distance = from >= 0 && topo->nodes[from].distance ? topo->nodes[from].distance[j] : 0;
    if (distance < best_distance) {
      best_distance = distance;
      best = topo->nodes[j].id;
    }
  }
  return best;
}

/* Sets plan->cpu_node[rank] and the rank's memory node and note (stoker rules). */
static void resolve_rank_node(stk__numa_plan *plan, int rank) {
  const stk_topology *topo = plan->topo;
  stk_plan_rank *out = &plan->ranks[rank];
  int gpu = plan->visible[rank], guessed = 0;
  int node = known_node(topo, gpu);
  if (node < 0) {
    int ids[STK__MAX_NODE_ID + 1];
    int count = cpu_nodes(plan, ids), earlier = 0;
    for (int r = 0; r < rank; r++) earlier += known_node(topo, plan->visible[r]) < 0;
    node = ids[earlier % count];
    guessed = count > 1;
    if (guessed)
      snprintf(out->note, sizeof out->note,
               "numa_node %d and local CPUs that span the machine: ranks spread over the nodes, node %d is a guess "
               "(memory left alone)",
               topo->gpus[gpu].numa_node_raw, node);
  } else if (topo->gpus[gpu].numa_node_unknown) {
    snprintf(out->note, sizeof out->note, "numa_node %d: node %d from the GPU's local CPUs",
             topo->gpus[gpu].numa_node_raw, node);
  }
  out->memory_node = guessed ? -1 : node_mem_node(topo, node);
  stk_cpuset cpus;
  stk__numa_node_allowed(plan, node, &cpus);
  int cpu_node = node;
  if (stk_cpuset_is_empty(&cpus)) {
    cpu_node = nearest_cpu_node(plan, node);
    /* A node without any CPU is device memory (GB200's GPU memory, CXL): the process's pages
     * go to the CPU node chosen instead. */
    int index = stk__topo_node_index(topo, node);
    if (!guessed && index >= 0 && stk_cpuset_is_empty(&topo->nodes[index].cpus))
      out->memory_node = node_mem_node(topo, cpu_node);
    size_t used = strlen(out->note);
    snprintf(out->note + used, sizeof out->note - used,
             "%snode %d has no allowed CPUs (memory-only, or outside the cpuset): "
             "CPUs of the nearest node %d",
             used ? "; " : "", node, cpu_node);
  }
  plan->cpu_node[rank] = cpu_node;
}

/* ---- node and socket -------------------------------------------------------------------------- */

static void node_torch(stk__numa_plan *plan, int rank) {
  int node = stk__numa_torch_node(plan, plan->visible[rank]);
  stk_plan_rank *out = &plan->ranks[rank];
  if (stk__topo_node_index(plan->topo, node) < 0) {
    stk__numa_fail(out,
                   "GPU %d: torch reads node%d/cpulist, which does not exist (node %d is not online): torch raises",
                   out->gpu, node, node);
    return;
  }
  stk__numa_node_allowed(plan, node, &out->cpus);
  if (stk_cpuset_is_empty(&out->cpus))
    stk__numa_fail(out, "GPU %d: node %d has no allowed CPUs: torch's binding fails (numactl refuses an empty CPU set)",
                   out->gpu, node);
}

/* The package of a node's lowest CPU among `within`, or -1 when it has none. */
static int node_socket(const stk__numa_plan *plan, int node_id, const stk_cpuset *within) {
  int index = stk__topo_node_index(plan->topo, node_id);
  if (index < 0) return -1;
  stk_cpuset cpus;
  stk_cpuset_and(&cpus, &plan->topo->nodes[index].cpus, within);
  int cpu = stk_cpuset_first(&cpus);
  return cpu < 0 ? -1 : stk_topology_cpu_socket(plan->topo, cpu);
}

static void socket_torch(stk__numa_plan *plan, int rank) {
  stk_plan_rank *out = &plan->ranks[rank];
  int node = stk__numa_torch_node(plan, plan->visible[rank]);
  int socket = node_socket(plan, node, &plan->allowed);
  if (socket < 0) {
    stk__numa_fail(out, "GPU %d: node %d has no allowed CPUs: torch takes min() of an empty set and raises", out->gpu,
                   node);
    return;
  }
  stk_cpuset_zero(&out->cpus);
  const stk_cpuset *possible = &plan->topo->possible_nodes;
  for (int id = stk_cpuset_first(possible); id >= 0; id = stk_cpuset_next(possible, id)) {
    if (stk__topo_node_index(plan->topo, id) < 0) {
      stk__numa_fail(
          out, "GPU %d: possible node %d is not online (no node%d/cpulist): torch raises for every GPU in socket mode",
          out->gpu, id, id);
      return;
    }
    int other = node_socket(plan, id, &plan->allowed);
    if (other < 0) {
      stk__numa_fail(
          out,
          "GPU %d: possible node %d has no allowed CPUs (memory-only or outside the cpuset): torch takes min() "
          "of an empty set and raises for every GPU in socket mode",
          out->gpu, id);
      return;
    }
    if (other != socket) continue;
    stk_cpuset cpus;
    stk__numa_node_allowed(plan, id, &cpus);
    stk_cpuset_or(&out->cpus, &out->cpus, &cpus);
  }
}

static void socket_stoker(stk__numa_plan *plan, int rank) {
  stk_plan_rank *out = &plan->ranks[rank];
  int socket = node_socket(plan, plan->cpu_node[rank], &plan->topo->online);
  stk_cpuset_zero(&out->cpus);
  for (int i = 0; i < plan->topo->node_count; i++) {
    int id = plan->topo->nodes[i].id;
    if (node_socket(plan, id, &plan->topo->online) != socket) continue; /* CPU-less nodes: -1 */
    stk_cpuset cpus;
    stk__numa_node_allowed(plan, id, &cpus);
    stk_cpuset_or(&out->cpus, &out->cpus, &cpus);
  }
}

/* ---- entry point ---------------------------------------------------------------------------- */

static stk_status check_options(stk__numa_plan *plan, const stk_numa_binding_options *options) {
  const stk_topology *topo = plan->topo;
  stk_plan_rank *first = &plan->ranks[0];
  if (options->mode < STK_NUMA_BINDING_NODE || options->mode > STK_NUMA_BINDING_CORE_COMPLEX)
    return stk__numa_fail(first, "unknown --numa-binding mode %d", (int)options->mode), STK_EINVAL;
  if (options->rules != STK_NUMA_RULES_STOKER && options->rules != STK_NUMA_RULES_TORCH)
    return stk__numa_fail(first, "unknown NUMA binding rules %d", (int)options->rules), STK_EINVAL;
  if (topo->gpu_count == 0)
    return stk__numa_fail(first, "no GPU found (no NVIDIA PCI display/3D controller)"), STK_EINVAL;
  plan->visible_count = options->visible_count;
  for (int i = 0; i < plan->visible_count; i++) {
    plan->visible[i] = options->visible_gpus[i];
    if (plan->visible[i] < 0 || plan->visible[i] >= topo->gpu_count)
      return stk__numa_fail(first, "visible GPU %d (CUDA device %d) does not exist", plan->visible[i], i), STK_EINVAL;
  }
  if (options->visible_count <= 0) {
    plan->visible_count = topo->gpu_count < STK_MAX_VISIBLE_GPUS ? topo->gpu_count : STK_MAX_VISIBLE_GPUS;
    for (int i = 0; i < plan->visible_count; i++) plan->visible[i] = i;
  }
  if (plan->nproc < 1)
    return stk__numa_fail(first, "nproc_per_node must be at least 1 (got %d)", plan->nproc), STK_EINVAL;
  if (plan->nproc > plan->visible_count)
    return stk__numa_fail(first, "nproc_per_node %d is larger than the visible GPU count %d", plan->nproc,
                          plan->visible_count),
           STK_EINVAL;
  plan->allowed = topo->allowed;
  if (options->use_allowed) stk_cpuset_and(&plan->allowed, &options->allowed, &topo->online);
  if (stk_cpuset_is_empty(&plan->allowed))
    return stk__numa_fail(first, "none of the allowed CPUs is online"), STK_EINVAL;
  return STK_OK;
}

stk_status stk_numa_binding_compute(const stk_topology *topo, const stk_numa_binding_options *options,
                                    stk_plan_rank *ranks) {
  if (!ranks) return STK_EINVAL;
  memset(&ranks[0], 0, sizeof ranks[0]);
  if (!topo || !options) return stk__numa_fail(&ranks[0], "no topology or no options"), STK_EINVAL;
  stk__numa_plan plan;
  memset(&plan, 0, sizeof plan);
  plan.topo = topo;
  plan.options = options;
  plan.ranks = ranks;
  plan.nproc = options->nproc_per_node;
  stk_status status = check_options(&plan, options);
  if (status != STK_OK) return status;
  for (int r = 0; r < plan.nproc; r++) {
    memset(&ranks[r], 0, sizeof ranks[r]);
    ranks[r].gpu = plan.visible[r];
    ranks[r].status = STK_OK;
    ranks[r].memory_node = -1;
  }
  int torch = options->rules == STK_NUMA_RULES_TORCH;
  for (int r = 0; r < plan.nproc; r++) {
    if (torch) {
      const stk_gpu_info *gpu = &topo->gpus[plan.visible[r]];
      ranks[r].memory_node = gpu->numa_node_unknown ? -1 : node_mem_node(topo, gpu->numa_node_raw);
    } else {
      resolve_rank_node(&plan, r);
    }
  }
  for (int r = 0; r < plan.nproc; r++) {
    switch (options->mode) {
      case STK_NUMA_BINDING_NODE:
        if (torch) node_torch(&plan, r);
        else stk__numa_node_allowed(&plan, plan.cpu_node[r], &ranks[r].cpus);
        break;
      case STK_NUMA_BINDING_SOCKET:
        torch ? socket_torch(&plan, r) : socket_stoker(&plan, r);
        break;
      case STK_NUMA_BINDING_EXCLUSIVE:
        torch ? stk__numa_exclusive_torch(&plan, r) : stk__numa_exclusive_stoker(&plan, r);
        break;
      case STK_NUMA_BINDING_CORE_COMPLEX:
        torch ? stk__numa_core_complex_torch(&plan, r) : stk__numa_core_complex_stoker(&plan, r);
        break;
    }
    if (ranks[r].status == STK_OK && stk_cpuset_is_empty(&ranks[r].cpus))
      stk__numa_fail(&ranks[r], "GPU %d: no allowed CPU left for this rank", ranks[r].gpu); /* never expected */
  }
  for (int r = 0; r < plan.nproc; r++)
    if (ranks[r].status != STK_OK) return STK_EPLAN;
  return STK_OK;
}
