/* src/core/exec/quarantine.c: the quarantine record of skip_bad_files. Each bad file joins it
 * once per run (not once per read), when the consumer gets the batch it was replaced in (or the
 * batch that was dropped for it: refill.c), with the engine's message as the reason. The record
 * is kept three ways: the names (stk_pipeline_skipped_files), JSON lines
 * (stk_pipeline_bad_files_json) and, when options.bad_files_log names a file, the same JSON lines
 * written there as they come (flushed each time). The data-set sample ids recorded are kept as
 * ranges, so a checkpoint can carry the record (checkpoint.c) and a resumed run reports no file
 * again and appends to the same log. Names are escaped in every output, so a name
 * with a newline, a quote or bytes that are not UTF-8 stays one unambiguous entry. Not a hot
 * path: only batches with bad files reach it. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/common.h"
#include "core/exec/exec.h"

struct stk__quarantine {
  char **seen; /* open-addressing set of recorded names (owned), seen_cap slots */
  size_t seen_cap, seen_count;
  char *names, *json; /* the record so far, '\0'-terminated */
  size_t names_len, names_cap, json_len, json_cap;
  FILE *log;         /* options.bad_files_log, or NULL */
  int64_t (*ids)[2]; /* data-set sample ids recorded, sorted disjoint [from, to] ranges: what a
                           checkpoint carries (checkpoint.c), num_ids used, ids_cap allocated */
  size_t num_ids, ids_cap;
  int carried;   /* a checkpoint's record was carried in: the log is appended to */
  int log_errno; /* a write to the log failed (errno): the run fails, the record is not lost silently */
};

/* ---- A growing string ------------------------------------------------------------------------ */
static int append(char **buf, size_t *len, size_t *cap, const char *s, size_t n) {
  if (*len + n + 1 > *cap) {
    size_t want = (*len + n + 1) * 2;
    char *bigger = realloc(*buf, want);
    if (!bigger) return 0;
    *buf = bigger;
    *cap = want;
  }
  memcpy(*buf + *len, s, n);
  *len += n;
  (*buf)[*len] = '\0';
  return 1;
}

/* Appends the JSON string body of any byte string (stk_json_escape, src/base/json.c). */
static int append_escaped(char **buf, size_t *len, size_t *cap, const char *str) {
  char *escaped = stk_json_escape(str);
  int ok = escaped && append(buf, len, cap, escaped, strlen(escaped));
  free(escaped);
  return ok;
}

/* ---- The set of recorded names --------------------------------------------------------------- */
static uint64_t hash_name(const char *s) {
  uint64_t h = 1469598103934665603ull;
  for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
  return h;
}

/* 1 when name was not in the set and is now, 0 when it was, -1 on out-of-memory. */
static int set_add(stk__quarantine *q, const char *name) {
  if (2 * (q->seen_count + 1) > q->seen_cap) {
    size_t cap = q->seen_cap ? 2 * q->seen_cap : 64;
    char **bigger = calloc(cap, sizeof *bigger);
    if (!bigger) return -1;
    for (size_t i = 0; i < q->seen_cap; i++) {
      if (!q->seen[i]) continue;
      size_t j = hash_name(q->seen[i]) & (cap - 1);
      while (bigger[j]) j = (j + 1) & (cap - 1);
      bigger[j] = q->seen[i];
    }
    free(q->seen);
    q->seen = bigger;
    q->seen_cap = cap;
  }
  size_t j = hash_name(name) & (q->seen_cap - 1);
  for (; q->seen[j]; j = (j + 1) & (q->seen_cap - 1))
    if (strcmp(q->seen[j], name) == 0) return 0;
  size_t n = strlen(name) + 1;
  if (!(q->seen[j] = malloc(n))) return -1;
  memcpy(q->seen[j], name, n);
  q->seen_count++;
  return 1;
}

