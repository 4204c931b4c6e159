/* src/topo/topo_json.c: the whole loaded topology as one JSON document (`stoker topo --json`,
 * stk_topology_to_json). Not on a hot path. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "topo_internal.h"

/* ---- JSON ------------------------------------------------------------------------------------ */

typedef struct json_buffer {
  char *data;
  size_t len, cap;
  int failed;
} json_buffer;

static void json_append(json_buffer *json, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void json_append(json_buffer *json, const char *fmt, ...) {
  if (json->failed) return;
  for (;;) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(json->data + json->len, json->cap - json->len, fmt, ap);
    va_end(ap);
    if (n < 0) {
      json->failed = 1;
      return;
    }
    if ((size_t)n < json->cap - json->len) {
      json->len += (size_t)n;
      return;
    }
    size_t bigger = (json->cap + (size_t)n + 1) * 2;
    char *grown = realloc(json->data, bigger);
    if (!grown) {
      json->failed = 1;
      return;
    }
    json->data = grown;
    json->cap = bigger;
  }
}

static void json_cpus(json_buffer *json, const stk_cpuset *cpus) {
  json_append(json, "[");
  const char *separator = "";
  for (int cpu = stk_cpuset_first(cpus); cpu >= 0; cpu = stk_cpuset_next(cpus, cpu)) {
    json_append(json, "%s%d", separator, cpu);
    separator = ",";
  }
  json_append(json, "]");
}

/* Writes s as a JSON string (escaping quotes, backslashes and control bytes). */
static void json_string(json_buffer *json, const char *s) {
  json_append(json, "\"");
  for (; *s; s++) {
    unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\') json_append(json, "\\%c", c);
    else if (c < 0x20) json_append(json, "\\u%04x", c);
    else json_append(json, "%c", c);
  }
  json_append(json, "\"");
}

stk_status stk_topology_to_json(const stk_topology *topo, char **out) {
  if (!topo || !out) return STK_EINVAL;
  json_buffer json = {malloc(4096), 0, 4096, 0};
  if (!json.data) return STK_ENOMEM;
  json_append(&json, "{\"cpus_online\":");
  json_cpus(&json, &topo->online);
  json_append(&json, ",\"allowed_cpus\":");
  json_cpus(&json, &topo->allowed);
  json_append(&json, ",\"numa_nodes\":[");
  for (int i = 0; i < topo->node_count; i++) {
    json_append(&json, "%s{\"id\":%d,\"cpus\":", i ? "," : "", topo->nodes[i].id);
    json_cpus(&json, &topo->nodes[i].cpus);
    json_append(&json, "}");
  }
  json_append(&json, "],\"sockets\":[");
  for (int i = 0; i < topo->socket_count; i++) {
    json_append(&json, "%s{\"id\":%d,\"cpus\":", i ? "," : "", topo->sockets[i].id);
    json_cpus(&json, &topo->sockets[i].cpus);
    json_append(&json, "}");
  }
  json_append(&json, "],\"gpus\":[");
  for (int g = 0; g < topo->gpu_count; g++) {
    const stk_gpu_info *gpu = &topo->gpus[g];
    json_append(&json, "%s{\"index\":%d,\"pci_bus_id\":", g ? "," : "", gpu->index);
    json_string(&json, gpu->pci_bus_id);
    json_append(&json, ",\"numa_node_raw\":%d,\"numa_node\":%d,\"local_cpus\":", gpu->numa_node_raw, gpu->numa_node);
    json_cpus(&json, &gpu->local_cpus);
    if (gpu->name[0]) {
      json_append(&json, ",\"name\":");
      json_string(&json, gpu->name);
    }
    if (gpu->uuid[0]) {
      json_append(&json, ",\"uuid\":");
      json_string(&json, gpu->uuid);
    }
    if (gpu->has_nvml) {
      json_append(&json, ",\"nvml_cpus\":");
      json_cpus(&json, &gpu->nvml_cpus);
    }
    json_append(&json, "}");
  }
  json_append(&json, "]}");
  if (json.failed) {
    free(json.data);
    return STK_ENOMEM;
  }
  *out = json.data;
  return STK_OK;
}
