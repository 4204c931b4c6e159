/* src/topo/topo_cpus.c: discovery of the CPU side: online CPUs, sockets, physical cores (any
 * number of hyperthreads), the highest-level cache groups (core complexes: CPUs sharing an L3),
 * NUMA nodes (with their distances and memory, memory-only nodes included) and the CPUs this
 * process may use. Reads through sysfs_read.c. Not on a hot path (once per load). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "topo_internal.h"

static int compare_ints(const void *a, const void *b) {
  int x = *(const int *)a, y = *(const int *)b;
  return (x > y) - (x < y);
}

/* Sockets: physical_package_id of each cpu (0 when unknown). package[] gets each cpu's id. */
static stk_status load_sockets(stk_topology *topo, int *package) {
  int *socket_ids = calloc(STK_MAX_CPUS, sizeof *socket_ids);
  if (!socket_ids) return STK_ENOMEM;
  int distinct = 0;
  char path[256];
  for (int cpu = stk_cpuset_first(&topo->online); cpu >= 0; cpu = stk_cpuset_next(&topo->online, cpu)) {
    long id = 0;
    snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu%d/topology/physical_package_id", cpu);
    int got = stk__topo_read_long(topo, path, &id);
    if (got < 0) {
      free(socket_ids);
      return STK_EPARSE;
    }
    if (got == 0 || id < 0) id = 0;
    package[cpu] = (int)id;
    int seen = 0;
    for (int s = 0; s < distinct; s++) seen |= socket_ids[s] == (int)id;
    if (!seen) socket_ids[distinct++] = (int)id;
  }
  qsort(socket_ids, (size_t)distinct, sizeof *socket_ids, compare_ints);
  topo->sockets = calloc((size_t)distinct, sizeof *topo->sockets);
  if (!topo->sockets) {
    free(socket_ids);
    return STK_ENOMEM;
  }
  topo->socket_count = distinct;
  for (int s = 0; s < distinct; s++) topo->sockets[s].id = socket_ids[s];
  for (int cpu = stk_cpuset_first(&topo->online); cpu >= 0; cpu = stk_cpuset_next(&topo->online, cpu))
    for (int s = 0; s < distinct; s++) {
      if (socket_ids[s] != package[cpu]) continue;
      stk_cpuset_add(&topo->sockets[s].cpus, cpu);
      topo->cpu_socket[cpu] = s;
    }
  free(socket_ids);
  return STK_OK;
}

/* The cpus sharing (package, die, core_id) with cpu, for kernels without sibling lists. */
static void siblings_from_core_ids(stk_topology *topo, const int *package, int cpu, stk_cpuset *siblings) {
  char path[256];
  long core_id = -1, die_id = 0;
  snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu%d/topology/core_id", cpu);
  if (stk__topo_read_long(topo, path, &core_id) != 1) core_id = -1;
  snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu%d/topology/die_id", cpu);
  if (stk__topo_read_long(topo, path, &die_id) != 1) die_id = 0;
  stk_cpuset_add(siblings, cpu);
  for (int other = stk_cpuset_next(&topo->online, cpu); core_id >= 0 && other >= 0;
       other = stk_cpuset_next(&topo->online, other)) {
    if (package[other] != package[cpu]) continue;
    long other_core = -1, other_die = 0;
    snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu%d/topology/core_id", other);
    if (stk__topo_read_long(topo, path, &other_core) != 1) other_core = -1;
    snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu%d/topology/die_id", other);
    if (stk__topo_read_long(topo, path, &other_die) != 1) other_die = 0;
    if (other_core == core_id && other_die == die_id) stk_cpuset_add(siblings, other);
  }
}

/* Cores: the hyperthread siblings of each cpu (core_cpus_list, or the older
 * thread_siblings_list), any number per core; when neither exists, cpus that share
 * (package, die, core_id). Walking cpus in ascending order orders cores by their lowest cpu. */
