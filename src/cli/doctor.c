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
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "stoker/stoker.h"
#include "commands.h"
#include "plan_args.h"

#define MAX_CHECKS 64
#define MAX_NODES  1024
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

static void add(report *r, const char *level, const char *name, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
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
  /* Never open a FIFO or device of a recorded tree for reading (it could block forever). */
  int fd = open(full, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) return NULL;
  struct stat info;
  size_t cap = 65536, len = 0;
  char *text = fstat(fd, &info) == 0 && S_ISREG(info.st_mode) ? malloc(cap) : NULL;
  ssize_t got = 0;
  while (text && len + 1 < cap && (got = read(fd, text + len, cap - 1 - len)) > 0) len += (size_t)got;
  if (text) text[len] = '\0';
  close(fd);
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
          "       stoker doctor --all-ranks [--job ID | --launcher-pid P] [--json] [--sysfs-root DIR]\n"
          "\n"
          "Checks where a process's threads and memory really are, one line per check:\n"
          "OK (fine), WARN (something to fix, and how) or INFO (worth knowing).\n"
          "  --pid P            the process to check (default: this shell's child, i.e. doctor itself)\n"
          "  --gpu G            compare the process's CPUs and pages with GPU G (default: LOCAL_RANK,\n"
          "                     SLURM_LOCALID or OMPI_COMM_WORLD_LOCAL_RANK when set)\n"
          "  --json             {\"pid\":..,\"checks\":[{\"level\":..,\"check\":..,\"message\":..}]}\n"
          "  --sysfs-root DIR   read a recorded sysfs/procfs tree (its proc/<pid|self>/status)\n"
          "  --all-ranks        every running rank of the job on this host (processes with a launcher\n"
          "                     local rank and doctor's TORCHELASTIC_RUN_ID / SLURM_JOB_ID+STEP /\n"
          "                     OMPI_MCA_ess_base_jobid): CPUs allowed, where its threads last ran,\n"
          "                     pages per node; a rank off its GPU's CPUs or memory node is WARN\n"
          "  --job ID           the job to list: torchelastic:RUN_ID, slurm:JOB.STEP or ompi:JOBID\n"
          "  --launcher-pid P   list the ranks that descend from process P instead\n"
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
  if (!known) add(r, "INFO", "memlock", "locked-memory limit (ulimit -l) not known here");
  else if (unlimited) add(r, "OK", "memlock", "locked-memory limit (ulimit -l) is unlimited");
  else if (soft < MEMLOCK_ADVISED_BYTES)
    add(r, "WARN", "memlock",
        "locked-memory limit (ulimit -l) is %llu KiB: pinned host buffers may fail; raise it (ulimit -l unlimited, "
        "memlock in /etc/security/limits.conf, docker --ulimit memlock=-1)",
        soft / 1024);
  else add(r, "OK", "memlock", "locked-memory limit (ulimit -l) is %llu MiB", soft >> 20);
}

typedef struct doctor_args {
  const char *sysfs_root;
  int pid, gpu, json, all_ranks, launcher_pid;
  const char *gpu_source, *job;
} doctor_args;

/* Parses the command line; -1 to go on, else the exit status. */
static int parse_doctor_args(const char *cmd, int argc, char **argv, doctor_args *args) {
  memset(args, 0, sizeof *args);
  args->gpu = -1;
  args->gpu_source = "--gpu";
  for (int i = 1; i < argc; i++) {
    const char *arg = argv[i];
    if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
      usage(stdout);
      return 0;
    } else if (strcmp(arg, "--json") == 0) {
      args->json = 1;
    } else if (strcmp(arg, "--all-ranks") == 0) {
      args->all_ranks = 1;
    } else if (strcmp(arg, "--pid") == 0 || strcmp(arg, "--gpu") == 0 || strcmp(arg, "--sysfs-root") == 0 ||
               strcmp(arg, "--job") == 0 || strcmp(arg, "--launcher-pid") == 0) {
      if (i + 1 >= argc) {
        stk_cli_error(cmd, "%s needs a value", arg);
        return 2;
      }
      const char *value = argv[++i];
      if (strcmp(arg, "--sysfs-root") == 0) args->sysfs_root = value;
      else if (strcmp(arg, "--job") == 0) args->job = value;
      else if (stk_cli_parse_count(cmd, arg, value,
                                   strcmp(arg, "--pid") == 0   ? &args->pid
                                   : strcmp(arg, "--gpu") == 0 ? &args->gpu
                                                               : &args->launcher_pid) < 0)
        return 2;
    } else {
      stk_cli_error(cmd, "unknown argument '%s' (see 'stoker doctor --help')", arg);
      return 2;
    }
  }
  if (!args->all_ranks && (args->job || args->launcher_pid)) {
    stk_cli_error(cmd, "--job and --launcher-pid go with --all-ranks");
    return 2;
  }
  if (args->gpu < 0) gpu_from_environment(&args->gpu, &args->gpu_source);
  return -1;
}

