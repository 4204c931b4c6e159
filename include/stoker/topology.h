/* stoker/topology.h: CPU/NUMA/GPU topology, cpulists, the affinity planner and binding.
 *
 * Lifecycle: stk_topology_new() -> stk_topology_load() -> queries -> stk_topology_destroy().
 * Discovery reads sysfs/procfs directly (or a recorded copy under options.sysfs_root); on a live
 * system NVML (dlopen'd, optional) adds GPU names, UUIDs and NVML's CPU affinity.
 *
 * Thread contract: a loaded stk_topology is read-only; its query functions may be called from any
 * number of threads at once. new/load/destroy must not race with anything else on the same handle.
 * stk_cpuset functions are pure and thread-safe. stk_plan_compute() is pure (no system calls).
 * The stk_bind_* functions change the calling thread's or a process's state (see each). */
#ifndef STOKER_TOPOLOGY_H
#define STOKER_TOPOLOGY_H

#include <stddef.h>
#include <stdint.h>

#include "stoker/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- CPU sets: a plain value type (copy it freely) ---------------------------------------- */
#define STK_MAX_CPUS 4096
typedef struct stk_cpuset {
  uint64_t bits[STK_MAX_CPUS / 64];
} stk_cpuset;

STK_EXPORT void stk_cpuset_zero(stk_cpuset *set);
STK_EXPORT void stk_cpuset_add(stk_cpuset *set, int cpu);      /* ignores cpu outside [0,STK_MAX_CPUS) */
STK_EXPORT void stk_cpuset_remove(stk_cpuset *set, int cpu);
STK_EXPORT int stk_cpuset_has(const stk_cpuset *set, int cpu);
STK_EXPORT int stk_cpuset_count(const stk_cpuset *set);
STK_EXPORT int stk_cpuset_is_empty(const stk_cpuset *set);
STK_EXPORT int stk_cpuset_equal(const stk_cpuset *a, const stk_cpuset *b);
STK_EXPORT int stk_cpuset_intersects(const stk_cpuset *a, const stk_cpuset *b);
STK_EXPORT int stk_cpuset_is_subset(const stk_cpuset *inner, const stk_cpuset *outer);
STK_EXPORT void stk_cpuset_and(stk_cpuset *out, const stk_cpuset *a, const stk_cpuset *b);
STK_EXPORT void stk_cpuset_or(stk_cpuset *out, const stk_cpuset *a, const stk_cpuset *b);
STK_EXPORT void stk_cpuset_andnot(stk_cpuset *out, const stk_cpuset *a, const stk_cpuset *b);
/* Lowest cpu in the set, or -1 when empty; next cpu after `after`, or -1. */
STK_EXPORT int stk_cpuset_first(const stk_cpuset *set);
STK_EXPORT int stk_cpuset_next(const stk_cpuset *set, int after);
/* Parses a cpulist ("0-23,48-71", " 0 , 2 ", "5-5", "" = empty, a trailing comma allowed).
 * Malformed text ("3-1", "a", "1--2", "-4") returns STK_EPARSE and, when err is non-NULL, writes a
 * message that quotes the text into err (err_size bytes). */
STK_EXPORT stk_status stk_cpuset_parse(const char *text, stk_cpuset *out, char *err, size_t err_size);
/* Parses sysfs's hex mask form ("ffffffff,00000000", most significant word first). */
STK_EXPORT stk_status stk_cpuset_parse_mask(const char *text, stk_cpuset *out, char *err, size_t err_size);
/* Writes the canonical cpulist ("0-3,8,10-11"; "" when empty) into buf; returns the length it
 * needs (like snprintf), so a too-small buf is detectable. */
STK_EXPORT size_t stk_cpuset_format(const stk_cpuset *set, char *buf, size_t buf_size);

/* ---- Topology ------------------------------------------------------------------------------- */
typedef struct stk_topology stk_topology;

typedef struct stk_topology_options {
  const char *sysfs_root; /* NULL or "" = the live system ("/"); else a recorded tree (copied) */
  int use_nvml;           /* 1 (default): ask NVML for names/UUIDs/affinity on a live system */
} stk_topology_options;

STK_EXPORT void stk_topology_options_default(stk_topology_options *options);

