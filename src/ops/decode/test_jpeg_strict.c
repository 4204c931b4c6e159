/* src/ops/decode/test_jpeg_strict.c: stk__jpeg_check_entropy, the mixed decoder's validate_entropy check
 * (docs/operators-io.md, "Bad files"): libjpeg-turbo entropy-decodes a file without IDCT and must
 * refuse exactly the files a full CPU decode (stk__jpeg_decode) refuses, with the same message,
 * and pass every good one. Corrupt files are made like scripts/fault-campaign.sh's modes from
 * the fixtures' encoder (tests/jpeg_fixtures.h): "huffman" (garbage in the entropy-coded data
 * only, EOI kept) and "mutated" (1-16 random bytes anywhere, headers included), plus "truncated"
 * and the checked-in bad_huffman_*.jpg files. Test-only. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "case_list.h"
#include "jpeg_fixtures.h"
#include "ops/decode/jpeg.h"
#include "testutil.h"

#define NUM_SOURCES 8

/* Good sources: baseline 4:4:4 / 4:2:0 / 4:2:2, progressive, gray, restart markers, arithmetic,
 * CMYK -- what a data set holds and what the CPU decoder accepts. */
static uint8_t *source_jpeg(int k, size_t *size) {
  fixture_options o = fixture_defaults();
  int w = 96 + 16 * k, h = 64 + 8 * k, components = 3;
  switch (k) {
    case 1:
      o.subsampling = 420;
      break;
    case 2:
      o.subsampling = 422, o.quality = 75;
      break;
    case 3:
      o.progressive = 1, o.subsampling = 420;
      break;
    case 4:
      components = 1;
      break;
    case 5:
      o.restart_rows = 1, o.subsampling = 420;
      break;
    case 6:
      o.arithmetic = 1;
      break;
    case 7:
      components = 4;
      break;
    default:
      break;
  }
  uint8_t *px = fixture_pattern(w, h, components, (unsigned)k + 1);
  uint8_t *jpg = fixture_encode(px, w, h, components, o, size);
  free(px);
  return jpg;
}

/* The CPU decoder's verdict (full decode) and the check's must agree: status and message. */
static int compare(const uint8_t *data, size_t size, const char *what, int *refused) {
  char decode_err[512] = "", check_err[512] = "";
  stk__tensor out = {0};
  stk_status d = stk__jpeg_decode(data, size, STK__COLOR_RGB, NULL, 0, 0, &out, NULL, decode_err, sizeof decode_err);
  stk__tensor_free(&out);
  stk_status c = stk__jpeg_check_entropy(data, size, check_err, sizeof check_err);
  CHECK_MSG(d == c, "%s: CPU decode %s (%s), entropy check %s (%s)", what, stk_status_name(d), decode_err,
            stk_status_name(c), check_err);
  if (d == c && d != STK_OK)
    CHECK_MSG(strcmp(decode_err, check_err) == 0, "%s: '%s' != '%s'", what, decode_err, check_err);
  if (c != STK_OK) (*refused)++;
  return d == c;
}

/* fault-campaign.sh's damage, with a fixed-seed generator of our own (the same files every run). */
static uint32_t rng_state;
static uint32_t rnd(uint32_t n) {
  rng_state = rng_state * 1664525u + 1013904223u;
  return (uint32_t)(((uint64_t)(rng_state >> 8) * n) >> 24);
}

static void damage(uint8_t *d, size_t *n, const char *mode) {
  if (!strcmp(mode, "mutated")) {
    for (uint32_t k = 1 + rnd(16); k > 0; k--) d[rnd((uint32_t)*n)] = (uint8_t)rnd(256);
  } else if (!strcmp(mode, "truncated")) {
    *n = 2 + rnd((uint32_t)(*n - 4));
  } else { /* huffman: entropy-coded data only, EOI kept, never the byte after an 0xFF */
    size_t sos = fixture_find_sos(d, *n);
    for (uint32_t k = 1 + rnd(8); k > 0; k--) {
      size_t p = sos + 20 + rnd((uint32_t)(*n - 2 - sos - 20));
      uint8_t pick[3] = {0x00, 0xFF, (uint8_t)rnd(256)};
      if (d[p - 1] != 0xFF) d[p] = pick[rnd(3)];
    }
  }
}

