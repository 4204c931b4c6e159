/* src/ops/augment/random/test_random.c: the random.* operators through the registry: each
 * distribution's sample mean and variance against its closed form (tolerances of ~5 standard
 * errors), discrete values and choice frequencies, shape and dtype, per-sample bound arguments,
 * determinism by (seed, operator, epoch, sample), and bad arguments named in the message.
 * Not on any hot path. */
#include <math.h>

#include "case_list.h"
#include "op_test.h"

/* Draws n samples of a scalar op; mean and variance of their values as double. */
static void moments(stk__op *op, int n, stk__tensor **inputs, double *mean, double *var) {
  stk__tensor out = {0};
  double sum = 0, sum2 = 0;
  for (int i = 0; i < n; i++) {
    CHECK(op_run(op, 1, i, inputs, &out) == STK_OK);
    double v = stk__tensor_scalar(&out);
    sum += v;
    sum2 += v * v;
  }
  *mean = sum / n;
  *var = sum2 / n - *mean * *mean;
  stk__tensor_free(&out);
}

static void uniform_matches_its_moments_range_and_values(void) {
  stk_args *a = op_args();
  const double range[2] = {2.0, 5.0};
  stk_args_set_float_list(a, "range", range, 2);
  stk__op *op = op_make("random.uniform", a, 3);
  if (!op) return;
  double mean, var;
  moments(op, 40000, NULL, &mean, &var);
  CHECK_MSG(fabs(mean - 3.5) < 0.05 && fabs(var - 0.75) < 0.03, "uniform[2,5): mean %f var %f", mean, var);
  stk__tensor out = {0};
  int in_range = 1;
  for (int i = 0; i < 5000; i++) {
    CHECK(op_run(op, 0, i, NULL, &out) == STK_OK);
    float v = *(float *)out.data;
    in_range &= out.ndim == 0 && out.dtype == STK_DTYPE_FLOAT32 && v >= 2.0f && v < 5.0f;
  }
  CHECK_MSG(in_range, "uniform left [2, 5) or is not one float a sample");
  stk__op_free_standalone(op);
  /* Discrete values: each equally likely, nothing else; shape [4, 3] and int32. */
  a = op_args();
  const double values[3] = {-1, 7, 9};
  const int64_t shape[2] = {4, 3};
  stk_args_set_float_list(a, "values", values, 3);
  stk_args_set_int_list(a, "shape", shape, 2);
  stk_args_set_string(a, "dtype", "INT32");
  op = op_make("random.uniform", a, 4);
  if (!op) return;
  long hits[3] = {0}, other = 0, bad_shape = 0;
  for (int i = 0; i < 3000; i++) {
    CHECK(op_run(op, 0, i, NULL, &out) == STK_OK);
    bad_shape += out.ndim != 2 || out.shape[0] != 4 || out.shape[1] != 3 || out.dtype != STK_DTYPE_INT32;
    for (int k = 0; k < 12; k++) {
      int32_t v = ((int32_t *)out.data)[k];
      if (v == -1) hits[0]++;
      else if (v == 7) hits[1]++;
      else if (v == 9) hits[2]++;
      else other++;
    }
  }
  CHECK(bad_shape == 0 && other == 0);
  for (int k = 0; k < 3; k++) CHECK_MSG(labs(hits[k] - 12000) < 500, "value %d drawn %ld of 36000", k, hits[k]);
  stk__op_free_standalone(op);
  stk__tensor_free(&out);
  a = op_args();
  stk_args_set_float_list(a, "values", values, 3);
  stk_args_set_float_list(a, "range", range, 2);
  op_expect_bad("random.uniform", a, "values");
  a = op_args();
  const double backwards[2] = {5, 2};
  stk_args_set_float_list(a, "range", backwards, 2);
  op_expect_bad("random.uniform", a, "range");
}

