/* src/ops/decode/test_image_formats.c: the hand-written parts of the image formats (bmp.c, pnm.c,
 * image_format.c, image_emit.c) on bytes built here, for the cases Pillow does not write: BMP bit
 * fields (16-bit 5-6-5, 32-bit with an alpha mask), top-down rows, the 12-byte core header, RLE
 * and truncation refused; PNM in ASCII, 16-bit and scaled maxvals, samples above maxval; format
 * detection naming GIF / JPEG 2000 / JPEG XL; the output rules (luma, 16 -> 8-bit rounding, uint16,
 * float, windows), the host memory budget, and the mixed decoder's plan of a non-JPEG image. Pixel-exact checks against PIL for files Pillow
 * writes are in tests/python/test_decoders_formats.py. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ops/decode/image_format.h"
#include "ops/decode/image_route.h"
#include "case_list.h"
#include "testutil.h"

static char err[512];

static void put16(uint8_t *p, uint32_t v) { p[0] = (uint8_t)v, p[1] = (uint8_t)(v >> 8); }
static void put32(uint8_t *p, uint32_t v) { put16(p, v & 0xFFFF), put16(p + 2, v >> 16); }

/* A BMP with a 40- or 108-byte header, `bpp` bits, `compression`, masks (may be NULL) and rows. */
static size_t make_bmp(uint8_t *out, int dib, int width, int height, int bpp, int compression, const uint32_t *masks,
                       const uint8_t *rows, size_t rows_bytes) {
  memset(out, 0, 14 + (size_t)dib + 16);
  const size_t extra = dib == 40 && masks ? 12 : 0, pixels = 14 + (size_t)dib + extra;
  out[0] = 'B', out[1] = 'M';
  put32(out + 2, (uint32_t)(pixels + rows_bytes));
  put32(out + 10, (uint32_t)pixels);
  put32(out + 14, (uint32_t)dib);
  put32(out + 18, (uint32_t)width);
  put32(out + 22, (uint32_t)height);
  put16(out + 26, 1);
  put16(out + 28, (uint32_t)bpp);
  put32(out + 30, (uint32_t)compression);
  if (masks) {
    uint8_t *m = dib == 40 ? out + 54 : out + 14 + 40;
    for (int k = 0; k < 3; k++) put32(m + 4 * k, masks[k]);
    if (dib >= 56) put32(out + 14 + 52, masks[3]);
  }
  memcpy(out + pixels, rows, rows_bytes);
  return pixels + rows_bytes;
}

static stk_status decode(const uint8_t *data, size_t size, stk__image_spec spec, const stk__window *win,
                         stk__tensor *out) {
  err[0] = '\0';
  return stk__image_decode(data, size, &spec, win, 0, 0, NULL, NULL, out, err, sizeof err);
}

static const stk__image_spec RGB8 = {STK__COLOR_RGB, 0, STK_DTYPE_UINT8};
static const stk__image_spec ANY8 = {STK__COLOR_RGB, 1, STK_DTYPE_UINT8};

static void bmp_bit_fields_and_row_order(void) {
  uint8_t file[512];
  stk__tensor out = {0};
  /* 16-bit 5-6-5, 2x1: pure red (0xF800) and a mid green (32 << 5), top-down (height -1) */
  const uint32_t masks565[4] = {0xF800, 0x07E0, 0x001F, 0};
  uint8_t rows[8] = {0};
  put16(rows, 0xF800), put16(rows + 2, 32u << 5);
  size_t n = make_bmp(file, 40, 2, -1, 16, 3, masks565, rows, 4);
  CHECK_MSG(decode(file, n, RGB8, NULL, &out) == STK_OK, "%s", err);
  const uint8_t *px = out.data;
  CHECK(out.shape[0] == 1 && out.shape[1] == 2 && out.shape[2] == 3);
  CHECK(px[0] == 255 && px[1] == 0 && px[2] == 0);
  CHECK(px[3] == 0 && px[4] == (32 * 255 + 31) / 63 && px[5] == 0); /* round(v * 255 / max) */
  /* 32-bit V4 header with an alpha mask: 4 channels under ANY_DATA; bottom-up rows */
  const uint32_t masks8888[4] = {0x00FF0000, 0x0000FF00, 0x000000FF, 0xFF000000};
  uint8_t rows32[8];
  put32(rows32, 0x80102030);     /* stored first = bottom row */
  put32(rows32 + 4, 0x40A0B0C0); /* top row */
  n = make_bmp(file, 108, 1, 2, 32, 3, masks8888, rows32, 8);
  CHECK_MSG(decode(file, n, ANY8, NULL, &out) == STK_OK, "%s", err);
  px = out.data;
  CHECK(out.shape[2] == 4);
  CHECK(px[0] == 0xA0 && px[1] == 0xB0 && px[2] == 0xC0 && px[3] == 0x40); /* top row first */
  CHECK(px[4] == 0x10 && px[5] == 0x20 && px[6] == 0x30 && px[7] == 0x80);
  stk__tensor_free(&out);
}

