/* src/cli/plan_args.h: the plan options that `stoker plan`, `bind` and `launch` share
 * (--nproc-per-node, --gpu, --mode, --cores, --unbalanced, --allowed-cpus, --sysfs-root), their
 * parsing, topology loading, and the one-line description of a rank's binding. Defined in
 * src/cli/plan.c. Uses only the public API. Not on a hot path. */
#ifndef STOKER_CLI_PLAN_ARGS_H
#define STOKER_CLI_PLAN_ARGS_H

#include <stdio.h>
#include <stddef.h>

#include "stoker/topology.h"

typedef struct stk_cli_plan_args {
  int nproc_per_node; /* -1 = not given */
  int gpu;            /* -1 = not given */
  stk_affinity_mode mode;
  stk_cores_mode cores;
  int balanced;
  int has_allowed;
  stk_cpuset allowed;
  const char *sysfs_root; /* NULL = live system */
  int json;
  int mode_explicit; /* --mode given */
  int numa_binding;  /* 1: --numa-binding MODE (torchrun's modes) instead of --mode */
  stk_numa_binding numa_mode;
  stk_numa_rules numa_rules;
  /* CUDA's visible GPUs (topology ids, CUDA order), from CUDA_VISIBLE_DEVICES; 0 = all. */
  int visible_count;
  int visible_gpus[STK_MAX_VISIBLE_GPUS];
} stk_cli_plan_args;

void stk_cli_plan_args_default(stk_cli_plan_args *args);

/* If argv[*i] is one of the shared options, consumes it (and its value: "--opt V" or
 * "--opt=V"), advances *i past it and returns 1; returns 0 when argv[*i] is not a shared option;
 * returns -1 after printing a one-line error for a bad value or a missing one. */
int stk_cli_plan_parse_option(const char *cmd, int argc, char **argv, int *i, stk_cli_plan_args *args);

/* Parses a non-negative decimal integer option value; -1 after printing an error. */
int stk_cli_parse_count(const char *cmd, const char *option, const char *text, int *out);

/* Loads the live topology or the recorded tree; prints the error and returns NULL on failure. */
stk_topology *stk_cli_load_topology(const char *cmd, const char *sysfs_root);

/* The words naming the plan's mode: "socket_unique_contiguous, all_logical" or
 * "numa-binding node, stoker rules". */
const char *stk_cli_plan_mode_text(const stk_cli_plan_args *args, char *buf, size_t size);

/* Fills args->visible_* from CUDA_VISIBLE_DEVICES (through stk_visible_gpus_resolve); prints
 * the error and returns -1 when the variable names GPUs that are not here. */
int stk_cli_resolve_visible(const char *cmd, const stk_topology *topo, stk_cli_plan_args *args);

/* Computes the plan for args (nproc must be set). ranks must have room for nproc entries.
 * Returns the stk_plan_compute status; prints the error (and returns it) for bad options. */
stk_status stk_cli_compute_plan(const char *cmd, const stk_topology *topo, const stk_cli_plan_args *args,
                                stk_plan_rank *ranks);

/* ---- binding (defined in src/cli/bind.c, used by bind and launch) ---- */
typedef struct stk_cli_bind_args {
  stk_mempolicy mempolicy; /* default STK_MEMPOLICY_PREFERRED */
  int mempolicy_explicit;  /* 1 when --membind/--preferred/--no-membind was given */
  int quiet;
  int dry_run;
} stk_cli_bind_args;

void stk_cli_bind_args_default(stk_cli_bind_args *args);
/* Like stk_cli_plan_parse_option, for --membind, --preferred, --no-membind, --quiet, --dry-run. */
int stk_cli_bind_parse_option(const char *cmd, char **argv, int *i, stk_cli_bind_args *args);
/* Parses `stoker <cmd> [plan options] [bind options] [--help] -- CMD ARGS...` (bind and launch).
 * Returns -1 when parsing went through (*command_index = index of CMD, or -1 when there is no
 * "--"), else the exit status to return at once (0 after --help, 2 after a reported error). */
int stk_cli_parse_bind_command_line(const char *cmd, int argc, char **argv, void (*usage)(FILE *),
                                    stk_cli_plan_args *plan, stk_cli_bind_args *bind, int *command_index);

/* Applies rank's plan to this process (CPU affinity unless mode is none; the memory policy on
 * the GPU's NUMA node) unless dry_run, and writes the one-line description into line.
 * Returns 0, or 1 after printing an error. */
int stk_cli_apply_binding(const char *cmd, const stk_topology *topo, const stk_cli_plan_args *plan,
                          const stk_cli_bind_args *bind, const stk_plan_rank *rank, char *line, size_t line_size);

/* ---- doctor --all-ranks (defined in src/cli/doctor_ranks.c) ---- */
/* Lists every running rank of job `job` (NULL = doctor's own job from its environment) or of
 * the launcher launcher_pid (> 0), with its CPUs, threads and pages. Returns the exit status. */
int stk_cli_doctor_all_ranks(const char *cmd, const char *sysfs_root, const char *job, int launcher_pid, int json);

#endif
