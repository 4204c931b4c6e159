/* src/ops/decode/test_jpeg_verified.c: the CPU decoder's set of JPEG files already checked
 * (jpeg_verified.h): the set itself (exact membership, growth, its bound, concurrent use), and
 * what it must not change in stk__jpeg_decode_counted -- the same pixels for every window when the
 * bytes are known, every corrupt file refused however often it comes (a file corrupt below the
 * window included), a file whose bytes changed checked again; the mixed decoder's entropy check
 * through the same set. Test-only. */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "case_list.h"
#include "jpeg_fixtures.h"
#include "ops/decode/jpeg.h"
#include "ops/decode/jpeg_guard.h"
#include "ops/decode/jpeg_verified.h"
#include "testutil.h"

#define NUM_SOURCES 6

/* Good sources: baseline 4:4:4 / 4:2:0 / 4:2:2, progressive, gray, restart markers. */
static uint8_t *source_jpeg(int k, size_t *size) {
  fixture_options o = fixture_defaults();
  int w = 160 + 24 * k, h = 120 + 16 * k, components = 3;
  if (k == 1) o.subsampling = 420;
  if (k == 2) o.subsampling = 422, o.quality = 75;
  if (k == 3) o.progressive = 1, o.subsampling = 420;
  if (k == 4) components = 1;
  if (k == 5) o.restart_rows = 1, o.subsampling = 420;
  uint8_t *px = fixture_pattern(w, h, components, (unsigned)k + 7);
  uint8_t *jpg = fixture_encode(px, w, h, components, o, size);
  free(px);
  return jpg;
}

static stk_status decode(const uint8_t *data, size_t size, const stk__window *win, stk__jpeg_verified *set,
                         stk__tensor *out, char *err, size_t err_size) {
  return stk__jpeg_decode_counted(data, size, STK__COLOR_RGB, win, 0, 0, NULL, set, out, NULL, err, err_size);
}

static int same_tensor(const stk__tensor *a, const stk__tensor *b) {
  return a->ndim == b->ndim && a->nbytes == b->nbytes && !memcmp(a->shape, b->shape, sizeof a->shape[0] * a->ndim) &&
         !memcmp(a->data, b->data, a->nbytes);
}

/* tests/fixtures/jpeg/<name> into buf (at most cap bytes); its size, 0 (a failed check) when unreadable. */
static size_t read_fixture(const char *name, uint8_t *buf, size_t cap) {
  char path[1024];
  snprintf(path, sizeof path, "%s/tests/fixtures/jpeg/%s", STOKER_SOURCE_DIR, name);
  FILE *f = fopen(path, "rb");
  CHECK_MSG(f != NULL, "cannot open %s", path);
  if (!f) return 0;
  const size_t size = fread(buf, 1, cap, f);
  fclose(f);
  return size;
}

static void set_membership_is_exact(void) {
  stk__jpeg_verified *set = stk__jpeg_verified_new();
  CHECK(set != NULL);
  CHECK(!stk__jpeg_verified_has(set, 12345));
  /* 20,000 distinct fingerprints: the table grows from 1,024 slots several times */
  for (uint64_t i = 1; i <= 20000; i++) CHECK(stk__jpeg_verified_add(set, i * 0x9E3779B97F4A7C15ull));
  CHECK(stk__jpeg_verified_count(set) == 20000);
  int missing = 0, extra = 0;
  for (uint64_t i = 1; i <= 20000; i++) missing += !stk__jpeg_verified_has(set, i * 0x9E3779B97F4A7C15ull);
  for (uint64_t i = 20001; i <= 40000; i++) extra += stk__jpeg_verified_has(set, i * 0x9E3779B97F4A7C15ull);
  CHECK_MSG(missing == 0 && extra == 0, "%d added fingerprints missing, %d never added found", missing, extra);
  CHECK(stk__jpeg_verified_add(set, 2 * 0x9E3779B97F4A7C15ull)); /* again: no second entry */
  CHECK(stk__jpeg_verified_count(set) == 20000);
  CHECK(!stk__jpeg_verified_add(set, 0)); /* 0 is no fingerprint */
  stk__jpeg_verified_free(set);
  stk__jpeg_verified_free(NULL);

  /* the fingerprint is of every byte: one changed byte anywhere changes it */
  size_t n;
  uint8_t *jpg = source_jpeg(1, &n);
  const uint64_t fp = stk__jpeg_fingerprint(jpg, n);
  CHECK(fp != 0 && fp == stk__jpeg_fingerprint(jpg, n));
  for (size_t at = 0; at < n; at += n / 7 + 1) {
    jpg[at] ^= 0x10;
    CHECK_MSG(stk__jpeg_fingerprint(jpg, n) != fp, "byte %zu changed, same fingerprint", at);
    jpg[at] ^= 0x10;
  }
  CHECK(stk__jpeg_fingerprint(jpg, n - 1) != fp);
  free(jpg);
}

