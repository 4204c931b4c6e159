/* src/topo/bind.c: applying and reading back placement: CPU affinity of a thread or of every
 * thread of a process (sched_setaffinity), the NUMA memory policy (the set_mempolicy system call,
 * called directly so there is no libnuma dependency), and where a process's pages really are
 * (/proc/PID/numa_maps). Not on a hot path: called once per thread/process at start and by
 * `stoker bind|launch|doctor`. */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "stoker/topology.h"

/* Linux's memory policy modes (include/uapi/linux/mempolicy.h). */
#define KERNEL_MPOL_PREFERRED 1
#define KERNEL_MPOL_BIND      2
/* Node masks passed to set_mempolicy cover this many nodes (the kernel accepts a larger mask as
 * long as the bits past its own limit are zero). */
#define MEMPOLICY_MAX_NODES 1024

/* A kernel cpu_set_t big enough for STK_MAX_CPUS, allocated because glibc's fixed cpu_set_t
 * covers only 1024 CPUs. */
static cpu_set_t *kernel_cpuset_from(const stk_cpuset *cpus, size_t *size_out) {
  cpu_set_t *mask = CPU_ALLOC(STK_MAX_CPUS);
  if (!mask) return NULL;
  size_t size = CPU_ALLOC_SIZE(STK_MAX_CPUS);
  CPU_ZERO_S(size, mask);
  for (int cpu = stk_cpuset_first(cpus); cpu >= 0; cpu = stk_cpuset_next(cpus, cpu)) CPU_SET_S((size_t)cpu, size, mask);
  *size_out = size;
  return mask;
}

static stk_status status_from_errno(int err) {
  switch (err) {
    case EINVAL:
      return STK_EINVAL;
    case ESRCH:
      return STK_ENOENT;
    case ENOMEM:
      return STK_ENOMEM;
    case ENOSYS:
      return STK_ENOTSUP;
    default:
      return STK_ESYS;
  }
}

static stk_status set_affinity(pid_t tid, const stk_cpuset *cpus) {
  if (!cpus || stk_cpuset_is_empty(cpus)) return STK_EINVAL;
  size_t size = 0;
  cpu_set_t *mask = kernel_cpuset_from(cpus, &size);
  if (!mask) return STK_ENOMEM;
  int rc = sched_setaffinity(tid, size, mask);
  int err = errno;
  CPU_FREE(mask);
  return rc == 0 ? STK_OK : status_from_errno(err);
}

stk_status stk_bind_thread_cpus(const stk_cpuset *cpus) { return set_affinity(0, cpus); }

stk_status stk_bind_process_cpus(int pid, const stk_cpuset *cpus) {
  if (pid < 0 || !cpus || stk_cpuset_is_empty(cpus)) return STK_EINVAL;
  pid_t target = pid == 0 ? getpid() : (pid_t)pid;
  char path[64];
  snprintf(path, sizeof path, "/proc/%d/task", (int)target);
  /* Two passes: a thread created while the first pass runs inherits either the old or the new
   * mask; the second pass catches it. Threads that exit meanwhile (ESRCH) are not an error. */
  stk_status result = STK_OK;
  int bound_any = 0;
  for (int pass = 0; pass < 2 && result == STK_OK; pass++) {
    DIR *dir = opendir(path);
    if (!dir) return errno == ENOENT ? STK_ENOENT : STK_ESYS;
    struct dirent *entry;
    while ((entry = readdir(dir)) != NULL) {
      if (!isdigit((unsigned char)entry->d_name[0])) continue;
      pid_t tid = (pid_t)strtol(entry->d_name, NULL, 10);
      stk_status status = set_affinity(tid, cpus);
      if (status == STK_ENOENT) continue; /* the thread exited */
      if (status != STK_OK) {
        result = status;
        break;
      }
      bound_any = 1;
    }
    closedir(dir);
  }
  if (result == STK_OK && !bound_any) return STK_ENOENT;
  return result;
}