static void bmp_refusals_name_the_problem(void) {
  uint8_t file[512], rows[64] = {0};
  stk__tensor out = {0};
  size_t n = make_bmp(file, 40, 4, 4, 8, 1, NULL, rows, 16); /* RLE8 */
  CHECK(decode(file, n, RGB8, NULL, &out) == STK_EBADIMAGE && strstr(err, "RLE8"));
  n = make_bmp(file, 40, 4, 4, 24, 0, NULL, rows, 48);
  CHECK(decode(file, n - 10, RGB8, NULL, &out) == STK_EBADIMAGE && strstr(err, "truncated BMP"));
  put32(file + 18, 0x7FFFFFFF); /* absurd width */
  CHECK(decode(file, n, RGB8, NULL, &out) == STK_EBADIMAGE && strstr(err, "BMP"));
  n = make_bmp(file, 40, 4, 4, 7, 0, NULL, rows, 48);
  CHECK(decode(file, n, RGB8, NULL, &out) == STK_EBADIMAGE && strstr(err, "7 bits"));
  put32(file + 14, 64); /* OS/2 2.x header size */
  CHECK(decode(file, n, RGB8, NULL, &out) == STK_EBADIMAGE && strstr(err, "not supported"));
  stk__tensor_free(&out);
}

static void bmp_core_header_palette(void) {
  /* 12-byte core header, 1 bit, 2-entry BGR palette (blue, white): 3 channels (not gray) */
  uint8_t file[64] = {'B', 'M'};
  put32(file + 10, 14 + 12 + 6);
  put32(file + 14, 12);
  put16(file + 18, 3), put16(file + 20, 1), put16(file + 22, 1), put16(file + 24, 1);
  const uint8_t palette[6] = {255, 0, 0, 255, 255, 255}; /* BGR: blue, white */
  memcpy(file + 26, palette, 6);
  file[32] = 0x40; /* pixels 0,1,0 */
  stk__tensor out = {0};
  CHECK_MSG(decode(file, 36, ANY8, NULL, &out) == STK_OK, "%s", err);
  const uint8_t *px = out.data;
  CHECK(out.shape[1] == 3 && out.shape[2] == 3);
  CHECK(px[0] == 0 && px[1] == 0 && px[2] == 255);     /* blue */
  CHECK(px[3] == 255 && px[4] == 255 && px[5] == 255); /* white */
  stk__tensor_free(&out);
}

static void pnm_ascii_sixteen_bit_and_scaling(void) {
  stk__tensor out = {0};
  static const char p3[] = "P3\n# comment\n2 1\n255\n1 2 3  4 5 6\n";
  CHECK_MSG(decode((const uint8_t *)p3, sizeof p3 - 1, RGB8, NULL, &out) == STK_OK, "%s", err);
  CHECK(out.shape[1] == 2 && !memcmp(out.data, "\1\2\3\4\5\6", 6));
  static const char p1[] = "P1 3 1\n1 01";
  CHECK_MSG(decode((const uint8_t *)p1, sizeof p1 - 1, ANY8, NULL, &out) == STK_OK, "%s", err);
  CHECK(!memcmp(out.data, "\0\377\0", 3)); /* 1 is black */
  static const char p2[] = "P2 2 1 1000 1000 500";
  const stk__image_spec u16 = {STK__COLOR_GRAY, 0, STK_DTYPE_UINT16};
  CHECK_MSG(decode((const uint8_t *)p2, sizeof p2 - 1, u16, NULL, &out) == STK_OK, "%s", err);
  const uint16_t *s = out.data;
  CHECK(out.dtype == STK_DTYPE_UINT16 && s[0] == 65535 && s[1] == (uint16_t)((500u * 65535u + 500u) / 1000u));
  static const uint8_t p5[] = {'P', '5', ' ', '2', ' ', '1', ' ', '1', '5', '\n', 3, 15};
  CHECK_MSG(decode(p5, sizeof p5, ANY8, NULL, &out) == STK_OK, "%s", err);
  CHECK(((uint8_t *)out.data)[0] == 51 && ((uint8_t *)out.data)[1] == 255); /* 3 * 255 / 15 */
  static const uint8_t p5_16[] = {'P', '5', ' ', '1', ' ', '1', ' ', '6', '5', '5', '3', '5', '\n', 0x12, 0x34};
  CHECK_MSG(decode(p5_16, sizeof p5_16, ANY8, NULL, &out) == STK_OK, "%s", err);
  CHECK(((uint8_t *)out.data)[0] == (0x1234 + 128) / 257);
  static const uint8_t above[] = {'P', '5', ' ', '1', ' ', '1', ' ', '9', '\n', 10};
  CHECK(decode(above, sizeof above, ANY8, NULL, &out) == STK_EBADIMAGE && strstr(err, "above maxval"));
  CHECK(decode(p5, sizeof p5 - 1, ANY8, NULL, &out) == STK_EBADIMAGE && strstr(err, "truncated PNM"));
  static const char no_size[] = "P6 12";
  CHECK(decode((const uint8_t *)no_size, sizeof no_size - 1, ANY8, NULL, &out) == STK_EBADIMAGE && strstr(err, "PNM"));
  stk__tensor_free(&out);
}

