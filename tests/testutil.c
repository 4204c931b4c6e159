/* tests/testutil.c: helpers shared by the C tests (see testutil.h). */
#include "testutil.h"

#include <sys/wait.h>

int stk_test_failures = 0;
int stk_test_checks = 0;

int stk_test_finish(const char *name) {
  printf("%s: %d checks, %d failed\n", name, stk_test_checks, stk_test_failures);
  return stk_test_failures == 0 ? 0 : 1;
}

int stk_test_run(const char *cmd, char **out) {
  FILE *p = popen(cmd, "r");
  if (!p) return -1;
  size_t cap = 4096, len = 0;
  char *buf = malloc(cap);
  size_t n;
  while (buf && (n = fread(buf + len, 1, cap - len - 1, p)) > 0) {
    len += n;
    if (cap - len < 2) {
      cap *= 2;
      char *bigger = realloc(buf, cap);
      if (!bigger) break;
      buf = bigger;
    }
  }
  if (buf) buf[len] = '\0';
  int status = pclose(p);
  if (out) *out = buf;
  else free(buf);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

const char *stk_test_cli(void) {
  const char *env = getenv("STOKER_CLI");
  return env && *env ? env : STOKER_CLI;
}

const char *stk_test_source_path(const char *relative) {
  static char path[4096];
  snprintf(path, sizeof path, "%s/%s", STOKER_SOURCE_DIR, relative);
  return path;
}

char *stk_test_tmpdir(const char *tag) {
  char tmpl[256];
  snprintf(tmpl, sizeof tmpl, "/tmp/stoker-%s-XXXXXX", tag);
  char *dir = mkdtemp(tmpl);
  return dir ? strdup(dir) : NULL;
}

int stk_test_remove_tree(const char *dir) {
  char cmd[8192];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  int rc = system(cmd);
  if (rc != 0) fprintf(stderr, "could not remove %s\n", dir);
  return rc;
}

unsigned long long stk_test_checkpoint_checksum(const char *text, size_t n) {
  unsigned long long h = 0xcbf29ce484222325ull;
  for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)text[i]) * 0x100000001b3ull;
  return h;
}

char *stk_test_checkpoint_edit(const char *text, const char *from, const char *to) {
  const char *at = strstr(text, from);
  size_t n = strlen(text) + (at ? strlen(to) : 0) + 40;
  char *out = malloc(n);
  if (!out) return NULL;
  if (at) snprintf(out, n, "%.*s%s%s", (int)(at - text), text, to, at + strlen(from));
  else snprintf(out, n, "%s", text);
  char *line = NULL; /* the last line starting "checksum=" */
  for (char *p = strchr(out, '\n'); p; p = strchr(p + 1, '\n'))
    if (!strncmp(p + 1, "checksum=", 9)) line = p + 1;
  if (line)
    snprintf(line, n - (size_t)(line - out), "checksum=%016llx\n",
             stk_test_checkpoint_checksum(out, (size_t)(line - out)));
  return out;
}
