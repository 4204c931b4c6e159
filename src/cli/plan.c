/* src/cli/plan.c: `stoker plan`: the CPU affinity plan for every rank (or one) of a node, as a
 * table or JSON; also the plan-option parsing shared with `bind` and `launch` (plan_args.h).
 * Uses only the public API. Not on a hot path. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stoker/stoker.h"
#include "commands.h"
#include "plan_args.h"

void stk_cli_plan_args_default(stk_cli_plan_args *args) {
  memset(args, 0, sizeof *args);
  stk_plan_options defaults;
  stk_plan_options_default(&defaults);
  args->nproc_per_node = -1;
  args->gpu = -1;
  args->mode = defaults.mode;
  args->cores = defaults.cores;
  args->balanced = defaults.balanced;
}

int stk_cli_parse_count(const char *cmd, const char *option, const char *text, int *out) {
  char *end = NULL;
  errno = 0;
  long value = strtol(text, &end, 10);
  if (!*text || *end || errno || value < 0 || value > (1L << 30)) {
    stk_cli_error(cmd, "%s wants a non-negative integer, got '%s'", option, text);
    return -1;
  }
  *out = (int)value;
  return 0;
}

/* Matches "--name" (value in the next argument) or "--name=value". */
static int option_value(const char *cmd, int argc, char **argv, int *i, const char *name, const char **value,
                        int *error) {
  const char *arg = argv[*i];
  size_t len = strlen(name);
  if (strncmp(arg, name, len) != 0) return 0;
  if (arg[len] == '=') {
    *value = arg + len + 1;
    return 1;
  }
  if (arg[len] != '\0') return 0;
  if (*i + 1 >= argc) {
    stk_cli_error(cmd, "%s needs a value", name);
    *error = 1;
    return 1;
  }
  *value = argv[++*i];
  return 1;
}

int stk_cli_plan_parse_option(const char *cmd, int argc, char **argv, int *i, stk_cli_plan_args *args) {
  const char *value = NULL;
  int error = 0;
  const char *arg = argv[*i];
  if (option_value(cmd, argc, argv, i, "--nproc-per-node", &value, &error)) {
    if (error || stk_cli_parse_count(cmd, "--nproc-per-node", value, &args->nproc_per_node) < 0) return -1;
    if (args->nproc_per_node < 1) {
      stk_cli_error(cmd, "--nproc-per-node must be at least 1");
      return -1;
    }
  } else if (option_value(cmd, argc, argv, i, "--gpu", &value, &error)) {
    if (error || stk_cli_parse_count(cmd, "--gpu", value, &args->gpu) < 0) return -1;
  } else if (option_value(cmd, argc, argv, i, "--mode", &value, &error)) {
    if (error) return -1;
    if (stk_affinity_mode_parse(value, &args->mode) != STK_OK) {
      stk_cli_error(cmd,
                    "unknown mode '%s' (none, socket, socket_single, socket_single_unique, "
                    "socket_unique_interleaved, socket_unique_contiguous)",
                    value);
      return -1;
    }
    args->mode_explicit = 1;
  } else if (option_value(cmd, argc, argv, i, "--numa-binding", &value, &error)) {
    if (error) return -1;
    if (stk_numa_binding_parse(value, &args->numa_mode) != STK_OK) {
      stk_cli_error(cmd, "unknown --numa-binding '%s' (node, socket, exclusive, core-complex)", value);
      return -1;
    }
    args->numa_binding = 1;
  } else if (option_value(cmd, argc, argv, i, "--numa-rules", &value, &error)) {
    if (error) return -1;
    if (stk_numa_rules_parse(value, &args->numa_rules) != STK_OK) {
      stk_cli_error(cmd, "unknown --numa-rules '%s' (stoker, torch)", value);
      return -1;
    }
  } else if (option_value(cmd, argc, argv, i, "--cores", &value, &error)) {
    if (error) return -1;
    if (stk_cores_mode_parse(value, &args->cores) != STK_OK) {
      stk_cli_error(cmd, "unknown --cores '%s' (all_logical, single_logical)", value);
      return -1;
    }
  } else if (option_value(cmd, argc, argv, i, "--allowed-cpus", &value, &error)) {
    if (error) return -1;
    char err[512];
    if (stk_cpuset_parse(value, &args->allowed, err, sizeof err) != STK_OK) {
      stk_cli_error(cmd, "--allowed-cpus: %s", err);
      return -1;
    }
    args->has_allowed = 1;
  } else if (option_value(cmd, argc, argv, i, "--sysfs-root", &value, &error)) {
    if (error) return -1;
    args->sysfs_root = value;
  } else if (option_value(cmd, argc, argv, i, "--example", &value, &error)) {
    if (error) return -1;
    if (!(args->sysfs_root = stk_cli_example_root(cmd, value))) return -1;
  } else if (strcmp(arg, "--unbalanced") == 0) {
    args->balanced = 0;
  } else if (strcmp(arg, "--balanced") == 0) {
    args->balanced = 1;
  } else if (strcmp(arg, "--json") == 0) {
    args->json = 1;
  } else {
    return 0;
  }
  ++*i;
  if (args->numa_binding && args->mode_explicit) {
    stk_cli_error(cmd, "--mode and --numa-binding exclude each other (NVIDIA's modes or torchrun's)");
    return -1;
  }
  return 1;
}

