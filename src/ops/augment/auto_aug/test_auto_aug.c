/* src/ops/augment/auto_aug/test_auto_aug.c: `_auto_aug.apply` and `experimental.equalize` on the
 * CPU against formulas written out here in double precision: every table kind (invert, posterize,
 * solarize, solarize_add, brightness, contrast, auto_contrast), equalize against DALI's table
 * (cumulative histogram less the first count, rounded half to even), color, sharpness (frame kept),
 * translations, shears and a quarter-turn rotation as pixel moves, stages chaining and per-sample
 * `entry` choosing the row entries, and errors that name the argument. tests/python/
 * test_auto_aug_ops.py compares the same kinds with PIL. Not on any hot path. */
#include <math.h>

#include "case_list.h"
#include "op_test.h"
#include "ops/augment/auto_aug/auto_aug.h"

#define W 29
#define H 21

/* Runs `_auto_aug.apply` with one stage of one entry (kind, param) on img; out must be freed. */
static int run_one(const char *kind, double param, const char *interp, double fill, stk__tensor *img,
                   stk__tensor *out) {
  stk_args *a = op_args();
  const char *kinds[1] = {kind};
  stk_args_set_string_list(a, "kinds", kinds, 1);
  stk_args_set_float_list(a, "params", &param, 1);
  if (interp) stk_args_set_string(a, "interp_type", interp);
  if (fill >= 0) stk_args_set_float(a, "fill_value", fill);
  stk__op *op = op_make("_auto_aug.apply", a, 5);
  if (!op) return 0;
  memset(out, 0, sizeof *out);
  stk__tensor *inputs[1] = {img};
  stk_status s = op_run(op, 0, 0, inputs, out);
  CHECK_MSG(s == STK_OK, "%s: %s", kind, op_test_err);
  CHECK_MSG(s != STK_OK || (out->nbytes == img->nbytes && out->ndim == img->ndim), "%s: output size differs", kind);
  stk__op_free_standalone(op);
  return s == STK_OK;
}

static double half_up(double v) { return floor(fmin(255, fmax(0, v)) + 0.5); }

typedef double (*value_fn)(double x, double param, const void *extra);
static double f_invert(double x, double p, const void *e) {
  (void)p, (void)e;
  return 255 - x;
}
static double f_posterize(double x, double p, const void *e) {
  (void)e;
  return (double)((int)x & (int)p);
}
static double f_solarize(double x, double p, const void *e) {
  (void)e;
  return x < p ? x : 255 - x;
}
static double f_solarize_add(double x, double p, const void *e) {
  (void)e;
  return x < 128 ? x + p : x;
}
static double f_brightness(double x, double p, const void *e) {
  (void)e;
  return half_up(x * p);
}

static void table_kinds_follow_their_formulas(void) {
  stk__tensor img = op_image(W, H, 3, 1);
  const struct {
    const char *kind;
    double param;
    value_fn f;
  } cases[] = {{"invert", 0, f_invert},
               {"posterize", 0xF0, f_posterize},
               {"posterize", 0xC0, f_posterize},
               {"solarize", 76.8, f_solarize},
               {"solarize", 256, f_solarize},
               {"solarize_add", 33, f_solarize_add},
               {"brightness", 1.37, f_brightness},
               {"brightness", 0.1, f_brightness}};
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    stk__tensor out;
    if (!run_one(cases[k].kind, cases[k].param, NULL, -1, &img, &out)) continue;
    int bad = 0;
    for (size_t i = 0; i < img.nbytes; i++)
      bad += ((uint8_t *)out.data)[i] != cases[k].f(((uint8_t *)img.data)[i], cases[k].param, NULL);
    CHECK_MSG(bad == 0, "%s(%g): %d values differ from the formula", cases[k].kind, cases[k].param, bad);
    stk__tensor_free(&out);
  }
  stk__tensor_free(&img);
}

