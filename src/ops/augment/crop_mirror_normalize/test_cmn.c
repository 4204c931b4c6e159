/* src/ops/augment/crop_mirror_normalize/test_cmn.c: crop_mirror_normalize (stk__crop_mirror_normalize[_ex]) exactly against a naive
 * per-element loop for every layout, dtype, pad_output, mirror, channel count and in/out-of-bounds
 * crops; the float16 conversion against known values and exhaustively against an independent
 * decoder (every half round-trips, every midpoint rounds to even); DALI's crop placement rounding.
 * Not on any hot path. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "ops/augment/crop_mirror_normalize/cmn_reference.h"
#include "ops/common/dtype.h"
#include "case_list.h"
#include "testutil.h"

/* Independent half -> float decoder (exact). */
static double half_to_double(uint16_t h) {
  int sign = h >> 15, exponent = (h >> 10) & 0x1f, mantissa = h & 0x3ff;
  double v;
  if (exponent == 0) v = ldexp(mantissa, -24);
  else if (exponent == 31) v = mantissa ? NAN : INFINITY;
  else v = ldexp(1024 + mantissa, exponent - 25);
  return sign ? -v : v;
}

static void test_float16(void) {
  static const struct {
    float value;
    uint16_t bits;
  } known[] = {
      {0.0f, 0x0000},           {-0.0f, 0x8000},       {1.0f, 0x3c00},           {-2.0f, 0xc000}, {0.5f, 0x3800},
      {65504.0f, 0x7bff},       {65519.0f, 0x7bff},    {65520.0f, 0x7c00},       {1e9f, 0x7c00},  {-1e9f, 0xfc00},
      {0.1f, 0x2e66},           {0.33333334f, 0x3555}, {6.1035156e-05f, 0x0400}, /* 2^-14, smallest normal */
      {5.9604645e-08f, 0x0001},                                                  /* 2^-24, smallest subnormal */
      {2.9802322e-08f, 0x0000},                                                  /* 2^-25: tie -> even (0) */
      {4.4703484e-08f, 0x0001},                                                  /* 1.5 * 2^-25 */
      {1.00048828125f, 0x3c00},                                                  /* 1 + 2^-11: tie -> even */
      {1.00146484375f, 0x3c02},                                                  /* 1 + 3 * 2^-11: tie -> even (up) */
      {-2.1171875f, 0xc03c},                                                     /* exactly representable */
  };
  for (size_t i = 0; i < sizeof known / sizeof known[0]; i++) {
    uint16_t got = stk__float_to_half(known[i].value);
    CHECK_MSG(got == known[i].bits, "half(%.10g) = 0x%04x, want 0x%04x", known[i].value, got, known[i].bits);
  }
  CHECK(stk__float_to_half(INFINITY) == 0x7c00 && stk__float_to_half(-INFINITY) == 0xfc00);
  uint16_t nan_bits = stk__float_to_half(NAN);
  CHECK((nan_bits & 0x7c00) == 0x7c00 && (nan_bits & 0x3ff) != 0);
  /* Every finite half round-trips; the midpoint of each neighbouring pair rounds to the even one,
   * and points just off the midpoint round to the nearer one. */
  int bad_roundtrip = 0, bad_midpoint = 0;
  for (uint32_t h = 0; h < 0x7c00; h++) {
    for (int s = 0; s <= 1; s++) {
      uint16_t bits = (uint16_t)(h | (s ? 0x8000u : 0u));
      float f = (float)half_to_double(bits);
      if (stk__float_to_half(f) != bits) bad_roundtrip++;
    }
    if (h + 1 < 0x7c00) {
      double lo = half_to_double((uint16_t)h), hi = half_to_double((uint16_t)(h + 1));
      float mid = (float)((lo + hi) / 2); /* exact in float: halves have 11 significant bits */
      uint16_t even = (h & 1) ? (uint16_t)(h + 1) : (uint16_t)h;
      if (stk__float_to_half(mid) != even) bad_midpoint++;
      float below = nextafterf(mid, -1.0f), above = nextafterf(mid, 1e30f);
      if (h > 0 && stk__float_to_half(below) != h) bad_midpoint++;
      if (stk__float_to_half(above) != h + 1) bad_midpoint++;
    }
  }
  CHECK_MSG(bad_roundtrip == 0, "%d halves do not round-trip", bad_roundtrip);
  CHECK_MSG(bad_midpoint == 0, "%d midpoint roundings wrong", bad_midpoint);
}

static uint8_t naive_u8(float v) {
  float r = floorf(v + 0.5f);
  return (uint8_t)(r < 0 ? 0 : (r > 255 ? 255 : (int)r));
}

