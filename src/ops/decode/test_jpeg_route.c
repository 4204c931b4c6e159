/* src/ops/decode/test_jpeg_route.c: the mixed JPEG decoder's routing (src/ops/decode/jpeg_route.c), CPU
 * only, so it runs in the no-CUDA build too:
 *   - the engines' share floor((p+1)L) > floor(pL) against positions worked out by hand for
 *     L = 0, 0.25, 0.5, 0.75, 0.8, 1, and floor(nL) positions out of n;
 *   - hw_decoder_load clamping;
 *   - the CUDA decoder's share (cuda_decoder_load) of the non-engine positions, by hand and by
 *     count, and its routes with a pre-stage (baseline only; progressive stays on the CPU);
 *   - the header checks (progressive, subsampling 4:4:4 / 4:2:2 / 4:2:0 / 4:4:0 / 4:1:1, gray,
 *     CMYK, EXIF orientation, component counts) and the route table with and without nvJPEG,
 *     engines and a CPU pre-stage;
 *   - plans made from real JPEG bytes encoded here: sizes (odd, EXIF-transposed), whole-image and
 *     random-crop windows (the CPU decoder's), full-image bytes, and the bad headers (empty,
 *     truncated, PNG, huge dimensions) and data that end before EOI refused with STK_EBADIMAGE;
 *   - the hand-over in a stage tensor (store / load, and a stage with no plan or another sample's). */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "jpeg_fixtures.h"
#include "ops/decode/jpeg_route.h"
#include "case_list.h"
#include "testutil.h"

static char err[512];

/* ---- The engines' share ----------------------------------------------------------------------- */
/* expected[p] for positions 0..n-1, worked out by hand from floor((p+1)L) > floor(pL). */
static void expect_share(double load, const char *expected) {
  int n = (int)strlen(expected);
  for (int p = 0; p < n; p++)
    CHECK_MSG(stk__jpeg_hw_share(p, load) == (expected[p] == 'H'), "load %.2f, position %d: expected %c", load, p,
              expected[p]);
}

static void test_share_by_hand(void) {
  expect_share(0.0, "........");
  expect_share(1.0, "HHHHHHHH");
  /* L = 0.5: floor(p/2) steps up at p = 1, 3, 5, 7 (floor(1*0.5) = 0 -> floor(2*0.5) = 1, ...). */
  expect_share(0.5, ".H.H.H.H");
  /* L = 0.25: floor((p+1)/4) > floor(p/4) at p = 3, 7. */
  expect_share(0.25, "...H...H");
  /* L = 0.75: floor(0.75) = 0 = floor(0); floor(1.5) = 1 > 0; floor(2.25) = 2 > 1; floor(3) = 3 > 2;
   * floor(3.75) = 3 = floor(3): skips 0, 4, 8. */
  expect_share(0.75, ".HHH.HHH.HHH");
  /* L = 0.8 (the default): skips 0, 5, 10 (floor(4.0) = 4 > floor(3.2) = 3, floor(4.8) = 4 = 4). */
  expect_share(0.8, ".HHHH.HHHH.HHHH");
}

static void test_share_counts(void) {
  /* The share telescopes: positions 0..n-1 hold floor(nL) of them. */
  static const double loads[] = {0.0, 0.1, 0.25, 0.3, 0.5, 0.75, 0.8, 0.9, 0.999, 1.0};
  static const int sizes[] = {1, 2, 5, 7, 64, 255, 256};
  for (size_t a = 0; a < sizeof loads / sizeof loads[0]; a++)
    for (size_t b = 0; b < sizeof sizes / sizeof sizes[0]; b++) {
      int n = sizes[b], taken = 0;
      for (int p = 0; p < n; p++) taken += stk__jpeg_hw_share(p, loads[a]);
      CHECK_MSG(taken == (int)floor(n * loads[a]), "load %g over %d positions: %d taken, expected %d", loads[a], n,
                taken, (int)floor(n * loads[a]));
    }
  /* By hand: a batch of 256 at the default 0.8 sends 204 (256 * 0.8 = 204.8) to the engines. */
  int taken = 0;
  for (int p = 0; p < 256; p++) taken += stk__jpeg_hw_share(p, 0.8);
  CHECK(taken == 204);
}

