/* src/cli/commands.h: the `stoker` subcommands, one file each under src/cli/. Each takes the
 * arguments after its name (argv[0] is the subcommand name) and returns the exit status.
 * The CLI uses only the public API (include/stoker/). */
#ifndef STOKER_CLI_COMMANDS_H
#define STOKER_CLI_COMMANDS_H

/* X(name, function, one-line summary) */
#define STK_CLI_COMMANDS(X)                                                                      \
  X("topo", stk_cli_topo, "show CPUs, NUMA nodes, sockets, cores and GPUs (--json)")             \
  X("plan", stk_cli_plan, "compute the CPU affinity plan for N processes per node")              \
  X("bind", stk_cli_bind, "bind CPU affinity and memory policy for a GPU, then exec a command")  \
  X("launch", stk_cli_launch, "start one bound process per GPU (a plain torchrun for one node)") \
  X("doctor", stk_cli_doctor, "check where a process's threads and memory really are")           \
  X("ops", stk_cli_ops, "list the operator registry, or show one operator's schema")             \
  X("bench", stk_cli_bench, "run a pipeline and measure images/s")                               \
  X("datagen", stk_cli_datagen, "make a sample JPEG data set")

#define STK_CLI_DECLARE_(name, fn, summary) int fn(int argc, char **argv);
STK_CLI_COMMANDS(STK_CLI_DECLARE_)
#undef STK_CLI_DECLARE_

/* Shared CLI helpers (defined in src/cli/main.c). */
/* 1 when stdout is a terminal (live progress lines are drawn only then). */
int stk_cli_isatty_stdout(void);
/* Prints "stoker <cmd>: <message>" to stderr. */
void stk_cli_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The one parser of CLI numeric options: the whole of `text` a decimal integer (no sign for the
 * unsigned one, no spaces, no trailing characters) within [lo, hi] (uint64: [0, 2^64-1]), or a
 * finite decimal number within [lo, hi]. On failure prints "stoker <cmd>: <option>: ..." naming
 * the value and the range, and returns -1. */
int stk_cli_parse_int(const char *cmd, const char *option, const char *text, long long lo, long long hi,
                      long long *out);
int stk_cli_parse_u64(const char *cmd, const char *option, const char *text, unsigned long long *out);
int stk_cli_parse_double(const char *cmd, const char *option, const char *text, double lo, double hi, double *out);
/* Prints s to stdout as a JSON string literal (quotes, backslashes and control characters escaped). */
void stk_cli_print_json_string(const char *s);
/* Recorded machines for --example NAME (src/cli/plan_examples.c): writes NAME's sysfs/procfs tree
 * into a temporary folder removed at exit and returns it (static storage), or NULL after printing
 * a one-line error that names the examples. */
const char *stk_cli_example_root(const char *cmd, const char *name);
/* One line per recorded machine ("  name  description"). */
#include <stdio.h>
void stk_cli_list_examples(FILE *out);

#endif
