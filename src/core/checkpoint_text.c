/* src/core/checkpoint_text.c: the text of a checkpoint (docs/checkpoint.md, What is saved):
 * writing it (stk__checkpoint_format) and reading it back as outside input
 * (stk__checkpoint_parse: bounded sizes, strict numbers, the checksum line checked before any
 * field, every field checked against the others). Not a hot path.
 *
 * The text (version 5; versions 1 and 2 are read with quarantine empty, 1 to 3 without reshard,
 * 4 with reshard required, 1 to 4 without a checksum), one "key=value" per line after the header,
 * every key exactly once:
 *   stoker-checkpoint 5
 *   seed=42                 batch_size=256
 *   graph=<16 hex>/<nodes>  data=<16 hex>/<samples>
 *   epoch=3                 position=17        (batches of epoch 3 the consumer had received)
 *   shard=<shard_id>/<num_shards>
 *   refill=0                or <prefetch depth>:<start>:<from>+<length>,... (skip_bad_files,
 *                           mid-epoch: positions in the epoch's reader plans, docs/checkpoint.md)
 *   quarantine=             empty, or <count>[:<ranges>] (version 3, skip_bad_files): the bad files
 *                           recorded so far and the data-set sample ids of the first
 *                           STK__CKPT_QUARANTINE_RANGES ranges of them ("3-5,9")
 *   reshard=2/4,3/6         only when the epoch was resharded in its middle (required in version
 *                           4): its earlier shardings, num_shards/position where each stopped
 *                           (checkpoint_reshard.c, docs/checkpoint.md)
 *   readers=3/17,0/4        only in a pipeline with further readers (exec/side_readers.c): the
 *                           epoch/position of each, in graph order
 *   checksum=<16 hex>       the last line, required from version 5: FNV-1a-64 of every byte
 *                           before it, so a damaged text is refused as corrupt, never read as data
 * The parser treats the text as outside input: bounded sizes, strict numbers, every field checked
 * against the others (ids inside the data set, refill positions inside the epoch, no count that
 * overflows), clear messages. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/checkpoint.h"

#define CKPT_HEADER       "stoker-checkpoint "
#define CKPT_VERSION      5u /* writes 5; reads 1 (refill=0 only), 2 (quarantine empty), 3 (no reshard), 4 */
#define CKPT_CHECKSUM_KEY "checksum="

typedef stk__checkpoint checkpoint;

uint64_t stk__checkpoint_fnv(uint64_t h, const void *data, size_t n) {
  const unsigned char *p = data;
  for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 0x100000001b3ull;
  return h;
}

static uint64_t fnv(uint64_t h, const void *data, size_t n) { return stk__checkpoint_fnv(h, data, n); }

/* "refill=0", or "refill=<depth>:<start>:<from>+<length>,..." (docs/checkpoint.md). */
static int format_refill(char *buf, size_t size, const stk__refill_point *r) {
  if (r->depth == 0) return snprintf(buf, size, "0");
  int n = snprintf(buf, size, "%d:%" PRId64 ":", r->depth, r->start);
  for (int i = 0; i < r->num_skips && n >= 0 && (size_t)n < size; i++)
    n += snprintf(buf + n, size - (size_t)n, "%s%" PRId64 "+%" PRId64, i ? "," : "", r->skip[i][0],
                  r->skip[i][1] - r->skip[i][0]);
  return n;
}

