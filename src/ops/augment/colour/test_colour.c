/* src/ops/augment/colour/test_colour.c: the colour family on the CPU against independent double
 * precision formulas: brightness_contrast's DALI formula (uint8 within one level of round-half-up,
 * float exact to 1e-4), saturation 0 = BT.601 luma grey, hue rotation against a YIQ round trip
 * written with the published YIQ -> RGB coefficients, value scaling, color_twist, per-sample bound
 * arguments, color_space_conversion (BGR swap exact, GRAY luma, YCbCr studio-range anchors and a
 * round trip), and errors naming the argument or the channel count. Not on any hot path. */
#include <math.h>

#include "case_list.h"
#include "op_test.h"

#define W 23
#define H 17

static stk__op *colour_op(const char *name, stk_args *a) { return op_make(name, a, 21); }

/* Max |out - want(x)| over an RGB u8 image, where want is a per-pixel function in double. */
typedef void (*pixel_fn)(const double in[3], double out[3], const void *arg);

static double worst_u8(stk__op *op, stk__tensor *img, stk__tensor **extra, pixel_fn want, const void *arg) {
  stk__tensor out = {0};
  stk__tensor *inputs[2] = {img, extra ? *extra : NULL};
  CHECK_MSG(op_run(op, 0, 0, inputs, &out) == STK_OK, "run: %s", op_test_err);
  double worst = 0;
  if (out.dtype != STK_DTYPE_UINT8 || out.nbytes != img->nbytes) {
    CHECK_MSG(0, "output is not a uint8 image like the input");
    stk__tensor_free(&out);
    return 1e9;
  }
  const uint8_t *in = img->data, *o = out.data;
  for (size_t p = 0; p < img->nbytes / 3; p++) {
    double x[3] = {in[p * 3], in[p * 3 + 1], in[p * 3 + 2]}, y[3];
    want(x, y, arg);
    for (int c = 0; c < 3; c++) {
      double w = floor(fmin(255, fmax(0, y[c])) + 0.5);
      worst = fmax(worst, fabs(o[p * 3 + c] - w));
    }
  }
  stk__tensor_free(&out);
  return worst;
}

typedef struct bc_arg {
  double b, shift, c, center;
} bc_arg;

static void bc_want(const double in[3], double out[3], const void *arg) {
  const bc_arg *a = arg;
  for (int k = 0; k < 3; k++) out[k] = a->shift * 255 + a->b * (a->center + a->c * (in[k] - a->center));
}

static void brightness_contrast_follows_dalis_formula(void) {
  stk__tensor img = op_image(W, H, 3, 1);
  const bc_arg cases[3] = {{1.3, 0.1, 0.7, 128}, {0.5, 0, 2.0, 100}, {-1, 1, 1, 128}};
  for (int k = 0; k < 3; k++) {
    stk_args *a = op_args();
    stk_args_set_float(a, "brightness", cases[k].b);
    stk_args_set_float(a, "brightness_shift", cases[k].shift);
    stk_args_set_float(a, "contrast", cases[k].c);
    if (k == 1) stk_args_set_float(a, "contrast_center", cases[k].center);
    stk__op *op = colour_op("brightness_contrast", a);
    if (!op) continue;
    double worst = worst_u8(op, &img, NULL, bc_want, &cases[k]);
    CHECK_MSG(worst <= 1, "brightness_contrast case %d: %g levels off", k, worst);
    stk__op_free_standalone(op);
  }
  /* brightness alone, float output: exact formula. */
  stk_args *a = op_args();
  stk_args_set_float(a, "brightness", 0.5);
  stk_args_set_float(a, "brightness_shift", 0.25);
  stk_args_set_string(a, "dtype", "float");
  stk__op *op = colour_op("brightness", a);
  stk__tensor out = {0};
  stk__tensor *inputs[1] = {&img};
  if (op && op_run(op, 0, 0, inputs, &out) == STK_OK) {
    CHECK(out.dtype == STK_DTYPE_FLOAT32 && out.ndim == 3);
    double worst = 0;
    for (size_t i = 0; i < img.nbytes; i++)
      worst = fmax(worst, fabs(((float *)out.data)[i] - (0.25 + 0.5 * ((uint8_t *)img.data)[i])));
    CHECK_MSG(worst < 1e-4, "brightness float: off by %g", worst);
  }
  stk__op_free_standalone(op);
  stk__tensor_free(&out);
  stk__tensor_free(&img);
}