static void test_load_clamp(void) {
  CHECK(stk__jpeg_hw_load_clamp(0.3) == 0.3);
  CHECK(stk__jpeg_hw_load_clamp(0.0) == 0.0);
  CHECK(stk__jpeg_hw_load_clamp(1.0) == 1.0);
  CHECK(stk__jpeg_hw_load_clamp(-0.5) == 0.0);
  CHECK(stk__jpeg_hw_load_clamp(2.0) == 1.0);
  CHECK(stk__jpeg_hw_load_clamp(NAN) == 0.0);
}

/* ---- Header checks and the route table -------------------------------------------------------- */
static stk__jpeg_info info_of(int components, int subsampling, int progressive, int cmyk, int orientation) {
  stk__jpeg_info i = {640, 480, components, progressive, cmyk, subsampling, orientation};
  return i;
}

static void test_hw_can_take(void) {
  CHECK(stk__jpeg_hw_can_take(&(stk__jpeg_info){640, 480, 3, 0, 0, 444, 1}));
  CHECK(stk__jpeg_hw_can_take(&(stk__jpeg_info){640, 480, 3, 0, 0, 422, 1}));
  CHECK(stk__jpeg_hw_can_take(&(stk__jpeg_info){640, 480, 3, 0, 0, 420, 1}));
  CHECK(stk__jpeg_hw_can_take(&(stk__jpeg_info){640, 480, 3, 0, 0, 440, 1}));
  CHECK(stk__jpeg_hw_can_take(&(stk__jpeg_info){640, 480, 1, 0, 0, 0, 1}));    /* gray */
  CHECK(!stk__jpeg_hw_can_take(&(stk__jpeg_info){640, 480, 3, 0, 0, 411, 1})); /* 4:1:1 */
  /* 3 components with factors that are none of the above read as subsampling 0, like gray, and
   * pass: the rule as it stands (an engine refusal sends the batch's share to the CPU). */
  CHECK(stk__jpeg_hw_can_take(&(stk__jpeg_info){640, 480, 3, 0, 0, 0, 1}));
  CHECK(!stk__jpeg_hw_can_take(&(stk__jpeg_info){640, 480, 3, 1, 0, 444, 1})); /* progressive */
  CHECK(!stk__jpeg_hw_can_take(&(stk__jpeg_info){640, 480, 4, 0, 1, 0, 1}));   /* CMYK */
  CHECK(!stk__jpeg_hw_can_take(&(stk__jpeg_info){640, 480, 2, 0, 0, 0, 1}));   /* 2 components */
}

