/* src/cli/bench_shards.c: `stoker bench --shards SRC`: lists the tar shards SRC names (a
 * directory's *.tar files, or a list file) and spells the readers.webdataset call that the
 * built-in pipelines then read them with (stk_builtin_options.reader), so rn50-train can be
 * measured on shards against the folder it was made from. Start-up only, not a hot path. */
#include "bench_shards.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "commands.h"

typedef struct shard_list {
  char **items;
  int count, room;
} shard_list;

static int list_add(shard_list *l, const char *item, size_t len) {
  if (memchr(item, '"', len) || memchr(item, '\\', len)) {
    stk_cli_error("bench", "--shards: shard name %.*s has a '\"' or '\\', which a pipeline text cannot hold", (int)len,
                  item);
    return -1;
  }
  if (l->count == l->room) {
    int room = l->room ? 2 * l->room : 64;
    char **grown = realloc(l->items, (size_t)room * sizeof *grown);
    if (!grown) return -1;
    l->items = grown;
    l->room = room;
  }
  if (!(l->items[l->count] = strndup(item, len))) return -1;
  l->count++;
  return 0;
}

static int by_name(const void *x, const void *y) { return strcmp(*(char *const *)x, *(char *const *)y); }

static int list_dir(const char *dir, shard_list *l) {
  char real[4096];
  if (!realpath(dir, real)) {
    stk_cli_error("bench", "--shards %s: %s", dir, strerror(errno));
    return -1;
  }
  DIR *d = opendir(real);
  if (!d) {
    stk_cli_error("bench", "--shards %s: %s", dir, strerror(errno));
    return -1;
  }
  int rc = 0;
  for (struct dirent *e; rc == 0 && (e = readdir(d));) {
    size_t n = strlen(e->d_name);
    if (n < 5 || strcmp(e->d_name + n - 4, ".tar") != 0) continue;
    char path[8192];
    int len = snprintf(path, sizeof path, "%s/%s", real, e->d_name);
    rc = len > 0 && (size_t)len < sizeof path ? list_add(l, path, (size_t)len) : -1;
  }
  closedir(d);
  if (rc == 0 && l->count > 1) qsort(l->items, (size_t)l->count, sizeof *l->items, by_name);
  return rc;
}

/* A list file is text of bounded size: at most MAX_LIST bytes, lines of at most 8191 bytes, no NUL
 * byte (a tar shard or a device given by mistake is refused, never scanned for ever). */
#define MAX_LIST (64u << 20)

/* Opens `file` as a regular file without waiting on a FIFO or device; NULL with the error printed. */
static FILE *open_list(const char *file) {
  int fd = open(file, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  struct stat st;
  if (fd < 0 || fstat(fd, &st) != 0) {
    stk_cli_error("bench", "--shards %s: %s", file, strerror(errno));
    if (fd >= 0) close(fd);
    return NULL;
  }
  if (!S_ISREG(st.st_mode) || st.st_size > (off_t)MAX_LIST) {
    stk_cli_error("bench", "--shards %s: %s (give a directory of .tar shards or a text file listing them)", file,
                  S_ISREG(st.st_mode) ? "the list is larger than 64 MiB" : "not a directory or a regular file");
    close(fd);
    return NULL;
  }
  (void)fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  FILE *f = fdopen(fd, "r");
  if (!f) close(fd);
  return f;
}

/* The whole list (bounded by MAX_LIST while read), NUL-terminated; NULL with the error printed. */
static char *read_list(const char *file) {
  FILE *f = open_list(file);
  if (!f) return NULL;
  char *text = NULL;
  size_t size = 0, cap = 0, got = 1;
  while (got > 0 && size <= MAX_LIST) {
    if (cap - size < 65536 + 1) {
      char *bigger = realloc(text, cap + 65536 * 4 + 1);
      if (!bigger) break;
      text = bigger, cap += 65536 * 4 + 1;
    }
    size += got = fread(text + size, 1, 65536, f);
  }
  int failed = ferror(f) || !text || got > 0;
  fclose(f);
  const char *why = !text ? "out of memory" : size > MAX_LIST ? "the list is larger than 64 MiB" : "read error";
  if (!failed && memchr(text, '\0', size)) failed = 1, why = "it holds NUL bytes: not a text list of shards";
  if (failed) {
    stk_cli_error("bench", "--shards %s: %s (give a directory of .tar shards or a text file listing them)", file, why);
    free(text);
    return NULL;
  }
  text[size] = '\0';
  return text;
}

static int list_file(const char *file, shard_list *l) {
  char *text = read_list(file);
  if (!text) return -1;
  int rc = 0, lineno = 1;
  for (char *line = text; rc == 0 && *line; lineno++) {
    size_t n = strcspn(line, "\n");
    char *next = line[n] ? line + n + 1 : line + n;
    if (n > 8191) {
      stk_cli_error("bench", "--shards %s line %d: longer than 8191 bytes", file, lineno);
      rc = -1;
      break;
    }
    if (n && line[n - 1] == '\r') n--;
    while (n && (line[n - 1] == ' ' || line[n - 1] == '\t')) n--;
    const char *s = line;
    while (n && (*s == ' ' || *s == '\t')) s++, n--;
    if (n > 0 && *s != '#') rc = list_add(l, s, n);
    line = next;
  }
  free(text);
  return rc;
}

char *stk_cli_bench_shards_reader(const char *src, int shuffle, int *count) {
  shard_list l = {0};
  struct stat st;
  if (stat(src, &st) != 0) {
    stk_cli_error("bench", "--shards %s: %s (give a directory of .tar shards or a file listing them)", src,
                  strerror(errno));
    return NULL;
  }
  int rc = S_ISDIR(st.st_mode) ? list_dir(src, &l) : list_file(src, &l);
  if (rc == 0 && l.count == 0)
    stk_cli_error("bench", "--shards %s: no shards (%s)", src,
                  S_ISDIR(st.st_mode) ? "no *.tar files in the directory" : "the list is empty");
  char *text = NULL;
  if (rc == 0 && l.count > 0) {
    size_t size = 256;
    for (int i = 0; i < l.count; i++) size += strlen(l.items[i]) + 4;
    text = malloc(size);
    size_t at = text ? (size_t)snprintf(text, size, "readers.webdataset(paths=[") : 0;
    for (int i = 0; text && i < l.count; i++)
      at += (size_t)snprintf(text + at, size - at, "%s\"%s\"", i ? ", " : "", l.items[i]);
    if (text)
      snprintf(text + at, size - at,
               "], ext=[\"jpg;jpeg\", \"cls\"], label_ext=\"cls\", random_shuffle=%s, "
               "name=\"Reader\")",
               shuffle ? "True" : "False");
    *count = l.count;
  }
  for (int i = 0; i < l.count; i++) free(l.items[i]);
  free(l.items);
  return text;
}
