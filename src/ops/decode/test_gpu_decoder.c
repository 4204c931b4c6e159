/* src/ops/decode/test_gpu_decoder.c: the mixed (nvJPEG) decoders.image / decoders.image_random_crop against
 * the CPU decoder (libjpeg-turbo, ISLOW IDCT, fancy upsampling) on JPEGs encoded here with libjpeg:
 * 4:4:4, 4:2:2, 4:2:0, grayscale, progressive, CMYK, odd sizes; photo-like content (tests/gpu_jpeg.h).
 *
 * Tolerance (nvJPEG's IDCT and chroma upsampling are not libjpeg's, so the pixels are not bit-exact):
 *   - shapes identical (same windows for the random crop: the CPU decoder's generator);
 *   - 4:4:4, gray, CMYK (decoded on the CPU by the mixed decoder): mean |diff| <= 1.0 level, max <= 16;
 *   - 4:2:2 / 4:2:0 / progressive: mean |diff| <= 1.5, max <= 24 (chroma upsampling differs most).
 * Random-crop windows are also checked by position: the GPU crop must match the CPU full decode at
 * the CPU's window better than at the window shifted by (3, 2) pixels.
 * Counters: decoded_hw + decoded_cuda + decoded_hybrid + decoded_cpu == batch size; CMYK goes to
 * the CPU; hw_decoder_load=0 sends nothing to the hardware engines.
 * Pre-staged (as in a pipeline: run_sample per sample, then run_batch with ctx.stage): the plan in
 * each stage routes to the engines or the CPU only, the CPU's share equals the CPU decoder's bytes
 * exactly, and a stage without its plan is an error (the header is not parsed a second time).
 * Faults through a whole pipeline (device_id 0): a batch with a truncated JPEG, a PNG named .jpg, a
 * progressive and a grayscale JPEG: by default next() fails naming a bad file; with
 * skip_bad_files the good ones decode, the bad ones are replaced and stats.skipped_files == 2.
 * Skips without a CUDA device. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/engine.h"
#include "device/device.h"
#include "gpu_jpeg.h"
#include "gpu_testutil.h"
#include "ops/decode/jpeg_route.h"
#include "ops/decode/decoders.h"
#include "case_list.h"
#include "testutil.h"

#if defined(STOKER_HAVE_CUDA)

static const gpu_jpeg_kind kKinds[] = {
    {"444 q95", 161, 123, 3, 444, 0, 95},        {"422 q90 odd", 97, 61, 3, 422, 0, 90},
    {"420 q90", 200, 150, 3, 420, 0, 90},        {"420 q85 odd", 333, 251, 3, 420, 0, 85},
    {"gray q92", 130, 77, 1, 0, 0, 92},          {"progressive 444", 150, 100, 3, 444, 1, 95},
    {"progressive 420", 121, 99, 3, 420, 1, 90}, {"cmyk", 64, 48, 4, 0, 0, 95},
};
#define N ((int)(sizeof kKinds / sizeof kKinds[0]))

static uint8_t *g_jpeg[N];
static size_t g_size[N];
static stk__tensor g_encoded[N];
static stk__tensor_list g_in;
static stk__sample_plan g_samples[N];
static stk__batch_plan g_plan;
static char g_err[1024];
static uint64_t g_allocs;
static void *g_stream;
static stk__worker g_worker;
static stk_pipeline_options g_options;

static double mean_tolerance(const gpu_jpeg_kind *k) {
  return (k->components == 3 && (k->subsampling != 444 || k->progressive)) ? 1.5 : 1.0;
}
static int max_tolerance(const gpu_jpeg_kind *k) {
  return (k->components == 3 && (k->subsampling != 444 || k->progressive)) ? 24 : 16;
}

static stk__op *make_op(const char *name, const char *device, stk_args *args) {
  stk__op *op = NULL;
  g_err[0] = 0;
  stk_status st = stk__op_new_standalone(name, device, args, &g_options, 3, &op, g_err, sizeof g_err);
  CHECK_MSG(st == STK_OK, "%s (%s): %s", name, device, g_err);
  return st == STK_OK ? op : NULL;
}

static stk_status cpu_decode(stk__op *op, int i, stk__tensor *out) {
  stk__sample_ctx ctx;
  memset(&ctx, 0, sizeof ctx);
  ctx.epoch = g_plan.epoch;
  ctx.sample_id = g_samples[i].sample_id;
  ctx.sample_in_batch = i;
  ctx.source = g_samples[i].source;
  ctx.err = g_err;
  ctx.err_size = sizeof g_err;
  ctx.thread_scratch = &g_worker;
  stk__tensor *ins[1] = {&g_encoded[i]}, *outs[1] = {out};
  return op->impl->run_sample(op, &ctx, ins, outs);
}

/* run_batch as the GPU stage calls it; `stage`: the pre-stage's outputs (a pipeline) or NULL (the
 * operator on its own). */
