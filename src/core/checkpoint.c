/* src/core/checkpoint.c: exact checkpoint and resume (stk_pipeline_checkpoint,
 * stk_pipeline_restore, options.checkpoint; docs/checkpoint.md). Not a hot path: runs when the
 * consumer asks for a checkpoint and once at build.
 *
 * The state is the consumer's position (epoch, index of the next batch it gets: executor.c keeps
 * it in deliver and reset) plus what must match for that position to mean the same batches: the
 * seed, the batch size, a fingerprint of the graph (operators, names, devices, inputs, arguments;
 * the reader's shard arguments apart) and of the data set listing (the reader's
 * data_fingerprint), and the reader's shard. Every random decision and the reader's plan are
 * functions of (seed, operator, epoch, sample / batch index), so resuming is: check, then
 * reader->seek(epoch, batch) -- nothing skipped is read or decoded. With skip_bad_files a batch's
 * samples also depend on the bad files met before it, so a mid-epoch checkpoint carries the refill
 * cursor's resume point (stk__refill_point, computed by exec/refill.c): the reader seeks to the
 * reader batch holding the point's start, and the cursor passes over what it must not give out.
 *
 * The text (version 4 when the epoch was resharded in its middle, else 3 when it carries a
 * quarantine record, else version 2, which older stokers read; versions 1 and 2 are read with
 * quarantine empty, 1 to 3 without reshard), one "key=value" per line after the header, every key
 * exactly once:
 *   stoker-checkpoint 2
 *   seed=42                 batch_size=256
 *   graph=<16 hex>/<nodes>  data=<16 hex>/<samples>
 *   epoch=3                 position=17        (batches of epoch 3 the consumer had received)
 *   shard=<shard_id>/<num_shards>
 *   refill=0                or <prefetch depth>:<start>:<from>+<length>,... (skip_bad_files,
 *                           mid-epoch: positions in the epoch's reader plans, docs/checkpoint.md)
 *   quarantine=             empty, or <count>[:<ranges>] (version 3, skip_bad_files): the bad files
 *                           recorded so far and the data-set sample ids of the first
 *                           CKPT_QUARANTINE_RANGES ranges of them ("3-5,9")
 *   reshard=2/4,3/6         version 4 only: the epoch's earlier shardings, num_shards/position
 *                           where each stopped (checkpoint_reshard.c, docs/checkpoint.md)
 * The parser treats the text as outside input: bounded sizes, strict numbers, clear messages. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/checkpoint.h"
#include "core/exec/executor.h"

#define CKPT_HEADER            "stoker-checkpoint "
#define CKPT_VERSION           4u /* reads 1 (refill=0 only), 2 (quarantine empty), 3 (no reshard); writes 2 when it can */
#define CKPT_QUARANTINE_RANGES 256 /* sample-id ranges a checkpoint carries (about 3 KB at most) */
#define CKPT_MAX_TEXT          16384

typedef struct checkpoint {
  uint64_t version, seed, graph, data, epoch;
  int64_t batch_size, graph_nodes, data_samples, position, shard_id, num_shards;
  stk__refill_point refill;  /* depth 0: none ("refill=0") */
  uint64_t quarantine_count; /* bad files recorded before the checkpoint (0: none) */
  int quarantine_num;        /* sample-id ranges carried of them */
  int64_t quarantine[CKPT_QUARANTINE_RANGES][2];
  char *quarantine_text; /* format_state's input: the record as checkpointed (borrowed) */
  int reshard_num;       /* version 4: the epoch was resharded in its middle (0: it was not) */
  stk__reshard_cut reshard[STK__RESHARD_MAX_CUTS];
} checkpoint;

/* ---- Fingerprints --------------------------------------------------------------------------- */
static uint64_t fnv(uint64_t h, const void *data, size_t n) {
  const unsigned char *p = data;
  for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 0x100000001b3ull;
  return h;
}

