/* src/cli/launch.c: `stoker launch`: the plain per-GPU loop for one node without torchrun:
 * N children, each bound like `stoker bind` and given LOCAL_RANK, RANK, WORLD_SIZE,
 * LOCAL_WORLD_SIZE, MASTER_ADDR=127.0.0.1 and a free MASTER_PORT as torchrun sets them.
 * Signals are forwarded, the first failure stops the others, the exit status says who failed.
 * Uses only the public API. Not on a hot path. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "stoker/stoker.h"
#include "commands.h"
#include "plan_args.h"

/* How long the others get after the first failure (SIGTERM) before SIGKILL. */
#define STOP_GRACE_SECONDS 5

static pid_t *children;
static int child_count;
static volatile sig_atomic_t forwarded_signal;

static void forward_signal(int sig) {
  forwarded_signal = sig;
  for (int i = 0; i < child_count; i++)
    if (children[i] > 0) kill(children[i], sig);
}

static void usage(FILE *out) {
  fprintf(out,
          "usage: stoker launch --nproc-per-node N [--mode M | --numa-binding B [--numa-rules R]]\n"
          "                     [--cores C] [--unbalanced]\n"
          "                     [--allowed-cpus LIST] [--membind | --preferred | --no-membind]\n"
          "                     [--quiet] [--sysfs-root DIR] -- CMD ARGS...\n"
          "\n"
          "Starts N copies of CMD on this node, copy i bound to GPU i's CPUs and NUMA node (as\n"
          "'stoker bind --gpu i'), with LOCAL_RANK=RANK=i, WORLD_SIZE=LOCAL_WORLD_SIZE=N,\n"
          "MASTER_ADDR=127.0.0.1 and a free MASTER_PORT, as torchrun sets them. SIGINT, SIGTERM,\n"
          "SIGHUP and SIGQUIT are forwarded; when one copy fails the others get SIGTERM (SIGKILL %d s\n"
          "later). Exit status: 0 when all succeed, else the first failing copy's status (128+signal\n"
          "when it was killed by a signal), 2 for bad input.\n"
          "  plan options: see 'stoker plan --help'; memory options: see 'stoker bind --help'\n",
          STOP_GRACE_SECONDS);
}

/* A port nobody listens on right now (the kernel picks it). */
static int free_port(void) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return -1;
  struct sockaddr_in address;
  memset(&address, 0, sizeof address);
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = 0;
  socklen_t length = sizeof address;
  int port = -1;
  if (bind(fd, (struct sockaddr *)&address, sizeof address) == 0 &&
      getsockname(fd, (struct sockaddr *)&address, &length) == 0)
    port = ntohs(address.sin_port);
  close(fd);
  return port;
}

static void set_env_int(const char *name, int value) {
  char text[32];
  snprintf(text, sizeof text, "%d", value);
  setenv(name, text, 1);
}

static double now_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Parses the command line; -1 to go on, else the exit status. */
static int parse_launch_args(const char *cmd, int argc, char **argv, stk_cli_plan_args *plan,
                             stk_cli_bind_args *bind_args, int *command_index) {
  int early_exit = stk_cli_parse_bind_command_line(cmd, argc, argv, usage, plan, bind_args, command_index);
  if (early_exit >= 0) return early_exit;
  if (plan->gpu >= 0) {
    stk_cli_error(cmd, "--gpu is not a launch option: launch starts one process for every GPU 0..N-1");
    return 2;
  }
  if (plan->nproc_per_node < 0) {
    stk_cli_error(cmd, "--nproc-per-node N is required (see 'stoker launch --help')");
    return 2;
  }
  if (*command_index < 0 || *command_index >= argc) {
    stk_cli_error(cmd, "no command: usage is 'stoker launch --nproc-per-node N [options] -- CMD ARGS...'");
    return 2;
  }
  return -1;
}

/* Every rank must have a plan before anything starts. Returns -1 to go on (port set), else the
 * exit status. */
static int plan_every_rank(const char *cmd, const stk_topology *topo, stk_cli_plan_args *plan, stk_plan_rank *ranks,
                           int *port) {
  if (plan->numa_binding && stk_cli_resolve_visible(cmd, topo, plan) != 0) return 2;
  stk_status status = stk_cli_compute_plan(cmd, topo, plan, ranks);
  if (status == STK_EPLAN)
    for (int r = 0; r < plan->nproc_per_node; r++)
      if (ranks[r].status != STK_OK) stk_cli_error(cmd, "%s", ranks[r].error);
  if (status != STK_OK) return status == STK_EPLAN ? 1 : 2;
  *port = free_port();
  if (*port < 0) {
    stk_cli_error(cmd, "cannot find a free TCP port for MASTER_PORT: %s", strerror(errno));
    return 1;
  }
  return -1;
}

static const int forwarded[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};
#define FORWARDED_COUNT ((int)(sizeof forwarded / sizeof forwarded[0]))

/* In the child: torchrun's variables, the binding, exec. Never returns. */
static void run_rank(const char *cmd, const stk_topology *topo, const stk_cli_plan_args *plan,
                     const stk_cli_bind_args *bind_args, const stk_plan_rank *rank, int r, int port, char **command,
                     const sigset_t *previous) {
  for (int s = 0; s < FORWARDED_COUNT; s++) signal(forwarded[s], SIG_DFL);
  sigprocmask(SIG_SETMASK, previous, NULL);
  set_env_int("LOCAL_RANK", r);
  set_env_int("RANK", r);
  set_env_int("GROUP_RANK", 0);
  set_env_int("WORLD_SIZE", plan->nproc_per_node);
  set_env_int("LOCAL_WORLD_SIZE", plan->nproc_per_node);
  setenv("MASTER_ADDR", "127.0.0.1", 1);
  set_env_int("MASTER_PORT", port);
  char line[8192];
  if (stk_cli_apply_binding(cmd, topo, plan, bind_args, rank, line, sizeof line) != 0) _exit(1);
  if (!bind_args->quiet) fprintf(stderr, "stoker launch: rank %d: %s\n", r, line);
  execvp(command[0], command);
  stk_cli_error(cmd, "rank %d: cannot run '%s': %s", r, command[0], strerror(errno));
  _exit(127);
}