static void set_stops_at_its_bound(void) {
  stk__jpeg_verified *set = stk__jpeg_verified_new();
  const size_t most = STK__JPEG_VERIFIED_MAX_SLOTS / 4 * 3;
  size_t added = 0;
  for (uint64_t i = 1; i <= most + 100; i++) added += (size_t)stk__jpeg_verified_add(set, i * 0x9E3779B97F4A7C15ull);
  CHECK_MSG(added == most && stk__jpeg_verified_count(set) == most, "%zu added of %zu allowed", added, most);
  CHECK(stk__jpeg_verified_has(set, most * 0x9E3779B97F4A7C15ull));
  CHECK(!stk__jpeg_verified_has(set, (most + 1) * 0x9E3779B97F4A7C15ull));
  stk__jpeg_verified_free(set);
}

/* Every window of every source: the first decode (checked, then remembered) and the second (known
 * bytes: fast Huffman path, stops after the window) give the bytes a decode without a set gives. */
static void known_bytes_decode_to_the_same_pixels(void) {
  stk__jpeg_verified *set = stk__jpeg_verified_new();
  int compared = 0;
  for (int k = 0; k < NUM_SOURCES; k++) {
    size_t n;
    uint8_t *jpg = source_jpeg(k, &n);
    const int w = 160 + 24 * k, h = 120 + 16 * k;
    const stk__window windows[] = {{0, 0, w, h}, {0, 0, w / 2, h / 3}, {w / 3, h / 4, w / 2, h / 2},
                                   {w - 40, h - 30, 40, 30}, {7, 13, 33, 17}};
    for (size_t i = 0; i < sizeof windows / sizeof windows[0]; i++) {
      stk__tensor plain = {0}, first = {0}, second = {0};
      char e[512] = "";
      CHECK_MSG(decode(jpg, n, &windows[i], NULL, &plain, e, sizeof e) == STK_OK, "source %d: %s", k, e);
      CHECK_MSG(decode(jpg, n, &windows[i], set, &first, e, sizeof e) == STK_OK, "source %d: %s", k, e);
      CHECK(stk__jpeg_verified_has(set, stk__jpeg_fingerprint(jpg, n)));
      CHECK_MSG(decode(jpg, n, &windows[i], set, &second, e, sizeof e) == STK_OK, "source %d known: %s", k, e);
      CHECK_MSG(same_tensor(&plain, &first) && same_tensor(&plain, &second), "source %d window %zu differs", k, i);
      compared++;
      stk__tensor_free(&plain), stk__tensor_free(&first), stk__tensor_free(&second);
    }
    free(jpg);
  }
  CHECK(stk__jpeg_verified_count(set) == NUM_SOURCES);
  printf("%d windows identical with and without the set\n", compared);
  stk__jpeg_verified_free(set);
}

/* Fill bytes before a stuffed zero (0xFF 0xFF 0x00) in the entropy-coded data, outside the
 * standard: libjpeg-turbo accepts the file (one 0xFF data byte), but its fast Huffman path reads a
 * marker there and gives the block back to the checking path over the coefficients it already
 * wrote, so such a file is never remembered and every decode of it gives the same pixels (a
 * fuzz_jpeg find; its input is in tests/fuzz/corpus/jpeg). */