static uint64_t fnv_str(uint64_t h, const char *s) { return s ? fnv(h, s, strlen(s) + 1) : fnv(h, "", 1); }

static uint64_t hash_arg(uint64_t h, const stk__arg_value *v) {
  h = fnv(h, &v->type, sizeof v->type);
  h = fnv(h, &v->has_value, sizeof v->has_value);
  h = fnv(h, &v->i, sizeof v->i);
  h = fnv(h, &v->f, sizeof v->f);
  h = fnv_str(h, v->s);
  h = fnv(h, &v->count, sizeof v->count);
  if (v->ilist) h = fnv(h, v->ilist, v->count * sizeof *v->ilist);
  if (v->flist) h = fnv(h, v->flist, v->count * sizeof *v->flist);
  for (size_t k = 0; v->slist && k < v->count; k++) h = fnv_str(h, v->slist[k]);
  return fnv_str(h, v->input_ref);
}

/* The reader's shard arguments are state, compared on their own (resharding rule). */
static int is_shard_arg(const stk_pipeline *pipe, int node, const char *name) {
  return node == pipe->reader && (!strcmp(name, "shard_id") || !strcmp(name, "num_shards"));
}

static uint64_t graph_fingerprint(const stk_pipeline *pipe) {
  uint64_t h = 0xcbf29ce484222325ull;
  h = fnv(h, &pipe->options.skip_bad_files, sizeof pipe->options.skip_bad_files);
  for (int n = 0; n < pipe->num_nodes; n++) {
    const stk__node *node = &pipe->nodes[n];
    h = fnv_str(fnv_str(h, node->op_type), node->op.name);
    h = fnv(h, &node->op.device, sizeof node->op.device);
    for (int k = 0; k < node->num_regular_inputs; k++) h = fnv_str(h, node->input_refs[k]);
    for (int a = 0; a < node->op.schema->num_args; a++) {
      const char *name = node->op.schema->args[a].name;
      if (is_shard_arg(pipe, n, name)) continue;
      h = hash_arg(fnv_str(h, name), &node->op.args[a]);
    }
  }
  for (int o = 0; o < pipe->num_outputs; o++) h = fnv_str(h, pipe->output_refs[o]);
  return h;
}

static int64_t reader_int_arg(const stk_pipeline *pipe, const char *name, int64_t fallback) {
  const stk__op *op = &pipe->nodes[pipe->reader].op;
  return stk__arg(op, name) ? stk__arg_int(op, name) : fallback;
}

/* The state of `pipe` now (position from the caller). STK_ENOTSUP when the reader cannot seek. */
static stk_status current_state(stk_pipeline *pipe, checkpoint *c) {
  const stk__node *reader = &pipe->nodes[pipe->reader];
  if (!reader->op.impl->seek || !reader->op.impl->data_fingerprint) {
    stk__pipe_error(pipe, "checkpoint: reader %s (%s) cannot seek, so this pipeline cannot be checkpointed",
                    reader->op.name, reader->op_type);
    return STK_ENOTSUP;
  }
  memset(c, 0, sizeof *c);
  c->seed = pipe->options.seed;
  c->batch_size = pipe->options.batch_size;
  c->graph = graph_fingerprint(pipe);
  c->graph_nodes = pipe->num_nodes;
  c->data = reader->op.impl->data_fingerprint(&reader->op, &c->data_samples);
  c->shard_id = reader_int_arg(pipe, "shard_id", 0);
  c->num_shards = reader_int_arg(pipe, "num_shards", 1);
  return STK_OK;
}

/* ---- Text ----------------------------------------------------------------------------------- */
/* "refill=0", or "refill=<depth>:<start>:<from>+<length>,..." (docs/checkpoint.md). */
static int format_refill(char *buf, size_t size, const stk__refill_point *r) {
  if (r->depth == 0) return snprintf(buf, size, "0");
  int n = snprintf(buf, size, "%d:%" PRId64 ":", r->depth, r->start);
  for (int i = 0; i < r->num_skips && n >= 0 && (size_t)n < size; i++)
    n += snprintf(buf + n, size - (size_t)n, "%s%" PRId64 "+%" PRId64, i ? "," : "", r->skip[i][0],
                  r->skip[i][1] - r->skip[i][0]);
  return n;
}

