/* src/cli/bind.c: `stoker bind`: applies one rank's affinity plan (CPU affinity, then a memory
 * policy on the GPU's NUMA node, before the command allocates anything) and execs the command.
 * The rank comes from --gpu or from the launcher already in use: torchrun (LOCAL_RANK /
 * LOCAL_WORLD_SIZE), Slurm (SLURM_LOCALID / SLURM_NTASKS_PER_NODE) or Open MPI
 * (OMPI_COMM_WORLD_LOCAL_RANK / OMPI_COMM_WORLD_LOCAL_SIZE). Also the binding helpers that
 * `stoker launch` shares. Uses only the public API. Not on a hot path. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "stoker/stoker.h"
#include "commands.h"
#include "plan_args.h"

void stk_cli_bind_args_default(stk_cli_bind_args *args) {
  memset(args, 0, sizeof *args);
  args->mempolicy = STK_MEMPOLICY_PREFERRED;
}

int stk_cli_parse_bind_command_line(const char *cmd, int argc, char **argv, void (*usage)(FILE *),
                                    stk_cli_plan_args *plan, stk_cli_bind_args *bind, int *command_index) {
  *command_index = -1;
  for (int i = 1; i < argc;) {
    if (strcmp(argv[i], "--") == 0) {
      *command_index = i + 1;
      return -1;
    }
    if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
      usage(stdout);
      return 0;
    }
    int parsed = stk_cli_plan_parse_option(cmd, argc, argv, &i, plan);
    if (parsed == 0) parsed = stk_cli_bind_parse_option(cmd, argv, &i, bind);
    if (parsed < 0) return 2;
    if (parsed == 0) {
      stk_cli_error(cmd, "unknown argument '%s' (the command goes after '--'; see 'stoker %s --help')", argv[i], cmd);
      return 2;
    }
  }
  return -1;
}

int stk_cli_bind_parse_option(const char *cmd, char **argv, int *i, stk_cli_bind_args *args) {
  const char *arg = argv[*i];
  if (strcmp(arg, "--membind") == 0 || strcmp(arg, "--preferred") == 0 || strcmp(arg, "--no-membind") == 0) {
    stk_mempolicy policy = arg[2] == 'm'   ? STK_MEMPOLICY_BIND
                           : arg[2] == 'p' ? STK_MEMPOLICY_PREFERRED
                                           : STK_MEMPOLICY_NONE;
    if (args->mempolicy_explicit && args->mempolicy != policy) {
      stk_cli_error(cmd, "--membind, --preferred and --no-membind exclude each other");
      return -1;
    }
    args->mempolicy = policy;
    args->mempolicy_explicit = 1;
  } else if (strcmp(arg, "--quiet") == 0 || strcmp(arg, "-q") == 0) {
    args->quiet = 1;
  } else if (strcmp(arg, "--dry-run") == 0) {
    args->dry_run = 1;
  } else {
    return 0;
  }
  ++*i;
  return 1;
}

static const char *policy_name(stk_mempolicy policy) {
  return policy == STK_MEMPOLICY_BIND ? "bound to" : policy == STK_MEMPOLICY_PREFERRED ? "preferred on" : "left alone";
}

int stk_cli_apply_binding(const char *cmd, const stk_topology *topo, const stk_cli_plan_args *plan,
                          const stk_cli_bind_args *bind, const stk_plan_rank *rank, char *line, size_t line_size) {
  stk_gpu_info gpu;
  if (stk_topology_gpu(topo, rank->gpu, &gpu) != STK_OK) {
    stk_cli_error(cmd, "GPU %d does not exist", rank->gpu);
    return 1;
  }
  char cpus_text[4096];
  stk_cpuset_format(&rank->cpus, cpus_text, sizeof cpus_text);
  if ((plan->numa_binding || plan->mode != STK_AFFINITY_NONE) && !bind->dry_run) {
    stk_status status = stk_bind_process_cpus(0, &rank->cpus);
    if (status != STK_OK) {
      stk_cli_error(cmd, "cannot set CPU affinity to %s: %s", cpus_text, stk_strerror(status));
      return 1;
    }
  }
  /* Memory: a guess is worse than nothing, so a rank whose memory node is unknown (the GPU's
   * node unknown or guessed, or without memory) gets no policy unless the user asked for one;
   * then the GPU's node as sysfs resolves it. */
  char memory_text[256];
  stk_mempolicy policy = bind->mempolicy;
  int memory_node = rank->memory_node >= 0 ? rank->memory_node : gpu.numa_node;
  if (policy != STK_MEMPOLICY_NONE && rank->memory_node < 0 && !bind->mempolicy_explicit) {
    policy = STK_MEMPOLICY_NONE;
    snprintf(memory_text, sizeof memory_text, "memory policy left alone (%s)",
             gpu.numa_node_unknown ? "GPU NUMA node unknown" : "the GPU's node has no memory");
  } else if (policy == STK_MEMPOLICY_NONE) {
    snprintf(memory_text, sizeof memory_text, "memory policy left alone");
  } else {
    snprintf(memory_text, sizeof memory_text, "memory %s node %d", policy_name(policy), memory_node);
  }
  if (policy != STK_MEMPOLICY_NONE && !bind->dry_run) {
    stk_status status = stk_bind_memory(memory_node, policy);
    if (status != STK_OK) {
      if (bind->mempolicy_explicit) {
        stk_cli_error(cmd, "cannot set the memory policy on node %d: %s", memory_node, stk_strerror(status));
        return 1;
      }
      snprintf(memory_text, sizeof memory_text, "memory policy NOT set (%s)", stk_strerror(status));
    }
  }
  char mode_text[128];
  stk_cli_plan_mode_text(plan, mode_text, sizeof mode_text);
  if (!plan->numa_binding && plan->mode == STK_AFFINITY_NONE)
    snprintf(line, line_size, "GPU %d (%s, node %d%s): CPU affinity left alone (mode none), %s", rank->gpu,
             gpu.pci_bus_id, gpu.numa_node, gpu.numa_node_unknown ? "?" : "", memory_text);
  else
    snprintf(line, line_size, "GPU %d (%s, node %d%s): CPUs %s (%s), %s%s%s", rank->gpu, gpu.pci_bus_id, gpu.numa_node,
             gpu.numa_node_unknown ? "?" : "", cpus_text, mode_text, memory_text, rank->note[0] ? "; note: " : "",
             rank->note);
  return 0;
}

