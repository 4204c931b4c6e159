/* tests/test_sequence_ops.c: resize and crop_mirror_normalize on FHWC sequences (issue 17) on the
 * CPU: a sequence equals the image operator applied frame by frame, byte for byte; every
 * crop_mirror_normalize sequence layout (FCHW, CFHW, FHWC) element by element against a naive
 * loop; the default layout; mismatched layouts and inputs rejected with a message naming the
 * argument; and readers.video -> resize -> crop_mirror_normalize(output_layout="CFHW") as a
 * pipeline text on a clip made with the ffmpeg CLI (skipped without it). Not on any hot path. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "core/engine.h"
#include "ops/common/dtype.h"
#include "ops/op_impls.h"
#include "case_list.h"
#include "testutil.h"
#include "video_clips.h"

static char err[1024];
static stk__worker worker;

static stk__op *make_op(const char *name, stk_args *args) {
  stk__op *op = NULL;
  err[0] = 0;
  stk_status st = stk__op_new_standalone(name, "cpu", args, NULL, 1, &op, err, sizeof err);
  CHECK_MSG(st == STK_OK, "%s: %s", name, err);
  stk_args_destroy(args);
  return st == STK_OK ? op : NULL;
}

static stk_args *args_new(void) {
  stk_args *a = NULL;
  CHECK(stk_args_new(&a) == STK_OK);
  return a;
}

static stk_status run(stk__op *op, stk__tensor *in, stk__tensor *out) {
  stk__sample_ctx ctx;
  memset(&ctx, 0, sizeof ctx);
  ctx.err = err;
  ctx.err_size = sizeof err;
  ctx.thread_scratch = &worker;
  stk__tensor *inputs[1] = {in}, *outs[1] = {out};
  err[0] = 0;
  return op->impl->run_sample(op, &ctx, inputs, outs);
}

/* An FHWC u8 sequence (frames = 0: an HWC image) of pseudo-random pixels. */
static stk__tensor frames_tensor(int frames, int w, int h, int c, unsigned seed) {
  stk__tensor t;
  memset(&t, 0, sizeof t);
  int64_t seq[4] = {frames, h, w, c}, img[3] = {h, w, c};
  CHECK(frames ? stk__tensor_resize(&t, STK_DTYPE_UINT8, 4, seq, "FHWC") == STK_OK
               : stk__tensor_resize(&t, STK_DTYPE_UINT8, 3, img, "HWC") == STK_OK);
  uint32_t s = seed;
  for (size_t i = 0; i < t.nbytes; i++) {
    s = s * 1664525u + 1013904223u;
    ((uint8_t *)t.data)[i] = (uint8_t)(s >> 24);
  }
  return t;
}

/* Frame f of an FHWC tensor as an HWC image tensor (borrowed data). */
static stk__tensor frame_view(const stk__tensor *seq, int f) {
  stk__tensor t;
  memset(&t, 0, sizeof t);
  size_t bytes = (size_t)(seq->shape[1] * seq->shape[2] * seq->shape[3]);
  int64_t shape[3] = {seq->shape[1], seq->shape[2], seq->shape[3]};
  CHECK(stk__tensor_resize(&t, STK_DTYPE_UINT8, 3, shape, "HWC") == STK_OK);
  memcpy(t.data, (const uint8_t *)seq->data + (size_t)f * bytes, bytes);
  return t;
}