static void normal_matches_its_moments_and_takes_per_sample_mean(void) {
  stk_args *a = op_args();
  stk_args_set_float(a, "mean", 3.0);
  stk_args_set_float(a, "stddev", 2.0);
  stk__op *op = op_make("random.normal", a, 5);
  if (!op) return;
  double mean, var;
  moments(op, 40000, NULL, &mean, &var);
  CHECK_MSG(fabs(mean - 3.0) < 0.05 && fabs(var - 4.0) < 0.15, "normal(3, 2): mean %f var %f", mean, var);
  stk__op_free_standalone(op);
  /* mean bound to a per-sample input: the draw moves with it, the same noise under the same key. */
  a = op_args();
  stk_args_set_input(a, "mean", "m");
  op = op_make("random.normal", a, 5);
  if (!op) return;
  stk__tensor m0 = op_scalar(0.0f), m100 = op_scalar(100.0f), out = {0};
  stk__tensor *in0[1] = {&m0}, *in100[1] = {&m100};
  int shifted = 1;
  for (int i = 0; i < 200; i++) {
    CHECK(op_run(op, 0, i, in0, &out) == STK_OK);
    float v0 = *(float *)out.data;
    CHECK(op_run(op, 0, i, in100, &out) == STK_OK);
    shifted &= fabsf(*(float *)out.data - v0 - 100.0f) < 1e-3f;
  }
  CHECK_MSG(shifted, "normal with mean bound per sample is not mean + the same noise");
  stk__op_free_standalone(op);
  stk__tensor_free(&m0);
  stk__tensor_free(&m100);
  stk__tensor_free(&out);
  a = op_args();
  stk_args_set_float(a, "stddev", -1);
  op_expect_bad("random.normal", a, "stddev");
}

static void beta_matches_its_moments(void) {
  const double cases[3][2] = {{2.0, 5.0}, {0.5, 0.5}, {1.0, 1.0}};
  for (int c = 0; c < 3; c++) {
    stk_args *a = op_args();
    stk_args_set_float(a, "alpha", cases[c][0]);
    stk_args_set_float(a, "beta", cases[c][1]);
    stk__op *op = op_make("random.beta", a, 6);
    if (!op) return;
    double al = cases[c][0], be = cases[c][1], mean, var;
    double want_mean = al / (al + be), want_var = al * be / ((al + be) * (al + be) * (al + be + 1));
    moments(op, 40000, NULL, &mean, &var);
    CHECK_MSG(fabs(mean - want_mean) < 0.01 && fabs(var - want_var) < 0.006, "beta(%g, %g): mean %f var %f", al, be,
              mean, var);
    stk__op_free_standalone(op);
  }
  stk_args *a = op_args();
  stk_args_set_float(a, "alpha", 0);
  op_expect_bad("random.beta", a, "alpha");
}

static void choice_follows_p_and_counts(void) {
  stk_args *a = op_args();
  const double values[3] = {10, 20, 30}, p[3] = {0.2, 0.5, 0.3};
  stk_args_set_float_list(a, "a", values, 3);
  stk_args_set_float_list(a, "p", p, 3);
  stk__op *op = op_make("random.choice", a, 7);
  if (!op) return;
  stk__tensor out = {0};
  long hits[3] = {0}, other = 0;
  const int n = 20000;
  for (int i = 0; i < n; i++) {
    CHECK(op_run(op, 0, i, NULL, &out) == STK_OK);
    CHECK(out.dtype == STK_DTYPE_INT32 && out.ndim == 0);
    int32_t v = *(int32_t *)out.data;
    if (v == 10 || v == 20 || v == 30) hits[v / 10 - 1]++;
    else other++;
  }
  CHECK(other == 0);
  for (int k = 0; k < 3; k++)
    CHECK_MSG(fabs((double)hits[k] / n - p[k]) < 0.02, "choice %d: frequency %f, p %f", k, (double)hits[k] / n, p[k]);
  stk__op_free_standalone(op);
  /* a = n: 0 .. n-1 */
  a = op_args();
  const double five[1] = {5};
  stk_args_set_float_list(a, "a", five, 1);
  op = op_make("random.choice", a, 8);
  int seen = 0, outside = 0;
  for (int i = 0; op && i < 500; i++) {
    CHECK(op_run(op, 0, i, NULL, &out) == STK_OK);
    int32_t v = *(int32_t *)out.data;
    if (v < 0 || v > 4) outside++;
    else seen |= 1 << v;
  }
  CHECK(outside == 0 && seen == 31);
  stk__op_free_standalone(op);
  stk__tensor_free(&out);
  a = op_args();
  const double bad_p[3] = {0.5, 0.6, 0.1};
  stk_args_set_float_list(a, "a", values, 3);
  stk_args_set_float_list(a, "p", bad_p, 3);
  op_expect_bad("random.choice", a, "sum");
}

