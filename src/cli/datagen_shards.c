/* src/cli/datagen_shards.c: `stoker datagen DIR --shards N` writes a WebDataset copy of the data
 * set in DIR (one subdirectory per class, as datagen writes it) to DIR/shards/: N POSIX tar files
 * (GNU 'L' records for names over 100 bytes) with one sample per image -- "<class>/<stem>.jpg"
 * and "<class>/<stem>.cls" (the class index, decimal text) -- in an order shuffled by the seed
 * (a sample's shard says nothing of its class), plus an index per tar (DALI's wds2idx v1.2
 * format). Not a hot path; uses no stoker API. */
#include "datagen_shards.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "commands.h"
#include "stoker/stoker.h"

typedef struct item {
  char *path; /* relative to DIR: "class_003/img_000017.jpg" */
  int label;
} item;

static int by_path(const void *a, const void *b) { return strcmp(((const item *)a)->path, ((const item *)b)->path); }
static int by_name(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static uint64_t mix64(uint64_t x) {
  x ^= x >> 30, x *= 0xbf58476d1ce4e5b9ull, x ^= x >> 27, x *= 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

/* Lists DIR/<class>/<file> for every class directory (sorted), label = class position. */
static item *list_items(const char *dir, size_t *count) {
  DIR *d = opendir(dir);
  if (!d) return NULL;
  char **classes = NULL;
  size_t nc = 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    char p[4096];
    struct stat s;
    snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
    if (e->d_name[0] == '.' || !strcmp(e->d_name, "shards") || stat(p, &s) != 0 || !S_ISDIR(s.st_mode)) continue;
    classes = realloc(classes, (nc + 1) * sizeof *classes);
    classes[nc++] = strdup(e->d_name);
  }
  closedir(d);
  qsort(classes, nc, sizeof *classes, by_name);
  item *items = NULL;
  size_t n = 0;
  for (size_t c = 0; c < nc; c++) {
    char p[4096];
    snprintf(p, sizeof p, "%s/%s", dir, classes[c]);
    DIR *cd = opendir(p);
    size_t first = n;
    while (cd && (e = readdir(cd)) != NULL) {
      if (e->d_name[0] == '.') continue;
      items = realloc(items, (n + 1) * sizeof *items);
      char rel[4096];
      snprintf(rel, sizeof rel, "%s/%s", classes[c], e->d_name);
      items[n++] = (item){strdup(rel), (int)c};
    }
    if (cd) closedir(cd);
    qsort(items + first, n - first, sizeof *items, by_path);
    free(classes[c]);
  }
  free(classes);
  *count = n;
  return items;
}

static void put_header(FILE *f, const char *name, uint64_t size, char type) {
  unsigned char h[512] = {0};
  snprintf((char *)h, 100, "%s", name);
  memcpy(h + 100, "0000644", 8);
  memcpy(h + 108, "0000000", 8);
  memcpy(h + 116, "0000000", 8);
  char num[32];
  snprintf(num, sizeof num, "%011" PRIo64, size);
  memcpy(h + 124, num, 12);
  memcpy(h + 136, "00000000000", 12);
  h[156] = (unsigned char)type;
  memcpy(h + 257, "ustar  ", 8); /* GNU magic: 'L' long names */
  memset(h + 148, ' ', 8);
  unsigned sum = 0;
  for (int i = 0; i < 512; i++) sum += h[i];
  snprintf(num, sizeof num, "%06o", sum);
  memcpy(h + 148, num, 7);
  fwrite(h, 1, 512, f);
}

static void pad(FILE *f, uint64_t size) {
  static const char zeros[512];
  if (size % 512) fwrite(zeros, 1, 512 - size % 512, f);
}

/* Appends one member; returns its data offset. */
static uint64_t put_member(FILE *f, const char *name, const void *data, size_t size) {
  if (strlen(name) >= 100) {
    put_header(f, "././@LongLink", strlen(name) + 1, 'L');
    fwrite(name, 1, strlen(name) + 1, f);
    pad(f, strlen(name) + 1);
  }
  put_header(f, name, size, '0');
  uint64_t offset = (uint64_t)ftello(f);
  fwrite(data, 1, size, f);
  pad(f, size);
  return offset;
}

static int write_shard(const char *dir, const item *items, size_t n, long k, uint64_t *bytes) {
  char tar_path[4096], idx_path[4096];
  snprintf(tar_path, sizeof tar_path, "%s/shards/shard-%05ld.tar", dir, k);
  snprintf(idx_path, sizeof idx_path, "%s/shards/shard-%05ld.idx", dir, k);
  FILE *tar = fopen(tar_path, "wb"), *idx = fopen(idx_path, "w");
  if (!tar || !idx) {
    stk_cli_error("datagen", "cannot write %s: %s", tar_path, strerror(errno));
    if (tar) fclose(tar);
    if (idx) fclose(idx);
    return 1;
  }
  fprintf(idx, "v1.2 %zu\n", n);
  for (size_t i = 0; i < n; i++) {
    char src[8192], key[4096], name[4200], label[16];
    snprintf(src, sizeof src, "%s/%s", dir, items[i].path);
    snprintf(key, sizeof key, "%s", items[i].path);
    char *slash = strrchr(key, '/'), *dot = strchr(slash ? slash : key, '.');
    if (dot) *dot = '\0';
    char *data = NULL, why[8];
    size_t got = 0; /* a FIFO or device in the folder is passed over, not waited on */
    if (stk_read_file(src, "image", (size_t)1 << 30, &data, &got, why, sizeof why) != STK_OK) continue;
    snprintf(name, sizeof name, "%s.jpg", key);
    uint64_t off = put_member(tar, name, data, got);
    const char *base = strrchr(name, '/') ? strrchr(name, '/') + 1 : name;
    fprintf(idx, "jpg %" PRIu64 " %zu %s", off, got, base);
    int len = snprintf(label, sizeof label, "%d\n", items[i].label);
    snprintf(name, sizeof name, "%s.cls", key);
    off = put_member(tar, name, label, (size_t)len);
    fprintf(idx, " cls %" PRIu64 " %d %s\n", off, len, base);
    stk_free(data);
  }
  static const char end[1024];
  fwrite(end, 1, sizeof end, tar);
  *bytes += (uint64_t)ftello(tar);
  int bad = ferror(tar) || ferror(idx);
  bad |= fclose(tar) != 0;
  bad |= fclose(idx) != 0;
  if (bad) stk_cli_error("datagen", "write error on %s", tar_path);
  return bad;
}

int stk_cli_datagen_shards(const char *dir, long shards, uint64_t seed) {
  size_t n = 0;
  item *items = list_items(dir, &n);
  if (!items || n == 0) {
    stk_cli_error("datagen", "--shards: no class directories with files under %s", dir);
    free(items);
    return 1;
  }
  if ((size_t)shards > n) shards = (long)n;
  for (size_t i = n - 1; i > 0; i--) { /* Fisher-Yates keyed by the seed */
    size_t j = (size_t)(mix64(seed * 0x9e3779b97f4a7c15ull + i) % (i + 1));
    item t = items[i];
    items[i] = items[j];
    items[j] = t;
  }
  char out[4096];
  snprintf(out, sizeof out, "%s/shards", dir);
  if (mkdir(out, 0755) != 0 && errno != EEXIST) {
    stk_cli_error("datagen", "cannot create %s: %s", out, strerror(errno));
    return 1;
  }
  uint64_t bytes = 0;
  int status = 0;
  for (long k = 0; k < shards && !status; k++) {
    size_t lo = n * (size_t)k / (size_t)shards, hi = n * (size_t)(k + 1) / (size_t)shards;
    status = write_shard(dir, items + lo, hi - lo, k, &bytes);
  }
  for (size_t i = 0; i < n; i++) free(items[i].path);
  free(items);
  if (!status)
    printf("datagen: %zu samples in %ld shards under %s (%.1f MB, with .idx indices)\n", n, shards, out,
           (double)bytes / 1e6);
  return status;
}
