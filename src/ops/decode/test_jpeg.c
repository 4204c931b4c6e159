/* src/ops/decode/test_jpeg.c: the CPU JPEG decoder (src/ops/decode/jpeg.c) against libjpeg's own plain full
 * decode: full images exactly, crop windows exactly equal to the same window of the full decode,
 * DCT-scaled windows equal to the window of libjpeg's scaled full decode, EXIF orientations 1..8
 * against transforms written out here, CMYK, grayscale, progressive, and every kind of bad file. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "jpeg_fixtures.h"
#include "ops/decode/jpeg.h"
#include "case_list.h"
#include "testutil.h"

static char err[512];

/* Does out (HWC, c channels) equal window (x,y,w,h) of ref (rw wide, c channels)? */
static int window_equal(const stk__tensor *out, const uint8_t *ref, int rw, int c, int x, int y, int w, int h) {
  if (out->ndim != 3 || out->shape[0] != h || out->shape[1] != w || out->shape[2] != c) return 0;
  const uint8_t *o = (const uint8_t *)out->data;
  for (int r = 0; r < h; r++)
    if (memcmp(o + (size_t)r * w * c, ref + ((size_t)(y + r) * rw + x) * c, (size_t)w * c) != 0) return 0;
  return 1;
}

static void test_full_and_crops(int subsampling, int progressive) {
  const int W = 203, H = 151;
  uint8_t *px = fixture_pattern(W, H, 3, 7);
  fixture_options o = fixture_defaults();
  o.subsampling = subsampling, o.progressive = progressive, o.quality = 90;
  size_t size;
  uint8_t *jpg = fixture_encode(px, W, H, 3, o, &size);

  stk__jpeg_info info;
  CHECK(stk__jpeg_peek(jpg, size, &info, err, sizeof err) == STK_OK);
  CHECK(info.width == W && info.height == H && info.components == 3 && info.orientation == 1);
  CHECK(info.progressive == progressive && info.subsampling == subsampling && !info.cmyk);

  int rw, rh, rc;
  uint8_t *ref = fixture_reference(jpg, size, JCS_RGB, 8, &rw, &rh, &rc);
  CHECK(ref && rw == W && rh == H && rc == 3);
  stk__tensor out = {0};
  double scale = 0;
  CHECK(stk__jpeg_decode(jpg, size, STK__COLOR_RGB, NULL, 0, 0, &out, &scale, err, sizeof err) == STK_OK);
  CHECK(scale == 1.0);
  CHECK_MSG(window_equal(&out, ref, W, 3, 0, 0, W, H), "full decode %d/%d", subsampling, progressive);
  CHECK(strcmp(out.layout, "HWC") == 0 && out.dtype == STK_DTYPE_UINT8);

  /* BGR is RGB with the channels swapped. */
  CHECK(stk__jpeg_decode(jpg, size, STK__COLOR_BGR, NULL, 0, 0, &out, NULL, err, sizeof err) == STK_OK);
  int bgr_ok = 1;
  for (size_t i = 0; i < (size_t)W * H; i++) {
    const uint8_t *b = (const uint8_t *)out.data + i * 3, *r = ref + i * 3;
    if (b[0] != r[2] || b[1] != r[1] || b[2] != r[0]) bgr_ok = 0;
  }
  CHECK(bgr_ok);

  /* GRAY equals libjpeg's own grayscale output. */
  uint8_t *gref = fixture_reference(jpg, size, JCS_GRAYSCALE, 8, &rw, &rh, &rc);
  CHECK(stk__jpeg_decode(jpg, size, STK__COLOR_GRAY, NULL, 0, 0, &out, NULL, err, sizeof err) == STK_OK);
  CHECK(window_equal(&out, gref, W, 1, 0, 0, W, H));

  /* Windows: edges, odd offsets, 1-pixel, across iMCU boundaries; exact equality. */
  const stk__window windows[] = {{0, 0, W, H},     {1, 1, 5, 3},   {17, 9, 64, 40},   {W - 1, H - 1, 1, 1},
                                 {100, 0, 103, H}, {0, 70, W, 81}, {33, 47, 101, 77}, {15, 15, 2, 2}};
  for (size_t i = 0; i < sizeof windows / sizeof windows[0]; i++) {
    stk__window win = windows[i];
    CHECK(stk__jpeg_decode(jpg, size, STK__COLOR_RGB, &win, 0, 0, &out, NULL, err, sizeof err) == STK_OK);
    CHECK_MSG(window_equal(&out, ref, W, 3, win.x, win.y, win.w, win.h), "window %zu ss=%d prog=%d", i, subsampling,
              progressive);
    CHECK(stk__jpeg_decode(jpg, size, STK__COLOR_GRAY, &win, 0, 0, &out, NULL, err, sizeof err) == STK_OK);
    CHECK_MSG(window_equal(&out, gref, W, 1, win.x, win.y, win.w, win.h), "gray window %zu", i);
  }

  /* DCT scaling: the output is the window of libjpeg's scaled full decode, no smaller than asked. */
  struct {
    stk__window win;
    int min_w, min_h, expect_num;
  } scaled[] = {{{0, 0, W, H}, 50, 30, 2},
                {{10, 20, 160, 120}, 40, 40, 4},
                {{0, 0, W, H}, 200, 10, 8},
                {{5, 3, 190, 140}, 24, 24, 2}};
  for (size_t i = 0; i < sizeof scaled / sizeof scaled[0]; i++) {
    stk__window win = scaled[i].win;
    CHECK(stk__jpeg_decode(jpg, size, STK__COLOR_RGB, &win, scaled[i].min_w, scaled[i].min_h, &out, &scale, err,
                           sizeof err) == STK_OK);
    int n = (int)(scale * 8 + 0.5);
    CHECK_MSG(n == scaled[i].expect_num, "scaled %zu: n=%d", i, n);
    CHECK(out.shape[1] >= scaled[i].min_w && out.shape[0] >= scaled[i].min_h);
    CHECK(out.shape[1] == (win.w * n + 7) / 8 && out.shape[0] == (win.h * n + 7) / 8);
    int sw, sh, sc;
    uint8_t *sref = fixture_reference(jpg, size, JCS_RGB, n, &sw, &sh, &sc);
    int x = win.x * n / 8, y = win.y * n / 8;
    if (x + out.shape[1] > sw) x = sw - (int)out.shape[1];
    if (y + out.shape[0] > sh) y = sh - (int)out.shape[0];
    CHECK_MSG(window_equal(&out, sref, sw, 3, x, y, (int)out.shape[1], (int)out.shape[0]), "scaled window %zu", i);
    free(sref);
  }

  /* A window outside the image is an argument error. */
  stk__window bad = {W - 10, 0, 11, 5};
  CHECK(stk__jpeg_decode(jpg, size, STK__COLOR_RGB, &bad, 0, 0, &out, NULL, err, sizeof err) == STK_EINVAL);
  CHECK(strstr(err, "outside") != NULL);

  stk__tensor_free(&out);
  free(gref);
  free(ref);
  free(jpg);
  free(px);
}