static char *format_state(const checkpoint *c) {
  const char *quarantine = c->quarantine_text ? c->quarantine_text : "";
  size_t size = 1024 + 48 * (size_t)c->refill.num_skips + strlen(quarantine) + 32 * STK__RESHARD_MAX_CUTS;
  char *buf = malloc(size), *refill = malloc(size), reshard[32 * STK__RESHARD_MAX_CUTS + 16];
  unsigned version = c->reshard_num ? 4u : quarantine[0] ? 3u : 2u; /* the oldest that reads it */
  stk__checkpoint_format_reshard(reshard, sizeof reshard, c->reshard, c->reshard_num);
  int n = -1;
  if (buf && refill && format_refill(refill, size, &c->refill) < (int)size)
    n = snprintf(buf, size,
                 CKPT_HEADER "%u\nseed=%" PRIu64 "\nbatch_size=%" PRId64 "\ngraph=%016" PRIx64 "/%" PRId64
                             "\ndata=%016" PRIx64 "/%" PRId64 "\nepoch=%" PRIu64 "\nposition=%" PRId64
                             "\nshard=%" PRId64 "/%" PRId64 "\nrefill=%s\nquarantine=%s\n%s",
                 version, c->seed, c->batch_size, c->graph, c->graph_nodes, c->data, c->data_samples, c->epoch,
                 c->position, c->shard_id, c->num_shards, refill, quarantine, reshard);
  free(refill);
  if (n < 0 || (size_t)n >= size) {
    free(buf);
    return NULL;
  }
  return buf;
}

/* A whole-string unsigned number, decimal (base 10) or exactly 16 hex digits (base 16). */
static int parse_u64(const char *s, size_t len, int base, uint64_t *out) {
  if (len == 0 || len > (base == 16 ? 16u : 20u) || (base == 16 && len != 16)) return 0;
  uint64_t v = 0;
  for (size_t i = 0; i < len; i++) {
    unsigned d;
    char ch = s[i];
    if (ch >= '0' && ch <= '9') d = (unsigned)(ch - '0');
    else if (base == 16 && ch >= 'a' && ch <= 'f') d = (unsigned)(ch - 'a' + 10);
    else return 0;
    if (v > (UINT64_MAX - d) / (uint64_t)base) return 0;
    v = v * (uint64_t)base + d;
  }
  *out = v;
  return 1;
}

static int parse_i64(const char *s, size_t len, int64_t *out) {
  uint64_t v;
  if (!parse_u64(s, len, 10, &v) || v > (uint64_t)INT64_MAX) return 0;
  *out = (int64_t)v;
  return 1;
}

/* "A/B" with A parsed in base `base` (into *a) and B a decimal int64. */
static int parse_pair(const char *s, size_t len, int base, uint64_t *a, int64_t *b) {
  const char *slash = memchr(s, '/', len);
  if (!slash) return 0;
  size_t left = (size_t)(slash - s);
  return parse_u64(s, left, base, a) && parse_i64(slash + 1, len - left - 1, b);
}

int stk__checkpoint_parse_pair(const char *s, size_t len, uint64_t *a, int64_t *b) {
  return parse_pair(s, len, 10, a, b);
}

/* The value of refill= (version 2): "0", or depth:start:from+length,... with every interval after
 * the start and the one before it, none empty. */
