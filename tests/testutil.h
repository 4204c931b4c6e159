/* tests/testutil.h: the tiny assertion kit every C test uses. Not on any hot path.
 * A failed CHECK prints file:line and the expression, counts, and the test exits 1 at the end.
 * A test that cannot run here calls TEST_SKIP("reason") which prints the reason and exits 77
 * (ctest's SKIP_RETURN_CODE). */
#ifndef STOKER_TESTUTIL_H
#define STOKER_TESTUTIL_H
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern int stk_test_failures;
extern int stk_test_checks;

#define CHECK(cond)                                                            \
  do {                                                                         \
    stk_test_checks++;                                                         \
    if (!(cond)) {                                                             \
      stk_test_failures++;                                                     \
      fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
    }                                                                          \
  } while (0)

#define CHECK_MSG(cond, ...)                                                   \
  do {                                                                         \
    stk_test_checks++;                                                         \
    if (!(cond)) {                                                             \
      stk_test_failures++;                                                     \
      fprintf(stderr, "%s:%d: CHECK failed: %s: ", __FILE__, __LINE__, #cond); \
      fprintf(stderr, __VA_ARGS__);                                            \
      fputc('\n', stderr);                                                     \
    }                                                                          \
  } while (0)

#define CHECK_STR(a, b) CHECK_MSG(strcmp((a), (b)) == 0, "\"%s\" != \"%s\"", (a), (b))

#define TEST_SKIP(reason)         \
  do {                            \
    printf("SKIP: %s\n", reason); \
    exit(77);                     \
  } while (0)

/* Prints "N checks, M failed" and returns the process exit status. */
int stk_test_finish(const char *name);

/* Runs a shell command, captures stdout into a malloc'd string (caller frees); returns exit status. */
int stk_test_run(const char *cmd, char **out);

/* Path of the CLI under test (env STOKER_CLI or the compiled-in default). */
const char *stk_test_cli(void);

/* Absolute path of a file under the source tree; static buffer, valid until the next call. */
const char *stk_test_source_path(const char *relative);

/* Makes a fresh temporary directory; returns its path (malloc'd). */
char *stk_test_tmpdir(const char *tag);

/* Removes a directory tree (rm -rf); 0 when done, else non-zero after saying so on stderr. */
int stk_test_remove_tree(const char *dir);

/* Checkpoint texts (docs/checkpoint.md): `text` with the first `from` replaced by `to` (unchanged
 * when `from` is absent) and its checksum line, when it has one, recomputed (FNV-1a-64 of every
 * byte before the line), so a test that forges a field reaches the check of that field rather
 * than the checksum's. Malloc'd, the caller frees. */
char *stk_test_checkpoint_edit(const char *text, const char *from, const char *to);

/* The FNV-1a-64 a checkpoint's checksum line carries for the `n` bytes before it. */
unsigned long long stk_test_checkpoint_checksum(const char *text, size_t n);

#endif
