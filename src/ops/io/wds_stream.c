/* src/ops/io/wds_stream.c: the read-ahead lanes of readers.webdataset (see wds_stream.h).
 * Runs on the lanes' own threads; the consumer side (next) is one lock and one pop per sample.
 *
 * A sample is a run of consecutive members with the same key: the member's path up to the first
 * dot of its last path component ("a/b/x01.seg.jpg" -> key "a/b/x01", extension "seg.jpg"), as
 * WebDataset defines it. A member whose extension is in no ext group is passed over without
 * reading its data; a second member for a group already filled is passed over too.
 *
 * Bad data (skip_bad_files): a tar-level error (corrupt header, truncated shard -- also one cut
 * between members --, a member larger than what is left of the shard, an index that does not
 * match, a pipe: command that failed, an unreachable shard) ends that shard -- the samples before
 * it are delivered, the complete sample just before a damaged header included, and the rest is
 * skipped and recorded; a bad sample (a missing component under "error", a missing label, a size
 * that is not a multiple of the dtype, a label that is not an integer, a component over the host
 * memory budget) is skipped alone and recorded. Each record also goes down the queue as a skip
 * record (wds_stream.h). Without skip_bad_files the first such error ends the stream with its
 * message. */
#include "ops/io/wds_stream.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "ops/io/tar_stream.h"

typedef struct lane {
  struct stk__wds_stream *stream;
  int index;
  pthread_t thread;
  int started;
  stk__wds_sample **queue; /* ring of max_queue_samples */
  int head, count;
  size_t bytes;
  pthread_cond_t space; /* the lane waits here while its queue is full */
  int waiting;          /* it does (under lock); wait_bytes: the sample it holds */
  size_t wait_bytes;
  int done;
  stk_status error;
  char err[1024];
  /* assembling (lane thread only) */
  uint8_t *build;
  size_t build_size, build_capacity;
  char *key;
  size_t key_capacity;
  size_t offset[STK__WDS_MAX_GROUPS], size[STK__WDS_MAX_GROUPS];
  int present[STK__WDS_MAX_GROUPS];
  int in_file[STK__WDS_MAX_GROUPS];
  uint64_t file_offset[STK__WDS_MAX_GROUPS];
  stk__wds_file *file; /* the local shard being streamed (a reference), NULL for other sources */
  uint64_t file_size;
  char bad[512];         /* why the sample being assembled is bad ("" when it is not) */
  int64_t next_position; /* after a unit: the position in its shard of the first sample not delivered */
} lane;

struct stk__wds_stream {
  stk__wds_stream_config c;
  stk__wds_unit *units;
  pthread_mutex_t lock;
  pthread_cond_t filled; /* the consumer waits here for a lane's next sample */
  int consumer_waiting;
  int cancel; /* set under lock, read by the lanes and byte sources without it: __atomic only */
  lane *lanes;
  int current;
  int64_t skipped;
  char *skipped_text;
  size_t skipped_len, skipped_capacity;
};

/* A sample's in-memory components of at least this many bytes keep the lane's build buffer. */
#define HAND_OVER_BYTES 16384

/* ---- Lane side ------------------------------------------------------------------------------ */
static void record_skip(stk__wds_stream *s, const char *message) {
  pthread_mutex_lock(&s->lock);
  s->skipped++;
  size_t n = strlen(message) + 1;
  if (s->skipped_len + n + 1 > s->skipped_capacity) {
    size_t cap = (s->skipped_len + n + 1) * 2;
    char *bigger = realloc(s->skipped_text, cap);
    if (bigger) s->skipped_text = bigger, s->skipped_capacity = cap;
  }
  if (s->skipped_len + n + 1 <= s->skipped_capacity) {
    memcpy(s->skipped_text + s->skipped_len, message, n - 1);
    s->skipped_len += n - 1;
    s->skipped_text[s->skipped_len++] = '\n';
    s->skipped_text[s->skipped_len] = '\0';
  }
  pthread_mutex_unlock(&s->lock);
}

/* Once full, a lane waits until its queue has drained to half (or is empty): one wake-up per
 * half queue, not per sample. Under lock. */
static int may_resume(const lane *l, const stk__wds_stream_config *c) {
  return l->count == 0 || (l->count <= c->max_queue_samples / 2 && l->bytes + l->wait_bytes <= c->max_queue_bytes / 2);
}

