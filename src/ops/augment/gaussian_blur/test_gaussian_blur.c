/* src/ops/augment/gaussian_blur/test_gaussian_blur.c: `gaussian_blur` on the CPU (the separable
 * path) against a direct 2-d convolution written here: the full (2ry+1) x (2rx+1) outer-product
 * kernel in double, borders by explicit mirroring (reflect-101), per channel. Cases: HWC uint8
 * with one sigma, per-axis sigma and window_size on float, the window-only sigma formula, CHW and
 * FHWC layouts (channels and frames never blurred), a radius larger than the image (repeated
 * reflection), per-sample sigma input, dtype conversion, and bad arguments. Tolerances: float
 * 1e-4 relative; uint8 one level (float passes vs double reference at a rounding edge). Not on a
 * hot path. */
#include <math.h>

#include "case_list.h"
#include "op_test.h"

static int mirror(int i, int n) { /* reflect-101 by repeated folding, written independently */
  if (n == 1) return 0;
  while (i < 0 || i >= n) i = i < 0 ? -i : 2 * (n - 1) - i;
  return i;
}

static void gauss(double sigma, int r, double *w) {
  double sum = 0;
  for (int k = -r; k <= r; k++) sum += w[k + r] = exp(-(k * k) / (2 * sigma * sigma));
  for (int k = 0; k <= 2 * r; k++) w[k] /= sum;
}

/* Direct 2-d convolution of plane (h x w, element (y, x) at base + (y * w + x) * step) in double. */
static double direct(const stk__tensor *t, size_t base, int step, int h, int w, int y, int x, const double *wy, int ry,
                     const double *wx, int rx) {
  double acc = 0;
  for (int dy = -ry; dy <= ry; dy++)
    for (int dx = -rx; dx <= rx; dx++) {
      size_t at = base + ((size_t)mirror(y + dy, h) * w + mirror(x + dx, w)) * step;
      double v = t->dtype == STK_DTYPE_UINT8 ? ((uint8_t *)t->data)[at] : ((float *)t->data)[at];
      acc += wy[dy + ry] * wx[dx + rx] * v;
    }
  return acc;
}

static double out_at(const stk__tensor *t, size_t i) {
  return t->dtype == STK_DTYPE_UINT8 ? ((uint8_t *)t->data)[i] : ((float *)t->data)[i];
}

/* Checks out against the direct convolution of in, for `planes` planes of h x w with channels c
 * interleaved (channels last) or planar (c_first), sigma/radius per axis. */
static void expect_blur(const char *what, const stk__tensor *in, const stk__tensor *out, int planes, int h, int w,
                        int c, int c_first, double sy, int ry, double sx, int rx) {
  double wy[257], wx[257];
  gauss(sy, ry, wy);
  gauss(sx, rx, wx);
  int bad = 0;
  double worst = 0;
  for (int p = 0; p < planes; p++)
    for (int ch = 0; ch < c; ch++) {
      size_t base = c_first ? ((size_t)p * c + ch) * h * w : (size_t)p * h * w * c + ch;
      int step = c_first ? 1 : c;
      for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
          double want = direct(in, base, step, h, w, y, x, wy, ry, wx, rx);
          double got = out_at(out, base + ((size_t)y * w + x) * step);
          if (out->dtype == STK_DTYPE_UINT8) want = floor(want + 0.5);
          double d = fabs(got - want);
          worst = d > worst ? d : worst;
          bad += out->dtype == STK_DTYPE_UINT8 ? d > 1 : d > 1e-4 * (1 + fabs(want));
        }
    }
  CHECK_MSG(bad == 0, "%s: %d values differ from the direct convolution (worst %g)", what, bad, worst);
}

static stk__tensor as_float(const stk__tensor *u8, const char *layout) {
  stk__tensor f;
  memset(&f, 0, sizeof f);
  CHECK(stk__tensor_resize(&f, STK_DTYPE_FLOAT32, u8->ndim, u8->shape, layout) == STK_OK);
  for (size_t i = 0; i < u8->nbytes; i++) ((float *)f.data)[i] = ((uint8_t *)u8->data)[i] * 0.5f - 7.0f;
  return f;
}

