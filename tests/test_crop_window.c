/* tests/test_crop_window.c: the random_resized_crop window generator (stk__random_crop_window)
 * against its definition: 20k windows, histograms of the area fraction and of the log aspect
 * ratio compared (chi-square) with the densities the definition implies, the placement uniform,
 * the fallback on extreme aspect ratios worked by hand, windows always inside the image, and the
 * draw deterministic in (seed, operator id, epoch, sample). Not on any hot path. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "ops/common/image.h"
#include "case_list.h"
#include "testutil.h"

#define SAMPLES 20000
#define BINS    20
/* 19 degrees of freedom: P(chi2 > 45) ~ 7e-4 for a correct generator. The draws are
 * deterministic, so the test cannot flake; a wrong distribution gives values in the hundreds. */
#define CHI2_BOUND 45.0

static stk__window draw(uint64_t seed, int64_t sample, int w, int h, double a0, double a1, double r0, double r1,
                        int attempts) {
  stk__rng rng;
  stk__rng_init(&rng, seed, 3, 0, sample);
  return stk__random_crop_window(&rng, w, h, a0, a1, r0, r1, attempts);
}

/* Probability mass of density(x) over [lo, hi], Simpson's rule. */
static double integrate(double (*density)(double, const double *), const double *p, double lo, double hi) {
  const int n = 2000;
  double step = (hi - lo) / n, sum = density(lo, p) + density(hi, p);
  for (int i = 1; i < n; i++) sum += density(lo + i * step, p) * (i % 2 ? 4 : 2);
  return sum * step / 3;
}

static double chi_square(const int *counts, double (*density)(double, const double *), const double *p, double lo,
                         double hi) {
  double total_mass = integrate(density, p, lo, hi), chi2 = 0;
  double width = (hi - lo) / BINS;
  for (int b = 0; b < BINS; b++) {
    double expected = SAMPLES * integrate(density, p, lo + b * width, lo + (b + 1) * width) / total_mass;
    chi2 += (counts[b] - expected) * (counts[b] - expected) / expected;
  }
  return chi2;
}

static void histogram_add(int *counts, double value, double lo, double hi) {
  int b = (int)floor((value - lo) / (hi - lo) * BINS);
  if (b < 0) b = 0;
  if (b >= BINS) b = BINS - 1;
  counts[b]++;
}

static double uniform_density(double x, const double *p) { return 1.0; }

/* Square image, area ~ U[a0, 1], log ratio ~ U[-L, L]: a try fits iff |log ratio| <= -log(area),
 * so the first fitting try has area density ~ min(1, -log(a) / L) and log-ratio density
 * ~ exp(-|l|) - a0 (p = {a0, L}). */
static double square_area_density(double a, const double *p) {
  double f = -log(a) / p[1];
  return f < 1 ? f : 1;
}
static double square_log_ratio_density(double l, const double *p) { return exp(-fabs(l)) - p[0]; }

static void test_distribution_always_fits(void) {
  /* 640x480 with area in [0.08, 0.5]: every try fits, so area and log ratio are plainly uniform. */
  const int W = 640, H = 480;
  const double a0 = 0.08, a1 = 0.5, r0 = 3.0 / 4.0, r1 = 4.0 / 3.0;
  int area_counts[BINS] = {0}, ratio_counts[BINS] = {0}, x_counts[BINS] = {0}, y_counts[BINS] = {0};
  for (int i = 0; i < SAMPLES; i++) {
    stk__window win = draw(1234, i, W, H, a0, a1, r0, r1, 10);
    histogram_add(area_counts, (double)win.w * win.h / (W * H), a0, a1);
    histogram_add(ratio_counts, log((double)win.w / win.h), log(r0), log(r1));
    histogram_add(x_counts, (win.x + 0.5) / (W - win.w + 1), 0, 1);
    histogram_add(y_counts, (win.y + 0.5) / (H - win.h + 1), 0, 1);
  }
  double chi_area = chi_square(area_counts, uniform_density, NULL, a0, a1);
  double chi_ratio = chi_square(ratio_counts, uniform_density, NULL, log(r0), log(r1));
  double chi_x = chi_square(x_counts, uniform_density, NULL, 0, 1);
  double chi_y = chi_square(y_counts, uniform_density, NULL, 0, 1);
  printf("always-fits: chi2 area %.1f, log ratio %.1f, x %.1f, y %.1f (bound %.0f)\n", chi_area, chi_ratio, chi_x,
         chi_y, CHI2_BOUND);
  CHECK_MSG(chi_area < CHI2_BOUND, "area fraction not uniform: chi2 %.1f", chi_area);
  CHECK_MSG(chi_ratio < CHI2_BOUND, "log aspect ratio not uniform: chi2 %.1f", chi_ratio);
  CHECK_MSG(chi_x < CHI2_BOUND, "x placement not uniform: chi2 %.1f", chi_x);
  CHECK_MSG(chi_y < CHI2_BOUND, "y placement not uniform: chi2 %.1f", chi_y);
}