/* Queues a sample, waiting while the lane's queue is full. STK_ESHUTDOWN when cancelled. */
static stk_status push(lane *l, stk__wds_sample *sample) {
  stk__wds_stream *s = l->stream;
  pthread_mutex_lock(&s->lock);
  if (l->count > 0 && (l->count >= s->c.max_queue_samples || l->bytes + sample->bytes > s->c.max_queue_bytes)) {
    l->waiting = 1;
    l->wait_bytes = sample->bytes;
    while (!__atomic_load_n(&s->cancel, __ATOMIC_ACQUIRE) && !may_resume(l, &s->c))
      pthread_cond_wait(&l->space, &s->lock);
    l->waiting = 0;
  }
  if (__atomic_load_n(&s->cancel, __ATOMIC_ACQUIRE)) {
    pthread_mutex_unlock(&s->lock);
    stk__wds_sample_free(sample);
    return STK_ESHUTDOWN;
  }
  l->queue[(l->head + l->count) % s->c.max_queue_samples] = sample;
  l->count++;
  l->bytes += sample->bytes;
  if (s->consumer_waiting) pthread_cond_signal(&s->filled);
  pthread_mutex_unlock(&s->lock);
  return STK_OK;
}

/* skip_bad_files: records what is skipped (`name`: a shard, or "shard:key") and hands a skip
 * record over in its place, so the executor names it in the quarantine record. */
static stk_status skip(lane *l, const char *name, int shard, int64_t position, const char *why) {
  stk__wds_stream *s = l->stream;
  record_skip(s, why);
  int64_t id = (int64_t)((uint64_t)shard << 32 | (uint64_t)(position & 0xffffffff));
  stk__wds_sample *record = stk__wds_skip_record(name, why, s->c.epoch, id);
  if (!record) {
    snprintf(l->err, sizeof l->err, "out of memory recording a skipped sample of %s", name);
    return STK_ENOMEM;
  }
  return push(l, record);
}

static int match_group(const stk__wds_stream_config *c, const char *ext) {
  for (int g = 0; g < c->num_groups; g++)
    for (size_t k = 0; k < c->group_num_exts[g]; k++)
      if ((c->case_sensitive ? strcmp : strcasecmp)(ext, c->group_exts[g][k]) == 0) return g;
  return -1;
}

/* The assembled sample as one allocation, or a data error message (STK_EPARSE). */
static stk_status finish_sample(lane *l, const char *shard, int64_t position, stk__wds_sample **out, char *err,
                                size_t err_size) {
  const stk__wds_stream_config *c = &l->stream->c;
  *out = NULL;
  int32_t label = 0;
  if (l->bad[0]) {
    stk__errorf(err, err_size, "shard %s: sample %s: %s", shard, l->key, l->bad);
    return STK_EPARSE;
  }
  for (int g = 0; g < c->num_groups; g++) {
    if (!l->present[g]) {
      if (c->missing == STK__WDS_MISSING_SKIP) return STK_OK;
      if (g == c->label_group) { /* "empty" has no meaning for a label: 0 would be a real class */
        stk__errorf(err, err_size, "shard %s: sample %s has no label component (label_ext \"%s\")", shard, l->key,
                    c->group_exts[g][0]);
        return STK_EPARSE;
      }
      if (c->missing == STK__WDS_MISSING_ERROR) {
        stk__errorf(err, err_size,
                    "shard %s: sample %s has no component for ext group %d (\"%s\"...); "
                    "missing_component_behavior=\"error\"",
                    shard, l->key, g, c->group_exts[g][0]);
        return STK_EPARSE;
      }
      continue;
    }
    if (l->size[g] % c->group_elem_size[g]) {
      stk__errorf(err, err_size,
                  "shard %s: sample %s: component of ext group %d has %zu bytes, not a multiple of "
                  "its dtype's %zu",
                  shard, l->key, g, l->size[g], c->group_elem_size[g]);
      return STK_EPARSE;
    }
    if (g == c->label_group && !stk__wds_parse_label(l->build + l->offset[g], l->size[g], &label)) {
      stk__errorf(err, err_size, "shard %s: sample %s: the label component is not a decimal integer", shard, l->key);
      return STK_EPARSE;
    }
  }
  /* Large components read here (remote and pipe: shards) are not copied again: the build buffer
   * becomes the sample's (cut to size) and the lane starts a new one. Small ones are copied. */
  int hand_over = l->build_size >= HAND_OVER_BYTES;
  size_t shard_len = strlen(shard), key_len = strlen(l->key), name_len = shard_len + 1 + key_len + 1;
  stk__wds_sample *s = malloc(sizeof *s + name_len + (hand_over ? 0 : l->build_size));
  if (!s) return STK_ENOMEM;
  memset(s, 0, sizeof *s);
  s->source = (char *)(s + 1); /* "shard:key" */
  memcpy(s->source, shard, shard_len);
  s->source[shard_len] = ':';
  memcpy(s->source + shard_len + 1, l->key, key_len + 1);
  if (hand_over) {
    uint8_t *cut = realloc(l->build, l->build_size);
    s->data = s->own_data = cut ? cut : l->build;
    l->build = NULL;
    l->build_capacity = 0;
  } else {
    s->data = (uint8_t *)s->source + name_len;
    if (l->build_size) memcpy(s->data, l->build, l->build_size);
  }
  memcpy(s->offset, l->offset, sizeof s->offset);
  memcpy(s->size, l->size, sizeof s->size);
  memcpy(s->present, l->present, sizeof s->present);
  memcpy(s->in_file, l->in_file, sizeof s->in_file);
  memcpy(s->file_offset, l->file_offset, sizeof s->file_offset);
  for (int g = 0; g < c->num_groups && !s->file; g++)
    if (l->in_file[g]) {
      s->file = l->file;
      __atomic_add_fetch(&s->file->refs, 1, __ATOMIC_RELAXED);
    }
  s->bytes = l->build_size;
  s->label = label;
  s->epoch = c->epoch;
  s->sample_id = position; /* the caller adds the shard */
  *out = s;
  return STK_OK;
}

