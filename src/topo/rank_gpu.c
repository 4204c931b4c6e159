/* src/topo/rank_gpu.c: which GPU a local rank uses. The launcher's local rank (torchrun, Slurm,
 * Open MPI), CUDA_VISIBLE_DEVICES in both its forms (indices and GPU-<uuid>), and CUDA's device
 * order, resolved to topology gpu ids by PCI bus id or UUID, never by assuming that CUDA device i
 * is PCI/NVML GPU i. Pure apart from getenv when no environment array is given. Not on a hot path
 * (once per pipeline or launch). */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "topo_internal.h"

void stk_rank_gpu_options_default(stk_rank_gpu_options *options) { memset(options, 0, sizeof *options); }

static const char *lookup(const stk_rank_gpu_options *options, const char *name) {
  if (!options || !options->env) return getenv(name);
  size_t len = strlen(name);
  for (const char *const *entry = options->env; *entry; entry++)
    if (strncmp(*entry, name, len) == 0 && (*entry)[len] == '=') return *entry + len + 1;
  return NULL;
}

static void say(char *buf, size_t size, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void say(char *buf, size_t size, const char *fmt, ...) {
  if (!buf || !size) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, size, fmt, ap);
  va_end(ap);
}

/* "0000:07:00.0", "00000000:07:00.0" or "07:00.0" -> "0000:07:00.0" (lower case). */
static void normalize_bus_id(const char *text, char *out, size_t size) {
  unsigned long domain = 0, bus = 0, device = 0, function = 0;
  if (sscanf(text, "%lx:%lx:%lx.%lx", &domain, &bus, &device, &function) == 4 ||
      (domain = 0, sscanf(text, "%lx:%lx.%lx", &bus, &device, &function) == 3))
    snprintf(out, size, "%04lx:%02lx:%02lx.%lx", domain & 0xffff, bus, device, function);
  else snprintf(out, size, "%s", text);
}

static int gpu_by_bus_id(const stk_topology *topo, const char *bus_id) {
  char wanted[64], have[64];
  normalize_bus_id(bus_id, wanted, sizeof wanted);
  for (int g = 0; g < topo->gpu_count; g++) {
    normalize_bus_id(topo->gpus[g].pci_bus_id, have, sizeof have);
    if (strcmp(have, wanted) == 0) return g;
  }
  return -1;
}

/* A GPU whose UUID starts with text ("GPU-..."): its id, -1 none, -2 several. */
static int gpu_by_uuid(const stk_topology *topo, const char *text, size_t len) {
  int found = -1;
  for (int g = 0; g < topo->gpu_count; g++) {
    if (!topo->gpus[g].uuid[0] || strncasecmp(topo->gpus[g].uuid, text, len) != 0) continue;
    if (found >= 0) return -2;
    found = g;
  }
  return found;
}

/* CUDA's enumeration without CUDA: PCI order when that is certain. */
static stk_status physical_order(const stk_topology *topo, const stk_rank_gpu_options *options, char *error,
                                 size_t error_size) {
  const char *order = lookup(options, "CUDA_DEVICE_ORDER");
  if (order && strcmp(order, "PCI_BUS_ID") == 0) return STK_OK;
  for (int g = 1; g < topo->gpu_count; g++)
    if (topo->gpus[g].device != topo->gpus[0].device) {
      say(error, error_size,
          "GPUs of different models and CUDA_DEVICE_ORDER is not PCI_BUS_ID: CUDA numbers them fastest first, which "
          "stoker cannot "
          "know without CUDA; set CUDA_DEVICE_ORDER=PCI_BUS_ID");
      return STK_ENOTSUP;
    }
  return STK_OK; /* one model: CUDA's fastest-first ties are broken by PCI bus id */
}