static int parse_refill(const char *v, size_t len, stk__refill_point *r) {
  memset(r, 0, sizeof *r);
  if (len == 1 && v[0] == '0') return 1;
  const char *end = v + len, *c1 = memchr(v, ':', len);
  const char *c2 = c1 ? memchr(c1 + 1, ':', (size_t)(end - c1 - 1)) : NULL;
  int64_t depth;
  if (!c2 || !parse_i64(v, (size_t)(c1 - v), &depth) || depth < 1 || depth > 1000000 ||
      !parse_i64(c1 + 1, (size_t)(c2 - c1 - 1), &r->start))
    return 0;
  r->depth = (int)depth;
  int64_t last = r->start;
  for (const char *p = c2 + 1; p < end;) {
    const char *comma = memchr(p, ',', (size_t)(end - p)), *stop = comma ? comma : end;
    const char *plus = memchr(p, '+', (size_t)(stop - p));
    int64_t from, length;
    if (!plus || !parse_i64(p, (size_t)(plus - p), &from) || !parse_i64(plus + 1, (size_t)(stop - plus - 1), &length) ||
        from < last || length < 1 || length > INT64_MAX - from || r->num_skips == STK__REFILL_MAX_SKIPS)
      return 0;
    r->skip[r->num_skips][0] = from;
    r->skip[r->num_skips++][1] = last = from + length;
    p = comma ? comma + 1 : end;
    if (comma && p == end) return 0; /* a trailing comma */
  }
  return 1;
}

/* The value of quarantine= (version 3): "<count>" or "<count>:<from>[-<to>],..." with the ranges
 * in order, disjoint and not touching, at most CKPT_QUARANTINE_RANGES of them, at most count ids. */
static int parse_quarantine(const char *v, size_t len, checkpoint *c) {
  const char *end = v + len, *colon = memchr(v, ':', len);
  if (!parse_u64(v, colon ? (size_t)(colon - v) : len, 10, &c->quarantine_count) || c->quarantine_count == 0) return 0;
  if (!colon) return 1;
  uint64_t ids = 0;
  for (const char *p = colon + 1; p <= end;) {
    const char *comma = memchr(p, ',', (size_t)(end - p)), *stop = comma ? comma : end;
    const char *dash = memchr(p, '-', (size_t)(stop - p));
    int64_t from, to;
    if (!parse_i64(p, (size_t)((dash ? dash : stop) - p), &from)) return 0;
    if (!dash) to = from;
    else if (!parse_i64(dash + 1, (size_t)(stop - dash - 1), &to) || to <= from) return 0;
    int k = c->quarantine_num;
    if (k == CKPT_QUARANTINE_RANGES || (k > 0 && from <= c->quarantine[k - 1][1] + 1)) return 0;
    if ((uint64_t)(to - from) >= c->quarantine_count - ids) return 0; /* more ids than the count (no wrap) */
    ids += (uint64_t)(to - from) + 1;
    c->quarantine[k][0] = from, c->quarantine[k][1] = to;
    c->quarantine_num++;
    if (!comma) break;
    p = comma + 1;
  }
  return 1;
}

enum { K_SEED, K_BATCH, K_GRAPH, K_DATA, K_EPOCH, K_POSITION, K_SHARD, K_REFILL, K_QUARANTINE, K_RESHARD, K_COUNT };
static const char *const key_names[K_COUNT] = {"seed",     "batch_size", "graph",  "data",       "epoch",
                                               "position", "shard",      "refill", "quarantine", "reshard"};

static int parse_value(int key, const char *v, size_t len, checkpoint *c) {
  uint64_t u;
  switch (key) {
    case K_SEED:
      return parse_u64(v, len, 10, &c->seed);
    case K_BATCH:
      return parse_i64(v, len, &c->batch_size) && c->batch_size >= 1;
    case K_GRAPH:
      return parse_pair(v, len, 16, &c->graph, &c->graph_nodes);
    case K_DATA:
      return parse_pair(v, len, 16, &c->data, &c->data_samples);
    case K_EPOCH:
      return parse_u64(v, len, 10, &c->epoch);
    case K_POSITION:
      return parse_i64(v, len, &c->position);
    case K_SHARD:
      if (!parse_pair(v, len, 10, &u, &c->num_shards) || u > (uint64_t)INT64_MAX) return 0;
      c->shard_id = (int64_t)u;
      return c->num_shards >= 1 && c->shard_id < c->num_shards;
    case K_REFILL:
      return c->version == 1 ? len == 1 && v[0] == '0' : parse_refill(v, len, &c->refill);
    case K_QUARANTINE:
      return len == 0 || (c->version >= 3 && parse_quarantine(v, len, c));
    case K_RESHARD:
      return c->version >= 4 && stk__checkpoint_parse_reshard(v, len, c->reshard, &c->reshard_num);
    default:
      return 0;
  }
}