static void fill_before_stuffed_zero_never_remembered(void) {
  stk__jpeg_verified *set = stk__jpeg_verified_new();
  int tested = 0;
  for (int k = 0; k < 3; k++) { /* baseline sources */
    size_t n;
    uint8_t *jpg = source_jpeg(k, &n);
    const size_t sos = fixture_find_sos(jpg, n);
    size_t at = 0;
    for (size_t i = sos + 4 + ((size_t)jpg[sos + 2] << 8 | jpg[sos + 3]); i + 1 < n && !at; i++)
      if (jpg[i] == 0xFF && jpg[i + 1] == 0x00) at = i;
    if (!at) {
      free(jpg);
      continue;
    }
    uint8_t *odd = malloc(n + 1);
    memcpy(odd, jpg, at), odd[at] = 0xFF, memcpy(odd + at + 1, jpg + at, n - at);
    stk__jpeg_layout layout;
    stk__jpeg_layout_read(odd, n + 1, &layout);
    CHECK_MSG(layout.fill_stuffed == 1 && layout.scans == 1, "source %d: %zu fill-stuffed, %d scans", k,
              layout.fill_stuffed, layout.scans);
    const int w = 160 + 24 * k, h = 120 + 16 * k;
    const stk__window windows[] = {{0, 0, w, h}, {0, 0, w / 2 + 1, h / 2 + 1}};
    for (size_t i = 0; i < 2; i++) {
      stk__tensor plain = {0}, first = {0}, second = {0};
      char e[512] = "";
      CHECK_MSG(decode(odd, n + 1, &windows[i], NULL, &plain, e, sizeof e) == STK_OK, "source %d: %s", k, e);
      CHECK_MSG(decode(odd, n + 1, &windows[i], set, &first, e, sizeof e) == STK_OK, "source %d: %s", k, e);
      CHECK_MSG(decode(odd, n + 1, &windows[i], set, &second, e, sizeof e) == STK_OK, "source %d: %s", k, e);
      CHECK_MSG(same_tensor(&plain, &first) && same_tensor(&plain, &second), "source %d window %zu differs", k, i);
      stk__tensor_free(&plain), stk__tensor_free(&first), stk__tensor_free(&second);
    }
    char e[512] = "";
    CHECK_MSG(stk__jpeg_check_entropy_once(odd, n + 1, set, e, sizeof e) == STK_OK, "source %d: %s", k, e);
    CHECK(!stk__jpeg_verified_has(set, stk__jpeg_fingerprint(odd, n + 1)));
    tested++;
    free(odd), free(jpg);
  }
  CHECK_MSG(tested > 0, "no source had a stuffed zero in its entropy-coded data");
  CHECK(stk__jpeg_verified_count(set) == 0);
  stk__jpeg_verified_free(set);
}

/* Garbage in the entropy-coded data (EOI kept), fixed seed: each damaged file decoded three times
 * with one set gets the same verdict each time, and a refused one is never remembered. */
static void corrupt_files_refused_every_time(void) {
  stk__jpeg_verified *set = stk__jpeg_verified_new();
  uint32_t state = 0x56455249u;
  int refused = 0, accepted = 0;
  for (int i = 0; i < 240; i++) {
    size_t n;
    uint8_t *jpg = source_jpeg(i % NUM_SOURCES, &n);
    const size_t sos = fixture_find_sos(jpg, n);
    for (int hits = 1 + i % 6; hits > 0; hits--) {
      state = state * 1664525u + 1013904223u;
      size_t at = sos + 20 + (size_t)((state >> 8) % (uint32_t)(n - 2 - sos - 20));
      if (jpg[at - 1] != 0xFF) jpg[at] = (uint8_t)(state >> 3);
    }
    stk_status verdict[3];
    char e[512];
    for (int round = 0; round < 3; round++) {
      stk__tensor out = {0};
      const stk__window top = {0, 0, 32, 16}; /* the damage is mostly below this window */
      verdict[round] = decode(jpg, n, round == 1 ? &top : NULL, set, &out, e, sizeof e);
      stk__tensor_free(&out);
    }
    CHECK_MSG(verdict[0] == verdict[1] && verdict[1] == verdict[2], "file %d: %s, %s, %s", i,
              stk_status_name(verdict[0]), stk_status_name(verdict[1]), stk_status_name(verdict[2]));
    const int known = stk__jpeg_verified_has(set, stk__jpeg_fingerprint(jpg, n));
    CHECK_MSG(known == (verdict[0] == STK_OK), "file %d: %s but %s", i, stk_status_name(verdict[0]),
              known ? "remembered" : "not remembered");
    if (verdict[0] == STK_OK) accepted++;
    else refused++;
    free(jpg);
  }
  printf("240 damaged files: %d refused three times, %d accepted\n", refused, accepted);
  CHECK_MSG(refused >= 60, "only %d of 240 damaged files refused", refused);
  stk__jpeg_verified_free(set);
}

