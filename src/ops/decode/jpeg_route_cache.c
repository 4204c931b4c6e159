/* src/ops/decode/jpeg_route_cache.c: the router's decisions on disk (see jpeg_route_cache.h). */
#include "ops/decode/jpeg_route_cache.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* mkdir -p, each missing level 0755; 0 when the directory exists afterwards. */
static int make_dirs(char *path) {
  for (char *p = path + 1; *p; p++) {
    if (*p != '/') continue;
    *p = '\0';
    int failed = mkdir(path, 0755) != 0 && errno != EEXIST;
    *p = '/';
    if (failed) return -1;
  }
  if (mkdir(path, 0755) != 0 && errno != EEXIST) return -1;
  struct stat st;
  return stat(path, &st) == 0 && S_ISDIR(st.st_mode) ? 0 : -1;
}

int stk__route_cache_dir(const char *setting, char *buf, size_t size) {
  int n;
  if (setting && *setting) {
    if (!strcmp(setting, "off") || !strcmp(setting, "0")) return 0;
    n = snprintf(buf, size, "%s", setting);
  } else {
    const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    if (xdg && xdg[0] == '/') n = snprintf(buf, size, "%s/stoker/router", xdg);
    else if (home && home[0]) n = snprintf(buf, size, "%s/.cache/stoker/router", home);
    else return 0;
  }
  if (n <= 0 || (size_t)n >= size) return 0;
  return make_dirs(buf) == 0;
}

static uint64_t key_hash(const char *key) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (const unsigned char *p = (const unsigned char *)key; *p; p++) h = (h ^ *p) * 0x100000001b3ull;
  return h;
}

static int file_path(const char *dir, const char *key, char *path, size_t size) {
  int n = snprintf(path, size, "%s/route-%016llx", dir, (unsigned long long)key_hash(key));
  return n > 0 && (size_t)n < size;
}

static int parse_load(const char *text, char **end, double *out) {
  double v = strtod(text, end);
  if (*end == text || **end != ' ' || !(v >= 0.0 && v <= 1.0)) return 0;
  *out = v;
  return 1;
}

int stk__route_kept_parse(const char *line, const char *key, stk__route_kept *out) {
  stk__route_kept d;
  char *end = NULL;
  int ok = parse_load(line, &end, &d.hw) && parse_load(end + 1, &end, &d.cuda) && parse_load(end + 1, &end, &d.trial);
  const size_t len = strlen(key);
  ok = ok && !strncmp(end + 1, key, len) && end[1 + len] == '\n' && end[2 + len] == '\0';
  if (ok) *out = d;
  return ok;
}

/* The file's first line, parsed (stk__route_kept_parse). */
static int read_kept(const char *path, const char *key, stk__route_kept *out) {
  FILE *f = fopen(path, "r");
  if (!f) return 0;
  char line[512];
  const int ok = fgets(line, sizeof line, f) && stk__route_kept_parse(line, key, out);
  fclose(f);
  return ok;
}

int stk__route_cache_find(const char *dir, const char *key, stk__route_kept *out, char *path, size_t path_size) {
  char own[4096];
  if (!path) path = own, path_size = sizeof own;
  return file_path(dir, key, path, path_size) && read_kept(path, key, out);
}

double stk__route_cache_load(double load) { return round(load * 100.0) / 100.0; }

void stk__route_kept_round(stk__route_kept *d) {
  d->hw = stk__route_cache_load(d->hw);
  d->cuda = stk__route_cache_load(d->cuda);
  d->trial = stk__route_cache_load(d->trial);
}

void stk__route_cache_publish(const char *dir, const char *key, stk__route_kept *d, int *kept_before) {
  *kept_before = 0;
  stk__route_kept_round(d);
  char path[4096], tmp[4096 + 32];
  if (!file_path(dir, key, path, sizeof path)) return;
  if (read_kept(path, key, d)) {
    *kept_before = 1;
    return;
  }
  snprintf(tmp, sizeof tmp, "%s.%ld.tmp", path, (long)getpid());
  int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return;
  char text[512];
  int n = snprintf(text, sizeof text, "%.2f %.2f %.2f %s\n", d->hw, d->cuda, d->trial, key);
  int written = n > 0 && (size_t)n < sizeof text && write(fd, text, (size_t)n) == n;
  if (close(fd) != 0) written = 0;
  /* another process kept its decision first: everyone takes that one */
  if (written && link(tmp, path) != 0 && errno == EEXIST && read_kept(path, key, d)) *kept_before = 1;
  unlink(tmp);
}
