/* src/topo/topo_internal.h: internals shared by the files of src/topo/ (not public API): the
 * loaded topology's layout, the safe sysfs/procfs readers, and the loaders each file provides.
 * Not on a hot path. */
#ifndef STOKER_TOPO_INTERNAL_H
#define STOKER_TOPO_INTERNAL_H

#include <limits.h>
#include <stddef.h>

#include "stoker/topology.h"

#ifndef STK_INTERNAL
#define STK_INTERNAL __attribute__((visibility("hidden")))
#endif

/* Node ids and distances above this are refused (the kernel's MAX_NUMNODES is at most 1024). */
#define STK__MAX_NODE_ID 1023

typedef struct stk__numa_node {
  int id;
  stk_cpuset cpus; /* online CPUs of the node (empty for a memory-only node) */
  uint64_t mem_kb; /* MemTotal from nodeN/meminfo, 0 when unknown or none */
  int *distance;   /* distance[j] to nodes[j] (node_count entries), from nodeN/distance; NULL when absent */
} stk__numa_node;

typedef struct stk__socket {
  int id;
  stk_cpuset cpus;
} stk__socket;

struct stk_topology {
  char root[PATH_MAX]; /* "" on the live system, else the recorded tree's directory */
  int is_live;
  char last_error[1024];
  char nvml_note[256];
  char warnings[2048]; /* one line per warning ("\n"-separated); "" when none */
  stk_cpuset online;
  stk_cpuset allowed;
  stk_cpuset possible_nodes; /* node/possible (node ids as set members); = online nodes when absent */
  stk__numa_node *nodes;     /* online nodes, id order */
  int node_count;
  stk__socket *sockets;
  int socket_count;
  stk_cpuset *cores; /* ordered by lowest cpu */
  int core_count;
  stk_gpu_info *gpus; /* PCI bus-id order */
  int gpu_count;
  int has_thread_siblings_list; /* every online cpu has topology/thread_siblings_list */
  int has_cache_info;           /* every online cpu has a Unified/Data cache in cpuN/cache */
  /* Per cpu: NUMA node id, socket position, core position, and the lowest CPU sharing its
   * highest-level data/unified cache (-1 = unknown / offline). */
  int cpu_node[STK_MAX_CPUS];
  int cpu_socket[STK_MAX_CPUS];
  int cpu_core[STK_MAX_CPUS];
  int cpu_cache_group[STK_MAX_CPUS];
};

/* ---- sysfs_read.c: every file under the root is read through these ---- */
STK_INTERNAL void stk__topo_set_error(stk_topology *topo, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Adds one warning line (kept when there is room). */
STK_INTERNAL void stk__topo_warn(stk_topology *topo, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Reads a small regular file (truncated to buf_size-1 bytes). Never opens a FIFO, device or
 * socket for reading (open with O_NONBLOCK, then fstat): those give ENOTSUP-like EINVAL.
 * Returns 0 on success, else an errno value. */
STK_INTERNAL int stk__topo_read_text(const stk_topology *topo, const char *path, char *buf, size_t buf_size);
/* Copies text into out with trailing whitespace removed and control bytes shown as \n, \t or
 * \xNN, for quoting a file's value in a one-line message. Returns out. */
STK_INTERNAL const char *stk__quote_value(const char *text, char *out, size_t out_size);
/* Reads an integer file (decimal or 0x hex, surrounding whitespace allowed). 1 on success, 0 when
 * the file is absent or unreadable, -1 when its text is not an integer (error set, value quoted). */
STK_INTERNAL int stk__topo_read_long(stk_topology *topo, const char *path, long *out);
/* Cpulist / hex-mask files: 1 on success, 0 when absent, -1 when malformed (error set). */
STK_INTERNAL int stk__topo_read_cpulist(stk_topology *topo, const char *path, stk_cpuset *out);
STK_INTERNAL int stk__topo_read_cpumask(stk_topology *topo, const char *path, stk_cpuset *out);
STK_INTERNAL uint64_t stk__topo_read_meminfo_total_kb(const stk_topology *topo, const char *path);
/* 1 when path exists under the root (any type), without opening it. */
STK_INTERNAL int stk__topo_exists(const stk_topology *topo, const char *path);

/* ---- topo_cpus.c / topo_nodes.c / topo_gpus.c: the loaders, called in this order ---- */
STK_INTERNAL stk_status stk__topo_load_cpus(stk_topology *topo);
STK_INTERNAL stk_status stk__topo_load_caches(stk_topology *topo);
STK_INTERNAL stk_status stk__topo_load_numa_nodes(stk_topology *topo);
STK_INTERNAL stk_status stk__topo_load_allowed(stk_topology *topo);
STK_INTERNAL stk_status stk__topo_load_gpus(stk_topology *topo);
/* Position of node id in topo->nodes, or -1. */
STK_INTERNAL int stk__topo_node_index(const stk_topology *topo, int node_id);

/* Fills name, uuid, nvml_cpus and has_nvml of each GPU that NVML knows (by PCI bus id), using
 * libnvidia-ml.so.1 loaded with dlopen for the duration of the call. Returns STK_ENOLIB when
 * the library or a needed symbol is absent, STK_ENODEV when nvmlInit fails (driver not loaded);
 * the GPUs are then left as sysfs described them (has_nvml = 0) and `why` says what happened.
 * GPUs NVML does not know keep has_nvml = 0 (not an error). */
STK_INTERNAL stk_status stk__nvml_describe_gpus(stk_gpu_info *gpus, int gpu_count, char *why, size_t why_size);

#endif