static stk_status grow(void **p, size_t *capacity, size_t need) {
  if (need <= *capacity) return STK_OK;
  size_t cap = *capacity ? *capacity : 4096;
  while (cap < need && cap <= SIZE_MAX / 2) cap *= 2;
  if (cap < need) cap = need;
  void *bigger = realloc(*p, cap);
  if (!bigger) return STK_ENOMEM;
  *p = bigger;
  *capacity = cap;
  return STK_OK;
}

static stk_status start_key(lane *l, const char *key, size_t key_len) {
  stk_status st = grow((void **)&l->key, &l->key_capacity, key_len + 1);
  if (st != STK_OK) return st;
  memcpy(l->key, key, key_len);
  l->key[key_len] = '\0';
  l->build_size = 0;
  l->bad[0] = '\0';
  memset(l->present, 0, sizeof l->present);
  memset(l->in_file, 0, sizeof l->in_file);
  memset(l->size, 0, sizeof l->size);
  memset(l->offset, 0, sizeof l->offset);
  return STK_OK;
}

/* Emits the assembled sample (position `position` in its shard) unless it is before `to_skip`. */
static stk_status emit(lane *l, const stk__wds_unit *u, int64_t position, int64_t to_skip, int64_t *emitted) {
  stk__wds_stream *s = l->stream;
  const char *shard = s->c.paths[u->shard];
  if (position < to_skip) return STK_OK;
  char err[768];
  stk__wds_sample *sample;
  stk_status st = finish_sample(l, shard, position, &sample, err, sizeof err);
  if (st == STK_EPARSE && s->c.skip_bad_files) {
    (*emitted)++; /* it was the unit's sample all the same: an index slice must not grow past it */
    char name[1024];
    snprintf(name, sizeof name, "%s:%s", shard, l->key);
    return skip(l, name, u->shard, position, err);
  }
  if (st != STK_OK) {
    snprintf(l->err, sizeof l->err, "%s", st == STK_ENOMEM ? "out of memory assembling a sample" : err);
    return st;
  }
  (*emitted)++;
  if (!sample) return STK_OK; /* missing component, "skip" */
  sample->sample_id = (int64_t)((uint64_t)u->shard << 32 | (uint64_t)position);
  return push(l, sample);
}

/* The budget a component read into memory must fit (0: none known). */
static size_t member_limit(const stk__wds_stream_config *c) {
  size_t limit = c->budget_limit ? __atomic_load_n(c->budget_limit, __ATOMIC_RELAXED) : 0;
  if (!limit) limit = c->budget_bytes;
  return limit == SIZE_MAX ? 0 : limit;
}