static void test_route_table(void) {
  const stk__jpeg_router none = {0, 0, 1.0, 3}, gpu = {1, 1, 1.0, 3}, no_engines = {1, 0, 1.0, 3},
                         half = {1, 1, 0.5, 3};
  stk__jpeg_info base = info_of(3, 420, 0, 0, 1), prog = info_of(3, 444, 1, 0, 1), s411 = info_of(3, 411, 0, 0, 1),
                 cmyk = info_of(4, 0, 0, 1, 1), rotated = info_of(3, 444, 0, 0, 6), gray = info_of(1, 0, 0, 0, 1),
                 two = info_of(2, 0, 0, 0, 1);
  for (int staged = 0; staged < 2; staged++) {
    /* Without nvJPEG everything is libjpeg-turbo's. */
    CHECK(stk__jpeg_route_sample(&none, &base, 1, staged) == STK__JPEG_ROUTE_CPU);
    CHECK(stk__jpeg_route_sample(&none, &prog, 1, staged) == STK__JPEG_ROUTE_CPU);
    /* CMYK, EXIF-rotated and odd component counts: always the CPU. */
    CHECK(stk__jpeg_route_sample(&gpu, &cmyk, 1, staged) == STK__JPEG_ROUTE_CPU);
    CHECK(stk__jpeg_route_sample(&gpu, &rotated, 1, staged) == STK__JPEG_ROUTE_CPU);
    CHECK(stk__jpeg_route_sample(&gpu, &two, 1, staged) == STK__JPEG_ROUTE_CPU);
    /* The engines' candidates in their share. */
    CHECK(stk__jpeg_route_sample(&gpu, &base, 0, staged) == STK__JPEG_ROUTE_HW);
    CHECK(stk__jpeg_route_sample(&gpu, &gray, 0, staged) == STK__JPEG_ROUTE_HW);
    CHECK(stk__jpeg_route_sample(&half, &base, 1, staged) == STK__JPEG_ROUTE_HW);
  }
  /* Outside the share, not for the engines, or no engines: the pre-stage's CPU, else nvJPEG's
   * hybrid decoder for progressive files and its CUDA decoder for the others. */
  CHECK(stk__jpeg_route_sample(&half, &base, 0, 1) == STK__JPEG_ROUTE_CPU);
  CHECK(stk__jpeg_route_sample(&half, &base, 0, 0) == STK__JPEG_ROUTE_CUDA);
  CHECK(stk__jpeg_route_sample(&gpu, &prog, 1, 1) == STK__JPEG_ROUTE_CPU);
  CHECK(stk__jpeg_route_sample(&gpu, &prog, 1, 0) == STK__JPEG_ROUTE_HYBRID);
  CHECK(stk__jpeg_route_sample(&gpu, &s411, 1, 1) == STK__JPEG_ROUTE_CPU);
  CHECK(stk__jpeg_route_sample(&gpu, &s411, 1, 0) == STK__JPEG_ROUTE_CUDA);
  CHECK(stk__jpeg_route_sample(&no_engines, &base, 1, 0) == STK__JPEG_ROUTE_CUDA);
  CHECK(stk__jpeg_route_sample(&no_engines, &base, 1, 1) == STK__JPEG_ROUTE_CPU);
  /* A batch at L = 0.75 with a pre-stage: engines except positions 0, 4 (and the progressive at 2). */
  const stk__jpeg_router quarter = {1, 1, 0.75, 3};
  const stk__jpeg_route expected[6] = {STK__JPEG_ROUTE_CPU, STK__JPEG_ROUTE_HW,  STK__JPEG_ROUTE_CPU,
                                       STK__JPEG_ROUTE_HW,  STK__JPEG_ROUTE_CPU, STK__JPEG_ROUTE_HW};
  for (int p = 0; p < 6; p++)
    CHECK_MSG(stk__jpeg_route_sample(&quarter, p == 2 ? &prog : &base, p, 1) == expected[p], "position %d", p);
}

/* ---- The CUDA decoder's share of the non-engine positions ----------------------------------- */
static void test_cuda_share_by_hand(void) {
  /* hw 0.5 takes 1, 3, 5, 7; the others 0, 2, 4, 6 have ranks 0..3 and cuda 0.5 takes ranks 1, 3:
   * positions 2 and 6. An engine position shares the next non-engine position's rank (p = 1 and 2:
   * 1 - floor(0.5) = 2 - floor(1.0) = 1). */
  static const int half_half[8] = {0, 1, 1, 0, 0, 1, 1, 0};
  for (int p = 0; p < 8; p++)
    CHECK_MSG(stk__jpeg_cuda_share(p, 1, 0.5, 0.5) == half_half[p], "hw 0.5 cuda 0.5 position %d", p);
  /* hw 0.8 leaves 0, 5, 10, 15 (ranks 0..3); cuda 0.5 takes ranks 1 and 3: positions 5 and 15. */
  for (int p = 0; p < 20; p++)
    if (!stk__jpeg_hw_share(p, 0.8))
      CHECK_MSG(stk__jpeg_cuda_share(p, 1, 0.8, 0.5) == (p == 5 || p == 15), "hw 0.8 cuda 0.5 position %d", p);
  /* No engines: the share is over the positions themselves (cuda 0.25: 3 and 7). */
  for (int p = 0; p < 8; p++)
    CHECK_MSG(stk__jpeg_cuda_share(p, 0, 0.8, 0.25) == (p == 3 || p == 7), "no engines, position %d", p);
  /* cuda 0 takes nothing, cuda 1 everything. */
  for (int p = 0; p < 16; p++) {
    CHECK(!stk__jpeg_cuda_share(p, 1, 0.8, 0.0));
    CHECK(stk__jpeg_cuda_share(p, 1, 0.8, 1.0));
  }
}

