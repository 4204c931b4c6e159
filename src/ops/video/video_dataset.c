/* src/ops/video/video_dataset.c: readers.video's data set -- listing, start-up indexing (one pass
 * over every file's packets, on `threads` threads), sequences, and the per-epoch order through
 * readers.file's planner (reader_file.h) run over the sequence list. Start-up only, except
 * stk__video_dataset_plan (per batch). See video_dataset.h for the sequence rule. */
#include "ops/video/video_dataset.h"

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/text_file.h"
#include "ops/io/reader_file.h"

struct stk__video_dataset {
  stk__video_dataset_config config; /* pointers in it are not kept past new */
  stk__video_file *files;
  int64_t num_files, files_capacity;
  stk__video_sequence *sequences;
  int64_t num_sequences;
  stk__file_reader *order; /* readers.file's planner over the sequences */
};

/* ---- Listing -------------------------------------------------------------------------------- */
static stk_status add_file(stk__video_dataset *ds, const char *dir, const char *rel, int64_t label, char *err,
                           size_t err_size) {
  if (label < 0 || label > INT32_MAX) {
    stk__errorf(err, err_size, "label %lld of %s is not a non-negative 32-bit label", (long long)label, rel);
    return STK_EINVAL;
  }
  if (ds->num_files == ds->files_capacity) {
    int64_t cap = ds->files_capacity ? ds->files_capacity * 2 : 64;
    stk__video_file *p = realloc(ds->files, (size_t)cap * sizeof *p);
    if (!p) return STK_ENOMEM;
    ds->files = p;
    ds->files_capacity = cap;
  }
  stk__video_file *f = &ds->files[ds->num_files];
  memset(f, 0, sizeof *f);
  int absolute = rel[0] == '/' || !dir || !dir[0];
  size_t need = (absolute ? 0 : strlen(dir) + 1) + strlen(rel) + 1;
  if (!(f->path = malloc(need))) return STK_ENOMEM;
  if (absolute) memcpy(f->path, rel, need);
  else snprintf(f->path, need, "%s/%s", dir, rel);
  f->label = (int32_t)label;
  f->range_end = NAN;
  ds->num_files++;
  return STK_OK;
}

