/* src/ops/augment/resize/test_resize.c: the separable resampler (stk__resample_weights, stk__resize_u8*) against an
 * independent, slow, direct 2-D evaluation of the same filter definition in double, plus exact
 * cases (identity, nearest neighbour against hand-computed indices) and the output-size rules of
 * stk__resize_plan against hand-worked DALI examples. Not on any hot path. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "ops/augment/resize/resize_params.h"
#include "ops/augment/resize/resize_reference.h"
#include "case_list.h"
#include "testutil.h"

/* ---- The reference: the filter definition written out directly -------------------------- */
static double ref_kernel(stk__interp interp, double t) {
  t = fabs(t);
  if (interp == STK__INTERP_CUBIC) { /* Keys, a = -0.5 */
    if (t < 1) return 1.5 * t * t * t - 2.5 * t * t + 1;
    if (t < 2) return -0.5 * t * t * t + 2.5 * t * t - 4 * t + 2;
    return 0;
  }
  return t < 1 ? 1 - t : 0;
}

static int clampi(long v, int n) { return v < 0 ? 0 : (v >= n ? n - 1 : (int)v); }

/* Value of output pixel (ox, oy, c): sum over source pixels i, j of kx(i) * ky(j) * src(clamped),
 * divided by the sum of the weights; the scan range is generous and simply includes zeros. */
static double ref_pixel(const uint8_t *src, int w, int h, int ch, const double roi[4], int dw, int dh, int ox, int oy,
                        int c, stk__interp interp, int antialias) {
  double sx = (roi[2] - roi[0]) / dw, sy = (roi[3] - roi[1]) / dh;
  double cx = roi[0] + (ox + 0.5) * sx, cy = roi[1] + (oy + 0.5) * sy;
  if (interp == STK__INTERP_NN) {
    int i = clampi((long)floor(cx), w), j = clampi((long)floor(cy), h);
    return src[((size_t)j * w + i) * ch + c];
  }
  double base = interp == STK__INTERP_CUBIC ? 2.0 : 1.0;
  double stretch_x = (antialias && sx > 1) ? sx : 1, stretch_y = (antialias && sy > 1) ? sy : 1;
  double rx = base * stretch_x, ry = base * stretch_y;
  double num = 0, den = 0;
  for (long j = (long)floor(cy - ry) - 2; j <= (long)ceil(cy + ry) + 2; j++) {
    double ky = ref_kernel(interp, (j + 0.5 - cy) / stretch_y);
    if (ky == 0) continue;
    for (long i = (long)floor(cx - rx) - 2; i <= (long)ceil(cx + rx) + 2; i++) {
      double kx = ref_kernel(interp, (i + 0.5 - cx) / stretch_x);
      if (kx == 0) continue;
      num += kx * ky * src[((size_t)clampi(j, h) * w + clampi(i, w)) * ch + c];
      den += kx * ky;
    }
  }
  return num / den;
}

static uint8_t ref_u8(double v) {
  double r = floor(v + 0.5);
  return (uint8_t)(r < 0 ? 0 : (r > 255 ? 255 : r));
}

/* Deterministic test image with structure: gradients, a checkerboard and noise. */
static void make_image(uint8_t *img, int w, int h, int ch, unsigned seed) {
  uint32_t state = seed * 2654435761u + 1;
  for (int y = 0; y < h; y++)
    for (int x = 0; x < w; x++)
      for (int c = 0; c < ch; c++) {
        state = state * 1664525u + 1013904223u;
        int v = (x * 7 + y * 3 + c * 50) % 256;
        if (((x / 3) + (y / 2)) % 2) v = 255 - v;
        v += (int)(state >> 28) - 8;
        img[((size_t)y * w + x) * ch + c] = (uint8_t)(v < 0 ? 0 : (v > 255 ? 255 : v));
      }
}