static void test_cuda_share_counts(void) {
  /* Of the n - floor(nH) non-engine positions of a batch of n, floor((n - floor(nH)) C) are CUDA's. */
  static const double hw[] = {0.0, 0.25, 0.5, 0.8, 0.9, 1.0}, cuda[] = {0.0, 0.1, 0.3, 0.5, 0.75, 1.0};
  static const int sizes[] = {1, 5, 7, 64, 255, 256};
  for (size_t a = 0; a < sizeof hw / sizeof hw[0]; a++)
    for (size_t c = 0; c < sizeof cuda / sizeof cuda[0]; c++)
      for (size_t b = 0; b < sizeof sizes / sizeof sizes[0]; b++) {
        int n = sizes[b], taken = 0, rest = n - (int)floor(n * hw[a]);
        for (int p = 0; p < n; p++)
          taken += !stk__jpeg_hw_share(p, hw[a]) && stk__jpeg_cuda_share(p, 1, hw[a], cuda[c]);
        CHECK_MSG(taken == (int)floor(rest * cuda[c]), "hw %g cuda %g over %d: %d taken, expected %d", hw[a], cuda[c],
                  n, taken, (int)floor(rest * cuda[c]));
      }
  /* By hand: a batch of 256 at hw 0.8 leaves 52; cuda 0.5 sends 26 of them to the CUDA decoder. */
  int taken = 0;
  for (int p = 0; p < 256; p++) taken += !stk__jpeg_hw_share(p, 0.8) && stk__jpeg_cuda_share(p, 1, 0.8, 0.5);
  CHECK(taken == 26);
}

static void test_route_cuda_share(void) {
  const stk__jpeg_router none = {0, 0, 0.5, 3, 1.0}, half = {1, 1, 0.5, 3, 0.5}, all = {1, 1, 0.8, 3, 1.0},
                         off = {1, 1, 0.5, 3, 0.0}, no_engines = {1, 0, 0.5, 3, 0.25};
  stk__jpeg_info base = info_of(3, 420, 0, 0, 1), prog = info_of(3, 444, 1, 0, 1), cmyk = info_of(4, 0, 0, 1, 1),
                 rotated = info_of(3, 444, 0, 0, 6);
  /* With a pre-stage, hw 0.5 cuda 0.5: CPU, HW, CUDA, HW, CPU, HW, CUDA, HW. */
  static const stk__jpeg_route expected[8] = {STK__JPEG_ROUTE_CPU,  STK__JPEG_ROUTE_HW,  STK__JPEG_ROUTE_CUDA,
                                              STK__JPEG_ROUTE_HW,   STK__JPEG_ROUTE_CPU, STK__JPEG_ROUTE_HW,
                                              STK__JPEG_ROUTE_CUDA, STK__JPEG_ROUTE_HW};
  for (int p = 0; p < 8; p++) {
    CHECK_MSG(stk__jpeg_route_sample(&half, &base, p, 1) == expected[p], "position %d", p);
    /* cuda_decoder_load 0 is the route without it: the CPU at every non-engine position. */
    CHECK_MSG(stk__jpeg_route_sample(&off, &base, p, 1) == (p % 2 ? STK__JPEG_ROUTE_HW : STK__JPEG_ROUTE_CPU),
              "cuda 0, position %d", p);
    /* Progressive keeps the CPU with a pre-stage (the hybrid decoder without one), whatever the share. */
    CHECK(stk__jpeg_route_sample(&all, &prog, p, 1) == STK__JPEG_ROUTE_CPU);
    CHECK(stk__jpeg_route_sample(&half, &prog, p, 0) == STK__JPEG_ROUTE_HYBRID);
    /* CMYK, EXIF-rotated, no nvJPEG: the CPU. */
    CHECK(stk__jpeg_route_sample(&all, &cmyk, p, 1) == STK__JPEG_ROUTE_CPU);
    CHECK(stk__jpeg_route_sample(&all, &rotated, p, 1) == STK__JPEG_ROUTE_CPU);
    CHECK(stk__jpeg_route_sample(&none, &base, p, 1) == STK__JPEG_ROUTE_CPU);
    /* cuda 1: every non-engine baseline image; without a pre-stage the route is unchanged. */
    CHECK(stk__jpeg_route_sample(&all, &base, p, 1) ==
          (stk__jpeg_hw_share(p, 0.8) ? STK__JPEG_ROUTE_HW : STK__JPEG_ROUTE_CUDA));
    CHECK(stk__jpeg_route_sample(&off, &base, p, 0) == (p % 2 ? STK__JPEG_ROUTE_HW : STK__JPEG_ROUTE_CUDA));
    /* No engines: the share is over the positions (0.25: 3 and 7). */
    CHECK(stk__jpeg_route_sample(&no_engines, &base, p, 1) ==
          (p == 3 || p == 7 ? STK__JPEG_ROUTE_CUDA : STK__JPEG_ROUTE_CPU));
  }
}

