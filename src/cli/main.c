/* src/cli/main.c: `stoker` entry point: dispatches to one subcommand (src/cli/<name>.c). */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "stoker/stoker.h"
#include "commands.h"

/* Subcommands are weak so the CLI links while a subcommand's file is absent from a build. */
#define STK_CLI_WEAK_(name, fn, summary) __attribute__((weak)) int fn(int argc, char **argv);
STK_CLI_COMMANDS(STK_CLI_WEAK_)
#undef STK_CLI_WEAK_

typedef struct {
  const char *name;
  int (*fn)(int, char **);
  const char *summary;
} command;

static const command commands[] = {
#define STK_CLI_ENTRY_(name, fn, summary) {name, fn, summary},
    STK_CLI_COMMANDS(STK_CLI_ENTRY_)
#undef STK_CLI_ENTRY_
};

static void usage(FILE *out) {
  fprintf(out,
          "usage: stoker <command> [options]\n"
          "\n"
          "stoker keeps GPUs fed: a data-loading pipeline (JPEG decode + augmentation on CPU cores,\n"
          "CUDA cores and the GPU's JPEG engines) and the topology tools that keep its threads and\n"
          "buffers next to the GPU.\n"
          "\n"
          "commands:\n");
  for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
    fprintf(out, "  %-8s %s\n", commands[i].name, commands[i].summary);
  fprintf(out,
          "\n"
          "  stoker <command> --help   options of one command\n"
          "  stoker --version          version and build (CUDA, libjpeg-turbo)\n");
}

int stk_cli_isatty_stdout(void) { return isatty(STDOUT_FILENO); }

void stk_cli_error(const char *cmd, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "stoker %s: ", cmd);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
}

/* ---- Numbers ------------------------------------------------------------------------------- */
/* Digits only (after an optional '-' when `sign`): strtoll/strtoull alone accept spaces, '+', and
 * (strtoull) a '-' that wraps. */
static int plain_integer(const char *text, int sign) {
  const char *p = text;
  if (sign && *p == '-') p++;
  if (!*p) return 0;
  for (; *p; p++)
    if (*p < '0' || *p > '9') return 0;
  return 1;
}

int stk_cli_parse_int(const char *cmd, const char *option, const char *text, long long lo, long long hi,
                      long long *out) {
  errno = 0;
  long long v = plain_integer(text, 1) ? strtoll(text, NULL, 10) : 0;
  if (!plain_integer(text, 1)) stk_cli_error(cmd, "%s: not an integer: '%s'", option, text);
  else if (errno || v < lo || v > hi)
    stk_cli_error(cmd, "%s: %s is out of range (%lld to %lld)", option, text, lo, hi);
  else {
    *out = v;
    return 0;
  }
  return -1;
}

int stk_cli_parse_u64(const char *cmd, const char *option, const char *text, unsigned long long *out) {
  errno = 0;
  unsigned long long v = plain_integer(text, 0) ? strtoull(text, NULL, 10) : 0;
  if (!plain_integer(text, 0))
    stk_cli_error(cmd, "%s: not an unsigned integer: '%s' (0 to 18446744073709551615)", option, text);
  else if (errno) stk_cli_error(cmd, "%s: %s is out of range (0 to 18446744073709551615)", option, text);
  else {
    *out = v;
    return 0;
  }
  return -1;
}

int stk_cli_parse_double(const char *cmd, const char *option, const char *text, double lo, double hi, double *out) {
  char *end = NULL;
  errno = 0;
  double v = strtod(text, &end);
  if (end == text || *end || text[0] == ' ' || !isfinite(v)) stk_cli_error(cmd, "%s: not a number: '%s'", option, text);
  else if (errno || v < lo || v > hi) stk_cli_error(cmd, "%s: %s is out of range (%g to %g)", option, text, lo, hi);
  else {
    *out = v;
    return 0;
  }
  return -1;
}

/* Valid JSON for any byte string, quoted (stk_json_escape's rule: invalid UTF-8 bytes as \udcXX,
 * so json.loads then os.fsencode gives back the exact bytes of a file name). */
void stk_cli_print_json_string(const char *s) {
  char *escaped = stk_json_escape(s);
  printf("\"%s\"", escaped ? escaped : "");
  stk_free(escaped);
}

int main(int argc, char **argv) {
  if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "help") == 0) {
    usage(argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  if (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "version") == 0) {
    printf("%s\n", stk_build_info());
    return 0;
  }
  for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++) {
    if (strcmp(argv[1], commands[i].name) != 0) continue;
    if (!commands[i].fn) {
      fprintf(stderr, "stoker: '%s' is not available in this build\n", argv[1]);
      return 2;
    }
    return commands[i].fn(argc - 1, argv + 1);
  }
  fprintf(stderr, "stoker: unknown command '%s' (see 'stoker --help')\n", argv[1]);
  return 2;
}
