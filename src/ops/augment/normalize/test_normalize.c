/* src/ops/augment/normalize/test_normalize.c: `normalize` on the CPU against a naive formula
 * written out here (explicit loops over h, w, c; mean, then the variance by its definition):
 * whole-sample statistics, per-channel statistics (axis_names "HW") with ddof, epsilon, scale and
 * shift, given constants with integer outputs (rounded, saturated), per-sample mean/stddev inputs
 * (reduced axes inferred from the mean's extents of 1), a constant sample (maps to shift), and bad
 * arguments named in the error. Float outputs within 1e-5 relative; integer outputs exact. Not
 * on a hot path. */
#include <math.h>

#include "case_list.h"
#include "op_test.h"

/* A float HWC tensor of w x h x c pseudo-random values in [-50, 200). */
static stk__tensor float_image(int w, int h, int c, unsigned seed) {
  stk__tensor t = op_image(w, h, c, seed), f;
  memset(&f, 0, sizeof f);
  CHECK(stk__tensor_resize(&f, STK_DTYPE_FLOAT32, 3, t.shape, "HWC") == STK_OK);
  for (size_t i = 0; i < t.nbytes; i++) ((float *)f.data)[i] = ((uint8_t *)t.data)[i] * 0.98f - 50.0f + (float)(i % 7) * 0.125f;
  stk__tensor_free(&t);
  return f;
}

static double value_at(const stk__tensor *t, size_t i) {
  return t->dtype == STK_DTYPE_UINT8 ? ((uint8_t *)t->data)[i] : ((float *)t->data)[i];
}

/* Naive statistics of channel `ch` (ch < 0: every channel) of an HWC tensor. */
static void naive_stats(const stk__tensor *t, int ch, int ddof, double *mean, double *var) {
  const int h = (int)t->shape[0], w = (int)t->shape[1], c = (int)t->shape[2];
  double sum = 0, sq = 0;
  long count = 0;
  for (int y = 0; y < h; y++)
    for (int x = 0; x < w; x++)
      for (int k = 0; k < c; k++)
        if (ch < 0 || k == ch) {
          sum += value_at(t, ((size_t)y * w + x) * c + k);
          count++;
        }
  *mean = sum / count;
  for (int y = 0; y < h; y++)
    for (int x = 0; x < w; x++)
      for (int k = 0; k < c; k++)
        if (ch < 0 || k == ch) {
          double d = value_at(t, ((size_t)y * w + x) * c + k) - *mean;
          sq += d * d;
        }
  *var = sq / (count - ddof);
}

static int close_to(double got, double want) { return fabs(got - want) <= 1e-5 * (1.0 + fabs(want)); }

static void whole_sample_statistics_match_the_formula(void) {
  stk__op *op = op_make("normalize", op_args(), 1);
  stk__tensor img = float_image(31, 17, 3, 2), out = {0};
  stk__tensor *in[1] = {&img};
  if (op && op_run(op, 0, 0, in, &out) == STK_OK) {
    double mean, var;
    naive_stats(&img, -1, 0, &mean, &var);
    int bad = 0;
    for (size_t i = 0; i < img.nbytes / 4; i++) bad += !close_to(((float *)out.data)[i], (value_at(&img, i) - mean) / sqrt(var));
    CHECK_MSG(bad == 0 && out.dtype == STK_DTYPE_FLOAT32 && out.ndim == 3, "%d values differ from the formula", bad);
  }
  stk__op_free_standalone(op);
  stk__tensor_free(&img);
  stk__tensor_free(&out);
}