/* A file good in one epoch and damaged below the window in the next is checked again and refused;
 * the checked-in file with a bad Huffman code in its last rows is refused for a window at its top
 * however often it comes. */
static void changed_bytes_are_checked_again(void) {
  stk__jpeg_verified *set = stk__jpeg_verified_new();
  size_t n;
  uint8_t *jpg = source_jpeg(0, &n);
  stk__tensor out = {0};
  char e[512] = "";
  const stk__window top = {0, 0, 48, 16};
  CHECK(decode(jpg, n, &top, set, &out, e, sizeof e) == STK_OK);
  CHECK(decode(jpg, n, &top, set, &out, e, sizeof e) == STK_OK);
  /* the last 200 bytes of entropy-coded data before EOI become 0xFF 0x00 pairs' garbage */
  for (size_t at = n - 202; at < n - 2; at++) jpg[at] = (at & 1) ? 0xA5 : 0x5A;
  CHECK_MSG(decode(jpg, n, &top, set, &out, e, sizeof e) == STK_EBADIMAGE, "damaged bottom accepted: %s", e);
  free(jpg);

  static uint8_t buf[1 << 16];
  const size_t size = read_fixture("bad_huffman_bottom.jpg", buf, sizeof buf);
  if (size) {
    for (int round = 0; round < 3; round++) {
      e[0] = 0;
      CHECK_MSG(decode(buf, size, &top, set, &out, e, sizeof e) == STK_EBADIMAGE, "round %d accepted", round);
      CHECK_MSG(strstr(e, "bad Huffman code") != NULL, "round %d: '%s'", round, e);
    }
    CHECK(!stk__jpeg_verified_has(set, stk__jpeg_fingerprint(buf, size)));
  }
  stk__tensor_free(&out);
  stk__jpeg_verified_free(set);
}

/* The mixed decoder's validate_entropy check through the set (stk__jpeg_check_entropy_once): a good
 * file passes and is remembered (and then passes without the check), a corrupt one is refused every
 * time with the check's message and never remembered; a set filled by decodes serves the check. */
static void entropy_check_once_shares_the_set(void) {
  stk__jpeg_verified *set = stk__jpeg_verified_new();
  size_t n;
  uint8_t *jpg = source_jpeg(2, &n);
  char e[512] = "";
  CHECK(stk__jpeg_check_entropy_once(jpg, n, set, e, sizeof e) == STK_OK);
  CHECK(stk__jpeg_verified_has(set, stk__jpeg_fingerprint(jpg, n)));
  CHECK(stk__jpeg_check_entropy_once(jpg, n, set, e, sizeof e) == STK_OK);
  CHECK(stk__jpeg_verified_count(set) == 1);
  CHECK(stk__jpeg_check_entropy_once(jpg, n, NULL, e, sizeof e) == STK_OK);

  size_t m;
  uint8_t *other = source_jpeg(4, &m);
  stk__tensor out = {0};
  CHECK(decode(other, m, NULL, set, &out, e, sizeof e) == STK_OK); /* remembered by a decode */
  CHECK(stk__jpeg_verified_count(set) == 2);
  CHECK(stk__jpeg_check_entropy_once(other, m, set, e, sizeof e) == STK_OK);
  stk__tensor_free(&out);

  static uint8_t buf[1 << 16];
  const size_t size = read_fixture("bad_huffman_middle.jpg", buf, sizeof buf);
  if (size) {
    for (int round = 0; round < 3; round++) {
      e[0] = 0;
      CHECK_MSG(stk__jpeg_check_entropy_once(buf, size, set, e, sizeof e) == STK_EBADIMAGE, "round %d passed", round);
      CHECK_MSG(strstr(e, "bad Huffman code") != NULL, "round %d: '%s'", round, e);
    }
    CHECK(stk__jpeg_verified_count(set) == 2);
  }
  free(jpg);
  free(other);
  stk__jpeg_verified_free(set);
}