/* Resizes with the library and compares every pixel with the reference; returns max |diff|. */
static int compare_with_reference(int w, int h, int ch, const double roi[4], int dw, int dh, stk__interp interp,
                                  int antialias, unsigned seed) {
  uint8_t *src = malloc((size_t)w * h * ch);
  uint8_t *dst = malloc((size_t)dw * dh * ch);
  make_image(src, w, h, ch, seed);
  size_t bytes = stk__resize_roi_scratch_bytes(w, h, ch, roi, dw, dh, interp, antialias);
  void *scratch = malloc(bytes);
  stk_status st = stk__resize_u8_roi(src, w, h, (size_t)w * ch, ch, roi, dst, dw, dh, interp, antialias, scratch);
  CHECK_MSG(st == STK_OK, "resize %dx%d -> %dx%d failed: %d", w, h, dw, dh, (int)st);
  int max_diff = 0;
  if (st == STK_OK)
    for (int y = 0; y < dh; y++)
      for (int x = 0; x < dw; x++)
        for (int c = 0; c < ch; c++) {
          int want = ref_u8(ref_pixel(src, w, h, ch, roi, dw, dh, x, y, c, interp, antialias));
          int got = dst[((size_t)y * dw + x) * ch + c];
          int d = abs(want - got);
          if (d > max_diff) max_diff = d;
        }
  free(src);
  free(dst);
  free(scratch);
  return max_diff;
}

static void test_against_reference(void) {
  static const struct {
    int w, h, dw, dh;
  } sizes[] = {{40, 30, 17, 11},  {40, 30, 97, 61}, {23, 37, 23, 37}, {64, 48, 13, 40}, {7, 5, 50, 3},
               {100, 80, 24, 24}, {1, 9, 4, 4},     {33, 1, 10, 3},   {300, 200, 7, 5}};
  const stk__interp interps[] = {STK__INTERP_NN, STK__INTERP_LINEAR, STK__INTERP_CUBIC};
  for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
    for (int k = 0; k < 3; k++)
      for (int aa = 0; aa <= 1; aa++)
        for (int ch = 1; ch <= 4; ch += (ch == 1 ? 2 : 1)) {
          double roi[4] = {0, 0, sizes[s].w, sizes[s].h};
          int d = compare_with_reference(sizes[s].w, sizes[s].h, ch, roi, sizes[s].dw, sizes[s].dh, interps[k], aa,
                                         (unsigned)(s * 10 + k));
          CHECK_MSG(d <= 1, "%dx%dx%d -> %dx%d interp %d antialias %d: max diff %d", sizes[s].w, sizes[s].h, ch,
                    sizes[s].dw, sizes[s].dh, (int)interps[k], aa, d);
        }
  /* Regions of interest, fractional ones included (random_resized_crop and subpixel_scale). */
  const double rois[][4] = {{5, 3, 25, 20}, {0.3, 1.7, 38.2, 29.9}, {10, 10, 11, 12}, {-2.5, 0, 41.5, 30}};
  for (size_t r = 0; r < sizeof rois / sizeof rois[0]; r++)
    for (int k = 0; k < 3; k++) {
      int d = compare_with_reference(40, 30, 3, rois[r], 16, 9, interps[k], 1, 99);
      CHECK_MSG(d <= 1, "roi %zu interp %d down: max diff %d", r, k, d);
      d = compare_with_reference(40, 30, 3, rois[r], 77, 45, interps[k], 1, 98);
      CHECK_MSG(d <= 1, "roi %zu interp %d up: max diff %d", r, k, d);
    }
}

static void test_identity_exact(void) {
  const int w = 37, h = 29, ch = 3;
  uint8_t src[37 * 29 * 3], dst[37 * 29 * 3];
  make_image(src, w, h, ch, 5);
  stk__window roi = {0, 0, w, h};
  const stk__interp interps[] = {STK__INTERP_NN, STK__INTERP_LINEAR, STK__INTERP_CUBIC};
  for (int k = 0; k < 3; k++) {
    void *scratch = malloc(stk__resize_scratch_bytes(w, h, ch, roi, w, h, interps[k], 1));
    CHECK(stk__resize_u8(src, w, h, (size_t)w * ch, ch, roi, dst, w, h, interps[k], 1, scratch) == STK_OK);
    CHECK_MSG(memcmp(src, dst, sizeof src) == 0, "identity resize with interp %d changed pixels", k);
    free(scratch);
  }
  /* An integer window at scale 1 is an exact crop; a padded row stride is honoured. */
  const size_t stride = (size_t)w * ch + 13;
  uint8_t *padded = calloc(stride * h, 1);
  for (int y = 0; y < h; y++) memcpy(padded + y * stride, src + (size_t)y * w * ch, (size_t)w * ch);
  stk__window crop = {4, 6, 20, 15};
  uint8_t out[20 * 15 * 3];
  void *scratch = malloc(stk__resize_scratch_bytes(w, h, ch, crop, 20, 15, STK__INTERP_LINEAR, 1));
  CHECK(stk__resize_u8(padded, w, h, stride, ch, crop, out, 20, 15, STK__INTERP_LINEAR, 1, scratch) == STK_OK);
  int same = 1;
  for (int y = 0; y < 15; y++)
    for (int x = 0; x < 20 * ch; x++)
      if (out[(size_t)y * 20 * ch + x] != src[(size_t)(y + 6) * w * ch + 4 * ch + x]) same = 0;
  CHECK_MSG(same, "scale-1 window resize is not an exact crop");
  free(scratch);
  free(padded);
}

