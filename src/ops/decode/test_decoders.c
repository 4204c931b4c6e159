/* src/ops/decode/test_decoders.c: the decoders.image and decoders.image_random_crop operators (CPU).
 * decoders.image against libjpeg's plain full decode; image_random_crop output == the chosen
 * window (stk__decoder_crop_window, keyed by seed/op/epoch/sample) of the full decode, exactly,
 * also with EXIF orientation; deterministic per (epoch, sample); hint_size DCT scaling sizes;
 * argument errors; bad input; and every file `stoker datagen` writes decodes.
 * The operators are instantiated by hand here (schema + argument values) so the test does not
 * depend on the pipeline engine. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "jpeg_fixtures.h"
#include "ops/decode/decoders.h"
#include "ops/decode/jpeg.h"
#include "ops/io/reader_file.h"
#include "case_list.h"
#include "testutil.h"

typedef struct test_op {
  stk__op op;
  stk__arg_value args[32];
  double area[2], ratio[2];
  int64_t hint[2];
  char type[8];
} test_op;

/* An op with the schema's defaults for the arguments the CPU implementation reads. */
static void test_op_make(test_op *t, const stk__op_schema *schema, const char *type, int64_t seed) {
  memset(t, 0, sizeof *t);
  t->op.schema = schema;
  t->op.impl = stk__op_impl_find(schema, STK__DEV_CPU);
  t->op.args = t->args;
  t->op.id = 3;
  t->op.seed = 42;
  snprintf(t->type, sizeof t->type, "%s", type);
  t->area[0] = 0.08, t->area[1] = 1.0, t->ratio[0] = 0.75, t->ratio[1] = 4.0 / 3.0;
  for (int i = 0; i < schema->num_args; i++) {
    const char *name = schema->args[i].name;
    stk__arg_value *v = &t->args[i];
    v->type = schema->args[i].type;
    v->input_slot = -1;
    v->has_value = 1;
    if (!strcmp(name, "output_type")) v->s = t->type;
    else if (!strcmp(name, "seed")) v->i = seed;
    else if (!strcmp(name, "num_attempts")) v->i = 10;
    else if (!strcmp(name, "random_area")) v->flist = t->area, v->count = 2;
    else if (!strcmp(name, "random_aspect_ratio")) v->flist = t->ratio, v->count = 2;
    else if (!strcmp(name, "hint_size")) v->ilist = t->hint, v->count = 2;
    else v->has_value = 0;
  }
}

static char err[512];

static stk_status run(test_op *t, const uint8_t *data, size_t size, uint64_t epoch, int64_t sample_id,
                      stk__tensor *out) {
  stk__tensor in = {0};
  in.data = (void *)data;
  in.nbytes = size;
  in.dtype = STK_DTYPE_UINT8;
  in.ndim = 1;
  in.shape[0] = (int64_t)size;
  stk__tensor *inputs[1] = {&in};
  stk__tensor *outputs[1] = {out};
  stk__sample_ctx ctx = {0};
  ctx.epoch = epoch;
  ctx.sample_id = sample_id;
  ctx.err = err, ctx.err_size = sizeof err;
  err[0] = 0;
  return t->op.impl->run_sample(&t->op, &ctx, inputs, outputs);
}

static int window_equal(const stk__tensor *out, const uint8_t *ref, int rw, int c, stk__window w) {
  if (out->ndim != 3 || out->shape[0] != w.h || out->shape[1] != w.w || out->shape[2] != c) return 0;
  for (int r = 0; r < w.h; r++)
    if (memcmp((const uint8_t *)out->data + (size_t)r * w.w * c, ref + ((size_t)(w.y + r) * rw + w.x) * c,
               (size_t)w.w * c) != 0)
      return 0;
  return 1;
}