/* Takes member m (ext group g) into the sample being assembled: a local shard's member stays in
 * the file (the worker reads it into the output: one copy, as readers.file's); labels and the
 * members of other sources are read here. A member that runs past the stream's known end is a
 * truncated shard (STK_EIO, nothing allocated); one too large for the host memory budget, or a
 * label longer than any number, makes the sample bad (its data is passed over, unread). */
static stk_status take_member(lane *l, stk__tar_reader *tr, stk__byte_source *src, const char *shard,
                              const stk__tar_member *m, int g) {
  const stk__wds_stream_config *c = &l->stream->c;
  uint64_t end, known = stk__byte_source_size(src);
  if (!stk__add_u64(m->data_offset, m->size, &end) || end > known) {
    stk__errorf(l->err, sizeof l->err,
                "shard %s is truncated or corrupt: member %s says it holds %llu bytes from byte %llu, but the "
                "shard ends at byte %llu",
                shard, m->name, (unsigned long long)m->size, (unsigned long long)m->data_offset,
                (unsigned long long)known);
    return STK_EIO;
  }
  l->present[g] = 1;
  l->size[g] = (size_t)m->size;
  if (l->file && g != c->label_group) {
    l->in_file[g] = 1;
    l->file_offset[g] = m->data_offset;
    return STK_OK;
  }
  size_t limit = g == c->label_group ? 64 : member_limit(c);
  if (limit && m->size > limit) {
    snprintf(l->bad, sizeof l->bad, "member %s declares %llu bytes, more than %s (%zu bytes)", m->name,
             (unsigned long long)m->size, g == c->label_group ? "a text label can hold" : "the host memory budget",
             limit);
    return STK_OK;
  }
  /* In parts of at most 16 MiB, the buffer growing as bytes arrive: a size a stream cannot back
   * up ends in "truncated" after the bytes it has, never in an allocation of what it claims. */
  l->offset[g] = l->build_size;
  for (uint64_t left = m->size; left > 0;) {
    size_t part = left < ((uint64_t)16 << 20) ? (size_t)left : (size_t)16 << 20;
    stk_status st = grow((void **)&l->build, &l->build_capacity, l->build_size + part);
    if (st == STK_OK) st = stk__tar_read_part(tr, l->build + l->build_size, part, l->err, sizeof l->err);
    if (st != STK_OK) return st;
    l->build_size += part;
    left -= part;
  }
  return STK_OK;
}

/* The end of one pass over a unit's stream: an index's promise kept, a pipe:'s exit status. */
static stk_status check_unit_end(lane *l, const stk__wds_unit *u, stk__byte_source *src, int64_t emitted,
                                 int more_members) {
  const char *shard = l->stream->c.paths[u->shard];
  if (u->max_samples >= 0 && !more_members && emitted < u->max_samples) {
    stk__errorf(l->err, sizeof l->err,
                "shard %s ended after %lld of the %lld samples its index promises from sample %lld: the index "
                "does not match the shard",
                shard, (long long)emitted, (long long)u->max_samples, (long long)u->first_sample);
    return STK_EIO;
  }
  if (u->to_index_end && more_members) {
    stk__errorf(l->err, sizeof l->err,
                "shard %s holds more than the %lld samples its index lists: the index does not match the shard", shard,
                (long long)(u->first_sample + u->max_samples));
    return STK_EIO;
  }
  return more_members ? STK_OK : stk__byte_source_finish(src, l->err, sizeof l->err);
}

/* One pass over the unit's stream from byte `offset`. *members: members seen (0 when the offset
 * landed on no header); *position: the next sample's position in the shard. */