/* The definition, one output element at a time. */
static void naive_cmn(const uint8_t *src, int w, int h, size_t stride, int ch, int cx, int cy, int cw, int chh,
                      int mirror, const float *mean, const float *inv_std, float shift, const float *fill, int chw,
                      stk_dtype dtype, int pad, void *dst) {
  int oc = ch + pad;
  for (int y = 0; y < chh; y++)
    for (int x = 0; x < cw; x++)
      for (int c = 0; c < oc; c++) {
        int sx = mirror ? cx + cw - 1 - x : cx + x, sy = cy + y;
        float v;
        if (c >= ch || sx < 0 || sy < 0 || sx >= w || sy >= h) v = fill ? fill[c] : 0.0f;
        else {
          float diff = (float)src[(size_t)sy * stride + (size_t)sx * ch + c] - mean[c];
          float scaled = diff * inv_std[c];
          v = scaled + shift;
        }
        size_t idx = chw ? (size_t)c * cw * chh + (size_t)y * cw + x : ((size_t)y * cw + x) * oc + c;
        if (dtype == STK_DTYPE_FLOAT32) ((float *)dst)[idx] = v;
        else if (dtype == STK_DTYPE_FLOAT16) ((uint16_t *)dst)[idx] = stk__float_to_half(v);
        else ((uint8_t *)dst)[idx] = naive_u8(v);
      }
}

static void test_cmn_exact(void) {
  const int w = 23, h = 17;
  const size_t stride_extra = 5;
  static const int crops[][4] = {/* x, y, w, h */
                                 {0, 0, 23, 17},
                                 {3, 2, 10, 9},
                                 {13, 8, 10, 9},
                                 {0, 0, 1, 1},
                                 /* out of bounds on every side (pad policy) */
                                 {-4, -3, 12, 8},
                                 {18, 12, 9, 9},
                                 {-2, -1, 27, 20},
                                 {30, 0, 4, 4}};
  const stk_dtype dtypes[] = {STK_DTYPE_FLOAT32, STK_DTYPE_FLOAT16, STK_DTYPE_UINT8};
  const float mean[4] = {123.675f, 116.28f, 103.53f, 77.0f};
  const float std[4] = {58.395f, 57.12f, 57.375f, 10.0f};
  float inv_std[4];
  for (int c = 0; c < 4; c++) inv_std[c] = 1.0f / std[c];
  const float unit_mean[4] = {0, 0, 0, 0}, unit_inv[4] = {1, 1, 1, 1};
  const float fill[5] = {-1.5f, 2.25f, 300.0f, 7.0f, 9.5f};
  uint32_t state = 7;
  for (int ch = 1; ch <= 4; ch++) {
    size_t stride = (size_t)w * ch + stride_extra;
    uint8_t *src = malloc(stride * h);
    for (size_t i = 0; i < stride * h; i++) {
      state = state * 1664525u + 1013904223u;
      src[i] = (uint8_t)(state >> 24);
    }
    for (size_t k = 0; k < sizeof crops / sizeof crops[0]; k++)
      for (int di = 0; di < 3; di++)
        for (int chw = 0; chw <= 1; chw++)
          for (int pad = 0; pad <= 1; pad++)
            for (int mirror = 0; mirror <= 1; mirror++)
              for (int variant = 0; variant < 3; variant++) {
                int cx = crops[k][0], cy = crops[k][1], cw = crops[k][2], chh = crops[k][3];
                int eff_pad = (pad && ch == 3) ? 1 : 0;
                size_t bytes = (size_t)cw * chh * (ch + eff_pad) * stk_dtype_size(dtypes[di]);
                unsigned char *got = malloc(bytes + 16), *want = malloc(bytes + 16);
                memset(got, 0xAB, bytes + 16);
                memset(want, 0xAB, bytes + 16);
                /* variant 0: ImageNet normalisation via the contract function; 1: identity
                 * (uint8 crop); 2: _ex with shift and fill values. */
                const float *m = variant == 1 ? unit_mean : mean, *s = variant == 1 ? unit_inv : inv_std;
                float shift = variant == 2 ? 0.75f : 0.0f;
                const float *f = variant == 2 ? fill : NULL;
                stk__out_layout layout = chw ? STK__LAYOUT_CHW : STK__LAYOUT_HWC;
                stk_status st;
                if (variant == 2)
                  st = stk__crop_mirror_normalize_ex(src, w, h, stride, ch, cx, cy, cw, chh, mirror, m, s, shift, f,
                                                     layout, dtypes[di], pad, got);
                else
                  st = stk__crop_mirror_normalize(src, w, h, stride, ch, cx, cy, cw, chh, mirror, m, s, layout,
                                                  dtypes[di], pad, got);
                naive_cmn(src, w, h, stride, ch, cx, cy, cw, chh, mirror, m, s, shift, f, chw, dtypes[di], eff_pad,
                          want);
                CHECK(st == STK_OK);
                CHECK_MSG(memcmp(got, want, bytes + 16) == 0,
                          "ch %d crop %zu dtype %s %s pad %d mirror %d variant %d differs from the naive loop", ch, k,
                          stk_dtype_name(dtypes[di]), chw ? "CHW" : "HWC", pad, mirror, variant);
                free(got);
                free(want);
              }
    free(src);
  }
}