static void hwc_uint8_matches_direct_convolution(void) {
  stk_args *a = op_args();
  double sigma = 1.5;
  stk_args_set_float_list(a, "sigma", &sigma, 1);
  stk__op *op = op_make("gaussian_blur", a, 1);
  stk__tensor img = op_image(29, 23, 3, 4), out = {0};
  stk__tensor *in[1] = {&img};
  if (op && op_run(op, 0, 0, in, &out) == STK_OK) {
    CHECK(out.dtype == STK_DTYPE_UINT8 && out.nbytes == img.nbytes && strcmp(out.layout, "HWC") == 0);
    expect_blur("HWC sigma 1.5", &img, &out, 1, 23, 29, 3, 0, 1.5, 5, 1.5, 5);
  }
  stk__op_free_standalone(op);
  stk__tensor_free(&img);
  stk__tensor_free(&out);
}

static void per_axis_sigma_and_window_on_float(void) {
  stk_args *a = op_args();
  double sigma[2] = {0.7, 2.0};
  int64_t window[2] = {7, 0};
  stk_args_set_float_list(a, "sigma", sigma, 2);
  stk_args_set_int_list(a, "window_size", window, 2);
  stk__op *op = op_make("gaussian_blur", a, 1);
  stk__tensor u8 = op_image(31, 19, 2, 6), img = as_float(&u8, "HWC"), out = {0};
  stk__tensor *in[1] = {&img};
  if (op && op_run(op, 0, 0, in, &out) == STK_OK) /* H: sigma 0.7 over window 7; W: sigma 2, radius 6 */
    expect_blur("per-axis", &img, &out, 1, 19, 31, 2, 0, 0.7, 3, 2.0, 6);
  stk__op_free_standalone(op);
  /* window_size alone: sigma = (radius - 1) * 0.3 + 0.8 */
  a = op_args();
  int64_t five = 5;
  stk_args_set_int_list(a, "window_size", &five, 1);
  op = op_make("gaussian_blur", a, 1);
  if (op && op_run(op, 0, 0, in, &out) == STK_OK) expect_blur("window 5", &img, &out, 1, 19, 31, 2, 0, 1.1, 2, 1.1, 2);
  stk__op_free_standalone(op);
  stk__tensor_free(&u8);
  stk__tensor_free(&img);
  stk__tensor_free(&out);
}

static void channels_and_frames_are_not_blurred(void) {
  stk_args *a = op_args();
  double sigma = 1.0;
  stk_args_set_float_list(a, "sigma", &sigma, 1);
  stk__op *op = op_make("gaussian_blur", a, 1);
  /* CHW: 4 planes of 13 x 17 */
  stk__tensor chw = op_image(17, 13, 4, 7), out = {0};
  int64_t shape[3] = {4, 13, 17};
  memcpy(chw.shape, shape, sizeof shape);
  strcpy(chw.layout, "CHW");
  stk__tensor *in[1] = {&chw};
  if (op && op_run(op, 0, 0, in, &out) == STK_OK) expect_blur("CHW", &chw, &out, 1, 13, 17, 4, 1, 1.0, 3, 1.0, 3);
  /* FHWC: 3 frames of 11 x 9 x 3 */
  stk__tensor fhwc = op_image(9, 11 * 3, 3, 8);
  int64_t fshape[4] = {3, 11, 9, 3};
  fhwc.ndim = 4;
  memcpy(fhwc.shape, fshape, sizeof fshape);
  strcpy(fhwc.layout, "FHWC");
  stk__tensor *fin[1] = {&fhwc};
  if (op && op_run(op, 0, 0, fin, &out) == STK_OK) expect_blur("FHWC", &fhwc, &out, 3, 11, 9, 3, 0, 1.0, 3, 1.0, 3);
  stk__op_free_standalone(op);
  stk__tensor_free(&chw);
  stk__tensor_free(&fhwc);
  stk__tensor_free(&out);
}