/* Four threads decoding the same files through one set (the pipeline's workers share their
 * operator's set): every decode succeeds with the plain decode's pixels. */
typedef struct thread_job {
  stk__jpeg_verified *set;
  uint8_t *jpg[NUM_SOURCES];
  size_t size[NUM_SOURCES];
  stk__tensor *plain;
  int failures;
} thread_job;

static void *decode_loop(void *arg) {
  thread_job *job = (thread_job *)arg;
  for (int i = 0; i < 60; i++) {
    const int k = i % NUM_SOURCES;
    stk__tensor out = {0};
    char e[512];
    if (decode(job->jpg[k], job->size[k], NULL, job->set, &out, e, sizeof e) != STK_OK ||
        !same_tensor(&out, &job->plain[k]))
      job->failures++;
    stk__tensor_free(&out);
  }
  return NULL;
}

static void threads_share_one_set(void) {
  stk__jpeg_verified *set = stk__jpeg_verified_new();
  thread_job jobs[4];
  stk__tensor plain[NUM_SOURCES];
  memset(plain, 0, sizeof plain);
  uint8_t *jpg[NUM_SOURCES];
  size_t size[NUM_SOURCES];
  for (int k = 0; k < NUM_SOURCES; k++) {
    char e[512];
    jpg[k] = source_jpeg(k, &size[k]);
    CHECK(decode(jpg[k], size[k], NULL, NULL, &plain[k], e, sizeof e) == STK_OK);
  }
  pthread_t threads[4];
  for (int t = 0; t < 4; t++) {
    jobs[t].set = set, jobs[t].plain = plain, jobs[t].failures = 0;
    memcpy(jobs[t].jpg, jpg, sizeof jpg);
    memcpy(jobs[t].size, size, sizeof size);
    CHECK(pthread_create(&threads[t], NULL, decode_loop, &jobs[t]) == 0);
  }
  int failures = 0;
  for (int t = 0; t < 4; t++) {
    pthread_join(threads[t], NULL);
    failures += jobs[t].failures;
  }
  CHECK_MSG(failures == 0, "%d of 240 decodes failed or differed", failures);
  CHECK(stk__jpeg_verified_count(set) == NUM_SOURCES);
  for (int k = 0; k < NUM_SOURCES; k++) stk__tensor_free(&plain[k]), free(jpg[k]);
  stk__jpeg_verified_free(set);
}

static const stk_test_case cases[] = {
    // clang-format off
    STK_TEST_CASE(set_membership_is_exact),
    STK_TEST_CASE(set_stops_at_its_bound),
    STK_TEST_CASE(known_bytes_decode_to_the_same_pixels),
    STK_TEST_CASE(fill_before_stuffed_zero_never_remembered),
    STK_TEST_CASE(corrupt_files_refused_every_time),
    STK_TEST_CASE(changed_bytes_are_checked_again),
    STK_TEST_CASE(entropy_check_once_shares_the_set),
    STK_TEST_CASE(threads_share_one_set),
    // clang-format on
};

int main(int argc, char **argv) {
  (void)fixture_reference;
  return stk_test_run_cases("test_jpeg_verified", cases, STK_TEST_COUNT(cases), argc, argv);
}