static stk_status mixed_decode_staged(stk__op *op, stk__tensor_list *stage, stk__tensor_list *out,
                                      stk_pipeline_stats *stats) {
  stk__batch_ctx ctx;
  memset(&ctx, 0, sizeof ctx);
  ctx.epoch = g_plan.epoch;
  ctx.batch_size = N;
  ctx.plan = &g_plan;
  ctx.cuda_stream = g_stream;
  ctx.device_id = 0;
  ctx.err = g_err;
  ctx.err_size = sizeof g_err;
  ctx.alloc_count = &g_allocs;
  ctx.stats = stats;
  ctx.stage = stage;
  stk__tensor_list *ins[1] = {&g_in}, *outs[1] = {out};
  g_err[0] = 0;
  stk_status st = op->impl->run_batch(op, &ctx, ins, outs);
  if (st == STK_OK) st = stk__gpu_stream_synchronize(g_stream);
  return st;
}

static stk_status mixed_decode(stk__op *op, stk__tensor_list *out, stk_pipeline_stats *stats) {
  return mixed_decode_staged(op, NULL, out, stats);
}

static uint8_t *download(const stk__tensor *t) {
  uint8_t *host = (uint8_t *)malloc(t->nbytes ? t->nbytes : 1);
  CHECK(stk__gpu_memcpy_d2h(host, t->data, t->nbytes, g_stream) == STK_OK);
  return host;
}

/* Mean and max |a - b| over w x h x c of a (packed) against b at (bx, by) in an image of width bw. */
static void window_diff(const uint8_t *a, int w, int h, int c, const uint8_t *b, int bw, int bx, int by, double *mean,
                        int *max) {
  double sum = 0;
  *max = 0;
  for (int y = 0; y < h; y++)
    for (int x = 0; x < w; x++)
      for (int k = 0; k < c; k++) {
        int d = abs((int)a[((size_t)y * w + x) * c + k] - (int)b[((size_t)(by + y) * bw + bx + x) * c + k]);
        sum += d;
        if (d > *max) *max = d;
      }
  *mean = sum / ((double)w * h * c);
}

static int shapes_equal(const stk__tensor *a, const stk__tensor *b) {
  if (a->ndim != b->ndim || a->dtype != b->dtype) return 0;
  for (int d = 0; d < a->ndim; d++)
    if (a->shape[d] != b->shape[d]) return 0;
  return 1;
}

static void check_counts(const char *what, const stk_pipeline_stats *s, uint64_t expected) {
  uint64_t sum = s->decoded_hw + s->decoded_cuda + s->decoded_hybrid + s->decoded_cpu;
  printf("%s: decoded hw %llu, cuda %llu, hybrid %llu, cpu %llu\n", what, (unsigned long long)s->decoded_hw,
         (unsigned long long)s->decoded_cuda, (unsigned long long)s->decoded_hybrid,
         (unsigned long long)s->decoded_cpu);
  CHECK_MSG(sum == expected, "%s: decoder counters add up to %llu, not %llu", what, (unsigned long long)sum,
            (unsigned long long)expected);
  CHECK_MSG(s->decoded_cpu >= 1, "%s: the CMYK image must be decoded on the CPU", what);
}

