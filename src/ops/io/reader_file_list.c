/* src/ops/io/reader_file_list.c: readers.file's listing -- walks file_root (one subdirectory
 * per class, files found recursively, byte-wise sorted), reads file_list ("path label" lines) or
 * takes files/labels, into the sample table. Runs once at build; not a hot path. */
#include "ops/io/reader_file_list.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static stk_status add_sample(stk__sample_table *r, const char *dir, const char *rel, int64_t label) {
  if (r->count == r->capacity) {
    int64_t cap = r->capacity ? r->capacity * 2 : 1024;
    size_t *po = realloc(r->path_offset, (size_t)cap * sizeof *po);
    if (!po) return STK_ENOMEM;
    r->path_offset = po;
    int32_t *lb = realloc(r->labels, (size_t)cap * sizeof *lb);
    if (!lb) return STK_ENOMEM;
    r->labels = lb;
    r->capacity = cap;
  }
  int absolute = rel[0] == '/' || !dir || !dir[0];
  size_t need = (absolute ? 0 : strlen(dir) + 1) + strlen(rel) + 1;
  if (r->arena_size + need > r->arena_capacity) {
    size_t cap = r->arena_capacity ? r->arena_capacity * 2 : 65536;
    while (cap < r->arena_size + need) cap *= 2;
    char *a = realloc(r->arena, cap);
    if (!a) return STK_ENOMEM;
    r->arena = a;
    r->arena_capacity = cap;
  }
  char *dst = r->arena + r->arena_size;
  if (absolute) memcpy(dst, rel, need);
  else snprintf(dst, need, "%s/%s", dir, rel);
  r->path_offset[r->count] = r->arena_size;
  r->labels[r->count] = (int32_t)label;
  r->arena_size += need;
  r->count++;
  return STK_OK;
}