/* ---- Plans from JPEG bytes -------------------------------------------------------------------- */
/* Baseline 3-component 4:4:4 ... 4:1:1 JPEG (jpeg_fixtures.h), malloc'd. */
static uint8_t *encode_sampled(int w, int h, int subsampling, size_t *size) {
  uint8_t *px = fixture_pattern(w, h, 3, 5);
  fixture_options o = fixture_defaults();
  o.subsampling = subsampling;
  uint8_t *jpg = fixture_encode(px, w, h, 3, o, size);
  free(px);
  return jpg;
}

static stk__decoder_params whole_image(void) {
  stk__decoder_params p;
  memset(&p, 0, sizeof p);
  p.color = STK__COLOR_RGB;
  return p;
}

static stk__decoder_params random_crop(void) {
  stk__decoder_params p = whole_image();
  p.random_crop = 1;
  p.area_min = 0.08, p.area_max = 1.0;
  p.ratio_min = 0.75, p.ratio_max = 4.0 / 3.0;
  p.attempts = 10;
  p.seed = 42;
  return p;
}

static void test_plan_subsampling(void) {
  static const struct { int subsampling, engines; } kinds[] = {{444, 1}, {422, 1}, {420, 1}, {440, 1}, {411, 0}};
  const stk__jpeg_router gpu = {1, 1, 1.0, 3};
  const stk__decoder_params whole = whole_image();
  for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
    size_t size;
    uint8_t *jpg = encode_sampled(97, 61, kinds[k].subsampling, &size);
    stk__jpeg_plan plan;
    CHECK_MSG(stk__jpeg_plan_make(&gpu, &whole, 3, 0, 7, 0, 1, jpg, size, &plan, err, sizeof err) == STK_OK, "%s", err);
    CHECK_MSG(plan.info.subsampling == kinds[k].subsampling, "read %d, wrote %d", plan.info.subsampling,
              kinds[k].subsampling);
    CHECK(plan.info.width == 97 && plan.info.height == 61 && plan.info.components == 3 && !plan.info.progressive);
    CHECK(plan.crop.x == 0 && plan.crop.y == 0 && plan.crop.w == 97 && plan.crop.h == 61);
    CHECK(plan.route == (kinds[k].engines ? STK__JPEG_ROUTE_HW : STK__JPEG_ROUTE_CPU));
    CHECK(plan.sample_id == 7);
    CHECK(stk__jpeg_plan_full_bytes(&gpu, &plan) == (size_t)97 * 61 * 3);
    free(jpg);
  }
}

/* Plans one fixture-encoded image of `components` with options o; returns the status. */
static stk_status plan_fixture(const stk__jpeg_router *r, const stk__decoder_params *params, int w, int h,
                               int components, fixture_options o, int staged, stk__jpeg_plan *plan) {
  uint8_t *px = fixture_pattern(w, h, components, 3);
  size_t size;
  uint8_t *jpg = fixture_encode(px, w, h, components, o, &size);
  stk_status st = stk__jpeg_plan_make(r, params, 3, 1, 11, 0, staged, jpg, size, plan, err, sizeof err);
  free(px);
  free(jpg);
  return st;
}