static void contrast_and_auto_contrast_use_the_image_statistics(void) {
  stk__tensor img = op_image(W, H, 3, 2);
  const uint8_t *in = img.data;
  const size_t pixels = img.nbytes / 3;
  double mean[3] = {0}, lo[3] = {255, 255, 255}, hi[3] = {0};
  for (size_t p = 0; p < pixels; p++)
    for (int c = 0; c < 3; c++) {
      mean[c] += in[p * 3 + c] / (double)pixels;
      lo[c] = fmin(lo[c], in[p * 3 + c]);
      hi[c] = fmax(hi[c], in[p * 3 + c]);
    }
  const double centre = 0.299 * mean[0] + 0.587 * mean[1] + 0.114 * mean[2];
  stk__tensor out;
  if (run_one("contrast", 1.6, NULL, -1, &img, &out)) {
    double worst = 0;
    for (size_t i = 0; i < img.nbytes; i++)
      worst = fmax(worst, fabs(((uint8_t *)out.data)[i] - half_up(centre + (in[i] - centre) * 1.6)));
    CHECK_MSG(worst <= 1, "contrast: %g levels from centre + (x - centre) * f", worst);
    stk__tensor_free(&out);
  }
  if (run_one("auto_contrast", 0, NULL, -1, &img, &out)) {
    double worst = 0;
    for (size_t i = 0; i < img.nbytes; i++) {
      const int c = (int)(i % 3);
      worst = fmax(worst, fabs(((uint8_t *)out.data)[i] - half_up((in[i] - lo[c]) * 255.0 / (hi[c] - lo[c]))));
    }
    CHECK_MSG(worst <= 1, "auto_contrast: %g levels from (x - lo) * 255 / (hi - lo)", worst);
    stk__tensor_free(&out);
  }
  stk__tensor_free(&img);
}

static void equalize_follows_dalis_table(void) {
  stk__tensor img = op_image(W, H, 3, 3);
  uint8_t *in = img.data;
  const size_t pixels = img.nbytes / 3;
  for (size_t p = 0; p < pixels; p++) {
    in[p * 3 + 1] = (uint8_t)(40 + in[p * 3 + 1] / 4); /* a narrow channel */
    in[p * 3 + 2] = 77;                                /* a constant channel: kept */
  }
  stk__op *op = op_make("experimental.equalize", NULL, 1);
  stk__tensor out = {0};
  stk__tensor *inputs[1] = {&img};
  if (op && op_run(op, 0, 0, inputs, &out) == STK_OK) {
    int bad = 0;
    for (int c = 0; c < 3; c++) {
      double hist[256] = {0}, cdf[256];
      for (size_t p = 0; p < pixels; p++) hist[in[p * 3 + c]]++;
      int first = 0;
      while (hist[first] == 0) first++;
      for (int v = 0; v < 256; v++) cdf[v] = (v ? cdf[v - 1] : 0) + hist[v];
      for (size_t p = 0; p < pixels; p++) {
        const int x = in[p * 3 + c];
        const double want = hist[first] == (double)pixels
                                ? x
                                : nearbyint((cdf[x] - hist[first]) * (255.0 / ((double)pixels - hist[first])));
        bad += ((uint8_t *)out.data)[p * 3 + c] != want;
      }
    }
    CHECK_MSG(bad == 0, "equalize: %d values differ from DALI's table", bad);
  } else {
    CHECK_MSG(0, "equalize: %s", op_test_err);
  }
  stk__tensor_free(&out);
  stk__op_free_standalone(op);
  stk__tensor_free(&img);
}

static void color_and_sharpness_blend_with_grey_and_smooth(void) {
  stk__tensor img = op_image(W, H, 3, 4);
  const uint8_t *in = img.data;
  stk__tensor out;
  if (run_one("color", 0.3, NULL, -1, &img, &out)) {
    double worst = 0;
    for (size_t p = 0; p < img.nbytes / 3; p++) {
      const double grey = 0.299 * in[p * 3] + 0.587 * in[p * 3 + 1] + 0.114 * in[p * 3 + 2];
      for (int c = 0; c < 3; c++)
        worst = fmax(worst, fabs(((uint8_t *)out.data)[p * 3 + c] - half_up(grey + 0.3 * (in[p * 3 + c] - grey))));
    }
    CHECK_MSG(worst <= 1, "color: %g levels from grey + f (x - grey)", worst);
    stk__tensor_free(&out);
  }
  if (run_one("sharpness", 1.8, NULL, -1, &img, &out)) {
    double worst = 0;
    int frame = 0;
    for (int y = 0; y < H; y++)
      for (int x = 0; x < W; x++)
        for (int c = 0; c < 3; c++) {
          const size_t at = ((size_t)y * W + x) * 3 + c;
          const uint8_t got = ((uint8_t *)out.data)[at];
          if (x == 0 || y == 0 || x == W - 1 || y == H - 1) {
            frame += got != in[at];
            continue;
          }
          double smooth = 4 * in[at];
          for (int dy = -1; dy <= 1; dy++)
            for (int dx = -1; dx <= 1; dx++) smooth += in[((size_t)(y + dy) * W + x + dx) * 3 + c];
          smooth /= 13;
          worst = fmax(worst, fabs(got - half_up(1.8 * in[at] - 0.8 * smooth)));
        }
    CHECK_MSG(frame == 0, "sharpness changed %d values of the 1-pixel frame", frame);
    CHECK_MSG(worst <= 1, "sharpness: %g levels from f x + (1 - f) smooth", worst);
    stk__tensor_free(&out);
  }
  stk__tensor_free(&img);
}

