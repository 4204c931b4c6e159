/* tests/test_checkpoint.c: exact checkpoint/resume (stk_pipeline_checkpoint / restore /
 * options.checkpoint). CPU only: readers.file over small files whose 4 bytes are a sample id,
 * feeding the fake operators of pipeline_fake_ops.h (test.fill counts its runs per epoch in
 * fake_fill_runs, so a test sees that a resume decodes nothing it skips).
 * Checks: after k batches (mid-epoch, at the end of an epoch, in the next epoch; prefetch 2 and 3;
 * 1 and 3 threads) a fresh pipeline built from the checkpoint delivers byte for byte the batches
 * the uninterrupted run delivered after k; the skipped batches are never run; mismatched and
 * corrupted checkpoints are refused with a message naming what differs; resharding rules.
 * skip_bad_files (check_refill): files that do not exist are the bad files, met before, after and
 * across the checkpoint, with batches dropped at the epoch's end; the resume is exact for another
 * thread count, a checkpoint of a resumed pipeline too, and another prefetch depth is refused. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/op.h"
#include "pipeline_fake_ops.h"
#include "stoker/stoker.h"
#include "testutil.h"

#define NUM_FILES         23
#define BATCH             4
#define BATCHES_PER_EPOCH 6  /* ceil(23 / 4) */
#define TOTAL             15 /* batches of the reference run: epochs 0, 1 and half of 2 */

static char *data_dir;
static char *replace(const char *text, const char *from, const char *to);

typedef struct setup {
  int threads, prefetch, fill_size, num_files, num_shards, shard_id;
  uint64_t seed;
  int batch_size;
  const char *checkpoint; /* options.checkpoint */
  const char *restore;    /* stk_pipeline_restore before build */
  int use_fake_reader, enable_checkpointing;
  int skip_bad, in_order; /* options.skip_bad_files; readers.file without shuffling */
  uint32_t missing;       /* bit i: listing entry i names a file that does not exist (a bad file) */
} setup;

static setup default_setup(void) {
  return (setup){.threads = 1,
                 .prefetch = 2,
                 .fill_size = 3,
                 .num_files = NUM_FILES,
                 .num_shards = 1,
                 .seed = 7,
                 .batch_size = BATCH};
}

static void write_files(void) {
  data_dir = stk_test_tmpdir("ckpt");
  for (int i = 0; i < NUM_FILES; i++) {
    char path[512];
    snprintf(path, sizeof path, "%s/s%02d.bin", data_dir, i);
    FILE *f = fopen(path, "wb");
    uint32_t id = (uint32_t)(i * 7 + 1);
    fwrite(&id, 4, 1, f);
    fclose(f);
  }
}

/* reader -> coin, fill(add=coin) -> outputs (fill, reader[1]). NULL on failure, message in *err. */
static stk_pipeline *make(const setup *s, stk_status *status, char *err, size_t err_size) {
  stk_pipeline_options o;
  stk_pipeline_options_default(&o);
  o.batch_size = s->batch_size;
  o.num_threads = s->threads;
  o.prefetch_queue_depth = s->prefetch;
  o.seed = s->seed;
  o.pin_threads = 0;
  o.checkpoint = s->checkpoint;
  o.enable_checkpointing = s->enable_checkpointing;
  o.skip_bad_files = s->skip_bad;
  stk_pipeline *p = NULL;
  *status = stk_pipeline_new(&o, &p);
  if (*status != STK_OK) return NULL;
  stk_args *ra, *fa;
  stk_args_new(&ra);
  stk_args_new(&fa);
  char names[NUM_FILES][16];
  const char *files[NUM_FILES];
  for (int i = 0; i < s->num_files; i++) {
    snprintf(names[i], sizeof names[i], "%s%02d.bin", s->missing >> i & 1 ? "gone" : "s", i);
    files[i] = names[i];
  }
  if (s->use_fake_reader) {
    stk_args_set_int(ra, "num_samples", s->num_files);
  } else {
    stk_args_set_string(ra, "file_root", data_dir);
    stk_args_set_string_list(ra, "files", files, (size_t)s->num_files);
    stk_args_set_bool(ra, "random_shuffle", !s->in_order);
    stk_args_set_int(ra, "initial_fill", 5);
    stk_args_set_int(ra, "num_shards", s->num_shards);
    stk_args_set_int(ra, "shard_id", s->shard_id);
  }
  stk_args_set_int(fa, "size", s->fill_size);
  stk_args_set_input(fa, "add", "coin");
  const char *fin[1] = {"reader"};
  const char *outs[2] = {"fill", "reader[1]"};
  stk_status st = stk_pipeline_add_op(p, s->use_fake_reader ? "test.reader" : "readers.file", "reader", NULL, 0, ra);
  if (st == STK_OK) st = stk_pipeline_add_op(p, "test.coin", "coin", NULL, 0, NULL);
  if (st == STK_OK) st = stk_pipeline_add_op(p, "test.fill", "fill", fin, 1, fa);
  if (st == STK_OK) st = stk_pipeline_set_outputs(p, outs, 2);
  if (st == STK_OK && s->restore) st = stk_pipeline_restore(p, s->restore);
  if (st == STK_OK) st = stk_pipeline_build(p);
  stk_args_destroy(ra);
  stk_args_destroy(fa);
  *status = st;
  if (st != STK_OK) {
    snprintf(err, err_size, "%s", stk_pipeline_last_error(p));
    stk_pipeline_destroy(p);
    return NULL;
  }
  return p;
}