/* resize of a sequence: shape [F, H', W', C], layout FHWC, each frame the image resize's bytes. */
static void test_resize_sequence(void) {
  for (int variant = 0; variant < 3; variant++) {
    stk_args *a = args_new();
    if (variant == 0) {
      stk_args_set_float(a, "resize_x", 23);
      stk_args_set_float(a, "resize_y", 17);
    } else if (variant == 1) {
      stk_args_set_float(a, "resize_shorter", 40);
      stk_args_set_string(a, "interp_type", "INTERP_CUBIC");
    } else {
      stk_args_set_float(a, "resize_x", 37); /* identity */
      stk_args_set_float(a, "resize_y", 29);
    }
    stk__op *op = make_op("resize", a);
    if (!op) return;
    stk__tensor seq = frames_tensor(4, 37, 29, 3, 7u + (unsigned)variant), out = {0}, frame_out = {0};
    CHECK_MSG(run(op, &seq, &out) == STK_OK, "%s", err);
    CHECK(out.ndim == 4 && out.shape[0] == 4 && out.shape[3] == 3 && strcmp(out.layout, "FHWC") == 0);
    size_t frame_bytes = (size_t)(out.shape[1] * out.shape[2] * out.shape[3]);
    for (int f = 0; f < 4; f++) {
      stk__tensor img = frame_view(&seq, f);
      CHECK_MSG(run(op, &img, &frame_out) == STK_OK, "%s", err);
      CHECK(frame_out.ndim == 3 && frame_out.shape[0] == out.shape[1] && frame_out.shape[1] == out.shape[2]);
      CHECK_MSG(memcmp((uint8_t *)out.data + (size_t)f * frame_bytes, frame_out.data, frame_bytes) == 0,
                "variant %d frame %d differs from the image resize", variant, f);
      stk__tensor_free(&img);
    }
    stk__tensor_free(&seq);
    stk__tensor_free(&out);
    stk__tensor_free(&frame_out);
    stk__op_free_standalone(op);
  }
}

/* crop_mirror_normalize with a 10x7 crop at the centre, mean/std, mirror and the given layout/dtype. */
static stk__op *cmn_op(const char *layout, const char *dtype, int mirror, int pad) {
  stk_args *a = args_new();
  const double crop[2] = {7, 10}, mean[3] = {100, 120, 90}, std[3] = {50, 60, 70}, fill[4] = {1, 2, 3, 4};
  stk_args_set_float_list(a, "crop", crop, 2);
  stk_args_set_float_list(a, "mean", mean, 3);
  stk_args_set_float_list(a, "std", std, 3);
  stk_args_set_float_list(a, "fill_values", fill, 4);
  stk_args_set_float(a, "shift", 0.25);
  stk_args_set_int(a, "mirror", mirror);
  stk_args_set_bool(a, "pad_output", pad);
  if (layout) stk_args_set_string(a, "output_layout", layout);
  stk_args_set_string(a, "dtype", dtype);
  return make_op("crop_mirror_normalize", a);
}

/* The definition for output element (f, c, y, x) of a 13x11 RGB sequence cropped 10x7 at the centre
 * (x0 = floor(0.5 * 3 + 0.5) = 2, y0 = floor(0.5 * 4 + 0.5) = 2). */
static uint8_t naive_u8(float v) {
  float r = floorf(v + 0.5f);
  return (uint8_t)(r < 0 ? 0 : (r > 255 ? 255 : (int)r));
}

static float naive_value(const stk__tensor *seq, int f, int c, int y, int x, int mirror, stk_dtype dtype) {
  static const float mean[3] = {100, 120, 90}, std[3] = {50, 60, 70};
  if (c == 3) return dtype == STK_DTYPE_UINT8 ? (float)naive_u8(4.0f) : 4.0f; /* pad channel: fill[3] */
  int sx = 2 + (mirror ? 9 - x : x), sy = 2 + y;
  uint8_t px = ((const uint8_t *)seq->data)[(((size_t)f * 11 + (size_t)sy) * 13 + (size_t)sx) * 3 + (size_t)c];
  float v = ((float)px - mean[c]) * (float)(1.0 / std[c]) + 0.25f;
  if (dtype == STK_DTYPE_UINT8) return (float)naive_u8(v);
  if (dtype == STK_DTYPE_FLOAT16) return stk__half_to_float(stk__float_to_half(v));
  return v;
}

static float element(const stk__tensor *t, size_t i) {
  if (t->dtype == STK_DTYPE_FLOAT32) return ((const float *)t->data)[i];
  if (t->dtype == STK_DTYPE_FLOAT16) return stk__half_to_float(((const uint16_t *)t->data)[i]);
  return (float)((const uint8_t *)t->data)[i];
}

