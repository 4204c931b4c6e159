/* src/ops/augment/jitter/test_jitter.c: `jitter` on the CPU: on an image whose pixels hold their
 * own coordinates (float HWC: y, x), every output pixel is recovered as a move (dy, dx) that must
 * lie in [-nDegree/2, nDegree/2] (or the pixel is fill_value, only where the move can leave the
 * image), and every allowed move appears about equally often (within 5 standard errors); uint8
 * fill; mask 0 (per sample) and nDegree 0 copy the input; the same (seed, operator, epoch, sample)
 * gives the same bytes, another sample, epoch or seed other bytes; bad arguments are named. Not on
 * a hot path. */
#include <math.h>

#include "case_list.h"
#include "op_test.h"

static stk__tensor coord_image(int w, int h) {
  stk__tensor t;
  memset(&t, 0, sizeof t);
  int64_t shape[3] = {h, w, 2};
  CHECK(stk__tensor_resize(&t, STK_DTYPE_FLOAT32, 3, shape, "HWC") == STK_OK);
  for (int y = 0; y < h; y++)
    for (int x = 0; x < w; x++) {
      ((float *)t.data)[(y * w + x) * 2] = (float)y;
      ((float *)t.data)[(y * w + x) * 2 + 1] = (float)x;
    }
  return t;
}

static void moves_stay_within_half_of_ndegree(void) {
  const int degrees[2] = {2, 5};
  for (int k = 0; k < 2; k++) {
    const int half = degrees[k] / 2, span = 2 * half + 1, w = 120, h = 90;
    stk_args *a = op_args();
    stk_args_set_int(a, "nDegree", degrees[k]);
    stk_args_set_float(a, "fill_value", -1);
    stk__op *op = op_make("jitter", a, 3);
    stk__tensor img = coord_image(w, h), out = {0};
    stk__tensor *in[1] = {&img};
    if (!op || op_run(op, 0, 4, in, &out) != STK_OK) {
      CHECK_MSG(0, "jitter: %s", op_test_err);
      stk__op_free_standalone(op);
      continue;
    }
    long counts[11][11] = {{0}}, outside = 0, interior = 0;
    int bad = 0;
    for (int y = 0; y < h; y++)
      for (int x = 0; x < w; x++) {
        const float *o = (const float *)out.data + (y * w + x) * 2;
        const int edge = y < half || x < half || y >= h - half || x >= w - half;
        if (o[0] == -1.0f && o[1] == -1.0f) {
          outside++;
          bad += !edge;
          continue;
        }
        const int dy = (int)o[0] - y, dx = (int)o[1] - x;
        if (abs(dy) > half || abs(dx) > half) {
          bad++;
          continue;
        }
        if (!edge) {
          counts[dy + half][dx + half]++;
          interior++;
        }
      }
    CHECK_MSG(bad == 0, "nDegree %d: %d pixels moved too far or filled inside", degrees[k], bad);
    CHECK_MSG(half == 0 || outside > 0, "nDegree %d: no pixel at the border took fill_value", degrees[k]);
    const double p = 1.0 / (span * span), se = sqrt(interior * p * (1 - p));
    for (int i = 0; i < span; i++)
      for (int j = 0; j < span; j++)
        CHECK_MSG(fabs(counts[i][j] - interior * p) < 5 * se, "nDegree %d: move (%d, %d) seen %ld times of %ld",
                  degrees[k], i - half, j - half, counts[i][j], interior);
    stk__op_free_standalone(op);
    stk__tensor_free(&img);
    stk__tensor_free(&out);
  }
}