static stk_pipeline *make_ok(const setup *s) {
  stk_status st;
  char err[2048];
  stk_pipeline *p = make(s, &st, err, sizeof err);
  CHECK_MSG(p != NULL, "build: %s: %s", stk_status_name(st), err);
  return p;
}

/* Digest of a batch: epoch, valid samples, every byte of every sample of both outputs. */
static uint64_t digest(const stk_batch *b) {
  uint64_t h = 0xcbf29ce484222325ull;
  int64_t epoch = stk_batch_epoch(b);
  int valid = stk_batch_valid_samples(b);
  h = fnv1a(fnv1a(h, &epoch, sizeof epoch), &valid, sizeof valid);
  for (int o = 0; o < stk_batch_num_outputs(b); o++)
    for (int s = 0; s < stk_batch_size(b); s++) {
      stk_tensor_view v;
      if (stk_batch_sample(b, o, s, &v) == STK_OK) h = fnv1a(h, v.data, v.nbytes);
    }
  return h;
}

/* Takes n batches (resetting at each end of epoch), digests into out[]. Returns batches taken. */
static int take(stk_pipeline *p, int n, uint64_t *out) {
  int got = 0;
  for (int guard = 0; got < n && guard < 4 * n + 4; guard++) {
    stk_batch *b = NULL;
    stk_status st = stk_pipeline_next(p, &b);
    if (st == STK_EOF_EPOCH) {
      CHECK(stk_pipeline_reset(p) == STK_OK);
      continue;
    }
    CHECK_MSG(st == STK_OK, "next: %s", stk_pipeline_last_error(p));
    if (st != STK_OK) break;
    out[got++] = digest(b);
    stk_batch_release(b);
  }
  return got;
}

static char *checkpoint_after(const setup *s, int k) {
  stk_pipeline *p = make_ok(s);
  if (!p) return NULL;
  uint64_t d[TOTAL];
  CHECK(take(p, k, d) == k);
  char *text = NULL;
  CHECK_MSG(stk_pipeline_checkpoint(p, &text) == STK_OK, "%s", stk_pipeline_last_error(p));
  stk_pipeline_destroy(p);
  return text;
}