/* Parses the header line; `line` has `len` bytes (no newline). */
static stk_status parse_header(const char *line, size_t len, uint64_t *out, char *err, size_t err_size) {
  size_t hl = strlen(CKPT_HEADER);
  uint64_t version;
  if (len < hl || memcmp(line, CKPT_HEADER, hl) != 0) {
    stk__errorf(err, err_size, "not a stoker checkpoint (the first line must be \"%s%u\")", CKPT_HEADER, CKPT_VERSION);
    return STK_EINVAL;
  }
  if (!parse_u64(line + hl, len - hl, 10, &version)) {
    stk__errorf(err, err_size, "line 1: the format version is not a number");
    return STK_EINVAL;
  }
  if (version < 1 || version > CKPT_VERSION) {
    stk__errorf(err, err_size, "checkpoint format version %" PRIu64 ", this stoker reads versions 1 to %u", version,
                CKPT_VERSION);
    return STK_EINVAL;
  }
  *out = version;
  return STK_OK;
}

/* Parses one "key=value" line (line_no for messages) into c; seen[] counts keys. */
static stk_status parse_line(const char *line, size_t len, int line_no, int *seen, checkpoint *c, char *err,
                             size_t err_size) {
  const char *eq = memchr(line, '=', len);
  if (!eq) {
    stk__errorf(err, err_size, "line %d: expected key=value", line_no);
    return STK_EINVAL;
  }
  size_t klen = (size_t)(eq - line);
  for (int k = 0; k < K_COUNT; k++) {
    if (strlen(key_names[k]) != klen || memcmp(line, key_names[k], klen) != 0) continue;
    if (seen[k]++) {
      stk__errorf(err, err_size, "line %d: %s given twice", line_no, key_names[k]);
      return STK_EINVAL;
    }
    if (!parse_value(k, eq + 1, len - klen - 1, c)) {
      stk__errorf(err, err_size, "line %d: bad value for %s", line_no, key_names[k]);
      return STK_EINVAL;
    }
    return STK_OK;
  }
  stk__errorf(err, err_size, "line %d: unknown key \"%.*s\"", line_no, (int)(klen < 40 ? klen : 40), line);
  return STK_EINVAL;
}

static stk_status checkpoint_parse(const char *text, checkpoint *c, char *err, size_t err_size) {
  memset(c, 0, sizeof *c);
  size_t total = strnlen(text, CKPT_MAX_TEXT + 1);
  if (total > CKPT_MAX_TEXT) {
    stk__errorf(err, err_size, "checkpoint longer than %d bytes", CKPT_MAX_TEXT);
    return STK_EINVAL;
  }
  int seen[K_COUNT] = {0};
  const char *p = text, *end = text + total;
  for (int line_no = 1; p < end; line_no++) {
    const char *nl = memchr(p, '\n', (size_t)(end - p));
    size_t len = nl ? (size_t)(nl - p) : (size_t)(end - p);
    stk_status st = line_no == 1 ? parse_header(p, len, &c->version, err, err_size)
                                 : parse_line(p, len, line_no, seen, c, err, err_size);
    if (st != STK_OK) return st;
    p += len + (nl ? 1 : 0);
  }
  if (total == 0) return parse_header("", 0, &c->version, err, err_size);
  for (int k = 0; k < K_COUNT; k++)
    if (!seen[k] && (k != K_RESHARD || c->version >= 4)) {
      stk__errorf(err, err_size, "%s is missing", key_names[k]);
      return STK_EINVAL;
    }
  if (c->reshard_num && c->reshard[c->reshard_num - 1].position > c->position) {
    stk__errorf(err, err_size, "reshard: a cut at batch %" PRId64 " is past the position %" PRId64,
                c->reshard[c->reshard_num - 1].position, c->position);
    return STK_EINVAL;
  }
  return STK_OK;
}