static void unsupported_formats_are_named(void) {
  stk__tensor out = {0};
  static const uint8_t gif[] = "GIF89a\1\0\1\0";
  CHECK(decode(gif, sizeof gif, RGB8, NULL, &out) == STK_EBADIMAGE && strstr(err, "GIF images are not supported"));
  static const uint8_t jp2[] = {0, 0, 0, 0x0c, 'j', 'P', ' ', ' ', '\r', '\n', 0x87, '\n', 0};
  CHECK(decode(jp2, sizeof jp2, RGB8, NULL, &out) == STK_EBADIMAGE && strstr(err, "JPEG 2000"));
  static const uint8_t jxl[] = {0xFF, 0x0A, 0, 0};
  CHECK(decode(jxl, sizeof jxl, RGB8, NULL, &out) == STK_EBADIMAGE && strstr(err, "JPEG XL"));
  static const uint8_t text[] = "hello";
  CHECK(decode(text, 5, RGB8, NULL, &out) == STK_EBADIMAGE && strstr(err, "not a supported image"));
  CHECK(decode(text, 0, RGB8, NULL, &out) == STK_EBADIMAGE && strstr(err, "empty"));
  CHECK(stk__image_format_detect((const uint8_t *)"\x89PNG\r\n\x1a\n", 8) == STK__IMAGE_PNG);
  CHECK(stk__image_format_detect((const uint8_t *)"II*\0", 4) == STK__IMAGE_TIFF);
  CHECK(stk__image_format_detect((const uint8_t *)"RIFF\0\0\0\0WEBP", 12) == STK__IMAGE_WEBP);
  stk__tensor_free(&out);
}

static void emit_rules(void) {
  /* a 2x2 RGB 16-bit raw image: luma, 16 -> 8 rounding, float, BGR and a window */
  uint16_t px[12] = {65535, 0, 0, 0, 65535, 0, 0, 0, 65535, 128, 129, 386};
  const stk__raw_image raw = {(const uint8_t *)px, 2 * 3 * 2, 2, 2, 3, 16};
  stk__tensor out = {0};
  const stk__image_spec gray = {STK__COLOR_GRAY, 0, STK_DTYPE_UINT16};
  CHECK(stk__image_emit(&raw, NULL, &gray, &out, err, sizeof err) == STK_OK);
  const uint16_t *g = out.data;
  CHECK(g[0] == (uint16_t)((65535ull * 19595 + 0x8000) >> 16) && g[1] == (uint16_t)((65535ull * 38470 + 0x8000) >> 16));
  const stk__window win = {1, 1, 1, 1};
  CHECK(stk__image_emit(&raw, &win, &(stk__image_spec){STK__COLOR_BGR, 0, STK_DTYPE_UINT8}, &out, err, sizeof err) ==
        STK_OK);
  const uint8_t *b = out.data;
  CHECK(out.shape[0] == 1 && out.shape[1] == 1 && b[0] == 2 && b[1] == 1 &&
        b[2] == 0); /* round(v / 257): 386 -> 2, 129 -> 1, 128 -> 0 */
  CHECK(stk__image_emit(&raw, NULL, &(stk__image_spec){STK__COLOR_RGB, 0, STK_DTYPE_FLOAT32}, &out, err, sizeof err) ==
        STK_OK);
  CHECK(((float *)out.data)[0] == 1.0f && out.dtype == STK_DTYPE_FLOAT32);
  const stk__window outside = {1, 1, 2, 1};
  CHECK(stk__image_emit(&raw, &outside, &RGB8, &out, err, sizeof err) == STK_EINVAL && strstr(err, "not inside"));
  stk__tensor_free(&out);
}