/* Resume after k batches equals the reference from k on; skipped batches are not run. */
static void check_resume(const uint64_t *ref, int k, int threads, int prefetch, int via_restore) {
  setup s = default_setup();
  s.threads = threads;
  s.prefetch = prefetch;
  char *text = checkpoint_after(&s, k);
  if (!text) return;
  CHECK_MSG(strlen(text) < 1024, "checkpoint is %zu bytes", strlen(text));
  memset(fake_fill_runs, 0, sizeof fake_fill_runs);
  if (via_restore) s.restore = text;
  else s.checkpoint = text;
  stk_pipeline *p = make_ok(&s);
  if (!p) {
    free(text);
    return;
  }
  uint64_t d[TOTAL];
  int n = take(p, TOTAL - k, d);
  CHECK(n == TOTAL - k);
  for (int i = 0; i < n; i++)
    CHECK_MSG(d[i] == ref[k + i], "k=%d threads=%d prefetch=%d: batch %d differs", k, threads, prefetch, k + i);
  /* The resumed epoch ran only its remaining batches (all delivered, so all run); earlier epochs
   * ran nothing. */
  int epoch = k / BATCHES_PER_EPOCH, position = k % BATCHES_PER_EPOCH;
  for (int e = 0; e < epoch; e++)
    CHECK_MSG(fake_fill_runs[e] == 0, "k=%d: epoch %d ran %llu samples", k, e, (unsigned long long)fake_fill_runs[e]);
  uint64_t want = (uint64_t)(BATCHES_PER_EPOCH - position) * BATCH;
  CHECK_MSG(fake_fill_runs[epoch] == want, "k=%d: epoch %d ran %llu samples, want %llu", k, epoch,
            (unsigned long long)fake_fill_runs[epoch], (unsigned long long)want);
  stk_pipeline_destroy(p);
  free(text);
}

/* stk_pipeline_restore on a built pipeline that has run on (prefetch in flight): it rewinds to
 * the checkpoint, and the batches held by the caller stay valid. */
static void check_restore_built(const uint64_t *ref) {
  setup s = default_setup();
  s.threads = 3;
  s.prefetch = 3;
  char *text = checkpoint_after(&s, 8);
  stk_pipeline *p = make_ok(&s);
  if (!text || !p) {
    free(text);
    stk_pipeline_destroy(p);
    return;
  }
  uint64_t d[TOTAL];
  CHECK(take(p, 10, d) == 10);
  stk_batch *held = NULL;
  CHECK(stk_pipeline_next(p, &held) == STK_OK);
  uint64_t held_digest = held ? digest(held) : 0;
  CHECK_MSG(stk_pipeline_restore(p, text) == STK_OK, "%s", stk_pipeline_last_error(p));
  CHECK(take(p, TOTAL - 8, d) == TOTAL - 8);
  for (int i = 0; i < TOTAL - 8; i++)
    CHECK_MSG(d[i] == ref[8 + i], "restore on a built pipeline: batch %d differs", 8 + i);
  if (held) CHECK(digest(held) == held_digest);
  stk_batch_release(held);
  char *other = replace(text, "seed=7", "seed=9");
  CHECK(stk_pipeline_restore(p, other) == STK_EINVAL && strstr(stk_pipeline_last_error(p), "seed 9") != NULL);
  free(other);
  stk_pipeline_destroy(p);
  free(text);
}

/* Build (or restore) fails and the message contains `needle`. */
static void check_refused(const setup *s, const char *needle) {
  stk_status st;
  char err[2048] = "";
  stk_pipeline *p = make(s, &st, err, sizeof err);
  CHECK_MSG(p == NULL && st != STK_OK, "accepted, wanted an error with \"%s\"", needle);
  CHECK_MSG(strstr(err, needle) != NULL, "message \"%s\" lacks \"%s\"", err, needle);
  stk_pipeline_destroy(p);
}

/* A forged field with the checksum recomputed, so the field's own check answers. */
static char *replace(const char *text, const char *from, const char *to) {
  return stk_test_checkpoint_edit(text, from, to);
}