STK_EXPORT stk_status stk_topology_new(stk_topology **out);
/* Discovers the topology. On failure the message is in stk_topology_last_error(). */
STK_EXPORT stk_status stk_topology_load(stk_topology *topo, const stk_topology_options *options);
STK_EXPORT void stk_topology_destroy(stk_topology *topo);
/* Borrowed; valid until the next call on topo or its destruction. Never NULL. */
STK_EXPORT const char *stk_topology_last_error(const stk_topology *topo);
/* What the last successful load found suspicious but could read (a GPU naming a NUMA node that
 * is not online, malformed node distances), one line per warning, "" when none. Borrowed; valid
 * until the next load or destruction. Never NULL. */
STK_EXPORT const char *stk_topology_warnings(const stk_topology *topo);

STK_EXPORT void stk_topology_cpus_online(const stk_topology *topo, stk_cpuset *out);
/* The CPUs this process may run on (sched_getaffinity on a live system; for a recorded tree, all
 * its online CPUs unless the tree records a narrower set in proc/self/status). */
STK_EXPORT void stk_topology_allowed_cpus(const stk_topology *topo, stk_cpuset *out);

STK_EXPORT int stk_topology_num_numa_nodes(const stk_topology *topo);
/* Node at position i (0 <= i < num_numa_nodes) in id order: its id and CPUs. */
STK_EXPORT int stk_topology_numa_node_id(const stk_topology *topo, int i);
STK_EXPORT void stk_topology_numa_node_cpus(const stk_topology *topo, int i, stk_cpuset *out);
/* Memory of node i in kB (from nodeN/meminfo), 0 if unknown. */
STK_EXPORT uint64_t stk_topology_numa_node_mem_kb(const stk_topology *topo, int i);

STK_EXPORT int stk_topology_num_sockets(const stk_topology *topo);
STK_EXPORT int stk_topology_socket_id(const stk_topology *topo, int i);
STK_EXPORT void stk_topology_socket_cpus(const stk_topology *topo, int i, stk_cpuset *out);

/* Physical cores (all online hyperthreads of each), ordered by lowest CPU id. */
STK_EXPORT int stk_topology_num_cores(const stk_topology *topo);
STK_EXPORT void stk_topology_core_cpus(const stk_topology *topo, int i, stk_cpuset *out);
/* NUMA node / socket / core position of a cpu, or -1 when unknown. */
STK_EXPORT int stk_topology_cpu_numa_node(const stk_topology *topo, int cpu);
STK_EXPORT int stk_topology_cpu_socket(const stk_topology *topo, int cpu);
STK_EXPORT int stk_topology_cpu_core(const stk_topology *topo, int cpu);

typedef struct stk_gpu_info {
  int index;              /* gpu_id: position in PCI bus-id order (NVML's order) */
  char pci_bus_id[32];    /* "0000:07:00.0" */
  int numa_node_raw;      /* as sysfs says; -1 = unknown (a node that is not online is kept here too) */
  int numa_node;          /* resolved: numa_node_raw, or 0 when unknown */
  int numa_node_unknown;  /* 1 when numa_node_raw is -1 or not an online node (resolved to node 0;
                             a warning says which) */
  stk_cpuset local_cpus;  /* sysfs local_cpulist */
  uint32_t vendor, device, pci_class;
  int has_nvml;           /* 1 when NVML described the device (nvml_cpus valid) */
  char name[96];          /* NVML's name, else the driver's /proc/driver/nvidia/gpus/<bus>/information
                             "Model:"; "" when neither is there */
  char uuid[96];          /* "GPU-<uuid>" from NVML, else the same information file; "" when unknown */
  stk_cpuset nvml_cpus;   /* NVML's CPU affinity for the device */
} stk_gpu_info;

STK_EXPORT int stk_topology_num_gpus(const stk_topology *topo);
STK_EXPORT stk_status stk_topology_gpu(const stk_topology *topo, int gpu_id, stk_gpu_info *out);
/* The CPUs local to a GPU as stoker uses them: NVML's affinity when known, else sysfs
 * local_cpulist; never empty for a valid gpu_id (falls back to all online CPUs). */
STK_EXPORT stk_status stk_topology_gpu_local_cpus(const stk_topology *topo, int gpu_id, stk_cpuset *out);

/* The whole topology as JSON (the `stoker topo --json` document). *out is malloc'd; free it
 * with stk_free(). */