/* out(x, y) must be in(sx, sy) (or fill outside) for the map `where`. */
typedef void (*map_fn)(int x, int y, int *sx, int *sy);
static void m_translate(int x, int y, int *sx, int *sy) { *sx = x - 5, *sy = y; }
static void m_translate_y(int x, int y, int *sx, int *sy) { *sx = x, *sy = y + 3; }
static void m_rot90(int x, int y, int *sx, int *sy) { *sx = W - 1 - y, *sy = x; } /* square W x W */
static void m_shear(int x, int y, int *sx, int *sy) { *sx = (int)floor(x + 0.5 - 0.5 * (y + 0.5)), *sy = y; }

static int moved_wrong(const stk__tensor *img, const stk__tensor *out, int w, int h, map_fn where, int fill) {
  int bad = 0;
  for (int y = 0; y < h; y++)
    for (int x = 0; x < w; x++) {
      int sx, sy;
      where(x, y, &sx, &sy);
      for (int c = 0; c < 3; c++) {
        const int want =
            sx < 0 || sy < 0 || sx >= w || sy >= h ? fill : ((uint8_t *)img->data)[((size_t)sy * w + sx) * 3 + c];
        bad += ((uint8_t *)out->data)[((size_t)y * w + x) * 3 + c] != want;
      }
    }
  return bad;
}

static void geometric_kinds_move_pixels(void) {
  stk__tensor img = op_image(W, H, 3, 5), square = op_image(W, W, 3, 6), out;
  if (run_one("translate_x", 5, NULL, 128, &img, &out)) {
    CHECK_MSG(moved_wrong(&img, &out, W, H, m_translate, 128) == 0, "translate_x 5 px is not a shift right with fill");
    stk__tensor_free(&out);
  }
  if (run_one("translate_y_rel", -3.0 / H, "INTERP_NN", 7, &img, &out)) {
    CHECK_MSG(moved_wrong(&img, &out, W, H, m_translate_y, 7) == 0, "translate_y_rel is not a shift up by 3 rows");
    stk__tensor_free(&out);
  }
  if (run_one("shear_x", 0.5, "INTERP_NN", 0, &img, &out)) {
    CHECK_MSG(moved_wrong(&img, &out, W, H, m_shear, 0) == 0, "shear_x 0.5 is not x' = x + 0.5 y");
    stk__tensor_free(&out);
  }
  if (run_one("rotate", 90, "INTERP_NN", 0, &square, &out)) {
    CHECK_MSG(moved_wrong(&square, &out, W, W, m_rot90, 0) == 0, "rotate 90 is not a quarter turn counter-clockwise");
    stk__tensor_free(&out);
  }
  stk__tensor_free(&img);
  stk__tensor_free(&square);
}

/* The uint8 warp of the AutoAugment kinds gives warp_affine's sampler's bytes: random similarity
 * transforms, 1/3/4 channels, nearest and linear, with and without fill. */
static void warp_fast_path_equals_the_warp_sampler(void) {
  int bad = 0;
  for (int trial = 0; trial < 60; trial++) {
    const int w = 13 + trial % 17, h = 9 + trial % 11, c = (int[]){1, 3, 4}[trial % 3];
    stk__tensor img = op_image(w, h, c, (unsigned)trial + 20);
    uint8_t *a = malloc(img.nbytes), *b = malloc(img.nbytes);
    stk__warp_desc d;
    memset(&d, 0, sizeof d);
    d.src = img.data;
    d.src_w = d.dst_w = w;
    d.src_h = d.dst_h = h;
    d.channels = c;
    d.dtype = d.out_dtype = STK_DTYPE_UINT8;
    d.frames = 1;
    d.nearest = trial % 2;
    d.has_fill = (trial / 2) % 2;
    d.fill = 77;
    const double r = 0.1 + trial * 0.37, s = 0.7 + 0.01 * trial;
    const float m[6] = {(float)(s * cos(r)), (float)(-s * sin(r)), (float)(trial - 20) * 0.73f,
                        (float)(s * sin(r)), (float)(s * cos(r)),  (float)(13 - trial) * 0.41f};
    memcpy(d.m, m, sizeof m);
    d.dst = a;
    stk__warp_run(&d);
    d.dst = b;
    stk__aa_warp_u8(&d);
    for (size_t i = 0; i < img.nbytes; i++) bad += a[i] != b[i];
    free(a);
    free(b);
    stk__tensor_free(&img);
  }
  CHECK_MSG(bad == 0, "%d values of the uint8 warp differ from stk__warp_run", bad);
}

