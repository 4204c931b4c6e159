/* src/topo/topology.c: the stk_topology handle: lifecycle, the load that runs the discovery
 * steps (topo_cpus.c, topo_gpus.c, NVML in nvml.c) over the live system or a recorded copy of it
 * (options.sysfs_root), and the read-only queries. A plain reader of the files, not hwloc: see
 * docs/topology.md for why. Runs once per load; not on a hot path. */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "stoker/topology.h"
#include "topo_internal.h"

void stk_free(void *ptr) { free(ptr); }

void stk_topology_options_default(stk_topology_options *options) {
  memset(options, 0, sizeof *options);
  options->sysfs_root = NULL;
  options->use_nvml = 1;
}

static void reset(stk_topology *topo) {
  for (int i = 0; topo->nodes && i < topo->node_count; i++) free(topo->nodes[i].distance);
  free(topo->nodes);
  free(topo->sockets);
  free(topo->cores);
  free(topo->gpus);
  topo->nodes = NULL;
  topo->sockets = NULL;
  topo->cores = NULL;
  topo->gpus = NULL;
  topo->node_count = topo->socket_count = topo->core_count = topo->gpu_count = 0;
  topo->has_thread_siblings_list = topo->has_cache_info = 0;
  stk_cpuset_zero(&topo->online);
  stk_cpuset_zero(&topo->allowed);
  stk_cpuset_zero(&topo->possible_nodes);
  for (int cpu = 0; cpu < STK_MAX_CPUS; cpu++)
    topo->cpu_node[cpu] = topo->cpu_socket[cpu] = topo->cpu_core[cpu] = topo->cpu_cache_group[cpu] = -1;
  topo->nvml_note[0] = '\0';
  topo->warnings[0] = '\0';
}

stk_status stk_topology_new(stk_topology **out) {
  if (!out) return STK_EINVAL;
  stk_topology *topo = calloc(1, sizeof *topo);
  if (!topo) return STK_ENOMEM;
  reset(topo);
  *out = topo;
  return STK_OK;
}

void stk_topology_destroy(stk_topology *topo) {
  if (!topo) return;
  reset(topo);
  free(topo);
}

const char *stk_topology_last_error(const stk_topology *topo) { return topo ? topo->last_error : "NULL topology"; }
const char *stk_topology_warnings(const stk_topology *topo) { return topo ? topo->warnings : ""; }

/* ---- load ------------------------------------------------------------------------------------ */

stk_status stk_topology_load(stk_topology *topo, const stk_topology_options *options) {
  if (!topo) return STK_EINVAL;
  stk_topology_options defaults;
  stk_topology_options_default(&defaults);
  if (!options) options = &defaults;
  reset(topo);
  topo->last_error[0] = '\0';
  const char *root = options->sysfs_root;
  topo->is_live = !root || !*root || strcmp(root, "/") == 0;
  if (topo->is_live) {
    topo->root[0] = '\0';
  } else {
    size_t len = strlen(root);
    while (len > 1 && root[len - 1] == '/') len--; /* "dir/" and "dir" name the same tree */
    if (len >= sizeof topo->root) {
      stk__topo_set_error(topo, "sysfs root path is too long (%zu bytes)", len);
      return STK_EINVAL;
    }
    memcpy(topo->root, root, len);
    topo->root[len] = '\0';
    DIR *dir = opendir(topo->root);
    if (!dir) {
      stk__topo_set_error(topo, "cannot open sysfs root %s: %s", topo->root, strerror(errno));
      return errno == ENOENT ? STK_ENOENT : STK_EIO;
    }
    closedir(dir);
  }
  stk_status status = stk__topo_load_cpus(topo);
  if (status == STK_OK) status = stk__topo_load_caches(topo);
  if (status == STK_OK) status = stk__topo_load_numa_nodes(topo);
  if (status == STK_OK) status = stk__topo_load_allowed(topo);
  if (status == STK_OK) status = stk__topo_load_gpus(topo);
  if (status == STK_ENOMEM && !topo->last_error[0])
    stk__topo_set_error(topo, "out of memory while reading the topology");
  if (status != STK_OK) {
    char saved[sizeof topo->last_error];
    memcpy(saved, topo->last_error, sizeof saved);
    reset(topo);
    memcpy(topo->last_error, saved, sizeof saved);
    return status;
  }
  if (topo->is_live && options->use_nvml && topo->gpu_count > 0)
    stk__nvml_describe_gpus(topo->gpus, topo->gpu_count, topo->nvml_note, sizeof topo->nvml_note);
  return STK_OK;
}

