/* src/cli/doctor.c: `stoker doctor`: verifies placement instead of assuming it. One line per
 * check, OK / WARN / INFO with what to do: single NUMA node, GPU numa_node -1, kernel NUMA
 * auto-balancing, locked-memory limit, a cpuset narrower than the machine, the process's CPUs
 * vs the GPU's local CPUs, and where the process's pages really are (/proc/PID/numa_maps).
 * Reads the live system or a recorded tree (--sysfs-root). Uses only the public API. Not on a
 * hot path. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "stoker/stoker.h"
#include "commands.h"
#include "plan_args.h"

#define MAX_CHECKS 64
#define MAX_NODES 1024
/* Below this the page-locked host buffers of a training pipeline may not fit. */
#define MEMLOCK_ADVISED_BYTES (1ull << 30)

typedef struct check {
  const char *level; /* "OK", "WARN", "INFO" */
  const char *name;
  char message[1024];
} check;

typedef struct report {
  check checks[MAX_CHECKS];
  int count;
} report;

static void add(report *r, const char *level, const char *name, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static void add(report *r, const char *level, const char *name, const char *fmt, ...) {
  if (r->count >= MAX_CHECKS) return;
  check *c = &r->checks[r->count++];
  c->level = level;
  c->name = name;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(c->message, sizeof c->message, fmt, ap);
  va_end(ap);
}

static const char *list(const stk_cpuset *set) {
  static char buf[4][8192];
  static int next;
  char *out = buf[next++ % 4];
  size_t needed = stk_cpuset_format(set, out, sizeof buf[0]);
  if (needed >= sizeof buf[0]) memcpy(out + sizeof buf[0] - 4, "...", 4);
  return out;
}

/* Reads a whole small file under root into a malloc'd string (NULL when unreadable). */
static char *read_file(const char *root, const char *path) {
  char full[8192];
  snprintf(full, sizeof full, "%s%s", root ? root : "", path);
  FILE *file = fopen(full, "r");
  if (!file) return NULL;
  size_t cap = 65536, len = 0;
  char *text = malloc(cap);
  if (text) {
    len = fread(text, 1, cap - 1, file);
    text[len] = '\0';
  }
  fclose(file);
  return text;
}

/* The value after "Key:" on its line, copied into out; 1 when found. */
static int field(const char *text, const char *key, char *out, size_t out_size) {
  const char *at = text ? strstr(text, key) : NULL;
  if (!at) return 0;
  at += strlen(key);
  while (*at == ' ' || *at == '\t') at++;
  size_t len = strcspn(at, "\n");
  if (len >= out_size) len = out_size - 1;
  memcpy(out, at, len);
  out[len] = '\0';
  return 1;
}

static void usage(FILE *out) {
  fprintf(out,
          "usage: stoker doctor [--pid P] [--gpu G] [--json] [--sysfs-root DIR]\n"
          "\n"
          "Checks where a process's threads and memory really are, one line per check:\n"
          "OK (fine), WARN (something to fix, and how) or INFO (worth knowing).\n"
          "  --pid P            the process to check (default: this shell's child, i.e. doctor itself)\n"
          "  --gpu G            compare the process's CPUs and pages with GPU G (default: LOCAL_RANK,\n"
          "                     SLURM_LOCALID or OMPI_COMM_WORLD_LOCAL_RANK when set)\n"
          "  --json             {\"pid\":..,\"checks\":[{\"level\":..,\"check\":..,\"message\":..}]}\n"
          "  --sysfs-root DIR   read a recorded sysfs/procfs tree (its proc/<pid|self>/status)\n"
          "Exit status: 0 when the checks ran (whatever they found), 2 for bad input.\n");
}

static int gpu_from_environment(int *gpu, const char **source) {
  const char *names[] = {"LOCAL_RANK", "SLURM_LOCALID", "OMPI_COMM_WORLD_LOCAL_RANK"};
  for (int i = 0; i < 3; i++) {
    const char *text = getenv(names[i]);
    if (!text || !*text) continue;
    char *end = NULL;
    long value = strtol(text, &end, 10);
    if (*end || value < 0) continue;
    *gpu = (int)value;
    *source = names[i];
    return 1;
  }
  return 0;
}

static void check_memlock(report *r, const char *root, int live, const char *proc_dir, int pid) {
  unsigned long long soft = 0;
  int unlimited = 0, known = 0;
  if (live && pid == 0) {
    struct rlimit limit;
    if (getrlimit(RLIMIT_MEMLOCK, &limit) == 0) {
      known = 1;
      unlimited = limit.rlim_cur == RLIM_INFINITY;
      soft = (unsigned long long)limit.rlim_cur;
    }
  } else {
    char path[256], value[256];
    snprintf(path, sizeof path, "%s/limits", proc_dir);
    char *text = read_file(root, path);
    if (field(text, "Max locked memory", value, sizeof value)) {
      known = 1;
      unlimited = strncmp(value, "unlimited", 9) == 0;
      soft = strtoull(value, NULL, 10);
    }
    free(text);
  }
  if (!known)
    add(r, "INFO", "memlock", "locked-memory limit (ulimit -l) not known here");
  else if (unlimited)
    add(r, "OK", "memlock", "locked-memory limit (ulimit -l) is unlimited");
  else if (soft < MEMLOCK_ADVISED_BYTES)
    add(r, "WARN", "memlock",
        "locked-memory limit (ulimit -l) is %llu KiB: pinned host buffers may fail; raise it (ulimit -l unlimited, "
        "memlock in /etc/security/limits.conf, docker --ulimit memlock=-1)",
        soft / 1024);
  else
    add(r, "OK", "memlock", "locked-memory limit (ulimit -l) is %llu MiB", soft >> 20);
}

int stk_cli_doctor(int argc, char **argv) {
  const char *cmd = "doctor";
  const char *sysfs_root = NULL;
  int pid = 0, gpu = -1, json = 0;
  const char *gpu_source = "--gpu";
  for (int i = 1; i < argc; i++) {
    const char *arg = argv[i];
    if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
      usage(stdout);
      return 0;
    } else if (strcmp(arg, "--json") == 0) {
      json = 1;
    } else if (strcmp(arg, "--pid") == 0 || strcmp(arg, "--gpu") == 0 || strcmp(arg, "--sysfs-root") == 0) {
      if (i + 1 >= argc) {
        stk_cli_error(cmd, "%s needs a value", arg);
        return 2;
      }
      const char *value = argv[++i];
      if (strcmp(arg, "--sysfs-root") == 0)
        sysfs_root = value;
      else if (stk_cli_parse_count(cmd, arg, value, strcmp(arg, "--pid") == 0 ? &pid : &gpu) < 0)
        return 2;
    } else {
      stk_cli_error(cmd, "unknown argument '%s' (see 'stoker doctor --help')", arg);
      return 2;
    }
  }
  if (gpu < 0) gpu_from_environment(&gpu, &gpu_source);
  int live = !sysfs_root || !*sysfs_root || strcmp(sysfs_root, "/") == 0;
  const char *root = live ? "" : sysfs_root;
  char proc_dir[64];
  if (pid > 0)
    snprintf(proc_dir, sizeof proc_dir, "/proc/%d", pid);
  else
    snprintf(proc_dir, sizeof proc_dir, "/proc/self");
  char status_path[128];
  snprintf(status_path, sizeof status_path, "%s/status", proc_dir);
  char *status_text = read_file(root, status_path);
  if (pid > 0 && !status_text) {
    stk_cli_error(cmd, "no process %d (cannot read %s%s)", pid, root, status_path);
    return 2;
  }
  stk_topology *topo = stk_cli_load_topology(cmd, sysfs_root);
  if (!topo) {
    free(status_text);
    return 2;
  }
  int gpu_count = stk_topology_num_gpus(topo);
  if (gpu >= 0 && gpu >= gpu_count) {
    stk_cli_error(cmd, "GPU %d (from %s) is out of range: %d GPU(s) found", gpu, gpu_source, gpu_count);
    free(status_text);
    stk_topology_destroy(topo);
    return 2;
  }

  report r;
  memset(&r, 0, sizeof r);
  stk_cpuset online;
  stk_topology_cpus_online(topo, &online);

  /* NUMA nodes. */
  int node_count = stk_topology_num_numa_nodes(topo);
  if (node_count <= 1)
    add(&r, "INFO", "numa_nodes", "single NUMA node: CPU/memory pinning has nothing to gain for locality here");
  else
    add(&r, "OK", "numa_nodes", "%d NUMA nodes: placement matters; bind each rank next to its GPU (stoker bind / launch)", node_count);

  /* GPUs and their NUMA nodes. */
  if (gpu_count == 0) add(&r, "INFO", "gpus", "no NVIDIA GPU found (no NVIDIA PCI display/3D controller)");
  int unknown = 0;
  for (int g = 0; g < gpu_count; g++) {
    stk_gpu_info info;
    stk_topology_gpu(topo, g, &info);
    if (!info.numa_node_unknown) continue;
    unknown++;
    add(&r, "WARN", "gpu_numa_node",
        "GPU %d (%s): sysfs numa_node is -1 (the firmware does not say where it is); stoker treats it as node 0 and uses "
        "its local CPUs %s; check 'nvidia-smi topo -m' and pin with --allowed-cpus if that is wrong",
        g, info.pci_bus_id, list(&info.local_cpus));
  }
  if (gpu_count > 0 && unknown == 0) add(&r, "OK", "gpu_numa_node", "%d GPU(s), every one with a known NUMA node", gpu_count);

  /* Kernel NUMA auto-balancing. */
  char *balancing = read_file(root, "/proc/sys/kernel/numa_balancing");
  if (!balancing)
    add(&r, "INFO", "numa_balancing", "kernel NUMA auto-balancing setting not available (/proc/sys/kernel/numa_balancing)");
  else if (atoi(balancing) != 0)
    add(&r, "WARN", "numa_balancing",
        "kernel NUMA auto-balancing is on: it migrates pages and threads away from where you placed them; "
        "turn it off with 'sysctl kernel.numa_balancing=0'");
  else
    add(&r, "OK", "numa_balancing", "kernel NUMA auto-balancing is off");
  free(balancing);

  check_memlock(&r, root, live, proc_dir, pid);

  /* The process's CPUs: its cpuset vs the machine. */
  stk_cpuset process_cpus = online;
  char value[16384];
  int have_process_cpus = 0;
  if (field(status_text, "Cpus_allowed_list:", value, sizeof value)) {
    char err[256];
    if (stk_cpuset_parse(value, &process_cpus, err, sizeof err) == STK_OK) have_process_cpus = 1;
  }
  if (!have_process_cpus && live && stk_get_affinity(pid, &process_cpus) == STK_OK) have_process_cpus = 1;
  if (!have_process_cpus) {
    process_cpus = online;
    add(&r, "INFO", "cpuset", "the process's allowed CPUs are not recorded; assuming all online CPUs %s", list(&online));
  } else if (!stk_cpuset_equal(&process_cpus, &online)) {
    add(&r, "INFO", "cpuset",
        "the process may use CPUs %s (%d of %d online): a cgroup cpuset, taskset or the scheduler (Slurm) already placed "
        "it; don't pin twice: stoker bind plans inside this set",
        list(&process_cpus), stk_cpuset_count(&process_cpus), stk_cpuset_count(&online));
  } else {
    add(&r, "OK", "cpuset", "the process may use every online CPU (%s); nothing has placed it yet", list(&online));
  }

  /* The process's CPUs vs the GPU's local CPUs. */
  stk_gpu_info info;
  int gpu_node = -1;
  if (gpu >= 0) {
    stk_cpuset local, inside;
    stk_topology_gpu(topo, gpu, &info);
    stk_topology_gpu_local_cpus(topo, gpu, &local);
    gpu_node = info.numa_node_unknown ? -1 : info.numa_node;
    stk_cpuset_and(&inside, &process_cpus, &local);
    int count = stk_cpuset_count(&process_cpus), local_count = stk_cpuset_count(&inside);
    if (local_count == count)
      add(&r, "OK", "gpu_cpus", "all %d CPUs of the process (%s) are local to GPU %d (%s, local CPUs %s)", count, list(&process_cpus), gpu,
          info.pci_bus_id, list(&local));
    else if (local_count > 0)
      add(&r, "WARN", "gpu_cpus",
          "only %d of the process's %d CPUs (%s) are local to GPU %d (local CPUs %s); bind with 'stoker bind --gpu %d -- CMD'",
          local_count, count, list(&process_cpus), gpu, list(&local), gpu);
    else
      add(&r, "WARN", "gpu_cpus", "none of the process's CPUs (%s) is local to GPU %d (local CPUs %s); bind with 'stoker bind --gpu %d -- CMD'",
          list(&process_cpus), gpu, list(&local), gpu);
  } else if (gpu_count > 0) {
    add(&r, "INFO", "gpu_cpus", "pass --gpu G to compare the process's CPUs and memory with a GPU's");
  }

  /* Where the pages are. */
  if (!live) {
    add(&r, "INFO", "memory_pages", "page placement is read from the live /proc/PID/numa_maps only (not from a recorded tree)");
  } else {
    uint64_t *pages = calloc(MAX_NODES, sizeof *pages);
    stk_status st = pages ? stk_process_pages_per_node(pid, pages, MAX_NODES) : STK_ENOMEM;
    if (st != STK_OK) {
      add(&r, "INFO", "memory_pages", "cannot read %s/numa_maps (%s): page placement unknown", proc_dir, stk_strerror(st));
    } else {
      uint64_t total = 0;
      char per_node[768] = "";
      size_t len = 0;
      for (int n = 0; n < MAX_NODES; n++) total += pages[n];
      for (int n = 0; n < MAX_NODES && len + 64 < sizeof per_node; n++)
        if (pages[n])
          len += (size_t)snprintf(per_node + len, sizeof per_node - len, "%snode %d: %llu (%.0f%%)", len ? ", " : "", n,
                                  (unsigned long long)pages[n], total ? 100.0 * (double)pages[n] / (double)total : 0.0);
      if (total == 0) {
        add(&r, "INFO", "memory_pages", "no resident pages reported in %s/numa_maps", proc_dir);
      } else if (gpu_node >= 0 && node_count > 1) {
        double share = (double)(gpu_node < MAX_NODES ? pages[gpu_node] : 0) / (double)total;
        if (share >= 0.9)
          add(&r, "OK", "memory_pages", "%.0f%% of the resident pages are on GPU %d's node %d (%s)", 100.0 * share, gpu, gpu_node, per_node);
        else
          add(&r, "WARN", "memory_pages",
              "only %.0f%% of the resident pages are on GPU %d's node %d (%s); bind memory before allocating: "
              "'stoker bind --gpu %d --membind -- CMD'",
              100.0 * share, gpu, gpu_node, per_node, gpu);
      } else {
        add(&r, "INFO", "memory_pages", "resident pages per node: %s", per_node);
      }
    }
    free(pages);
  }

  if (json) {
    printf("{\"pid\":%d,\"gpu\":%d,\"checks\":[", pid, gpu);
    for (int i = 0; i < r.count; i++) {
      printf("%s{\"level\":\"%s\",\"check\":\"%s\",\"message\":", i ? "," : "", r.checks[i].level, r.checks[i].name);
      stk_cli_print_json_string(r.checks[i].message);
      printf("}");
    }
    printf("]}\n");
  } else {
    for (int i = 0; i < r.count; i++) printf("%-4s  %-15s %s\n", r.checks[i].level, r.checks[i].name, r.checks[i].message);
  }
  free(status_text);
  stk_topology_destroy(topo);
  return 0;
}
