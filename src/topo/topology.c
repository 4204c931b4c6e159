/* src/topo/topology.c: discovery of CPUs, hyperthread cores, sockets, NUMA nodes and NVIDIA GPUs
 * by reading sysfs/procfs files, from the live system or from a recorded copy of them
 * (options.sysfs_root), plus the queries and the JSON form of `stoker topo --json`.
 * A plain reader of the files, not hwloc: see docs/topology.md for why. Runs once per load;
 * not on a hot path. */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stoker/topology.h"
#include "topo_internal.h"

typedef struct numa_node {
  int id;
  stk_cpuset cpus;
  uint64_t mem_kb;
} numa_node;

typedef struct socket_info {
  int id;
  stk_cpuset cpus;
} socket_info;

struct stk_topology {
  char root[PATH_MAX]; /* "" on the live system, else the recorded tree's directory */
  int is_live;
  char last_error[1024];
  char nvml_note[256];
  stk_cpuset online;
  stk_cpuset allowed;
  numa_node *nodes;
  int node_count;
  socket_info *sockets;
  int socket_count;
  stk_cpuset *cores; /* ordered by lowest cpu */
  int core_count;
  stk_gpu_info *gpus; /* PCI bus-id order */
  int gpu_count;
  /* Per cpu: NUMA node id, socket position, core position (-1 = unknown / offline). */
  int cpu_node[STK_MAX_CPUS];
  int cpu_socket[STK_MAX_CPUS];
  int cpu_core[STK_MAX_CPUS];
};

void stk_free(void *ptr) { free(ptr); }

void stk_topology_options_default(stk_topology_options *options) {
  memset(options, 0, sizeof *options);
  options->sysfs_root = NULL;
  options->use_nvml = 1;
}