/* ---- queries --------------------------------------------------------------------------------- */

void stk_topology_cpus_online(const stk_topology *topo, stk_cpuset *out) { *out = topo->online; }
void stk_topology_allowed_cpus(const stk_topology *topo, stk_cpuset *out) { *out = topo->allowed; }

int stk_topology_num_numa_nodes(const stk_topology *topo) { return topo->node_count; }
int stk_topology_numa_node_id(const stk_topology *topo, int i) {
  return i >= 0 && i < topo->node_count ? topo->nodes[i].id : -1;
}
void stk_topology_numa_node_cpus(const stk_topology *topo, int i, stk_cpuset *out) {
  if (i >= 0 && i < topo->node_count) *out = topo->nodes[i].cpus;
  else stk_cpuset_zero(out);
}
uint64_t stk_topology_numa_node_mem_kb(const stk_topology *topo, int i) {
  return i >= 0 && i < topo->node_count ? topo->nodes[i].mem_kb : 0;
}

int stk_topology_num_sockets(const stk_topology *topo) { return topo->socket_count; }
int stk_topology_socket_id(const stk_topology *topo, int i) {
  return i >= 0 && i < topo->socket_count ? topo->sockets[i].id : -1;
}
void stk_topology_socket_cpus(const stk_topology *topo, int i, stk_cpuset *out) {
  if (i >= 0 && i < topo->socket_count) *out = topo->sockets[i].cpus;
  else stk_cpuset_zero(out);
}

int stk_topology_num_cores(const stk_topology *topo) { return topo->core_count; }
void stk_topology_core_cpus(const stk_topology *topo, int i, stk_cpuset *out) {
  if (i >= 0 && i < topo->core_count) *out = topo->cores[i];
  else stk_cpuset_zero(out);
}

int stk_topology_cpu_numa_node(const stk_topology *topo, int cpu) {
  return cpu >= 0 && cpu < STK_MAX_CPUS ? topo->cpu_node[cpu] : -1;
}
int stk_topology_cpu_socket(const stk_topology *topo, int cpu) {
  if (cpu < 0 || cpu >= STK_MAX_CPUS || topo->cpu_socket[cpu] < 0) return -1;
  return topo->sockets[topo->cpu_socket[cpu]].id;
}
int stk_topology_cpu_core(const stk_topology *topo, int cpu) {
  return cpu >= 0 && cpu < STK_MAX_CPUS ? topo->cpu_core[cpu] : -1;
}

int stk_topology_num_gpus(const stk_topology *topo) { return topo->gpu_count; }

stk_status stk_topology_gpu(const stk_topology *topo, int gpu_id, stk_gpu_info *out) {
  if (!topo || !out || gpu_id < 0 || gpu_id >= topo->gpu_count) return STK_ENODEV;
  *out = topo->gpus[gpu_id];
  return STK_OK;
}

stk_status stk_topology_gpu_local_cpus(const stk_topology *topo, int gpu_id, stk_cpuset *out) {
  if (!topo || !out || gpu_id < 0 || gpu_id >= topo->gpu_count) return STK_ENODEV;
  const stk_gpu_info *gpu = &topo->gpus[gpu_id];
  stk_cpuset local = gpu->has_nvml && !stk_cpuset_is_empty(&gpu->nvml_cpus) ? gpu->nvml_cpus : gpu->local_cpus;
  stk_cpuset_and(&local, &local, &topo->online);
  *out = stk_cpuset_is_empty(&local) ? topo->online : local;
  return STK_OK;
}