static void test_decode_image(void) {
  const int W = 150, H = 100;
  uint8_t *px = fixture_pattern(W, H, 3, 1);
  fixture_options o = fixture_defaults();
  o.subsampling = 420;
  size_t size;
  uint8_t *jpg = fixture_encode(px, W, H, 3, o, &size);
  int rw, rh, rc;
  uint8_t *ref = fixture_reference(jpg, size, JCS_RGB, 8, &rw, &rh, &rc);

  test_op t;
  test_op_make(&t, &stk__op_decoders_image, "RGB", -1);
  CHECK(t.op.impl->init(&t.op, err, sizeof err) == STK_OK);
  stk__tensor out = {0};
  CHECK(run(&t, jpg, size, 0, 0, &out) == STK_OK);
  CHECK(window_equal(&out, ref, W, 3, (stk__window){0, 0, W, H}));
  static const uint8_t png[] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n', 0, 0, 0, 0};
  CHECK(run(&t, png, sizeof png, 0, 1, &out) == STK_EBADIMAGE);
  CHECK_MSG(strstr(err, "truncated PNG") != NULL, "%s", err); /* decoded as the PNG it is, and it is cut */
  CHECK(run(&t, jpg, size / 3, 0, 1, &out) == STK_EBADIMAGE && strstr(err, "Premature end"));
  CHECK(run(&t, jpg, 0, 0, 1, &out) == STK_EBADIMAGE && strstr(err, "empty"));
  t.op.impl->destroy(&t.op);

  test_op_make(&t, &stk__op_decoders_image, "GRAY", -1);
  CHECK(t.op.impl->init(&t.op, err, sizeof err) == STK_OK);
  CHECK(run(&t, jpg, size, 0, 0, &out) == STK_OK && out.shape[2] == 1 && out.shape[0] == H);
  t.op.impl->destroy(&t.op);

  test_op_make(&t, &stk__op_decoders_image, "YUV", -1);
  CHECK(t.op.impl->init(&t.op, err, sizeof err) == STK_EINVAL);
  CHECK_MSG(strstr(err, "output_type") && strstr(err, "YUV"), "%s", err);

  stk__tensor_free(&out);
  free(ref);
  free(jpg);
  free(px);
}

static void test_random_crop(int orientation) {
  const int W = 320, H = 240;
  uint8_t *px = fixture_pattern(W, H, 3, 2);
  fixture_options o = fixture_defaults();
  o.orientation = orientation;
  size_t size;
  uint8_t *jpg = fixture_encode(px, W, H, 3, o, &size);

  /* The full oriented decode is the reference (decoders.image is checked against libjpeg above
   * and the orientations in test_jpeg). */
  test_op full;
  test_op_make(&full, &stk__op_decoders_image, "RGB", -1);
  CHECK(full.op.impl->init(&full.op, err, sizeof err) == STK_OK);
  stk__tensor ref = {0}, out = {0}, again = {0};
  CHECK(run(&full, jpg, size, 0, 0, &ref) == STK_OK);
  const int ow = (int)ref.shape[1], oh = (int)ref.shape[0];
  CHECK(orientation >= 5 ? (ow == H && oh == W) : (ow == W && oh == H));

  test_op t;
  test_op_make(&t, &stk__op_decoders_image_random_crop, "RGB", 1234);
  CHECK(t.op.impl->init(&t.op, err, sizeof err) == STK_OK);
  const stk__decoder_params *p = (const stk__decoder_params *)t.op.state;
  CHECK(p->seed == 1234 && p->attempts == 10 && p->random_crop);
  int differs = 0;
  for (int64_t sample = 0; sample < 40; sample++) {
    stk__window win = stk__decoder_crop_window(p, t.op.id, 0, sample, ow, oh);
    CHECK(win.x >= 0 && win.y >= 0 && win.w >= 1 && win.h >= 1 && win.x + win.w <= ow && win.y + win.h <= oh);
    CHECK(run(&t, jpg, size, 0, sample, &out) == STK_OK);
    CHECK_MSG(window_equal(&out, (const uint8_t *)ref.data, ow, 3, win),
              "orientation %d sample %lld: window %dx%d+%d+%d", orientation, (long long)sample, win.w, win.h, win.x,
              win.y);
    CHECK(run(&t, jpg, size, 0, sample, &again) == STK_OK);
    CHECK(again.nbytes == out.nbytes && memcmp(again.data, out.data, out.nbytes) == 0);
    stk__window next = stk__decoder_crop_window(p, t.op.id, 1, sample, ow, oh);
    differs += memcmp(&next, &win, sizeof win) != 0;
  }
  CHECK(differs > 30); /* another epoch, other windows */
  t.op.impl->destroy(&t.op);

  /* seed -1 takes the pipeline's seed. */
  test_op_make(&t, &stk__op_decoders_image_random_crop, "RGB", -1);
  CHECK(t.op.impl->init(&t.op, err, sizeof err) == STK_OK);
  CHECK(((const stk__decoder_params *)t.op.state)->seed == 42);
  t.op.impl->destroy(&t.op);

  stk__tensor_free(&ref), stk__tensor_free(&out), stk__tensor_free(&again);
  full.op.impl->destroy(&full.op);
  free(jpg);
  free(px);
}

