/* src/cli/doctor_ranks.c: `stoker doctor --all-ranks`: every running rank of a job on this host,
 * with the CPUs it may use, where its threads last ran, and where its pages are (numastat-style,
 * from /proc/PID/numa_maps), flagging a rank that runs or keeps memory off its GPU's node.
 * A rank is a process on this host that has a launcher local rank (LOCAL_RANK, SLURM_LOCALID or
 * OMPI_COMM_WORLD_LOCAL_RANK) and either the same job as doctor (TORCHELASTIC_RUN_ID, else
 * SLURM_JOB_ID + SLURM_STEP_ID, else OMPI_MCA_ess_base_jobid, else --job ID) or, with
 * --launcher-pid P, descends from P; its own children with the same local rank (data-loader
 * workers) are counted with it, not listed as ranks. Processes are always read from the live
 * /proc (readable ones: the same user, or root); --sysfs-root only replaces the topology.
 * Uses only the public API. Not on a hot path. */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "stoker/stoker.h"
#include "commands.h"
#include "plan_args.h"

#define MAX_RANKS 256
#define MAX_NODES 1024
#define ENV_BYTES (256 * 1024)
/* A rank whose pages on its GPU's node are below this share is flagged. */
#define ON_NODE_SHARE 0.9

typedef struct rank_process {
  int pid, ppid, local_rank, workers;
  char *env_text;   /* /proc/PID/environ, NUL-separated (malloc'd) */
  const char **env; /* pointers into env_text, NULL-terminated (malloc'd) */
} rank_process;

/* Reads a small regular /proc file (never blocks on anything else); malloc'd, NULL on failure. */
static char *read_proc(const char *path, size_t max, size_t *length) {
  int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return NULL;
  struct stat info;
  char *text = fstat(fd, &info) == 0 && S_ISREG(info.st_mode) ? malloc(max + 1) : NULL;
  size_t len = 0;
  ssize_t got = 0;
  while (text && len < max && (got = read(fd, text + len, max - len)) > 0) len += (size_t)got;
  close(fd);
  if (text) text[len] = '\0';
  if (length) *length = len;
  return text;
}

static const char *env_get(const char **env, const char *name) {
  size_t len = strlen(name);
  for (; env && *env; env++)
    if (strncmp(*env, name, len) == 0 && (*env)[len] == '=') return *env + len + 1;
  return NULL;
}

/* The job key of an environment ("" when none), in the order the header lists. */
static void job_key(const char **env, char *out, size_t size) {
  const char *run = env ? env_get(env, "TORCHELASTIC_RUN_ID") : getenv("TORCHELASTIC_RUN_ID");
  const char *slurm = env ? env_get(env, "SLURM_JOB_ID") : getenv("SLURM_JOB_ID");
  const char *step = env ? env_get(env, "SLURM_STEP_ID") : getenv("SLURM_STEP_ID");
  const char *ompi = env ? env_get(env, "OMPI_MCA_ess_base_jobid") : getenv("OMPI_MCA_ess_base_jobid");
  if (run && *run) snprintf(out, size, "torchelastic:%.200s", run);
  else if (slurm && *slurm) snprintf(out, size, "slurm:%.100s.%.100s", slurm, step ? step : "");
  else if (ompi && *ompi) snprintf(out, size, "ompi:%.200s", ompi);
  else out[0] = '\0';
}

static int local_rank_of(const char **env) {
  const char *names[] = {"LOCAL_RANK", "SLURM_LOCALID", "OMPI_COMM_WORLD_LOCAL_RANK"};
  for (int i = 0; i < 3; i++) {
    const char *text = env_get(env, names[i]);
    char *end = NULL;
    if (!text || !*text) continue;
    long value = strtol(text, &end, 10);
    if (!*end && value >= 0 && value < 1000000) return (int)value;
  }
  return -1;
}

static int parent_of(int pid) {
  char path[64];
  snprintf(path, sizeof path, "/proc/%d/stat", pid);
  char *text = read_proc(path, 4096, NULL);
  const char *close_paren = text ? strrchr(text, ')') : NULL;
  int ppid = -1;
  if (close_paren) sscanf(close_paren + 1, " %*c %d", &ppid);
  free(text);
  return ppid;
}