static void budget_refuses_a_large_raw_image(void) {
  static const uint8_t p5_16[] = {'P', '5', ' ', '1', ' ', '1', ' ', '6', '5', '5', '3', '5', '\n', 0x12, 0x34};
  stk__host_budget budget = {0, 1}; /* room for 1 byte: the 2-byte raw image does not fit */
  stk__tensor out = {0};
  CHECK(stk__image_decode(p5_16, sizeof p5_16, &RGB8, NULL, 0, 0, &budget, NULL, &out, err, sizeof err) == STK_ERANGE);
  CHECK_MSG(strstr(err, "host memory budget") != NULL, "%s", err);
  CHECK(budget.held == 0); /* nothing kept after the refusal */
  budget.limit = 1 << 20;
  CHECK(stk__image_decode(p5_16, sizeof p5_16, &RGB8, NULL, 0, 0, &budget, NULL, &out, err, sizeof err) == STK_OK);
  CHECK(budget.held == 0); /* given back after the decode */
  stk__tensor_free(&out);
}

/* The mixed decoder's plan of a non-JPEG image: CPU route whatever the router offers, its size, and
 * the window the CPU decoder draws for the same (seed, op, epoch, sample). */
static void mixed_plan_routes_other_formats_to_the_cpu(void) {
  static const char ppm[] = "P6 40 30 255\n"; /* the header is all a plan reads */
  const stk__jpeg_router router = {.nvjpeg = 1, .hw_engines = 1, .hw_load = 1.0, .channels = 3, .cuda_load = 1.0};
  stk__decoder_params params = {0};
  params.random_crop = 1;
  params.area_min = 0.1, params.area_max = 0.5, params.ratio_min = 0.75, params.ratio_max = 1.33;
  params.attempts = 10, params.seed = 7;
  stk__jpeg_plan plan;
  CHECK_MSG(stk__image_plan_make(&router, &params, 3, 2, 11, 0, 1, (const uint8_t *)ppm, sizeof ppm - 1, &plan, err,
                                 sizeof err) == STK_OK,
            "%s", err);
  CHECK(plan.route == STK__JPEG_ROUTE_CPU && plan.info.width == 40 && plan.info.height == 30);
  CHECK(plan.info.orientation == 1 && plan.sample_id == 11);
  const stk__window w = stk__decoder_crop_window(&params, 3, 2, 11, 40, 30);
  CHECK(plan.crop.x == w.x && plan.crop.y == w.y && plan.crop.w == w.w && plan.crop.h == w.h);
  CHECK(stk__image_is_cpu_format((const uint8_t *)ppm, sizeof ppm - 1));
  static const uint8_t gif[] = "GIF89a\1\0\1\0";
  CHECK(stk__image_plan_make(&router, &params, 3, 2, 11, 0, 1, gif, sizeof gif, &plan, err, sizeof err) ==
        STK_EBADIMAGE);
  CHECK(!stk__image_is_cpu_format(gif, sizeof gif));
}

/* one STK_TEST_CASE per line: tests/CMakeLists.txt reads them */
// clang-format off
static const stk_test_case cases[] = {
    STK_TEST_CASE(bmp_bit_fields_and_row_order),
    STK_TEST_CASE(bmp_refusals_name_the_problem),
    STK_TEST_CASE(bmp_core_header_palette),
    STK_TEST_CASE(pnm_ascii_sixteen_bit_and_scaling),
    STK_TEST_CASE(unsupported_formats_are_named),
    STK_TEST_CASE(emit_rules),
    STK_TEST_CASE(budget_refuses_a_large_raw_image),
    STK_TEST_CASE(mixed_plan_routes_other_formats_to_the_cpu),
};
// clang-format on

int main(int argc, char **argv) {
  if (stk_test_list_cases(cases, STK_TEST_COUNT(cases), argc, argv)) return 0;
  return stk_test_run_cases("test_image_formats", cases, STK_TEST_COUNT(cases), argc, argv);
}
