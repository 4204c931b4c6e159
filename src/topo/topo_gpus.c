/* src/topo/topo_gpus.c: discovery of NVIDIA GPUs on the PCI bus: bus id, class, NUMA node
 * (validated: -1 = unknown, a node that does not exist = unknown with a warning, text that is
 * not a number = an error), local CPUs, and the UUID/model the driver lists under
 * /proc/driver/nvidia/gpus/<bus id>/information (so UUIDs are known without NVML, and in
 * recorded trees). Not on a hot path (once per load). */
#include <ctype.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "topo_internal.h"

static int compare_gpus_by_bus_id(const void *a, const void *b) {
  return strcmp(((const stk_gpu_info *)a)->pci_bus_id, ((const stk_gpu_info *)b)->pci_bus_id);
}

static int is_nvidia_gpu(long vendor, long pci_class) {
  long base_and_sub = (pci_class >> 8) & 0xffff;
  return vendor == 0x10de && (base_and_sub == 0x0300 || base_and_sub == 0x0302);
}

/* The value after "Key:" on its line in the driver's information file, trimmed. */
static void information_field(const char *text, const char *key, char *out, size_t out_size) {
  const char *at = strstr(text, key);
  if (!at) return;
  at += strlen(key);
  while (*at == ' ' || *at == '\t') at++;
  size_t len = strcspn(at, "\r\n");
  while (len > 0 && isspace((unsigned char)at[len - 1])) len--;
  if (len >= out_size) len = out_size - 1;
  memcpy(out, at, len);
  out[len] = '\0';
}

static void load_driver_information(stk_topology *topo, stk_gpu_info *gpu) {
  char path[256], text[4096];
  snprintf(path, sizeof path, "/proc/driver/nvidia/gpus/%s/information", gpu->pci_bus_id);
  if (stk__topo_read_text(topo, path, text, sizeof text) != 0) return;
  information_field(text, "GPU UUID:", gpu->uuid, sizeof gpu->uuid);
  information_field(text, "Model:", gpu->name, sizeof gpu->name);
}

/* numa_node: absent = -1 (old kernels); must be an integer >= -1; a node that is not online is
 * kept raw but treated as unknown, with a warning. */
static stk_status load_gpu_numa_node(stk_topology *topo, stk_gpu_info *gpu) {
  char path[256];
  long numa = -1;
  snprintf(path, sizeof path, "/sys/bus/pci/devices/%s/numa_node", gpu->pci_bus_id);
  int got = stk__topo_read_long(topo, path, &numa);
  if (got < 0) return STK_EPARSE;
  if (got == 0) numa = -1;
  if (numa < -1 || numa > 1000000) {
    stk__topo_set_error(topo, "%s%s: \"%ld\" is not a NUMA node (expected -1 or a node id)", topo->root, path, numa);
    return STK_EPARSE;
  }
  gpu->numa_node_raw = (int)numa;
  gpu->numa_node_unknown = numa < 0;
  if (numa >= 0 && stk__topo_node_index(topo, (int)numa) < 0) {
    stk__topo_warn(topo, "%s%s: GPU %s names NUMA node %ld, which is not online; treated as unknown", topo->root, path,
                   gpu->pci_bus_id, numa);
    gpu->numa_node_unknown = 1;
  }
  gpu->numa_node = gpu->numa_node_unknown ? 0 : gpu->numa_node_raw;
  return STK_OK;
}

/* Reads one PCI device; 1 = an NVIDIA GPU added, 0 = not a GPU, negative status on failure. */
static int load_one_device(stk_topology *topo, const char *bus_id, int *capacity) {
  char path[512];
  long vendor = 0, pci_class = 0, device = 0;
  snprintf(path, sizeof path, "/sys/bus/pci/devices/%s/vendor", bus_id);
  if (stk__topo_read_long(topo, path, &vendor) != 1) return 0;
  snprintf(path, sizeof path, "/sys/bus/pci/devices/%s/class", bus_id);
  if (stk__topo_read_long(topo, path, &pci_class) != 1 || !is_nvidia_gpu(vendor, pci_class)) return 0;
  snprintf(path, sizeof path, "/sys/bus/pci/devices/%s/device", bus_id);
  if (stk__topo_read_long(topo, path, &device) != 1) device = 0;
  if (topo->gpu_count == *capacity) {
    int bigger = *capacity ? *capacity * 2 : 8;
    stk_gpu_info *grown = realloc(topo->gpus, (size_t)bigger * sizeof *grown);
    if (!grown) {
      stk__topo_set_error(topo, "out of memory listing PCI devices");
      return -(int)STK_ENOMEM;
    }
    topo->gpus = grown;
    *capacity = bigger;
  }
  stk_gpu_info *gpu = &topo->gpus[topo->gpu_count++];
  memset(gpu, 0, sizeof *gpu);
  memcpy(gpu->pci_bus_id, bus_id, strlen(bus_id) + 1); /* length checked by the caller */
  for (char *c = gpu->pci_bus_id; *c; c++) *c = (char)tolower((unsigned char)*c);
  gpu->vendor = (uint32_t)vendor;
  gpu->device = (uint32_t)device;
  gpu->pci_class = (uint32_t)pci_class;
  stk_status status = load_gpu_numa_node(topo, gpu);
  if (status != STK_OK) return -(int)status;
  snprintf(path, sizeof path, "/sys/bus/pci/devices/%s/local_cpulist", bus_id);
  int got = stk__topo_read_cpulist(topo, path, &gpu->local_cpus);
  if (got == 0) {
    snprintf(path, sizeof path, "/sys/bus/pci/devices/%s/local_cpus", bus_id);
    got = stk__topo_read_cpumask(topo, path, &gpu->local_cpus);
  }
  if (got < 0) return -(int)STK_EPARSE;
  load_driver_information(topo, gpu);
  return 1;
}

stk_status stk__topo_load_gpus(stk_topology *topo) {
  char dir_path[PATH_MAX + 64];
  snprintf(dir_path, sizeof dir_path, "%s/sys/bus/pci/devices", topo->root);
  DIR *dir = opendir(dir_path);
  if (!dir) return STK_OK; /* no PCI bus (or none recorded): no GPU */
  int capacity = 0;
  struct dirent *entry;
  stk_status status = STK_OK;
  while ((entry = readdir(dir)) != NULL) {
    const char *bus_id = entry->d_name;
    if (bus_id[0] == '.' || strlen(bus_id) >= sizeof topo->gpus[0].pci_bus_id) continue;
    int got = load_one_device(topo, bus_id, &capacity);
    if (got < 0) {
      status = (stk_status)(-got);
      break;
    }
  }
  closedir(dir);
  if (status != STK_OK) return status;
  if (topo->gpu_count > 1) qsort(topo->gpus, (size_t)topo->gpu_count, sizeof *topo->gpus, compare_gpus_by_bus_id);
  for (int g = 0; g < topo->gpu_count; g++) topo->gpus[g].index = g;
  return STK_OK;
}