static void check_mismatches(void) {
  setup s = default_setup();
  char *text = checkpoint_after(&s, 3);
  if (!text) return;
  setup m = default_setup();
  m.checkpoint = text;
  m.seed = 8;
  check_refused(&m, "seed");
  m = default_setup(), m.checkpoint = text, m.batch_size = 5;
  check_refused(&m, "batch_size");
  m = default_setup(), m.checkpoint = text, m.fill_size = 4;
  check_refused(&m, "another pipeline graph");
  m = default_setup(), m.checkpoint = text, m.num_files = NUM_FILES - 1;
  check_refused(&m, "another data set");
  m = default_setup(), m.checkpoint = text, m.num_shards = 2, m.shard_id = 1;
  stk_pipeline *resharded = make_ok(&m); /* mid-epoch: the remainder is split (test_checkpoint_reshard.c) */
  stk_pipeline_destroy(resharded);
  /* Syntax and version: refused by stk_pipeline_restore already. */
  const char *bad[][2] = {{"stoker-checkpoint 5", "stoker-checkpoint 6"},
                          {"seed=7", "seed=7\nseed=7"},
                          {"\nepoch=0", ""},
                          {"position=3", "position=x3"},
                          {"stoker-checkpoint 5", "hello"},
                          {"graph=", "graph=zz"},
                          {"quarantine=", "quarantine=12:5,3"},
                          {"refill=0", "refill=5"},
                          {"seed=7", "colour=blue"}};
  const char *needles[] = {"version 6",
                           "twice",
                           "epoch is missing",
                           "bad value for position",
                           "not a stoker",
                           "bad value for graph",
                           "bad value for quarantine",
                           "bad value for refill",
                           "unknown key"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    char *broken = replace(text, bad[i][0], bad[i][1]);
    m = default_setup(), m.restore = broken;
    check_refused(&m, needles[i]);
    free(broken);
  }
  /* A position past the epoch's end: named by the reader. */
  char *far = replace(text, "position=3", "position=99");
  m = default_setup(), m.checkpoint = far;
  check_refused(&m, "outside epoch");
  free(far);
  free(text);
}

static void check_reader_without_seek(void) {
  setup s = default_setup();
  s.use_fake_reader = 1;
  stk_pipeline *p = make_ok(&s);
  if (p) {
    char *text = (char *)"x";
    CHECK(stk_pipeline_checkpoint(p, &text) == STK_ENOTSUP && text == NULL);
    CHECK(strstr(stk_pipeline_last_error(p), "reader reader (test.reader) cannot seek") != NULL);
    stk_pipeline_destroy(p);
  }
  s.enable_checkpointing = 1;
  check_refused(&s, "cannot seek");
}

/* num_shards 2 -> 1 at an epoch boundary: the new pipeline reads epoch e from its start under its
 * own sharding. At the end of an epoch before reset (every sample read) the remainder is empty:
 * the resumed pipeline reports the end of the epoch first, then reads the next one normally. */
static void check_reshard_at_boundary(void) {
  setup two = default_setup();
  two.num_shards = 2;
  char *text = checkpoint_after(&two, 3); /* shard 0 of 2: 11 samples, 3 batches = epoch 0 */
  if (!text) return;
  CHECK(strstr(text, "position=3") != NULL); /* end of epoch 0, not yet reset */
  setup one = default_setup();
  one.checkpoint = text;
  stk_pipeline *end = make_ok(&one);
  stk_batch *none = NULL;
  CHECK(end && stk_pipeline_next(end, &none) == STK_EOF_EPOCH);
  stk_pipeline_destroy(end);
  free(text);
  stk_pipeline *p = make_ok(&two);
  if (!p) return;
  uint64_t d[4];
  take(p, 3, d);
  CHECK(stk_pipeline_reset(p) == STK_OK); /* now at epoch 1, position 0 */
  CHECK(stk_pipeline_checkpoint(p, &text) == STK_OK);
  stk_pipeline_destroy(p);
  CHECK(strstr(text, "epoch=1\nposition=0") != NULL);
  one.checkpoint = text;
  p = make_ok(&one);
  setup fresh = default_setup();
  stk_pipeline *q = make_ok(&fresh);
  if (p && q) {
    uint64_t a[2], b[BATCHES_PER_EPOCH + 1];
    CHECK(take(p, 2, a) == 2);
    CHECK(take(q, BATCHES_PER_EPOCH + 1, b) == BATCHES_PER_EPOCH + 1);
    CHECK(a[0] == b[BATCHES_PER_EPOCH]); /* epoch 1's first batch with one shard */
  }
  stk_pipeline_destroy(p);
  stk_pipeline_destroy(q);
  free(text);
}

/* ---- skip_bad_files: the refill cursor in the checkpoint ------------------------------------ */
#define RTOTAL 12 /* batches of a refill reference run: epoch 0 and on into epochs 1 and 2 */

static setup refill_setup(uint32_t missing, int prefetch, int threads) {
  setup s = default_setup();
  s.skip_bad = 1, s.in_order = 1, s.missing = missing, s.prefetch = prefetch, s.threads = threads;
  return s;
}