static void test_grayscale_source(void) {
  const int W = 61, H = 45;
  uint8_t *px = fixture_pattern(W, H, 1, 3);
  size_t size;
  uint8_t *jpg = fixture_encode(px, W, H, 1, fixture_defaults(), &size);
  stk__jpeg_info info;
  CHECK(stk__jpeg_peek(jpg, size, &info, err, sizeof err) == STK_OK && info.components == 1 && info.subsampling == 0);
  int rw, rh, rc;
  uint8_t *gref = fixture_reference(jpg, size, JCS_GRAYSCALE, 8, &rw, &rh, &rc);
  stk__tensor out = {0};
  CHECK(stk__jpeg_decode(jpg, size, STK__COLOR_GRAY, NULL, 0, 0, &out, NULL, err, sizeof err) == STK_OK);
  CHECK(window_equal(&out, gref, W, 1, 0, 0, W, H));
  /* RGB/BGR from gray: three equal channels equal to the gray value. */
  for (int bgr = 0; bgr < 2; bgr++) {
    stk__window win = {3, 5, 40, 30};
    CHECK(stk__jpeg_decode(jpg, size, bgr ? STK__COLOR_BGR : STK__COLOR_RGB, &win, 0, 0, &out, NULL, err, sizeof err) ==
          STK_OK);
    int ok = out.shape[0] == 30 && out.shape[1] == 40 && out.shape[2] == 3;
    for (int y = 0; ok && y < 30; y++)
      for (int x = 0; x < 40; x++) {
        const uint8_t *p = (const uint8_t *)out.data + ((size_t)y * 40 + x) * 3;
        uint8_t g = gref[(size_t)(y + 5) * W + x + 3];
        if (p[0] != g || p[1] != g || p[2] != g) ok = 0;
      }
    CHECK_MSG(ok, "gray source to %s", bgr ? "BGR" : "RGB");
  }
  stk__tensor_free(&out);
  free(gref);
  free(jpg);
  free(px);
}