static int compare_names(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* Sorted names of the non-hidden entries of dir that are directories (want_dirs) or files. */
static stk_status list_dir(const char *dir, int want_dirs, char ***names, size_t *count, char *err, size_t err_size) {
  *names = NULL, *count = 0;
  DIR *d = opendir(dir);
  if (!d) {
    stk__errorf(err, err_size, "cannot open directory %s: %s", dir, strerror(errno));
    return errno == ENOENT ? STK_ENOENT : STK_EIO;
  }
  size_t cap = 0;
  stk_status st = STK_OK;
  struct dirent *e;
  while (st == STK_OK && (e = readdir(d)) != NULL) {
    if (e->d_name[0] == '.') continue;
    char path[8192 + 512];
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    struct stat sb;
    if (stat(path, &sb) != 0 || (want_dirs ? !S_ISDIR(sb.st_mode) : !S_ISREG(sb.st_mode))) continue;
    if (*count == cap) {
      cap = cap ? cap * 2 : 64;
      char **p = realloc(*names, cap * sizeof *p);
      if (!p) {
        st = STK_ENOMEM;
        break;
      }
      *names = p;
    }
    if (!((*names)[*count] = strdup(e->d_name))) st = STK_ENOMEM;
    else (*count)++;
  }
  closedir(d);
  if (*count > 1) qsort(*names, *count, sizeof **names, compare_names);
  return st;
}

static void free_names(char **names, size_t count) {
  for (size_t i = 0; i < count; i++) free(names[i]);
  free(names);
}

static stk_status list_file_root(stk__video_dataset *ds, const char *root, char *err, size_t err_size) {
  char **classes;
  size_t num_classes;
  stk_status st = list_dir(root, 1, &classes, &num_classes, err, err_size);
  if (st == STK_OK && num_classes == 0) {
    stk__errorf(err, err_size, "file_root %s has no class subdirectories (expected one subdirectory per class)", root);
    st = STK_ENOENT;
  }
  for (size_t k = 0; st == STK_OK && k < num_classes; k++) {
    char dir[8192];
    snprintf(dir, sizeof dir, "%s/%s", root, classes[k]);
    char **files;
    size_t num;
    st = list_dir(dir, 0, &files, &num, err, err_size);
    for (size_t i = 0; st == STK_OK && i < num; i++) st = add_file(ds, dir, files[i], (int64_t)k, err, err_size);
    free_names(files, num);
  }
  free_names(classes, num_classes);
  return st;
}

/* One file_list line: "path label [start [end]]" (whitespace-separated). */
static stk_status parse_list_line(stk__video_dataset *ds, const char *base, char *line, const char *list,
                                  long long line_no, char *err, size_t err_size) {
  char *fields[5], *save = NULL;
  int n = 0;
  for (char *tok = strtok_r(line, " \t\r\n", &save); tok; tok = strtok_r(NULL, " \t\r\n", &save)) {
    if (n == 5) break;
    fields[n++] = tok;
  }
  if (n == 0) return STK_OK;
  char *end = NULL;
  errno = 0;
  long long label = n >= 2 ? strtoll(fields[1], &end, 10) : -1;
  double range[2] = {NAN, NAN};
  int bad = n < 2 || n > 4 || !end || *end || errno || label < 0 || label > INT32_MAX;
  for (int i = 2; i < n && !bad; i++) {
    range[i - 2] = strtod(fields[i], &end);
    bad = *end != '\0' || !isfinite(range[i - 2]);
  }
  if (bad) {
    stk__errorf(err, err_size,
                "file_list %s line %lld: expected \"path label [start [end]]\" with an integer label >= 0 and numeric "
                "start/end",
                list, line_no);
    return STK_EPARSE;
  }
  stk_status st = add_file(ds, base, fields[0], label, err, err_size);
  if (st == STK_OK && n >= 3) {
    stk__video_file *f = &ds->files[ds->num_files - 1];
    f->has_range = 1;
    f->range_start = range[0];
    f->range_end = range[1];
  }
  return st;
}

static stk_status list_file_list(stk__video_dataset *ds, const char *list, const char *root, char *err,
                                 size_t err_size) {
  stk__line_reader lines;
  stk_status st = stk__line_reader_open(&lines, list, "file_list", STK__LIST_MAX_LINE, STK__LIST_MAX_BYTES, err, err_size);
  if (st != STK_OK) return st;
  char base[4096]; /* file_root, else the list's own directory */
  stk__list_base_dir(list, root, base, sizeof base);
  char *line;
  size_t len;
  while ((st = stk__line_reader_next(&lines, &line, &len, err, err_size)) == STK_OK && line)
    if ((st = parse_list_line(ds, base, line, list, lines.line_no, err, err_size)) != STK_OK) break;
  stk__line_reader_close(&lines);
  return st;
}

static stk_status list_filenames(stk__video_dataset *ds, char *err, size_t err_size) {
  const stk__video_dataset_config *c = &ds->config;
  if (c->labels && c->num_labels != c->num_filenames) {
    stk__errorf(err, err_size, "filenames has %zu entries but labels has %zu", c->num_filenames, c->num_labels);
    return STK_EINVAL;
  }
  stk_status st = STK_OK;
  for (size_t i = 0; st == STK_OK && i < c->num_filenames; i++)
    st = add_file(ds, c->file_root, c->filenames[i], c->labels ? c->labels[i] : (int64_t)i, err, err_size);
  return st;
}

/* ---- Start-up indexing (threads take files by an atomic counter) ---------------------------- */
typedef struct index_job {
  stk__video_dataset *ds;
  int64_t next;   /* atomic */
  int failed_oom; /* atomic */
} index_job;

static void index_one(stk__video_dataset *ds, stk__video_file *f) {
  char err[768] = "";
  stk__video_demuxer *d = NULL;
  stk_status st = stk__video_demuxer_open(f->path, NULL, 0, f->path, &d, err, sizeof err);
  if (st == STK_OK) st = stk__video_index_build(d, ds->config.skip_vfr_check, &f->index, err, sizeof err);
  stk__video_demuxer_free(d);
  if (st != STK_OK) {
    f->error = strdup(err[0] ? err : stk_strerror(st));
    f->status = st;
  }
}

static void *index_worker(void *arg) {
  index_job *job = arg;
  for (;;) {
    int64_t i = __atomic_fetch_add(&job->next, 1, __ATOMIC_RELAXED);
    if (i >= job->ds->num_files) return NULL;
    index_one(job->ds, &job->ds->files[i]);
  }
}

static void index_files(stk__video_dataset *ds) {
  index_job job = {.ds = ds};
  int threads = ds->config.threads > 1 ? ds->config.threads : 1;
  if (threads > ds->num_files) threads = (int)ds->num_files;
  pthread_t tids[256];
  int started = 0;
  for (int t = 1; t < threads && t < 256; t++)
    if (pthread_create(&tids[started], NULL, index_worker, &job) == 0) started++;
  index_worker(&job); /* this thread works too (and alone if no thread started) */
  for (int t = 0; t < started; t++) pthread_join(tids[t], NULL);
}

/* ---- Ranges and sequences ------------------------------------------------------------------- */
static int64_t frame_at_or_after(const stk__video_index *ix, double seconds) {
  double origin = stk__video_index_seconds(ix, 0);
  int64_t f = 0;
  while (f < ix->num_frames && stk__video_index_seconds(ix, f) - origin < seconds - 1e-9) f++;
  return f;
}

/* Sets begin/end of a good file from its file_list range; an empty range is an error. */
static void resolve_range(const stk__video_dataset_config *c, stk__video_file *f) {
  const int64_t n = f->index.num_frames;
  f->begin = 0, f->end = n;
  if (!f->has_range) return;
  if (c->file_list_frame_num) { /* python-style negative indices; start rounds up, end down */
    double s = ceil(f->range_start), e = isnan(f->range_end) ? (double)n : floor(f->range_end);
    if (s < 0) s += (double)n;
    if (e < 0) e += (double)n;
    f->begin = s < 0 ? 0 : s > (double)n ? n : (int64_t)s;
    f->end = e < 0 ? 0 : e > (double)n ? n : (int64_t)e;
  } else {
    double duration = n > 0 ? (double)n / (f->index.frame_rate > 0 ? f->index.frame_rate : 1.0) : 0.0;
    double s = f->range_start < 0 ? f->range_start + duration : f->range_start;
    double e = isnan(f->range_end) ? duration + 1.0 : f->range_end < 0 ? f->range_end + duration : f->range_end;
    f->begin = frame_at_or_after(&f->index, s);
    f->end = frame_at_or_after(&f->index, e);
  }
}

static stk_status mark_bad(stk__video_file *f, const char *fmt_reason, int64_t frames) {
  char msg[768];
  snprintf(msg, sizeof msg, fmt_reason, f->path, (long long)frames);
  free(f->error);
  f->error = strdup(msg);
  f->status = STK_EBADIMAGE;
  return f->error ? STK_OK : STK_ENOMEM;
}

/* Cuts every file into sequences; a bad file (skip_bad_files) is one sequence that fails to read. */
static stk_status cut_sequences(stk__video_dataset *ds, char *err, size_t err_size) {
  const stk__video_dataset_config *c = &ds->config;
  const int64_t span = (int64_t)(c->sequence_length - 1) * c->stride; /* first to last frame */
  int64_t total = 0;
  for (int pass = 0; pass < 2; pass++) {
    int64_t k = 0;
    for (int64_t i = 0; i < ds->num_files; i++) {
      stk__video_file *f = &ds->files[i];
      if (pass == 0 && !f->error) {
        resolve_range(c, f);
        int64_t usable = f->end - f->begin;
        if (usable <= 0 || (!c->pad_sequences && usable <= span)) {
          stk_status st = mark_bad(f,
                                   usable <= 0 ? "%s: the frame range given in file_list is empty (%lld frames)"
                                               : "%s: too short for one sequence (%lld usable frames)",
                                   usable);
          if (st != STK_OK) return st;
          if (usable > 0) {
            char more[160];
            snprintf(more, sizeof more, "; sequence_length %d with stride %d needs %lld", c->sequence_length, c->stride,
                     (long long)span + 1);
            size_t len = strlen(f->error);
            char *longer = realloc(f->error, len + strlen(more) + 1);
            if (longer) f->error = longer, strcpy(longer + len, more);
          }
        }
      }
      if (f->error) {
        if (!c->skip_bad_files) {
          stk__errorf(err, err_size, "%s", f->error);
          return f->status;
        }
        if (pass == 1) ds->sequences[k] = (stk__video_sequence){.file = (int32_t)i, .frames = 0, .first = -1};
        k++;
        continue;
      }
      for (int64_t s = f->begin; s < f->end && (c->pad_sequences || s + span < f->end); s += c->step, k++) {
        if (pass == 0) continue;
        int64_t frames = (f->end - 1 - s) / c->stride + 1;
        ds->sequences[k] =
            (stk__video_sequence){.file = (int32_t)i,
                                  .first = s,
                                  .frames = (int32_t)(frames < c->sequence_length ? frames : c->sequence_length)};
      }
    }
    if (pass == 0) {
      total = k;
      if (total == 0) {
        stk__errorf(err, err_size, "no sequences: the data set lists no files");
        return STK_ENOENT;
      }
      if (!(ds->sequences = malloc((size_t)total * sizeof *ds->sequences))) return STK_ENOMEM;
    }
  }
  ds->num_sequences = total;
  return STK_OK;
}

/* readers.file's planner over "files" = the sequences' paths, labels = sequence numbers. */
static stk_status build_order(stk__video_dataset *ds, char *err, size_t err_size) {
  const stk__video_dataset_config *c = &ds->config;
  char **paths = malloc((size_t)ds->num_sequences * sizeof *paths);
  int64_t *ids = malloc((size_t)ds->num_sequences * sizeof *ids);
  stk_status st = paths && ids ? STK_OK : STK_ENOMEM;
  for (int64_t i = 0; st == STK_OK && i < ds->num_sequences; i++) {
    paths[i] = ds->files[ds->sequences[i].file].path;
    ids[i] = i;
  }
  if (st == STK_OK && ds->num_sequences > INT32_MAX) {
    stk__errorf(err, err_size, "%lld sequences: more than 2^31 is not supported", (long long)ds->num_sequences);
    st = STK_ERANGE;
  }
  if (st == STK_OK) {
    stk__file_reader_config fc = {.files = paths,
                                  .num_files = (size_t)ds->num_sequences,
                                  .labels = ids,
                                  .num_labels = (size_t)ds->num_sequences,
                                  .random_shuffle = c->random_shuffle,
                                  .initial_fill = c->initial_fill,
                                  .shard_id = c->shard_id,
                                  .num_shards = c->num_shards,
                                  .stick_to_shard = c->stick_to_shard,
                                  .pad_last_batch = c->pad_last_batch,
                                  .seed = c->seed,
                                  .batch_size = c->batch_size};
    st = stk__file_reader_new(&fc, &ds->order, err, err_size);
  }
  free(paths);
  free(ids);
  return st;
}

stk_status stk__video_dataset_new(const stk__video_dataset_config *c, stk__video_dataset **out, char *err,
                                  size_t err_size) {
  *out = NULL;
  int have_root = c->file_root && c->file_root[0], have_list = c->file_list && c->file_list[0];
  int have_names = c->num_filenames > 0;
  if (have_names + have_list + (have_root && !have_list && !have_names) != 1 || (have_names && have_list)) {
    stk__errorf(err, err_size,
                "give exactly one of filenames, file_root or file_list (file_root may accompany the "
                "others as their base directory)");
    return STK_EINVAL;
  }
  stk_status loaded = stk__ffmpeg_load(err, err_size); /* one clear message, before any file */
  if (loaded != STK_OK) return loaded;
  stk__video_dataset *ds = calloc(1, sizeof *ds);
  if (!ds) return STK_ENOMEM;
  ds->config = *c;
  stk_status st = have_names  ? list_filenames(ds, err, err_size)
                  : have_list ? list_file_list(ds, c->file_list, c->file_root, err, err_size)
                              : list_file_root(ds, c->file_root, err, err_size);
  ds->config.file_root = ds->config.file_list = NULL, ds->config.filenames = NULL, ds->config.labels = NULL;
  if (st == STK_OK && ds->num_files == 0) {
    stk__errorf(err, err_size, "%s lists no video files",
                have_names  ? "filenames"
                : have_list ? c->file_list
                            : c->file_root);
    st = STK_ENOENT;
  }
  if (st == STK_OK) {
    index_files(ds);
    st = cut_sequences(ds, err, err_size);
  }
  if (st == STK_OK) st = build_order(ds, err, err_size);
  if (st != STK_OK) {
    if (st == STK_ENOMEM && (!err || !err[0])) stk__errorf(err, err_size, "out of memory listing the videos");
    stk__video_dataset_free(ds);
    return st;
  }
  *out = ds;
  return STK_OK;
}

void stk__video_dataset_free(stk__video_dataset *ds) {
  if (!ds) return;
  for (int64_t i = 0; i < ds->num_files; i++) {
    free(ds->files[i].path);
    free(ds->files[i].error);
    stk__video_index_free(&ds->files[i].index);
  }
  free(ds->files);
  free(ds->sequences);
  stk__file_reader_free(ds->order);
  free(ds);
}

const stk__video_dataset_config *stk__video_dataset_config_of(const stk__video_dataset *ds) { return &ds->config; }
int64_t stk__video_dataset_size(const stk__video_dataset *ds) { return ds->num_sequences; }
int64_t stk__video_dataset_num_files(const stk__video_dataset *ds) { return ds->num_files; }
const stk__video_sequence *stk__video_dataset_sequence(const stk__video_dataset *ds, int64_t i) {
  return &ds->sequences[i];
}
const stk__video_file *stk__video_dataset_file(const stk__video_dataset *ds, int64_t i) { return &ds->files[i]; }

void stk__video_dataset_max_size(const stk__video_dataset *ds, int *width, int *height) {
  *width = *height = 0;
  for (int64_t i = 0; i < ds->num_files; i++) {
    if (ds->files[i].error) continue;
    if (ds->files[i].index.width > *width) *width = ds->files[i].index.width;
    if (ds->files[i].index.height > *height) *height = ds->files[i].index.height;
  }
}

stk_status stk__video_dataset_plan(stk__video_dataset *ds, stk__batch_plan *plan) {
  stk_status st = stk__file_reader_plan(ds->order, plan);
  if (st != STK_OK) return st;
  for (int k = 0; k < plan->batch_size; k++) {
    stk__sample_plan *s = &plan->samples[k];
    s->file_index = s->label; /* the sequence number (the planner's "label") */
    s->label = ds->files[ds->sequences[s->file_index].file].label;
    s->source = ds->files[ds->sequences[s->file_index].file].path; /* messages, source_info */
  }
  return STK_OK;
}

stk_status stk__video_dataset_reset(stk__video_dataset *ds, uint64_t epoch) {
  return stk__file_reader_reset(ds->order, epoch);
}

void stk__video_dataset_meta(const stk__video_dataset *ds, uint64_t epoch, stk_reader_meta *out) {
  stk__file_reader_meta(ds->order, epoch, out);
}