/* Starts the ranks with the forwarded signals held; returns how many started (*failed = 1 when
 * a fork failed). */
static int start_ranks(const char *cmd, const stk_topology *topo, const stk_cli_plan_args *plan,
                       const stk_cli_bind_args *bind_args, const stk_plan_rank *ranks, int port, char **command,
                       int *failed) {
  struct sigaction action;
  memset(&action, 0, sizeof action);
  action.sa_handler = forward_signal;
  sigemptyset(&action.sa_mask);
  sigset_t block, previous;
  sigemptyset(&block);
  for (int s = 0; s < FORWARDED_COUNT; s++) sigaddset(&block, forwarded[s]);
  /* Signals wait while children start, so none is lost between fork and the table update. */
  sigprocmask(SIG_BLOCK, &block, &previous);
  for (int s = 0; s < FORWARDED_COUNT; s++) sigaction(forwarded[s], &action, NULL);
  int started = 0;
  *failed = 0;
  for (int r = 0; r < plan->nproc_per_node; r++) {
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
      stk_cli_error(cmd, "cannot start rank %d: %s", r, strerror(errno));
      *failed = 1;
      break;
    }
    if (pid == 0) run_rank(cmd, topo, plan, bind_args, &ranks[r], r, port, command, &previous);
    children[r] = pid;
    child_count = r + 1;
    started++;
  }
  sigprocmask(SIG_SETMASK, &previous, NULL);
  return started;
}

/* Records the first failure and stops the others; returns the exit status so far. */
static int note_exit(const char *cmd, const stk_plan_rank *ranks, int rank, int wait_status, int running,
                     int *first_failed_rank, double *stop_deadline, int exit_status) {
  int failed = !WIFEXITED(wait_status) || WEXITSTATUS(wait_status) != 0;
  if (!failed || *first_failed_rank >= 0) return exit_status;
  *first_failed_rank = rank;
  if (WIFSIGNALED(wait_status)) {
    exit_status = 128 + WTERMSIG(wait_status);
    stk_cli_error(cmd, "rank %d (GPU %d) was killed by signal %d (%s)%s", rank, ranks[rank].gpu, WTERMSIG(wait_status),
                  strsignal(WTERMSIG(wait_status)), running ? "; stopping the others" : "");
  } else {
    exit_status = WEXITSTATUS(wait_status);
    stk_cli_error(cmd, "rank %d (GPU %d) exited with status %d%s", rank, ranks[rank].gpu, exit_status,
                  running ? "; stopping the others" : "");
  }
  if (running > 0 && !forwarded_signal) {
    forward_signal(SIGTERM);
    *stop_deadline = now_seconds() + STOP_GRACE_SECONDS;
  }
  return exit_status;
}

/* Waits for all; the first failure stops the others. */
static int wait_ranks(const char *cmd, const stk_plan_rank *ranks, int started, int exit_status) {
  int running = started, first_failed_rank = -1;
  double stop_deadline = 0;
  if (exit_status != 0) {
    forward_signal(SIGTERM);
    stop_deadline = now_seconds() + STOP_GRACE_SECONDS;
  }
  while (running > 0) {
    int wait_status = 0;
    pid_t pid = waitpid(-1, &wait_status, stop_deadline > 0 ? WNOHANG : 0);
    if (pid < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if (pid == 0) {
      if (now_seconds() > stop_deadline) {
        forward_signal(SIGKILL);
        stop_deadline = now_seconds() + 3600; /* SIGKILL once */
      }
      struct timespec pause = {0, 20 * 1000 * 1000};
      nanosleep(&pause, NULL);
      continue;
    }
    int rank = -1;
    for (int r = 0; r < child_count; r++)
      if (children[r] == pid) rank = r;
    if (rank < 0) continue;
    children[rank] = 0;
    running--;
    exit_status = note_exit(cmd, ranks, rank, wait_status, running, &first_failed_rank, &stop_deadline, exit_status);
  }
  return exit_status;
}

int stk_cli_launch(int argc, char **argv) {
  const char *cmd = "launch";
  stk_cli_plan_args plan;
  stk_cli_bind_args bind_args;
  stk_cli_plan_args_default(&plan);
  stk_cli_bind_args_default(&bind_args);
  int command_index = -1, port = -1;
  int exit_status = parse_launch_args(cmd, argc, argv, &plan, &bind_args, &command_index);
  if (exit_status >= 0) return exit_status;
  stk_topology *topo = stk_cli_load_topology(cmd, plan.sysfs_root);
  if (!topo) return 2;
  int nproc = plan.nproc_per_node;
  stk_plan_rank *ranks = calloc((size_t)nproc, sizeof *ranks);
  children = calloc((size_t)nproc, sizeof *children);
  if (!ranks || !children) {
    stk_cli_error(cmd, "out of memory");
    exit_status = 2;
  } else {
    exit_status = plan_every_rank(cmd, topo, &plan, ranks, &port);
  }
  if (exit_status < 0) {
    int failed = 0;
    int started = start_ranks(cmd, topo, &plan, &bind_args, ranks, port, argv + command_index, &failed);
    exit_status = wait_ranks(cmd, ranks, started, failed ? 1 : 0);
  }
  free(ranks);
  free(children);
  children = NULL;
  child_count = 0;
  stk_topology_destroy(topo);
  return exit_status;
}