const char *stk_cli_plan_mode_text(const stk_cli_plan_args *args, char *buf, size_t size) {
  if (args->numa_binding)
    snprintf(buf, size, "numa-binding %s, %s rules", stk_numa_binding_name(args->numa_mode),
             stk_numa_rules_name(args->numa_rules));
  else
    snprintf(buf, size, "%s, %s%s", stk_affinity_mode_name(args->mode), stk_cores_mode_name(args->cores),
             args->balanced ? "" : ", unbalanced");
  return buf;
}

int stk_cli_resolve_visible(const char *cmd, const stk_topology *topo, stk_cli_plan_args *args) {
  char error[256] = "", note[256] = "";
  stk_status status = stk_visible_gpus_resolve(topo, NULL, args->visible_gpus, STK_MAX_VISIBLE_GPUS,
                                               &args->visible_count, error, sizeof error, note, sizeof note);
  if (status != STK_OK) {
    stk_cli_error(cmd, "%s", error);
    return -1;
  }
  if (note[0]) fprintf(stderr, "stoker %s: warning: %s\n", cmd, note);
  if (args->visible_count == 0) {
    stk_cli_error(cmd, "CUDA_VISIBLE_DEVICES shows no GPU");
    return -1;
  }
  return 0;
}

stk_topology *stk_cli_load_topology(const char *cmd, const char *sysfs_root) {
  stk_topology *topo = NULL;
  if (stk_topology_new(&topo) != STK_OK) {
    stk_cli_error(cmd, "out of memory");
    return NULL;
  }
  stk_topology_options options;
  stk_topology_options_default(&options);
  options.sysfs_root = sysfs_root;
  if (stk_topology_load(topo, &options) != STK_OK) {
    stk_cli_error(cmd, "%s", stk_topology_last_error(topo));
    stk_topology_destroy(topo);
    return NULL;
  }
  return topo;
}

static stk_status compute_numa_binding(const char *cmd, const stk_topology *topo, const stk_cli_plan_args *args,
                                       stk_plan_rank *ranks) {
  stk_numa_binding_options options;
  stk_numa_binding_options_default(&options);
  options.mode = args->numa_mode;
  options.rules = args->numa_rules;
  options.nproc_per_node = args->nproc_per_node;
  options.use_allowed = args->has_allowed;
  options.allowed = args->allowed;
  options.visible_count = args->visible_count;
  memcpy(options.visible_gpus, args->visible_gpus, sizeof options.visible_gpus);
  stk_status status = stk_numa_binding_compute(topo, &options, ranks);
  if (status != STK_OK && status != STK_EPLAN) stk_cli_error(cmd, "%s", ranks[0].error);
  return status;
}

stk_status stk_cli_compute_plan(const char *cmd, const stk_topology *topo, const stk_cli_plan_args *args,
                                stk_plan_rank *ranks) {
  if (args->numa_binding) return compute_numa_binding(cmd, topo, args, ranks);
  stk_plan_options options;
  stk_plan_options_default(&options);
  options.nproc_per_node = args->nproc_per_node;
  options.mode = args->mode;
  options.cores = args->cores;
  options.balanced = args->balanced;
  options.use_allowed = args->has_allowed;
  options.allowed = args->allowed;
  stk_status status = stk_plan_compute(topo, &options, ranks);
  if (status != STK_OK && status != STK_EPLAN) stk_cli_error(cmd, "%s", ranks[0].error);
  return status;
}