/* Every sequence layout x dtype x mirror x pad, element by element; and byte for byte the image
 * operator's CHW / HWC output of each frame. */
static void test_cmn_sequence_layouts(void) {
  static const char *layouts[3] = {"FCHW", "CFHW", "FHWC"};
  static const char *dtypes[3] = {"float", "float16", "uint8"};
  const int frames = 3, W = 10, H = 7;
  stk__tensor seq = frames_tensor(frames, 13, 11, 3, 11u);
  for (int l = 0; l < 3; l++)
    for (int d = 0; d < 3; d++)
      for (int m = 0; m <= 1; m++) {
        int pad = m; /* pad_output with mirror, none without: both covered */
        int C = 3 + pad;
        stk__op *op = cmn_op(layouts[l], dtypes[d], m, pad);
        stk__op *img_op = cmn_op(l == 2 ? "HWC" : "CHW", dtypes[d], m, pad);
        if (!op || !img_op) return;
        stk__tensor out = {0}, frame_out = {0};
        CHECK_MSG(run(op, &seq, &out) == STK_OK, "%s", err);
        CHECK(out.ndim == 4 && strcmp(out.layout, layouts[l]) == 0);
        const int64_t want[3][4] = {{frames, C, H, W}, {C, frames, H, W}, {frames, H, W, C}};
        CHECK_MSG(memcmp(out.shape, want[l], sizeof want[l]) == 0, "%s shape", layouts[l]);
        int bad = 0;
        for (int f = 0; f < frames; f++)
          for (int c = 0; c < C; c++)
            for (int y = 0; y < H; y++)
              for (int x = 0; x < W; x++) {
                size_t i = l == 0   ? (((size_t)f * C + c) * H + y) * W + x
                           : l == 1 ? (((size_t)c * frames + f) * H + y) * W + x
                                    : (((size_t)f * H + y) * W + x) * C + c;
                if (element(&out, i) != naive_value(&seq, f, c, y, x, m, out.dtype)) bad++;
              }
        CHECK_MSG(bad == 0, "%s %s mirror=%d: %d elements differ from the naive loop", layouts[l], dtypes[d], m, bad);
        size_t es = stk_dtype_size(out.dtype), plane = (size_t)H * W, frame = plane * (size_t)C;
        for (int f = 0; f < frames; f++) {
          stk__tensor img = frame_view(&seq, f);
          CHECK_MSG(run(img_op, &img, &frame_out) == STK_OK, "%s", err);
          for (int c = 0; c < (l == 1 ? C : 1); c++) { /* CFHW: plane c of frame f; else the whole frame */
            size_t at = l == 1 ? ((size_t)c * frames + f) * plane : (size_t)f * frame;
            size_t from = l == 1 ? (size_t)c * plane : 0, count = l == 1 ? plane : frame;
            CHECK_MSG(memcmp((uint8_t *)out.data + at * es, (uint8_t *)frame_out.data + from * es, count * es) == 0,
                      "%s %s frame %d differs from the image operator", layouts[l], dtypes[d], f);
          }
          stk__tensor_free(&img);
        }
        stk__tensor_free(&out);
        stk__tensor_free(&frame_out);
        stk__op_free_standalone(op);
        stk__op_free_standalone(img_op);
      }
  stk__tensor_free(&seq);
}

/* output_layout left at its default: CHW for an image, FCHW for a sequence. */
static void test_cmn_default_layout(void) {
  stk__op *op = cmn_op(NULL, "float", 0, 0);
  if (!op) return;
  stk__tensor seq = frames_tensor(2, 13, 11, 3, 5u), img = frames_tensor(0, 13, 11, 3, 5u), out = {0};
  CHECK_MSG(run(op, &seq, &out) == STK_OK, "%s", err);
  CHECK(out.ndim == 4 && out.shape[0] == 2 && out.shape[1] == 3 && strcmp(out.layout, "FCHW") == 0);
  CHECK_MSG(run(op, &img, &out) == STK_OK, "%s", err);
  CHECK(out.ndim == 3 && out.shape[0] == 3 && strcmp(out.layout, "CHW") == 0);
  stk__tensor_free(&seq);
  stk__tensor_free(&img);
  stk__tensor_free(&out);
  stk__op_free_standalone(op);
}