/* Adobe CMYK: libjpeg writes an Adobe marker; values are the inverted (Photoshop) convention, so
 * RGB = C*K/255 with the stored values. Checked against libjpeg's raw CMYK decode. */
static void test_cmyk(void) {
  const int W = 48, H = 32;
  uint8_t *px = fixture_pattern(W, H, 4, 11);
  size_t size;
  fixture_options o = fixture_defaults();
  o.progressive = 1;
  uint8_t *jpg = fixture_encode(px, W, H, 4, o, &size);
  stk__jpeg_info info;
  CHECK(stk__jpeg_peek(jpg, size, &info, err, sizeof err) == STK_OK && info.cmyk && info.components == 4);
  int rw, rh, rc;
  uint8_t *cmyk = fixture_reference(jpg, size, JCS_CMYK, 8, &rw, &rh, &rc);
  CHECK(cmyk && rc == 4);
  stk__tensor out = {0};
  stk__window win = {5, 7, 30, 20};
  CHECK(stk__jpeg_decode(jpg, size, STK__COLOR_RGB, &win, 0, 0, &out, NULL, err, sizeof err) == STK_OK);
  int worst = 0;
  for (int y = 0; y < win.h; y++)
    for (int x = 0; x < win.w; x++) {
      const uint8_t *k = cmyk + ((size_t)(y + win.y) * W + x + win.x) * 4;
      const uint8_t *p = (const uint8_t *)out.data + ((size_t)y * win.w + x) * 3;
      for (int c = 0; c < 3; c++) {
        double expect = k[c] * k[3] / 255.0;
        int d = abs((int)p[c] - (int)(expect + 0.5));
        if (d > worst) worst = d;
      }
    }
  CHECK_MSG(worst == 0, "CMYK->RGB worst difference %d", worst);
  CHECK(stk__jpeg_decode(jpg, size, STK__COLOR_GRAY, NULL, 0, 0, &out, NULL, err, sizeof err) == STK_OK);
  CHECK(out.shape[2] == 1 && out.shape[1] == W && out.shape[0] == H);
  stk__tensor_free(&out);
  free(cmyk);
  free(jpg);
  free(px);
}

/* Expected oriented image, built from elementary transforms (independent of jpeg.c's table). */
static uint8_t *transpose(const uint8_t *s, int w, int h) {
  uint8_t *d = malloc((size_t)w * h * 3);
  for (int y = 0; y < w; y++)
    for (int x = 0; x < h; x++) memcpy(d + ((size_t)y * h + x) * 3, s + ((size_t)x * w + y) * 3, 3);
  return d;
}
static void flip_h(uint8_t *p, int w, int h) {
  for (int y = 0; y < h; y++)
    for (int x = 0; x < w / 2; x++) {
      uint8_t t[3], *a = p + ((size_t)y * w + x) * 3, *b = p + ((size_t)y * w + w - 1 - x) * 3;
      memcpy(t, a, 3), memcpy(a, b, 3), memcpy(b, t, 3);
    }
}
static void flip_v(uint8_t *p, int w, int h) {
  for (int y = 0; y < h / 2; y++)
    for (int x = 0; x < w; x++) {
      uint8_t t[3], *a = p + ((size_t)y * w + x) * 3, *b = p + ((size_t)(h - 1 - y) * w + x) * 3;
      memcpy(t, a, 3), memcpy(a, b, 3), memcpy(b, t, 3);
    }
}
static uint8_t *oriented(const uint8_t *s, int w, int h, int o, int *ow, int *oh) {
  uint8_t *d;
  if (o >= 5) {
    d = transpose(s, w, h);
    *ow = h, *oh = w;
  } else {
    d = malloc((size_t)w * h * 3);
    memcpy(d, s, (size_t)w * h * 3);
    *ow = w, *oh = h;
  }
  if (o == 2 || o == 3 || o == 6 || o == 7) flip_h(d, *ow, *oh);
  if (o == 3 || o == 4 || o == 7 || o == 8) flip_v(d, *ow, *oh);
  return d;
}