static void test_distribution_defaults(void) {
  /* DALI's defaults on a large square image: tries that do not fit are redrawn. */
  const int S = 4000;
  const double a0 = 0.08, a1 = 1.0, r0 = 3.0 / 4.0, r1 = 4.0 / 3.0, L = log(4.0 / 3.0);
  const double params[2] = {a0, L};
  int area_counts[BINS] = {0}, ratio_counts[BINS] = {0};
  for (int i = 0; i < SAMPLES; i++) {
    stk__window win = draw(99, i, S, S, a0, a1, r0, r1, 10);
    CHECK(win.x >= 0 && win.y >= 0 && win.x + win.w <= S && win.y + win.h <= S);
    histogram_add(area_counts, (double)win.w * win.h / ((double)S * S), a0, a1);
    histogram_add(ratio_counts, log((double)win.w / win.h), -L, L);
  }
  double chi_area = chi_square(area_counts, square_area_density, params, a0, a1);
  double chi_ratio = chi_square(ratio_counts, square_log_ratio_density, params, -L, L);
  printf("defaults: chi2 area %.1f, log ratio %.1f (bound %.0f)\n", chi_area, chi_ratio, CHI2_BOUND);
  CHECK_MSG(chi_area < CHI2_BOUND, "area fraction histogram off the definition: chi2 %.1f", chi_area);
  CHECK_MSG(chi_ratio < CHI2_BOUND, "log aspect histogram off the definition: chi2 %.1f", chi_ratio);
  /* Sanity of the check itself: a plain uniform area would be rejected (the tail above 0.75 is
   * thinned by the fit test). */
  double chi_uniform = chi_square(area_counts, uniform_density, NULL, a0, a1);
  CHECK_MSG(chi_uniform > CHI2_BOUND, "the chi-square check cannot tell the densities apart (%.1f)", chi_uniform);
}

static void test_fallback(void) {
  /* 4000x100 (ratio 40): every try is too tall -> central crop with ratio 4/3: h 100,
   * w round(133.33) = 133, x (4000 - 133) / 2 = 1933. */
  stk__window win = draw(5, 0, 4000, 100, 0.08, 1.0, 0.75, 4.0 / 3.0, 10);
  CHECK_MSG(win.x == 1933 && win.y == 0 && win.w == 133 && win.h == 100, "wide fallback %d,%d %dx%d", win.x, win.y,
            win.w, win.h);
  /* Tall 100x4000: w 100, h round(100 / 0.75) = 133, y 1933. */
  win = draw(5, 1, 100, 4000, 0.08, 1.0, 0.75, 4.0 / 3.0, 10);
  CHECK_MSG(win.x == 0 && win.y == 1933 && win.w == 100 && win.h == 133, "tall fallback %d,%d %dx%d", win.x, win.y,
            win.w, win.h);
  /* No attempts: the whole image when its ratio is in range, else clamped (600x375 -> 500x375). */
  win = draw(5, 2, 500, 375, 0.08, 1.0, 0.75, 4.0 / 3.0, 0);
  CHECK(win.x == 0 && win.y == 0 && win.w == 500 && win.h == 375);
  win = draw(5, 3, 600, 375, 0.08, 1.0, 0.75, 4.0 / 3.0, 0);
  CHECK(win.x == 50 && win.y == 0 && win.w == 500 && win.h == 375);
  /* Tiny images: 1x1 and 1x7 stay valid. */
  win = draw(5, 4, 1, 1, 0.08, 1.0, 0.75, 4.0 / 3.0, 10);
  CHECK(win.x == 0 && win.y == 0 && win.w == 1 && win.h == 1);
  win = draw(5, 5, 1, 7, 0.08, 1.0, 0.75, 4.0 / 3.0, 10);
  CHECK(win.w >= 1 && win.h >= 1 && win.x + win.w <= 1 && win.y >= 0 && win.y + win.h <= 7);
}

static void test_inside_and_deterministic(void) {
  uint32_t state = 17;
  int outside = 0;
  for (int i = 0; i < 20000; i++) {
    state = state * 1664525u + 1013904223u;
    int w = 1 + (int)(state >> 21) % 3000;
    state = state * 1664525u + 1013904223u;
    int h = 1 + (int)(state >> 21) % 3000;
    stk__window win = draw(7, i, w, h, 0.08, 1.0, 0.75, 4.0 / 3.0, 10);
    if (win.w < 1 || win.h < 1 || win.x < 0 || win.y < 0 || win.x + win.w > w || win.y + win.h > h) outside++;
  }
  CHECK_MSG(outside == 0, "%d windows outside their image", outside);
  /* Same key, same window; another sample / epoch / operator / seed, another window (mostly). */
  int differ = 0;
  for (int i = 0; i < 100; i++) {
    stk__window a = draw(11, i, 800, 600, 0.08, 1.0, 0.75, 4.0 / 3.0, 10);
    stk__window b = draw(11, i, 800, 600, 0.08, 1.0, 0.75, 4.0 / 3.0, 10);
    CHECK(a.x == b.x && a.y == b.y && a.w == b.w && a.h == b.h);
    stk__rng rng;
    stk__rng_init(&rng, 11, 3, 1, i); /* next epoch */
    stk__window c = stk__random_crop_window(&rng, 800, 600, 0.08, 1.0, 0.75, 4.0 / 3.0, 10);
    stk__rng_init(&rng, 11, 4, 0, i); /* another operator */
    stk__window d = stk__random_crop_window(&rng, 800, 600, 0.08, 1.0, 0.75, 4.0 / 3.0, 10);
    if (c.w != a.w || c.x != a.x) differ++;
    if (d.w != a.w || d.x != a.x) differ++;
  }
  CHECK_MSG(differ > 190, "windows barely depend on epoch/operator: %d of 200 differ", differ);
}

/* one STK_TEST_CASE per line: tests/CMakeLists.txt reads them */
// clang-format off
static const stk_test_case cases[] = {
    STK_TEST_CASE(test_distribution_always_fits),
    STK_TEST_CASE(test_distribution_defaults),
    STK_TEST_CASE(test_fallback),
    STK_TEST_CASE(test_inside_and_deterministic),
};
// clang-format on

int main(int argc, char **argv) {
  if (stk_test_list_cases(cases, STK_TEST_COUNT(cases), argc, argv)) return 0;
  return stk_test_run_cases("test_crop_window", cases, STK_TEST_COUNT(cases), argc, argv);
}