static void test_nearest_hand_computed(void) {
  /* 8 -> 3: scale 8/3, centres at 4/3, 4, 20/3 -> pixels 1, 4, 6.
   * 3 -> 7: scale 3/7, centres (o + 0.5) * 3/7 -> floor = 0, 0, 1, 1, 1, 2, 2. */
  uint8_t src[8 * 3];
  for (int y = 0; y < 3; y++)
    for (int x = 0; x < 8; x++) src[y * 8 + x] = (uint8_t)(10 * y + x);
  uint8_t dst[3 * 7];
  stk__window roi = {0, 0, 8, 3};
  void *scratch = malloc(stk__resize_scratch_bytes(8, 3, 1, roi, 3, 7, STK__INTERP_NN, 1));
  CHECK(stk__resize_u8(src, 8, 3, 8, 1, roi, dst, 3, 7, STK__INTERP_NN, 1, scratch) == STK_OK);
  const int xs[3] = {1, 4, 6}, ys[7] = {0, 0, 1, 1, 1, 2, 2};
  for (int y = 0; y < 7; y++)
    for (int x = 0; x < 3; x++)
      CHECK_MSG(dst[y * 3 + x] == 10 * ys[y] + xs[x], "NN (%d,%d) = %d, want %d", x, y, dst[y * 3 + x],
                10 * ys[y] + xs[x]);
  free(scratch);
}

static void test_weights_invariants(void) {
  /* Every table: indices in range, weights sum to 1, tap count within the reported maximum. */
  const stk__interp interps[] = {STK__INTERP_NN, STK__INTERP_LINEAR, STK__INTERP_CUBIC};
  for (int k = 0; k < 3; k++)
    for (int in = 1; in <= 60; in += 7)
      for (int out = 1; out <= 70; out += 9)
        for (int aa = 0; aa <= 1; aa++) {
          int max_taps = stk__resample_max_taps(in, out, 0, in, interps[k], aa);
          int32_t first[70];
          float *w = malloc(sizeof(float) * 70 * (size_t)max_taps);
          int taps = stk__resample_weights(in, out, 0, in, interps[k], aa, first, w);
          CHECK(taps >= 1 && taps <= max_taps && taps <= in);
          for (int o = 0; o < out; o++) {
            double sum = 0;
            for (int t = 0; t < taps; t++) sum += w[o * taps + t];
            CHECK_MSG(fabs(sum - 1) < 1e-5, "in %d out %d interp %d: weights sum %f", in, out, k, sum);
            CHECK(first[o] >= 0 && first[o] + taps <= in);
          }
          free(w);
        }
  /* Antialiasing widens the filter by the scale: 2x linear downscale -> 4 taps (weights
   * 1/8, 3/8, 3/8, 1/8 for an interior pixel); without antialias 2 taps of 1/2. */
  int32_t first[8];
  float w[32];
  CHECK(stk__resample_weights(16, 8, 0, 16, STK__INTERP_LINEAR, 1, first, w) == 4);
  CHECK(first[3] == 5 && fabsf(w[12] - 0.125f) < 1e-6f && fabsf(w[13] - 0.375f) < 1e-6f &&
        fabsf(w[14] - 0.375f) < 1e-6f && fabsf(w[15] - 0.125f) < 1e-6f);
  CHECK(stk__resample_weights(16, 8, 0, 16, STK__INTERP_LINEAR, 0, first, w) == 2);
  CHECK(first[3] == 6 && fabsf(w[6] - 0.5f) < 1e-6f && fabsf(w[7] - 0.5f) < 1e-6f);
}