/* ---- Public API and the build step ---------------------------------------------------------- */
stk_status stk_pipeline_checkpoint(stk_pipeline *pipe, char **out) {
  if (!pipe || !out) return STK_EINVAL;
  *out = NULL;
  if (!pipe->built) {
    stk__pipe_error(pipe, "checkpoint: the pipeline is not built");
    return STK_ESTATE;
  }
  pipe->last_error[0] = '\0';
  checkpoint c;
  stk_status st = current_state(pipe, &c);
  if (st != STK_OK) return st;
  char err[512] = "";
  pthread_mutex_lock(&pipe->lock);
  while (pipe->refill && pipe->sched_busy)
    pthread_cond_wait(&pipe->cond_done, &pipe->lock); /* the cursor holds still */
  c.epoch = pipe->pos_epoch;
  c.position = pipe->pos_batch;
  const stk__op *reader = &pipe->nodes[pipe->reader].op; /* a resharded epoch: its cuts (version 4) */
  if (reader->impl->get_reshard) c.reshard_num = reader->impl->get_reshard(reader, c.epoch, c.reshard);
  /* skip_bad_files mid-epoch: where the refill cursor resumes (at an epoch's start it is empty) */
  if (pipe->refill && c.position != 0) st = stk__executor_refill_point(pipe, &c.refill, err, sizeof err);
  char quarantine[CKPT_QUARANTINE_RANGES * 44 + 32]; /* two 20-digit ids, '-' and ',' a range */
  /* the whole text stays under CKPT_MAX_TEXT: 1 KB for the other keys, 48 bytes a refill interval */
  size_t room = CKPT_MAX_TEXT - 1024 - 48 * (size_t)c.refill.num_skips;
  stk__executor_quarantine_format(pipe, quarantine, room < sizeof quarantine ? room : sizeof quarantine,
                                  CKPT_QUARANTINE_RANGES);
  c.quarantine_text = quarantine;
  pthread_mutex_unlock(&pipe->lock);
  if (st != STK_OK) {
    stk__pipe_error(pipe, "checkpoint: batch %" PRId64 " of epoch %" PRIu64 " under skip_bad_files: %s", c.position,
                    c.epoch, err);
    return st;
  }
  *out = format_state(&c);
  return *out ? STK_OK : STK_ENOMEM;
}

static stk_status check_refill(stk_pipeline *pipe, const checkpoint *c);