static int descends_from(int pid, int ancestor) {
  for (int depth = 0; pid > 1 && depth < 64; depth++) {
    pid = parent_of(pid);
    if (pid == ancestor) return 1;
  }
  return 0;
}

/* Loads PID's environment; 0 when it is a rank of the job. */
static int load_candidate(int pid, const char *job, int launcher_pid, rank_process *out) {
  char path[64];
  size_t length = 0;
  snprintf(path, sizeof path, "/proc/%d/environ", pid);
  char *text = read_proc(path, ENV_BYTES, &length);
  if (!text) return -1;
  int count = 0;
  for (size_t i = 0; i < length; i++) count += text[i] == '\0';
  const char **env = calloc((size_t)count + 2, sizeof *env);
  int n = 0;
  for (size_t i = 0; env && i < length; i += strlen(text + i) + 1) env[n++] = text + i;
  char key[256];
  if (env) job_key(env, key, sizeof key);
  int local_rank = env ? local_rank_of(env) : -1;
  int member = local_rank >= 0 && (launcher_pid > 0 ? descends_from(pid, launcher_pid) : strcmp(key, job) == 0);
  if (!member) {
    free(env);
    free(text);
    return -1;
  }
  *out = (rank_process){pid, parent_of(pid), local_rank, 0, text, env};
  return 0;
}

static int collect_ranks(const char *job, int launcher_pid, rank_process *ranks, int max) {
  DIR *dir = opendir("/proc");
  int count = 0;
  struct dirent *entry;
  while (dir && (entry = readdir(dir)) != NULL && count < max) {
    if (!isdigit((unsigned char)entry->d_name[0])) continue;
    int pid = atoi(entry->d_name);
    if (pid == getpid() || load_candidate(pid, job, launcher_pid, &ranks[count]) != 0) continue;
    count++;
  }
  if (dir) closedir(dir);
  /* A child with its parent's local rank is that rank's worker, not a rank. */
  int kept = 0;
  for (int i = 0; i < count; i++) {
    int parent = -1;
    for (int j = 0; j < count; j++)
      if (ranks[j].pid == ranks[i].ppid && ranks[j].local_rank == ranks[i].local_rank) parent = j;
    if (parent >= 0) {
      ranks[parent].workers++;
      free(ranks[i].env);
      free(ranks[i].env_text);
      ranks[i].env = NULL;
      ranks[i].env_text = NULL;
    }
  }
  for (int i = 0; i < count; i++)
    if (ranks[i].env) ranks[kept++] = ranks[i];
  return kept;
}

/* Where each thread last ran (field 39 of /proc/PID/task/TID/stat). */
static int thread_cpus(int pid, stk_cpuset *last_cpus) {
  char path[64];
  snprintf(path, sizeof path, "/proc/%d/task", pid);
  DIR *dir = opendir(path);
  int threads = 0;
  struct dirent *entry;
  stk_cpuset_zero(last_cpus);
  while (dir && (entry = readdir(dir)) != NULL) {
    if (!isdigit((unsigned char)entry->d_name[0])) continue;
    char stat_path[320];
    snprintf(stat_path, sizeof stat_path, "/proc/%d/task/%s/stat", pid, entry->d_name);
    char *text = read_proc(stat_path, 4096, NULL);
    const char *field = text ? strrchr(text, ')') : NULL;
    for (int f = 2; field && f < 39; f++)
      field = strchr(field + 1, ' '); /* ") S ..." : field 3 follows the 1st space */
    if (field) {
      stk_cpuset_add(last_cpus, atoi(field + 1));
      threads++;
    }
    free(text);
  }
  if (dir) closedir(dir);
  return threads;
}

typedef struct rank_report {
  stk_rank_gpu gpu;
  stk_status gpu_status;
  stk_cpuset allowed, last_cpus, local;
  int threads, gpu_node, off_node;
  uint64_t pages[MAX_NODES], total_pages;
  char cpu_verdict[640], memory_text[512];
} rank_report;

