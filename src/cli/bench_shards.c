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
#include "stoker/stoker.h"

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

/* A list file: one shard path a line ('#' comments, blank lines skipped), read the library's
 * bounded way (a FIFO or a device such as /dev/zero is refused at once, the file is at most
 * MAX_LIST_BYTES) and each line at most MAX_SHARD_PATH bytes. */
#define MAX_LIST_BYTES ((size_t)64 << 20)
#define MAX_SHARD_PATH 4096
static int list_file(const char *file, shard_list *l) {
  char *text = NULL, why[4400];
  if (stk_read_file(file, "--shards list", MAX_LIST_BYTES, &text, NULL, why, sizeof why) != STK_OK) {
    stk_cli_error("bench", "%s", why);
    return -1;
  }
  int rc = 0;
  long line_no = 0;
  for (const char *line = text; rc == 0 && *line;) {
    size_t n = strcspn(line, "\n"), next = n + (line[n] == '\n');
    line_no++;
    if (n > MAX_SHARD_PATH) {
      stk_cli_error("bench", "--shards %s line %ld: longer than %d bytes (not a list of shard paths?)", file, line_no,
                    MAX_SHARD_PATH);
      rc = -1;
      break;
    }
    const char *s = line;
    while (n && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r')) n--;
    while (n && (*s == ' ' || *s == '\t')) s++, n--;
    if (n > 0 && *s != '#') rc = list_add(l, s, n);
    line += next;
  }
  stk_free(text);
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