char *stk__checkpoint_format(const checkpoint *c) {
  const char *quarantine = c->quarantine_text ? c->quarantine_text : "";
  size_t size = 1024 + 48 * (size_t)c->refill.num_skips + strlen(quarantine) + 32 * STK__RESHARD_MAX_CUTS;
  char *buf = malloc(size), *refill = malloc(size), reshard[32 * STK__RESHARD_MAX_CUTS + 16];
  stk__checkpoint_format_reshard(reshard, sizeof reshard, c->reshard, c->reshard_num);
  char readers[48 * STK__MAX_SIDE_READERS + 16] = "";
  for (int r = 0, m = 0; r < c->side_num; r++)
    m += snprintf(readers + m, sizeof readers - (size_t)m, "%s%" PRIu64 "/%" PRId64 "%s", r ? "" : "readers=",
                  c->side_epoch[r], c->side_position[r], r + 1 < c->side_num ? "," : "\n");
  int n = -1;
  if (buf && refill && format_refill(refill, size, &c->refill) < (int)size)
    n = snprintf(buf, size,
                 CKPT_HEADER "%u\nseed=%" PRIu64 "\nbatch_size=%" PRId64 "\ngraph=%016" PRIx64 "/%" PRId64
                             "\ndata=%016" PRIx64 "/%" PRId64 "\nepoch=%" PRIu64 "\nposition=%" PRId64
                             "\nshard=%" PRId64 "/%" PRId64 "\nrefill=%s\nquarantine=%s\n%s%s",
                 CKPT_VERSION, c->seed, c->batch_size, c->graph, c->graph_nodes, c->data, c->data_samples, c->epoch,
                 c->position, c->shard_id, c->num_shards, refill, quarantine, reshard, readers);
  free(refill);
  if (n >= 0 && (size_t)n < size) { /* the checksum of every byte before its line */
    int m = snprintf(buf + n, size - (size_t)n, CKPT_CHECKSUM_KEY "%016" PRIx64 "\n",
                     fnv(STK__CKPT_FNV_BASIS, buf, (size_t)n));
    n = m < 0 ? -1 : n + m;
  }
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

/* The value of readers=: 1 to STK__MAX_SIDE_READERS "epoch/position" pairs, comma separated. */
static int parse_readers(const char *v, size_t len, checkpoint *c) {
  const char *end = v + len;
  for (const char *p = v; p <= end;) {
    const char *comma = memchr(p, ',', (size_t)(end - p)), *stop = comma ? comma : end;
    int k = c->side_num;
    if (k == STK__MAX_SIDE_READERS || !parse_pair(p, (size_t)(stop - p), 10, &c->side_epoch[k], &c->side_position[k]) ||
        c->side_epoch[k] > (uint64_t)INT64_MAX)
      return 0;
    c->side_num++;
    if (!comma) return 1;
    p = comma + 1;
  }
  return 0;
}

/* The value of quarantine= (version 3): "<count>" or "<count>:<from>[-<to>],..." with the ranges
 * in order, disjoint and not touching, at most STK__CKPT_QUARANTINE_RANGES of them, at most count ids. */
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
    if (k == STK__CKPT_QUARANTINE_RANGES || (k > 0 && from <= c->quarantine[k - 1][1] + 1)) return 0;
    if ((uint64_t)(to - from) >= c->quarantine_count - ids) return 0; /* more ids than the count (no wrap) */
    ids += (uint64_t)(to - from) + 1;
    c->quarantine[k][0] = from, c->quarantine[k][1] = to;
    c->quarantine_num++;
    if (!comma) break;
    p = comma + 1;
  }
  return 1;
}

enum {
  K_SEED,
  K_BATCH,
  K_GRAPH,
  K_DATA,
  K_EPOCH,
  K_POSITION,
  K_SHARD,
  K_REFILL,
  K_QUARANTINE,
  K_RESHARD,
  K_READERS,
  K_CHECKSUM,
  K_COUNT
};
static const char *const key_names[K_COUNT] = {"seed",  "batch_size", "graph",      "data",    "epoch",   "position",
                                               "shard", "refill",     "quarantine", "reshard", "readers", "checksum"};

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
    case K_EPOCH: /* an epoch count that cannot wrap (the executor's "no epoch" is UINT64_MAX) */
      return parse_u64(v, len, 10, &c->epoch) && c->epoch <= (uint64_t)INT64_MAX;
    case K_POSITION:
      return parse_i64(v, len, &c->position);
    case K_SHARD:
      if (!parse_pair(v, len, 10, &u, &c->num_shards) || u > (uint64_t)INT64_MAX) return 0;
      c->shard_id = (int64_t)u; /* num_shards is an int in the reader's arguments and reshard cuts */
      return c->num_shards >= 1 && c->num_shards <= 0x7fffffff && c->shard_id < c->num_shards;
    case K_REFILL:
      return c->version == 1 ? len == 1 && v[0] == '0' : parse_refill(v, len, &c->refill);
    case K_QUARANTINE:
      return len == 0 || (c->version >= 3 && parse_quarantine(v, len, c));
    case K_RESHARD:
      return c->version >= 4 && stk__checkpoint_parse_reshard(v, len, c->reshard, &c->reshard_num);
    case K_READERS:
      return parse_readers(v, len, c);
    case K_CHECKSUM: /* its value was compared with the text before the lines were read */
      return parse_u64(v, len, 16, &u);
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

/* The checksum line, when the text has one (the last line starting "checksum="): the FNV-1a-64
 * of every byte before it must be its value. Checked before any line is read, so a damaged text is
 * reported as corrupt instead of as a strange value (or, worse, accepted as another position). */
