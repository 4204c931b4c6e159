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

#include "base/text_file.h"

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

/* ---- The file_root walk ------------------------------------------------------------------------
 * A file's label is the class directory that holds it by real path, whichever way the walk reached
 * it: class_a/up -> .. reaches class_b's files as class_a/up/class_b/x.jpg, and they are listed as
 * class_b/x.jpg with class_b's label (once, however often they are reached). A file reached through
 * a link whose real path is in no class directory is listed as reached, with the label of the class
 * directory (by real path) the link hangs below when it lies outside file_root (data kept
 * elsewhere), and not at all when it lies inside file_root outside every class (it is not in the
 * data set without the link). Real
 * paths are looked up (realpath) only for what was reached through a symbolic link. */
typedef struct found_file {
  char *listed; /* relative to file_root: "class/sub/x.jpg" */
  char *real;   /* the real path when reached through a link (else NULL until the duplicate check) */
  int32_t label;
  size_t order; /* walk order: of two ways to one file, the first reached is kept */
} found_file;

typedef struct walk_state {
  const stk__file_reader_config *config;
  char **class_names, **class_real; /* class_real[k]: realpath of file_root/class_names[k] */
  size_t num_classes;
  char root_real[4096];
  found_file *files;
  size_t count, capacity;
  int any_link;
  dir_set seen;
} walk_state;

static stk_status found_add(walk_state *w, char *listed, char *real, int32_t label) {
  if (w->count == w->capacity) {
    size_t cap = w->capacity ? w->capacity * 2 : 1024;
    found_file *p = realloc(w->files, cap * sizeof *p);
    if (!p) {
      free(listed), free(real);
      return STK_ENOMEM;
    }
    w->files = p;
    w->capacity = cap;
  }
  w->files[w->count] = (found_file){listed, real, label, w->count};
  w->count++;
  return STK_OK;
}

/* 1 when path is dir itself or below it ("dir/..."). */
static int under(const char *path, const char *dir) {
  size_t n = strlen(dir);
  return strncmp(path, dir, n) == 0 && (path[n] == '\0' || path[n] == '/' || (n == 1 && dir[0] == '/'));
}

/* The class whose real directory holds real (the deepest, when class links nest), with the length
 * of that directory's path; num_classes when none does. */
static size_t owning_class(const walk_state *w, const char *real, size_t *dir_length) {
  size_t best = w->num_classes;
  *dir_length = 0;
  for (size_t j = 0; j < w->num_classes; j++) {
    size_t n = strlen(w->class_real[j]);
    if (n > *dir_length && under(real, w->class_real[j])) best = j, *dir_length = n;
  }
  return best;
}

/* A file reached through a link (path as reached: file_root/listed, from class k): listed by the
 * class that holds its real path (see above). */
static stk_status add_linked_file(walk_state *w, size_t k, const char *path, const char *listed) {
  char real[4096];
  if (!realpath(path, real)) return STK_OK; /* a dangling link: nothing to read */
  size_t best_len, best = owning_class(w, real, &best_len);
  char *real_copy = strdup(real), *listed_copy = NULL;
  if (best < w->num_classes) {
    size_t need = strlen(w->class_names[best]) + strlen(real + best_len) + 1;
    if ((listed_copy = malloc(need))) snprintf(listed_copy, need, "%s%s", w->class_names[best], real + best_len);
    k = best;
  } else if (under(real, w->root_real)) {
    free(real_copy); /* inside file_root but in no class directory: not a sample */
    return STK_OK;
  } else {
    listed_copy = strdup(listed);
  }
  if (!real_copy || !listed_copy) {
    free(real_copy), free(listed_copy);
    return STK_ENOMEM;
  }
  return found_add(w, listed_copy, real_copy, (int32_t)k);
}

static int is_link(const struct dirent *e, const char *path) {
  if (e->d_type == DT_LNK) return 1;
  struct stat st;
  return e->d_type == DT_UNKNOWN && lstat(path, &st) == 0 && S_ISLNK(st.st_mode);
}