static void test_full_decode(stk_args *args, const char *what) {
  stk__op *cpu = make_op("decoders.image", "cpu", args), *mixed = make_op("decoders.image", "mixed", args);
  if (!cpu || !mixed) goto done;
  stk__tensor_list out;
  memset(&out, 0, sizeof out);
  stk_pipeline_stats stats;
  memset(&stats, 0, sizeof stats);
  stk_status st = mixed_decode(mixed, &out, &stats);
  CHECK_MSG(st == STK_OK, "%s: %s", what, g_err);
  if (st != STK_OK) goto done;
  check_counts(what, &stats, N);
  for (int i = 0; i < N; i++) {
    stk__tensor ref;
    memset(&ref, 0, sizeof ref);
    CHECK_MSG(cpu_decode(cpu, i, &ref) == STK_OK, "cpu %s: %s", kKinds[i].name, g_err);
    CHECK_MSG(shapes_equal(&out.samples[i], &ref), "%s %s: GPU shape %lldx%lldx%lld, CPU %lldx%lldx%lld", what,
              kKinds[i].name, (long long)out.samples[i].shape[0], (long long)out.samples[i].shape[1],
              (long long)out.samples[i].shape[2], (long long)ref.shape[0], (long long)ref.shape[1],
              (long long)ref.shape[2]);
    if (shapes_equal(&out.samples[i], &ref)) {
      uint8_t *gpu = download(&out.samples[i]);
      double mean;
      int max;
      int w = (int)ref.shape[1], h = (int)ref.shape[0], c = (int)ref.shape[2];
      window_diff(gpu, w, h, c, (const uint8_t *)ref.data, w, 0, 0, &mean, &max);
      printf("%s %-16s %dx%d: mean |gpu - cpu| %.3f (<= %.1f), max %d (<= %d)\n", what, kKinds[i].name, w, h, mean,
             mean_tolerance(&kKinds[i]), max, max_tolerance(&kKinds[i]));
      CHECK_MSG(mean <= mean_tolerance(&kKinds[i]) && max <= max_tolerance(&kKinds[i]), "%s %s: mean %.3f max %d", what,
                kKinds[i].name, mean, max);
      free(gpu);
    }
    stk__tensor_free(&ref);
  }
  stk__gpu_tensor_list_free(&out);
done:
  stk__op_free_standalone(cpu);
  stk__op_free_standalone(mixed);
}

static void test_random_crop(void) {
  stk_args *args = NULL;
  CHECK(stk_args_new(&args) == STK_OK);
  const double area[2] = {0.1, 0.6};
  stk_args_set_float_list(args, "random_area", area, 2);
  stk_args_set_int(args, "seed", 1234);
  stk__op *cpu = make_op("decoders.image_random_crop", "cpu", args);
  stk__op *mixed = make_op("decoders.image_random_crop", "mixed", args);
  stk__op *full = make_op("decoders.image", "cpu", NULL);
  if (!cpu || !mixed || !full) goto done;
  stk__tensor_list out;
  memset(&out, 0, sizeof out);
  stk_pipeline_stats stats;
  memset(&stats, 0, sizeof stats);
  stk_status st = mixed_decode(mixed, &out, &stats);
  CHECK_MSG(st == STK_OK, "random crop: %s", g_err);
  if (st != STK_OK) goto done;
  check_counts("random crop", &stats, N);
  stk__decoder_params params;
  CHECK(stk__decoder_params_get(cpu, &params, g_err, sizeof g_err) == STK_OK);
  for (int i = 0; i < N; i++) {
    stk__tensor ref, whole;
    memset(&ref, 0, sizeof ref);
    memset(&whole, 0, sizeof whole);
    CHECK_MSG(cpu_decode(cpu, i, &ref) == STK_OK, "cpu crop %s: %s", kKinds[i].name, g_err);
    CHECK_MSG(cpu_decode(full, i, &whole) == STK_OK, "cpu full %s: %s", kKinds[i].name, g_err);
    CHECK_MSG(shapes_equal(&out.samples[i], &ref), "random crop %s: GPU window %lldx%lld, CPU %lldx%lld",
              kKinds[i].name, (long long)out.samples[i].shape[1], (long long)out.samples[i].shape[0],
              (long long)ref.shape[1], (long long)ref.shape[0]);
    if (shapes_equal(&out.samples[i], &ref)) {
      int W = (int)whole.shape[1], H = (int)whole.shape[0], c = (int)whole.shape[2];
      stk__window win = stk__decoder_crop_window(&params, cpu->id, g_plan.epoch, g_samples[i].sample_id, W, H);
      CHECK(win.w == (int)ref.shape[1] && win.h == (int)ref.shape[0]);
      uint8_t *gpu = download(&out.samples[i]);
      double mean, shifted_mean;
      int max, shifted_max;
      window_diff(gpu, win.w, win.h, c, (const uint8_t *)ref.data, win.w, 0, 0, &mean, &max);
      printf("random crop %-16s window %dx%d at (%d, %d): mean %.3f max %d\n", kKinds[i].name, win.w, win.h, win.x,
             win.y, mean, max);
      CHECK_MSG(mean <= mean_tolerance(&kKinds[i]) && max <= max_tolerance(&kKinds[i]), "crop %s: mean %.3f max %d",
                kKinds[i].name, mean, max);
      int sx = win.x + 3 <= W - win.w ? win.x + 3 : win.x - 3, sy = win.y + 2 <= H - win.h ? win.y + 2 : win.y - 2;
      if (sx >= 0 && sy >= 0) {
        double at_window;
        int unused;
        window_diff(gpu, win.w, win.h, c, (const uint8_t *)whole.data, W, win.x, win.y, &at_window, &unused);
        window_diff(gpu, win.w, win.h, c, (const uint8_t *)whole.data, W, sx, sy, &shifted_mean, &shifted_max);
        CHECK_MSG(at_window < shifted_mean, "crop %s: the GPU window matches a shifted window better (%.3f vs %.3f)",
                  kKinds[i].name, at_window, shifted_mean);
      }
      free(gpu);
    }
    stk__tensor_free(&ref);
    stk__tensor_free(&whole);
  }
  stk__gpu_tensor_list_free(&out);
done:
  stk__op_free_standalone(cpu);
  stk__op_free_standalone(mixed);
  stk__op_free_standalone(full);
  stk_args_destroy(args);
}