static const char *cpus_list(const stk_cpuset *set, char *buf, size_t size) {
  size_t needed = stk_cpuset_format(set, buf, size);
  if (needed >= size && size > 4) memcpy(buf + size - 4, "...", 4);
  return buf;
}

/* The NUMA nodes of a CPU set as "0,1" (from the topology). */
static const char *nodes_of(const stk_topology *topo, const stk_cpuset *cpus, char *buf, size_t size) {
  stk_cpuset nodes;
  stk_cpuset_zero(&nodes);
  for (int cpu = stk_cpuset_first(cpus); cpu >= 0; cpu = stk_cpuset_next(cpus, cpu))
    stk_cpuset_add(&nodes, stk_topology_cpu_numa_node(topo, cpu));
  return cpus_list(&nodes, buf, size);
}

static void memory_verdict(const stk_topology *topo, rank_report *r) {
  size_t len = 0;
  r->memory_text[0] = '\0';
  for (int n = 0; n < MAX_NODES; n++) r->total_pages += r->pages[n];
  for (int n = 0; n < MAX_NODES && len + 64 < sizeof r->memory_text; n++)
    if (r->pages[n])
      len += (size_t)snprintf(r->memory_text + len, sizeof r->memory_text - len, "%snode %d: %llu (%.0f%%)",
                              len ? ", " : "", n, (unsigned long long)r->pages[n],
                              100.0 * (double)r->pages[n] / (double)r->total_pages);
  if (!r->total_pages) snprintf(r->memory_text, sizeof r->memory_text, "no resident pages reported");
  if (r->gpu_node >= 0 && r->total_pages && stk_topology_num_numa_nodes(topo) > 1 &&
      (double)r->pages[r->gpu_node] < ON_NODE_SHARE * (double)r->total_pages) {
    r->off_node = 1;
    len = strlen(r->memory_text);
    snprintf(r->memory_text + len, sizeof r->memory_text - len, "; under %.0f%% on GPU node %d", 100 * ON_NODE_SHARE,
             r->gpu_node);
  }
}

static void examine(const stk_topology *topo, const rank_process *p, rank_report *r) {
  memset(r, 0, sizeof *r);
  r->gpu_node = -1;
  stk_rank_gpu_options options;
  stk_rank_gpu_options_default(&options);
  options.env = p->env;
  r->gpu_status = stk_rank_gpu_resolve(topo, &options, &r->gpu);
  if (stk_get_affinity(p->pid, &r->allowed) != STK_OK) stk_cpuset_zero(&r->allowed);
  r->threads = thread_cpus(p->pid, &r->last_cpus);
  if (stk_process_pages_per_node(p->pid, r->pages, MAX_NODES) != STK_OK) memset(r->pages, 0, sizeof r->pages);
  char a[256];
  if (r->gpu_status == STK_OK) {
    stk_gpu_info info;
    stk_topology_gpu(topo, r->gpu.gpu, &info);
    stk_topology_gpu_local_cpus(topo, r->gpu.gpu, &r->local);
    r->gpu_node = info.numa_node_unknown ? -1 : info.numa_node;
    if (!stk_cpuset_is_subset(&r->allowed, &r->local) || !stk_cpuset_is_subset(&r->last_cpus, &r->local)) {
      r->off_node = 1;
      snprintf(r->cpu_verdict, sizeof r->cpu_verdict, "runs off GPU %d's CPUs %s", r->gpu.gpu,
               cpus_list(&r->local, a, sizeof a));
    } else {
      snprintf(r->cpu_verdict, sizeof r->cpu_verdict, "inside GPU %d's CPUs %s", r->gpu.gpu,
               cpus_list(&r->local, a, sizeof a));
    }
  } else {
    snprintf(r->cpu_verdict, sizeof r->cpu_verdict, "GPU unknown: %s", r->gpu.error);
  }
  memory_verdict(topo, r);
}

