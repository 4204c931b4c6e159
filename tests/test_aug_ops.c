/* tests/test_aug_ops.c: the augmentation operators through the registry (stk__op_new_standalone):
 * argument checking with messages naming the operator and argument, resize / random_resized_crop /
 * crop_mirror_normalize producing exactly what the src/ops/common/ reference functions produce for the window or
 * size their DALI rules imply, mirror bound to a per-sample input, out_of_bounds_policy,
 * random.coin_flip's mean and determinism by (seed, operator id, epoch, sample), and cast's
 * rounding and saturation. Not on any hot path. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "core/engine.h"
#include "ops/augment/crop_mirror_normalize/cmn_reference.h"
#include "ops/common/dtype.h"
#include "ops/augment/resize/resize_params.h"
#include "ops/augment/resize/resize_reference.h"
#include "ops/op_impls.h"
#include "case_list.h"
#include "testutil.h"

static char err[1024];
static stk__worker worker;

static stk__op *make_op(const char *name, stk_args *args, int id) {
  stk__op *op = NULL;
  err[0] = 0;
  stk_status st = stk__op_new_standalone(name, "cpu", args, NULL, id, &op, err, sizeof err);
  CHECK_MSG(st == STK_OK, "%s: %s", name, err);
  return st == STK_OK ? op : NULL;
}

/* Expects building `name` with args to fail with STK_EINVAL and a message containing `needle`. */
static void expect_bad_args(const char *name, stk_args *args, const char *needle) {
  stk__op *op = NULL;
  err[0] = 0;
  stk_status st = stk__op_new_standalone(name, "cpu", args, NULL, 1, &op, err, sizeof err);
  CHECK_MSG(st != STK_OK && op == NULL, "%s accepted bad arguments (wanted an error about %s)", name, needle);
  CHECK_MSG(strstr(err, needle) != NULL, "%s: message \"%s\" does not mention \"%s\"", name, err, needle);
  CHECK_MSG(strstr(err, name) != NULL, "message \"%s\" does not name the operator %s", err, name);
  stk_args_destroy(args);
}

static stk_args *args_new(void) {
  stk_args *a = NULL;
  CHECK(stk_args_new(&a) == STK_OK);
  return a;
}

static stk__sample_ctx sample_ctx(uint64_t epoch, int64_t sample_id) {
  stk__sample_ctx ctx;
  memset(&ctx, 0, sizeof ctx);
  ctx.epoch = epoch;
  ctx.sample_id = sample_id;
  ctx.err = err;
  ctx.err_size = sizeof err;
  ctx.thread_scratch = &worker;
  return ctx;
}

static stk_status run(stk__op *op, uint64_t epoch, int64_t sample, stk__tensor **inputs, stk__tensor *out) {
  stk__sample_ctx ctx = sample_ctx(epoch, sample);
  stk__tensor *outs[1] = {out};
  err[0] = 0;
  return op->impl->run_sample(op, &ctx, inputs, outs);
}

static stk__tensor image_tensor(int w, int h, int c, unsigned seed) {
  stk__tensor t;
  memset(&t, 0, sizeof t);
  int64_t shape[3] = {h, w, c};
  CHECK(stk__tensor_resize(&t, STK_DTYPE_UINT8, 3, shape, "HWC") == STK_OK);
  uint8_t *p = t.data;
  uint32_t s = seed;
  for (size_t i = 0; i < t.nbytes; i++) {
    s = s * 1664525u + 1013904223u;
    p[i] = (uint8_t)((i / 3 % 200) + (s >> 29));
  }
  return t;
}