static void test_hw_load_zero(void) {
  stk_args *args = NULL;
  CHECK(stk_args_new(&args) == STK_OK);
  stk_args_set_float(args, "hw_decoder_load", 0.0);
  stk__op *mixed = make_op("decoders.image", "mixed", args);
  if (mixed) {
    stk__tensor_list out;
    memset(&out, 0, sizeof out);
    stk_pipeline_stats stats;
    memset(&stats, 0, sizeof stats);
    CHECK_MSG(mixed_decode(mixed, &out, &stats) == STK_OK, "%s", g_err);
    check_counts("hw_decoder_load=0", &stats, N);
    CHECK_MSG(stats.decoded_hw == 0, "hw_decoder_load=0 still sent %llu images to the engines",
              (unsigned long long)stats.decoded_hw);
    stk__gpu_tensor_list_free(&out);
  }
  stk__op_free_standalone(mixed);
  stk_args_destroy(args);
}

/* ---- The CPU pre-stage's hand-over ------------------------------------------------------------- */
/* What a pipeline does: the mixed op's run_sample (its CPU pre-stage) for every sample into a
 * stage list, then run_batch with ctx.stage. The plan each stage carries routes the image to the
 * engines or to the CPU (never nvJPEG's lanes); the CPU's share is libjpeg-turbo's own decode, so
 * it must equal the CPU operator's bytes exactly; the engines' within the tolerance. A stage whose
 * plan is gone makes run_batch fail with STK_EINTERNAL instead of parsing the header again. */
