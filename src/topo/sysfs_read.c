/* src/topo/sysfs_read.c: the only way src/topo reads a file of the live system or of a recorded
 * tree (--sysfs-root): small regular files only (a FIFO, device or socket planted in a tree is
 * refused without blocking), values quoted on one line in errors, integer and cpulist parsing.
 * Not on a hot path (once per topology load). */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/common.h"
#include "topo_internal.h"

void stk__topo_set_error(stk_topology *topo, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(topo->last_error, sizeof topo->last_error, fmt, ap);
  va_end(ap);
}

void stk__topo_warn(stk_topology *topo, const char *fmt, ...) {
  char line[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  size_t used = strlen(topo->warnings);
  if (used + strlen(line) + 2 >= sizeof topo->warnings) return;
  snprintf(topo->warnings + used, sizeof topo->warnings - used, "%s%s", used ? "\n" : "", line);
}

static void full_path(const stk_topology *topo, const char *path, char *out, size_t out_size) {
  snprintf(out, out_size, "%s%s", topo->root, path);
}

int stk__topo_exists(const stk_topology *topo, const char *path) {
  char full[PATH_MAX + 256];
  full_path(topo, path, full, sizeof full);
  struct stat info;
  return lstat(full, &info) == 0 || stat(full, &info) == 0;
}

int stk__topo_read_text(const stk_topology *topo, const char *path, char *buf, size_t buf_size) {
  char full[PATH_MAX + 256];
  full_path(topo, path, full, sizeof full);
  /* The guarded open: a FIFO (no writer) or a device in a replayed tree is refused at once with
   * EINVAL ("Invalid argument" for callers that report errno), never waited on. */
  int fd = stk__open_regular(full, O_RDONLY, "sysfs file", NULL, 0);
  if (fd < 0) return errno == EISDIR ? (errno = EINVAL) : errno ? errno : EIO;
  size_t len = 0;
  while (len + 1 < buf_size) {
    ssize_t got = read(fd, buf + len, buf_size - 1 - len);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) {
      close(fd);
      return EIO;
    }
    if (got == 0) break;
    len += (size_t)got;
  }
  close(fd);
  buf[len] = '\0';
  return 0;
}

const char *stk__quote_value(const char *text, char *out, size_t out_size) {
  size_t end = strlen(text), len = 0;
  while (end > 0 && isspace((unsigned char)text[end - 1])) end--;
  for (size_t i = 0; i < end && len + 5 < out_size; i++) {
    unsigned char c = (unsigned char)text[i];
    if (c == '\n') len += (size_t)snprintf(out + len, out_size - len, "\\n");
    else if (c == '\t') len += (size_t)snprintf(out + len, out_size - len, "\\t");
    else if (c < 0x20 || c == 0x7f) len += (size_t)snprintf(out + len, out_size - len, "\\x%02x", c);
    else out[len++] = (char)c;
  }
  if (out_size) out[len < out_size ? len : out_size - 1] = '\0';
  return out;
}

int stk__topo_read_long(stk_topology *topo, const char *path, long *out) {
  char buf[64];
  if (stk__topo_read_text(topo, path, buf, sizeof buf) != 0) return 0;
  char *end = NULL;
  errno = 0;
  long value = strtol(buf, &end, 0);
  int bad = end == buf || errno;
  if (!bad) {
    while (*end && isspace((unsigned char)*end)) end++;
    bad = *end != '\0';
  }
  if (bad) {
    char quoted[160];
    stk__topo_set_error(topo, "%s%s: \"%s\" is not an integer", topo->root, path,
                        stk__quote_value(buf, quoted, sizeof quoted));
    return -1;
  }
  *out = value;
  return 1;
}

/* Parses with `parse` after trimming the trailing newline, so a message quotes the value only. */
static int read_set(stk_topology *topo, const char *path, stk_cpuset *out, size_t size,
                    stk_status (*parse)(const char *, stk_cpuset *, char *, size_t)) {
  char *buf = malloc(size);
  if (!buf) return 0;
  if (stk__topo_read_text(topo, path, buf, size) != 0) {
    free(buf);
    return 0;
  }
  size_t len = strlen(buf);
  while (len > 0 && isspace((unsigned char)buf[len - 1])) buf[--len] = '\0';
  char err[256];
  int result = 1;
  if (parse(buf, out, err, sizeof err) != STK_OK) {
    stk__topo_set_error(topo, "%s%s: %s", topo->root, path, err);
    result = -1;
  }
  free(buf);
  return result;
}

int stk__topo_read_cpulist(stk_topology *topo, const char *path, stk_cpuset *out) {
  return read_set(topo, path, out, 16384, stk_cpuset_parse);
}

int stk__topo_read_cpumask(stk_topology *topo, const char *path, stk_cpuset *out) {
  return read_set(topo, path, out, 4096, stk_cpuset_parse_mask);
}

uint64_t stk__topo_read_meminfo_total_kb(const stk_topology *topo, const char *path) {
  char *text = malloc(65536);
  if (!text) return 0;
  uint64_t total = 0;
  if (stk__topo_read_text(topo, path, text, 65536) == 0) {
    const char *key = strstr(text, "MemTotal:");
    if (key) total = strtoull(key + strlen("MemTotal:"), NULL, 10);
  }
  free(text);
  return total;
}