static void test_coin_flip(void) {
  stk_args *a = args_new();
  stk_args_set_float(a, "probability", 0.2);
  stk__op *coin = make_op("random.coin_flip", a, 4);
  stk_args_destroy(a);
  stk__op *fair = make_op("random.coin_flip", NULL, 5);
  if (!coin || !fair) return;
  stk__tensor out = {0};
  long ones = 0, fair_ones = 0, same_epoch_other_op = 0;
  const int n = 20000;
  for (int i = 0; i < n; i++) {
    CHECK(run(coin, 0, i, NULL, &out) == STK_OK);
    CHECK(out.dtype == STK_DTYPE_INT32 && out.ndim == 0 && out.nbytes == 4);
    int32_t v = *(int32_t *)out.data;
    CHECK(v == 0 || v == 1);
    ones += v;
    CHECK(run(fair, 0, i, NULL, &out) == STK_OK);
    fair_ones += *(int32_t *)out.data;
    same_epoch_other_op += *(int32_t *)out.data == v;
  }
  /* 4.5 standard deviations: 0.2 -> sd 0.0028, 0.5 -> sd 0.0035. */
  CHECK_MSG(fabs((double)ones / n - 0.2) < 0.0127, "coin_flip(0.2) mean %f", (double)ones / n);
  CHECK_MSG(fabs((double)fair_ones / n - 0.5) < 0.016, "coin_flip() mean %f", (double)fair_ones / n);
  /* Deterministic by key; a different epoch gives a different (independent) sequence. */
  int same = 1, agree_next_epoch = 0;
  for (int i = 0; i < 2000; i++) {
    CHECK(run(fair, 3, i, NULL, &out) == STK_OK);
    int32_t a1 = *(int32_t *)out.data;
    CHECK(run(fair, 3, i, NULL, &out) == STK_OK);
    if (*(int32_t *)out.data != a1) same = 0;
    CHECK(run(fair, 4, i, NULL, &out) == STK_OK);
    agree_next_epoch += *(int32_t *)out.data == a1;
  }
  CHECK_MSG(same, "coin_flip is not deterministic by (seed, op, epoch, sample)");
  CHECK_MSG(agree_next_epoch > 850 && agree_next_epoch < 1150, "epochs 3 and 4 agree on %d of 2000 flips",
            agree_next_epoch);
  (void)same_epoch_other_op;
  /* Seed matters: a pipeline seed of 7 gives another sequence. */
  stk_pipeline_options opts;
  stk_pipeline_options_default(&opts);
  opts.seed = 7;
  stk__op *seeded = NULL;
  CHECK(stk__op_new_standalone("random.coin_flip", "cpu", NULL, &opts, 5, &seeded, err, sizeof err) == STK_OK);
  int agree_seed = 0;
  for (int i = 0; i < 2000 && seeded; i++) {
    CHECK(run(fair, 0, i, NULL, &out) == STK_OK);
    int32_t v = *(int32_t *)out.data;
    CHECK(run(seeded, 0, i, NULL, &out) == STK_OK);
    agree_seed += *(int32_t *)out.data == v;
  }
  CHECK_MSG(agree_seed > 850 && agree_seed < 1150, "seeds 42 and 7 agree on %d of 2000 flips", agree_seed);
  stk__op_free_standalone(seeded);
  /* Probability 0 and 1 are exact. */
  for (int p = 0; p <= 1; p++) {
    a = args_new();
    stk_args_set_float(a, "probability", p);
    stk__op *fixed = make_op("random.coin_flip", a, 6);
    stk_args_destroy(a);
    int wrong = 0;
    for (int i = 0; i < 1000 && fixed; i++) {
      CHECK(run(fixed, 0, i, NULL, &out) == STK_OK);
      wrong += *(int32_t *)out.data != p;
    }
    CHECK(wrong == 0);
    stk__op_free_standalone(fixed);
  }
  a = args_new();
  stk_args_set_float(a, "probability", 1.5);
  expect_bad_args("random.coin_flip", a, "probability");
  stk__tensor_free(&out);
  stk__op_free_standalone(coin);
  stk__op_free_standalone(fair);
}