static stk_status verify_checksum(const char *text, size_t total, char *err, size_t err_size) {
  size_t klen = strlen(CKPT_CHECKSUM_KEY);
  const char *line = NULL;
  for (const char *p = text; (p = memchr(p, '\n', (size_t)(text + total - p))) != NULL; p++)
    if ((size_t)(text + total - p - 1) >= klen && !memcmp(p + 1, CKPT_CHECKSUM_KEY, klen)) line = p + 1;
  if (!line) return STK_OK; /* versions 1 to 4 may have none; version 5 is refused later ("missing") */
  const char *v = line + klen, *nl = memchr(v, '\n', (size_t)(text + total - v));
  size_t vlen = nl ? (size_t)(nl - v) : (size_t)(text + total - v);
  uint64_t want, have = fnv(STK__CKPT_FNV_BASIS, text, (size_t)(line - text));
  if (!parse_u64(v, vlen, 16, &want)) {
    stk__errorf(err, err_size, "the text is corrupt: its checksum line \"%.*s\" is not 16 hex digits",
                (int)(vlen < 40 ? vlen : 40), v);
    return STK_EINVAL;
  }
  if (want != have) {
    stk__errorf(err, err_size,
                "the text is corrupt: checksum %016" PRIx64 " does not match its text (%016" PRIx64
                ", FNV-1a-64 of the %zu bytes before the checksum line): it was damaged or edited after it was "
                "written",
                want, have, (size_t)(line - text));
    return STK_EINVAL;
  }
  return STK_OK;
}

/* a * b + c, or -1 when it passes INT64_MAX (a, b, c >= 0). */
static int64_t checked_mul_add(int64_t a, int64_t b, int64_t c) {
  if (b != 0 && a > (INT64_MAX - c) / b) return -1;
  return a * b + c;
}

/* The fields against each other: quarantined ids inside the data set, refill positions inside the
 * epoch's reader plans (at most ceil(samples / batch_size) batches of batch_size entries), and no
 * more intervals than the cursor holds. The position itself is checked against the epoch by the
 * reader's seek (and, with a refill cursor, against the cursor's start: check_refill). */
static stk_status check_fields(const checkpoint *c, char *err, size_t err_size) {
  for (int k = 0; k < c->quarantine_num; k++)
    if (c->quarantine[k][1] >= c->data_samples) {
      stk__errorf(err, err_size, "quarantine: sample id %" PRId64 " is outside the data set of %" PRId64 " samples",
                  c->quarantine[k][1], c->data_samples);
      return STK_EINVAL;
    }
  if (!c->refill.depth) return STK_OK;
  int64_t batches = c->data_samples / c->batch_size + (c->data_samples % c->batch_size != 0);
  int64_t entries = checked_mul_add(batches, c->batch_size, 0), last = c->refill.start;
  if (c->refill.num_skips) last = c->refill.skip[c->refill.num_skips - 1][1];
  if (entries < 0 || last > entries) {
    stk__errorf(err, err_size,
                "refill: position %" PRId64 " is past the epoch's %" PRId64 " entries (%" PRId64
                " samples in batches of %" PRId64 ")",
                last, entries, c->data_samples, c->batch_size);
    return STK_EINVAL;
  }
  if (c->refill.num_skips + (c->refill.start % c->batch_size != 0) > STK__REFILL_MAX_SKIPS) {
    stk__errorf(err, err_size, "refill: %d intervals and a start inside a batch are more than the cursor's %d",
                c->refill.num_skips, STK__REFILL_MAX_SKIPS);
    return STK_EINVAL;
  }
  return STK_OK;
}

stk_status stk__checkpoint_parse(const char *text, checkpoint *c, char *err, size_t err_size) {
  memset(c, 0, sizeof *c);
  size_t total = strnlen(text, STK__CKPT_MAX_TEXT + 1);
  if (total > STK__CKPT_MAX_TEXT) {
    stk__errorf(err, err_size, "checkpoint longer than %d bytes", STK__CKPT_MAX_TEXT);
    return STK_EINVAL;
  }
  if (verify_checksum(text, total, err, err_size) != STK_OK) return STK_EINVAL;
  int seen[K_COUNT] = {0};
  const char *p = text, *end = text + total;
  for (int line_no = 1; p < end; line_no++) {
    const char *nl = memchr(p, '\n', (size_t)(end - p));
    size_t len = nl ? (size_t)(nl - p) : (size_t)(end - p);
    if (seen[K_CHECKSUM]) {
      stk__errorf(err, err_size, "line %d: the checksum line must be the last", line_no);
      return STK_EINVAL;
    }
    stk_status st = line_no == 1 ? parse_header(p, len, &c->version, err, err_size)
                                 : parse_line(p, len, line_no, seen, c, err, err_size);
    if (st != STK_OK) return st;
    p += len + (nl ? 1 : 0);
  }
  if (total == 0) return parse_header("", 0, &c->version, err, err_size);
  for (int k = 0; k < K_COUNT; k++)
    if (!seen[k] && k != K_READERS && (k != K_RESHARD || c->version == 4) && (k != K_CHECKSUM || c->version >= 5)) {
      stk__errorf(err, err_size, "%s is missing", key_names[k]);
      return STK_EINVAL;
    }
  if (c->reshard_num && c->reshard[c->reshard_num - 1].position > c->position) {
    stk__errorf(err, err_size, "reshard: a cut at batch %" PRId64 " is past the position %" PRId64,
                c->reshard[c->reshard_num - 1].position, c->position);
    return STK_EINVAL;
  }
  return check_fields(c, err, err_size);
}