static void usage(FILE *out) {
  fprintf(out,
          "usage: stoker bind [--gpu G] [--nproc-per-node N] [--mode M | --numa-binding B [--numa-rules R]]\n"
          "                   [--cores C] [--unbalanced]\n"
          "                   [--allowed-cpus LIST] [--membind | --preferred | --no-membind]\n"
          "                   [--quiet] [--dry-run] [--sysfs-root DIR] -- CMD ARGS...\n"
          "\n"
          "Binds this process to GPU G's share of CPUs (see 'stoker plan') and its memory to the\n"
          "GPU's NUMA node, then execs CMD. Without --gpu the local rank and local world size come\n"
          "from the launcher:\n"
          "  torchrun   LOCAL_RANK / LOCAL_WORLD_SIZE\n"
          "  Slurm      SLURM_LOCALID / SLURM_NTASKS_PER_NODE\n"
          "  Open MPI   OMPI_COMM_WORLD_LOCAL_RANK / OMPI_COMM_WORLD_LOCAL_SIZE\n"
          "so 'torchrun --nproc-per-node 8 --no-python stoker bind -- python train.py' and\n"
          "'srun stoker bind -- python train.py' both work. N defaults to the launcher's local size,\n"
          "else the GPU count.\n"
          "  --membind      MPOL_BIND: allocate only on the GPU's node\n"
          "  --preferred    MPOL_PREFERRED: prefer the GPU's node (default)\n"
          "  --no-membind   leave the memory policy alone\n"
          "  --quiet        do not print the one line saying what was done\n"
          "  --dry-run      print what would be done, bind nothing, run nothing\n"
          "  --sysfs-root   plans from a recorded tree; without --dry-run it still binds this process\n"
          "                 (the planned CPUs must exist here: useful to correct a wrong firmware table)\n"
          "  --numa-binding B  torchrun's node | socket | exclusive | core-complex: the rank is the local\n"
          "                 rank (or --gpu R), its GPU CUDA device R through CUDA_VISIBLE_DEVICES\n"
          "  plan options (--mode, --numa-binding, --numa-rules, --cores, --unbalanced, --allowed-cpus,\n"
          "  --sysfs-root): see 'stoker plan --help'\n");
}

/* Reads an integer environment variable; 1 when present and valid. */
static int env_int(const char *name, int *out) {
  const char *text = getenv(name);
  if (!text || !*text) return 0;
  char *end = NULL;
  long value = strtol(text, &end, 10);
  /* Slurm writes SLURM_TASKS_PER_NODE as "8(x2)": the leading count is what matters. */
  if (end == text || value < 0 || value > 1000000) return 0;
  *out = (int)value;
  return 1;
}

typedef struct launcher_env {
  const char *rank_name, *size_name, *size_fallback;
} launcher_env;