static void test_cmn_values_and_errors(void) {
  /* A 2x1 RGB image, mirrored, CHW float: hand-computed. */
  const uint8_t src[6] = {10, 20, 30, 40, 50, 60};
  const float mean[3] = {10, 20, 30}, inv[3] = {0.5f, 0.25f, 2.0f};
  float out[6];
  CHECK(stk__crop_mirror_normalize(src, 2, 1, 6, 3, 0, 0, 2, 1, 1, mean, inv, STK__LAYOUT_CHW, STK_DTYPE_FLOAT32, 0,
                                   out) == STK_OK);
  const float want[6] = {15.0f, 0.0f, 7.5f, 0.0f, 60.0f, 0.0f};
  CHECK(memcmp(out, want, sizeof want) == 0);
  /* uint8 output rounds half up and clamps. */
  const uint8_t px[3] = {0, 100, 255};
  const float half_below[3] = {0, -0.5f, 0}, gains[3] = {1.0f, 1.0f, 2.0f};
  uint8_t u8[3];
  CHECK(stk__crop_mirror_normalize(px, 1, 1, 3, 3, 0, 0, 1, 1, 0, half_below, gains, STK__LAYOUT_HWC, STK_DTYPE_UINT8,
                                   0, u8) == STK_OK);
  CHECK(u8[0] == 0 && u8[1] == 101 && u8[2] == 255);
  const float minus[3] = {200, 0, 0};
  CHECK(stk__crop_mirror_normalize(px, 1, 1, 3, 3, 0, 0, 1, 1, 0, minus, gains, STK__LAYOUT_HWC, STK_DTYPE_UINT8, 0,
                                   u8) == STK_OK);
  CHECK(u8[0] == 0);
  /* Bad arguments are errors, not crashes. */
  CHECK(stk__crop_mirror_normalize(NULL, 2, 1, 6, 3, 0, 0, 2, 1, 0, mean, inv, STK__LAYOUT_CHW, STK_DTYPE_FLOAT32, 0,
                                   out) == STK_EINVAL);
  CHECK(stk__crop_mirror_normalize(src, 2, 1, 6, 3, 0, 0, 0, 1, 0, mean, inv, STK__LAYOUT_CHW, STK_DTYPE_FLOAT32, 0,
                                   out) == STK_EINVAL);
  CHECK(stk__crop_mirror_normalize(src, 2, 1, 6, 5, 0, 0, 1, 1, 0, mean, inv, STK__LAYOUT_CHW, STK_DTYPE_FLOAT32, 0,
                                   out) == STK_EINVAL);
  CHECK(stk__crop_mirror_normalize(src, 2, 1, 6, 3, 0, 0, 1, 1, 0, mean, inv, STK__LAYOUT_CHW, STK_DTYPE_INT64, 0,
                                   out) == STK_ENOTSUP);
}

static void test_crop_start(void) {
  /* DALI: start = floor(pos * (in - crop) + 0.5). */
  CHECK(stk__crop_start(0.5, 256, 224) == 16);
  CHECK(stk__crop_start(0.5, 257, 224) == 17); /* 16.5 rounds up */
  CHECK(stk__crop_start(0.5, 255, 224) == 16); /* 15.5 rounds up */
  CHECK(stk__crop_start(0.0, 300, 224) == 0);
  CHECK(stk__crop_start(1.0, 300, 224) == 76);
  CHECK(stk__crop_start(0.3, 100, 50) == 15);
  CHECK(stk__crop_start(0.5, 200, 224) == -12); /* larger crop: centred, out of bounds */
}

/* one STK_TEST_CASE per line: tests/CMakeLists.txt reads them */
// clang-format off
static const stk_test_case cases[] = {
    STK_TEST_CASE(test_float16),
    STK_TEST_CASE(test_cmn_exact),
    STK_TEST_CASE(test_cmn_values_and_errors),
    STK_TEST_CASE(test_crop_start),
};
// clang-format on

int main(int argc, char **argv) {
  if (stk_test_list_cases(cases, STK_TEST_COUNT(cases), argc, argv)) return 0;
  return stk_test_run_cases("test_cmn", cases, STK_TEST_COUNT(cases), argc, argv);
}