static void luma_grey(const double in[3], double out[3], const void *arg) {
  double y = 0.299 * in[0] + 0.587 * in[1] + 0.114 * in[2];
  out[0] = out[1] = out[2] = y;
}

/* Hue rotation by an independent YIQ round trip (published YIQ -> RGB coefficients). */
static void hue_want(const double in[3], double out[3], const void *arg) {
  const double *hsv = arg, h = hsv[0] * M_PI / 180, s = hsv[1], v = hsv[2];
  double y = 0.299 * in[0] + 0.587 * in[1] + 0.114 * in[2];
  double i = 0.596 * in[0] - 0.274 * in[1] - 0.322 * in[2];
  double q = 0.211 * in[0] - 0.523 * in[1] + 0.312 * in[2];
  double i2 = v * s * (i * cos(h) - q * sin(h)), q2 = v * s * (i * sin(h) + q * cos(h));
  y *= v;
  out[0] = y + 0.956 * i2 + 0.621 * q2;
  out[1] = y - 0.272 * i2 - 0.647 * q2;
  out[2] = y - 1.106 * i2 + 1.703 * q2;
}

static void hsv_family_acts_in_yiq(void) {
  stk__tensor img = op_image(W, H, 3, 2);
  stk_args *a = op_args();
  stk_args_set_float(a, "saturation", 0.0);
  stk__op *op = colour_op("saturation", a);
  if (op) CHECK_MSG(worst_u8(op, &img, NULL, luma_grey, NULL) <= 1, "saturation 0 is not BT.601 grey");
  stk__op_free_standalone(op);
  const double hsv_cases[3][3] = {{0, 1, 1}, {120, 1, 1}, {-45, 0.6, 0.8}};
  for (int k = 0; k < 3; k++) {
    a = op_args();
    stk_args_set_float(a, "hue", hsv_cases[k][0]);
    stk_args_set_float(a, "saturation", hsv_cases[k][1]);
    stk_args_set_float(a, "value", hsv_cases[k][2]);
    op = colour_op("hsv", a);
    if (!op) continue;
    double worst = worst_u8(op, &img, NULL, hue_want, hsv_cases[k]);
    CHECK_MSG(worst <= 2, "hsv(%g, %g, %g): %g levels from the YIQ reference", hsv_cases[k][0], hsv_cases[k][1],
              hsv_cases[k][2], worst);
    stk__op_free_standalone(op);
  }
  /* hue alone = hsv with saturation and value 1; color_twist with brightness/contrast 1 = hsv. */
  a = op_args();
  stk_args_set_float(a, "hue", 30);
  op = colour_op("hue", a);
  const double h30[3] = {30, 1, 1};
  if (op) CHECK(worst_u8(op, &img, NULL, hue_want, h30) <= 2);
  stk__op_free_standalone(op);
  a = op_args();
  stk_args_set_float(a, "hue", 30);
  op = colour_op("color_twist", a);
  if (op) CHECK(worst_u8(op, &img, NULL, hue_want, h30) <= 2);
  stk__op_free_standalone(op);
  stk__tensor_free(&img);
}

static void arguments_bind_per_sample(void) {
  stk__tensor img = op_image(W, H, 3, 3);
  stk_args *a = op_args();
  stk_args_set_input(a, "brightness", "b");
  stk__op *op = colour_op("brightness", a);
  const bc_arg half = {0.5, 0, 1, 128}, twice = {2, 0, 1, 128};
  stk__tensor b1 = op_scalar(0.5f), b2 = op_scalar(2.0f);
  stk__tensor *p1 = &b1, *p2 = &b2;
  if (op) {
    CHECK(worst_u8(op, &img, &p1, bc_want, &half) <= 1);
    CHECK(worst_u8(op, &img, &p2, bc_want, &twice) <= 1);
  }
  stk__op_free_standalone(op);
  stk__tensor_free(&b1);
  stk__tensor_free(&b2);
  stk__tensor_free(&img);
}