static void test_cast(void) {
  stk_args *a = args_new();
  stk_args_set_string(a, "dtype", "uint8");
  stk__op *to_u8 = make_op("cast", a, 1);
  stk_args_destroy(a);
  a = args_new();
  stk_args_set_string(a, "dtype", "float16");
  stk__op *to_f16 = make_op("cast", a, 2);
  stk_args_destroy(a);
  a = args_new();
  stk_args_set_string(a, "dtype", "int32");
  stk__op *to_i32 = make_op("cast", a, 3);
  stk_args_destroy(a);
  if (!to_u8 || !to_f16 || !to_i32) return;
  float values[8] = {-3.4f, 2.5f, 2.49f, 300.0f, NAN, 0.0f, 254.5f, -0.5f};
  stk__tensor in = {0};
  int64_t shape[2] = {2, 4};
  CHECK(stk__tensor_resize(&in, STK_DTYPE_FLOAT32, 2, shape, "XY") == STK_OK);
  memcpy(in.data, values, sizeof values);
  stk__tensor *inputs[1] = {&in};
  stk__tensor out = {0};
  CHECK(run(to_u8, 0, 0, inputs, &out) == STK_OK);
  const uint8_t want_u8[8] = {0, 3, 2, 255, 0, 0, 255, 0};
  CHECK(out.dtype == STK_DTYPE_UINT8 && out.ndim == 2 && out.shape[0] == 2 && out.shape[1] == 4 &&
        strcmp(out.layout, "XY") == 0);
  CHECK(memcmp(out.data, want_u8, 8) == 0);
  CHECK(run(to_i32, 0, 0, inputs, &out) == STK_OK);
  const int32_t want_i32[8] = {-3, 3, 2, 300, 0, 0, 255, -1};
  CHECK(memcmp(out.data, want_i32, sizeof want_i32) == 0);
  CHECK(run(to_f16, 0, 0, inputs, &out) == STK_OK);
  const uint16_t *h = out.data;
  CHECK(out.dtype == STK_DTYPE_FLOAT16 && h[1] == 0x4100 && h[3] == 0x5cb0 && h[5] == 0x0000);
  /* float16 back to uint8 through the decoder. */
  stk__tensor half_in = out;
  memset(&out, 0, sizeof out);
  stk__tensor *half_inputs[1] = {&half_in};
  stk__tensor back = {0};
  CHECK(run(to_u8, 0, 0, half_inputs, &back) == STK_OK);
  CHECK(((uint8_t *)back.data)[1] == 3 && ((uint8_t *)back.data)[3] == 255);
  a = args_new();
  stk_args_set_string(a, "dtype", "complex64");
  expect_bad_args("cast", a, "dtype");
  expect_bad_args("cast", NULL, "dtype"); /* required */
  stk__tensor_free(&in);
  stk__tensor_free(&half_in);
  stk__tensor_free(&back);
  stk__op_free_standalone(to_u8);
  stk__op_free_standalone(to_f16);
  stk__op_free_standalone(to_i32);
}