static void test_plan_kinds(void) {
  const stk__jpeg_router gpu = {1, 1, 1.0, 3}, gray_out = {1, 1, 1.0, 1};
  const stk__decoder_params whole = whole_image();
  fixture_options o = fixture_defaults();
  stk__jpeg_plan plan;
  /* Progressive: the CPU with a pre-stage, the hybrid decoder without. */
  o.progressive = 1;
  CHECK(plan_fixture(&gpu, &whole, 80, 60, 3, o, 1, &plan) == STK_OK && plan.info.progressive);
  CHECK(plan.route == STK__JPEG_ROUTE_CPU);
  CHECK(plan_fixture(&gpu, &whole, 80, 60, 3, o, 0, &plan) == STK_OK && plan.route == STK__JPEG_ROUTE_HYBRID);
  o.progressive = 0;
  /* Grayscale: the engines; its full size at 1 channel out is w x h bytes. */
  CHECK(plan_fixture(&gray_out, &whole, 130, 77, 1, o, 1, &plan) == STK_OK);
  CHECK(plan.info.components == 1 && plan.info.subsampling == 0 && plan.route == STK__JPEG_ROUTE_HW);
  CHECK(stk__jpeg_plan_full_bytes(&gray_out, &plan) == (size_t)130 * 77);
  /* CMYK (Adobe): the CPU. */
  CHECK(plan_fixture(&gpu, &whole, 64, 48, 4, o, 0, &plan) == STK_OK);
  CHECK(plan.info.cmyk && plan.info.components == 4 && plan.route == STK__JPEG_ROUTE_CPU);
  /* EXIF orientation 6 (a transpose): the CPU, and the output is the oriented size. */
  o.orientation = 6;
  CHECK(plan_fixture(&gpu, &whole, 120, 50, 3, o, 0, &plan) == STK_OK);
  CHECK(plan.info.orientation == 6 && plan.info.width == 120 && plan.info.height == 50);
  CHECK(plan.crop.w == 50 && plan.crop.h == 120 && plan.route == STK__JPEG_ROUTE_CPU);
  CHECK(stk__jpeg_plan_full_bytes(&gpu, &plan) == (size_t)120 * 50 * 3);
  /* Orientation 3 (a half turn) keeps the size. */
  o.orientation = 3;
  CHECK(plan_fixture(&gpu, &whole, 120, 50, 3, o, 0, &plan) == STK_OK);
  CHECK(plan.crop.w == 120 && plan.crop.h == 50);
}

static void test_plan_random_crop(void) {
  const stk__jpeg_router gpu = {1, 1, 1.0, 3};
  const stk__decoder_params params = random_crop();
  fixture_options o = fixture_defaults();
  for (int orientation = 1; orientation <= 8; orientation += 5) { /* 1 and 6 */
    o.orientation = orientation == 1 ? 0 : orientation;
    stk__jpeg_plan plan;
    CHECK(plan_fixture(&gpu, &params, 200, 90, 3, o, 1, &plan) == STK_OK);
    int w = orientation >= 5 ? 90 : 200, h = orientation >= 5 ? 200 : 90;
    /* The CPU decoder's window for (seed, op 3, epoch 1, sample 11) of the oriented image. */
    stk__window want = stk__decoder_crop_window(&params, 3, 1, 11, w, h);
    CHECK(plan.crop.x == want.x && plan.crop.y == want.y && plan.crop.w == want.w && plan.crop.h == want.h);
    CHECK(plan.crop.x >= 0 && plan.crop.y >= 0 && plan.crop.x + plan.crop.w <= w && plan.crop.y + plan.crop.h <= h);
    CHECK(plan.crop.w > 0 && plan.crop.h > 0);
    /* The slot still has room for the whole image, whatever the window. */
    CHECK(stk__jpeg_plan_full_bytes(&gpu, &plan) == (size_t)200 * 90 * 3);
  }
}

static void expect_bad(const uint8_t *data, size_t size, const char *what) {
  const stk__jpeg_router gpu = {1, 1, 1.0, 3};
  const stk__decoder_params whole = whole_image();
  stk__jpeg_plan plan;
  err[0] = 0;
  stk_status st = stk__jpeg_plan_make(&gpu, &whole, 3, 0, 5, 0, 1, data, size, &plan, err, sizeof err);
  CHECK_MSG(st == STK_EBADIMAGE, "%s: %s", what, stk_status_name(st));
  CHECK_MSG(err[0] != 0, "%s: no message", what);
  CHECK(plan.route == STK__JPEG_ROUTE_FAILED);
}