static void set_error(stk_topology *topo, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void set_error(stk_topology *topo, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(topo->last_error, sizeof topo->last_error, fmt, ap);
  va_end(ap);
}

static void reset(stk_topology *topo) {
  free(topo->nodes);
  free(topo->sockets);
  free(topo->cores);
  free(topo->gpus);
  topo->nodes = NULL;
  topo->sockets = NULL;
  topo->cores = NULL;
  topo->gpus = NULL;
  topo->node_count = topo->socket_count = topo->core_count = topo->gpu_count = 0;
  stk_cpuset_zero(&topo->online);
  stk_cpuset_zero(&topo->allowed);
  for (int cpu = 0; cpu < STK_MAX_CPUS; cpu++) topo->cpu_node[cpu] = topo->cpu_socket[cpu] = topo->cpu_core[cpu] = -1;
  topo->nvml_note[0] = '\0';
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

/* ---- reading files under the root ------------------------------------------------------- */

static void full_path(const stk_topology *topo, const char *path, char *out, size_t out_size) {
  snprintf(out, out_size, "%s%s", topo->root, path);
}

/* Reads a small text file (truncated to buf_size-1 bytes); 0 on success, else errno. */
static int read_text(const stk_topology *topo, const char *path, char *buf, size_t buf_size) {
  char full[PATH_MAX + 256];
  full_path(topo, path, full, sizeof full);
  FILE *file = fopen(full, "r");
  if (!file) return errno ? errno : EIO;
  size_t len = fread(buf, 1, buf_size - 1, file);
  int failed = ferror(file);
  fclose(file);
  if (failed) return EIO;
  buf[len] = '\0';
  return 0;
}

/* Reads an integer file (decimal or 0x hex); 1 on success. */
static int read_long(const stk_topology *topo, const char *path, long *out) {
  char buf[64];
  if (read_text(topo, path, buf, sizeof buf) != 0) return 0;
  char *end = NULL;
  errno = 0;
  long value = strtol(buf, &end, 0);
  if (end == buf || errno) return 0;
  while (*end && isspace((unsigned char)*end)) end++;
  if (*end) return 0;
  *out = value;
  return 1;
}

/* Reads a cpulist file: 1 on success, 0 when absent, -1 when malformed (error set). */
static int read_cpulist(stk_topology *topo, const char *path, stk_cpuset *out) {
  char buf[16384];
  if (read_text(topo, path, buf, sizeof buf) != 0) return 0;
  char err[256];
  if (stk_cpuset_parse(buf, out, err, sizeof err) != STK_OK) {
    set_error(topo, "%s%s: %s", topo->root, path, err);
    return -1;
  }
  return 1;
}

static int read_cpumask(stk_topology *topo, const char *path, stk_cpuset *out) {
  char buf[4096];
  if (read_text(topo, path, buf, sizeof buf) != 0) return 0;
  char err[256];
  if (stk_cpuset_parse_mask(buf, out, err, sizeof err) != STK_OK) {
    set_error(topo, "%s%s: %s", topo->root, path, err);
    return -1;
  }
  return 1;
}

/* ---- CPUs, cores, sockets ----------------------------------------------------------------- */

static int compare_ints(const void *a, const void *b) {
  int x = *(const int *)a, y = *(const int *)b;
  return (x > y) - (x < y);
}

static stk_status load_cpus(stk_topology *topo) {
  const char *online_path = "/sys/devices/system/cpu/online";
  int got = read_cpulist(topo, online_path, &topo->online);
  if (got < 0) return STK_EPARSE;
  if (got == 0) {
    set_error(topo, "cannot read %s%s: %s (is %s a sysfs tree?)", topo->root, online_path, strerror(errno ? errno : ENOENT),
              topo->is_live ? "/" : topo->root);
    return STK_ENOENT;
  }
  if (stk_cpuset_is_empty(&topo->online)) {
    set_error(topo, "%s%s lists no CPU", topo->root, online_path);
    return STK_EPARSE;
  }

  /* Sockets: physical_package_id of each cpu (0 when unknown). */
  int *package = calloc(STK_MAX_CPUS, sizeof *package);
  int *socket_ids = calloc(STK_MAX_CPUS, sizeof *socket_ids);
  if (!package || !socket_ids) {
    free(package);
    free(socket_ids);
    return STK_ENOMEM;
  }
  int distinct = 0;
  char path[256];
  for (int cpu = stk_cpuset_first(&topo->online); cpu >= 0; cpu = stk_cpuset_next(&topo->online, cpu)) {
    long id = 0;
    snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu%d/topology/physical_package_id", cpu);
    if (!read_long(topo, path, &id) || id < 0) id = 0;
    package[cpu] = (int)id;
    int seen = 0;
    for (int s = 0; s < distinct; s++) seen |= socket_ids[s] == (int)id;
    if (!seen) socket_ids[distinct++] = (int)id;
  }
  qsort(socket_ids, (size_t)distinct, sizeof *socket_ids, compare_ints);
  topo->sockets = calloc((size_t)distinct, sizeof *topo->sockets);
  if (!topo->sockets) {
    free(package);
    free(socket_ids);
    return STK_ENOMEM;
  }
  topo->socket_count = distinct;
  for (int s = 0; s < distinct; s++) topo->sockets[s].id = socket_ids[s];
  for (int cpu = stk_cpuset_first(&topo->online); cpu >= 0; cpu = stk_cpuset_next(&topo->online, cpu)) {
    for (int s = 0; s < distinct; s++) {
      if (socket_ids[s] != package[cpu]) continue;
      stk_cpuset_add(&topo->sockets[s].cpus, cpu);
      topo->cpu_socket[cpu] = s;
    }
  }
  free(socket_ids);

  /* Cores: the hyperthread siblings of each cpu (core_cpus_list, or the older
   * thread_siblings_list), any number per core; when neither exists, cpus that share
   * (package, die, core_id) are one core. Walking cpus in ascending order orders cores by their
   * lowest cpu. */
  int online_count = stk_cpuset_count(&topo->online);
  topo->cores = calloc((size_t)online_count, sizeof *topo->cores);
  if (!topo->cores) {
    free(package);
    return STK_ENOMEM;
  }
  stk_cpuset assigned;
  stk_cpuset_zero(&assigned);
  for (int cpu = stk_cpuset_first(&topo->online); cpu >= 0; cpu = stk_cpuset_next(&topo->online, cpu)) {
    if (stk_cpuset_has(&assigned, cpu)) continue;
    stk_cpuset siblings;
    stk_cpuset_zero(&siblings);
    snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu%d/topology/core_cpus_list", cpu);
    int got_siblings = read_cpulist(topo, path, &siblings);
    if (got_siblings == 0) {
      snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu%d/topology/thread_siblings_list", cpu);
      got_siblings = read_cpulist(topo, path, &siblings);
    }
    if (got_siblings < 0) {
      free(package);
      return STK_EPARSE;
    }
    if (got_siblings == 0) {
      long core_id = -1, die_id = 0, other_core = -1, other_die = 0;
      snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu%d/topology/core_id", cpu);
      read_long(topo, path, &core_id);
      snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu%d/topology/die_id", cpu);
      read_long(topo, path, &die_id);
      stk_cpuset_add(&siblings, cpu);
      for (int other = stk_cpuset_next(&topo->online, cpu); core_id >= 0 && other >= 0;
           other = stk_cpuset_next(&topo->online, other)) {
        if (package[other] != package[cpu]) continue;
        other_core = -1;
        other_die = 0;
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu%d/topology/core_id", other);
        read_long(topo, path, &other_core);
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu%d/topology/die_id", other);
        read_long(topo, path, &other_die);
        if (other_core == core_id && other_die == die_id) stk_cpuset_add(&siblings, other);
      }
    }
    /* Only online cpus not already placed; the cpu itself always belongs to its core. */
    stk_cpuset_and(&siblings, &siblings, &topo->online);
    stk_cpuset_andnot(&siblings, &siblings, &assigned);
    stk_cpuset_add(&siblings, cpu);
    int core_index = topo->core_count++;
    topo->cores[core_index] = siblings;
    stk_cpuset_or(&assigned, &assigned, &siblings);
    for (int member = stk_cpuset_first(&siblings); member >= 0; member = stk_cpuset_next(&siblings, member))
      topo->cpu_core[member] = core_index;
  }
  free(package);
  return STK_OK;
}

/* ---- NUMA nodes ----------------------------------------------------------------------------- */

static uint64_t read_meminfo_total_kb(const stk_topology *topo, const char *path) {
  char *text = malloc(65536);
  if (!text) return 0;
  uint64_t total = 0;
  if (read_text(topo, path, text, 65536) == 0) {
    const char *key = strstr(text, "MemTotal:");
    if (key) total = strtoull(key + strlen("MemTotal:"), NULL, 10);
  }
  free(text);
  return total;
}

static stk_status load_numa_nodes(stk_topology *topo) {
  stk_cpuset node_ids;
  int got = read_cpulist(topo, "/sys/devices/system/node/online", &node_ids);
  if (got < 0) return STK_EPARSE;
  if (got == 0 || stk_cpuset_is_empty(&node_ids)) {
    /* A kernel without NUMA support: one node holding every cpu and all memory. */
    topo->nodes = calloc(1, sizeof *topo->nodes);
    if (!topo->nodes) return STK_ENOMEM;
    topo->node_count = 1;
    topo->nodes[0].id = 0;
    topo->nodes[0].cpus = topo->online;
    topo->nodes[0].mem_kb = read_meminfo_total_kb(topo, "/proc/meminfo");
  } else {
    int count = stk_cpuset_count(&node_ids);
    topo->nodes = calloc((size_t)count, sizeof *topo->nodes);
    if (!topo->nodes) return STK_ENOMEM;
    char path[256];
    for (int id = stk_cpuset_first(&node_ids); id >= 0; id = stk_cpuset_next(&node_ids, id)) {
      numa_node *node = &topo->nodes[topo->node_count++];
      node->id = id;
      snprintf(path, sizeof path, "/sys/devices/system/node/node%d/cpulist", id);
      int got_cpus = read_cpulist(topo, path, &node->cpus);
      if (got_cpus == 0) {
        snprintf(path, sizeof path, "/sys/devices/system/node/node%d/cpumap", id);
        got_cpus = read_cpumask(topo, path, &node->cpus);
      }
      if (got_cpus < 0) return STK_EPARSE;
      stk_cpuset_and(&node->cpus, &node->cpus, &topo->online);
      snprintf(path, sizeof path, "/sys/devices/system/node/node%d/meminfo", id);
      node->mem_kb = read_meminfo_total_kb(topo, path);
    }
  }
  for (int i = 0; i < topo->node_count; i++)
    for (int cpu = stk_cpuset_first(&topo->nodes[i].cpus); cpu >= 0; cpu = stk_cpuset_next(&topo->nodes[i].cpus, cpu))
      topo->cpu_node[cpu] = topo->nodes[i].id;
  return STK_OK;
}

/* ---- allowed cpus ------------------------------------------------------------------------- */

static stk_status load_allowed(stk_topology *topo) {
  if (topo->is_live) {
    stk_status status = stk_get_affinity(0, &topo->allowed);
    if (status != STK_OK) {
      set_error(topo, "sched_getaffinity failed: %s", stk_strerror(status));
      return status;
    }
    return STK_OK;
  }
  topo->allowed = topo->online;
  char *status_text = malloc(65536);
  if (!status_text) return STK_ENOMEM;
  if (read_text(topo, "/proc/self/status", status_text, 65536) == 0) {
    const char *key = strstr(status_text, "Cpus_allowed_list:");
    if (key) {
      key += strlen("Cpus_allowed_list:");
      const char *end = strchr(key, '\n');
      size_t len = end ? (size_t)(end - key) : strlen(key);
      char list[16384];
      if (len >= sizeof list) len = sizeof list - 1;
      memcpy(list, key, len);
      list[len] = '\0';
      stk_cpuset recorded;
      char err[256];
      if (stk_cpuset_parse(list, &recorded, err, sizeof err) != STK_OK) {
        set_error(topo, "%s/proc/self/status: Cpus_allowed_list: %s", topo->root, err);
        free(status_text);
        return STK_EPARSE;
      }
      stk_cpuset_and(&topo->allowed, &recorded, &topo->online);
    }
  }
  free(status_text);
  return STK_OK;
}

/* ---- GPUs ----------------------------------------------------------------------------------- */

static int compare_gpus_by_bus_id(const void *a, const void *b) {
  return strcmp(((const stk_gpu_info *)a)->pci_bus_id, ((const stk_gpu_info *)b)->pci_bus_id);
}

static int is_nvidia_gpu(long vendor, long pci_class) {
  long base_and_sub = (pci_class >> 8) & 0xffff;
  return vendor == 0x10de && (base_and_sub == 0x0300 || base_and_sub == 0x0302);
}

static stk_status load_gpus(stk_topology *topo) {
  char dir_path[PATH_MAX + 64];
  full_path(topo, "/sys/bus/pci/devices", dir_path, sizeof dir_path);
  DIR *dir = opendir(dir_path);
  if (!dir) return STK_OK; /* no PCI bus (or none recorded): no GPU */
  int capacity = 0;
  struct dirent *entry;
  stk_status status = STK_OK;
  char path[512];
  while ((entry = readdir(dir)) != NULL) {
    const char *bus_id = entry->d_name;
    if (bus_id[0] == '.' || strlen(bus_id) >= sizeof topo->gpus[0].pci_bus_id) continue;
    long vendor = 0, pci_class = 0, device = 0;
    snprintf(path, sizeof path, "/sys/bus/pci/devices/%s/vendor", bus_id);
    if (!read_long(topo, path, &vendor)) continue;
    snprintf(path, sizeof path, "/sys/bus/pci/devices/%s/class", bus_id);
    if (!read_long(topo, path, &pci_class) || !is_nvidia_gpu(vendor, pci_class)) continue;
    snprintf(path, sizeof path, "/sys/bus/pci/devices/%s/device", bus_id);
    read_long(topo, path, &device);
    if (topo->gpu_count == capacity) {
      int bigger = capacity ? capacity * 2 : 8;
      stk_gpu_info *grown = realloc(topo->gpus, (size_t)bigger * sizeof *grown);
      if (!grown) {
        status = STK_ENOMEM;
        break;
      }
      topo->gpus = grown;
      capacity = bigger;
    }
    stk_gpu_info *gpu = &topo->gpus[topo->gpu_count++];
    memset(gpu, 0, sizeof *gpu);
    snprintf(gpu->pci_bus_id, sizeof gpu->pci_bus_id, "%s", bus_id);
    for (char *c = gpu->pci_bus_id; *c; c++) *c = (char)tolower((unsigned char)*c);
    gpu->vendor = (uint32_t)vendor;
    gpu->device = (uint32_t)device;
    gpu->pci_class = (uint32_t)pci_class;
    long numa = -1;
    snprintf(path, sizeof path, "/sys/bus/pci/devices/%s/numa_node", bus_id);
    if (!read_long(topo, path, &numa)) numa = -1;
    gpu->numa_node_raw = numa < 0 ? -1 : (int)numa;
    gpu->numa_node_unknown = gpu->numa_node_raw < 0;
    gpu->numa_node = gpu->numa_node_unknown ? 0 : gpu->numa_node_raw;
    snprintf(path, sizeof path, "/sys/bus/pci/devices/%s/local_cpulist", bus_id);
    int got = read_cpulist(topo, path, &gpu->local_cpus);
    if (got == 0) {
      snprintf(path, sizeof path, "/sys/bus/pci/devices/%s/local_cpus", bus_id);
      got = read_cpumask(topo, path, &gpu->local_cpus);
    }
    if (got < 0) {
      status = STK_EPARSE;
      break;
    }
  }
  closedir(dir);
  if (status == STK_ENOMEM) set_error(topo, "out of memory listing PCI devices");
  if (status != STK_OK) return status;
  qsort(topo->gpus, (size_t)topo->gpu_count, sizeof *topo->gpus, compare_gpus_by_bus_id);
  for (int g = 0; g < topo->gpu_count; g++) topo->gpus[g].index = g;
  return STK_OK;
}

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
      set_error(topo, "sysfs root path is too long (%zu bytes)", len);
      return STK_EINVAL;
    }
    memcpy(topo->root, root, len);
    topo->root[len] = '\0';
    DIR *dir = opendir(topo->root);
    if (!dir) {
      set_error(topo, "cannot open sysfs root %s: %s", topo->root, strerror(errno));
      return errno == ENOENT ? STK_ENOENT : STK_EIO;
    }
    closedir(dir);
  }
  stk_status status = load_cpus(topo);
  if (status == STK_OK) status = load_numa_nodes(topo);
  if (status == STK_OK) status = load_allowed(topo);
  if (status == STK_OK) status = load_gpus(topo);
  if (status == STK_ENOMEM && !topo->last_error[0]) set_error(topo, "out of memory while reading the topology");
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
  if (i >= 0 && i < topo->node_count)
    *out = topo->nodes[i].cpus;
  else
    stk_cpuset_zero(out);
}
uint64_t stk_topology_numa_node_mem_kb(const stk_topology *topo, int i) {
  return i >= 0 && i < topo->node_count ? topo->nodes[i].mem_kb : 0;
}