static void expect_run_error(stk__op *op, stk__tensor *in, const char *needle) {
  stk__tensor out = {0};
  CHECK_MSG(run(op, in, &out) == STK_EINVAL, "accepted (wanted an error about %s)", needle);
  CHECK_MSG(strstr(err, needle) != NULL, "message \"%s\" does not mention \"%s\"", err, needle);
  stk__tensor_free(&out);
}

/* Image layouts for sequences and sequence layouts for images are refused, naming the argument;
 * a 4-D input that is not FHWC is refused; an unknown layout fails at build naming the operator. */
static void test_errors(void) {
  stk__tensor seq = frames_tensor(2, 13, 11, 3, 9u), img = frames_tensor(0, 13, 11, 3, 9u);
  stk__op *chw = cmn_op("CHW", "float", 0, 0), *hwc = cmn_op("HWC", "float", 0, 0);
  stk__op *fchw = cmn_op("FCHW", "float", 0, 0), *cfhw = cmn_op("CFHW", "float", 0, 0);
  if (!chw || !hwc || !fchw || !cfhw) return;
  expect_run_error(chw, &seq, "'output_layout'");
  expect_run_error(hwc, &seq, "FCHW");
  expect_run_error(fchw, &img, "'output_layout'");
  expect_run_error(cfhw, &img, "sequence layout");
  strcpy(seq.layout, "NHWC");
  expect_run_error(fchw, &seq, "FHWC");
  stk_args *a = args_new();
  stk_args_set_float(a, "resize_x", 8);
  stk__op *resize = make_op("resize", a);
  if (resize) expect_run_error(resize, &seq, "FHWC");
  stk__op_free_standalone(resize);
  stk__op_free_standalone(chw);
  stk__op_free_standalone(hwc);
  stk__op_free_standalone(fchw);
  stk__op_free_standalone(cfhw);
  a = args_new();
  stk_args_set_string(a, "output_layout", "CHWF");
  stk__op *bad = NULL;
  err[0] = 0;
  CHECK(stk__op_new_standalone("crop_mirror_normalize", "cpu", a, NULL, 1, &bad, err, sizeof err) == STK_EINVAL);
  CHECK_MSG(strstr(err, "crop_mirror_normalize") && strstr(err, "output_layout") && strstr(err, "CFHW"), "%s", err);
  stk_args_destroy(a);
  stk__tensor_free(&seq);
  stk__tensor_free(&img);
}

/* readers.video -> resize -> crop_mirror_normalize(output_layout="CFHW") as a pipeline text: each
 * sample [C, F, H, W] equals the image operators applied to the reader's frames one by one. */