/* Names the first difference between the checkpoint `c` and the pipeline's state `now`. */
static stk_status check_match(stk_pipeline *pipe, const checkpoint *c, const checkpoint *now) {
  const char *reader = pipe->nodes[pipe->reader].op.name;
  if (c->seed != now->seed)
    stk__pipe_error(pipe, "checkpoint: taken with seed %" PRIu64 ", this pipeline has seed %" PRIu64, c->seed,
                    now->seed);
  else if (c->batch_size != now->batch_size)
    stk__pipe_error(pipe, "checkpoint: taken with batch_size %" PRId64 ", this pipeline has %" PRId64, c->batch_size,
                    now->batch_size);
  else if (c->data != now->data || c->data_samples != now->data_samples)
    stk__pipe_error(pipe,
                    "checkpoint: taken on another data set (%" PRId64 " samples, listing %016" PRIx64
                    "); reader %s lists %" PRId64 " samples, listing %016" PRIx64,
                    c->data_samples, c->data, reader, now->data_samples, now->data);
  else if (c->graph != now->graph || c->graph_nodes != now->graph_nodes)
    stk__pipe_error(pipe,
                    "checkpoint: taken on another pipeline graph (%" PRId64 " nodes, fingerprint %016" PRIx64
                    "; this one: %" PRId64 " nodes, %016" PRIx64 "): operators, names, inputs or arguments differ",
                    c->graph_nodes, c->graph, now->graph_nodes, now->graph);
  else if ((c->num_shards != now->num_shards || c->reshard_num) &&
           stk__checkpoint_check_reshard(pipe, &(stk__reshard_resume){c->epoch, c->position, c->num_shards,
                                                                      now->num_shards, c->reshard, c->reshard_num}) !=
               STK_OK)
    return STK_EINVAL;
  else if (c->num_shards == now->num_shards && c->shard_id != now->shard_id)
    stk__pipe_error(pipe,
                    "checkpoint: taken on shard_id=%" PRId64 ", reader %s has shard_id=%" PRId64
                    " (each shard resumes from its own checkpoint)",
                    c->shard_id, reader, now->shard_id);
  else return check_refill(pipe, c);
  return STK_EINVAL;
}

/* With skip_bad_files a mid-epoch checkpoint carries the refill cursor, whose batches depend on
 * the prefetch depth (exec/refill.c): the same depth is required. */
static stk_status check_refill(stk_pipeline *pipe, const checkpoint *c) {
  int depth = pipe->options.prefetch_queue_depth > 1 ? pipe->options.prefetch_queue_depth : 1;
  if (c->refill.depth && !pipe->options.skip_bad_files)
    stk__pipe_error(pipe,
                    "checkpoint: carries a refill cursor (skip_bad_files) and this pipeline has skip_bad_files off");
  else if (!c->refill.depth && pipe->options.skip_bad_files && c->position != 0)
    stk__pipe_error(pipe,
                    "checkpoint: batch %" PRId64 " of epoch %" PRIu64
                    " under skip_bad_files needs the refill "
                    "cursor, and this checkpoint has none (refill=0)",
                    c->position, c->epoch);
  else if (c->refill.depth && c->position == 0)
    stk__pipe_error(pipe, "checkpoint: position 0 with a refill cursor (refill=%d:...): a checkpoint at an epoch's "
                          "start carries none; the text was altered",
                    c->refill.depth);
  else if (c->refill.depth && (uint64_t)c->position > (uint64_t)c->refill.start / (uint64_t)c->batch_size)
    stk__pipe_error(pipe,
                    "checkpoint: position %" PRId64 " of epoch %" PRIu64 " is past the refill cursor's start %" PRId64
                    " (reader batch %" PRId64 "): the consumer cannot have received more batches than the reader "
                    "planned; the text was altered",
                    c->position, c->epoch, c->refill.start, c->refill.start / c->batch_size);
  else if (c->refill.depth && c->refill.depth != depth)
    stk__pipe_error(pipe,
                    "checkpoint: taken with prefetch_queue_depth %d under skip_bad_files, this pipeline has %d: "
                    "with skip_bad_files which samples replace bad ones depends on the prefetch depth, so resume "
                    "mid-epoch with the same prefetch_queue_depth (or from a checkpoint at an epoch's start)",
                    c->refill.depth, depth);
  else return STK_OK;
  return STK_EINVAL;
}

/* The reader batch a restore seeks to: the checkpoint's position, or with a refill cursor the
 * reader batch holding the cursor's start (the cursor passes over the entries before it). Before
 * that, the reader learns the epoch's reshardings: the checkpoint's, and one more when it is
 * resumed under another num_shards in the middle of the epoch (or of its remainder). */
