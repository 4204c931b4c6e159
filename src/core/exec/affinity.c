/* src/core/exec/affinity.c: which CPU each worker thread runs on. Worker i takes CPU i of
 * options.affinity_mask / STOKER_AFFINITY_MASK; bad or not-allowed entries (warned about) and
 * threads beyond the list take GPU-local ∩ allowed CPUs round-robin (all allowed CPUs on a
 * CPU-only run), local rank r of a launcher's from r x num_workers CPUs in. Runs once at start,
 * not on a hot path.
 *
 * Topology and binding come from src/topo; they are referenced weakly so the engine links
 * without it (then workers are simply not pinned). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/exec/exec.h"
#include "base/tuning.h"

#pragma weak stk_cpuset_parse
#pragma weak stk_bind_thread_cpus
#pragma weak stk_get_affinity
#pragma weak stk_topology_new
#pragma weak stk_topology_load
#pragma weak stk_topology_destroy
#pragma weak stk_topology_gpu_local_cpus
#pragma weak stk_rank_gpu_options_default
#pragma weak stk_launcher_local_rank
#pragma weak stk_visible_gpus_resolve
#pragma weak stk_topology_options_default
#pragma weak stk_cpuset_zero
#pragma weak stk_cpuset_add
#pragma weak stk_cpuset_has
#pragma weak stk_cpuset_count
#pragma weak stk_cpuset_is_empty
#pragma weak stk_cpuset_and
#pragma weak stk_cpuset_first
#pragma weak stk_cpuset_next

/* A worker whose mask entry was bad: it takes a default CPU (fill_default_cpus). */
enum { CPU_UNSET = -1, CPU_TAKE_DEFAULT = -2 };

/* The topology gpu id of CUDA device `device_id`, -1 when unknown: by its PCI bus id when CUDA gives
 * it, else through CUDA_VISIBLE_DEVICES -- both by stk_visible_gpus_resolve's own matching. Never
 * the CUDA ordinal itself: with CUDA_VISIBLE_DEVICES=3,1 device 0 is the fourth GPU on the bus. */
static int topology_gpu_of(const stk_topology *topo, int device_id) {
  if (!stk_visible_gpus_resolve || !stk_rank_gpu_options_default) return -1;
  stk_rank_gpu_options ropts;
  stk_rank_gpu_options_default(&ropts);
  char bus[32];
  const char *bus_ids[1] = {bus};
  int index = device_id;
  if (stk__gpu_pci_bus_id(device_id, bus, sizeof bus) == STK_OK) { /* CUDA's answer: that device alone */
    ropts.cuda_device_count = 1;
    ropts.cuda_pci_bus_ids = bus_ids;
    index = 0;
  }
  int gpus[STK_MAX_VISIBLE_GPUS], count = 0;
  if (stk_visible_gpus_resolve(topo, &ropts, gpus, STK_MAX_VISIBLE_GPUS, &count, NULL, 0, NULL, 0) != STK_OK) return -1;
  return index < count ? gpus[index] : -1;
}

/* The CPUs that threads without a (good) mask entry share: GPU-local ∩ allowed when the run has
 * a GPU and that is not empty, else all allowed. */
static stk_cpuset default_cpus(stk_pipeline *pipe, const stk_cpuset *allowed) {
  stk_cpuset fallback = *allowed;
  if (pipe->options.device_id < 0 || !stk_topology_new || !stk_topology_load || !stk_topology_gpu_local_cpus)
    return fallback;
  stk_topology *topo = NULL;
  stk_topology_options topts;
  stk_topology_options_default(&topts);
  if (stk_topology_new(&topo) == STK_OK && stk_topology_load(topo, &topts) == STK_OK) {
    stk_cpuset local, both;
    int gpu = topology_gpu_of(topo, pipe->options.device_id);
    if (gpu < 0) {
      stk__pipe_warn(pipe,
                     "CUDA device %d was not found in the topology (PCI bus id, CUDA_VISIBLE_DEVICES); "
                     "workers use all allowed CPUs",
                     pipe->options.device_id);
    } else if (stk_topology_gpu_local_cpus(topo, gpu, &local) == STK_OK) {
      stk_cpuset_and(&both, &local, allowed);
      if (!stk_cpuset_is_empty(&both)) fallback = both;
      else stk__pipe_warn(pipe, "no CPU local to GPU %d is allowed; using all allowed CPUs", pipe->options.device_id);
    }
  }
  stk_topology_destroy(topo);
  return fallback;
}

/* The CPU of mask entry `entry` (the assigned-th), or CPU_TAKE_DEFAULT with a warning when it is
 * not one allowed CPU. */