static int compare_strings(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

typedef struct name_list {
  char **items;
  size_t count, capacity;
} name_list;

static stk_status name_list_add(name_list *l, const char *name) {
  if (l->count == l->capacity) {
    size_t cap = l->capacity ? l->capacity * 2 : 64;
    char **p = realloc(l->items, cap * sizeof *p);
    if (!p) return STK_ENOMEM;
    l->items = p;
    l->capacity = cap;
  }
  if (!(l->items[l->count] = strdup(name))) return STK_ENOMEM;
  l->count++;
  return STK_OK;
}

static void name_list_free(name_list *l) {
  for (size_t i = 0; i < l->count; i++) free(l->items[i]);
  free(l->items);
  l->items = NULL;
  l->count = l->capacity = 0;
}

/* The formats decoders.image reads (matched case-insensitively unless case_sensitive_filter). */
static const char *const default_filters[] = {"*.jpg", "*.jpeg", "*.png", "*.webp", "*.bmp", "*.tif",
                                              "*.tiff", "*.pnm", "*.ppm", "*.pgm", "*.pbm"};

static int matches_filters(const stk__file_reader_config *c, const char *name) {
  const char *const *filters = c->file_filters ? (const char *const *)c->file_filters : default_filters;
  size_t n = c->file_filters ? c->num_filters : sizeof default_filters / sizeof default_filters[0];
  int flags = c->case_sensitive_filter ? 0 : FNM_CASEFOLD;
  for (size_t i = 0; i < n; i++)
    if (fnmatch(filters[i], name, flags) == 0) return 1;
  return 0;
}

static int is_directory(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* Directories already walked, by (device, inode): a directory reached again (a symbolic link to
 * a parent or a second link to one directory) is not walked twice. */
typedef struct dir_set {
  struct dir_id {
    dev_t dev;
    ino_t ino;
  } * items;
  size_t count, capacity;
  int64_t skipped;
  char first_skipped[256];
} dir_set;

/* 1: added (first visit), 0: seen before (recorded as skipped), -1: out of memory. */
static int dir_set_visit(dir_set *set, const struct stat *st, const char *path) {
  for (size_t i = 0; i < set->count; i++)
    if (set->items[i].dev == st->st_dev && set->items[i].ino == st->st_ino) {
      if (set->skipped++ == 0) snprintf(set->first_skipped, sizeof set->first_skipped, "%.250s", path);
      return 0;
    }
  if (set->count == set->capacity) {
    size_t cap = set->capacity ? set->capacity * 2 : 64;
    struct dir_id *p = realloc(set->items, cap * sizeof *p);
    if (!p) return -1;
    set->items = p;
    set->capacity = cap;
  }
  set->items[set->count++] = (struct dir_id){st->st_dev, st->st_ino};
  return 1;
}

/* Collects files below root/rel (recursively) matching the filters, as paths relative to root. */
static stk_status walk_class(const stk__file_reader_config *c, const char *root, const char *rel, name_list *out,
                             dir_set *seen, int depth, char *err, size_t err_size) {
  char dir_path[4096];
  snprintf(dir_path, sizeof dir_path, "%s/%s", root, rel);
  struct stat dir_st;
  if (stat(dir_path, &dir_st) != 0) {
    stk__errorf(err, err_size, "cannot open directory %s: %s", dir_path, strerror(errno));
    return STK_EIO;
  }
  int first = dir_set_visit(seen, &dir_st, dir_path);
  if (first <= 0) return first < 0 ? STK_ENOMEM : STK_OK;
  DIR *dir = opendir(dir_path);
  if (!dir) {
    stk__errorf(err, err_size, "cannot open directory %s: %s", dir_path, strerror(errno));
    return STK_EIO;
  }
  stk_status st = STK_OK;
  struct dirent *e;
  while (st == STK_OK && (e = readdir(dir)) != NULL) {
    if (e->d_name[0] == '.') continue; /* ".", "..", hidden files */
    char child_rel[4096];
    if ((size_t)snprintf(child_rel, sizeof child_rel, "%s/%s", rel, e->d_name) >= sizeof child_rel) continue;
    char child_path[8192];
    snprintf(child_path, sizeof child_path, "%s/%s", root, child_rel);
    int is_dir = e->d_type == DT_DIR || ((e->d_type == DT_UNKNOWN || e->d_type == DT_LNK) && is_directory(child_path));
    if (is_dir) {
      if (depth < 32) st = walk_class(c, root, child_rel, out, seen, depth + 1, err, err_size);
    } else if (matches_filters(c, e->d_name)) {
      st = name_list_add(out, child_rel);
    }
  }
  closedir(dir);
  return st;
}

static stk_status list_file_root(stk__sample_table *r, const stk__file_reader_config *c, char *err, size_t err_size) {
  DIR *dir = opendir(c->file_root);
  if (!dir) {
    stk__errorf(err, err_size, "file_root %s: %s", c->file_root, strerror(errno));
    return errno == ENOENT ? STK_ENOENT : STK_EIO;
  }
  name_list classes = {0};
  stk_status st = STK_OK;
  struct dirent *e;
  while (st == STK_OK && (e = readdir(dir)) != NULL) {
    if (e->d_name[0] == '.') continue;
    char path[8192];
    snprintf(path, sizeof path, "%s/%s", c->file_root, e->d_name);
    if (e->d_type == DT_DIR || ((e->d_type == DT_UNKNOWN || e->d_type == DT_LNK) && is_directory(path)))
      st = name_list_add(&classes, e->d_name);
  }
  closedir(dir);
  if (st == STK_OK && classes.count == 0) {
    stk__errorf(err, err_size, "file_root %s has no class subdirectories (expected one subdirectory per class)",
                c->file_root);
    st = STK_ENOENT;
  }
  if (st == STK_OK && classes.count > 1) qsort(classes.items, classes.count, sizeof(char *), compare_strings);
  dir_set seen = {0};
  for (size_t k = 0; st == STK_OK && k < classes.count; k++) {
    name_list files = {0};
    st = walk_class(c, c->file_root, classes.items[k], &files, &seen, 0, err, err_size);
    if (st == STK_OK && files.count > 1) qsort(files.items, files.count, sizeof(char *), compare_strings);
    for (size_t i = 0; st == STK_OK && i < files.count; i++)
      st = add_sample(r, c->file_root, files.items[i], (int64_t)k);
    name_list_free(&files);
  }
  name_list_free(&classes);
  r->directories_skipped = seen.skipped;
  if (seen.skipped)
    snprintf(r->warning, sizeof r->warning,
             "file_root %s: %lld directories reached again through symbolic links (a loop?) were not listed "
             "twice, e.g. %.200s",
             c->file_root, (long long)seen.skipped, seen.first_skipped);
  free(seen.items);
  if (st == STK_ENOMEM) stk__errorf(err, err_size, "out of memory listing %s", c->file_root);
  return st;
}

static stk_status list_file_list(stk__sample_table *r, const stk__file_reader_config *c, char *err, size_t err_size) {
  int fd = stk__open_regular_file(c->file_list); /* a FIFO must not block */
  if (fd == -2) {
    stk__errorf(err, err_size, "file_list %s is not a regular file", c->file_list);
    return STK_EINVAL;
  }
  if (fd < 0) {
    int e = errno;
    stk__errorf(err, err_size, "file_list %s: %s", c->file_list, strerror(e));
    return e == ENOENT ? STK_ENOENT : STK_EIO;
  }
  FILE *f = fdopen(fd, "r");
  if (!f) {
    close(fd);
    return STK_ENOMEM;
  }
  /* Base directory: file_root, else the list's own directory. */
  char base[4096];
  if (c->file_root && c->file_root[0]) {
    snprintf(base, sizeof base, "%s", c->file_root);
  } else {
    snprintf(base, sizeof base, "%s", c->file_list);
    char *slash = strrchr(base, '/');
    if (slash) *slash = '\0';
    else snprintf(base, sizeof base, ".");
  }
  stk_status st = STK_OK;
  char *line = NULL;
  size_t line_cap = 0;
  ssize_t len;
  int64_t line_no = 0;
  while (st == STK_OK && (len = getline(&line, &line_cap, f)) >= 0) {
    line_no++;
    if (len > STK__FILE_LIST_MAX_LINE) {
      stk__errorf(err, err_size, "file_list %s line %lld: longer than %d bytes (not a list of \"path label\" lines?)",
                  c->file_list, (long long)line_no, STK__FILE_LIST_MAX_LINE);
      st = STK_EPARSE;
      break;
    }
    while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r' || line[len - 1] == ' ' || line[len - 1] == '\t'))
      line[--len] = '\0';
    char *start = line;
    while (*start == ' ' || *start == '\t') start++;
    if (!*start) continue;
    char *sep = start + strlen(start);
    while (sep > start && sep[-1] != ' ' && sep[-1] != '\t') sep--;
    char *end = NULL;
    errno = 0;
    long long label = sep > start ? strtoll(sep, &end, 10) : 0;
    if (sep == start || !end || *end || errno || label < 0 || label > INT32_MAX) {
      stk__errorf(err, err_size, "file_list %s line %lld: expected \"path label\" with an integer label >= 0",
                  c->file_list, (long long)line_no);
      st = STK_EPARSE;
      break;
    }
    char *path_end = sep;
    while (path_end > start && (path_end[-1] == ' ' || path_end[-1] == '\t')) path_end--;
    *path_end = '\0';
    st = add_sample(r, base, start, label);
  }
  if (st == STK_OK && ferror(f)) {
    stk__errorf(err, err_size, "file_list %s: read error", c->file_list);
    st = STK_EIO;
  }
  free(line);
  fclose(f);
  return st;
}

static stk_status list_files(stk__sample_table *r, const stk__file_reader_config *c, char *err, size_t err_size) {
  if (c->labels && c->num_labels != c->num_files) {
    stk__errorf(err, err_size, "files has %zu entries but labels has %zu", c->num_files, c->num_labels);
    return STK_EINVAL;
  }
  for (size_t i = 0; i < c->num_files; i++) {
    int64_t label = c->labels ? c->labels[i] : (int64_t)i;
    if (label < 0 || label > INT32_MAX) {
      stk__errorf(err, err_size, "labels[%zu] = %lld is not a non-negative 32-bit label", i, (long long)label);
      return STK_EINVAL;
    }
    stk_status st = add_sample(r, c->file_root, c->files[i], label);
    if (st != STK_OK) return st;
  }
  return STK_OK;
}

stk_status stk__sample_table_list(stk__sample_table *table, const stk__file_reader_config *c, char *err,
                                  size_t err_size) {
  if (c->files && c->num_files > 0) return list_files(table, c, err, err_size);
  if (c->file_list && c->file_list[0]) return list_file_list(table, c, err, err_size);
  return list_file_root(table, c, err, err_size);
}

void stk__sample_table_free(stk__sample_table *t) {
  free(t->arena);
  free(t->path_offset);
  free(t->labels);
  memset(t, 0, sizeof *t);
}