static const launcher_env launchers[] = {
    {"LOCAL_RANK", "LOCAL_WORLD_SIZE", NULL},
    {"SLURM_LOCALID", "SLURM_NTASKS_PER_NODE", "SLURM_TASKS_PER_NODE"},
    {"OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE", NULL},
};

/* Which rank: --gpu, else the launcher's local rank; *launcher_size gets its local size. */
static int pick_rank(const char *cmd, stk_cli_plan_args *plan, const char **source, int *launcher_size) {
  *source = "--gpu";
  *launcher_size = -1;
  if (plan->gpu >= 0) return 0;
  for (size_t l = 0; l < sizeof launchers / sizeof launchers[0] && plan->gpu < 0; l++) {
    if (!env_int(launchers[l].rank_name, &plan->gpu)) continue;
    *source = launchers[l].rank_name;
    if (!env_int(launchers[l].size_name, launcher_size) && launchers[l].size_fallback)
      env_int(launchers[l].size_fallback, launcher_size);
  }
  if (plan->gpu >= 0) return 0;
  stk_cli_error(
      cmd,
      "no --gpu and no launcher rank in the environment (LOCAL_RANK, SLURM_LOCALID or OMPI_COMM_WORLD_LOCAL_RANK)");
  return -1;
}

/* Sets nproc (the launcher's size, else the GPU count CUDA shows) and checks the rank. */
static int check_rank(const char *cmd, const stk_topology *topo, stk_cli_plan_args *plan, const char *source,
                      int launcher_size) {
  int gpu_count = stk_topology_num_gpus(topo);
  if (gpu_count == 0) {
    stk_cli_error(cmd, "no GPU found (no NVIDIA PCI display/3D controller)");
    return -1;
  }
  if (plan->numa_binding && stk_cli_resolve_visible(cmd, topo, plan) != 0) return -1;
  int usable = plan->numa_binding ? plan->visible_count : gpu_count;
  if (plan->nproc_per_node < 0) plan->nproc_per_node = launcher_size > 0 ? launcher_size : usable;
  if (plan->gpu >= plan->nproc_per_node || plan->gpu >= usable) {
    stk_cli_error(cmd, "%s %d (from %s) is out of range: %d process(es) per node, %d %sGPU(s)",
                  plan->numa_binding ? "local rank" : "GPU", plan->gpu, source, plan->nproc_per_node, usable,
                  plan->numa_binding ? "visible " : "");
    return -1;
  }
  return 0;
}

int stk_cli_bind(int argc, char **argv) {
  const char *cmd = "bind";
  stk_cli_plan_args plan;
  stk_cli_bind_args bind;
  stk_cli_plan_args_default(&plan);
  stk_cli_bind_args_default(&bind);
  int command_index = -1, launcher_size = -1;
  const char *source = NULL;
  int early_exit = stk_cli_parse_bind_command_line(cmd, argc, argv, usage, &plan, &bind, &command_index);
  if (early_exit >= 0) return early_exit;
  if (command_index < 0 || command_index >= argc) {
    stk_cli_error(cmd, "no command: usage is 'stoker bind [options] -- CMD ARGS...'");
    return 2;
  }
  if (pick_rank(cmd, &plan, &source, &launcher_size) != 0) return 2;
  stk_topology *topo = stk_cli_load_topology(cmd, plan.sysfs_root);
  if (!topo) return 2;
  stk_plan_rank *ranks = NULL;
  if (check_rank(cmd, topo, &plan, source, launcher_size) != 0 ||
      !(ranks = calloc((size_t)plan.nproc_per_node, sizeof *ranks))) {
    stk_topology_destroy(topo);
    return 2;
  }
  int exit_status = 0;
  stk_status status = stk_cli_compute_plan(cmd, topo, &plan, ranks);
  char line[8192];
  if (status != STK_OK && status != STK_EPLAN) {
    exit_status = 2;
  } else if (ranks[plan.gpu].status != STK_OK) {
    stk_cli_error(cmd, "%s", ranks[plan.gpu].error);
    exit_status = 1;
  } else if (stk_cli_apply_binding(cmd, topo, &plan, &bind, &ranks[plan.gpu], line, sizeof line) != 0) {
    exit_status = 1;
  } else if (!bind.quiet || bind.dry_run) {
    fprintf(stderr, "stoker bind: %s%s (rank %d of %d from %s) -> %s\n", bind.dry_run ? "[dry run] " : "", line,
            plan.gpu, plan.nproc_per_node, source, argv[command_index]);
  }
  free(ranks);
  stk_topology_destroy(topo);
  if (exit_status != 0 || bind.dry_run) return exit_status;
  fflush(NULL);
  execvp(argv[command_index], argv + command_index);
  stk_cli_error(cmd, "cannot run '%s': %s", argv[command_index], strerror(errno));
  return 127;
}