static void test_exif_orientation(void) {
  const int W = 40, H = 24;
  uint8_t *px = fixture_pattern(W, H, 3, 5);
  for (int be = 0; be < 2; be++)
    for (int o = 1; o <= 8; o++) {
      fixture_options opt = fixture_defaults();
      opt.orientation = o, opt.big_endian = be;
      size_t size;
      uint8_t *jpg = fixture_encode(px, W, H, 3, opt, &size);
      stk__jpeg_info info;
      CHECK(stk__jpeg_peek(jpg, size, &info, err, sizeof err) == STK_OK);
      CHECK_MSG(info.orientation == o, "orientation %d read as %d", o, info.orientation);
      int rw, rh, rc, ow, oh;
      uint8_t *stored = fixture_reference(jpg, size, JCS_RGB, 8, &rw, &rh, &rc);
      uint8_t *expect = oriented(stored, W, H, o, &ow, &oh);
      stk__tensor out = {0};
      CHECK(stk__jpeg_decode(jpg, size, STK__COLOR_RGB, NULL, 0, 0, &out, NULL, err, sizeof err) == STK_OK);
      CHECK_MSG(window_equal(&out, expect, ow, 3, 0, 0, ow, oh), "orientation %d full (be=%d)", o, be);
      /* A window in oriented coordinates. */
      stk__window win = {3, 5, ow / 2, oh / 2};
      CHECK(stk__jpeg_decode(jpg, size, STK__COLOR_RGB, &win, 0, 0, &out, NULL, err, sizeof err) == STK_OK);
      CHECK_MSG(window_equal(&out, expect, ow, 3, win.x, win.y, win.w, win.h), "orientation %d window", o);
      stk__tensor_free(&out);
      free(expect);
      free(stored);
      free(jpg);
    }
  free(px);
}

static void expect_bad(const uint8_t *data, size_t size, const char *needle, const char *what) {
  stk__tensor out = {0};
  stk__jpeg_info info;
  err[0] = 0;
  stk_status st = stk__jpeg_decode(data, size, STK__COLOR_RGB, NULL, 0, 0, &out, NULL, err, sizeof err);
  CHECK_MSG(st == STK_EBADIMAGE, "%s: decode status %d", what, st);
  CHECK_MSG(strstr(err, needle) != NULL, "%s: message '%s' lacks '%s'", what, err, needle);
  stk__window win = {119, 89, 1, 1}; /* the bottom-right pixel of the 120x90 fixture */
  st = stk__jpeg_decode(data, size, STK__COLOR_RGB, &win, 0, 0, &out, NULL, err, sizeof err);
  CHECK_MSG(st == STK_EBADIMAGE || st == STK_EINVAL, "%s: window decode status %d", what, st);
  stk__tensor_free(&out);
  (void)info;
}

