/* src/cli/main.c: `stoker` entry point: dispatches to one subcommand (src/cli/<name>.c). */
#include <stdarg.h>
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

/* Length of the valid UTF-8 sequence at s (1-4), or 0 when the bytes there are not one. */
static int utf8_sequence_length(const unsigned char *s) {
  int n = s[0] < 0x80 ? 1 : (s[0] & 0xE0) == 0xC0 ? 2 : (s[0] & 0xF0) == 0xE0 ? 3 : (s[0] & 0xF8) == 0xF0 ? 4 : 0;
  if (n == 0 || (n == 2 && s[0] < 0xC2) || (n == 4 && s[0] > 0xF4)) return 0;
  for (int i = 1; i < n; i++)
    if ((s[i] & 0xC0) != 0x80) return 0;
  if (n == 3 && ((s[0] == 0xE0 && s[1] < 0xA0) || (s[0] == 0xED && s[1] >= 0xA0))) return 0; /* overlong, surrogate */
  if (n == 4 && ((s[0] == 0xF0 && s[1] < 0x90) || (s[0] == 0xF4 && s[1] >= 0x90))) return 0;
  return n;
}

/* Valid JSON for any byte string: control characters as \u00XX, and each byte that is not part of
 * valid UTF-8 as the lone surrogate \udcXX (Python's surrogateescape: json.loads then
 * os.fsencode gives back the exact bytes of a file name). */
void stk_cli_print_json_string(const char *s) {
  putchar('"');
  const unsigned char *p = (const unsigned char *)s;
  while (*p) {
    int n = utf8_sequence_length(p);
    if (n == 0) {
      printf("\\udc%02x", *p++);
    } else if (*p == '"' || *p == '\\') {
      printf("\\%c", *p++);
    } else if (*p < 0x20) {
      printf("\\u%04x", *p++);
    } else {
      fwrite(p, 1, (size_t)n, stdout);
      p += n;
    }
  }
  putchar('"');
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