static void test_video_pipeline_text(void) {
  const char *encoder = vc_require_ffmpeg();
  char *dir = stk_test_tmpdir("seq-ops"), clip[1024], text[2048];
  snprintf(clip, sizeof clip, "%s/clip.mp4", dir);
  CHECK(vc_make_clip(clip, encoder, 64, 48, 16, 25, 8, NULL) == 0);
  snprintf(text, sizeof text,
           "frames, labels, ids = readers.video(filenames=[\"%s\"], sequence_length=4)\n"
           "small = resize(frames, resize_x=40, resize_y=30)\n"
           "out = crop_mirror_normalize(small, crop=[24, 32], mean=[120.0, 110.0, 100.0], std=[60.0, 50.0, 40.0], "
           "output_layout=\"CFHW\", mirror=1)\n"
           "outputs(out, frames)\n",
           clip);
  stk_pipeline_options o;
  stk_pipeline_options_default(&o);
  o.batch_size = 2;
  o.num_threads = 2;
  o.pin_threads = 0;
  stk_pipeline *p = NULL;
  CHECK(stk_pipeline_new(&o, &p) == STK_OK);
  CHECK_MSG(stk_pipeline_load_text(p, text, dir) == STK_OK, "%s", stk_pipeline_last_error(p));
  CHECK_MSG(stk_pipeline_build(p) == STK_OK, "%s", stk_pipeline_last_error(p));
  stk_args *ra = args_new(), *ca = args_new();
  stk_args_set_float(ra, "resize_x", 40);
  stk_args_set_float(ra, "resize_y", 30);
  const double crop[2] = {24, 32}, mean[3] = {120, 110, 100}, std[3] = {60, 50, 40};
  stk_args_set_float_list(ca, "crop", crop, 2);
  stk_args_set_float_list(ca, "mean", mean, 3);
  stk_args_set_float_list(ca, "std", std, 3);
  stk_args_set_int(ca, "mirror", 1);
  stk__op *resize = make_op("resize", ra), *cmn = make_op("crop_mirror_normalize", ca);
  stk_batch *b = NULL;
  CHECK_MSG(stk_pipeline_next(p, &b) == STK_OK, "%s", stk_pipeline_last_error(p));
  const size_t plane = 24 * 32;
  for (int s = 0; b && resize && cmn && s < 2; s++) {
    stk_tensor_view v, raw;
    CHECK(stk_batch_sample(b, 0, s, &v) == STK_OK && stk_batch_sample(b, 1, s, &raw) == STK_OK);
    CHECK_MSG(v.dtype == STK_DTYPE_FLOAT32 && v.shape[v.ndim - 4] == 3 && v.shape[v.ndim - 3] == 4 &&
                  v.shape[v.ndim - 2] == 24 && v.shape[v.ndim - 1] == 32,
              "sample %d: ndim %d", s, v.ndim);
    stk__tensor frame = {0}, small = {0}, want = {0};
    int64_t shape[3] = {48, 64, 3};
    for (int f = 0; f < 4; f++) {
      CHECK(stk__tensor_resize(&frame, STK_DTYPE_UINT8, 3, shape, "HWC") == STK_OK);
      memcpy(frame.data, (const uint8_t *)raw.data + (size_t)f * 48 * 64 * 3, 48 * 64 * 3);
      CHECK_MSG(run(resize, &frame, &small) == STK_OK && run(cmn, &small, &want) == STK_OK, "%s", err);
      for (int c = 0; c < 3; c++)
        CHECK_MSG(memcmp((const float *)v.data + ((size_t)c * 4 + f) * plane, (const float *)want.data + c * plane,
                         plane * sizeof(float)) == 0,
                  "sample %d channel %d frame %d differs from the image operators", s, c, f);
    }
    stk__tensor_free(&frame);
    stk__tensor_free(&small);
    stk__tensor_free(&want);
  }
  stk_batch_release(b);
  stk__op_free_standalone(resize);
  stk__op_free_standalone(cmn);
  stk_pipeline_destroy(p);
  vc_sh("rm -rf %s", dir);
  free(dir);
}

/* one STK_TEST_CASE per line: tests/CMakeLists.txt reads them */
// clang-format off
static const stk_test_case cases[] = {
    STK_TEST_CASE(test_resize_sequence),
    STK_TEST_CASE(test_cmn_sequence_layouts),
    STK_TEST_CASE(test_cmn_default_layout),
    STK_TEST_CASE(test_errors),
    STK_TEST_CASE(test_video_pipeline_text),
};
// clang-format on

int main(int argc, char **argv) {
  if (stk_test_list_cases(cases, STK_TEST_COUNT(cases), argc, argv)) return 0;
  int rc = stk_test_run_selected("test_sequence_ops", cases, STK_TEST_COUNT(cases), argc, argv);
  return rc ? rc : stk_test_finish("test_sequence_ops");
}