/* stk__resize_fixed_size: a size only where stk__resize_plan gives that size to every image (the GPU
 * operators then size their output storage exactly, with nothing for a larger batch); 0 where the
 * image's own size or aspect ratio moves it. */
static void test_fixed_size(void) {
  static const int sizes[][2] = {{1, 1}, {500, 375}, {375, 500}, {224, 224}, {4000, 3}, {3, 4000}, {1920, 1080}};
  stk__resize_params p = {0};
  int fw = -1, fh = -1, ow, oh;
  double roi[4];
  p.resize_x = 224.4; /* rounded as resize_plan rounds */
  p.resize_y = 160;
  for (int mode = STK__RESIZE_DEFAULT; mode <= STK__RESIZE_STRETCH; mode++) {
    p.mode = (stk__resize_mode)mode;
    for (int cap = 0; cap < 2; cap++) {
      p.max_size_x = cap ? 100 : 0; /* stretched: each extent capped alone */
      CHECK(stk__resize_fixed_size(&p, &fw, &fh) == 1);
      CHECK(fw == (cap ? 100 : 224) && fh == 160);
      for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        CHECK(stk__resize_plan(&p, sizes[i][0], sizes[i][1], &ow, &oh, roi) == STK_OK);
        CHECK_MSG(ow == fw && oh == fh, "%dx%d -> %dx%d, fixed %dx%d", sizes[i][0], sizes[i][1], ow, oh, fw, fh);
      }
    }
  }
  p.max_size_x = 0;
  /* The image moves the size: fitted modes, one extent, shorter or longer side, no size at all. */
  stk__resize_params q = p;
  q.mode = STK__RESIZE_NOT_LARGER;
  CHECK(stk__resize_fixed_size(&q, &fw, &fh) == 0);
  q.mode = STK__RESIZE_NOT_SMALLER;
  CHECK(stk__resize_fixed_size(&q, &fw, &fh) == 0);
  q = p;
  q.resize_y = 0;
  CHECK(stk__resize_fixed_size(&q, &fw, &fh) == 0);
  q = p;
  q.resize_shorter = 256;
  CHECK(stk__resize_fixed_size(&q, &fw, &fh) == 0);
  q = p;
  q.resize_longer = 256;
  CHECK(stk__resize_fixed_size(&q, &fw, &fh) == 0);
  stk__resize_params none = {0};
  CHECK(stk__resize_fixed_size(&none, &fw, &fh) == 0);
  /* A size past the output bounds is no size (resize_plan refuses it). */
  q = p;
  q.resize_x = q.resize_y = STK__OUTPUT_MAX_SIDE;
  CHECK(stk__resize_fixed_size(&q, &fw, &fh) == 0);
}