static void test_prestaged(const char *name, stk_args *args) {
  stk__op *cpu = make_op(name, "cpu", args), *mixed = make_op(name, "mixed", args);
  stk__tensor stages[N];
  memset(stages, 0, sizeof stages);
  stk__tensor_list stage_list = {N, stages, 0, NULL, 0, STK_DEVICE_CPU, 0};
  stk__tensor_list out;
  memset(&out, 0, sizeof out);
  if (!cpu || !mixed) goto done;
  uint64_t hw = 0, on_cpu = 0;
  for (int i = 0; i < N; i++) {
    CHECK_MSG(cpu_decode(mixed, i, &stages[i]) == STK_OK, "pre-stage %s: %s", kKinds[i].name, g_err);
    stk__jpeg_plan plan;
    CHECK_MSG(stk__jpeg_plan_load(&stages[i], g_samples[i].sample_id, &plan, g_err, sizeof g_err) == STK_OK, "%s",
              g_err);
    CHECK_MSG(plan.route == STK__JPEG_ROUTE_HW || plan.route == STK__JPEG_ROUTE_CPU, "%s: route %d", kKinds[i].name,
              plan.route);
    CHECK((plan.route == STK__JPEG_ROUTE_CPU) == (stages[i].nbytes > 0)); /* pixels only for the CPU's */
    hw += plan.route == STK__JPEG_ROUTE_HW;
    on_cpu += plan.route == STK__JPEG_ROUTE_CPU;
  }
  stk_pipeline_stats stats;
  memset(&stats, 0, sizeof stats);
  stk_status st = mixed_decode_staged(mixed, &stage_list, &out, &stats);
  CHECK_MSG(st == STK_OK, "%s pre-staged: %s", name, g_err);
  if (st != STK_OK) goto done;
  check_counts(name, &stats, N);
  CHECK(stats.decoded_cuda == 0 && stats.decoded_hybrid == 0);
  CHECK_MSG(stats.decoded_cpu >= on_cpu && stats.decoded_hw <= hw, "planned hw %llu cpu %llu", (unsigned long long)hw,
            (unsigned long long)on_cpu);
  for (int i = 0; i < N; i++) {
    stk__tensor ref;
    memset(&ref, 0, sizeof ref);
    CHECK_MSG(cpu_decode(cpu, i, &ref) == STK_OK, "cpu %s: %s", kKinds[i].name, g_err);
    CHECK_MSG(shapes_equal(&out.samples[i], &ref), "%s %s: shapes differ", name, kKinds[i].name);
    if (shapes_equal(&out.samples[i], &ref)) {
      uint8_t *gpu = download(&out.samples[i]);
      double mean;
      int max, w = (int)ref.shape[1], h = (int)ref.shape[0], c = (int)ref.shape[2];
      window_diff(gpu, w, h, c, (const uint8_t *)ref.data, w, 0, 0, &mean, &max);
      int exact = stages[i].nbytes > 0;
      printf("%s pre-staged %-16s %s: mean %.3f max %d\n", name, kKinds[i].name, exact ? "cpu" : "hw ", mean, max);
      CHECK_MSG(exact ? max == 0 : mean <= mean_tolerance(&kKinds[i]) && max <= max_tolerance(&kKinds[i]),
                "%s %s: mean %.3f max %d", name, kKinds[i].name, mean, max);
      free(gpu);
    }
    stk__tensor_free(&ref);
  }
  memset(stages[0].stage_record, 0, sizeof stages[0].stage_record); /* as if its pre-stage never ran */
  st = mixed_decode_staged(mixed, &stage_list, &out, &stats);
  CHECK_MSG(st == STK_EINTERNAL && strstr(g_err, "pre-stage"), "a stage with no plan: %s: %s", stk_status_name(st),
            g_err);
done:
  stk__gpu_tensor_list_free(&out);
  for (int i = 0; i < N; i++) stk__tensor_free(&stages[i]);
  stk__op_free_standalone(cpu);
  stk__op_free_standalone(mixed);
}

/* ---- Faults through a whole pipeline ---------------------------------------------------------- */
static stk_pipeline *fault_pipeline(const char *root, int skip) {
  stk_pipeline_options o;
  stk_pipeline_options_default(&o);
  o.batch_size = 5;
  o.num_threads = 2;
  o.device_id = 0;
  o.pin_threads = 0;
  o.skip_bad_files = skip;
  stk_pipeline *p = NULL;
  CHECK(stk_pipeline_new(&o, &p) == STK_OK);
  stk_args *ra = NULL, *da = NULL;
  stk_args_new(&ra);
  stk_args_new(&da);
  stk_args_set_string(ra, "file_root", root);
  stk_args_set_string(da, "device", "mixed");
  const char *reader_in[1] = {NULL}, *dec_in[1] = {"reader"}, *outs[2] = {"images", "reader[1]"};
  CHECK_MSG(stk_pipeline_add_op(p, "readers.file", "reader", reader_in, 0, ra) == STK_OK, "%s",
            stk_pipeline_last_error(p));
  CHECK_MSG(stk_pipeline_add_op(p, "decoders.image", "images", dec_in, 1, da) == STK_OK, "%s",
            stk_pipeline_last_error(p));
  CHECK(stk_pipeline_set_outputs(p, outs, 2) == STK_OK);
  CHECK_MSG(stk_pipeline_build(p) == STK_OK, "%s", stk_pipeline_last_error(p));
  stk_args_destroy(ra);
  stk_args_destroy(da);
  return p;
}