static void check_numa_and_gpus(report *r, const stk_topology *topo, const char *root) {
  int node_count = stk_topology_num_numa_nodes(topo), gpu_count = stk_topology_num_gpus(topo);
  if (node_count <= 1)
    add(r, "INFO", "numa_nodes", "single NUMA node: CPU/memory pinning has nothing to gain for locality here");
  else
    add(r, "OK", "numa_nodes",
        "%d NUMA nodes: placement matters; bind each rank next to its GPU (stoker bind / launch)", node_count);
  if (gpu_count == 0) add(r, "INFO", "gpus", "no NVIDIA GPU found (no NVIDIA PCI display/3D controller)");
  int unknown = 0;
  for (int g = 0; g < gpu_count; g++) {
    stk_gpu_info info;
    stk_topology_gpu(topo, g, &info);
    if (!info.numa_node_unknown) continue;
    unknown++;
    add(r, "WARN", "gpu_numa_node",
        "GPU %d (%s): sysfs numa_node is %d (the firmware does not say where it is); stoker treats it as node 0 and "
        "uses "
        "its local CPUs %s; check 'nvidia-smi topo -m' and pin with --allowed-cpus if that is wrong",
        g, info.pci_bus_id, info.numa_node_raw, list(&info.local_cpus));
  }
  if (gpu_count > 0 && unknown == 0)
    add(r, "OK", "gpu_numa_node", "%d GPU(s), every one with a known NUMA node", gpu_count);
  char *balancing = read_file(root, "/proc/sys/kernel/numa_balancing");
  if (!balancing)
    add(r, "INFO", "numa_balancing",
        "kernel NUMA auto-balancing setting not available (/proc/sys/kernel/numa_balancing)");
  else if (atoi(balancing) != 0)
    add(r, "WARN", "numa_balancing",
        "kernel NUMA auto-balancing is on: it migrates pages and threads away from where you placed them; "
        "turn it off with 'sysctl kernel.numa_balancing=0'");
  else add(r, "OK", "numa_balancing", "kernel NUMA auto-balancing is off");
  free(balancing);
}

/* The process's CPUs: its cpuset vs the machine. Returns them in *process_cpus. */
static void check_cpuset(report *r, const stk_topology *topo, const char *status_text, int live, int pid,
                         stk_cpuset *process_cpus) {
  stk_cpuset online;
  stk_topology_cpus_online(topo, &online);
  char value[16384];
  int have = 0;
  if (field(status_text, "Cpus_allowed_list:", value, sizeof value)) {
    char err[256];
    if (stk_cpuset_parse(value, process_cpus, err, sizeof err) == STK_OK) have = 1;
  }
  if (!have && live && stk_get_affinity(pid, process_cpus) == STK_OK) have = 1;
  if (!have) {
    *process_cpus = online;
    add(r, "INFO", "cpuset", "the process's allowed CPUs are not recorded; assuming all online CPUs %s", list(&online));
  } else if (!stk_cpuset_equal(process_cpus, &online)) {
    add(r, "INFO", "cpuset",
        "the process may use CPUs %s (%d of %d online): a cgroup cpuset, taskset or the scheduler (Slurm) already "
        "placed "
        "it; don't pin twice: stoker bind plans inside this set",
        list(process_cpus), stk_cpuset_count(process_cpus), stk_cpuset_count(&online));
  } else {
    add(r, "OK", "cpuset", "the process may use every online CPU (%s); nothing has placed it yet", list(&online));
  }
}

/* The process's CPUs vs GPU gpu's local CPUs; returns the GPU's node (-1 unknown or no GPU). */
static int check_gpu_cpus(report *r, const stk_topology *topo, int gpu, const stk_cpuset *process_cpus) {
  if (gpu < 0) {
    if (stk_topology_num_gpus(topo) > 0)
      add(r, "INFO", "gpu_cpus", "pass --gpu G to compare the process's CPUs and memory with a GPU's");
    return -1;
  }
  stk_gpu_info info;
  stk_cpuset local, inside;
  stk_topology_gpu(topo, gpu, &info);
  stk_topology_gpu_local_cpus(topo, gpu, &local);
  stk_cpuset_and(&inside, process_cpus, &local);
  int count = stk_cpuset_count(process_cpus), local_count = stk_cpuset_count(&inside);
  if (local_count == count)
    add(r, "OK", "gpu_cpus", "all %d CPUs of the process (%s) are local to GPU %d (%s, local CPUs %s)", count,
        list(process_cpus), gpu, info.pci_bus_id, list(&local));
  else if (local_count > 0)
    add(r, "WARN", "gpu_cpus",
        "only %d of the process's %d CPUs (%s) are local to GPU %d (local CPUs %s); bind with 'stoker bind --gpu %d -- "
        "CMD'",
        local_count, count, list(process_cpus), gpu, list(&local), gpu);
  else
    add(r, "WARN", "gpu_cpus",
        "none of the process's CPUs (%s) is local to GPU %d (local CPUs %s); bind with 'stoker bind --gpu %d -- CMD'",
        list(process_cpus), gpu, list(&local), gpu);
  return info.numa_node_unknown ? -1 : info.numa_node;
}

