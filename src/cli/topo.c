/* src/cli/topo.c: `stoker topo`: the machine at a glance (GPUs with bus id, NUMA node and local
 * CPUs; NUMA nodes; sockets; cores x threads; the CPUs this process may use), or the same as
 * JSON. Uses only the public API. Not on a hot path. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stoker/stoker.h"
#include "commands.h"
#include "plan_args.h"

static void usage(FILE *out) {
  fprintf(out,
          "usage: stoker topo [--json] [--sysfs-root DIR | --example NAME]\n"
          "\n"
          "Shows GPUs (PCI bus-id order = NVML order = stoker's gpu_id), their NUMA node and local\n"
          "CPUs, the NUMA nodes, sockets, physical cores x hyperthreads, and the CPUs this process\n"
          "may run on (cgroup cpuset / taskset / Slurm).\n"
          "  --json             "
          "{\"cpus_online\":[..],\"allowed_cpus\":[..],\"numa_nodes\":[..],\"sockets\":[..],\"gpus\":[..]}\n"
          "  --sysfs-root DIR   read a recorded sysfs/procfs tree instead of this machine\n"
          "  --example NAME     show a recorded machine shipped with stoker (see 'stoker plan --help')\n");
}

static const char *list(const stk_cpuset *set) {
  static char buf[4][16384];
  static int next;
  char *out = buf[next++ % 4];
  stk_cpuset_format(set, out, sizeof buf[0]);
  return out;
}

int stk_cli_topo(int argc, char **argv) {
  const char *cmd = "topo";
  const char *sysfs_root = NULL;
  int json = 0;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
      usage(stdout);
      return 0;
    } else if (strcmp(argv[i], "--json") == 0) {
      json = 1;
    } else if (strcmp(argv[i], "--sysfs-root") == 0) {
      if (i + 1 >= argc) {
        stk_cli_error(cmd, "--sysfs-root needs a directory");
        return 2;
      }
      sysfs_root = argv[++i];
    } else if (strcmp(argv[i], "--example") == 0 && i + 1 < argc) {
      if (!(sysfs_root = stk_cli_example_root(cmd, argv[++i]))) return 2;
    } else if (strncmp(argv[i], "--sysfs-root=", 13) == 0) {
      sysfs_root = argv[i] + 13;
    } else {
      stk_cli_error(cmd, "unknown argument '%s' (see 'stoker topo --help')", argv[i]);
      return 2;
    }
  }
  stk_topology *topo = stk_cli_load_topology(cmd, sysfs_root);
  if (!topo) return 2;
  const char *warnings = stk_topology_warnings(topo);
  for (const char *line = warnings; *line;) {
    size_t len = strcspn(line, "\n");
    fprintf(stderr, "stoker topo: warning: %.*s\n", (int)len, line);
    line += len + (line[len] == '\n');
  }
  if (json) {
    char *text = NULL;
    if (stk_topology_to_json(topo, &text) != STK_OK) {
      stk_cli_error(cmd, "out of memory");
      stk_topology_destroy(topo);
      return 2;
    }
    printf("%s\n", text);
    stk_free(text);
    stk_topology_destroy(topo);
    return 0;
  }

  int gpu_count = stk_topology_num_gpus(topo);
  printf("GPUs: %d%s\n", gpu_count, gpu_count ? " (PCI bus-id order)" : " (no NVIDIA GPU found)");
  if (gpu_count) printf("  %-4s %-14s %-5s %-24s %s\n", "GPU", "BUS ID", "NODE", "LOCAL CPUS", "NAME");
  int unknown = 0;
  for (int g = 0; g < gpu_count; g++) {
    stk_gpu_info gpu;
    stk_topology_gpu(topo, g, &gpu);
    char node_text[32];
    snprintf(node_text, sizeof node_text, gpu.numa_node_unknown ? "%d?" : "%d", gpu.numa_node);
    unknown += gpu.numa_node_unknown;
    stk_cpuset local;
    stk_topology_gpu_local_cpus(topo, g, &local);
    printf("  %-4d %-14s %-5s %-24s %s\n", g, gpu.pci_bus_id, node_text, list(&local), gpu.has_nvml ? gpu.name : "-");
  }
  if (unknown)
    printf(
        "  ? = sysfs numa_node is -1 (firmware does not say): treated as node 0; its local CPUs are as sysfs lists "
        "them\n");

  int node_count = stk_topology_num_numa_nodes(topo);
  printf("NUMA nodes: %d\n", node_count);
  for (int i = 0; i < node_count; i++) {
    stk_cpuset cpus;
    stk_topology_numa_node_cpus(topo, i, &cpus);
    uint64_t mem_kb = stk_topology_numa_node_mem_kb(topo, i);
    printf("  node %-3d CPUs %-24s %.1f GiB\n", stk_topology_numa_node_id(topo, i), list(&cpus),
           (double)mem_kb / (1024.0 * 1024.0));
  }
  int socket_count = stk_topology_num_sockets(topo);
  printf("Sockets: %d\n", socket_count);
  for (int i = 0; i < socket_count; i++) {
    stk_cpuset cpus;
    stk_topology_socket_cpus(topo, i, &cpus);
    printf("  socket %-3d CPUs %s\n", stk_topology_socket_id(topo, i), list(&cpus));
  }
  int core_count = stk_topology_num_cores(topo), min_threads = 0, max_threads = 0;
  for (int i = 0; i < core_count; i++) {
    stk_cpuset cpus;
    stk_topology_core_cpus(topo, i, &cpus);
    int threads = stk_cpuset_count(&cpus);
    if (i == 0 || threads < min_threads) min_threads = threads;
    if (threads > max_threads) max_threads = threads;
  }
  stk_cpuset online, allowed;
  stk_topology_cpus_online(topo, &online);
  stk_topology_allowed_cpus(topo, &allowed);
  if (min_threads == max_threads)
    printf("Cores: %d physical x %d thread%s = %d CPUs online (%s)\n", core_count, max_threads,
           max_threads == 1 ? "" : "s", stk_cpuset_count(&online), list(&online));
  else
    printf("Cores: %d physical x %d-%d threads = %d CPUs online (%s)\n", core_count, min_threads, max_threads,
           stk_cpuset_count(&online), list(&online));
  if (stk_cpuset_equal(&allowed, &online)) printf("Allowed CPUs: %s (all online CPUs)\n", list(&allowed));
  else
    printf("Allowed CPUs: %s (%d of %d: a cpuset/taskset/scheduler restricts this process)\n", list(&allowed),
           stk_cpuset_count(&allowed), stk_cpuset_count(&online));
  stk_topology_destroy(topo);
  return 0;
}
