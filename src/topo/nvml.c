/* src/topo/nvml.c: the one place that talks to NVML. libnvidia-ml.so.1 is loaded at run time
 * with dlopen, behind a small table of function pointers, so one binary runs with or without
 * the NVIDIA driver; when it is absent the GPUs stay as sysfs lists them (has_nvml = 0).
 * Called once per topology load on a live system; not on a hot path. */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "topo_internal.h"

/* The few NVML declarations stoker needs (from NVML's public API reference). */
typedef int nvml_return;                 /* nvmlReturn_t: an enum, NVML_SUCCESS == 0 */
typedef struct nvml_device *nvml_device; /* nvmlDevice_t: an opaque handle */
#define NVML_SUCCESS                 0
#define NVML_DEVICE_NAME_BUFFER_SIZE 96
#define NVML_DEVICE_UUID_BUFFER_SIZE 96

typedef struct nvml_table {
  void *library;
  nvml_return (*init)(void);                                             /* nvmlInit_v2 */
  nvml_return (*shutdown)(void);                                         /* nvmlShutdown */
  nvml_return (*handle_by_bus_id)(const char *bus_id, nvml_device *out); /* nvmlDeviceGetHandleByPciBusId_v2 */
  nvml_return (*get_name)(nvml_device, char *name, unsigned length);     /* nvmlDeviceGetName */
  nvml_return (*get_uuid)(nvml_device, char *uuid, unsigned length);     /* nvmlDeviceGetUUID */
  nvml_return (*get_cpu_affinity)(nvml_device, unsigned words, unsigned long *cpu_words); /* nvmlDeviceGetCpuAffinity */
} nvml_table;

static int load_table(nvml_table *table, char *why, size_t why_size) {
  memset(table, 0, sizeof *table);
  table->library = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!table->library) {
    const char *reason = dlerror();
    snprintf(why, why_size, "NVML not loaded (%s)", reason ? reason : "libnvidia-ml.so.1 not found");
    return 0;
  }
  struct {
    const char *symbol;
    void **slot;
  } symbols[] = {
      {"nvmlInit_v2", (void **)&table->init},
      {"nvmlShutdown", (void **)&table->shutdown},
      {"nvmlDeviceGetHandleByPciBusId_v2", (void **)&table->handle_by_bus_id},
      {"nvmlDeviceGetName", (void **)&table->get_name},
      {"nvmlDeviceGetUUID", (void **)&table->get_uuid},
      {"nvmlDeviceGetCpuAffinity", (void **)&table->get_cpu_affinity},
  };
  for (size_t i = 0; i < sizeof symbols / sizeof symbols[0]; i++) {
    *symbols[i].slot = dlsym(table->library, symbols[i].symbol);
    if (!*symbols[i].slot) {
      snprintf(why, why_size, "NVML not used: libnvidia-ml.so.1 has no %s", symbols[i].symbol);
      dlclose(table->library);
      table->library = NULL;
      return 0;
    }
  }
  return 1;
}

stk_status stk__nvml_describe_gpus(stk_gpu_info *gpus, int gpu_count, char *why, size_t why_size) {
  nvml_table table;
  if (!load_table(&table, why, why_size)) return STK_ENOLIB;
  nvml_return rc = table.init();
  if (rc != NVML_SUCCESS) {
    snprintf(why, why_size, "NVML not used: nvmlInit_v2 failed with code %d (driver not loaded?)", rc);
    dlclose(table.library);
    return STK_ENODEV;
  }
  enum { AFFINITY_WORDS = STK_MAX_CPUS / (8 * sizeof(unsigned long)) };
  const unsigned bits_per_word = 8 * sizeof(unsigned long);
  for (int g = 0; g < gpu_count; g++) {
    stk_gpu_info *gpu = &gpus[g];
    nvml_device device = NULL;
    if (table.handle_by_bus_id(gpu->pci_bus_id, &device) != NVML_SUCCESS) continue;
    char name[NVML_DEVICE_NAME_BUFFER_SIZE] = "", uuid[NVML_DEVICE_UUID_BUFFER_SIZE] = "";
    if (table.get_name(device, name, sizeof name) != NVML_SUCCESS) name[0] = '\0';
    if (table.get_uuid(device, uuid, sizeof uuid) != NVML_SUCCESS) uuid[0] = '\0';
    unsigned long words[AFFINITY_WORDS];
    memset(words, 0, sizeof words);
    stk_cpuset_zero(&gpu->nvml_cpus);
    if (table.get_cpu_affinity(device, AFFINITY_WORDS, words) == NVML_SUCCESS) {
      for (unsigned w = 0; w < AFFINITY_WORDS; w++)
        for (unsigned bit = 0; bit < bits_per_word; bit++)
          if ((words[w] >> bit) & 1ul) stk_cpuset_add(&gpu->nvml_cpus, (int)(w * bits_per_word + bit));
    }
    if (name[0]) snprintf(gpu->name, sizeof gpu->name, "%s", name); /* else keep the driver file's */
    if (uuid[0]) snprintf(gpu->uuid, sizeof gpu->uuid, "%s", uuid);
    gpu->has_nvml = 1;
  }
  table.shutdown();
  dlclose(table.library);
  snprintf(why, why_size, "NVML used");
  return STK_OK;
}