int stk_topology_num_sockets(const stk_topology *topo) { return topo->socket_count; }
int stk_topology_socket_id(const stk_topology *topo, int i) {
  return i >= 0 && i < topo->socket_count ? topo->sockets[i].id : -1;
}
void stk_topology_socket_cpus(const stk_topology *topo, int i, stk_cpuset *out) {
  if (i >= 0 && i < topo->socket_count)
    *out = topo->sockets[i].cpus;
  else
    stk_cpuset_zero(out);
}

int stk_topology_num_cores(const stk_topology *topo) { return topo->core_count; }
void stk_topology_core_cpus(const stk_topology *topo, int i, stk_cpuset *out) {
  if (i >= 0 && i < topo->core_count)
    *out = topo->cores[i];
  else
    stk_cpuset_zero(out);
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

/* ---- JSON ------------------------------------------------------------------------------------ */

typedef struct json_buffer {
  char *data;
  size_t len, cap;
  int failed;
} json_buffer;

static void json_append(json_buffer *json, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void json_append(json_buffer *json, const char *fmt, ...) {
  if (json->failed) return;
  for (;;) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(json->data + json->len, json->cap - json->len, fmt, ap);
    va_end(ap);
    if (n < 0) {
      json->failed = 1;
      return;
    }
    if ((size_t)n < json->cap - json->len) {
      json->len += (size_t)n;
      return;
    }
    size_t bigger = (json->cap + (size_t)n + 1) * 2;
    char *grown = realloc(json->data, bigger);
    if (!grown) {
      json->failed = 1;
      return;
    }
    json->data = grown;
    json->cap = bigger;
  }
}

static void json_cpus(json_buffer *json, const stk_cpuset *cpus) {
  json_append(json, "[");
  const char *separator = "";
  for (int cpu = stk_cpuset_first(cpus); cpu >= 0; cpu = stk_cpuset_next(cpus, cpu)) {
    json_append(json, "%s%d", separator, cpu);
    separator = ",";
  }
  json_append(json, "]");
}

/* Writes s as a JSON string (escaping quotes, backslashes and control bytes). */
static void json_string(json_buffer *json, const char *s) {
  json_append(json, "\"");
  for (; *s; s++) {
    unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\')
      json_append(json, "\\%c", c);
    else if (c < 0x20)
      json_append(json, "\\u%04x", c);
    else
      json_append(json, "%c", c);
  }
  json_append(json, "\"");
}

stk_status stk_topology_to_json(const stk_topology *topo, char **out) {
  if (!topo || !out) return STK_EINVAL;
  json_buffer json = {malloc(4096), 0, 4096, 0};
  if (!json.data) return STK_ENOMEM;
  json_append(&json, "{\"cpus_online\":");
  json_cpus(&json, &topo->online);
  json_append(&json, ",\"allowed_cpus\":");
  json_cpus(&json, &topo->allowed);
  json_append(&json, ",\"numa_nodes\":[");
  for (int i = 0; i < topo->node_count; i++) {
    json_append(&json, "%s{\"id\":%d,\"cpus\":", i ? "," : "", topo->nodes[i].id);
    json_cpus(&json, &topo->nodes[i].cpus);
    json_append(&json, "}");
  }
  json_append(&json, "],\"sockets\":[");
  for (int i = 0; i < topo->socket_count; i++) {
    json_append(&json, "%s{\"id\":%d,\"cpus\":", i ? "," : "", topo->sockets[i].id);
    json_cpus(&json, &topo->sockets[i].cpus);
    json_append(&json, "}");
  }
  json_append(&json, "],\"gpus\":[");
  for (int g = 0; g < topo->gpu_count; g++) {
    const stk_gpu_info *gpu = &topo->gpus[g];
    json_append(&json, "%s{\"index\":%d,\"pci_bus_id\":", g ? "," : "", gpu->index);
    json_string(&json, gpu->pci_bus_id);
    json_append(&json, ",\"numa_node_raw\":%d,\"numa_node\":%d,\"local_cpus\":", gpu->numa_node_raw, gpu->numa_node);
    json_cpus(&json, &gpu->local_cpus);
    if (gpu->has_nvml) {
      json_append(&json, ",\"name\":");
      json_string(&json, gpu->name);
      json_append(&json, ",\"uuid\":");
      json_string(&json, gpu->uuid);
      json_append(&json, ",\"nvml_cpus\":");
      json_cpus(&json, &gpu->nvml_cpus);
    }
    json_append(&json, "}");
  }
  json_append(&json, "]}");
  if (json.failed) {
    free(json.data);
    return STK_ENOMEM;
  }
  *out = json.data;
  return STK_OK;
}
