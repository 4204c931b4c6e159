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

/* "LOAD TRIAL KEY\n", both loads in [0, 1] and KEY exactly key, else -1. */
static double read_kept(const char *path, const char *key, double *trial) {
  FILE *f = fopen(path, "r");
  if (!f) return -1.0;
  char line[512];
  double load = -1.0, arm = -1.0, v = 0.0;
  char *end = NULL;
  if (fgets(line, sizeof line, f) && parse_load(line, &end, &v) && parse_load(end + 1, &end, &arm)) {
    size_t len = strlen(key);
    if (!strncmp(end + 1, key, len) && end[1 + len] == '\n' && end[2 + len] == '\0') load = v;
  }
  fclose(f);
  if (load >= 0.0 && trial) *trial = arm;
  return load;
}

double stk__route_cache_find(const char *dir, const char *key, double *trial, char *path, size_t path_size) {
  char own[4096];
  if (!path) path = own, path_size = sizeof own;
  if (!file_path(dir, key, path, path_size)) return -1.0;
  return read_kept(path, key, trial);
}

double stk__route_cache_load(double load) { return round(load * 100.0) / 100.0; }

double stk__route_cache_publish(const char *dir, const char *key, double load, double trial, int *kept_before,
                                double *trial_out) {
  *kept_before = 0;
  load = stk__route_cache_load(load);
  trial = stk__route_cache_load(trial);
  if (trial_out) *trial_out = trial;
  char path[4096], tmp[4096 + 32];
  if (!file_path(dir, key, path, sizeof path)) return load;
  const double kept = read_kept(path, key, trial_out);
  if (kept >= 0.0) {
    *kept_before = 1;
    return kept;
  }
  snprintf(tmp, sizeof tmp, "%s.%ld.tmp", path, (long)getpid());
  int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return load;
  char text[512];
  int n = snprintf(text, sizeof text, "%.2f %.2f %s\n", load, trial, key);
  int written = n > 0 && (size_t)n < sizeof text && write(fd, text, (size_t)n) == n;
  if (close(fd) != 0) written = 0;
  if (written && link(tmp, path) != 0 && errno == EEXIST) {
    /* another process kept its decision first: everyone takes that one */
    double their_trial = trial;
    const double theirs = read_kept(path, key, &their_trial);
    if (theirs >= 0.0) {
      *kept_before = 1;
      load = theirs;
      if (trial_out) *trial_out = their_trial;
    }
  }
  unlink(tmp);
  return load;
}
