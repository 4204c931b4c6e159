/* src/ops/decode/test_jpeg_desync.c: a JPEG whose entropy-coded data lost step is refused, not
 * delivered garbled (docs/operators-io.md, "Bad files"). One byte flipped in the scan makes
 * libjpeg-turbo's Huffman decoder desynchronise: it either runs into a marker (refused before) or
 * fills the remaining blocks with garbage and ends early, leaving bytes before EOI -- the case
 * djpeg reports as "Corrupt JPEG data: N extraneous bytes before marker 0xd9". Zero padding
 * before EOI, 0xFF fill and trailing bytes after EOI stay accepted. Each file goes through the CPU
 * decoder (stk__jpeg_decode) and the mixed decoder's CPU check (stk__jpeg_check_entropy); where
 * djpeg (libjpeg-turbo-progs) is installed its verdict is compared too. Files are made from the
 * fixtures' encoder (tests/jpeg_fixtures.h). Test-only. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "case_list.h"
#include "jpeg_fixtures.h"
#include "ops/decode/jpeg.h"
#include "testutil.h"

/* An ImageNet-like baseline 4:2:0 photo-sized file (optionally progressive). malloc'd. */
static uint8_t *source_jpeg(int progressive, size_t *size) {
  fixture_options o = fixture_defaults();
  o.subsampling = 420, o.quality = 90, o.progressive = progressive;
  const int w = 320, h = 240;
  uint8_t *px = fixture_pattern(w, h, 3, 7);
  uint8_t *jpg = fixture_encode(px, w, h, 3, o, size);
  free(px);
  return jpg;
}

/* First byte of the first scan's entropy-coded data (after the SOS segment). */
static size_t scan_start(const uint8_t *d, size_t n) {
  for (size_t i = 0; i + 3 < n; i++)
    if (d[i] == 0xFF && d[i + 1] == 0xDA) return i + 2 + ((size_t)d[i + 2] << 8 | d[i + 3]);
  return 0;
}

/* Both CPU checks' verdict: STK_OK or STK_EBADIMAGE (they must agree); message in err. */
static stk_status verdict(const uint8_t *data, size_t size, const char *what, char *err, size_t err_size) {
  char check_err[512] = "";
  stk__tensor out = {0};
  stk_status d = stk__jpeg_decode(data, size, STK__COLOR_RGB, NULL, 0, 0, &out, NULL, err, err_size);
  stk__tensor_free(&out);
  stk_status c = stk__jpeg_check_entropy(data, size, check_err, sizeof check_err);
  CHECK_MSG(d == c, "%s: CPU decode %s (%s), entropy check %s (%s)", what, stk_status_name(d), err,
            stk_status_name(c), check_err);
  return d;
}

/* djpeg's verdict: 1 accepted (exit 0), 0 refused (exit 1 error, 2 warnings), -1 not installed. */
static int djpeg_accepts(const uint8_t *data, size_t size, char *message, size_t message_size) {
  static int have = -1;
  if (have < 0) have = system("command -v djpeg >/dev/null 2>&1") == 0;
  if (!have) return -1;
  char path[] = "/tmp/stk_desync_XXXXXX";
  int fd = mkstemp(path);
  if (fd < 0) return -1;
  close(fd);
  fixture_write_file(path, data, size);
  char cmd[256];
  snprintf(cmd, sizeof cmd, "djpeg -outfile /dev/null '%s' 2>&1", path);
  FILE *p = popen(cmd, "r");
  message[0] = '\0';
  size_t got = p ? fread(message, 1, message_size - 1, p) : 0;
  message[got] = '\0';
  int rc = p ? pclose(p) : -1;
  unlink(path);
  return rc == 0;
}