static void per_channel_with_ddof_epsilon_scale_shift(void) {
  stk_args *a = op_args();
  stk_args_set_string(a, "axis_names", "HW");
  stk_args_set_int(a, "ddof", 1);
  stk_args_set_float(a, "epsilon", 0.5);
  stk_args_set_float(a, "scale", 64);
  stk_args_set_float(a, "shift", 128);
  stk__op *op = op_make("normalize", a, 1);
  stk__tensor img = op_image(23, 41, 3, 5), out = {0};
  stk__tensor *in[1] = {&img};
  if (op && op_run(op, 0, 0, in, &out) == STK_OK) {
    double mean[3], var[3];
    for (int c = 0; c < 3; c++) naive_stats(&img, c, 1, &mean[c], &var[c]);
    int bad = 0;
    for (size_t i = 0; i < img.nbytes; i++) {
      int c = (int)(i % 3);
      double want = (value_at(&img, i) - mean[c]) / sqrt(var[c] + 0.5) * 64 + 128;
      bad += !close_to(((float *)out.data)[i], want);
    }
    CHECK_MSG(bad == 0, "%d values differ from the per-channel formula", bad);
  }
  stk__op_free_standalone(op);
  /* axes=[0, 1] is the same reduction */
  a = op_args();
  int64_t axes[2] = {0, -2};
  stk_args_set_int_list(a, "axes", axes, 2);
  stk_args_set_int(a, "ddof", 1);
  stk_args_set_float(a, "epsilon", 0.5);
  stk_args_set_float(a, "scale", 64);
  stk_args_set_float(a, "shift", 128);
  stk__op *by_index = op_make("normalize", a, 1);
  stk__tensor again = {0};
  if (by_index && op_run(by_index, 0, 0, in, &again) == STK_OK)
    CHECK(again.nbytes == out.nbytes && memcmp(again.data, out.data, out.nbytes) == 0);
  stk__op_free_standalone(by_index);
  stk__tensor_free(&img);
  stk__tensor_free(&out);
  stk__tensor_free(&again);
}

/* uint8 in, float out, one statistic (given or computed): (x - mean) / stddev for every value. */
static void uint8_image_to_float(void) {
  for (int given = 0; given < 2; given++) {
    stk_args *a = op_args();
    if (given) {
      stk_args_set_float(a, "mean", 120.5);
      stk_args_set_float(a, "stddev", 3);
    }
    stk__op *op = op_make("normalize", a, 1);
    stk__tensor img = op_image(13, 11, 3, 5), out = {0};
    stk__tensor *in[1] = {&img};
    if (op && op_run(op, 0, 0, in, &out) == STK_OK) {
      double mean = 120.5, var = 9;
      if (!given) naive_stats(&img, -1, 0, &mean, &var);
      int bad = 0;
      for (size_t i = 0; i < img.nbytes; i++)
        bad += !close_to(((float *)out.data)[i], (value_at(&img, i) - mean) / sqrt(var));
      CHECK_MSG(out.dtype == STK_DTYPE_FLOAT32 && bad == 0, "given=%d: %d float values differ", given, bad);
    } else {
      CHECK_MSG(0, "normalize of a uint8 image: %s", op_test_err);
    }
    stk__op_free_standalone(op);
    stk__tensor_free(&img);
    stk__tensor_free(&out);
  }
}

static void given_constants_and_integer_outputs(void) {
  stk_args *a = op_args();
  stk_args_set_float(a, "mean", 100);
  stk_args_set_float(a, "stddev", 2);
  stk_args_set_float(a, "shift", 10);
  stk_args_set_string(a, "dtype", "uint8");
  stk__op *op = op_make("normalize", a, 1);
  stk__tensor img = op_image(16, 9, 3, 8), out = {0};
  stk__tensor *in[1] = {&img};
  if (op && op_run(op, 0, 0, in, &out) == STK_OK) {
    int bad = 0;
    for (size_t i = 0; i < img.nbytes; i++) {
      double want = (value_at(&img, i) - 100) / 2 + 10; /* halves away from zero, then clamped */
      want = want < 0 ? 0 : (want > 255 ? 255 : floor(want + 0.5));
      bad += ((uint8_t *)out.data)[i] != (uint8_t)want;
    }
    CHECK_MSG(out.dtype == STK_DTYPE_UINT8 && bad == 0, "%d uint8 values differ", bad);
  }
  stk__op_free_standalone(op);
  stk__tensor_free(&img);
  stk__tensor_free(&out);
}