static void same_key_same_bytes_other_key_other_bytes(void) {
  const char *names[4] = {"random.uniform", "random.normal", "random.beta", "random.coin_flip"};
  for (int k = 0; k < 4; k++) {
    stk_args *a = op_args();
    const int64_t shape[1] = {16};
    stk_args_set_int_list(a, "shape", shape, 1);
    stk__op *op = op_make(names[k], a, 9);
    stk_args *b = op_args();
    stk_args_set_int_list(b, "shape", shape, 1);
    stk__op *other = op_make(names[k], b, 10);
    if (!op || !other) return;
    stk__tensor x = {0}, y = {0};
    int same = 1, differ_sample = 0, differ_op = 0, differ_epoch = 0;
    for (int i = 0; i < 50; i++) {
      CHECK(op_run(op, 2, i, NULL, &x) == STK_OK);
      CHECK(op_run(op, 2, i, NULL, &y) == STK_OK);
      same &= memcmp(x.data, y.data, x.nbytes) == 0;
      CHECK(op_run(op, 2, i + 1, NULL, &y) == STK_OK);
      differ_sample += memcmp(x.data, y.data, x.nbytes) != 0;
      CHECK(op_run(other, 2, i, NULL, &y) == STK_OK);
      differ_op += memcmp(x.data, y.data, x.nbytes) != 0;
      CHECK(op_run(op, 3, i, NULL, &y) == STK_OK);
      differ_epoch += memcmp(x.data, y.data, x.nbytes) != 0;
    }
    CHECK_MSG(same, "%s: not the same bytes for the same key", names[k]);
    CHECK_MSG(differ_sample > 45 && differ_op > 45 && differ_epoch > 45, "%s: %d/%d/%d of 50 differ", names[k],
              differ_sample, differ_op, differ_epoch);
    stk__op_free_standalone(op);
    stk__op_free_standalone(other);
    stk__tensor_free(&x);
    stk__tensor_free(&y);
  }
}

static void coin_flip_takes_shape_dtype_and_per_sample_probability(void) {
  stk_args *a = op_args();
  const int64_t shape[1] = {100};
  stk_args_set_int_list(a, "shape", shape, 1);
  stk_args_set_string(a, "dtype", "uint8");
  stk_args_set_input(a, "probability", "p");
  stk__op *op = op_make("random.coin_flip", a, 11);
  if (!op) return;
  stk__tensor p0 = op_scalar(0.0f), p1 = op_scalar(1.0f), out = {0};
  stk__tensor *in0[1] = {&p0}, *in1[1] = {&p1};
  CHECK(op_run(op, 0, 0, in0, &out) == STK_OK);
  CHECK(out.dtype == STK_DTYPE_UINT8 && out.ndim == 1 && out.shape[0] == 100);
  long sum0 = 0, sum1 = 0;
  for (int k = 0; k < 100; k++) sum0 += ((uint8_t *)out.data)[k];
  CHECK(op_run(op, 0, 0, in1, &out) == STK_OK);
  for (int k = 0; k < 100; k++) sum1 += ((uint8_t *)out.data)[k];
  CHECK_MSG(sum0 == 0 && sum1 == 100, "probability 0 gave %ld ones, 1 gave %ld", sum0, sum1);
  stk__tensor bad = op_scalar(2.0f);
  stk__tensor *inb[1] = {&bad};
  CHECK(op_run(op, 0, 0, inb, &out) == STK_EINVAL && strstr(op_test_err, "probability"));
  stk__op_free_standalone(op);
  stk__tensor_free(&p0);
  stk__tensor_free(&p1);
  stk__tensor_free(&bad);
  stk__tensor_free(&out);
}

/* one STK_TEST_CASE per line: tests/CMakeLists.txt reads them */
// clang-format off
static const stk_test_case cases[] = {
    STK_TEST_CASE(uniform_matches_its_moments_range_and_values),
    STK_TEST_CASE(normal_matches_its_moments_and_takes_per_sample_mean),
    STK_TEST_CASE(beta_matches_its_moments),
    STK_TEST_CASE(choice_follows_p_and_counts),
    STK_TEST_CASE(same_key_same_bytes_other_key_other_bytes),
    STK_TEST_CASE(coin_flip_takes_shape_dtype_and_per_sample_probability),
};
// clang-format on

int main(int argc, char **argv) {
  if (stk_test_list_cases(cases, STK_TEST_COUNT(cases), argc, argv)) return 0;
  int rc = stk_test_run_selected("test_random", cases, STK_TEST_COUNT(cases), argc, argv);
  op_test_cleanup();
  return rc ? rc : stk_test_finish("test_random");
}