/* `count` damaged copies of the sources in `mode`: every verdict agrees; *refused of them refused. */
static void campaign(const char *mode, int count, uint32_t seed, int *refused) {
  rng_state = seed;
  size_t sizes[NUM_SOURCES];
  uint8_t *src[NUM_SOURCES];
  for (int k = 0; k < NUM_SOURCES; k++) src[k] = source_jpeg(k, &sizes[k]);
  int agreed = 0;
  *refused = 0;
  for (int i = 0; i < count; i++) {
    int k = i % NUM_SOURCES;
    size_t n = sizes[k];
    uint8_t *copy = malloc(n);
    memcpy(copy, src[k], n);
    damage(copy, &n, mode);
    char what[64];
    snprintf(what, sizeof what, "%s #%d (source %d)", mode, i, k);
    agreed += compare(copy, n, what, refused);
    free(copy);
  }
  printf("%s: %d files, %d refused by both, %d verdicts agree\n", mode, count, *refused, agreed);
  for (int k = 0; k < NUM_SOURCES; k++) free(src[k]);
}

static void good_files_pass(void) {
  for (int k = 0; k < NUM_SOURCES; k++) {
    size_t n;
    uint8_t *jpg = source_jpeg(k, &n);
    char e[512] = "";
    stk_status st = stk__jpeg_check_entropy(jpg, n, e, sizeof e);
    CHECK_MSG(st == STK_OK, "good source %d: %s (%s)", k, stk_status_name(st), e);
    int refused = 0;
    compare(jpg, n, "good source", &refused);
    CHECK(refused == 0);
    free(jpg);
  }
}

static void huffman_garbage_refused_as_cpu_decode(void) {
  int refused = 0;
  campaign("huffman", 400, 0x48554646u, &refused);
  CHECK_MSG(refused >= 100, "only %d of 400 files with entropy garbage refused", refused);
}

static void mutated_bytes_refused_as_cpu_decode(void) {
  int refused = 0;
  campaign("mutated", 400, 0x4d555441u, &refused);
  CHECK_MSG(refused >= 50, "only %d of 400 mutated files refused", refused);
}

static void truncated_refused_as_cpu_decode(void) {
  int refused = 0;
  campaign("truncated", 100, 0x54524e43u, &refused);
  CHECK_MSG(refused == 100, "%d of 100 truncated files refused", refused);
}

static void bad_huffman_fixtures_refused(void) {
  static const char *const names[] = {"bad_huffman_top.jpg", "bad_huffman_middle.jpg", "bad_huffman_bottom.jpg"};
  for (int i = 0; i < 3; i++) {
    char path[1024];
    snprintf(path, sizeof path, "%s/tests/fixtures/jpeg/%s", STOKER_SOURCE_DIR, names[i]);
    FILE *f = fopen(path, "rb");
    CHECK_MSG(f != NULL, "cannot open %s", path);
    if (!f) continue;
    uint8_t buf[1 << 16];
    size_t n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    char e[512] = "";
    CHECK_MSG(stk__jpeg_check_entropy(buf, n, e, sizeof e) == STK_EBADIMAGE, "%s passed the check", names[i]);
    CHECK_MSG(strstr(e, "corrupt JPEG data: bad Huffman code") != NULL, "%s: '%s'", names[i], e);
    int refused = 0;
    compare(buf, n, names[i], &refused);
  }
}

static void not_a_jpeg_named(void) {
  char e[512] = "";
  static const uint8_t png[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  CHECK(stk__jpeg_check_entropy(png, sizeof png, e, sizeof e) == STK_EBADIMAGE);
  CHECK_MSG(strstr(e, "not a JPEG file (looks like a PNG image)") != NULL, "'%s'", e);
  CHECK(stk__jpeg_check_entropy(NULL, 0, e, sizeof e) == STK_EBADIMAGE);
}

static const stk_test_case cases[] = {
    // clang-format off
    STK_TEST_CASE(good_files_pass),
    STK_TEST_CASE(huffman_garbage_refused_as_cpu_decode),
    STK_TEST_CASE(mutated_bytes_refused_as_cpu_decode),
    STK_TEST_CASE(truncated_refused_as_cpu_decode),
    STK_TEST_CASE(bad_huffman_fixtures_refused),
    STK_TEST_CASE(not_a_jpeg_named),
    // clang-format on
};

int main(int argc, char **argv) {
  (void)fixture_reference;
  return stk_test_run_cases("test_jpeg_strict", cases, STK_TEST_COUNT(cases), argc, argv);
}