static void usage(FILE *out) {
  fprintf(out,
          "usage: stoker plan --nproc-per-node N [--gpu G] [--mode M | --numa-binding B [--numa-rules R]]\n"
          "                   [--cores C] [--unbalanced] [--allowed-cpus LIST] [--json]\n"
          "                   [--sysfs-root DIR | --example NAME]\n"
          "\n"
          "The CPU affinity plan for N processes on this node, one per GPU.\n"
          "  --nproc-per-node N   processes (GPUs) on the node (required)\n"
          "  --gpu G              show only rank G\n"
          "  --mode M             NVIDIA's gpu_affinity modes, rank r on GPU r (PCI bus-id order):\n"
          "                       none | socket | socket_single | socket_single_unique |\n"
          "                       socket_unique_interleaved | socket_unique_contiguous (default)\n"
          "  --numa-binding B     torchrun's modes (PyTorch 2.9), rank r on CUDA device r (through\n"
          "                       CUDA_VISIBLE_DEVICES): node | socket | exclusive | core-complex\n"
          "  --numa-rules R       stoker (default: torch's answer where it is sound, a sound one where\n"
          "                       not; see docs/topology.md) | torch (exactly torch's, failing where it does)\n"
          "  --cores C            all_logical (default: every allowed hyperthread of a core) |\n"
          "                       single_logical (the lowest-numbered one); --mode only\n"
          "  --unbalanced         let GPUs of bigger buckets take more cores (default: equal counts)\n"
          "  --allowed-cpus LIST  plan for a process restricted to LIST (default: this process's\n"
          "                       allowed CPUs; for a recorded tree, its recorded set or all online)\n"
          "  --json               {\"nproc_per_node\":N,\"mode\":..,..,\"ranks\":[{\"gpu\":..,\"cpus\":[..]}]}\n"
          "  --sysfs-root DIR     read a recorded sysfs/procfs tree instead of this machine\n"
          "  --example NAME       plan for a recorded machine shipped with stoker (works anywhere):\n");
  stk_cli_list_examples(out);
  fprintf(out, "Exit status: 0 when every shown rank has a plan, 1 when one does not, 2 for bad input.\n");
}

static void print_json_cpus(const stk_cpuset *cpus) {
  printf("[");
  const char *separator = "";
  for (int cpu = stk_cpuset_first(cpus); cpu >= 0; cpu = stk_cpuset_next(cpus, cpu)) {
    printf("%s%d", separator, cpu);
    separator = ",";
  }
  printf("]");
}

/* Parses the command line; -1 when the plan should be computed, else the exit status. */
static int parse_plan_args(const char *cmd, int argc, char **argv, stk_cli_plan_args *args) {
  for (int i = 1; i < argc;) {
    if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
      usage(stdout);
      return 0;
    }
    int parsed = stk_cli_plan_parse_option(cmd, argc, argv, &i, args);
    if (parsed < 0) return 2;
    if (parsed == 0) {
      stk_cli_error(cmd, "unknown argument '%s' (see 'stoker plan --help')", argv[i]);
      return 2;
    }
  }
  if (args->nproc_per_node < 0) {
    stk_cli_error(cmd, "--nproc-per-node N is required (see 'stoker plan --help')");
    return 2;
  }
  if (args->gpu >= 0 && args->gpu >= args->nproc_per_node) {
    stk_cli_error(cmd, "--gpu %d is out of range: --nproc-per-node %d plans GPUs 0-%d", args->gpu, args->nproc_per_node,
                  args->nproc_per_node - 1);
    return 2;
  }
  return -1;
}

static void print_plan_json(const stk_cli_plan_args *args, const stk_plan_rank *ranks, int first, int last) {
  if (args->numa_binding)
    printf("{\"nproc_per_node\":%d,\"numa_binding\":\"%s\",\"rules\":\"%s\",\"ranks\":[", args->nproc_per_node,
           stk_numa_binding_name(args->numa_mode), stk_numa_rules_name(args->numa_rules));
  else
    printf("{\"nproc_per_node\":%d,\"mode\":\"%s\",\"cores\":\"%s\",\"balanced\":%s,\"ranks\":[", args->nproc_per_node,
           stk_affinity_mode_name(args->mode), stk_cores_mode_name(args->cores), args->balanced ? "true" : "false");
  for (int r = first; r <= last; r++) {
    if (args->numa_binding) printf("%s{\"rank\":%d,\"gpu\":%d,", r == first ? "" : ",", r, ranks[r].gpu);
    else printf("%s{\"gpu\":%d,", r == first ? "" : ",", ranks[r].gpu);
    if (ranks[r].status == STK_OK) {
      printf("\"cpus\":");
      print_json_cpus(&ranks[r].cpus);
      if (args->numa_binding) printf(",\"memory_node\":%d", ranks[r].memory_node);
    } else {
      printf("\"error\":");
      stk_cli_print_json_string(ranks[r].error);
    }
    if (ranks[r].note[0]) {
      printf(",\"note\":");
      stk_cli_print_json_string(ranks[r].note);
    }
    printf("}");
  }
  printf("]}\n");
}