/* ---- The sample ids, as ranges (carried across a checkpoint) ------------------------------------ */
/* Index of the first range whose end is >= id (num_ids when none). */
static size_t ids_lower(const stk__quarantine *q, int64_t id) {
  size_t lo = 0, hi = q->num_ids;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (q->ids[mid][1] < id) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

static int ids_contain(const stk__quarantine *q, int64_t id) {
  size_t i = ids_lower(q, id);
  return i < q->num_ids && q->ids[i][0] <= id;
}

/* Adds [from, to] (from <= to), merging with touching ranges; 0 on out-of-memory. */
static int ids_add(stk__quarantine *q, int64_t from, int64_t to) {
  size_t i = ids_lower(q, from > INT64_MIN ? from - 1 : from), j = i;
  while (j < q->num_ids && (to == INT64_MAX || q->ids[j][0] <= to + 1)) { /* overlapping or adjacent */
    if (q->ids[j][0] < from) from = q->ids[j][0];
    if (q->ids[j][1] > to) to = q->ids[j][1];
    j++;
  }
  if (i == j) { /* a new range at i */
    if (q->num_ids == q->ids_cap) {
      size_t cap = q->ids_cap ? 2 * q->ids_cap : 16;
      int64_t(*bigger)[2] = realloc(q->ids, cap * sizeof *bigger);
      if (!bigger) return 0;
      q->ids = bigger;
      q->ids_cap = cap;
    }
    memmove(q->ids + i + 1, q->ids + i, (q->num_ids - i) * sizeof *q->ids);
    q->num_ids++;
  } else if (j > i + 1) { /* ranges i..j-1 become one */
    memmove(q->ids + i + 1, q->ids + j, (q->num_ids - j) * sizeof *q->ids);
    q->num_ids -= j - i - 1;
  }
  q->ids[i][0] = from, q->ids[i][1] = to;
  return 1;
}

/* ---- The record -------------------------------------------------------------------------------- */
static stk__quarantine *record(stk_pipeline *pipe) {
  if (!pipe->quarantine) pipe->quarantine = calloc(1, sizeof *pipe->quarantine);
  return pipe->quarantine;
}

stk_status stk__exec_quarantine_open(stk_pipeline *pipe) {
  const char *path = pipe->options.bad_files_log;
  if (!path || !path[0]) return STK_OK;
  stk__quarantine *q = record(pipe);
  if (!q) return STK_ENOMEM;
  char why[600];
  /* a resumed run goes on with the original's log; a FIFO without a reader is refused, not waited on */
  q->log = stk__fopen_regular(path, q->carried ? "a" : "w", "bad_files_log", why, sizeof why);
  if (!q->log) {
    stk__pipe_error(pipe, "%s", why);
    return STK_EIO;
  }
  return STK_OK;
}

/* One bad file's JSON line, appended to the record and written to the log (flushed: a failed
 * write, e.g. a full disk, is seen now and kept in q->log_errno). */
static void add_line(stk__quarantine *q, const stk__bad_sample *bad, const char *name) {
  size_t start = q->json_len;
  char tail[96];
  snprintf(tail, sizeof tail, "\", \"epoch\": %llu, \"sample\": %lld}\n", (unsigned long long)bad->epoch,
           (long long)bad->sample_id);
  int ok = append(&q->json, &q->json_len, &q->json_cap, "{\"file\": \"", 10) &&
           append_escaped(&q->json, &q->json_len, &q->json_cap, name) &&
           append(&q->json, &q->json_len, &q->json_cap, "\", \"reason\": \"", 14) &&
           append_escaped(&q->json, &q->json_len, &q->json_cap, bad->reason ? bad->reason : "(no message)") &&
           append(&q->json, &q->json_len, &q->json_cap, tail, strlen(tail));
  if (!ok) { /* out of memory: the line is left out whole */
    q->json_len = start;
    if (q->json) q->json[start] = '\0';
    return;
  }
  if (q->log && !q->log_errno) {
    size_t n = q->json_len - start;
    errno = 0;
    if (fwrite(q->json + start, 1, n, q->log) != n || fflush(q->log) != 0) q->log_errno = errno ? errno : EIO;
  }
}

/* The run's failure once a write to the log failed (every later call fails the same way). */
static stk_status log_failure(stk_pipeline *pipe, const stk__quarantine *q) {
  stk__pipe_error(pipe, "bad_files_log %s: cannot write the record of bad files: %s", pipe->options.bad_files_log,
                  strerror(q->log_errno));
  return STK_EIO;
}

stk_status stk__exec_quarantine_note(stk_pipeline *pipe, const stk_batch *b) {
  if (pipe->quarantine && pipe->quarantine->log_errno) return log_failure(pipe, pipe->quarantine);
  if (b->num_bad == 0) return STK_OK;
  stk__quarantine *q = record(pipe);
  for (int i = 0; q && i < b->num_bad; i++) {
    const stk__bad_sample *bad = &b->bad[i];
    const char *name = bad->source ? bad->source : "(unnamed sample)";
    if (ids_contain(q, bad->sample_id)) continue; /* recorded before the checkpoint this run resumed */
    if (set_add(q, name) == 0) continue;          /* recorded before (on out-of-memory: recorded again) */
    ids_add(q, bad->sample_id, bad->sample_id);   /* out of memory: a resumed run may report it again */
    pipe->skipped_files++;
    size_t start = q->names_len;
    if (!append_escaped(&q->names, &q->names_len, &q->names_cap, name) ||
        !append(&q->names, &q->names_len, &q->names_cap, "\n", 1)) {
      q->names_len = start;
      if (q->names) q->names[start] = '\0';
    }
    add_line(q, bad, name);
  }
  return q && q->log_errno ? log_failure(pipe, q) : STK_OK;
}

int stk__executor_quarantine_format(const stk_pipeline *pipe, char *buf, size_t size, int max_ranges) {
  const stk__quarantine *q = pipe->quarantine;
  if (pipe->skipped_files == 0 && (!q || q->num_ids == 0)) return snprintf(buf, size, "%s", "");
  int n = snprintf(buf, size, "%llu", (unsigned long long)pipe->skipped_files);
  for (size_t i = 0; q && i < q->num_ids && (int)i < max_ranges && n >= 0 && (size_t)n < size; i++) {
    char range[64]; /* whole ranges only: the ones that do not fit are left out */
    int len = q->ids[i][0] == q->ids[i][1]
                  ? snprintf(range, sizeof range, "%s%lld", i ? "," : ":", (long long)q->ids[i][0])
                  : snprintf(range, sizeof range, "%s%lld-%lld", i ? "," : ":", (long long)q->ids[i][0],
                             (long long)q->ids[i][1]);
    if ((size_t)n + (size_t)len >= size) break;
    memcpy(buf + n, range, (size_t)len + 1);
    n += len;
  }
  return n;
}

stk_status stk__executor_quarantine_carry(stk_pipeline *pipe, uint64_t count, const int64_t (*ranges)[2],
                                          int num_ranges) {
  if (pipe->lock_inited) pthread_mutex_lock(&pipe->lock);
  stk__quarantine *q = record(pipe);
  stk_status st = q ? STK_OK : STK_ENOMEM;
  for (int i = 0; q && i < num_ranges && st == STK_OK; i++)
    if (!ids_add(q, ranges[i][0], ranges[i][1])) st = STK_ENOMEM;
  if (st == STK_OK) {
    q->carried = 1;
    if (count > pipe->skipped_files) pipe->skipped_files = count;
  }
  if (pipe->lock_inited) pthread_mutex_unlock(&pipe->lock);
  return st;
}

char *stk__executor_skipped_names(stk_pipeline *pipe, int json) {
  if (pipe->lock_inited) pthread_mutex_lock(&pipe->lock);
  const stk__quarantine *q = pipe->quarantine;
  const char *text = q ? (json ? q->json : q->names) : NULL;
  if (!text) text = "";
  size_t n = strlen(text) + 1;
  char *copy = malloc(n);
  if (copy) memcpy(copy, text, n);
  if (pipe->lock_inited) pthread_mutex_unlock(&pipe->lock);
  return copy;
}

void stk__executor_free_record(stk_pipeline *pipe) {
  stk__quarantine *q = pipe->quarantine;
  if (!q) return;
  for (size_t i = 0; i < q->seen_cap; i++) free(q->seen[i]);
  free(q->seen);
  free(q->names);
  free(q->json);
  free(q->ids);
  if (q->log) fclose(q->log); /* every line was flushed and checked as it was written */
  free(q);
  pipe->quarantine = NULL;
}