static void test_resize_op(void) {
  stk_args *a = args_new();
  stk_args_set_float(a, "resize_shorter", 256);
  stk__op *op = make_op("resize", a, 2);
  stk_args_destroy(a);
  if (!op) return;
  stk__tensor img = image_tensor(500, 375, 3, 1);
  stk__tensor *inputs[1] = {&img};
  stk__tensor out = {0};
  CHECK_MSG(run(op, 0, 0, inputs, &out) == STK_OK, "%s", err);
  CHECK(out.ndim == 3 && out.shape[0] == 256 && out.shape[1] == 341 && out.shape[2] == 3 &&
        strcmp(out.layout, "HWC") == 0);
  /* Exactly the plan + resampler of image_ops. */
  stk__resize_params p = {0};
  p.resize_shorter = 256;
  p.subpixel_scale = 1;
  int ow, oh;
  double roi[4];
  CHECK(stk__resize_plan(&p, 500, 375, &ow, &oh, roi) == STK_OK);
  uint8_t *want = malloc((size_t)ow * oh * 3);
  void *scratch = malloc(stk__resize_roi_scratch_bytes(500, 375, 3, roi, ow, oh, STK__INTERP_LINEAR, 1));
  CHECK(stk__resize_u8_roi(img.data, 500, 375, 1500, 3, roi, want, ow, oh, STK__INTERP_LINEAR, 1, scratch) == STK_OK);
  CHECK(memcmp(out.data, want, (size_t)ow * oh * 3) == 0);
  free(want);
  free(scratch);
  stk__op_free_standalone(op);

  /* size=[h, w] with nearest neighbour; an identity size copies the image. */
  a = args_new();
  const double size[2] = {375, 500};
  stk_args_set_float_list(a, "size", size, 2);
  stk_args_set_string(a, "interp_type", "nearest");
  op = make_op("resize", a, 2);
  stk_args_destroy(a);
  if (op) {
    CHECK(run(op, 0, 0, inputs, &out) == STK_OK);
    CHECK(out.shape[0] == 375 && out.shape[1] == 500 && memcmp(out.data, img.data, img.nbytes) == 0);
    /* Input errors are statuses with a message, not crashes. */
    stk__tensor bad = {0};
    int64_t shape[2] = {4, 4};
    stk__tensor_resize(&bad, STK_DTYPE_FLOAT32, 2, shape, "HW");
    stk__tensor *bad_inputs[1] = {&bad};
    CHECK(run(op, 0, 0, bad_inputs, &out) == STK_EINVAL && strstr(err, "HWC uint8") != NULL);
    stk__tensor_free(&bad);
    stk__op_free_standalone(op);
  }
  expect_bad_args("resize", NULL, "output size");
  a = args_new();
  stk_args_set_float(a, "resize_x", 10);
  stk_args_set_string(a, "interp_type", "bilinear");
  expect_bad_args("resize", a, "interp_type");
  a = args_new();
  stk_args_set_float(a, "resize_x", 10);
  stk_args_set_string(a, "mode", "fit");
  expect_bad_args("resize", a, "mode");
  a = args_new();
  stk_args_set_float(a, "resize_x", 10);
  stk_args_set_float(a, "resize_shorter", 10);
  expect_bad_args("resize", a, "mutually exclusive");
  stk__tensor_free(&img);
  stk__tensor_free(&out);
}

static void test_random_resized_crop_op(void) {
  stk_args *a = args_new();
  const double size[1] = {224};
  stk_args_set_float_list(a, "size", size, 1);
  stk__op *op = make_op("random_resized_crop", a, 3);
  stk_args_destroy(a);
  if (!op) return;
  stk__tensor img = image_tensor(500, 375, 3, 2);
  stk__tensor *inputs[1] = {&img};
  stk__tensor out = {0};
  uint8_t *want = malloc(224 * 224 * 3);
  int mismatches = 0, distinct_windows = 0;
  stk__window previous = {0, 0, 0, 0};
  for (int sample = 0; sample < 8; sample++) {
    CHECK_MSG(run(op, 1, sample, inputs, &out) == STK_OK, "%s", err);
    CHECK(out.shape[0] == 224 && out.shape[1] == 224 && out.shape[2] == 3);
    stk__rng rng;
    stk__rng_init(&rng, 42, 3, 1, sample);
    stk__window win = stk__random_crop_window(&rng, 500, 375, 0.08, 1.0, 0.75, 4.0 / 3.0, 10);
    distinct_windows += win.x != previous.x || win.w != previous.w;
    previous = win;
    void *scratch = malloc(stk__resize_scratch_bytes(500, 375, 3, win, 224, 224, STK__INTERP_LINEAR, 1));
    CHECK(stk__resize_u8(img.data, 500, 375, 1500, 3, win, want, 224, 224, STK__INTERP_LINEAR, 1, scratch) == STK_OK);
    mismatches += memcmp(out.data, want, 224 * 224 * 3) != 0;
    free(scratch);
  }
  CHECK_MSG(mismatches == 0, "%d samples differ from the keyed window + resize", mismatches);
  CHECK(distinct_windows >= 7);
  free(want);
  stk__op_free_standalone(op);
  expect_bad_args("random_resized_crop", NULL, "size");
  a = args_new();
  stk_args_set_float_list(a, "size", size, 1);
  const double area[2] = {0.5, 0.1};
  stk_args_set_float_list(a, "random_area", area, 2);
  expect_bad_args("random_resized_crop", a, "random_area");
  stk__tensor_free(&img);
  stk__tensor_free(&out);
}