/* A pipeline built from `text` delivers want[0..n) (what the uninterrupted run delivered). With
 * chain, also a checkpoint of the resumed pipeline at once and after one batch resumes exactly. */
static void resume_equals(setup s, const char *text, const uint64_t *want, int n, const char *what, int chain) {
  s.checkpoint = text;
  stk_pipeline *p = make_ok(&s);
  if (!p) return;
  char *again = NULL, *later = NULL;
  uint64_t got[RTOTAL];
  if (chain) CHECK_MSG(stk_pipeline_checkpoint(p, &again) == STK_OK, "%s", stk_pipeline_last_error(p));
  CHECK(take(p, 1, got) == 1);
  if (chain) CHECK_MSG(stk_pipeline_checkpoint(p, &later) == STK_OK, "%s", stk_pipeline_last_error(p));
  CHECK(take(p, n - 1, got + 1) == n - 1);
  for (int i = 0; i < n; i++)
    CHECK_MSG(got[i] == want[i], "%s, threads=%d prefetch=%d: batch %d after the checkpoint differs", what, s.threads,
              s.prefetch, i);
  stk_pipeline_destroy(p);
  if (again) resume_equals(s, again, want, n, "checkpoint of a resumed pipeline", 0);
  if (later) resume_equals(s, later, want + 1, n - 1, "checkpoint one batch into a resumed pipeline", 0);
  free(again);
  free(later);
}

/* Bad files (missing) met before and after a checkpoint after k batches: for prefetch 2 and 3,
 * taken with 1 and 3 threads, resumed with 3 and 1, the batches equal the uninterrupted run's.
 * want_skip: the checkpoint must hold replacements to pass over (a bad file in batch k - 1). */
static void check_refill_case(const char *what, uint32_t missing, int k, int want_skip, int in_order) {
  for (int prefetch = 2; prefetch <= 3; prefetch++) {
    setup s = refill_setup(missing, prefetch, 1);
    s.in_order = in_order;
    stk_pipeline *p = make_ok(&s);
    if (!p) return;
    uint64_t ref[RTOTAL];
    CHECK(take(p, RTOTAL, ref) == RTOTAL);
    stk_pipeline_stats stats;
    CHECK(stk_pipeline_stats_get(p, &stats) == STK_OK && stats.skipped_files > 0);
    stk_pipeline_destroy(p);
    for (int threads = 1; threads <= 3; threads += 2) {
      s.threads = threads;
      char *text = checkpoint_after(&s, k);
      if (!text) continue;
      const char *line = strstr(text, "refill="), *plus = line ? strchr(line, '+') : NULL;
      if (want_skip) CHECK_MSG(plus && plus < strchr(line, '\n'), "%s: no interval to pass over in:\n%s", what, text);
      CHECK_MSG(line && strncmp(line + 7, "0\n", 2) != 0, "%s: no refill cursor in:\n%s", what, text);
      s.threads = 4 - threads;
      resume_equals(s, text, ref + k, RTOTAL - k, what, threads == 1);
      free(text);
    }
  }
}

/* A checkpoint after STK_EOF_EPOCH (before reset) of an epoch whose last batches were dropped (no
 * good sample left): the resumed pipeline reports the end of the epoch too, then goes on alike. */
static void check_refill_epoch_end(uint32_t missing) {
  setup s = refill_setup(missing, 2, 3);
  stk_pipeline *p = make_ok(&s);
  uint64_t ref[RTOTAL], got[RTOTAL];
  int n = 0;
  stk_batch *b = NULL;
  while (p && n < RTOTAL && stk_pipeline_next(p, &b) == STK_OK) {
    ref[n++] = digest(b);
    stk_batch_release(b);
  }
  char *text = NULL;
  if (p) CHECK_MSG(stk_pipeline_checkpoint(p, &text) == STK_OK, "%s", stk_pipeline_last_error(p));
  CHECK_MSG(n < BATCHES_PER_EPOCH, "epoch 0 delivered %d batches: none was dropped", n);
  if (p && text) {
    CHECK(stk_pipeline_reset(p) == STK_OK);
    CHECK(take(p, 4, ref + n) == 4);
  }
  stk_pipeline_destroy(p);
  s.checkpoint = text;
  p = text ? make_ok(&s) : NULL;
  if (p) {
    CHECK_MSG(stk_pipeline_next(p, &b) == STK_EOF_EPOCH, "resumed at the end of an epoch: a batch came");
    CHECK(stk_pipeline_reset(p) == STK_OK && take(p, 4, got) == 4);
    for (int i = 0; i < 4; i++)
      CHECK_MSG(got[i] == ref[n + i], "after the end of a dropped epoch: batch %d differs", i);
  }
  stk_pipeline_destroy(p);
  free(text);
}