static int mask_entry_cpu(stk_pipeline *pipe, const char *entry, int assigned, const stk_cpuset *allowed) {
  stk_cpuset one;
  char perr[128];
  int cpu = -1;
  if (stk_cpuset_parse(entry, &one, perr, sizeof perr) != STK_OK || stk_cpuset_count(&one) != 1) {
    stk__pipe_warn(pipe, "STOKER_AFFINITY_MASK entry %d ('%s') is not one CPU; thread %d uses the default CPUs",
                   assigned, entry, assigned);
  } else if (!stk_cpuset_has(allowed, cpu = stk_cpuset_first(&one))) {
    stk__pipe_warn(
        pipe, "STOKER_AFFINITY_MASK entry %d (CPU %d) is not allowed for this process; thread %d uses the default CPUs",
        assigned, cpu, assigned);
    cpu = -1;
  }
  return cpu >= 0 ? cpu : CPU_TAKE_DEFAULT;
}

/* Worker i gets entry i of the comma-separated mask. Entries one by one so that a bad entry only
 * loses its own thread. */
static void apply_mask(stk_pipeline *pipe, const char *mask, const stk_cpuset *allowed) {
  int assigned = 0;
  const char *p = mask;
  while (*p && assigned < pipe->num_workers) {
    const char *comma = strchr(p, ',');
    size_t n = comma ? (size_t)(comma - p) : strlen(p);
    char entry[64];
    snprintf(entry, sizeof entry, "%.*s", (int)(n < sizeof entry ? n : sizeof entry - 1), p);
    pipe->workers[assigned].cpu = mask_entry_cpu(pipe, entry, assigned, allowed);
    assigned++;
    if (!comma) break;
    p = comma + 1;
  }
}

/* Where the workers start in the default CPUs: local rank r of a launcher's L > 1 (torchrun,
 * Slurm, Open MPI) starts r x num_workers CPUs in, modulo their count. Ranks whose GPUs share one
 * set of local CPUs (one NUMA node, GPUs on one socket, a VM's numa_node -1) would otherwise pin
 * worker i of every rank to the same CPU and leave the rest idle; ranks with sets of their own just
 * start elsewhere in them. 0 alone. */
static int first_default_cpu(const stk_pipeline *pipe, const stk_cpuset *fallback) {
  if (!stk_launcher_local_rank || !stk_rank_gpu_options_default) return 0;
  stk_rank_gpu_options options;
  stk_rank_gpu_options_default(&options);
  int rank = -1, size = -1;
  if (stk_launcher_local_rank(&options, &rank, &size) != STK_OK || rank <= 0 || size == 0 || size == 1) return 0;
  const int count = stk_cpuset_count(fallback);
  return count > 0 ? (int)((int64_t)rank * pipe->num_workers % count) : 0;
}

/* Every worker without a CPU takes the next one of `fallback`, round-robin, from this rank's
 * first (first_default_cpu). */
static void fill_default_cpus(stk_pipeline *pipe, const stk_cpuset *fallback) {
  int next = stk_cpuset_first(fallback);
  for (int skip = first_default_cpu(pipe, fallback); skip > 0; skip--) next = stk_cpuset_next(fallback, next);
  for (int i = 0; i < pipe->num_workers; i++) {
    if (pipe->workers[i].cpu >= 0) continue;
    pipe->workers[i].cpu = next;
    next = stk_cpuset_next(fallback, next);
    if (next < 0) next = stk_cpuset_first(fallback);
  }
}

void stk__exec_plan_worker_cpus(stk_pipeline *pipe) {
  for (int i = 0; i < pipe->num_workers; i++) pipe->workers[i].cpu = CPU_UNSET;
  if (!pipe->options.pin_threads) return;
  if (!stk_bind_thread_cpus || !stk_get_affinity || !stk_cpuset_parse) {
    stk__pipe_warn(pipe, "thread pinning unavailable in this build (no topology module)");
    return;
  }
  stk_cpuset allowed;
  if (stk_get_affinity(0, &allowed) != STK_OK || stk_cpuset_is_empty(&allowed)) {
    stk__pipe_warn(pipe, "could not read the allowed CPUs; workers not pinned");
    return;
  }
  stk_cpuset fallback = default_cpus(pipe, &allowed);
  const char *mask = pipe->affinity_mask ? pipe->affinity_mask : stk__tuning_text(STK__KNOB_AFFINITY_MASK);
  if (mask && *mask) apply_mask(pipe, mask, &allowed);
  fill_default_cpus(pipe, &fallback);
}

void stk__exec_pin_self(stk__worker *w) {
  if (w->cpu < 0 || !stk_bind_thread_cpus) return;
  stk_cpuset set;
  stk_cpuset_zero(&set);
  stk_cpuset_add(&set, w->cpu);
  if (stk_bind_thread_cpus(&set) != STK_OK) w->cpu = -1;
}
