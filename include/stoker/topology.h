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
STK_EXPORT void stk_cpuset_add(stk_cpuset *set, int cpu); /* ignores cpu outside [0,STK_MAX_CPUS) */
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
  int index;             /* gpu_id: position in PCI bus-id order (NVML's order) */
  char pci_bus_id[32];   /* "0000:07:00.0" */
  int numa_node_raw;     /* as sysfs says; -1 = unknown (a node that is not online is kept here too) */
  int numa_node;         /* resolved: numa_node_raw, or 0 when unknown */
  int numa_node_unknown; /* 1 when numa_node_raw is -1 or not an online node (resolved to node 0;
                             a warning says which) */
  stk_cpuset local_cpus; /* sysfs local_cpulist */
  uint32_t vendor, device, pci_class;
  int has_nvml;         /* 1 when NVML described the device (nvml_cpus valid) */
  char name[96];        /* NVML's name, else the driver's /proc/driver/nvidia/gpus/<bus>/information
                             "Model:"; "" when neither is there */
  char uuid[96];        /* "GPU-<uuid>" from NVML, else the same information file; "" when unknown */
  stk_cpuset nvml_cpus; /* NVML's CPU affinity for the device */
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
  int nproc_per_node;     /* one process per GPU 0..nproc_per_node-1 (default 1) */
  stk_affinity_mode mode; /* default STK_AFFINITY_SOCKET_UNIQUE_CONTIGUOUS */
  stk_cores_mode cores;   /* default STK_CORES_ALL_LOGICAL */
  int balanced;           /* default 1 */
  int use_allowed;        /* 1: plan inside `allowed` below; 0 (default): the topology's allowed CPUs */
  stk_cpuset allowed;
} stk_plan_options;

STK_EXPORT void stk_plan_options_default(stk_plan_options *options);

typedef struct stk_plan_rank {
  int gpu;
  stk_status status; /* STK_OK, or why this rank has no plan (message in error) */
  stk_cpuset cpus;   /* valid when status == STK_OK */
  char error[512];
  int memory_node; /* NUMA node for the rank's memory policy; -1 = leave memory alone (the
                          GPU's node is unknown or guessed, or has no memory) */
  char note[256];  /* "" or how the plan departed from the plain rule (a fallback taken) */
} stk_plan_rank;

/* Plans ranks[0..nproc_per_node-1]. Returns STK_OK when every rank has a plan, STK_EPLAN when
 * some do not (each failing rank says why), STK_EINVAL for bad options (nproc larger than the
 * GPU count, ...; message in stk_topology_last_error is NOT set: the call is pure, so the reason
 * goes to ranks[0].error). */
STK_EXPORT stk_status stk_plan_compute(const stk_topology *topo, const stk_plan_options *options, stk_plan_rank *ranks);

/* ---- Which GPU a rank uses: launcher variables and CUDA_VISIBLE_DEVICES --------------------
 * For a pipeline built with no explicit device (its device_id / shard defaults) and for bind /
 * doctor. Matching between CUDA and the topology is by PCI bus id or UUID, never by assuming
 * CUDA device i is NVML/PCI GPU i.
 *
 * Variables come from options.env (a NULL-terminated "NAME=value" array, e.g. another process's
 * /proc/PID/environ) or, when env is NULL, from this process's environment (getenv: do not call
 * while another thread changes the environment). Pure otherwise: thread-safe on a loaded
 * topology. Strings in the result are copies (no ownership questions). */
#define STK_MAX_VISIBLE_GPUS 64

typedef struct stk_rank_gpu_options {
  const char *const *env; /* NULL = getenv */
  /* CUDA's own view, when the caller has it (cudaDeviceGetPCIBusId of devices 0..count-1, in
   * CUDA order, after CUDA_VISIBLE_DEVICES): then the visible list is exactly these, matched by
   * bus id, and CUDA_VISIBLE_DEVICES / CUDA_DEVICE_ORDER are not interpreted. count 0 = unknown. */
  int cuda_device_count;
  const char *const *cuda_pci_bus_ids;
} stk_rank_gpu_options;

STK_EXPORT void stk_rank_gpu_options_default(stk_rank_gpu_options *options);

/* The GPUs CUDA shows, in CUDA device order, as topology gpu ids: gpus[0..*count-1] (room for
 * max). Without CUDA's own list: CUDA_VISIBLE_DEVICES unset = every GPU; entries are indices into
 * CUDA's enumeration (PCI bus-id order when CUDA_DEVICE_ORDER=PCI_BUS_ID or when all GPUs are the
 * same model; otherwise CUDA's fastest-first order is unknowable here: STK_ENOTSUP) or "GPU-<uuid>"
 * (the whole UUID or a prefix naming one GPU), matched against the UUIDs NVML or the driver's
 * /proc/driver/nvidia list. Like CUDA, the list ends at the first entry that names no GPU (that
 * is reported in note, not an error); "MIG-..." entries are STK_ENOTSUP. error/note (may be NULL)
 * get one line each. */
STK_EXPORT stk_status stk_visible_gpus_resolve(const stk_topology *topo, const stk_rank_gpu_options *options, int *gpus,
                                               int max, int *count, char *error, size_t error_size, char *note,
                                               size_t note_size);