static void check_refill(void) {
  check_refill_case("a bad file in the batch before the checkpoint", 1u << 9, 3, 1, 1);
  check_refill_case("a bad file in the batch after the checkpoint", 1u << 13, 3, 0, 1);
  check_refill_case("a bad file early: the next batch starts inside a reader batch", 1u << 1, 2, 0, 1);
  check_refill_case("bad files in a row across the checkpoint", 0x1fc00u, 3, 1, 1);
  check_refill_case("bad files in a row across the checkpoint, 2 batches in", 0x1fc00u, 2, 0, 1);
  check_refill_case("the epoch's last batches dropped", 0x7fe000u, 3, 0, 1);
  check_refill_case("the epoch's last batches dropped, checkpoint among them", 0x7fe000u, 4, 0, 1);
  check_refill_case("the replacement before the checkpoint is the epoch's last good file", 0x7e0200u, 3, 1, 1);
  check_refill_case("shuffled, bad files spread", 0x490a24u, 3, 0, 0);
  check_refill_epoch_end(0x7fe000u);
  /* Another prefetch depth: refused mid-epoch (refill depends on it), accepted at an epoch start. */
  setup s = refill_setup(1u << 9, 2, 1);
  char *text = checkpoint_after(&s, 3);
  setup m = refill_setup(1u << 9, 3, 1);
  m.checkpoint = text;
  if (text) check_refused(&m, "prefetch_queue_depth 2 under skip_bad_files, this pipeline has 3");
  free(text);
  stk_pipeline *p = make_ok(&s);
  uint64_t ref[RTOTAL], got[RTOTAL];
  text = NULL;
  if (p && take(p, 3, ref) == 3 && stk_pipeline_reset(p) == STK_OK) CHECK(stk_pipeline_checkpoint(p, &text) == STK_OK);
  stk_pipeline_destroy(p);
  m.checkpoint = text;
  p = text ? make_ok(&m) : NULL; /* epoch 1 from its start with depth 3 */
  stk_pipeline_destroy(p);
  free(text);
  /* stk_pipeline_restore on a built skip_bad_files pipeline that has run on */
  s.prefetch = 3;
  p = make_ok(&s);
  if (!p || take(p, RTOTAL, ref) != RTOTAL) {
    stk_pipeline_destroy(p);
    return;
  }
  stk_pipeline_destroy(p);
  text = checkpoint_after(&s, 3);
  p = make_ok(&s);
  if (p && text && take(p, 7, got) == 7) {
    CHECK_MSG(stk_pipeline_restore(p, text) == STK_OK, "%s", stk_pipeline_last_error(p));
    CHECK(take(p, RTOTAL - 3, got) == RTOTAL - 3);
    for (int i = 0; i < RTOTAL - 3; i++)
      CHECK_MSG(got[i] == ref[3 + i], "restore on a built pipeline: batch %d differs", 3 + i);
  }
  stk_pipeline_destroy(p);
  free(text);
}

/* rn50-train / rn50-val on `stoker datagen` JPEGs: a resume after 3 batches delivers the same
 * bytes as the uninterrupted run, across the epoch boundary (5 batches per epoch). */
static int builtin_skip_bad; /* options.skip_bad_files of make_builtin */