static void test_faults(void) {
  char *root = stk_test_tmpdir("gpu_decoder");
  char dir[4096];
  snprintf(dir, sizeof dir, "%s/a", root);
  mkdir(dir, 0755);
  /* Sorted: corrupt, good, gray, png, progressive. */
  const gpu_jpeg_kind good = {"good", 120, 90, 3, 420, 0, 92}, gray = {"gray", 100, 70, 1, 0, 0, 92},
                      prog = {"prog", 90, 120, 3, 444, 1, 92};
  size_t n;
  uint8_t *j = gpu_jpeg_make(&good, 1, &n);
  CHECK(gpu_write_file(dir, "b_good.jpg", j, n));
  CHECK(gpu_write_file(dir, "a_corrupt.jpg", j, 100)); /* cut inside the quantization tables */
  free(j);
  j = gpu_jpeg_make(&gray, 2, &n);
  CHECK(gpu_write_file(dir, "c_gray.jpg", j, n));
  free(j);
  CHECK(gpu_write_file(dir, "d_png.jpg", kGpuPngBytes, sizeof kGpuPngBytes));
  j = gpu_jpeg_make(&prog, 3, &n);
  CHECK(gpu_write_file(dir, "e_progressive.jpg", j, n));
  free(j);

  stk_pipeline *p = fault_pipeline(root, 0);
  stk_batch *b = NULL;
  stk_status st = stk_pipeline_next(p, &b);
  const char *msg = stk_pipeline_last_error(p);
  CHECK_MSG(st != STK_OK, "a batch with a corrupt JPEG and a PNG decoded without error");
  CHECK_MSG(strstr(msg, "a_corrupt.jpg") || strstr(msg, "d_png.jpg"), "the error does not name the bad file: %s", msg);
  printf("default: %s -> %s\n", stk_status_name(st), msg);
  if (st == STK_OK) stk_batch_release(b);
  stk_pipeline_destroy(p);

  p = fault_pipeline(root, 1);
  st = stk_pipeline_next(p, &b);
  CHECK_MSG(st == STK_OK, "skip_bad_files: %s", stk_pipeline_last_error(p));
  if (st == STK_OK) {
    const int expect_w[5] = {120, 100, 90, 120, 100}, expect_h[5] = {90, 70, 120, 90, 70};
    /* the refill: the epoch has no other file, so the good ones come first (b_good, c_gray,
     * e_progressive) and the two slots left are fill copies of them in turn (b_good, c_gray); each
     * slot decoded from the plan its pre-stage made for the sample that ended up there */
    for (int s = 0; s < 5; s++) {
      stk_tensor_view v;
      CHECK(stk_batch_sample(b, 0, s, &v) == STK_OK);
      CHECK(v.device_type == STK_DEVICE_GPU);
      CHECK_MSG(v.shape[0] == expect_h[s] && v.shape[1] == expect_w[s] && v.shape[2] == 3,
                "sample %d is %lldx%lld, expected %dx%d", s, (long long)v.shape[1], (long long)v.shape[0], expect_w[s],
                expect_h[s]);
    }
    stk_tensor_view a0, a1; /* slot 3, the fill, is a copy of slot 0, the sample it repeats */
    if (stk_batch_sample(b, 0, 0, &a0) == STK_OK && stk_batch_sample(b, 0, 3, &a1) == STK_OK &&
        a0.nbytes == a1.nbytes) {
      CHECK(stk__gpu_event_synchronize(stk_batch_cuda_event(b)) == STK_OK);
      uint8_t *x = (uint8_t *)malloc(a0.nbytes), *y = (uint8_t *)malloc(a1.nbytes);
      CHECK(stk__gpu_memcpy_d2h(x, a0.data, a0.nbytes, g_stream) == STK_OK);
      CHECK(stk__gpu_memcpy_d2h(y, a1.data, a1.nbytes, g_stream) == STK_OK);
      CHECK_MSG(memcmp(x, y, a0.nbytes) == 0, "the fill slot is not a copy of the sample it repeats");
      free(x);
      free(y);
    }
    stk_batch_release(b);
    stk_pipeline_stats stats;
    CHECK(stk_pipeline_stats_get(p, &stats) == STK_OK);
    printf("skip_bad_files: skipped %llu, decoded hw %llu cuda %llu hybrid %llu cpu %llu\n",
           (unsigned long long)stats.skipped_files, (unsigned long long)stats.decoded_hw,
           (unsigned long long)stats.decoded_cuda, (unsigned long long)stats.decoded_hybrid,
           (unsigned long long)stats.decoded_cpu);
    CHECK_MSG(stats.skipped_files == 2, "stats.skipped_files = %llu, expected 2",
              (unsigned long long)stats.skipped_files);
    CHECK(stats.decoded_hw + stats.decoded_cuda + stats.decoded_hybrid + stats.decoded_cpu == 3);
  }
  stk_pipeline_destroy(p);
  CHECK(stk_test_remove_tree(root) == 0);
  free(root);
}

