/* src/cli/plan_examples.c: recorded machines for `stoker plan/bind/launch/topo --example NAME`, so
 * the topology tools show what they do on a machine without GPUs (or on a laptop). Each example is
 * a few numbers (sockets, cores, threads, NUMA nodes, GPUs and their nodes) written out as the
 * sysfs/procfs files the topology reader reads, into a temporary folder that is then read through
 * the same path as --sysfs-root; the folder is removed when the command ends. Not a hot path. */
#include <errno.h>
#include <ftw.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "commands.h"

typedef struct example_machine {
  const char *name;
  const char *doc;
  int sockets, cores, threads; /* x86 numbering: cpu = thread * sockets * cores + socket * cores + core */
  int nodes_per_socket;        /* NUMA nodes split each socket's cores evenly (NPS1 = 1, NPS4 = 4) */
  int gpus;                    /* spread evenly over the nodes in bus order; */
  int gpu_numa_unknown;        /* 1: every GPU reports numa_node -1 (VMs) */
} example_machine;

static const example_machine examples[] = {
    {"dgx-h100", "DGX H100: 2 sockets x 56 cores x 2 threads, 2 NUMA nodes, 8 GPUs (4 per node)", 2, 56, 2, 1, 8, 0},
    {"epyc-nps4", "2-socket EPYC, 64 cores x 2 threads each, NPS4 (8 NUMA nodes), 8 GPUs (one per node)", 2, 64, 2, 4,
     8, 0},
    {"vm-2gpu", "a VM: 1 socket x 16 cores x 2 threads, one NUMA node, 2 GPUs reporting numa_node -1", 1, 16, 2, 1, 2,
     1},
};

static int put(const char *root, const char *text, const char *path_format, ...) {
  char path[4096];
  int n = snprintf(path, sizeof path, "%s/", root);
  va_list ap;
  va_start(ap, path_format);
  vsnprintf(path + n, sizeof path - (size_t)n, path_format, ap);
  va_end(ap);
  for (char *slash = strchr(path + strlen(root) + 1, '/'); slash; slash = strchr(slash + 1, '/')) {
    *slash = '\0';
    if (mkdir(path, 0755) != 0 && errno != EEXIST) return -1;
    *slash = '/';
  }
  FILE *f = fopen(path, "w");
  if (!f) return -1;
  int ok = fprintf(f, "%s\n", text) >= 0;
  return fclose(f) == 0 && ok ? 0 : -1;
}

/* "a-b" or "a-b,c-d" of the CPUs of one NUMA node (its cores' first threads, then the others). */
static void node_cpulist(const example_machine *m, int node, char *out, size_t size) {
  int cores_per_node = m->cores / m->nodes_per_socket;
  int socket = node / m->nodes_per_socket, first_core = (node % m->nodes_per_socket) * cores_per_node;
  size_t used = 0;
  for (int t = 0; t < m->threads; t++) {
    int first = t * m->sockets * m->cores + socket * m->cores + first_core;
    used += (size_t)snprintf(out + used, size - used, "%s%d-%d", t ? "," : "", first, first + cores_per_node - 1);
    if (used >= size) break;
  }
}