static void good_file_accepted(void) {
  for (int progressive = 0; progressive < 2; progressive++) {
    size_t n;
    uint8_t *jpg = source_jpeg(progressive, &n);
    char e[512] = "", dj[512];
    CHECK_MSG(verdict(jpg, n, "good", e, sizeof e) == STK_OK, "good file (progressive %d) refused: %s", progressive, e);
    CHECK(djpeg_accepts(jpg, n, dj, sizeof dj) != 0);
    free(jpg);
  }
}

/* One byte flipped at `count` positions spread over the scan, one file each. Returns how many were
 * refused; *desync counts those djpeg (when present) refused for bytes left before EOI. */
static int flip_campaign(int progressive, int count, int *desync) {
  size_t n;
  uint8_t *src = source_jpeg(progressive, &n);
  const size_t start = scan_start(src, n);
  int refused = 0, tried = 0;
  *desync = 0;
  for (int i = 0; i < count; i++) {
    size_t p = start + 4 + (n - start - 8) * (size_t)i / (size_t)count;
    if (src[p] == 0xFF || src[p - 1] == 0xFF || src[p + 1] == 0xFF) continue; /* keep the marker structure */
    uint8_t *copy = malloc(n);
    memcpy(copy, src, n);
    copy[p] ^= 0x24;
    char what[96], e[512] = "", dj[512];
    snprintf(what, sizeof what, "%s file, byte %zu of %zu flipped", progressive ? "progressive" : "baseline", p, n);
    stk_status st = verdict(copy, n, what, e, sizeof e);
    tried++;
    refused += st != STK_OK;
    int djpeg = djpeg_accepts(copy, n, dj, sizeof dj);
    if (djpeg == 0 && strstr(dj, "extraneous bytes before marker 0xd9")) (*desync)++;
    /* Every file djpeg refuses is refused; one djpeg accepts may still be refused (a bad Huffman
     * code djpeg's fast path decodes as zero), never the other way round. */
    if (djpeg == 0)
      CHECK_MSG(st == STK_EBADIMAGE, "%s: djpeg refuses it (%s) but it decoded", what, strtok(dj, "\n"));
    free(copy);
  }
  printf("%s: %d files with one byte flipped, %d refused, %d that djpeg calls extraneous bytes before EOI\n",
         progressive ? "progressive" : "baseline", tried, refused, *desync);
  free(src);
  return refused;
}

static void flipped_entropy_byte_refused(void) {
  int desync = 0;
  int refused = flip_campaign(0, 48, &desync);
  /* Most flips only change a coefficient's value bits and decode to the same length: no decoder
   * can tell. The ones that desynchronise are refused (djpeg's verdict, checked above). */
  CHECK_MSG(refused >= 10, "only %d flipped baseline files refused", refused);
}

static void flipped_entropy_byte_refused_progressive(void) {
  int desync = 0;
  int refused = flip_campaign(1, 48, &desync);
  CHECK_MSG(refused >= 20, "only %d flipped progressive files refused", refused);
}

/* The case the rule is for: flips tried along the scan until three of them make the decoder fill
 * every block early and stop with bytes left before EOI; each is refused with libjpeg's words. */
static void early_end_before_eoi_refused(void) {
  size_t n;
  uint8_t *src = source_jpeg(0, &n);
  const size_t start = scan_start(src, n);
  int found = 0;
  for (size_t p = start + 8; p + 8 < n && found < 3; p += 7) {
    if (src[p] == 0xFF || src[p - 1] == 0xFF || src[p + 1] == 0xFF) continue;
    uint8_t *copy = malloc(n);
    memcpy(copy, src, n);
    copy[p] ^= 0x81;
    char e[512] = "";
    stk_status st = verdict(copy, n, "flipped", e, sizeof e);
    if (st != STK_OK && strstr(e, "extraneous bytes before marker 0xd9")) {
      found++;
      CHECK_MSG(strstr(e, "corrupt JPEG data: ") == e, "'%s'", e);
    }
    free(copy);
  }
  CHECK_MSG(found == 3, "only %d flips left extraneous bytes before EOI (the rule was not exercised)", found);
  free(src);
}

