/* src/ops/augment/noise/test_noise.c: the noise operators on the CPU: Gaussian noise's mean and
 * standard deviation, shot noise's Poisson mean and variance (small and large lambda), salt and
 * pepper's replaced fraction and salt share, per pixel (all channels alike) or per value, uint8
 * clamping, per-sample bound arguments, and the same bytes for the same (seed, operator, epoch,
 * sample) with other bytes for another sample. Tolerances ~5 standard errors. Not on a hot path. */
#include <math.h>

#include "case_list.h"
#include "op_test.h"

/* A float HWC image of w*h*3 values all equal to v. */
static stk__tensor flat_float(int w, int h, float v) {
  stk__tensor t;
  memset(&t, 0, sizeof t);
  int64_t shape[3] = {h, w, 3};
  CHECK(stk__tensor_resize(&t, STK_DTYPE_FLOAT32, 3, shape, "HWC") == STK_OK);
  for (size_t i = 0; i < t.nbytes / 4; i++) ((float *)t.data)[i] = v;
  return t;
}

static void moments_of(const stk__tensor *out, double *mean, double *var) {
  size_t n = out->nbytes / 4;
  double s = 0, s2 = 0;
  for (size_t i = 0; i < n; i++) {
    double v = ((float *)out->data)[i];
    s += v;
    s2 += v * v;
  }
  *mean = s / n;
  *var = s2 / n - *mean * *mean;
}

static void gaussian_adds_mean_and_stddev(void) {
  stk_args *a = op_args();
  stk_args_set_float(a, "mean", 3);
  stk_args_set_float(a, "stddev", 5);
  stk__op *op = op_make("noise.gaussian", a, 31);
  stk__tensor img = flat_float(200, 100, 10.0f), out = {0};
  stk__tensor *in[1] = {&img};
  if (op && op_run(op, 0, 7, in, &out) == STK_OK) {
    double mean, var;
    moments_of(&out, &mean, &var);
    CHECK_MSG(fabs(mean - 13) < 0.15 && fabs(sqrt(var) - 5) < 0.1, "gaussian: mean %f sd %f", mean, sqrt(var));
  }
  /* uint8: clamped and rounded to 0..255 */
  stk__tensor u8 = op_image(64, 64, 3, 9), out8 = {0};
  stk__tensor *in8[1] = {&u8};
  if (op) CHECK(op_run(op, 0, 7, in8, &out8) == STK_OK && out8.dtype == STK_DTYPE_UINT8 && out8.nbytes == u8.nbytes);
  stk__op_free_standalone(op);
  a = op_args();
  stk_args_set_float(a, "stddev", -1);
  stk__op *bad = op_make("noise.gaussian", a, 31);
  if (bad) CHECK(op_run(bad, 0, 0, in, &out) == STK_EINVAL && strstr(op_test_err, "stddev"));
  stk__op_free_standalone(bad);
  stk__tensor_free(&img);
  stk__tensor_free(&out);
  stk__tensor_free(&u8);
  stk__tensor_free(&out8);
}

static void shot_noise_is_poisson(void) {
  const float levels[2] = {3.0f, 50.0f}; /* inversion and normal approximation */
  for (int k = 0; k < 2; k++) {
    stk_args *a = op_args();
    stk_args_set_float(a, "factor", 2.0);
    stk__op *op = op_make("noise.shot", a, 32);
    stk__tensor img = flat_float(200, 100, levels[k] * 2.0f), out = {0};
    stk__tensor *in[1] = {&img};
    if (op && op_run(op, 0, 1, in, &out) == STK_OK) {
      double mean, var; /* Poisson(lambda) * 2: mean 2 lambda, variance 4 lambda */
      moments_of(&out, &mean, &var);
      CHECK_MSG(fabs(mean - 2 * levels[k]) < 0.1 * sqrt(levels[k]) + 0.05 && fabs(var / (4 * levels[k]) - 1) < 0.05,
                "shot(lambda %g): mean %f var %f", levels[k], mean, var);
    }
    stk__op_free_standalone(op);
    stk__tensor_free(&img);
    stk__tensor_free(&out);
  }
}

/* uint8 salt_and_pepper (one draw per pixel for its channels) against the float path (a draw per
 * element through stk__noise_apply) on the same pixels: the same pixels replaced by the same values. */