static void print_rank(const stk_topology *topo, const rank_process *p, const rank_report *r, int json, int first) {
  char allowed[512], last[512], nodes[128], last_nodes[128];
  cpus_list(&r->allowed, allowed, sizeof allowed);
  cpus_list(&r->last_cpus, last, sizeof last);
  nodes_of(topo, &r->allowed, nodes, sizeof nodes);
  nodes_of(topo, &r->last_cpus, last_nodes, sizeof last_nodes);
  if (json) {
    printf("%s{\"pid\":%d,\"local_rank\":%d,\"gpu\":%d,\"pci_bus_id\":", first ? "" : ",", p->pid, p->local_rank,
           r->gpu_status == STK_OK ? r->gpu.gpu : -1);
    stk_cli_print_json_string(r->gpu_status == STK_OK ? r->gpu.pci_bus_id : "");
    printf(
        ",\"gpu_node\":%d,\"cpus_allowed\":\"%s\",\"threads\":%d,\"threads_last_cpus\":\"%s\",\"workers\":%d,\"pages\":"
        "{",
        r->gpu_node, allowed, r->threads, last, p->workers);
    int written = 0;
    for (int n = 0; n < MAX_NODES; n++)
      if (r->pages[n]) printf("%s\"%d\":%llu", written++ ? "," : "", n, (unsigned long long)r->pages[n]);
    printf("},\"off_node\":%s,\"cpus\":", r->off_node ? "true" : "false");
    stk_cli_print_json_string(r->cpu_verdict);
    printf(",\"memory\":");
    stk_cli_print_json_string(r->memory_text);
    printf("}");
    return;
  }
  printf("%-4s  rank %d (pid %d%s", r->off_node ? "WARN" : "OK", p->local_rank, p->pid, p->workers ? ", " : "");
  if (p->workers) printf("%d worker process(es)", p->workers);
  if (r->gpu_status == STK_OK) printf(", GPU %d %s, node %d): ", r->gpu.gpu, r->gpu.pci_bus_id, r->gpu_node);
  else printf(", GPU unknown): ");
  printf("CPUs allowed %s (node %s); %d thread(s) last ran on %s (node %s): %s; pages %s%s\n", allowed, nodes,
         r->threads, last, last_nodes, r->cpu_verdict, r->memory_text,
         r->off_node ? " -> OFF-NODE: bind it with 'stoker bind --numa-binding node'" : "");
}

int stk_cli_doctor_all_ranks(const char *cmd, const char *sysfs_root, const char *job, int launcher_pid, int json) {
  char key[256] = "";
  if (job) snprintf(key, sizeof key, "%s", job);
  else job_key(NULL, key, sizeof key);
  if (!key[0] && launcher_pid <= 0) {
    stk_cli_error(
        cmd,
        "--all-ranks: no job here (TORCHELASTIC_RUN_ID, SLURM_JOB_ID or OMPI_MCA_ess_base_jobid): pass --job ID "
        "(e.g. torchelastic:RUN_ID, slurm:JOB.STEP) or --launcher-pid PID");
    return 2;
  }
  stk_topology *topo = stk_cli_load_topology(cmd, sysfs_root);
  rank_process *ranks = calloc(MAX_RANKS, sizeof *ranks);
  rank_report *report = malloc(sizeof *report);
  if (!topo || !ranks || !report) {
    stk_topology_destroy(topo);
    free(ranks);
    free(report);
    return 2;
  }
  int count = collect_ranks(key, launcher_pid, ranks, MAX_RANKS), off_node = 0;
  if (json) printf("{\"job\":\"%s\",\"launcher_pid\":%d,\"ranks\":[", key, launcher_pid);
  for (int i = 0; i < count; i++) {
    examine(topo, &ranks[i], report);
    off_node += report->off_node;
    print_rank(topo, &ranks[i], report, json, i == 0);
    free(ranks[i].env);
    free(ranks[i].env_text);
  }
  if (json) printf("]}\n");
  else if (count == 0)
    printf("INFO  no running rank of job %s found%s\n", key[0] ? key : "-",
           launcher_pid > 0 ? " under the launcher" : "");
  else printf("%s  %d rank(s), %d off their GPU's node\n", off_node ? "WARN" : "OK  ", count, off_node);
  free(ranks);
  free(report);
  stk_topology_destroy(topo);
  return 0;
}