static stk_status load_cores(stk_topology *topo, const int *package) {
  topo->cores = calloc((size_t)stk_cpuset_count(&topo->online), sizeof *topo->cores);
  if (!topo->cores) return STK_ENOMEM;
  topo->has_thread_siblings_list = 1;
  stk_cpuset assigned;
  stk_cpuset_zero(&assigned);
  char path[256];
  for (int cpu = stk_cpuset_first(&topo->online); cpu >= 0; cpu = stk_cpuset_next(&topo->online, cpu)) {
    snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu%d/topology/thread_siblings_list", cpu);
    if (!stk__topo_exists(topo, path)) topo->has_thread_siblings_list = 0;
    if (stk_cpuset_has(&assigned, cpu)) continue;
    stk_cpuset siblings;
    stk_cpuset_zero(&siblings);
    snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu%d/topology/core_cpus_list", cpu);
    int got_siblings = stk__topo_read_cpulist(topo, path, &siblings);
    if (got_siblings == 0) {
      snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu%d/topology/thread_siblings_list", cpu);
      got_siblings = stk__topo_read_cpulist(topo, path, &siblings);
    }
    if (got_siblings < 0) return STK_EPARSE;
    if (got_siblings == 0) siblings_from_core_ids(topo, package, cpu, &siblings);
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
  return STK_OK;
}

stk_status stk__topo_load_cpus(stk_topology *topo) {
  const char *online_path = "/sys/devices/system/cpu/online";
  int got = stk__topo_read_cpulist(topo, online_path, &topo->online);
  if (got < 0) return STK_EPARSE;
  if (got == 0) {
    stk__topo_set_error(topo, "cannot read %s%s: %s (is %s a sysfs tree?)", topo->root, online_path,
                        strerror(errno ? errno : ENOENT), topo->is_live ? "/" : topo->root);
    return STK_ENOENT;
  }
  if (stk_cpuset_is_empty(&topo->online)) {
    stk__topo_set_error(topo, "%s%s lists no CPU", topo->root, online_path);
    return STK_EPARSE;
  }
  int *package = calloc(STK_MAX_CPUS, sizeof *package);
  if (!package) return STK_ENOMEM;
  stk_status status = load_sockets(topo, package);
  if (status == STK_OK) status = load_cores(topo, package);
  free(package);
  return status;
}

/* ---- caches: the core complexes ------------------------------------------------------------ */

/* The lowest cpu sharing cpu's highest-level Unified/Data cache: 1 found, 0 none, -1 malformed. */
static int max_level_cache_group(stk_topology *topo, int cpu, int *group) {
  int best_level = -1, found = 0;
  char path[256], type[64];
  for (int index = 0; index < 16; index++) {
    snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu%d/cache/index%d/type", cpu, index);
    if (stk__topo_read_text(topo, path, type, sizeof type) != 0) continue;
    if (strncmp(type, "Unified", 7) != 0 && strncmp(type, "Data", 4) != 0) continue;
    long level = 0;
    snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu%d/cache/index%d/level", cpu, index);
    int got = stk__topo_read_long(topo, path, &level);
    if (got < 0) return -1;
    if (got == 0 || level <= best_level) continue;
    stk_cpuset shared;
    snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu%d/cache/index%d/shared_cpu_list", cpu, index);
    got = stk__topo_read_cpulist(topo, path, &shared);
    if (got < 0) return -1;
    if (got == 0) continue;
    stk_cpuset_add(&shared, cpu); /* a cpu always shares its own cache */
    best_level = (int)level;
    *group = stk_cpuset_first(&shared);
    found = 1;
  }
  return found;
}

stk_status stk__topo_load_caches(stk_topology *topo) {
  topo->has_cache_info = 1;
  for (int cpu = stk_cpuset_first(&topo->online); cpu >= 0; cpu = stk_cpuset_next(&topo->online, cpu)) {
    int group = -1;
    int got = max_level_cache_group(topo, cpu, &group);
    if (got < 0) return STK_EPARSE;
    if (got == 0) topo->has_cache_info = 0;
    topo->cpu_cache_group[cpu] = got ? group : -1;
  }
  return STK_OK;
}

/* ---- NUMA nodes ------------------------------------------------------------------------------- */

int stk__topo_node_index(const stk_topology *topo, int node_id) {
  for (int i = 0; i < topo->node_count; i++)
    if (topo->nodes[i].id == node_id) return i;
  return -1;
}

/* nodeN/distance: one number per online node, in id order. Absent or malformed: no distances. */
static void load_distances(stk_topology *topo, stk__numa_node *node) {
  char path[256], text[8192];
  snprintf(path, sizeof path, "/sys/devices/system/node/node%d/distance", node->id);
  if (stk__topo_read_text(topo, path, text, sizeof text) != 0) return;
  int *distance = calloc((size_t)topo->node_count, sizeof *distance);
  if (!distance) return;
  char *cursor = text;
  for (int j = 0; j < topo->node_count; j++) {
    char *end = NULL;
    long value = strtol(cursor, &end, 10);
    if (end == cursor || value < 0 || value > 255) {
      char quoted[160];
      stk__topo_warn(topo, "%s%s: \"%s\" is not one distance per node; distances ignored", topo->root, path,
                     stk__quote_value(text, quoted, sizeof quoted));
      free(distance);
      return;
    }
    distance[j] = (int)value;
    cursor = end;
  }
  node->distance = distance;
}

static stk_status load_one_node(stk_topology *topo, stk__numa_node *node) {
  char path[256];
  snprintf(path, sizeof path, "/sys/devices/system/node/node%d/cpulist", node->id);
  int got = stk__topo_read_cpulist(topo, path, &node->cpus);
  if (got == 0) {
    snprintf(path, sizeof path, "/sys/devices/system/node/node%d/cpumap", node->id);
    got = stk__topo_read_cpumask(topo, path, &node->cpus);
  }
  if (got < 0) return STK_EPARSE;
  stk_cpuset_and(&node->cpus, &node->cpus, &topo->online);
  snprintf(path, sizeof path, "/sys/devices/system/node/node%d/meminfo", node->id);
  node->mem_kb = stk__topo_read_meminfo_total_kb(topo, path);
  return STK_OK;
}

stk_status stk__topo_load_numa_nodes(stk_topology *topo) {
  stk_cpuset node_ids;
  int got = stk__topo_read_cpulist(topo, "/sys/devices/system/node/online", &node_ids);
  if (got < 0) return STK_EPARSE;
  if (got == 0 || stk_cpuset_is_empty(&node_ids)) {
    /* A kernel without NUMA support: one node holding every cpu and all memory. */
    topo->nodes = calloc(1, sizeof *topo->nodes);
    if (!topo->nodes) return STK_ENOMEM;
    topo->node_count = 1;
    topo->nodes[0].cpus = topo->online;
    topo->nodes[0].mem_kb = stk__topo_read_meminfo_total_kb(topo, "/proc/meminfo");
    stk_cpuset_add(&topo->possible_nodes, 0);
  } else {
    if (stk_cpuset_first(&node_ids) >= 0 && !stk_cpuset_is_empty(&node_ids)) {
      int last = -1;
      for (int id = stk_cpuset_first(&node_ids); id >= 0; id = stk_cpuset_next(&node_ids, id)) last = id;
      if (last > STK__MAX_NODE_ID) {
        stk__topo_set_error(topo, "%s/sys/devices/system/node/online: node %d is above the kernel's limit of %d",
                            topo->root, last, STK__MAX_NODE_ID);
        return STK_EPARSE;
      }
    }
    topo->nodes = calloc((size_t)stk_cpuset_count(&node_ids), sizeof *topo->nodes);
    if (!topo->nodes) return STK_ENOMEM;
    for (int id = stk_cpuset_first(&node_ids); id >= 0; id = stk_cpuset_next(&node_ids, id)) {
      stk__numa_node *node = &topo->nodes[topo->node_count++];
      node->id = id;
      stk_status status = load_one_node(topo, node);
      if (status != STK_OK) return status;
    }
    for (int i = 0; i < topo->node_count; i++) load_distances(topo, &topo->nodes[i]);
    got = stk__topo_read_cpulist(topo, "/sys/devices/system/node/possible", &topo->possible_nodes);
    if (got < 0) return STK_EPARSE;
    if (got == 0) topo->possible_nodes = node_ids;
  }
  for (int i = 0; i < topo->node_count; i++)
    for (int cpu = stk_cpuset_first(&topo->nodes[i].cpus); cpu >= 0; cpu = stk_cpuset_next(&topo->nodes[i].cpus, cpu))
      topo->cpu_node[cpu] = topo->nodes[i].id;
  return STK_OK;
}

/* ---- allowed cpus --------------------------------------------------------------------------- */

stk_status stk__topo_load_allowed(stk_topology *topo) {
  if (topo->is_live) {
    stk_status status = stk_get_affinity(0, &topo->allowed);
    if (status != STK_OK) stk__topo_set_error(topo, "sched_getaffinity failed: %s", stk_strerror(status));
    return status;
  }
  topo->allowed = topo->online;
  char *status_text = malloc(65536);
  if (!status_text) return STK_ENOMEM;
  stk_status result = STK_OK;
  const char *key = NULL;
  if (stk__topo_read_text(topo, "/proc/self/status", status_text, 65536) == 0)
    key = strstr(status_text, "Cpus_allowed_list:");
  if (key) {
    key += strlen("Cpus_allowed_list:");
    size_t len = strcspn(key, "\n");
    char list[16384];
    if (len >= sizeof list) len = sizeof list - 1;
    memcpy(list, key, len);
    list[len] = '\0';
    stk_cpuset recorded;
    char err[256];
    if (stk_cpuset_parse(list, &recorded, err, sizeof err) != STK_OK) {
      stk__topo_set_error(topo, "%s/proc/self/status: Cpus_allowed_list: %s", topo->root, err);
      result = STK_EPARSE;
    } else {
      stk_cpuset_and(&topo->allowed, &recorded, &topo->online);
    }
  }
  free(status_text);
  return result;
}