static int write_example(const example_machine *m, const char *root) {
  int ncpu = m->sockets * m->cores * m->threads, nodes = m->sockets * m->nodes_per_socket;
  char text[256], list[128];
  int bad = 0;
  snprintf(text, sizeof text, "0-%d", ncpu - 1);
  bad |= put(root, text, "sys/devices/system/cpu/online");
  bad |= put(root, text, "sys/devices/system/cpu/possible");
  snprintf(text, sizeof text, "Name:\tstoker\nCpus_allowed_list:\t0-%d", ncpu - 1);
  bad |= put(root, text, "proc/self/status");
  bad |= put(root, "MemTotal:       2113929216 kB\nMemFree:        1056964608 kB", "proc/meminfo");
  for (int t = 0; t < m->threads && !bad; t++)
    for (int s = 0; s < m->sockets; s++)
      for (int c = 0; c < m->cores; c++) {
        int cpu = t * m->sockets * m->cores + s * m->cores + c;
        char *siblings = list;
        size_t used = 0;
        for (int u = 0; u < m->threads; u++)
          used += (size_t)snprintf(siblings + used, sizeof list - used, "%s%d", u ? "," : "",
                                   u * m->sockets * m->cores + s * m->cores + c);
        snprintf(text, sizeof text, "%d", s);
        bad |= put(root, text, "sys/devices/system/cpu/cpu%d/topology/physical_package_id", cpu);
        bad |= put(root, "0", "sys/devices/system/cpu/cpu%d/topology/die_id", cpu);
        snprintf(text, sizeof text, "%d", c);
        bad |= put(root, text, "sys/devices/system/cpu/cpu%d/topology/core_id", cpu);
        bad |= put(root, list, "sys/devices/system/cpu/cpu%d/topology/core_cpus_list", cpu);
        bad |= put(root, list, "sys/devices/system/cpu/cpu%d/topology/thread_siblings_list", cpu);
        bad |= put(root, "1", "sys/devices/system/cpu/cpu%d/online", cpu);
      }
  snprintf(text, sizeof text, "0-%d", nodes - 1);
  if (nodes == 1) snprintf(text, sizeof text, "0");
  bad |= put(root, text, "sys/devices/system/node/online");
  bad |= put(root, text, "sys/devices/system/node/possible");
  for (int node = 0; node < nodes && !bad; node++) {
    node_cpulist(m, node, list, sizeof list);
    bad |= put(root, list, "sys/devices/system/node/node%d/cpulist", node);
    size_t used = 0;
    for (int other = 0; other < nodes; other++)
      used += (size_t)snprintf(text + used, sizeof text - used, "%s%d", other ? " " : "", other == node ? 10 : 21);
    bad |= put(root, text, "sys/devices/system/node/node%d/distance", node);
  }
  for (int g = 0; g < m->gpus && !bad; g++) {
    int node = g * nodes / m->gpus;
    char bdf[32];
    snprintf(bdf, sizeof bdf, "0000:%02x:00.0", 0x18 + g * 0x10);
    bad |= put(root, "0x10de", "sys/bus/pci/devices/%s/vendor", bdf);
    bad |= put(root, "0x2330", "sys/bus/pci/devices/%s/device", bdf);
    bad |= put(root, "0x030200", "sys/bus/pci/devices/%s/class", bdf);
    snprintf(text, sizeof text, "%d", m->gpu_numa_unknown ? -1 : node);
    bad |= put(root, text, "sys/bus/pci/devices/%s/numa_node", bdf);
    if (m->gpu_numa_unknown) snprintf(list, sizeof list, "0-%d", ncpu - 1);
    else node_cpulist(m, node, list, sizeof list);
    bad |= put(root, list, "sys/bus/pci/devices/%s/local_cpulist", bdf);
  }
  return bad ? -1 : 0;
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
  (void)st, (void)flag, (void)ftw;
  return remove(path);
}

static char example_root[256];

static void remove_example(void) {
  if (example_root[0]) nftw(example_root, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
  example_root[0] = '\0';
}

void stk_cli_list_examples(FILE *out) {
  for (size_t i = 0; i < sizeof examples / sizeof examples[0]; i++)
    fprintf(out, "  %-12s %s\n", examples[i].name, examples[i].doc);
}

const char *stk_cli_example_root(const char *cmd, const char *name) {
  const example_machine *m = NULL;
  for (size_t i = 0; i < sizeof examples / sizeof examples[0]; i++)
    if (strcmp(examples[i].name, name) == 0) m = &examples[i];
  if (!m) {
    char names[256] = "";
    for (size_t i = 0; i < sizeof examples / sizeof examples[0]; i++)
      snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", i ? ", " : "", examples[i].name);
    stk_cli_error(cmd, "no recorded machine '%s'; the examples are: %s", name, names);
    return NULL;
  }
  const char *tmp = getenv("TMPDIR");
  snprintf(example_root, sizeof example_root, "%s/stoker-example-XXXXXX", tmp && *tmp ? tmp : "/tmp");
  if (!mkdtemp(example_root)) {
    stk_cli_error(cmd, "cannot make a temporary folder for the example: %s", strerror(errno));
    example_root[0] = '\0';
    return NULL;
  }
  atexit(remove_example);
  if (write_example(m, example_root) != 0) {
    stk_cli_error(cmd, "cannot write the example machine under %s: %s", example_root, strerror(errno));
    return NULL;
  }
  return example_root;
}