static int64_t reader_batch(stk_pipeline *pipe, const checkpoint *c, const checkpoint *now, stk_status *st) {
  *st = stk__checkpoint_set_reshard(
      pipe, &(stk__reshard_resume){c->epoch, c->position, c->num_shards, now->num_shards, c->reshard, c->reshard_num});
  if (!c->refill.depth) return c->position;
  pipe->refill_resume = c->refill;
  pipe->has_refill_resume = 1;
  return c->refill.start / c->batch_size;
}

/* Restore on a built pipeline: check, then the executor discards what is in flight and seeks. */
static stk_status restore_built(stk_pipeline *pipe, const checkpoint *c) {
  checkpoint now;
  stk_status st = current_state(pipe, &now);
  if (st == STK_OK) st = check_match(pipe, c, &now);
  if (st != STK_OK) return st;
  char err[512] = "";
  reader_batch(pipe, c, &now, &st); /* the executor's seek takes the refill point from the pipeline */
  if (st != STK_OK) return st;
  st = stk__executor_seek(pipe, c->epoch, c->position, err, sizeof err);
  if (st == STK_OK && c->quarantine_count)
    st = stk__executor_quarantine_carry(pipe, c->quarantine_count, c->quarantine, c->quarantine_num);
  if (st != STK_OK)
    stk__pipe_error(pipe, "checkpoint: reader %s cannot resume at epoch %" PRIu64 ", batch %" PRId64 ": %s",
                    pipe->nodes[pipe->reader].op.name, c->epoch, c->position, err[0] ? err : stk_strerror(st));
  return st;
}

stk_status stk_pipeline_restore(stk_pipeline *pipe, const char *text) {
  if (!pipe || !text) return STK_EINVAL;
  pipe->last_error[0] = '\0';
  if (pipe->failed_build) {
    stk__pipe_error(pipe, "restore: the pipeline's build failed");
    return STK_ESTATE;
  }
  checkpoint c;
  char err[256] = "";
  if (checkpoint_parse(text, &c, err, sizeof err) != STK_OK) {
    stk__pipe_error(pipe, "restore: %s", err);
    return STK_EINVAL;
  }
  if (pipe->built) return restore_built(pipe, &c);
  char *copy = strdup(text);
  if (!copy) return STK_ENOMEM;
  free(pipe->restore_text);
  pipe->restore_text = copy;
  return STK_OK;
}

stk_status stk__checkpoint_apply(stk_pipeline *pipe, int *restored) {
  *restored = 0;
  checkpoint now, c;
  if (!pipe->restore_text) return pipe->options.enable_checkpointing ? current_state(pipe, &now) : STK_OK;
  stk_status st = current_state(pipe, &now);
  if (st != STK_OK) return st;
  char err[512] = "";
  if (checkpoint_parse(pipe->restore_text, &c, err, sizeof err) != STK_OK) {
    stk__pipe_error(pipe, "checkpoint: %s", err);
    return STK_EINVAL;
  }
  if ((st = check_match(pipe, &c, &now)) != STK_OK) return st;
  stk__node *reader = &pipe->nodes[pipe->reader];
  /* Resharded at an epoch boundary: the epoch starts over under the new sharding. */
  int64_t batch = reader_batch(pipe, &c, &now, &st);
  if (st != STK_OK) return st;
  st = reader->op.impl->seek(&reader->op, c.epoch, batch, err, sizeof err);
  if (st != STK_OK) {
    stk__pipe_error(pipe, "checkpoint: reader %s cannot resume at epoch %" PRIu64 ", batch %" PRId64 ": %s",
                    reader->op.name, c.epoch, c.position, err[0] ? err : stk_strerror(st));
    return st;
  }
  pipe->epoch = pipe->plan_epoch = pipe->pos_epoch = c.epoch;
  pipe->pos_batch = c.position; /* the refill cursor takes refill_resume when it is made */
  *restored = 1;
  if (c.quarantine_count) /* before the executor starts: the bad-files log is then appended to */
    return stk__executor_quarantine_carry(pipe, c.quarantine_count, c.quarantine, c.quarantine_num);
  return STK_OK;
}