static void stages_chain_and_entry_picks_per_sample(void) {
  stk__tensor img = op_image(W, H, 3, 7);
  stk_args *a = op_args();
  /* two stages of two entries: row 0 = {identity, invert}, row 1 = {invert, posterize 0x80} */
  const char *kinds[4] = {"identity", "invert", "invert", "posterize"};
  const double params[4] = {0, 0, 0, 128};
  stk_args_set_string_list(a, "kinds", kinds, 4);
  stk_args_set_float_list(a, "params", params, 4);
  stk_args_set_int(a, "num_stages", 2);
  stk_args_set_input(a, "entry", "e");
  stk__op *op = op_make("_auto_aug.apply", a, 9);
  stk__tensor entry = {0};
  const int64_t two[1] = {2};
  CHECK(stk__tensor_resize(&entry, STK_DTYPE_INT32, 1, two, "") == STK_OK);
  const int32_t picks[3][2] = {{1, 0}, {0, 1}, {1, 1}}; /* invert twice; posterize; invert then posterize */
  for (int k = 0; op && k < 3; k++) {
    memcpy(entry.data, picks[k], sizeof picks[k]);
    stk__tensor out = {0};
    stk__tensor *inputs[2] = {&img, &entry};
    if (op_run(op, 0, k, inputs, &out) != STK_OK) {
      CHECK_MSG(0, "entry %d: %s", k, op_test_err);
      continue;
    }
    int bad = 0;
    for (size_t i = 0; i < img.nbytes; i++) {
      const int x = ((uint8_t *)img.data)[i];
      const int want = k == 0 ? x : k == 1 ? (x & 128) : ((255 - x) & 128);
      bad += ((uint8_t *)out.data)[i] != want;
    }
    CHECK_MSG(bad == 0, "entry pair %d: %d values differ", k, bad);
    stk__tensor_free(&out);
  }
  /* an entry beyond the row is refused, naming the argument */
  const int32_t beyond[2] = {0, 2};
  memcpy(entry.data, beyond, sizeof beyond);
  stk__tensor out = {0};
  stk__tensor *inputs[2] = {&img, &entry};
  CHECK(op && op_run(op, 0, 0, inputs, &out) == STK_EINVAL && strstr(op_test_err, "entry"));
  stk__tensor_free(&out);
  stk__op_free_standalone(op);
  stk__tensor_free(&entry);
  stk__tensor_free(&img);
}

static void bad_tables_and_images_are_named(void) {
  const char *unknown[1] = {"swirl"}, *two[2] = {"invert", "equalize"};
  const double one = 1;
  stk_args *a = op_args();
  stk_args_set_string_list(a, "kinds", unknown, 1);
  stk_args_set_float_list(a, "params", &one, 1);
  op_expect_bad("_auto_aug.apply", a, "unknown kind");
  a = op_args();
  stk_args_set_string_list(a, "kinds", two, 2);
  stk_args_set_float_list(a, "params", &one, 1);
  op_expect_bad("_auto_aug.apply", a, "params");
  a = op_args();
  stk_args_set_string_list(a, "kinds", two, 2);
  stk_args_set_float_list(a, "params", (const double[]){0, 0}, 2);
  stk_args_set_int(a, "num_stages", 3);
  op_expect_bad("_auto_aug.apply", a, "num_stages");
  stk__op *op = op_make("experimental.equalize", NULL, 1);
  stk__tensor f = {0}, out = {0};
  const int64_t shape[3] = {4, 4, 3};
  CHECK(stk__tensor_resize(&f, STK_DTYPE_FLOAT32, 3, shape, "HWC") == STK_OK);
  stk__tensor *inputs[1] = {&f};
  CHECK(op && op_run(op, 0, 0, inputs, &out) == STK_EINVAL && strstr(op_test_err, "uint8"));
  stk__tensor_free(&f);
  stk__tensor_free(&out);
  stk__op_free_standalone(op);
}

/* one STK_TEST_CASE per line: tests/CMakeLists.txt reads them */
static const stk_test_case cases[] = {
    STK_TEST_CASE(table_kinds_follow_their_formulas),
    STK_TEST_CASE(contrast_and_auto_contrast_use_the_image_statistics),
    STK_TEST_CASE(equalize_follows_dalis_table),
    STK_TEST_CASE(color_and_sharpness_blend_with_grey_and_smooth),
    STK_TEST_CASE(geometric_kinds_move_pixels),
    STK_TEST_CASE(warp_fast_path_equals_the_warp_sampler),
    STK_TEST_CASE(stages_chain_and_entry_picks_per_sample),
    STK_TEST_CASE(bad_tables_and_images_are_named),
};

int main(int argc, char **argv) {
  if (stk_test_list_cases(cases, STK_TEST_COUNT(cases), argc, argv)) return 0;
  int rc = stk_test_run_selected("test_auto_aug", cases, STK_TEST_COUNT(cases), argc, argv);
  op_test_cleanup();
  return rc ? rc : stk_test_finish("test_auto_aug");
}