static void radius_beyond_the_image_reflects_again(void) {
  stk_args *a = op_args();
  double sigma = 3.0; /* radius 9 on a 4 x 5 image */
  stk_args_set_float_list(a, "sigma", &sigma, 1);
  stk__op *op = op_make("gaussian_blur", a, 1);
  stk__tensor u8 = op_image(5, 4, 1, 9), img = as_float(&u8, "HWC"), out = {0};
  stk__tensor *in[1] = {&img};
  if (op && op_run(op, 0, 0, in, &out) == STK_OK) expect_blur("radius 9 on 4x5", &img, &out, 1, 4, 5, 1, 0, 3, 9, 3, 9);
  stk__op_free_standalone(op);
  stk__tensor_free(&u8);
  stk__tensor_free(&img);
  stk__tensor_free(&out);
}

static void per_sample_sigma_and_dtype(void) {
  stk_args *a = op_args();
  stk_args_set_input(a, "sigma", "s");
  stk_args_set_string(a, "dtype", "float");
  stk__op *op = op_make("gaussian_blur", a, 1);
  stk__tensor img = op_image(21, 15, 3, 10), out = {0}, s1 = op_scalar(0.8f), s2 = {0};
  int64_t two = 2;
  CHECK(stk__tensor_resize(&s2, STK_DTYPE_FLOAT32, 1, &two, "") == STK_OK);
  ((float *)s2.data)[0] = 2.0f; /* H */
  ((float *)s2.data)[1] = 0.5f; /* W */
  stk__tensor *in1[2] = {&img, &s1}, *in2[2] = {&img, &s2};
  if (op && op_run(op, 0, 0, in1, &out) == STK_OK) {
    CHECK(out.dtype == STK_DTYPE_FLOAT32);
    expect_blur("sigma input 0.8", &img, &out, 1, 15, 21, 3, 0, 0.8, 3, 0.8, 3);
  }
  if (op && op_run(op, 0, 1, in2, &out) == STK_OK) expect_blur("sigma input [2, 0.5]", &img, &out, 1, 15, 21, 3, 0, 2.0, 6, 0.5, 2);
  stk__op_free_standalone(op);
  stk__tensor_free(&img);
  stk__tensor_free(&out);
  stk__tensor_free(&s1);
  stk__tensor_free(&s2);
}

static void bad_arguments_are_named(void) {
  stk__tensor img = op_image(8, 8, 3, 1), out = {0};
  stk__tensor *in[1] = {&img};
  stk__op *op = op_make("gaussian_blur", op_args(), 1); /* neither sigma nor window_size */
  if (op) CHECK(op_run(op, 0, 0, in, &out) == STK_EINVAL && strstr(op_test_err, "sigma"));
  stk__op_free_standalone(op);
  stk_args *a = op_args();
  int64_t even = 4;
  stk_args_set_int_list(a, "window_size", &even, 1);
  op = op_make("gaussian_blur", a, 1);
  if (op) CHECK(op_run(op, 0, 0, in, &out) == STK_EINVAL && strstr(op_test_err, "odd"));
  stk__op_free_standalone(op);
  a = op_args();
  double three[3] = {1, 1, 1};
  stk_args_set_float_list(a, "sigma", three, 3);
  op = op_make("gaussian_blur", a, 1);
  if (op) CHECK(op_run(op, 0, 0, in, &out) == STK_EINVAL && strstr(op_test_err, "per spatial axis"));
  stk__op_free_standalone(op);
  a = op_args();
  stk_args_set_string(a, "dtype", "complex");
  op_expect_bad("gaussian_blur", a, "dtype");
  stk__tensor_free(&img);
  stk__tensor_free(&out);
}

/* one STK_TEST_CASE per line: tests/CMakeLists.txt reads them */
// clang-format off
static const stk_test_case cases[] = {
    STK_TEST_CASE(hwc_uint8_matches_direct_convolution),
    STK_TEST_CASE(per_axis_sigma_and_window_on_float),
    STK_TEST_CASE(channels_and_frames_are_not_blurred),
    STK_TEST_CASE(radius_beyond_the_image_reflects_again),
    STK_TEST_CASE(per_sample_sigma_and_dtype),
    STK_TEST_CASE(bad_arguments_are_named),
};
// clang-format on

int main(int argc, char **argv) {
  if (stk_test_list_cases(cases, STK_TEST_COUNT(cases), argc, argv)) return 0;
  int rc = stk_test_run_selected("test_gaussian_blur", cases, STK_TEST_COUNT(cases), argc, argv);
  op_test_cleanup();
  return rc ? rc : stk_test_finish("test_gaussian_blur");
}