typedef struct stk_rank_gpu {
  int local_rank;       /* from rank_source */
  char rank_source[40]; /* "LOCAL_RANK", "SLURM_LOCALID" or "OMPI_COMM_WORLD_LOCAL_RANK" */
  int local_world_size; /* LOCAL_WORLD_SIZE / SLURM_NTASKS_PER_NODE / OMPI_COMM_WORLD_LOCAL_SIZE; -1 unknown */
  int rank, world_size; /* RANK/WORLD_SIZE, SLURM_PROCID/SLURM_NTASKS, OMPI_COMM_WORLD_RANK/_SIZE; -1 unknown */
  int cuda_device;      /* the CUDA ordinal the rank uses: local_rank, or 0 when one GPU is visible */
  int gpu;              /* topology gpu id of that device */
  char pci_bus_id[32];
  char uuid[96];     /* "" when unknown */
  int visible_count; /* GPUs CUDA shows this rank */
  int visible_gpus[STK_MAX_VISIBLE_GPUS];
  char note[256];  /* "" or how the visible list was read (an entry CUDA would stop at) */
  char error[256]; /* why, when the call fails */
} stk_rank_gpu;

/* The launcher's local rank and local world size (torchrun's LOCAL_RANK / LOCAL_WORLD_SIZE, then
 * Slurm's, then Open MPI's; the size -1 when that launcher does not give it). STK_ENOENT: no
 * launcher local rank is set (both -1); STK_EINVAL: a variable is malformed. */
STK_EXPORT stk_status stk_launcher_local_rank(const stk_rank_gpu_options *options, int *local_rank,
                                              int *local_world_size);

/* Resolves the calling rank's GPU (or another process's, through options.env). STK_ENOENT: no
 * launcher local rank is set; STK_EINVAL: a variable is malformed, or the local rank has no
 * visible GPU; STK_ENOTSUP as above. The reason is in out->error. */
STK_EXPORT stk_status stk_rank_gpu_resolve(const stk_topology *topo, const stk_rank_gpu_options *options,
                                           stk_rank_gpu *out);

/* ---- torchrun's --numa-binding modes (pure) ---------------------------------------------------
 * PyTorch 2.9's `torchrun --numa-binding=node|socket|exclusive|core-complex` (torch/numa/
 * binding.py), computed from the loaded topology with no system call and no numactl. Local rank r
 * uses CUDA device r, that is GPU visible_gpus[r]. With STK_NUMA_RULES_TORCH every rank gets
 * exactly torch's CPU set, or fails where torch's code raises (the message says what torch would
 * do). With STK_NUMA_RULES_STOKER (default) a rank gets torch's set wherever torch's answer is
 * sound, and a sound one where it is not; docs/topology.md lists every difference. Both give a
 * memory node (the GPU's node when it is known and has memory). */
typedef enum stk_numa_binding {
  STK_NUMA_BINDING_NODE = 1,    /* "node": the allowed CPUs of the GPU's NUMA node */
  STK_NUMA_BINDING_SOCKET,      /* "socket": the allowed CPUs of every node of the GPU's socket */
  STK_NUMA_BINDING_EXCLUSIVE,   /* "exclusive": a disjoint share of the node's physical cores */
  STK_NUMA_BINDING_CORE_COMPLEX /* "core-complex": one L3 group of the node per rank */
} stk_numa_binding;

typedef enum stk_numa_rules { STK_NUMA_RULES_STOKER = 0, STK_NUMA_RULES_TORCH } stk_numa_rules;

/* "node", "socket", "exclusive", "core-complex" (parse also takes "core_complex"). */
STK_EXPORT const char *stk_numa_binding_name(stk_numa_binding mode);
STK_EXPORT stk_status stk_numa_binding_parse(const char *name, stk_numa_binding *out);
/* "stoker" / "torch". */
STK_EXPORT const char *stk_numa_rules_name(stk_numa_rules rules);
STK_EXPORT stk_status stk_numa_rules_parse(const char *name, stk_numa_rules *out);

typedef struct stk_numa_binding_options {
  stk_numa_binding mode; /* default STK_NUMA_BINDING_NODE */
  stk_numa_rules rules;  /* default STK_NUMA_RULES_STOKER */
  int nproc_per_node;    /* local ranks 0..nproc_per_node-1 (default 1) */
  int use_allowed;       /* 1: bind inside `allowed`; 0 (default): the topology's allowed CPUs */
  stk_cpuset allowed;
  /* The GPUs CUDA shows, in CUDA order (topology gpu ids, e.g. from stk_visible_gpus_resolve());
   * visible_count 0 (default) = every GPU in PCI bus-id order. */
  int visible_count;
  int visible_gpus[STK_MAX_VISIBLE_GPUS];
} stk_numa_binding_options;

STK_EXPORT void stk_numa_binding_options_default(stk_numa_binding_options *options);
/* Plans ranks[0..nproc_per_node-1] (ranks[r].gpu = visible_gpus[r]). Returns STK_OK, STK_EPLAN
 * when some rank has no binding (each says why in error), or STK_EINVAL for bad options (the
 * reason in ranks[0].error). */
STK_EXPORT stk_status stk_numa_binding_compute(const stk_topology *topo, const stk_numa_binding_options *options,
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
