/* src/topo/topo_internal.h: internals shared by the files of src/topo/ (not public API).
 * Not on a hot path. */
#ifndef STOKER_TOPO_INTERNAL_H
#define STOKER_TOPO_INTERNAL_H

#include <stddef.h>

#include "stoker/topology.h"

#ifndef STK_INTERNAL
#define STK_INTERNAL __attribute__((visibility("hidden")))
#endif

/* Fills name, uuid, nvml_cpus and has_nvml of each GPU that NVML knows (by PCI bus id), using
 * libnvidia-ml.so.1 loaded with dlopen for the duration of the call. Returns STK_ENOLIB when
 * the library or a needed symbol is absent, STK_ENODEV when nvmlInit fails (driver not loaded);
 * the GPUs are then left as sysfs described them (has_nvml = 0) and `why` says what happened.
 * GPUs NVML does not know keep has_nvml = 0 (not an error). */
STK_INTERNAL stk_status stk__nvml_describe_gpus(stk_gpu_info *gpus, int gpu_count, char *why, size_t why_size);

#endif