static stk_status from_cuda_bus_ids(const stk_topology *topo, const stk_rank_gpu_options *options, int *gpus, int max,
                                    int *count, char *error, size_t error_size) {
  for (int c = 0; c < options->cuda_device_count && c < max; c++) {
    const char *bus_id = options->cuda_pci_bus_ids ? options->cuda_pci_bus_ids[c] : NULL;
    int g = bus_id ? gpu_by_bus_id(topo, bus_id) : -1;
    if (g < 0) {
      say(error, error_size, "CUDA device %d (PCI %s) is not among the GPUs sysfs lists", c,
          bus_id ? bus_id : "unknown");
      return STK_EINVAL;
    }
    gpus[(*count)++] = g;
  }
  return STK_OK;
}

/* One CUDA_VISIBLE_DEVICES entry: its gpu id, -1 = CUDA would stop here (reason in why). */
static int visible_entry(const stk_topology *topo, const char *entry, size_t len, char *why, size_t why_size,
                         stk_status *status) {
  char text[128];
  snprintf(text, sizeof text, "%.*s", (int)(len < sizeof text ? len : sizeof text - 1), entry);
  if (strncasecmp(text, "MIG-", 4) == 0) {
    say(why, why_size, "CUDA_VISIBLE_DEVICES entry \"%s\" is a MIG instance; stoker places whole GPUs only", text);
    *status = STK_ENOTSUP;
    return -1;
  }
  if (strncasecmp(text, "GPU-", 4) == 0) {
    int g = gpu_by_uuid(topo, text, strlen(text));
    if (g >= 0) return g;
    say(why, why_size, "CUDA_VISIBLE_DEVICES entry \"%s\" %s", text,
        g == -2 ? "matches several GPUs' UUIDs"
                : "matches no GPU's UUID (UUIDs come from NVML or /proc/driver/nvidia)");
    return -1;
  }
  char *end = NULL;
  errno = 0;
  long index = strtol(text, &end, 10);
  if (end == text || *end || errno || index < 0 || index >= topo->gpu_count) {
    say(why, why_size, "CUDA_VISIBLE_DEVICES entry \"%s\" names no GPU (%d present)", text, topo->gpu_count);
    return -1;
  }
  return (int)index;
}

stk_status stk_visible_gpus_resolve(const stk_topology *topo, const stk_rank_gpu_options *options, int *gpus, int max,
                                    int *count, char *error, size_t error_size, char *note, size_t note_size) {
  if (note && note_size) note[0] = '\0';
  if (!topo || !gpus || !count || max < 1) return STK_EINVAL;
  *count = 0;
  if (options && options->cuda_device_count > 0)
    return from_cuda_bus_ids(topo, options, gpus, max, count, error, error_size);
  const char *visible = lookup(options, "CUDA_VISIBLE_DEVICES");
  int need_order = !visible;
  for (const char *p = visible; p && *p && !need_order; p++)
    need_order = isdigit((unsigned char)*p) && (p == visible || p[-1] == ',');
  if (need_order) {
    stk_status status = physical_order(topo, options, error, error_size);
    if (status != STK_OK) return status;
  }
  if (!visible) {
    for (int g = 0; g < topo->gpu_count && g < max; g++) gpus[(*count)++] = g;
    return STK_OK;
  }
  for (const char *p = visible; *p && *count < max;) {
    while (*p == ' ' || *p == '\t') p++;
    size_t len = strcspn(p, ",");
    while (len > 0 && isspace((unsigned char)p[len - 1])) len--;
    stk_status status = STK_OK;
    char why[256] = "";
    int g = visible_entry(topo, p, len, why, sizeof why, &status);
    for (int i = 0; g >= 0 && i < *count; i++)
      if (gpus[i] == g) {
        snprintf(why, sizeof why, "CUDA_VISIBLE_DEVICES names GPU %s twice", topo->gpus[g].pci_bus_id);
        g = -1;
      }
    if (status != STK_OK) {
      say(error, error_size, "%s", why);
      return status;
    }
    if (g < 0) {
      say(note, note_size, "%s: CUDA ignores it and every entry after it", why);
      break;
    }
    gpus[(*count)++] = g;
    p += strcspn(p, ",");
    if (*p == ',') p++;
  }
  return STK_OK;
}

