/* src/ops/decode/test_jpeg_budget.c: the CPU JPEG decoder's memory limits hold whatever the file
 * carries beside its image (docs/operators-io.md, "Bad files"). The decompression-bomb rule counts
 * only entropy-coded bytes, so a header announcing 11585x11585 over a few KB of data is refused
 * however many comment (COM) or APPn bytes, or bytes after EOI, pad the file; a progressive file's
 * whole-image coefficient buffers are taken from the host memory budget before libjpeg allocates
 * them (STK_ERANGE naming the size and the budget), and given back after the decode, on success
 * and on error. Files are made from the fixtures' encoder (tests/jpeg_fixtures.h). Test-only. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "case_list.h"
#include "jpeg_fixtures.h"
#include "ops/decode/jpeg.h"
#include "testutil.h"

static uint8_t *small_jpeg(int progressive, int w, int h, size_t *size) {
  fixture_options o = fixture_defaults();
  o.progressive = progressive;
  uint8_t *px = fixture_pattern(w, h, 3, 3);
  uint8_t *jpg = fixture_encode(px, w, h, 3, o, size);
  free(px);
  return jpg;
}

/* Writes width x height into the file's SOF segment. */
static void set_size(uint8_t *d, size_t n, unsigned w, unsigned h) {
  for (size_t i = 2; i + 9 < n; i++)
    if (d[i] == 0xFF && (d[i + 1] == 0xC0 || d[i + 1] == 0xC2)) {
      d[i + 5] = (uint8_t)(h >> 8), d[i + 6] = (uint8_t)h, d[i + 7] = (uint8_t)(w >> 8), d[i + 8] = (uint8_t)w;
      return;
    }
}

/* src with `segments` COM segments (65533 bytes of text each) right after SOI, and `trailing` bytes
 * after EOI. malloc'd. */
static uint8_t *padded(const uint8_t *src, size_t n, int segments, size_t trailing, size_t *out_n) {
  size_t m = n + (size_t)segments * 65537 + trailing;
  uint8_t *d = malloc(m), *p = d;
  memcpy(p, src, 2), p += 2;
  for (int k = 0; k < segments; k++) {
    p[0] = 0xFF, p[1] = 0xFE, p[2] = 0xFF, p[3] = 0xFF; /* length 65535 */
    memset(p + 4, 'c', 65533);
    p += 2 + 65535; /* marker + length field and payload */
  }
  memcpy(p, src + 2, n - 2), p += n - 2;
  memset(p, 0x41, trailing), p += trailing;
  *out_n = (size_t)(p - d);
  return d;
}

static void bomb_padded_with_comments_refused(void) {
  size_t n, m;
  uint8_t *src = small_jpeg(0, 64, 48, &n);
  set_size(src, n, 11585, 11585);
  /* 2 x 64 KB of COM and 64 KB after EOI: the file is ~200 KB, over 11585^2 / 1000 bytes */
  uint8_t *d = padded(src, n, 2, 65536, &m);
  CHECK_MSG(m > (size_t)11585 * 11585 / 1000, "the padded file is only %zu bytes", m);
  char e[512] = "";
  stk__jpeg_info info;
  CHECK(stk__jpeg_peek(d, m, &info, e, sizeof e) == STK_EBADIMAGE);
  CHECK_MSG(strstr(e, "decompression bomb") != NULL, "peek: '%s'", e);
  stk__tensor out = {0};
  e[0] = '\0';
  CHECK(stk__jpeg_decode(d, m, STK__COLOR_RGB, NULL, 0, 0, &out, NULL, e, sizeof e) == STK_EBADIMAGE);
  CHECK_MSG(strstr(e, "decompression bomb") != NULL && strstr(e, "entropy-coded") != NULL, "decode: '%s'", e);
  CHECK_MSG(out.capacity == 0, "%zu bytes allocated for a bomb", out.capacity);
  stk__tensor_free(&out);
  free(d);
  free(src);
}

static void comments_on_a_real_image_accepted(void) {
  size_t n, m;
  uint8_t *src = small_jpeg(0, 320, 240, &n);
  uint8_t *d = padded(src, n, 3, 1000, &m);
  char e[512] = "";
  stk__tensor out = {0};
  CHECK_MSG(stk__jpeg_decode(d, m, STK__COLOR_RGB, NULL, 0, 0, &out, NULL, e, sizeof e) == STK_OK, "%s", e);
  CHECK(out.ndim == 3 && out.shape[0] == 240 && out.shape[1] == 320);
  stk__tensor_free(&out);
  free(d);
  free(src);
}

static void progressive_coefficients_counted_in_budget(void) {
  size_t n;
  uint8_t *src = small_jpeg(1, 640, 480, &n); /* 4:4:4: 80 x 60 blocks x 3 x 128 bytes */
  const size_t coefficients = (size_t)80 * 60 * 3 * 128;
  stk__host_budget budget = {0, coefficients - 1};
  char e[512] = "";
  stk__tensor out = {0};
  stk_status st = stk__jpeg_decode_counted(src, n, STK__COLOR_RGB, NULL, 0, 0, &budget, NULL, &out, NULL, e, sizeof e);
  CHECK_MSG(st == STK_ERANGE, "%s: %s", stk_status_name(st), e);
  CHECK_MSG(strstr(e, "progressive JPEG of 640x480 needs 1.8 MiB of coefficient buffers") != NULL &&
                strstr(e, "host memory budget is 1.8 MiB") != NULL,
            "'%s'", e);
  CHECK(budget.held == 0);
  budget.limit = coefficients;
  st = stk__jpeg_decode_counted(src, n, STK__COLOR_RGB, NULL, 0, 0, &budget, NULL, &out, NULL, e, sizeof e);
  CHECK_MSG(st == STK_OK, "%s: %s", stk_status_name(st), e);
  CHECK_MSG(budget.held == 0, "%zu bytes still held after the decode", budget.held);
  /* a corrupt progressive file: the error path gives the bytes back too */
  uint8_t *bad = malloc(n);
  memcpy(bad, src, n);
  size_t cut = n * 2 / 3;
  st = stk__jpeg_decode_counted(bad, cut, STK__COLOR_RGB, NULL, 0, 0, &budget, NULL, &out, NULL, e, sizeof e);
  CHECK_MSG(st == STK_EBADIMAGE, "%s: %s", stk_status_name(st), e);
  CHECK_MSG(budget.held == 0, "%zu bytes still held after a failed decode", budget.held);
  free(bad);
  stk__tensor_free(&out);
  free(src);
}

static void baseline_not_counted(void) {
  size_t n;
  uint8_t *src = small_jpeg(0, 640, 480, &n);
  stk__host_budget budget = {0, 1};
  char e[512] = "";
  stk__tensor out = {0};
  stk_status st = stk__jpeg_decode_counted(src, n, STK__COLOR_RGB, NULL, 0, 0, &budget, NULL, &out, NULL, e, sizeof e);
  CHECK_MSG(st == STK_OK && budget.held == 0, "%s: %s", stk_status_name(st), e);
  stk__tensor_free(&out);
  free(src);
}

static const stk_test_case cases[] = {
    // clang-format off
    STK_TEST_CASE(bomb_padded_with_comments_refused),
    STK_TEST_CASE(comments_on_a_real_image_accepted),
    STK_TEST_CASE(progressive_coefficients_counted_in_budget),
    STK_TEST_CASE(baseline_not_counted),
    // clang-format on
};

int main(int argc, char **argv) {
  (void)fixture_reference;
  return stk_test_run_cases("test_jpeg_budget", cases, STK_TEST_COUNT(cases), argc, argv);
}
