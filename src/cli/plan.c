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
static int option_value(const char *cmd, int argc, char **argv, int *i, const char *name, const char **value, int *error) {
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
      stk_cli_error(cmd, "unknown mode '%s' (none, socket, socket_single, socket_single_unique, "
                         "socket_unique_interleaved, socket_unique_contiguous)", value);
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
  return 1;
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

stk_status stk_cli_compute_plan(const char *cmd, const stk_topology *topo, const stk_cli_plan_args *args, stk_plan_rank *ranks) {
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
          "usage: stoker plan --nproc-per-node N [--gpu G] [--mode M] [--cores C] [--unbalanced]\n"
          "                   [--allowed-cpus LIST] [--json] [--sysfs-root DIR]\n"
          "\n"
          "The CPU affinity plan for N processes on this node, one per GPU 0..N-1.\n"
          "  --nproc-per-node N   processes (GPUs) on the node (required)\n"
          "  --gpu G              show only rank/GPU G\n"
          "  --mode M             none | socket | socket_single | socket_single_unique |\n"
          "                       socket_unique_interleaved | socket_unique_contiguous (default)\n"
          "  --cores C            all_logical (default: every allowed hyperthread of a core) |\n"
          "                       single_logical (the lowest-numbered one)\n"
          "  --unbalanced         let GPUs of bigger buckets take more cores (default: equal counts)\n"
          "  --allowed-cpus LIST  plan for a process restricted to LIST (default: this process's\n"
          "                       allowed CPUs; for a recorded tree, its recorded set or all online)\n"
          "  --json               {\"nproc_per_node\":N,\"mode\":..,\"cores\":..,\"balanced\":..,\"ranks\":[..]}\n"
          "  --sysfs-root DIR     read a recorded sysfs/procfs tree instead of this machine\n"
          "Exit status: 0 when every shown rank has a plan, 1 when one does not, 2 for bad input.\n");
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

int stk_cli_plan(int argc, char **argv) {
  const char *cmd = "plan";
  stk_cli_plan_args args;
  stk_cli_plan_args_default(&args);
  for (int i = 1; i < argc;) {
    if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
      usage(stdout);
      return 0;
    }
    int parsed = stk_cli_plan_parse_option(cmd, argc, argv, &i, &args);
    if (parsed < 0) return 2;
    if (parsed == 0) {
      stk_cli_error(cmd, "unknown argument '%s' (see 'stoker plan --help')", argv[i]);
      return 2;
    }
  }
  if (args.nproc_per_node < 0) {
    stk_cli_error(cmd, "--nproc-per-node N is required (see 'stoker plan --help')");
    return 2;
  }
  if (args.gpu >= 0 && args.gpu >= args.nproc_per_node) {
    stk_cli_error(cmd, "--gpu %d is out of range: --nproc-per-node %d plans GPUs 0-%d", args.gpu, args.nproc_per_node,
                  args.nproc_per_node - 1);
    return 2;
  }
  stk_topology *topo = stk_cli_load_topology(cmd, args.sysfs_root);
  if (!topo) return 2;
  stk_plan_rank *ranks = calloc((size_t)args.nproc_per_node, sizeof *ranks);
  if (!ranks) {
    stk_cli_error(cmd, "out of memory");
    stk_topology_destroy(topo);
    return 2;
  }
  stk_status status = stk_cli_compute_plan(cmd, topo, &args, ranks);
  if (status != STK_OK && status != STK_EPLAN) {
    free(ranks);
    stk_topology_destroy(topo);
    return 2;
  }
  int first = args.gpu >= 0 ? args.gpu : 0, last = args.gpu >= 0 ? args.gpu : args.nproc_per_node - 1;
  int failed = 0;
  for (int r = first; r <= last; r++) failed |= ranks[r].status != STK_OK;
  if (args.json) {
    printf("{\"nproc_per_node\":%d,\"mode\":\"%s\",\"cores\":\"%s\",\"balanced\":%s,\"ranks\":[", args.nproc_per_node,
           stk_affinity_mode_name(args.mode), stk_cores_mode_name(args.cores), args.balanced ? "true" : "false");
    for (int r = first; r <= last; r++) {
      printf("%s{\"gpu\":%d,", r == first ? "" : ",", ranks[r].gpu);
      if (ranks[r].status == STK_OK) {
        printf("\"cpus\":");
        print_json_cpus(&ranks[r].cpus);
      } else {
        printf("\"error\":");
        stk_cli_print_json_string(ranks[r].error);
      }
      printf("}");
    }
    printf("]}\n");
  } else {
    stk_cpuset allowed;
    if (args.has_allowed)
      allowed = args.allowed;
    else
      stk_topology_allowed_cpus(topo, &allowed);
    char allowed_text[8192];
    stk_cpuset_format(&allowed, allowed_text, sizeof allowed_text);
    printf("plan: %d rank(s) per node, mode %s, cores %s, %s, allowed CPUs %s\n", args.nproc_per_node,
           stk_affinity_mode_name(args.mode), stk_cores_mode_name(args.cores), args.balanced ? "balanced" : "unbalanced",
           allowed_text);
    printf("%-5s %-14s %-5s %-6s %s\n", "GPU", "BUS ID", "NODE", "COUNT", "CPUS");
    for (int r = first; r <= last; r++) {
      stk_gpu_info gpu;
      stk_topology_gpu(topo, r, &gpu);
      char node_text[16];
      snprintf(node_text, sizeof node_text, gpu.numa_node_unknown ? "%d?" : "%d", gpu.numa_node);
      if (ranks[r].status == STK_OK) {
        char cpus_text[8192];
        stk_cpuset_format(&ranks[r].cpus, cpus_text, sizeof cpus_text);
        printf("%-5d %-14s %-5s %-6d %s\n", r, gpu.pci_bus_id, node_text, stk_cpuset_count(&ranks[r].cpus), cpus_text);
      } else {
        printf("%-5d %-14s %-5s %-6s error: %s\n", r, gpu.pci_bus_id, node_text, "-", ranks[r].error);
      }
    }
  }
  free(ranks);
  stk_topology_destroy(topo);
  return failed ? 1 : 0;
}