/* hint_size: the window is DCT-scaled by the smallest n/8 keeping it >= the hint. */
static void test_hint_size(void) {
  const int W = 500, H = 375;
  uint8_t *px = fixture_pattern(W, H, 3, 4);
  size_t size;
  uint8_t *jpg = fixture_encode(px, W, H, 3, fixture_defaults(), &size);
  test_op t;
  test_op_make(&t, &stk__op_decoders_image_random_crop, "RGB", 5);
  t.hint[0] = 64, t.hint[1] = 48;
  CHECK(t.op.impl->init(&t.op, err, sizeof err) == STK_OK);
  const stk__decoder_params *p = (const stk__decoder_params *)t.op.state;
  stk__tensor out = {0};
  int scaled = 0;
  for (int64_t sample = 0; sample < 30; sample++) {
    stk__window win = stk__decoder_crop_window(p, t.op.id, 0, sample, W, H);
    /* The decoder scales only by 1/8, 1/4 or 1/2 (libjpeg-turbo's SIMD IDCT sizes). */
    int n = 8;
    for (int k = 1; k < 8; k *= 2)
      if (win.w * k >= 8 * 64 && win.h * k >= 8 * 48) {
        n = k;
        break;
      }
    CHECK(run(&t, jpg, size, 0, sample, &out) == STK_OK);
    CHECK_MSG(out.shape[1] == (win.w * n + 7) / 8 && out.shape[0] == (win.h * n + 7) / 8,
              "window %dx%d n=%d got %lldx%lld", win.w, win.h, n, (long long)out.shape[1], (long long)out.shape[0]);
    CHECK(n == 8 || (out.shape[1] >= 64 && out.shape[0] >= 48));
    scaled += n < 8;
  }
  CHECK(scaled > 0);
  t.op.impl->destroy(&t.op);

  test_op_make(&t, &stk__op_decoders_image_random_crop, "RGB", 5);
  t.area[0] = 0.5, t.area[1] = 0.2;
  CHECK(t.op.impl->init(&t.op, err, sizeof err) == STK_EINVAL && strstr(err, "random_area"));
  test_op_make(&t, &stk__op_decoders_image_random_crop, "RGB", 5);
  t.ratio[0] = 0;
  CHECK(t.op.impl->init(&t.op, err, sizeof err) == STK_EINVAL && strstr(err, "random_aspect_ratio"));
  test_op_make(&t, &stk__op_decoders_image_random_crop, "RGB", 5);
  t.hint[0] = -1;
  CHECK(t.op.impl->init(&t.op, err, sizeof err) == STK_EINVAL && strstr(err, "hint_size"));
  stk__tensor_free(&out);
  free(jpg);
  free(px);
}