static void test_plan(void) {
  stk__resize_params p = {0};
  int ow, oh;
  double roi[4];
  /* resize_shorter=256 on 500x375: 341.33 x 256 -> 341 x 256; subpixel keeps the scale 256/375. */
  p.resize_shorter = 256;
  p.subpixel_scale = 1;
  CHECK(stk__resize_plan(&p, 500, 375, &ow, &oh, roi) == STK_OK);
  CHECK(ow == 341 && oh == 256);
  CHECK(fabs((roi[2] - roi[0]) - 500.0 * 341.0 / (500.0 * 256.0 / 375.0)) < 1e-9 && fabs(roi[1]) < 1e-12 &&
        fabs(roi[0] + roi[2] - 500.0) < 1e-9);
  p.subpixel_scale = 0;
  CHECK(stk__resize_plan(&p, 500, 375, &ow, &oh, roi) == STK_OK);
  CHECK(roi[0] == 0 && roi[2] == 500 && roi[3] == 375);
  /* Portrait, with max_size capping the longer side (aspect kept). */
  p.max_size_x = p.max_size_y = 300;
  CHECK(stk__resize_plan(&p, 375, 500, &ow, &oh, roi) == STK_OK);
  CHECK(ow == 225 && oh == 300);
  /* resize_longer=640 on 1280x720 -> 640x360 (not_larger). */
  stk__resize_params q = {0};
  q.resize_longer = 640;
  CHECK(stk__resize_plan(&q, 1280, 720, &ow, &oh, roi) == STK_OK && ow == 640 && oh == 360);
  /* Explicit sizes: default = exact; not_larger/not_smaller fit; one extent keeps the aspect
   * ratio except in stretch mode. */
  stk__resize_params r = {0};
  r.resize_x = 640;
  r.resize_y = 640;
  CHECK(stk__resize_plan(&r, 1280, 720, &ow, &oh, roi) == STK_OK && ow == 640 && oh == 640);
  r.mode = STK__RESIZE_NOT_LARGER;
  CHECK(stk__resize_plan(&r, 1280, 720, &ow, &oh, roi) == STK_OK && ow == 640 && oh == 360);
  r.mode = STK__RESIZE_NOT_SMALLER;
  CHECK(stk__resize_plan(&r, 1280, 720, &ow, &oh, roi) == STK_OK && ow == 1138 && oh == 640);
  r.resize_y = 0;
  r.mode = STK__RESIZE_DEFAULT;
  CHECK(stk__resize_plan(&r, 1280, 720, &ow, &oh, roi) == STK_OK && ow == 640 && oh == 360);
  r.mode = STK__RESIZE_STRETCH;
  CHECK(stk__resize_plan(&r, 1280, 720, &ow, &oh, roi) == STK_OK && ow == 640 && oh == 720);
  /* Nothing given: same size. Bad input: error, no crash. */
  stk__resize_params none = {0};
  CHECK(stk__resize_plan(&none, 33, 44, &ow, &oh, roi) == STK_OK && ow == 33 && oh == 44);
  CHECK(stk__resize_plan(&none, 0, 44, &ow, &oh, roi) == STK_EINVAL);
  stk__resize_params huge = {0};
  huge.resize_shorter = 1e9;
  CHECK(stk__resize_plan(&huge, 10, 10, &ow, &oh, roi) == STK_EINVAL);
  stk__resize_mode m;
  CHECK(stk__resize_mode_parse("not_smaller", &m) == STK_OK && m == STK__RESIZE_NOT_SMALLER);
  CHECK(stk__resize_mode_parse("bigger", &m) == STK_EINVAL);
  stk__interp in;
  CHECK(stk__interp_parse("INTERP_CUBIC", &in) == STK_OK && in == STK__INTERP_CUBIC);
  CHECK(stk__interp_parse("nearest", &in) == STK_OK && in == STK__INTERP_NN);
  CHECK(stk__interp_parse("linear", &in) == STK_OK && in == STK__INTERP_LINEAR);
  CHECK(stk__interp_parse("bicubic", &in) == STK_EINVAL);
}

static void test_bad_arguments(void) {
  uint8_t src[16] = {0}, dst[16];
  char scratch[4096];
  stk__window roi = {0, 0, 4, 4};
  CHECK(stk__resize_u8(NULL, 4, 4, 4, 1, roi, dst, 2, 2, STK__INTERP_LINEAR, 1, scratch) == STK_EINVAL);
  CHECK(stk__resize_u8(src, 4, 4, 4, 1, roi, dst, 0, 2, STK__INTERP_LINEAR, 1, scratch) == STK_EINVAL);
  CHECK(stk__resize_u8(src, 4, 4, 2, 1, roi, dst, 2, 2, STK__INTERP_LINEAR, 1, scratch) == STK_EINVAL);
  stk__window empty = {1, 1, 0, 2};
  CHECK(stk__resize_u8(src, 4, 4, 4, 1, empty, dst, 2, 2, STK__INTERP_LINEAR, 1, scratch) == STK_EINVAL);
}

/* one STK_TEST_CASE per line: tests/CMakeLists.txt reads them */
// clang-format off
static const stk_test_case cases[] = {
    STK_TEST_CASE(test_weights_invariants),
    STK_TEST_CASE(test_identity_exact),
    STK_TEST_CASE(test_nearest_hand_computed),
    STK_TEST_CASE(test_against_reference),
    STK_TEST_CASE(test_plan),
    STK_TEST_CASE(test_fixed_size),
    STK_TEST_CASE(test_bad_arguments),
};
// clang-format on

int main(int argc, char **argv) {
  if (stk_test_list_cases(cases, STK_TEST_COUNT(cases), argc, argv)) return 0;
  return stk_test_run_cases("test_resize", cases, STK_TEST_COUNT(cases), argc, argv);
}