static void test_cmn_op(void) {
  stk_args *a = args_new();
  const double crop[2] = {224, 224};
  const double mean[3] = {0.485 * 255, 0.456 * 255, 0.406 * 255}, std[3] = {0.229 * 255, 0.224 * 255, 0.225 * 255};
  stk_args_set_float_list(a, "crop", crop, 2);
  stk_args_set_float_list(a, "mean", mean, 3);
  stk_args_set_float_list(a, "std", std, 3);
  stk_args_set_input(a, "mirror", "coin");
  stk__op *op = make_op("crop_mirror_normalize", a, 4);
  stk_args_destroy(a);
  if (!op) return;
  stk__tensor img = image_tensor(300, 256, 3, 3);
  stk__tensor coin = {0};
  int64_t one[1] = {1};
  stk__tensor_resize(&coin, STK_DTYPE_INT32, 1, one, "");
  stk__tensor *inputs[2] = {&img, &coin};
  stk__tensor out = {0};
  float fmean[3], inv[3];
  for (int c = 0; c < 3; c++) {
    fmean[c] = (float)mean[c];
    inv[c] = (float)(1.0 / std[c]);
  }
  float *want = malloc(sizeof(float) * 3 * 224 * 224);
  for (int m = 0; m <= 1; m++) {
    *(int32_t *)coin.data = m;
    CHECK_MSG(run(op, 0, 0, inputs, &out) == STK_OK, "%s", err);
    CHECK(out.dtype == STK_DTYPE_FLOAT32 && out.shape[0] == 3 && out.shape[1] == 224 && out.shape[2] == 224 &&
          strcmp(out.layout, "CHW") == 0);
    /* centre crop: x = floor(0.5 * 76 + 0.5) = 38, y = floor(0.5 * 32 + 0.5) = 16 */
    CHECK(stk__crop_mirror_normalize(img.data, 300, 256, 900, 3, 38, 16, 224, 224, m, fmean, inv, STK__LAYOUT_CHW,
                                     STK_DTYPE_FLOAT32, 0, want) == STK_OK);
    CHECK_MSG(memcmp(out.data, want, sizeof(float) * 3 * 224 * 224) == 0, "mirror=%d output differs", m);
  }
  /* Pixel (0, 0) of channel 0 with mirror=1 is source pixel (38 + 223, 16). */
  float expect = ((float)((uint8_t *)img.data)[(16 * 300 + 261) * 3] - fmean[0]) * inv[0];
  CHECK(((float *)out.data)[0] == expect);
  free(want);
  /* A crop larger than the image: error by default, named. */
  stk__tensor small = image_tensor(200, 100, 3, 4);
  stk__tensor *small_inputs[2] = {&small, &coin};
  CHECK(run(op, 0, 0, small_inputs, &out) == STK_EINVAL && strstr(err, "out_of_bounds_policy") != NULL);
  stk__op_free_standalone(op);

  /* pad policy with HWC float16 + pad_output, trim_to_shape with uint8. */
  a = args_new();
  stk_args_set_float_list(a, "crop", crop, 2);
  stk_args_set_string(a, "out_of_bounds_policy", "pad");
  stk_args_set_string(a, "output_layout", "HWC");
  stk_args_set_string(a, "dtype", "float16");
  stk_args_set_bool(a, "pad_output", 1);
  const double fill = 7.0;
  stk_args_set_float_list(a, "fill_values", &fill, 1);
  op = make_op("crop_mirror_normalize", a, 4);
  stk_args_destroy(a);
  if (op) {
    stk__tensor *plain_inputs[1] = {&small};
    CHECK_MSG(run(op, 0, 0, plain_inputs, &out) == STK_OK, "%s", err);
    CHECK(out.dtype == STK_DTYPE_FLOAT16 && out.shape[0] == 224 && out.shape[1] == 224 && out.shape[2] == 4);
    /* x = floor(0.5 * -24 + 0.5) = -12 (floor(-11.5) = -12), y = floor(0.5 * -124 + 0.5) = -62: the
     * first rows are fill; in-image pixel (12, 62) of output is source (0, 0). */
    const uint16_t *h = out.data;
    CHECK(h[0] == stk__float_to_half(7.0f));
    CHECK(h[(62 * 224 + 12) * 4 + 0] == stk__float_to_half((float)((uint8_t *)small.data)[0]));
    CHECK(h[(62 * 224 + 12) * 4 + 3] == stk__float_to_half(7.0f));
    stk__op_free_standalone(op);
  }
  a = args_new();
  stk_args_set_float_list(a, "crop", crop, 2);
  stk_args_set_string(a, "out_of_bounds_policy", "trim_to_shape");
  stk_args_set_string(a, "dtype", "uint8");
  op = make_op("crop_mirror_normalize", a, 4);
  stk_args_destroy(a);
  if (op) {
    stk__tensor *plain_inputs[1] = {&small};
    CHECK_MSG(run(op, 0, 0, plain_inputs, &out) == STK_OK, "%s", err);
    CHECK(out.dtype == STK_DTYPE_UINT8 && out.shape[0] == 3 && out.shape[1] == 100 && out.shape[2] == 200);
    CHECK(((uint8_t *)out.data)[0] == ((uint8_t *)small.data)[0]);
    stk__op_free_standalone(op);
  }
  /* Argument errors. */
  a = args_new();
  stk_args_set_string(a, "output_layout", "NHWC");
  expect_bad_args("crop_mirror_normalize", a, "output_layout");
  a = args_new();
  stk_args_set_string(a, "dtype", "int64");
  expect_bad_args("crop_mirror_normalize", a, "dtype");
  a = args_new();
  const double zero_std[1] = {0};
  stk_args_set_float_list(a, "std", zero_std, 1);
  expect_bad_args("crop_mirror_normalize", a, "std");
  a = args_new();
  stk_args_set_float_list(a, "crop", crop, 2);
  stk_args_set_float(a, "crop_w", 10);
  expect_bad_args("crop_mirror_normalize", a, "crop");
  /* mean with 2 values on a 3-channel image: a run-time error naming the mismatch. */
  a = args_new();
  const double two[2] = {1, 2};
  stk_args_set_float_list(a, "mean", two, 2);
  op = make_op("crop_mirror_normalize", a, 4);
  stk_args_destroy(a);
  if (op) {
    stk__tensor *plain_inputs[1] = {&small};
    CHECK(run(op, 0, 0, plain_inputs, &out) == STK_EINVAL && strstr(err, "channels") != NULL);
    stk__op_free_standalone(op);
  }
  stk__tensor_free(&img);
  stk__tensor_free(&small);
  stk__tensor_free(&coin);
  stk__tensor_free(&out);
}