/* Collects files below file_root/rel (class k, recursively) matching the filters. */
static stk_status walk_class(walk_state *w, size_t k, const char *rel, int via_link, int depth, char *err,
                             size_t err_size) {
  const char *root = w->config->file_root;
  char dir_path[4096];
  snprintf(dir_path, sizeof dir_path, "%s/%s", root, rel);
  struct stat dir_st;
  if (stat(dir_path, &dir_st) != 0) {
    stk__errorf(err, err_size, "cannot open directory %s: %s", dir_path, strerror(errno));
    return STK_EIO;
  }
  int first = dir_set_visit(&w->seen, &dir_st, dir_path);
  if (first <= 0) return first < 0 ? STK_ENOMEM : STK_OK;
  char real[4096], canonical[4096];
  size_t length, owner;
  if (via_link && realpath(dir_path, real) && (owner = owning_class(w, real, &length)) < w->num_classes &&
      (size_t)snprintf(canonical, sizeof canonical, "%s%s", w->class_names[owner], real + length) < sizeof canonical) {
    k = owner; /* a class's directory reached another way: what is below is that class's, listed by */
    rel = canonical; /* the path through the class directory (no link below it) */
    via_link = 0;
  }
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
    int linked = via_link || is_link(e, child_path);
    w->any_link |= linked;
    int is_dir = e->d_type == DT_DIR || ((e->d_type == DT_UNKNOWN || e->d_type == DT_LNK) && is_directory(child_path));
    if (is_dir) {
      if (depth < 32) st = walk_class(w, k, child_rel, linked, depth + 1, err, err_size);
    } else if (matches_filters(w->config, e->d_name)) {
      char *listed = linked ? NULL : strdup(child_rel);
      st = linked ? add_linked_file(w, k, child_path, child_rel)
           : listed ? found_add(w, listed, NULL, (int32_t)k)
                    : STK_ENOMEM;
    }
  }
  closedir(dir);
  return st;
}

static int by_real_then_order(const void *a, const void *b) {
  const found_file *x = a, *y = b;
  int c = strcmp(x->real, y->real);
  return c ? c : (x->order > y->order) - (x->order < y->order);
}

static int by_label_then_path(const void *a, const void *b) {
  const found_file *x = a, *y = b;
  if (x->label != y->label) return x->label < y->label ? -1 : 1;
  return strcmp(x->listed, y->listed);
}

/* When anything was reached through a link: each real file once (the first reached). */
static stk_status drop_duplicates(walk_state *w) {
  if (!w->any_link) return STK_OK;
  for (size_t i = 0; i < w->count; i++) {
    found_file *f = &w->files[i];
    if (f->real) continue;
    const char *inside = strchr(f->listed, '/'); /* the part below the class directory */
    size_t need = strlen(w->class_real[f->label]) + strlen(inside) + 1;
    if (!(f->real = malloc(need))) return STK_ENOMEM;
    snprintf(f->real, need, "%s%s", w->class_real[f->label], inside);
  }
  if (w->count > 1) qsort(w->files, w->count, sizeof *w->files, by_real_then_order);
  size_t kept = 0;
  for (size_t i = 0; i < w->count; i++) {
    if (kept && strcmp(w->files[kept - 1].real, w->files[i].real) == 0) {
      free(w->files[i].listed), free(w->files[i].real);
      continue;
    }
    w->files[kept++] = w->files[i];
  }
  w->count = kept;
  return STK_OK;
}

/* The class directories: file_root's non-hidden subdirectories, sorted, with their real paths. */
static stk_status list_classes(walk_state *w, name_list *classes, char *err, size_t err_size) {
  const char *root = w->config->file_root;
  DIR *dir = opendir(root);
  if (!dir || !realpath(root, w->root_real)) {
    stk__errorf(err, err_size, "file_root %s: %s", root, strerror(errno));
    int missing = errno == ENOENT;
    if (dir) closedir(dir);
    return missing ? STK_ENOENT : STK_EIO;
  }
  stk_status st = STK_OK;
  struct dirent *e;
  while (st == STK_OK && (e = readdir(dir)) != NULL) {
    if (e->d_name[0] == '.') continue;
    char path[8192];
    snprintf(path, sizeof path, "%s/%s", root, e->d_name);
    if (e->d_type == DT_DIR || ((e->d_type == DT_UNKNOWN || e->d_type == DT_LNK) && is_directory(path)))
      st = name_list_add(classes, e->d_name);
  }
  closedir(dir);
  if (st == STK_OK && classes->count == 0) {
    stk__errorf(err, err_size, "file_root %s has no class subdirectories (expected one subdirectory per class)", root);
    return STK_ENOENT;
  }
  if (st == STK_OK && classes->count > 1) qsort(classes->items, classes->count, sizeof(char *), compare_strings);
  w->class_names = classes->items;
  w->num_classes = classes->count;
  if (st == STK_OK && !(w->class_real = calloc(classes->count, sizeof *w->class_real))) st = STK_ENOMEM;
  for (size_t k = 0; st == STK_OK && k < classes->count; k++) {
    char path[8192], real[4096];
    snprintf(path, sizeof path, "%s/%s", root, classes->items[k]);
    if (!realpath(path, real)) {
      stk__errorf(err, err_size, "class directory %s: %s", path, strerror(errno));
      return STK_EIO;
    }
    if (!(w->class_real[k] = strdup(real))) st = STK_ENOMEM;
  }
  return st;
}

