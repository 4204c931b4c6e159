/* tests/test_bad_images.c: which JPEGs the CPU decoder refuses, and with what message
 * (docs/operators-io.md, "Bad files"):
 *   - corrupt entropy-coded data: tests/fixtures/jpeg/bad_huffman_*.jpg (a generated 320x240
 *     JPEG with FF 00 FF 00 written into its entropy data; djpeg says "Corrupt JPEG data: bad
 *     Huffman code" on each, libjpeg-turbo with jpeg_mem_src decodes them without a warning) are
 *     refused, by a full decode and by a window decode alike;
 *   - one rule whatever the window: a file truncated or corrupt below the window is refused by
 *     a window decode too (baseline, progressive, with DCT scaling);
 *   - bytes between the last scan and EOI are tolerated;
 *   - decompression bombs: a header claiming more pixels than the file could encode;
 *   - messages: one "corrupt JPEG data" prefix; a 12-bit JPEG is "not supported". */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "jpeg_fixtures.h"
#include "ops/decode/jpeg.h"
#include "testutil.h"

static char err[512];

static uint8_t *read_fixture(const char *name, size_t *size) {
  char path[1024];
  snprintf(path, sizeof path, "%s/tests/fixtures/jpeg/%s", STOKER_SOURCE_DIR, name);
  FILE *f = fopen(path, "rb");
  CHECK_MSG(f != NULL, "cannot open %s", path);
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  rewind(f);
  uint8_t *data = malloc((size_t)n);
  CHECK(fread(data, 1, (size_t)n, f) == (size_t)n);
  fclose(f);
  *size = (size_t)n;
  return data;
}

/* Decodes with crop (NULL = full) and hint; returns the status, message in err. */
static stk_status decode(const uint8_t *data, size_t size, const stk__window *crop, int hint) {
  stk__tensor out = {0};
  err[0] = '\0';
  stk_status st = stk__jpeg_decode(data, size, STK__COLOR_RGB, crop, hint, hint, &out, NULL, err, sizeof err);
  stk__tensor_free(&out);
  return st;
}

static void expect_refused(const uint8_t *data, size_t size, const stk__window *crop, int hint, const char *needle,
                           const char *what) {
  stk_status st = decode(data, size, crop, hint);
  CHECK_MSG(st == STK_EBADIMAGE, "%s: status %s (%s), expected STK_EBADIMAGE", what, stk_status_name(st), err);
  CHECK_MSG(strstr(err, needle) != NULL, "%s: message '%s' lacks '%s'", what, err, needle);
  CHECK_MSG(strstr(err, "Corrupt JPEG data") == NULL, "%s: message '%s' is prefixed twice", what, err);
}

static void quiet_output(j_common_ptr cinfo) { (void)cinfo; }

/* 1 when plain libjpeg (jpeg_mem_src, its default error manager, which counts warnings in
 * num_warnings) decodes the data to the end without a warning: what stoker's decode did before
 * it fed libjpeg in pieces (the fast Huffman path). Printed, not checked: it is libjpeg's
 * behaviour, not ours. */
static int plain_libjpeg_is_silent(const uint8_t *data, size_t size) {
  struct jpeg_decompress_struct c;
  struct jpeg_error_mgr e;
  c.err = jpeg_std_error(&e);
  e.output_message = quiet_output;
  jpeg_create_decompress(&c);
  jpeg_mem_src(&c, data, (unsigned long)size);
  jpeg_read_header(&c, TRUE);
  jpeg_start_decompress(&c);
  uint8_t *row = malloc((size_t)c.output_width * 3);
  while (c.output_scanline < c.output_height) jpeg_read_scanlines(&c, &row, 1);
  jpeg_finish_decompress(&c);
  int silent = e.num_warnings == 0;
  jpeg_destroy_decompress(&c);
  free(row);
  return silent;
}

static void test_bad_huffman(void) {
  static const char *names[] = {"bad_huffman_top.jpg", "bad_huffman_middle.jpg", "bad_huffman_bottom.jpg"};
  for (int i = 0; i < 3; i++) {
    size_t size = 0;
    uint8_t *data = read_fixture(names[i], &size);
    if (!data) continue;
    printf("%s: plain libjpeg with jpeg_mem_src %s\n", names[i],
           plain_libjpeg_is_silent(data, size) ? "decodes it without a warning" : "warns");
    expect_refused(data, size, NULL, 0, "corrupt JPEG data: bad Huffman code", names[i]);
    stk__window top_left = {0, 0, 32, 32};
    expect_refused(data, size, &top_left, 0, "corrupt JPEG data: bad Huffman code", names[i]);
    expect_refused(data, size, &top_left, 8, "corrupt JPEG data: bad Huffman code", names[i]);
    stk__jpeg_info info;
    CHECK(stk__jpeg_peek(data, size, &info, err, sizeof err) == STK_OK); /* the header is fine */
    free(data);
  }
}