static void schemas_are_in_the_registry(void) {
  const stk__op_schema *const mine[] = {&stk__op_resize, &stk__op_random_resized_crop, &stk__op_crop_mirror_normalize,
                                        &stk__op_random_coin_flip, &stk__op_cast};
  for (size_t i = 0; i < sizeof mine / sizeof mine[0]; i++)
    CHECK_MSG(stk__op_schema_find(mine[i]->name) == mine[i], "registry lookup of %s", mine[i]->name);
  CHECK(strcmp(stk__op_random_coin_flip.name, "random.coin_flip") == 0);
  CHECK(stk__op_resize.devices == (STK_OPDEV_CPU | STK_OPDEV_GPU) &&
        stk__op_cast.devices == (STK_OPDEV_CPU | STK_OPDEV_GPU));
}

/* one STK_TEST_CASE per line: tests/CMakeLists.txt reads them */
// clang-format off
static const stk_test_case cases[] = {
    STK_TEST_CASE(schemas_are_in_the_registry),
    STK_TEST_CASE(test_coin_flip),
    STK_TEST_CASE(test_cast),
    STK_TEST_CASE(test_resize_op),
    STK_TEST_CASE(test_random_resized_crop_op),
    STK_TEST_CASE(test_cmn_op),
};
// clang-format on

int main(int argc, char **argv) {
  if (stk_test_list_cases(cases, STK_TEST_COUNT(cases), argc, argv)) return 0;
  int rc = stk_test_run_selected("test_aug_ops", cases, STK_TEST_COUNT(cases), argc, argv);
  for (int k = 0; k < 8; k++) free(worker.scratch[k]);
  return rc ? rc : stk_test_finish("test_aug_ops");
}