/* A non-negative integer variable: 1 found, 0 unset, -1 malformed (error set). */
static int env_count(const stk_rank_gpu_options *options, const char *name, int *out, char *error, size_t error_size) {
  const char *text = lookup(options, name);
  if (!text || !*text) return 0;
  char *end = NULL;
  errno = 0;
  long value = strtol(text, &end, 10);
  if (*end == '(' && end != text) end += strlen(end); /* Slurm's "8(x2)": the leading count */
  if (end == text || *end || errno || value < 0 || value > 1000000) {
    say(error, error_size, "%s=\"%s\" is not a non-negative integer", name, text);
    return -1;
  }
  *out = (int)value;
  return 1;
}

typedef struct launcher_names {
  const char *local_rank, *local_size, *rank, *size;
} launcher_names;

static const launcher_names launchers[] = {
    {"LOCAL_RANK", "LOCAL_WORLD_SIZE", "RANK", "WORLD_SIZE"},
    {"SLURM_LOCALID", "SLURM_NTASKS_PER_NODE", "SLURM_PROCID", "SLURM_NTASKS"},
    {"OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"},
};

static stk_status read_launcher(const stk_rank_gpu_options *options, stk_rank_gpu *out) {
  for (size_t l = 0; l < sizeof launchers / sizeof launchers[0]; l++) {
    int got = env_count(options, launchers[l].local_rank, &out->local_rank, out->error, sizeof out->error);
    if (got < 0) return STK_EINVAL;
    if (got == 0) continue;
    snprintf(out->rank_source, sizeof out->rank_source, "%s", launchers[l].local_rank);
    if (env_count(options, launchers[l].local_size, &out->local_world_size, out->error, sizeof out->error) < 0 ||
        env_count(options, launchers[l].rank, &out->rank, out->error, sizeof out->error) < 0 ||
        env_count(options, launchers[l].size, &out->world_size, out->error, sizeof out->error) < 0)
      return STK_EINVAL;
    return STK_OK;
  }
  say(out->error, sizeof out->error,
      "no launcher local rank in the environment (LOCAL_RANK, SLURM_LOCALID or OMPI_COMM_WORLD_LOCAL_RANK)");
  return STK_ENOENT;
}

stk_status stk_launcher_local_rank(const stk_rank_gpu_options *options, int *local_rank, int *local_world_size) {
  stk_rank_gpu got;
  memset(&got, 0, sizeof got);
  got.local_rank = got.local_world_size = got.rank = got.world_size = -1;
  stk_status status = read_launcher(options, &got);
  if (local_rank) *local_rank = status == STK_OK ? got.local_rank : -1;
  if (local_world_size) *local_world_size = status == STK_OK ? got.local_world_size : -1;
  return status;
}

stk_status stk_rank_gpu_resolve(const stk_topology *topo, const stk_rank_gpu_options *options, stk_rank_gpu *out) {
  if (!out) return STK_EINVAL;
  memset(out, 0, sizeof *out);
  out->local_rank = out->local_world_size = out->rank = out->world_size = out->cuda_device = out->gpu = -1;
  if (!topo) return STK_EINVAL;
  stk_status status = read_launcher(options, out);
  if (status != STK_OK) return status;
  status = stk_visible_gpus_resolve(topo, options, out->visible_gpus, STK_MAX_VISIBLE_GPUS, &out->visible_count,
                                    out->error, sizeof out->error, out->note, sizeof out->note);
  if (status != STK_OK) return status;
  /* torchrun: cuda:LOCAL_RANK. A rank that sees one GPU (Slurm --gpus-per-task, --gpu-bind) uses it. */
  out->cuda_device = out->visible_count == 1 ? 0 : out->local_rank;
  if (out->cuda_device >= out->visible_count) {
    say(out->error, sizeof out->error, "local rank %d (%s) has no GPU: CUDA shows %d", out->local_rank,
        out->rank_source, out->visible_count);
    return STK_EINVAL;
  }
  out->gpu = out->visible_gpus[out->cuda_device];
  snprintf(out->pci_bus_id, sizeof out->pci_bus_id, "%s", topo->gpus[out->gpu].pci_bus_id);
  snprintf(out->uuid, sizeof out->uuid, "%s", topo->gpus[out->gpu].uuid);
  return STK_OK;
}
