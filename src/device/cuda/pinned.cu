/* src/device/cuda/pinned.cu: the CUDA side of src/device/device.h for pinned host memory:
 * cudaHostAlloc under a memory policy bound to the GPU's NUMA node (set_mempolicy, restored
 * afterwards), with the node the pages landed on read back (move_pages). The block pool that
 * recycles it is plain C (src/device/pinned_pool.c).
 * Hot path: none (pinning runs when the pool takes a new chunk, during warm-up). */
#include <cuda_runtime_api.h>

#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "device/device.h"

/* Linux memory-policy modes (linux/mempolicy.h); declared here so no numactl headers are needed. */
#define STK_MPOL_DEFAULT   0
#define STK_MPOL_PREFERRED 1
#define STK_MPOL_BIND      2
#define STK_MAX_NUMA_NODES 1024

/* Saves the calling thread's memory policy, binds it to numa_node, and restores it afterwards. */
typedef struct saved_policy {
  int valid;
  int mode;
  unsigned long mask[STK_MAX_NUMA_NODES / (8 * sizeof(unsigned long))];
} saved_policy;

static int policy_bind(int numa_node, int mode, saved_policy *saved) {
  saved->valid = 0;
  if (numa_node < 0 || numa_node >= STK_MAX_NUMA_NODES) return -1;
  memset(saved->mask, 0, sizeof saved->mask);
  if (syscall(SYS_get_mempolicy, &saved->mode, saved->mask, (unsigned long)STK_MAX_NUMA_NODES, NULL, 0UL) != 0)
    return -1;
  saved->valid = 1;
  unsigned long mask[STK_MAX_NUMA_NODES / (8 * sizeof(unsigned long))];
  memset(mask, 0, sizeof mask);
  mask[numa_node / (8 * sizeof(unsigned long))] |= 1UL << (numa_node % (8 * sizeof(unsigned long)));
  if (syscall(SYS_set_mempolicy, mode, mask, (unsigned long)STK_MAX_NUMA_NODES + 1) != 0) return -1;
  return 0;
}

static void policy_restore(const saved_policy *saved) {
  if (!saved->valid) return;
  /* MPOL_DEFAULT takes an empty mask; other modes get back the saved one. */
  if (saved->mode == STK_MPOL_DEFAULT) syscall(SYS_set_mempolicy, STK_MPOL_DEFAULT, NULL, 0UL);
  else syscall(SYS_set_mempolicy, saved->mode, saved->mask, (unsigned long)STK_MAX_NUMA_NODES + 1);
}

/* NUMA node of the page holding addr, via move_pages(2) with nodes == NULL (query only). */
static int page_node(void *addr) {
  void *page = (void *)((uintptr_t)addr & ~(uintptr_t)(sysconf(_SC_PAGESIZE) - 1));
  int status = -1;
  if (syscall(SYS_move_pages, 0, 1UL, &page, NULL, &status, 0) != 0) return -1;
  return status >= 0 ? status : -1;
}

/* The pinning clock: the union of the intervals spent in cudaHostAlloc (under its lock: pins are
 * rare, a few per buffer grown). */
static struct {
  pthread_mutex_t lock;
  int in_flight;
  double since, total;
} g_pinning = {PTHREAD_MUTEX_INITIALIZER, 0, 0.0, 0.0};

static void pinning_mark(int starts) {
  pthread_mutex_lock(&g_pinning.lock);
  if (starts && g_pinning.in_flight++ == 0) g_pinning.since = stk__now();
  if (!starts && --g_pinning.in_flight == 0) g_pinning.total += stk__now() - g_pinning.since;
  pthread_mutex_unlock(&g_pinning.lock);
}

double stk__gpu_pinning_seconds(void) {
  pthread_mutex_lock(&g_pinning.lock);
  double s = g_pinning.total + (g_pinning.in_flight ? stk__now() - g_pinning.since : 0.0);
  pthread_mutex_unlock(&g_pinning.lock);
  return s;
}

stk_status stk__gpu_pinned_alloc(void **ptr, size_t bytes, int numa_node, int *placed_node, uint64_t *alloc_count) {
  *ptr = NULL;
  if (placed_node) *placed_node = -1;
  if (bytes == 0) bytes = 1;
  saved_policy saved;
  saved.valid = 0;
  int bound = 0;
  if (numa_node >= 0) bound = policy_bind(numa_node, STK_MPOL_BIND, &saved) == 0;
  void *p = NULL;
  const double traced = stk__alloc_trace_clock();
  /* cudaHostAlloc pins (and so faults in) every page now, under the bound policy. */
  pinning_mark(1);
  cudaError_t rc = cudaHostAlloc(&p, bytes, cudaHostAllocPortable);
  if (rc != cudaSuccess && bound) {
    /* A strict bind can fail when that node is full: retry preferring the node. */
    cudaGetLastError();
    policy_restore(&saved);
    bound = policy_bind(numa_node, STK_MPOL_PREFERRED, &saved) == 0;
    rc = cudaHostAlloc(&p, bytes, cudaHostAllocPortable);
  }
  pinning_mark(0);
  if (bound || saved.valid) policy_restore(&saved);
  if (rc != cudaSuccess) {
    cudaGetLastError();
    return rc == cudaErrorMemoryAllocation ? STK_ENOMEM : STK_ECUDA;
  }
  stk__alloc_trace("pinned", bytes, traced);
  if (placed_node) *placed_node = page_node(p);
  stk__count_alloc(alloc_count);
  *ptr = p;
  return STK_OK;
}

void stk__gpu_pinned_free(void *ptr) {
  if (ptr) cudaFreeHost(ptr);
}