static void mask_and_zero_degree_copy_the_input(void) {
  stk_args *a = op_args();
  stk_args_set_input(a, "mask", "m");
  stk__op *op = op_make("jitter", a, 3);
  stk__tensor img = op_image(40, 30, 3, 2), out = {0}, off = op_scalar(0.0f), on = op_scalar(1.0f);
  stk__tensor *in0[2] = {&img, &off}, *in1[2] = {&img, &on};
  if (op) {
    CHECK(op_run(op, 0, 1, in0, &out) == STK_OK && memcmp(out.data, img.data, img.nbytes) == 0);
    CHECK(op_run(op, 0, 1, in1, &out) == STK_OK && memcmp(out.data, img.data, img.nbytes) != 0);
  }
  stk__op_free_standalone(op);
  a = op_args();
  stk_args_set_int(a, "nDegree", 0);
  op = op_make("jitter", a, 3);
  stk__tensor *in[1] = {&img};
  if (op) CHECK(op_run(op, 0, 1, in, &out) == STK_OK && memcmp(out.data, img.data, img.nbytes) == 0);
  stk__op_free_standalone(op);
  /* uint8 fill: fill_value 200 at the border of a black image */
  a = op_args();
  stk_args_set_float(a, "fill_value", 200);
  op = op_make("jitter", a, 3);
  memset(img.data, 0, img.nbytes);
  if (op && op_run(op, 0, 1, in, &out) == STK_OK) {
    long filled = 0, other = 0;
    for (size_t i = 0; i < out.nbytes; i++) {
      filled += ((uint8_t *)out.data)[i] == 200;
      other += ((uint8_t *)out.data)[i] != 200 && ((uint8_t *)out.data)[i] != 0;
    }
    CHECK_MSG(filled > 0 && other == 0, "uint8 fill: %ld filled, %ld other values", filled, other);
  }
  stk__op_free_standalone(op);
  stk__tensor_free(&img);
  stk__tensor_free(&out);
  stk__tensor_free(&off);
  stk__tensor_free(&on);
}

static void same_key_same_bytes(void) {
  stk__op *op = op_make("jitter", op_args(), 5);
  stk_args *a = op_args();
  stk_args_set_int(a, "seed", 1234);
  stk__op *seeded = op_make("jitter", a, 5);
  stk__tensor img = op_image(64, 48, 3, 3), x = {0}, y = {0};
  stk__tensor *in[1] = {&img};
  if (op && seeded) {
    CHECK(op_run(op, 2, 9, in, &x) == STK_OK && op_run(op, 2, 9, in, &y) == STK_OK);
    CHECK(memcmp(x.data, y.data, x.nbytes) == 0);
    CHECK(op_run(op, 2, 10, in, &y) == STK_OK && memcmp(x.data, y.data, x.nbytes) != 0);
    CHECK(op_run(op, 3, 9, in, &y) == STK_OK && memcmp(x.data, y.data, x.nbytes) != 0);
    CHECK(op_run(seeded, 2, 9, in, &y) == STK_OK && memcmp(x.data, y.data, x.nbytes) != 0);
  }
  stk__op_free_standalone(op);
  stk__op_free_standalone(seeded);
  stk__tensor_free(&img);
  stk__tensor_free(&x);
  stk__tensor_free(&y);
}

static void bad_arguments_are_named(void) {
  stk_args *a = op_args();
  stk_args_set_int(a, "nDegree", -1);
  op_expect_bad("jitter", a, "nDegree");
  a = op_args();
  stk_args_set_string(a, "interp_type", "INTERP_LINEAR");
  op_expect_bad("jitter", a, "interp_type");
  stk__op *op = op_make("jitter", op_args(), 1);
  stk__tensor chw = op_image(8, 8, 3, 1), out = {0};
  strcpy(chw.layout, "CHW");
  stk__tensor *in[1] = {&chw};
  if (op) CHECK(op_run(op, 0, 0, in, &out) == STK_EINVAL && strstr(op_test_err, "HWC"));
  stk__op_free_standalone(op);
  stk__tensor_free(&chw);
  stk__tensor_free(&out);
}

/* one STK_TEST_CASE per line: tests/CMakeLists.txt reads them */
// clang-format off
static const stk_test_case cases[] = {
    STK_TEST_CASE(moves_stay_within_half_of_ndegree),
    STK_TEST_CASE(mask_and_zero_degree_copy_the_input),
    STK_TEST_CASE(same_key_same_bytes),
    STK_TEST_CASE(bad_arguments_are_named),
};
// clang-format on

int main(int argc, char **argv) {
  if (stk_test_list_cases(cases, STK_TEST_COUNT(cases), argc, argv)) return 0;
  int rc = stk_test_run_selected("test_jitter", cases, STK_TEST_COUNT(cases), argc, argv);
  op_test_cleanup();
  return rc ? rc : stk_test_finish("test_jitter");
}