static stk_status list_file_root(stk__sample_table *r, const stk__file_reader_config *c, char *err, size_t err_size) {
  walk_state w = {.config = c};
  name_list classes = {0};
  stk_status st = list_classes(&w, &classes, err, err_size);
  for (size_t k = 0; st == STK_OK && k < classes.count; k++) {
    struct stat link_st; /* a class directory that is itself a link: its files' real paths differ */
    char path[8192];
    snprintf(path, sizeof path, "%s/%s", c->file_root, classes.items[k]);
    int linked = lstat(path, &link_st) == 0 && S_ISLNK(link_st.st_mode);
    w.any_link |= linked;
    st = walk_class(&w, k, classes.items[k], 0, 0, err, err_size);
  }
  if (st == STK_OK) st = drop_duplicates(&w);
  if (st == STK_OK && w.count > 1) qsort(w.files, w.count, sizeof *w.files, by_label_then_path);
  for (size_t i = 0; st == STK_OK && i < w.count; i++)
    st = add_sample(r, c->file_root, w.files[i].listed, w.files[i].label);
  for (size_t i = 0; i < w.count; i++) free(w.files[i].listed), free(w.files[i].real);
  free(w.files);
  for (size_t k = 0; w.class_real && k < w.num_classes; k++) free(w.class_real[k]);
  free(w.class_real);
  name_list_free(&classes);
  r->directories_skipped = w.seen.skipped;
  if (w.seen.skipped)
    snprintf(r->warning, sizeof r->warning,
             "file_root %s: %lld directories reached again through symbolic links (a loop?) were not listed "
             "twice, e.g. %.200s",
             c->file_root, (long long)w.seen.skipped, w.seen.first_skipped);
  free(w.seen.items);
  if (st == STK_ENOMEM) stk__errorf(err, err_size, "out of memory listing %s", c->file_root);
  return st;
}

/* One "path label" line of file_list (trimmed in place); STK_EPARSE naming the line when bad. */
static stk_status add_list_line(stk__sample_table *r, const char *list, const char *base, char *line, size_t len,
                                int64_t line_no, char *err, size_t err_size) {
  while (len > 0 && (line[len - 1] == ' ' || line[len - 1] == '\t')) line[--len] = '\0';
  char *start = line;
  while (*start == ' ' || *start == '\t') start++;
  if (!*start) return STK_OK;
  char *sep = start + strlen(start);
  while (sep > start && sep[-1] != ' ' && sep[-1] != '\t') sep--;
  char *end = NULL;
  errno = 0;
  long long label = sep > start ? strtoll(sep, &end, 10) : 0;
  if (sep == start || !end || *end || errno || label < 0 || label > INT32_MAX) {
    stk__errorf(err, err_size, "file_list %s line %lld: expected \"path label\" with an integer label >= 0", list,
                (long long)line_no);
    return STK_EPARSE;
  }
  char *path_end = sep;
  while (path_end > start && (path_end[-1] == ' ' || path_end[-1] == '\t')) path_end--;
  *path_end = '\0';
  return add_sample(r, base, start, label);
}

static stk_status list_file_list(stk__sample_table *r, const stk__file_reader_config *c, char *err, size_t err_size) {
  stk__line_reader lines;
  stk_status st =
      stk__line_reader_open(&lines, c->file_list, "file_list", STK__FILE_LIST_MAX_LINE, STK__LIST_MAX_BYTES, err, err_size);
  if (st != STK_OK) return st;
  char base[4096]; /* file_root, else the list's own directory */
  stk__list_base_dir(c->file_list, c->file_root, base, sizeof base);
  char *line;
  size_t len;
  while ((st = stk__line_reader_next(&lines, &line, &len, err, err_size)) == STK_OK && line)
    if ((st = add_list_line(r, c->file_list, base, line, len, lines.line_no, err, err_size)) != STK_OK) break;
  stk__line_reader_close(&lines);
  if (st == STK_ENOMEM) stk__errorf(err, err_size, "out of memory listing file_list %s", c->file_list);
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