static stk_status stream_pass(lane *l, const stk__wds_unit *u, uint64_t offset, int64_t to_skip, int64_t *position,
                              int64_t *members) {
  stk__wds_stream *s = l->stream;
  const char *shard = s->c.paths[u->shard];
  stk__byte_source *src = NULL;
  stk__tar_reader *tr = NULL;
  stk_status st = stk__byte_source_open(shard, offset, &s->c.source_options, &src, l->err, sizeof l->err);
  if (st == STK_OK) st = stk__tar_reader_new(src, shard, &tr);
  if (st == STK_OK) l->file = stk__wds_file_share(src, &l->file_size);
  int64_t emitted = 0;
  int have_sample = 0, header_failed = 0, more_members = 0;
  stk__tar_member m;
  while (st == STK_OK) {
    if ((st = stk__tar_next(tr, &m, l->err, sizeof l->err)) != STK_OK) {
      header_failed = st != STK_EOF_EPOCH;
      break;
    }
    ++*members;
    const char *base = strrchr(m.name, '/');
    base = base ? base + 1 : m.name;
    const char *dot = strchr(base, '.');
    size_t key_len = dot ? (size_t)(dot - m.name) : strlen(m.name);
    const char *ext = dot ? dot + 1 : "";
    if (!have_sample || strlen(l->key) != key_len || memcmp(l->key, m.name, key_len) != 0) {
      if (have_sample && (st = emit(l, u, (*position)++, to_skip, &emitted)) != STK_OK) break;
      have_sample = 0;
      if (u->max_samples >= 0 && emitted >= u->max_samples) {
        more_members = 1;
        break;
      }
      if ((st = start_key(l, m.name, key_len)) != STK_OK) break;
      have_sample = 1;
    }
    int g = match_group(&s->c, ext);
    if (g < 0 || l->present[g] || *position < to_skip || l->bad[0]) continue;
    st = take_member(l, tr, src, shard, &m, g);
  }
  int in_unit = have_sample && (u->max_samples < 0 || emitted < u->max_samples);
  if (st == STK_EOF_EPOCH) {
    st = in_unit ? emit(l, u, (*position)++, to_skip, &emitted) : STK_OK;
    if (st == STK_OK) st = check_unit_end(l, u, src, emitted, 0);
  } else if (st == STK_OK) {
    st = check_unit_end(l, u, src, emitted, more_members);
  } else if (header_failed && in_unit && s->c.skip_bad_files && st != STK_ENOMEM && st != STK_ESHUTDOWN) {
    /* a damaged header after a complete sample: that sample is kept (its members were read
     * whole), the rest of the shard is skipped by the caller with this error */
    char saved[sizeof l->err];
    memcpy(saved, l->err, sizeof saved);
    stk_status kept = emit(l, u, (*position)++, to_skip, &emitted);
    if (kept != STK_OK) st = kept;
    else memcpy(l->err, saved, sizeof saved);
  }
  stk__tar_reader_free(tr);
  stk__byte_source_close(src);
  stk__wds_file_release(l->file);
  l->file = NULL;
  return st;
}

/* Streams one unit. Errors leave their message in l->err. */
static stk_status stream_unit(lane *l, const stk__wds_unit *u) {
  stk__wds_stream *s = l->stream;
  int64_t members = 0, position = u->first_sample;
  stk_status st = stream_pass(l, u, u->start_offset, 0, &position, &members);
  /* An index offset that does not land on a header: stream the shard from its start instead. */
  if (st == STK_EIO && members == 0 && u->start_offset > 0 && !__atomic_load_n(&s->cancel, __ATOMIC_ACQUIRE)) {
    members = 0, position = 0;
    st = stream_pass(l, u, 0, u->first_sample, &position, &members);
  }
  if (st == STK_ENOMEM && !l->err[0])
    snprintf(l->err, sizeof l->err, "out of memory reading shard %s", s->c.paths[u->shard]);
  l->next_position = position;
  return st;
}

static void *lane_main(void *arg) {
  lane *l = arg;
  stk__wds_stream *s = l->stream;
  stk_status st = STK_OK;
  for (int64_t u = l->index; u < s->c.num_units && !__atomic_load_n(&s->cancel, __ATOMIC_ACQUIRE); u += s->c.lanes) {
    l->err[0] = '\0';
    st = stream_unit(l, &s->units[u]);
    if (st == STK_OK) continue;
    if (__atomic_load_n(&s->cancel, __ATOMIC_ACQUIRE) || st == STK_ESHUTDOWN) break;
    if (s->c.skip_bad_files && st != STK_ENOMEM) { /* the shard's rest: one record naming the shard */
      char why[sizeof l->err];
      memcpy(why, l->err, sizeof why);
      st = skip(l, s->c.paths[s->units[u].shard], s->units[u].shard, l->next_position, why);
      if (st != STK_OK) break;
      continue;
    }
    break;
  }
  pthread_mutex_lock(&s->lock);
  l->done = 1;
  l->error = __atomic_load_n(&s->cancel, __ATOMIC_ACQUIRE) ? STK_OK : st;
  pthread_cond_signal(&s->filled);
  pthread_mutex_unlock(&s->lock);
  return NULL;
}