/* A file cut short (or corrupt) below the window is refused by the window decode too. */
static void test_damage_below_window(int progressive) {
  const int W = 640, H = 480;
  uint8_t *px = fixture_pattern(W, H, 3, 4);
  fixture_options o = fixture_defaults();
  o.subsampling = 420, o.quality = 85, o.progressive = progressive;
  size_t size;
  uint8_t *jpg = fixture_encode(px, W, H, 3, o, &size);
  stk__window top = {16, 8, 200, 120};
  CHECK_MSG(decode(jpg, size, &top, 0) == STK_OK, "intact file, window: %s", err);
  CHECK_MSG(decode(jpg, size, &top, 64) == STK_OK, "intact file, scaled window: %s", err);
  CHECK_MSG(decode(jpg, size, NULL, 0) == STK_OK, "intact file, full: %s", err);
  const char *what = progressive ? "progressive, truncated at 90%" : "baseline, truncated at 90%";
  size_t cut = size * 9 / 10;
  expect_refused(jpg, cut, NULL, 0, "truncated JPEG", what);
  expect_refused(jpg, cut, &top, 0, "truncated JPEG", what);
  expect_refused(jpg, cut, &top, 64, "truncated JPEG", what);
  /* Only the EOI marker missing: every scan is complete but the file still ends early. */
  expect_refused(jpg, size - 2, &top, 0, "truncated JPEG", "EOI missing");

  /* Padding between the last scan and EOI (some writers leave it): tolerated. */
  uint8_t *padded = malloc(size + 16);
  memcpy(padded, jpg, size - 2);
  memset(padded + size - 2, 0, 16);
  padded[size + 14] = 0xFF, padded[size + 15] = 0xD9;
  CHECK_MSG(decode(padded, size + 16, NULL, 0) == STK_OK, "%s: 16 zero bytes before EOI: %s",
            progressive ? "progressive" : "baseline", err);
  CHECK_MSG(decode(padded, size + 16, &top, 0) == STK_OK, "16 zero bytes before EOI, window: %s", err);
  free(padded);
  free(jpg);
  free(px);
}

static size_t find_marker(const uint8_t *data, size_t size, uint8_t marker) {
  for (size_t i = 2; i + 9 < size; i++)
    if (data[i] == 0xFF && data[i + 1] == marker) return i;
  return 0;
}

static void test_bombs(void) {
  /* A flat 4096 x 1100 image (4.5 Mpixels): arithmetic coding packs it in a few hundred bytes,
   * far more pixels per byte than any photograph; Huffman coding cannot go beyond 512. */
  const int W = 4096, H = 1100;
  uint8_t *flat = malloc((size_t)W * H * 3);
  memset(flat, 128, (size_t)W * H * 3);
  fixture_options o = fixture_defaults();
  o.subsampling = 420, o.quality = 75, o.arithmetic = 1;
  size_t size;
  uint8_t *arith = fixture_encode(flat, W, H, 3, o, &size);
  CHECK_MSG(size < (size_t)W * H / 1000, "the arithmetic-coded flat image is %zu bytes", size);
  stk__jpeg_info info;
  CHECK(stk__jpeg_peek(arith, size, &info, err, sizeof err) == STK_EBADIMAGE);
  CHECK_MSG(strstr(err, "decompression bomb") && strstr(err, "4096x1100"), "peek: '%s'", err);
  expect_refused(arith, size, NULL, 0, "decompression bomb", "arithmetic-coded flat 4.5 Mpixel image");
  o.arithmetic = 0;
  uint8_t *huff = fixture_encode(flat, W, H, 3, o, &size);
  CHECK_MSG(decode(huff, size, NULL, 0) == STK_OK, "Huffman-coded flat image (%zu bytes): %s", size, err);
  /* Small images are never refused for their ratio: a 1000 x 1000 flat arithmetic image. */
  o.arithmetic = 1;
  uint8_t *small = fixture_encode(flat, 1000, 1000, 3, o, &size);
  CHECK_MSG(decode(small, size, NULL, 0) == STK_OK, "small arithmetic-coded flat image: %s", err);

  /* The bomb: a header claiming 11585 x 11585 (just under the pixel cap) over 30 KB. */
  uint8_t *px = fixture_pattern(320, 240, 3, 1);
  o = fixture_defaults();
  uint8_t *jpg = fixture_encode(px, 320, 240, 3, o, &size);
  size_t sof = find_marker(jpg, size, 0xC0);
  CHECK(sof > 0);
  jpg[sof + 5] = 11585 >> 8, jpg[sof + 6] = 11585 & 0xFF, jpg[sof + 7] = 11585 >> 8, jpg[sof + 8] = 11585 & 0xFF;
  CHECK(stk__jpeg_peek(jpg, size, &info, err, sizeof err) == STK_EBADIMAGE);
  expect_refused(jpg, size, NULL, 0, "decompression bomb", "11585x11585 header over 30 KB");
  free(jpg), free(px), free(small), free(huff), free(arith), free(flat);
}

static void test_messages(void) {
  uint8_t *px = fixture_pattern(64, 48, 3, 2);
  size_t size;
  uint8_t *jpg = fixture_encode(px, 64, 48, 3, fixture_defaults(), &size);
  size_t sof = find_marker(jpg, size, 0xC0);
  CHECK(sof > 0);
  jpg[sof + 1] = 0xC1, jpg[sof + 4] = 12; /* extended sequential, 12-bit samples */
  stk__jpeg_info info;
  CHECK(stk__jpeg_peek(jpg, size, &info, err, sizeof err) == STK_EBADIMAGE);
  CHECK_MSG(strstr(err, "12-bit JPEG is not supported") != NULL, "peek of a 12-bit JPEG: '%s'", err);
  expect_refused(jpg, size, NULL, 0, "12-bit JPEG is not supported", "12-bit JPEG");
  CHECK_MSG(strstr(err, "corrupt") == NULL, "a 12-bit JPEG is not corrupt: '%s'", err);
  free(jpg), free(px);
}

int main(void) {
  (void)fixture_reference;
  test_bad_huffman();
  test_damage_below_window(0);
  test_damage_below_window(1);
  test_bombs();
  test_messages();
  return stk_test_finish("test_bad_images");
}