STK_EXPORT stk_status stk_topology_to_json(const stk_topology *topo, char **out);
/* Frees memory that a stk_ function handed to the caller. */
STK_EXPORT void stk_free(void *ptr);

/* ---- Affinity planner (pure) ---------------------------------------------------------------- */
typedef enum stk_affinity_mode {
  STK_AFFINITY_NONE = 0,
  STK_AFFINITY_SOCKET,
  STK_AFFINITY_SOCKET_SINGLE,
  STK_AFFINITY_SOCKET_SINGLE_UNIQUE,
  STK_AFFINITY_SOCKET_UNIQUE_INTERLEAVED,
  STK_AFFINITY_SOCKET_UNIQUE_CONTIGUOUS
} stk_affinity_mode;

typedef enum stk_cores_mode { STK_CORES_ALL_LOGICAL = 0, STK_CORES_SINGLE_LOGICAL } stk_cores_mode;

/* "socket_unique_contiguous" <-> STK_AFFINITY_SOCKET_UNIQUE_CONTIGUOUS, etc. */
STK_EXPORT const char *stk_affinity_mode_name(stk_affinity_mode mode);
STK_EXPORT stk_status stk_affinity_mode_parse(const char *name, stk_affinity_mode *out);
STK_EXPORT const char *stk_cores_mode_name(stk_cores_mode cores);
STK_EXPORT stk_status stk_cores_mode_parse(const char *name, stk_cores_mode *out);

typedef struct stk_plan_options {
  int nproc_per_node;             /* one process per GPU 0..nproc_per_node-1 (default 1) */
  stk_affinity_mode mode;         /* default STK_AFFINITY_SOCKET_UNIQUE_CONTIGUOUS */
  stk_cores_mode cores;           /* default STK_CORES_ALL_LOGICAL */
  int balanced;                   /* default 1 */
  int use_allowed;                /* 1: plan inside `allowed` below; 0 (default): the topology's allowed CPUs */
  stk_cpuset allowed;
} stk_plan_options;

STK_EXPORT void stk_plan_options_default(stk_plan_options *options);

typedef struct stk_plan_rank {
  int gpu;
  stk_status status;   /* STK_OK, or why this rank has no plan (message in error) */
  stk_cpuset cpus;     /* valid when status == STK_OK */
  char error[512];
} stk_plan_rank;

/* Plans ranks[0..nproc_per_node-1]. Returns STK_OK when every rank has a plan, STK_EPLAN when
 * some do not (each failing rank says why), STK_EINVAL for bad options (nproc larger than the
 * GPU count, ...; message in stk_topology_last_error is NOT set: the call is pure, so the reason
 * goes to ranks[0].error). */
STK_EXPORT stk_status stk_plan_compute(const stk_topology *topo, const stk_plan_options *options,
                                       stk_plan_rank *ranks);

/* ---- Binding -------------------------------------------------------------------------------- */
typedef enum stk_mempolicy {
  STK_MEMPOLICY_NONE = 0, /* leave the memory policy alone */
  STK_MEMPOLICY_BIND,     /* MPOL_BIND to the node */
  STK_MEMPOLICY_PREFERRED /* MPOL_PREFERRED on the node */
} stk_mempolicy;

/* Sets the CPU affinity of the calling thread (pid 0 semantics of sched_setaffinity). */
STK_EXPORT stk_status stk_bind_thread_cpus(const stk_cpuset *cpus);
/* Sets the CPU affinity of every thread of process pid (0 = this process). */
STK_EXPORT stk_status stk_bind_process_cpus(int pid, const stk_cpuset *cpus);
/* Sets the calling thread's memory policy (inherited by children and threads created after). */
STK_EXPORT stk_status stk_bind_memory(int numa_node, stk_mempolicy policy);
/* Reads back the CPUs a thread/process may run on (pid 0 = calling thread). */
STK_EXPORT stk_status stk_get_affinity(int pid, stk_cpuset *out);
/* Resident pages of process pid (0 = self) per NUMA node, from /proc/PID/numa_maps, summed like
 * `numastat -p`: pages[node] for node < max_nodes. */
STK_EXPORT stk_status stk_process_pages_per_node(int pid, uint64_t *pages, int max_nodes);

#ifdef __cplusplus
}
#endif
#endif