/* ---- Consumer side -------------------------------------------------------------------------- */
stk_status stk__wds_stream_start(const stk__wds_stream_config *config, stk__wds_stream **out, char *err,
                                 size_t err_size) {
  *out = NULL;
  stk__wds_stream *s = calloc(1, sizeof *s);
  if (!s) return STK_ENOMEM;
  s->c = *config;
  if (s->c.lanes < 1) s->c.lanes = 1;
  if (s->c.max_queue_samples < 1) s->c.max_queue_samples = 1;
  s->c.source_options.cancel = &s->cancel;
  s->units = malloc(((size_t)config->num_units + 1) * sizeof *s->units);
  s->lanes = calloc((size_t)s->c.lanes, sizeof *s->lanes);
  pthread_mutex_init(&s->lock, NULL);
  pthread_cond_init(&s->filled, NULL);
  if (!s->units || !s->lanes) {
    stk__wds_stream_free(s);
    return STK_ENOMEM;
  }
  if (config->num_units) memcpy(s->units, config->units, (size_t)config->num_units * sizeof *s->units);
  for (int i = 0; i < s->c.lanes; i++) {
    lane *l = &s->lanes[i];
    l->stream = s;
    l->index = i;
    pthread_cond_init(&l->space, NULL);
    l->queue = calloc((size_t)s->c.max_queue_samples, sizeof *l->queue);
    if (!l->queue || pthread_create(&l->thread, NULL, lane_main, l) != 0) {
      stk__errorf(err, err_size, "cannot start the webdataset read-ahead thread %d", i);
      stk__wds_stream_free(s);
      return STK_ESYS;
    }
    l->started = 1;
  }
  *out = s;
  return STK_OK;
}

stk_status stk__wds_stream_next(stk__wds_stream *s, stk__wds_sample **out, char *err, size_t err_size) {
  *out = NULL;
  pthread_mutex_lock(&s->lock);
  for (int passed = 0; passed < s->c.lanes;) {
    lane *l = &s->lanes[s->current];
    while (l->count == 0 && !l->done) {
      s->consumer_waiting = 1;
      pthread_cond_wait(&s->filled, &s->lock);
      s->consumer_waiting = 0;
    }
    if (l->count > 0) {
      *out = l->queue[l->head];
      l->head = (l->head + 1) % s->c.max_queue_samples;
      l->count--;
      l->bytes -= (*out)->bytes;
      s->current = (s->current + 1) % s->c.lanes;
      if (l->waiting && may_resume(l, &s->c)) pthread_cond_signal(&l->space);
      pthread_mutex_unlock(&s->lock);
      return STK_OK;
    }
    if (l->error != STK_OK) {
      stk_status st = l->error;
      stk__errorf(err, err_size, "%s", l->err);
      pthread_mutex_unlock(&s->lock);
      return st;
    }
    s->current = (s->current + 1) % s->c.lanes; /* finished: drained and done */
    passed++;
  }
  pthread_mutex_unlock(&s->lock);
  return STK_OK;
}

int64_t stk__wds_stream_skipped(stk__wds_stream *s, const char **messages) {
  pthread_mutex_lock(&s->lock);
  if (messages) *messages = s->skipped_text ? s->skipped_text : "";
  int64_t n = s->skipped;
  pthread_mutex_unlock(&s->lock);
  return n;
}

void stk__wds_stream_free(stk__wds_stream *s) {
  if (!s) return;
  pthread_mutex_lock(&s->lock);
  __atomic_store_n(&s->cancel, 1, __ATOMIC_RELEASE);
  for (int i = 0; s->lanes && i < s->c.lanes; i++) pthread_cond_signal(&s->lanes[i].space);
  pthread_mutex_unlock(&s->lock);
  for (int i = 0; s->lanes && i < s->c.lanes; i++) {
    lane *l = &s->lanes[i];
    if (l->started) pthread_join(l->thread, NULL);
    for (int k = 0; k < l->count; k++) stk__wds_sample_free(l->queue[(l->head + k) % s->c.max_queue_samples]);
    pthread_cond_destroy(&l->space);
    free(l->queue);
    free(l->build);
    free(l->key);
  }
  pthread_mutex_destroy(&s->lock);
  pthread_cond_destroy(&s->filled);
  free(s->lanes);
  free(s->units);
  free(s->skipped_text);
  free(s);
}