static void salt_and_pepper_uint8_matches_the_element_path(void) {
  stk__tensor u8 = op_image(61, 37, 3, 12), f = flat_float(61, 37, 0), out8 = {0}, outf = {0};
  for (size_t i = 0; i < u8.nbytes; i++) ((float *)f.data)[i] = ((uint8_t *)u8.data)[i];
  stk__tensor *in8[1] = {&u8}, *inf[1] = {&f};
  stk__op *ops[2] = {NULL, NULL};
  for (int k = 0; k < 2; k++) {
    stk_args *a = op_args();
    stk_args_set_float(a, "prob", 0.3);
    stk_args_set_float(a, "salt_val", 250);
    stk_args_set_float(a, "pepper_val", 7);
    ops[k] = op_make("noise.salt_and_pepper", a, 41);
  }
  if (ops[0] && ops[1] && op_run(ops[0], 3, 5, in8, &out8) == STK_OK && op_run(ops[1], 3, 5, inf, &outf) == STK_OK) {
    long bad = 0, replaced = 0;
    for (size_t i = 0; i < u8.nbytes; i++) {
      float want = ((float *)outf.data)[i];
      bad += ((uint8_t *)out8.data)[i] != (uint8_t)want;
      replaced += want != ((float *)f.data)[i];
    }
    CHECK_MSG(bad == 0 && replaced > 1000, "%ld of %zu values differ (%ld replaced)", bad, u8.nbytes, replaced);
  } else {
    CHECK_MSG(0, "salt_and_pepper: %s", op_test_err);
  }
  for (int k = 0; k < 2; k++) stk__op_free_standalone(ops[k]);
  stk__tensor_free(&u8);
  stk__tensor_free(&f);
  stk__tensor_free(&out8);
  stk__tensor_free(&outf);
}

static void salt_and_pepper_replaces_pixels(void) {
  for (int per_channel = 0; per_channel <= 1; per_channel++) {
    stk_args *a = op_args();
    stk_args_set_float(a, "prob", 0.2);
    stk_args_set_float(a, "salt_vs_pepper", 0.25);
    stk_args_set_bool(a, "per_channel", per_channel);
    stk__op *op = op_make("noise.salt_and_pepper", a, 33);
    stk__tensor img = op_image(200, 100, 3, 4), out = {0};
    for (size_t i = 0; i < img.nbytes; i++) ((uint8_t *)img.data)[i] = 100;
    stk__tensor *in[1] = {&img};
    if (!op || op_run(op, 0, 2, in, &out) != STK_OK) {
      CHECK_MSG(0, "salt_and_pepper: %s", op_test_err);
      stk__op_free_standalone(op);
      continue;
    }
    const uint8_t *o = out.data;
    long replaced = 0, salt = 0, mixed = 0, n = (long)img.nbytes;
    for (long i = 0; i < n; i++) {
      replaced += o[i] != 100;
      salt += o[i] == 255;
      if (i % 3 == 0 && (o[i] != o[i + 1] || o[i] != o[i + 2])) mixed++;
    }
    CHECK_MSG(fabs((double)replaced / n - 0.2) < 0.012, "per_channel=%d: %ld of %ld replaced", per_channel, replaced, n);
    CHECK_MSG(fabs((double)salt / replaced - 0.25) < 0.03, "salt share %f", (double)salt / replaced);
    CHECK_MSG(per_channel ? mixed > 1000 : mixed == 0, "per_channel=%d: %ld pixels with mixed channels", per_channel,
              mixed);
    stk__op_free_standalone(op);
    stk__tensor_free(&img);
    stk__tensor_free(&out);
  }
}

static void same_key_same_noise_and_per_sample_arguments(void) {
  stk_args *a = op_args();
  stk_args_set_input(a, "stddev", "s");
  stk__op *op = op_make("noise.gaussian", a, 34);
  stk__tensor img = op_image(40, 30, 3, 5), x = {0}, y = {0};
  stk__tensor s0 = op_scalar(0.0f), s20 = op_scalar(20.0f);
  stk__tensor *in0[2] = {&img, &s0}, *in20[2] = {&img, &s20};
  if (op) {
    CHECK(op_run(op, 0, 5, in0, &x) == STK_OK && memcmp(x.data, img.data, img.nbytes) == 0); /* stddev 0: no change */
    CHECK(op_run(op, 0, 5, in20, &x) == STK_OK && memcmp(x.data, img.data, img.nbytes) != 0);
    CHECK(op_run(op, 0, 5, in20, &y) == STK_OK && memcmp(x.data, y.data, x.nbytes) == 0);
    CHECK(op_run(op, 0, 6, in20, &y) == STK_OK && memcmp(x.data, y.data, x.nbytes) != 0);
    CHECK(op_run(op, 1, 5, in20, &y) == STK_OK && memcmp(x.data, y.data, x.nbytes) != 0);
  }
  stk__op_free_standalone(op);
  stk__tensor_free(&img);
  stk__tensor_free(&x);
  stk__tensor_free(&y);
  stk__tensor_free(&s0);
  stk__tensor_free(&s20);
}

/* one STK_TEST_CASE per line: tests/CMakeLists.txt reads them */
// clang-format off
static const stk_test_case cases[] = {
    STK_TEST_CASE(gaussian_adds_mean_and_stddev),
    STK_TEST_CASE(shot_noise_is_poisson),
    STK_TEST_CASE(salt_and_pepper_replaces_pixels),
    STK_TEST_CASE(salt_and_pepper_uint8_matches_the_element_path),
    STK_TEST_CASE(same_key_same_noise_and_per_sample_arguments),
};
// clang-format on

int main(int argc, char **argv) {
  if (stk_test_list_cases(cases, STK_TEST_COUNT(cases), argc, argv)) return 0;
  int rc = stk_test_run_selected("test_noise", cases, STK_TEST_COUNT(cases), argc, argv);
  op_test_cleanup();
  return rc ? rc : stk_test_finish("test_noise");
}