static void color_space_conversion_matches_bt601(void) {
  stk__tensor img = op_image(W, H, 3, 4), out = {0}, back = {0};
  stk__tensor *inputs[1] = {&img};
  const char *pairs[3][2] = {{"RGB", "BGR"}, {"RGB", "GRAY"}, {"RGB", "YCbCr"}};
  for (int k = 0; k < 3; k++) {
    stk_args *a = op_args();
    stk_args_set_string(a, "image_type", pairs[k][0]);
    stk_args_set_string(a, "output_type", pairs[k][1]);
    stk__op *op = colour_op("color_space_conversion", a);
    if (!op || op_run(op, 0, 0, inputs, &out) != STK_OK) {
      CHECK_MSG(0, "%s -> %s: %s", pairs[k][0], pairs[k][1], op_test_err);
      stk__op_free_standalone(op);
      continue;
    }
    const uint8_t *in = img.data, *o = out.data;
    double worst = 0;
    for (size_t p = 0; p < img.nbytes / 3; p++) {
      double r = in[p * 3], g = in[p * 3 + 1], b = in[p * 3 + 2];
      if (k == 0) worst = fmax(worst, fabs(o[p * 3] - b) + fabs(o[p * 3 + 2] - r) + fabs(o[p * 3 + 1] - g));
      if (k == 1) worst = fmax(worst, fabs(o[p] - floor(0.299 * r + 0.587 * g + 0.114 * b + 0.5)));
      if (k == 2) {
        double y = 16 + 219 * (0.299 * r + 0.587 * g + 0.114 * b) / 255;
        double cb = 128 + 224 * 0.5 * (b - (0.299 * r + 0.587 * g + 0.114 * b)) / (1 - 0.114) / 255;
        worst = fmax(worst, fmax(fabs(o[p * 3] - y), fabs(o[p * 3 + 1] - cb)));
      }
    }
    CHECK_MSG(out.shape[2] == (k == 1 ? 1 : 3), "%s output has %lld channels", pairs[k][1], (long long)out.shape[2]);
    CHECK_MSG(worst <= (k == 0 ? 0 : 1), "%s -> %s: %g levels off", pairs[k][0], pairs[k][1], worst);
    if (k == 2) { /* and back to RGB within 2 levels */
      stk_args *b2 = op_args();
      stk_args_set_string(b2, "image_type", "YCbCr");
      stk_args_set_string(b2, "output_type", "RGB");
      stk__op *inv = colour_op("color_space_conversion", b2);
      stk__tensor *ycc[1] = {&out};
      if (inv && op_run(inv, 0, 0, ycc, &back) == STK_OK) {
        double rt = 0;
        for (size_t i = 0; i < img.nbytes; i++) rt = fmax(rt, fabs((double)((uint8_t *)back.data)[i] - in[i]));
        CHECK_MSG(rt <= 2, "RGB -> YCbCr -> RGB: %g levels off", rt);
      }
      stk__op_free_standalone(inv);
    }
    stk__op_free_standalone(op);
  }
  stk__tensor_free(&img);
  stk__tensor_free(&out);
  stk__tensor_free(&back);
}

static void bad_inputs_and_arguments_are_named(void) {
  stk_args *a = op_args();
  stk_args_set_string(a, "image_type", "HSL");
  stk_args_set_string(a, "output_type", "RGB");
  op_expect_bad("color_space_conversion", a, "image_type");
  a = op_args();
  stk_args_set_string(a, "dtype", "complex");
  op_expect_bad("brightness", a, "dtype");
  stk__tensor rgba = op_image(5, 5, 4, 5), out = {0};
  stk__tensor *inputs[1] = {&rgba};
  stk__op *op = colour_op("hue", op_args());
  if (op) CHECK(op_run(op, 0, 0, inputs, &out) == STK_EINVAL && strstr(op_test_err, "3 channels"));
  stk__op_free_standalone(op);
  op = colour_op("brightness", op_args()); /* per-channel ops take 4 channels */
  if (op) CHECK(op_run(op, 0, 0, inputs, &out) == STK_OK && memcmp(out.data, rgba.data, rgba.nbytes) == 0);
  stk__op_free_standalone(op);
  stk__tensor_free(&rgba);
  stk__tensor_free(&out);
}

/* one STK_TEST_CASE per line: tests/CMakeLists.txt reads them */
// clang-format off
static const stk_test_case cases[] = {
    STK_TEST_CASE(brightness_contrast_follows_dalis_formula),
    STK_TEST_CASE(hsv_family_acts_in_yiq),
    STK_TEST_CASE(arguments_bind_per_sample),
    STK_TEST_CASE(color_space_conversion_matches_bt601),
    STK_TEST_CASE(bad_inputs_and_arguments_are_named),
};
// clang-format on

int main(int argc, char **argv) {
  if (stk_test_list_cases(cases, STK_TEST_COUNT(cases), argc, argv)) return 0;
  int rc = stk_test_run_selected("test_colour", cases, STK_TEST_COUNT(cases), argc, argv);
  op_test_cleanup();
  return rc ? rc : stk_test_finish("test_colour");
}