static void print_plan_table(const stk_topology *topo, const stk_cli_plan_args *args, const stk_plan_rank *ranks,
                             int first, int last) {
  stk_cpuset allowed;
  if (args->has_allowed) allowed = args->allowed;
  else stk_topology_allowed_cpus(topo, &allowed);
  char allowed_text[8192], mode_text[128];
  stk_cpuset_format(&allowed, allowed_text, sizeof allowed_text);
  if (args->numa_binding)
    printf("plan: %d rank(s) per node, %s, allowed CPUs %s\n", args->nproc_per_node,
           stk_cli_plan_mode_text(args, mode_text, sizeof mode_text), allowed_text);
  else
    printf("plan: %d rank(s) per node, mode %s, cores %s, %s, allowed CPUs %s\n", args->nproc_per_node,
           stk_affinity_mode_name(args->mode), stk_cores_mode_name(args->cores),
           args->balanced ? "balanced" : "unbalanced", allowed_text);
  printf("%-5s%s%-14s %-5s %-6s %s\n", args->numa_binding ? "RANK " : "", args->numa_binding ? "GPU  " : "GPU   ",
         "BUS ID", "NODE", "COUNT", args->numa_binding ? "CPUS (MEMORY NODE)" : "CPUS");
  for (int r = first; r <= last; r++) {
    stk_gpu_info gpu;
    stk_topology_gpu(topo, ranks[r].gpu, &gpu);
    char node_text[16], lead[32];
    snprintf(node_text, sizeof node_text, gpu.numa_node_unknown ? "%d?" : "%d", gpu.numa_node);
    if (args->numa_binding) snprintf(lead, sizeof lead, "%-5d%-5d", r, ranks[r].gpu);
    else snprintf(lead, sizeof lead, "%-5d ", r);
    if (ranks[r].status == STK_OK) {
      char cpus_text[8192], memory_text[48] = "";
      stk_cpuset_format(&ranks[r].cpus, cpus_text, sizeof cpus_text);
      if (args->numa_binding) {
        if (ranks[r].memory_node >= 0)
          snprintf(memory_text, sizeof memory_text, " (memory node %d)", ranks[r].memory_node);
        else snprintf(memory_text, sizeof memory_text, " (memory left alone)");
      }
      printf("%s%-14s %-5s %-6d %s%s\n", lead, gpu.pci_bus_id, node_text, stk_cpuset_count(&ranks[r].cpus), cpus_text,
             memory_text);
    } else {
      printf("%s%-14s %-5s %-6s error: %s\n", lead, gpu.pci_bus_id, node_text, "-", ranks[r].error);
    }
    if (ranks[r].note[0]) printf("      note: %s\n", ranks[r].note);
  }
}

int stk_cli_plan(int argc, char **argv) {
  const char *cmd = "plan";
  stk_cli_plan_args args;
  stk_cli_plan_args_default(&args);
  int early_exit = parse_plan_args(cmd, argc, argv, &args);
  if (early_exit >= 0) return early_exit;
  stk_topology *topo = stk_cli_load_topology(cmd, args.sysfs_root);
  if (!topo) return 2;
  stk_plan_rank *ranks = calloc((size_t)args.nproc_per_node, sizeof *ranks);
  stk_status status = STK_ENOMEM;
  if (!ranks) stk_cli_error(cmd, "out of memory");
  else if (!args.numa_binding || stk_cli_resolve_visible(cmd, topo, &args) == 0)
    status = stk_cli_compute_plan(cmd, topo, &args, ranks);
  int exit_status = 2;
  if (status == STK_OK || status == STK_EPLAN) {
    int first = args.gpu >= 0 ? args.gpu : 0, last = args.gpu >= 0 ? args.gpu : args.nproc_per_node - 1;
    exit_status = 0;
    for (int r = first; r <= last; r++) exit_status |= ranks[r].status != STK_OK;
    if (args.json) print_plan_json(&args, ranks, first, last);
    else print_plan_table(topo, &args, ranks, first, last);
  }
  free(ranks);
  stk_topology_destroy(topo);
  return exit_status;
}