static void test_plan_bad_headers(void) {
  size_t size;
  uint8_t *jpg = encode_sampled(120, 90, 420, &size);
  expect_bad(jpg, 0, "empty");
  expect_bad(jpg, 3, "three bytes");
  expect_bad(jpg, 120, "truncated header");
  static const uint8_t png[] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n', 0, 0, 0, 13, 'I', 'H', 'D', 'R'};
  expect_bad(png, sizeof png, "PNG");
  /* SOF0's dimensions rewritten to 60000 x 60000: refused before any decode. */
  uint8_t *bomb = (uint8_t *)malloc(size);
  memcpy(bomb, jpg, size);
  size_t sof = 0;
  for (size_t i = 2; i + 9 < size && !sof; i++)
    if (bomb[i] == 0xFF && bomb[i + 1] == 0xC0) sof = i;
  CHECK(sof > 0);
  bomb[sof + 5] = 0xEA, bomb[sof + 6] = 0x60, bomb[sof + 7] = 0xEA, bomb[sof + 8] = 0x60;
  expect_bad(bomb, size, "huge dimensions");
  /* A good header is not enough: half the entropy data missing is refused, as on the CPU
   * (tests/test_truncation_rule.c compares both over hundreds of cuts). */
  const stk__jpeg_router gpu = {1, 1, 1.0, 3};
  const stk__decoder_params whole = whole_image();
  stk__jpeg_plan plan;
  CHECK(stk__jpeg_plan_make(&gpu, &whole, 3, 0, 5, 0, 1, jpg, size / 2, &plan, err, sizeof err) == STK_EBADIMAGE);
  CHECK_MSG(strstr(err, "truncated JPEG") != NULL, "message '%s'", err);
  free(bomb);
  free(jpg);
}

/* ---- The hand-over in a stage tensor ---------------------------------------------------------- */
static void test_stage_hand_over(void) {
  const stk__jpeg_router gpu = {1, 1, 0.5, 3};
  const stk__decoder_params params = random_crop();
  size_t size;
  uint8_t *jpg = encode_sampled(150, 100, 444, &size);
  stk__jpeg_plan made, got;
  CHECK(stk__jpeg_plan_make(&gpu, &params, 2, 4, 1234, 1, 1, jpg, size, &made, err, sizeof err) == STK_OK);
  stk__tensor stage;
  memset(&stage, 0, sizeof stage);
  /* Nothing stored yet: refused, naming the sample. */
  CHECK(stk__jpeg_plan_load(&stage, 1234, &got, err, sizeof err) == STK_EINTERNAL);
  CHECK(strstr(err, "1234") != NULL);
  stk__jpeg_plan_store(&stage, &made);
  CHECK(stage.nbytes == 0 && stage.capacity == 0 && stage.data == NULL); /* no buffer needed */
  CHECK(stk__jpeg_plan_load(&stage, 1234, &got, err, sizeof err) == STK_OK);
  CHECK(memcmp(&made, &got, sizeof made) == 0);
  CHECK(got.route == STK__JPEG_ROUTE_HW && got.info.width == 150 && got.crop.w == made.crop.w);
  /* A plan left by another sample (a slot reused without its pre-stage) is refused. */
  CHECK(stk__jpeg_plan_load(&stage, 1235, &got, err, sizeof err) == STK_EINTERNAL);
  /* Pixels in the stage do not disturb the plan. */
  int64_t shape[3] = {made.crop.h, made.crop.w, 3};
  CHECK(stk__tensor_resize(&stage, STK_DTYPE_UINT8, 3, shape, "HWC") == STK_OK);
  memset(stage.data, 0xAB, stage.nbytes);
  CHECK(stk__jpeg_plan_load(&stage, 1234, &got, err, sizeof err) == STK_OK && memcmp(&made, &got, sizeof made) == 0);
  stk__tensor_free(&stage);
  free(jpg);
}

/* one STK_TEST_CASE per line: tests/CMakeLists.txt reads them */
// clang-format off
static const stk_test_case cases[] = {
    STK_TEST_CASE(test_share_by_hand),
    STK_TEST_CASE(test_share_counts),
    STK_TEST_CASE(test_load_clamp),
    STK_TEST_CASE(test_cuda_share_by_hand),
    STK_TEST_CASE(test_cuda_share_counts),
    STK_TEST_CASE(test_route_cuda_share),
    STK_TEST_CASE(test_hw_can_take),
    STK_TEST_CASE(test_route_table),
    STK_TEST_CASE(test_plan_subsampling),
    STK_TEST_CASE(test_plan_kinds),
    STK_TEST_CASE(test_plan_random_crop),
    STK_TEST_CASE(test_plan_bad_headers),
    STK_TEST_CASE(test_stage_hand_over),
};
// clang-format on

int main(int argc, char **argv) {
  if (stk_test_list_cases(cases, STK_TEST_COUNT(cases), argc, argv)) return 0;
  (void)fixture_reference; /* jpeg_fixtures.h's reference decoder is not needed here */
  return stk_test_run_cases("test_jpeg_route", cases, STK_TEST_COUNT(cases), argc, argv);
}