static void full_decode(void) { test_full_decode(NULL, "decoders.image"); }
static void prestaged_full_decode(void) { test_prestaged("decoders.image", NULL); }
static void prestaged_random_crop(void) {
  stk_args *crop_args = NULL;
  CHECK(stk_args_new(&crop_args) == STK_OK);
  const double area[2] = {0.1, 0.6};
  stk_args_set_float_list(crop_args, "random_area", area, 2);
  stk_args_set_int(crop_args, "seed", 77);
  stk_args_set_float(crop_args, "hw_decoder_load", 0.5);
  test_prestaged("decoders.image_random_crop", crop_args);
  stk_args_destroy(crop_args);
}

/* one STK_TEST_CASE per line: tests/CMakeLists.txt reads them */
// clang-format off
static const stk_test_case cases[] = {
    STK_TEST_CASE(full_decode),
    STK_TEST_CASE(test_random_crop),
    STK_TEST_CASE(test_hw_load_zero),
    STK_TEST_CASE(prestaged_full_decode),
    STK_TEST_CASE(prestaged_random_crop),
    STK_TEST_CASE(test_faults),
};
// clang-format on

int main(int argc, char **argv) {
  if (stk_test_list_cases(cases, STK_TEST_COUNT(cases), argc, argv)) return 0;
  gpu_test_require_device(0);
  stk_pipeline_options_default(&g_options);
  g_options.device_id = 0;
  g_options.num_threads = 2;
  CHECK(stk__gpu_set_device(0) == STK_OK);
  CHECK(stk__gpu_stream_create(&g_stream, STK_STREAM_PRIORITY_NORMAL) == STK_OK);
  g_plan.epoch = 1;
  g_plan.batch_size = N;
  g_plan.samples = g_samples;
  g_in.count = N;
  g_in.samples = g_encoded;
  g_in.device = STK_DEVICE_CPU;
  for (int i = 0; i < N; i++) {
    g_jpeg[i] = gpu_jpeg_make(&kKinds[i], (unsigned)i + 11, &g_size[i]);
    memset(&g_encoded[i], 0, sizeof g_encoded[i]);
    g_encoded[i].data = g_jpeg[i];
    g_encoded[i].nbytes = g_size[i];
    g_encoded[i].dtype = STK_DTYPE_UINT8;
    g_encoded[i].ndim = 1;
    g_encoded[i].shape[0] = (int64_t)g_size[i];
    g_encoded[i].device = STK_DEVICE_CPU;
    g_samples[i].sample_id = 500 + 3 * i;
    g_samples[i].source = kKinds[i].name;
  }
  int rc = stk_test_run_selected("test_gpu_decoder", cases, STK_TEST_COUNT(cases), argc, argv);
  stk__gpu_stream_destroy(g_stream);
  for (int i = 0; i < N; i++) free(g_jpeg[i]);
  for (int s = 0; s < 8; s++) free(g_worker.scratch[s]);
  return rc ? rc : stk_test_finish("test_gpu_decoder");
}
#else
int main(void) { TEST_SKIP("this stoker was built without CUDA"); }
#endif