static stk_pipeline *make_builtin(const char *name, const char *dir, int threads, const char *checkpoint) {
  stk_pipeline_options o;
  stk_pipeline_options_default(&o);
  o.batch_size = 8, o.num_threads = threads, o.pin_threads = 0, o.checkpoint = checkpoint;
  o.skip_bad_files = builtin_skip_bad;
  stk_pipeline *p = NULL;
  if (stk_pipeline_new(&o, &p) != STK_OK) return NULL;
  stk_status st = stk_pipeline_add_builtin(p, name, dir);
  if (st == STK_OK) st = stk_pipeline_build(p);
  CHECK_MSG(st == STK_OK, "%s: %s", name, stk_pipeline_last_error(p));
  if (st != STK_OK) {
    stk_pipeline_destroy(p);
    return NULL;
  }
  return p;
}

static void check_builtins(void) {
  char cmd[800], *out = NULL;
  char *dir = stk_test_tmpdir("ckpt-jpeg");
  snprintf(cmd, sizeof cmd, "'%s' datagen '%s/data' --count 40 --classes 2 2>&1", stk_test_cli(), dir);
  int rc = stk_test_run(cmd, &out);
  free(out);
  if (rc != 0) {
    printf("note: stoker datagen failed (%d): built-in pipelines not checked\n", rc);
    free(dir);
    return;
  }
  char data[600];
  snprintf(data, sizeof data, "%s/data", dir);
  const char *names[] = {"rn50-train", "rn50-val", "rn50-train"};
  for (int n = 0; n < 3; n++) {
    if (n == 2) { /* again with bad files, skipped (skip_bad_files): resume stays exact */
      builtin_skip_bad = 1;
      for (int k = 0; k < 3; k++) {
        char path[700];
        snprintf(path, sizeof path, "%s/class_000/bad_%d.jpg", data, k);
        FILE *f = fopen(path, "wb");
        if (f) fputs(k == 0 ? "" : "\xff\xd8\xff\xe0 not a jpeg", f), fclose(f);
      }
    }
    uint64_t ref[8], got[8];
    stk_pipeline *p = make_builtin(names[n], data, 1, NULL);
    if (!p) continue;
    CHECK(take(p, 8, ref) == 8);
    stk_pipeline_stats stats;
    if (n == 2 && stk_pipeline_stats_get(p, &stats) == STK_OK) CHECK(stats.skipped_files > 0);
    stk_pipeline_destroy(p);
    p = make_builtin(names[n], data, 3, NULL);
    char *text = NULL;
    if (p) {
      CHECK(take(p, 3, got) == 3);
      CHECK_MSG(stk_pipeline_checkpoint(p, &text) == STK_OK, "%s", stk_pipeline_last_error(p));
      stk_pipeline_destroy(p);
    }
    if (text) {
      CHECK_MSG(strlen(text) < 1024, "%s: checkpoint of %zu bytes", names[n], strlen(text));
      p = make_builtin(names[n], data, 2, text);
      if (p) {
        CHECK(take(p, 5, got) == 5);
        for (int i = 0; i < 5; i++)
          CHECK_MSG(got[i] == ref[3 + i], "%s: batch %d differs after resume", names[n], 3 + i);
        stk_pipeline_destroy(p);
      }
    }
    free(text);
  }
  stk_test_remove_tree(dir);
  free(dir);
}

int main(void) {
  fake_ops_register();
  write_files();
  if (!data_dir) TEST_SKIP("cannot make a temporary directory");
  setup s = default_setup();
  s.prefetch = 3;
  stk_pipeline *p = make_ok(&s);
  if (!p) return stk_test_finish("test_checkpoint");
  uint64_t ref[TOTAL];
  CHECK(take(p, TOTAL, ref) == TOTAL);
  stk_pipeline_destroy(p);
  CHECK(ref[0] != ref[BATCHES_PER_EPOCH]); /* epochs differ (shuffled): the test can tell them apart */

  const int ks[] = {3, BATCHES_PER_EPOCH, BATCHES_PER_EPOCH + 2, 2 * BATCHES_PER_EPOCH - 1};
  for (size_t i = 0; i < sizeof ks / sizeof ks[0]; i++)
    for (int threads = 1; threads <= 3; threads += 2) check_resume(ref, ks[i], threads, 2 + (int)(i % 2), (int)(i % 2));
  check_mismatches();
  check_restore_built(ref);
  check_reader_without_seek();
  check_reshard_at_boundary();
  check_refill();
  check_builtins();

  stk_test_remove_tree(data_dir);
  free(data_dir);
  return stk_test_finish("test_checkpoint");
}