static void test_bad_files(void) {
  const int W = 120, H = 90;
  uint8_t *px = fixture_pattern(W, H, 3, 9);
  size_t size;
  fixture_options o = fixture_defaults();
  o.subsampling = 420;
  uint8_t *jpg = fixture_encode(px, W, H, 3, o, &size);
  stk__jpeg_info info;

  expect_bad(jpg, 0, "empty", "empty");
  expect_bad(jpg, 1, "not a JPEG", "one byte");
  expect_bad(jpg, 3, "truncated", "three bytes");
  expect_bad(jpg, 120, "truncated JPEG: Premature end", "truncated header");
  expect_bad(jpg, size / 2, "Premature end", "truncated data");
  CHECK(stk__jpeg_peek(jpg, size / 2, &info, err, sizeof err) == STK_OK); /* the header is intact */

  static const uint8_t png[] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n', 0, 0, 0, 13, 'I', 'H', 'D', 'R'};
  expect_bad(png, sizeof png, "PNG", "PNG named .jpg");
  CHECK(stk__jpeg_peek(png, sizeof png, &info, err, sizeof err) == STK_EBADIMAGE);
  static const uint8_t text[] = "hello, world";
  expect_bad(text, sizeof text, "not a JPEG", "text");

  /* Find SOF0 and rewrite the dimensions to 60000 x 60000 (a decompression bomb header). */
  uint8_t *bomb = malloc(size);
  memcpy(bomb, jpg, size);
  size_t sof = 0;
  for (size_t i = 2; i + 9 < size; i++)
    if (bomb[i] == 0xFF && bomb[i + 1] == 0xC0) {
      sof = i;
      break;
    }
  CHECK(sof > 0);
  bomb[sof + 5] = 0xEA, bomb[sof + 6] = 0x60, bomb[sof + 7] = 0xEA, bomb[sof + 8] = 0x60;
  expect_bad(bomb, size, "exceed", "huge dimensions");
  CHECK(stk__jpeg_peek(bomb, size, &info, err, sizeof err) == STK_EBADIMAGE);

  /* Corrupt marker: SOF0 turned into an unsupported SOF (lossless, 0xC3). */
  memcpy(bomb, jpg, size);
  bomb[sof + 1] = 0xC3;
  expect_bad(bomb, size, "unsupported JPEG process: SOF type 0xc3", "unsupported SOF marker");

  /* Garbage where the entropy data is: libjpeg's warnings are errors here. */
  memcpy(bomb, jpg, size);
  for (size_t i = size / 2; i < size / 2 + 64; i++) bomb[i] = (uint8_t)(i * 131 + 7);
  bomb[size / 2 + 10] = 0xFF, bomb[size / 2 + 11] = 0xD0 + 5; /* an unexpected restart marker */
  stk__tensor out = {0};
  stk_status st = stk__jpeg_decode(bomb, size, STK__COLOR_RGB, NULL, 0, 0, &out, NULL, err, sizeof err);
  CHECK_MSG(st == STK_EBADIMAGE, "garbage entropy data: status %d", st);
  stk__tensor_free(&out);

  /* Only SOI. */
  static const uint8_t soi[] = {0xFF, 0xD8, 0xFF, 0xD9};
  expect_bad(soi, sizeof soi, "corrupt JPEG data", "SOI+EOI only");

  free(bomb);
  free(jpg);
  free(px);
}

static void full_and_crops_444(void) { test_full_and_crops(444, 0); }
static void full_and_crops_420(void) { test_full_and_crops(420, 0); }
static void full_and_crops_444_progressive(void) { test_full_and_crops(444, 1); }
static void full_and_crops_420_progressive(void) { test_full_and_crops(420, 1); }

/* one STK_TEST_CASE per line: tests/CMakeLists.txt reads them */
// clang-format off
static const stk_test_case cases[] = {
    STK_TEST_CASE(full_and_crops_444),
    STK_TEST_CASE(full_and_crops_420),
    STK_TEST_CASE(full_and_crops_444_progressive),
    STK_TEST_CASE(full_and_crops_420_progressive),
    STK_TEST_CASE(test_grayscale_source),
    STK_TEST_CASE(test_cmyk),
    STK_TEST_CASE(test_exif_orientation),
    STK_TEST_CASE(test_bad_files),
};
// clang-format on

int main(int argc, char **argv) {
  if (stk_test_list_cases(cases, STK_TEST_COUNT(cases), argc, argv)) return 0;
  return stk_test_run_cases("test_jpeg", cases, STK_TEST_COUNT(cases), argc, argv);
}