static void truncated_refused(void) {
  size_t n;
  uint8_t *src = source_jpeg(0, &n);
  const size_t cuts[] = {n / 3, n / 2, n - 40, n - 2};
  for (int i = 0; i < 4; i++) {
    char e[512] = "", dj[512];
    CHECK_MSG(verdict(src, cuts[i], "truncated", e, sizeof e) == STK_EBADIMAGE, "cut at %zu of %zu accepted", cuts[i],
              n);
    CHECK(djpeg_accepts(src, cuts[i], dj, sizeof dj) != 1);
  }
  free(src);
}

/* A copy of src with `extra` bytes of `fill` inserted just before EOI (or appended after it). */
static uint8_t *with_bytes(const uint8_t *src, size_t n, size_t extra, uint8_t fill, int after_eoi, size_t *out_n) {
  uint8_t *d = malloc(n + extra);
  size_t at = after_eoi ? n : n - 2;
  memcpy(d, src, at);
  memset(d + at, fill, extra);
  memcpy(d + at + extra, src + at, n - at);
  *out_n = n + extra;
  return d;
}

static void trailing_bytes_after_eoi_accepted(void) {
  size_t n, m;
  uint8_t *src = source_jpeg(0, &n);
  uint8_t *d = with_bytes(src, n, 300, 0x5A, 1, &m);
  char e[512] = "", dj[512];
  CHECK_MSG(verdict(d, m, "trailing garbage", e, sizeof e) == STK_OK, "trailing bytes after EOI refused: %s", e);
  CHECK(djpeg_accepts(d, m, dj, sizeof dj) != 0); /* djpeg stops at EOI too */
  free(d);
  free(src);
}

static void padding_before_eoi_accepted(void) {
  size_t n, m;
  uint8_t *src = source_jpeg(0, &n);
  const size_t sizes[] = {1, 5, 64, 1000};
  for (int i = 0; i < 4; i++) {
    char e[512] = "";
    uint8_t *d = with_bytes(src, n, sizes[i], 0x00, 0, &m);
    CHECK_MSG(verdict(d, m, "zero padding", e, sizeof e) == STK_OK, "%zu zero bytes before EOI refused: %s", sizes[i],
              e);
    free(d);
    d = with_bytes(src, n, sizes[i], 0xFF, 0, &m);
    CHECK_MSG(verdict(d, m, "0xFF fill", e, sizeof e) == STK_OK, "%zu 0xFF bytes before EOI refused: %s", sizes[i], e);
    free(d);
  }
  free(src);
}

/* Non-zero bytes between the scan and EOI are data the decoder did not use, not padding. */
static void nonzero_bytes_before_eoi_refused(void) {
  size_t n, m;
  uint8_t *src = source_jpeg(0, &n);
  uint8_t *d = with_bytes(src, n, 16, 0x37, 0, &m);
  char e[512] = "";
  CHECK(verdict(d, m, "junk before EOI", e, sizeof e) == STK_EBADIMAGE);
  CHECK_MSG(strstr(e, "extraneous bytes before marker 0xd9") != NULL, "'%s'", e);
  free(d);
  free(src);
}

static const stk_test_case cases[] = {
    // clang-format off
    STK_TEST_CASE(good_file_accepted),
    STK_TEST_CASE(flipped_entropy_byte_refused),
    STK_TEST_CASE(flipped_entropy_byte_refused_progressive),
    STK_TEST_CASE(early_end_before_eoi_refused),
    STK_TEST_CASE(truncated_refused),
    STK_TEST_CASE(trailing_bytes_after_eoi_accepted),
    STK_TEST_CASE(padding_before_eoi_accepted),
    STK_TEST_CASE(nonzero_bytes_before_eoi_refused),
    // clang-format on
};

int main(int argc, char **argv) {
  (void)fixture_reference;
  return stk_test_run_cases("test_jpeg_desync", cases, STK_TEST_COUNT(cases), argc, argv);
}