stk_status stk_bind_memory(int numa_node, stk_mempolicy policy) {
  if (policy == STK_MEMPOLICY_NONE) return STK_OK;
  if (policy != STK_MEMPOLICY_BIND && policy != STK_MEMPOLICY_PREFERRED) return STK_EINVAL;
  if (numa_node < 0 || numa_node >= MEMPOLICY_MAX_NODES) return STK_EINVAL;
  unsigned long nodemask[MEMPOLICY_MAX_NODES / (8 * sizeof(unsigned long))];
  memset(nodemask, 0, sizeof nodemask);
  const size_t bits_per_word = 8 * sizeof(unsigned long);
  nodemask[(size_t)numa_node / bits_per_word] |= 1ul << ((size_t)numa_node % bits_per_word);
  int mode = policy == STK_MEMPOLICY_BIND ? KERNEL_MPOL_BIND : KERNEL_MPOL_PREFERRED;
  /* maxnode is one more than the number of bits: the kernel drops the last one. */
  long rc = syscall(SYS_set_mempolicy, mode, nodemask, (unsigned long)MEMPOLICY_MAX_NODES + 1);
  if (rc == 0) return STK_OK;
  if (errno == EPERM) return STK_ENOTSUP; /* a seccomp filter (containers) forbids it */
  return status_from_errno(errno);
}

stk_status stk_get_affinity(int pid, stk_cpuset *out) {
  if (pid < 0 || !out) return STK_EINVAL;
  size_t size = CPU_ALLOC_SIZE(STK_MAX_CPUS);
  cpu_set_t *mask = CPU_ALLOC(STK_MAX_CPUS);
  if (!mask) return STK_ENOMEM;
  CPU_ZERO_S(size, mask);
  if (sched_getaffinity((pid_t)pid, size, mask) != 0) {
    int err = errno;
    CPU_FREE(mask);
    return status_from_errno(err);
  }
  stk_cpuset_zero(out);
  for (int cpu = 0; cpu < STK_MAX_CPUS; cpu++)
    if (CPU_ISSET_S((size_t)cpu, size, mask)) stk_cpuset_add(out, cpu);
  CPU_FREE(mask);
  return STK_OK;
}

stk_status stk_process_pages_per_node(int pid, uint64_t *pages, int max_nodes) {
  if (pid < 0 || !pages || max_nodes <= 0) return STK_EINVAL;
  char path[64];
  if (pid == 0) snprintf(path, sizeof path, "/proc/self/numa_maps");
  else snprintf(path, sizeof path, "/proc/%d/numa_maps", pid);
  FILE *file = fopen(path, "r");
  if (!file) {
    if (errno == ENOENT) return STK_ENOENT; /* no such process, or a kernel without NUMA */
    return errno == EACCES || errno == EPERM ? STK_ESYS : STK_EIO;
  }
  memset(pages, 0, sizeof *pages * (size_t)max_nodes);
  /* Each line: "<address> <policy> [key=value | flag]...", where N<node>=<pages> counts the
   * mapping's resident pages on that node (in the mapping's page size, as numastat -p sums). */
  char word[256];
  int c = 0;
  while (c != EOF) {
    size_t len = 0;
    while ((c = fgetc(file)) != EOF && !isspace(c))
      if (len + 1 < sizeof word) word[len++] = (char)c;
    word[len] = '\0';
    if (len < 4 || word[0] != 'N' || !isdigit((unsigned char)word[1])) continue;
    char *end = NULL;
    long node = strtol(word + 1, &end, 10);
    if (!end || *end != '=' || !isdigit((unsigned char)end[1])) continue;
    unsigned long long count = strtoull(end + 1, &end, 10);
    if (*end != '\0') continue;
    if (node >= 0 && node < max_nodes) pages[node] += count;
  }
  int read_failed = ferror(file);
  fclose(file);
  return read_failed ? STK_EIO : STK_OK;
}