/* Where the pages are (live only). */
static void check_pages(report *r, const stk_topology *topo, int live, int pid, const char *proc_dir, int gpu,
                        int gpu_node) {
  if (!live) {
    add(r, "INFO", "memory_pages",
        "page placement is read from the live /proc/PID/numa_maps only (not from a recorded tree)");
    return;
  }
  uint64_t *pages = calloc(MAX_NODES, sizeof *pages);
  stk_status st = pages ? stk_process_pages_per_node(pid, pages, MAX_NODES) : STK_ENOMEM;
  if (st != STK_OK) {
    add(r, "INFO", "memory_pages", "cannot read %s/numa_maps (%s): page placement unknown", proc_dir, stk_strerror(st));
    free(pages);
    return;
  }
  uint64_t total = 0;
  char per_node[768] = "";
  size_t len = 0;
  for (int n = 0; n < MAX_NODES; n++) total += pages[n];
  for (int n = 0; n < MAX_NODES && len + 64 < sizeof per_node; n++)
    if (pages[n])
      len += (size_t)snprintf(per_node + len, sizeof per_node - len, "%snode %d: %llu (%.0f%%)", len ? ", " : "", n,
                              (unsigned long long)pages[n], total ? 100.0 * (double)pages[n] / (double)total : 0.0);
  if (total == 0) {
    add(r, "INFO", "memory_pages", "no resident pages reported in %s/numa_maps", proc_dir);
  } else if (gpu_node >= 0 && stk_topology_num_numa_nodes(topo) > 1) {
    double share = (double)(gpu_node < MAX_NODES ? pages[gpu_node] : 0) / (double)total;
    if (share >= 0.9)
      add(r, "OK", "memory_pages", "%.0f%% of the resident pages are on GPU %d's node %d (%s)", 100.0 * share, gpu,
          gpu_node, per_node);
    else
      add(r, "WARN", "memory_pages",
          "only %.0f%% of the resident pages are on GPU %d's node %d (%s); bind memory before allocating: "
          "'stoker bind --gpu %d --membind -- CMD'",
          100.0 * share, gpu, gpu_node, per_node, gpu);
  } else {
    add(r, "INFO", "memory_pages", "resident pages per node: %s", per_node);
  }
  free(pages);
}

static void print_report(const report *r, int json, int pid, int gpu) {
  if (json) {
    printf("{\"pid\":%d,\"gpu\":%d,\"checks\":[", pid, gpu);
    for (int i = 0; i < r->count; i++) {
      printf("%s{\"level\":\"%s\",\"check\":\"%s\",\"message\":", i ? "," : "", r->checks[i].level, r->checks[i].name);
      stk_cli_print_json_string(r->checks[i].message);
      printf("}");
    }
    printf("]}\n");
  } else {
    for (int i = 0; i < r->count; i++)
      printf("%-4s  %-15s %s\n", r->checks[i].level, r->checks[i].name, r->checks[i].message);
  }
}

int stk_cli_doctor(int argc, char **argv) {
  const char *cmd = "doctor";
  doctor_args args;
  int early_exit = parse_doctor_args(cmd, argc, argv, &args);
  if (early_exit >= 0) return early_exit;
  if (args.all_ranks) return stk_cli_doctor_all_ranks(cmd, args.sysfs_root, args.job, args.launcher_pid, args.json);
  int live = !args.sysfs_root || !*args.sysfs_root || strcmp(args.sysfs_root, "/") == 0;
  const char *root = live ? "" : args.sysfs_root;
  char proc_dir[64], status_path[128];
  if (args.pid > 0) snprintf(proc_dir, sizeof proc_dir, "/proc/%d", args.pid);
  else snprintf(proc_dir, sizeof proc_dir, "/proc/self");
  snprintf(status_path, sizeof status_path, "%s/status", proc_dir);
  char *status_text = read_file(root, status_path);
  if (args.pid > 0 && !status_text) {
    stk_cli_error(cmd, "no process %d (cannot read %s%s)", args.pid, root, status_path);
    return 2;
  }
  stk_topology *topo = stk_cli_load_topology(cmd, args.sysfs_root);
  if (!topo) {
    free(status_text);
    return 2;
  }
  int gpu_count = stk_topology_num_gpus(topo);
  if (args.gpu >= 0 && args.gpu >= gpu_count) {
    stk_cli_error(cmd, "GPU %d (from %s) is out of range: %d GPU(s) found", args.gpu, args.gpu_source, gpu_count);
    free(status_text);
    stk_topology_destroy(topo);
    return 2;
  }
  report *r = calloc(1, sizeof *r);
  int exit_status = r ? 0 : 2;
  if (r) {
    stk_cpuset process_cpus;
    check_numa_and_gpus(r, topo, root);
    check_memlock(r, root, live, proc_dir, args.pid);
    check_cpuset(r, topo, status_text, live, args.pid, &process_cpus);
    int gpu_node = check_gpu_cpus(r, topo, args.gpu, &process_cpus);
    check_pages(r, topo, live, args.pid, proc_dir, args.gpu, gpu_node);
    print_report(r, args.json, args.pid, args.gpu);
  }
  free(r);
  free(status_text);
  stk_topology_destroy(topo);
  return exit_status;
}