static void per_sample_mean_tensor_and_stddev_input(void) {
  stk_args *a = op_args();
  stk_args_set_input(a, "mean", "m");
  stk_args_set_input(a, "stddev", "s");
  stk__op *op = op_make("normalize", a, 1);
  stk__tensor img = op_image(12, 10, 3, 9), out = {0}, mean = {0}, sd = op_scalar(4.0f);
  int64_t mshape[3] = {1, 1, 3};
  CHECK(stk__tensor_resize(&mean, STK_DTYPE_FLOAT32, 3, mshape, "HWC") == STK_OK);
  const float m[3] = {10, 120, 250};
  memcpy(mean.data, m, sizeof m);
  stk__tensor *in[3] = {&img, &mean, &sd};
  if (op && op_run(op, 0, 0, in, &out) == STK_OK) {
    int bad = 0;
    for (size_t i = 0; i < img.nbytes; i++) bad += !close_to(((float *)out.data)[i], (value_at(&img, i) - m[i % 3]) / 4);
    CHECK_MSG(bad == 0, "%d values differ with a per-channel mean input", bad);
  }
  /* a mean of the wrong extent is refused with a message naming it */
  stk__tensor wrong = {0};
  int64_t wshape[3] = {1, 1, 2};
  CHECK(stk__tensor_resize(&wrong, STK_DTYPE_FLOAT32, 3, wshape, "HWC") == STK_OK);
  stk__tensor *bad_in[3] = {&img, &wrong, &sd};
  if (op) CHECK(op_run(op, 0, 0, bad_in, &out) == STK_EINVAL && strstr(op_test_err, "mean"));
  stk__tensor zero = op_scalar(0.0f);
  stk__tensor *zero_in[3] = {&img, &mean, &zero};
  if (op) CHECK(op_run(op, 0, 0, zero_in, &out) == STK_EINVAL && strstr(op_test_err, "stddev"));
  stk__op_free_standalone(op);
  stk__tensor_free(&img);
  stk__tensor_free(&out);
  stk__tensor_free(&mean);
  stk__tensor_free(&sd);
  stk__tensor_free(&wrong);
  stk__tensor_free(&zero);
}

static void constant_sample_maps_to_shift(void) {
  stk_args *a = op_args();
  stk_args_set_float(a, "shift", 3);
  stk__op *op = op_make("normalize", a, 1);
  stk__tensor img = op_image(8, 8, 1, 1), out = {0};
  memset(img.data, 77, img.nbytes);
  stk__tensor *in[1] = {&img};
  if (op && op_run(op, 0, 0, in, &out) == STK_OK) {
    int bad = 0;
    for (size_t i = 0; i < img.nbytes; i++) bad += ((float *)out.data)[i] != 3.0f;
    CHECK_MSG(bad == 0, "%d values of a constant sample are not shift", bad);
  }
  stk__op_free_standalone(op);
  stk__tensor_free(&img);
  stk__tensor_free(&out);
}

static void bad_arguments_are_named(void) {
  stk_args *a = op_args();
  stk_args_set_bool(a, "batch", 1);
  op_expect_bad("normalize", a, "batch");
  a = op_args();
  stk_args_set_string(a, "dtype", "complex");
  op_expect_bad("normalize", a, "dtype");
  a = op_args();
  stk_args_set_float(a, "epsilon", -1);
  op_expect_bad("normalize", a, "epsilon");
  a = op_args();
  stk_args_set_string(a, "axis_names", "Q");
  stk__op *op = op_make("normalize", a, 1);
  stk__tensor img = op_image(4, 4, 3, 1), out = {0};
  stk__tensor *in[1] = {&img};
  if (op) CHECK(op_run(op, 0, 0, in, &out) == STK_EINVAL && strstr(op_test_err, "axis_names"));
  stk__op_free_standalone(op);
  a = op_args();
  stk_args_set_int(a, "ddof", 48);
  op = op_make("normalize", a, 1);
  if (op) CHECK(op_run(op, 0, 0, in, &out) == STK_EINVAL && strstr(op_test_err, "ddof"));
  stk__op_free_standalone(op);
  stk__tensor_free(&img);
  stk__tensor_free(&out);
}

/* one STK_TEST_CASE per line: tests/CMakeLists.txt reads them */
// clang-format off
static const stk_test_case cases[] = {
    STK_TEST_CASE(whole_sample_statistics_match_the_formula),
    STK_TEST_CASE(per_channel_with_ddof_epsilon_scale_shift),
    STK_TEST_CASE(given_constants_and_integer_outputs),
    STK_TEST_CASE(uint8_image_to_float),
    STK_TEST_CASE(per_sample_mean_tensor_and_stddev_input),
    STK_TEST_CASE(constant_sample_maps_to_shift),
    STK_TEST_CASE(bad_arguments_are_named),
};
// clang-format on

int main(int argc, char **argv) {
  if (stk_test_list_cases(cases, STK_TEST_COUNT(cases), argc, argv)) return 0;
  int rc = stk_test_run_selected("test_normalize", cases, STK_TEST_COUNT(cases), argc, argv);
  op_test_cleanup();
  return rc ? rc : stk_test_finish("test_normalize");
}