/* Every file `stoker datagen` writes decodes, at the size its header announces. */
static void test_datagen_files(void) {
  char *dir = stk_test_tmpdir("decoders");
  if (!dir) return;
  char cmd[1024];
  snprintf(cmd, sizeof cmd, "'%s' datagen '%s/d' --count 24 --classes 3 --seed 11 >/dev/null", stk_test_cli(), dir);
  if (stk_test_run(cmd, NULL) != 0) {
    printf("note: %s failed; datagen files not checked here\n", cmd);
  } else {
    test_op t;
    test_op_make(&t, &stk__op_decoders_image, "RGB", -1);
    CHECK(t.op.impl->init(&t.op, err, sizeof err) == STK_OK);
    stk__tensor out = {0};
    for (int i = 0; i < 24; i++) {
      char path[1024];
      snprintf(path, sizeof path, "%s/d/class_%03d/img_%08d.jpg", dir, i % 3, i);
      FILE *f = fopen(path, "rb");
      CHECK_MSG(f != NULL, "%s", path);
      if (!f) continue;
      static uint8_t buf[1 << 21];
      size_t n = fread(buf, 1, sizeof buf, f);
      fclose(f);
      stk__jpeg_info info;
      CHECK(stk__jpeg_peek(buf, n, &info, err, sizeof err) == STK_OK);
      CHECK(run(&t, buf, n, 0, i, &out) == STK_OK);
      CHECK_MSG(out.shape[1] == info.width && out.shape[0] == info.height, "%s", path);
      CHECK(info.subsampling == 444 || info.subsampling == 420);
    }
    stk__tensor_free(&out);
    t.op.impl->destroy(&t.op);
  }
  stk_test_remove_tree(dir);
  free(dir);
}

/* Through the engine's argument resolution: the schema defaults parse and reach the operator. */
static void test_standalone(void) {
  stk_pipeline_options options;
  stk_pipeline_options_default(&options);
  stk__op *op = NULL;
  CHECK_MSG(
      stk__op_new_standalone("decoders.image_random_crop", "cpu", NULL, &options, 7, &op, err, sizeof err) == STK_OK,
      "%s", err);
  if (op) {
    const stk__decoder_params *p = (const stk__decoder_params *)op->state;
    CHECK(p->random_crop && p->attempts == 10 && p->area_min == 0.08 && p->area_max == 1.0);
    CHECK(p->ratio_min == 0.75 && p->ratio_max > 1.3333 && p->ratio_max < 1.3334 && p->hint_w == 0);
    CHECK(p->color == STK__COLOR_RGB && p->seed == options.seed);
    stk__op_free_standalone(op);
  }
  stk_args *args = NULL;
  CHECK(stk_args_new(&args) == STK_OK);
  stk_args_set_string(args, "output_type", "BGR");
  op = NULL;
  CHECK_MSG(stk__op_new_standalone("decoders.image", "cpu", args, &options, 1, &op, err, sizeof err) == STK_OK, "%s",
            err);
  if (op) {
    CHECK(((const stk__decoder_params *)op->state)->color == STK__COLOR_BGR);
    stk__op_free_standalone(op);
  }
  stk_args_set_string(args, "output_type", "CMYK");
  op = NULL;
  CHECK(stk__op_new_standalone("decoders.image", "cpu", args, &options, 1, &op, err, sizeof err) == STK_EINVAL);
  CHECK_MSG(strstr(err, "output_type") != NULL, "%s", err);
  stk_args_destroy(args);
  /* readers.file defaults (bools, ints) resolve; a missing file_root is named. The strong reference
   * links reader_file.o from the static library (the registry's references are weak). */
  CHECK_STR(stk__op_readers_file.name, "readers.file");
  CHECK(stk_args_new(&args) == STK_OK);
  stk_args_set_string(args, "file_root", "/nonexistent/stoker-root");
  op = NULL;
  CHECK(stk__op_new_standalone("readers.file", "cpu", args, &options, 0, &op, err, sizeof err) == STK_ENOENT);
  CHECK_MSG(strstr(err, "/nonexistent/stoker-root") != NULL, "%s", err);
  stk_args_destroy(args);
}

static void random_crop_every_orientation(void) {
  for (int o = 1; o <= 8; o++) test_random_crop(o);
}

/* one STK_TEST_CASE per line: tests/CMakeLists.txt reads them */
// clang-format off
static const stk_test_case cases[] = {
    STK_TEST_CASE(test_standalone),
    STK_TEST_CASE(test_decode_image),
    STK_TEST_CASE(random_crop_every_orientation),
    STK_TEST_CASE(test_hint_size),
    STK_TEST_CASE(test_datagen_files),
};
// clang-format on

int main(int argc, char **argv) {
  if (stk_test_list_cases(cases, STK_TEST_COUNT(cases), argc, argv)) return 0;
  return stk_test_run_cases("test_decoders", cases, STK_TEST_COUNT(cases), argc, argv);
}
