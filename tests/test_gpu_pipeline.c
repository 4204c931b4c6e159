/* tests/test_gpu_pipeline.c: the built-in rn50-train / rn50-val pipelines on the GPU (device_id 0:
 * mixed decoder, fused GPU resize + crop_mirror_normalize) against the same pipelines on the CPU
 * (device_id -1), same generated data (tests/gpu_jpeg.h: 4:4:4 and 4:2:0 photo-like JPEGs) and seed.
 *
 * Tolerances (std = 57.12 is the smallest std of the normalization):
 *   - whole pipeline GPU vs CPU, per element: |diff| <= (24 + 1) / 57.12 + 1e-3 -- the decode may
 *     differ by up to 24 levels (test_gpu_decoder's bound), the resize weights are non-negative and
 *     sum to 1 so they do not amplify it, plus one u8 rounding level; mean |diff| <= (1.5 + 0.5) /
 *     57.12 + 1e-3. A wrong crop window or flip fails the mean by far.
 *   - decode difference removed (a text pipeline exposing the mixed decoder's output; the CPU
 *     resize + crop_mirror_normalize operators applied to it with the pipeline's mirror flags):
 *     |diff| <= 1 / 57.12 + 1e-4, mean <= 1e-3.
 * Also: same labels; identical bytes across two GPU runs (FNV-1a digest); stk_batch_cuda_event
 * non-NULL; no allocation after warm-up over two epochs; DLPack export is kDLCUDA; destroying the
 * pipeline mid-epoch with batches in flight and one held (which stays readable until released).
 * Decoder split (hw_decoder_load 0.5, two epochs): the engines take the odd positions of each
 * batch and the CPU pre-stage the even ones; the pre-staged samples are byte-identical to the CPU
 * pipeline's decoder (same libjpeg-turbo windows), the engines' within the decoder tolerance
 * (max 24 levels); the counters say half and half; no allocation after warm-up. The same with
 * cuda_decoder_load 0.5: the CUDA decoder (GPU Huffman, on the lanes) takes half of the
 * pre-stage's positions (2 and 6 of 8), within the engines' bound, and decoded_cuda counts them.
 * The automatic router (hw_decoder_load unset): its record names the decision, and a second
 * pipeline of the process gives the same bytes batch for batch past the decision; a user-set load
 * is named in the record instead.
 * Device out of memory: an error with a message from build or next, never a crash; a new pipeline
 * runs once the memory is back. Prefetch goes on while the consumer's stream still reads a
 * released batch (held at a gate: the epoch's batches arrive before it opens).
 * Skips without a CUDA device. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/engine.h"
#include "device/device.h"
#include "gpu_jpeg.h"
#include "gpu_testutil.h"
#include "stoker/dlpack.h"
#include "case_list.h"
#include "testutil.h"

#if defined(STOKER_HAVE_CUDA)

#define BATCH   8
#define IMAGES  32 /* 4 batches per epoch */
#define MIN_STD 57.12

static char *g_root;
static void *g_stream;
static stk__worker g_worker;

static void make_data(void) {
  g_root = stk_test_tmpdir("gpu_pipeline");
  CHECK(gpu_photo_tree(g_root, IMAGES / 2));
}

/* The tests' pipeline options: BATCH samples, 2 unpinned threads, on device_id. */
static int g_threads = 2; /* workers of the pipelines the tests build */

static stk_pipeline_options test_options(int device_id) {
  stk_pipeline_options o;
  stk_pipeline_options_default(&o);
  o.batch_size = BATCH;
  o.num_threads = g_threads;
  o.device_id = device_id;
  o.pin_threads = 0;
  return o;
}

static stk_pipeline *build_on(const char *builtin, const char *decoder, const char *text, int device_id) {
  stk_pipeline_options o = test_options(device_id);
  o.seed = 7;
  o.prefetch_queue_depth = 2;
  stk_pipeline *p = NULL;
  CHECK(stk_pipeline_new(&o, &p) == STK_OK);
  stk_status st =
      builtin ? stk_pipeline_add_builtin_on(p, builtin, g_root, decoder) : stk_pipeline_load_text(p, text, g_root);
  CHECK_MSG(st == STK_OK, "%s: %s", builtin ? builtin : "text", stk_pipeline_last_error(p));
  st = stk_pipeline_build(p);
  CHECK_MSG(st == STK_OK, "build (device %d): %s", device_id, stk_pipeline_last_error(p));
  if (st != STK_OK) {
    stk_pipeline_destroy(p);
    return NULL;
  }
  return p;
}

static stk_pipeline *build(const char *builtin, const char *text, int device_id) {
  return build_on(builtin, NULL, text, device_id);
}

/* Output o of batch b in host memory (waits on the batch's event for GPU data); malloc'd. */
static void *host_copy(stk_batch *b, int o, stk_tensor_view *view) {
  CHECK(stk_batch_tensor(b, o, view) == STK_OK);
  void *host = malloc(view->nbytes ? view->nbytes : 1);
  if (view->device_type == STK_DEVICE_GPU) {
    void *event = stk_batch_cuda_event(b);
    CHECK_MSG(event != NULL, "a GPU batch has no CUDA event");
    if (event) CHECK(stk__gpu_event_synchronize(event) == STK_OK);
    CHECK(stk__gpu_memcpy_d2h(host, view->data, view->nbytes, g_stream) == STK_OK);
  } else {
    memcpy(host, view->data, view->nbytes);
  }
  return host;
}

/* Built-in `name` on GPU 0 (decoder: NULL = mixed, "cpu" = decode and resize on the workers,
 * normalize on the GPU from uploaded host images) against the same built-in on the CPU alone.
 * Tolerances in normalized units (x / std). */
static void compare_pipes(const char *name, stk_pipeline *gpu, stk_pipeline *cpu, double max_tol, double mean_tol) {
  if (!gpu || !cpu) goto done;
  double worst = 0, sum = 0;
  size_t count = 0;
  for (int k = 0; k < IMAGES / BATCH; k++) {
    stk_batch *bg = NULL, *bc = NULL;
    stk_status sg = stk_pipeline_next(gpu, &bg), sc = stk_pipeline_next(cpu, &bc);
    CHECK_MSG(sg == STK_OK, "%s gpu batch %d: %s", name, k, stk_pipeline_last_error(gpu));
    CHECK_MSG(sc == STK_OK, "%s cpu batch %d: %s", name, k, stk_pipeline_last_error(cpu));
    if (sg == STK_OK && sc == STK_OK) {
      stk_tensor_view vg, vc, lg, lc;
      float *g = (float *)host_copy(bg, 0, &vg), *c = (float *)host_copy(bc, 0, &vc);
      CHECK(vg.device_type == STK_DEVICE_GPU && vc.device_type == STK_DEVICE_CPU);
      CHECK(vg.dtype == STK_DTYPE_FLOAT32 && vg.ndim == 4 && vg.shape[0] == BATCH && vg.shape[1] == 3 &&
            vg.shape[2] == 224 && vg.shape[3] == 224);
      CHECK_MSG(vg.nbytes == vc.nbytes, "%s: GPU batch %zu bytes, CPU %zu", name, vg.nbytes, vc.nbytes);
      if (vg.nbytes == vc.nbytes)
        for (size_t e = 0; e < vg.nbytes / 4; e++) {
          double d = fabs((double)g[e] - c[e]);
          sum += d;
          if (d > worst) worst = d;
          count++;
        }
      void *a = host_copy(bg, 1, &lg), *l = host_copy(bc, 1, &lc);
      CHECK_MSG(lg.nbytes == lc.nbytes && memcmp(a, l, lg.nbytes) == 0, "%s batch %d: labels differ", name, k);
      free(g), free(c), free(a), free(l);
    }
    if (sg == STK_OK) stk_batch_release(bg);
    if (sc == STK_OK) stk_batch_release(bc);
  }
  double mean = count ? sum / count : 1e9;
  printf("%s GPU vs CPU: max |diff| %.6f (<= %.6f), mean %.7f (<= %.7f) over %zu values\n", name, worst, max_tol, mean,
         mean_tol, count);
  CHECK(count > 0);
  CHECK_MSG(worst <= max_tol, "%s: max difference %.4f", name, worst);
  CHECK_MSG(mean <= mean_tol, "%s: mean difference %.5f (wrong window or flip?)", name, mean);
done:
  stk_pipeline_destroy(gpu);
  stk_pipeline_destroy(cpu);
}

static void compare_with_cpu(const char *name, const char *decoder, double max_tol, double mean_tol) {
  char label[128];
  snprintf(label, sizeof label, "%s (decoder %s)", name, decoder ? decoder : "mixed");
  compare_pipes(label, build_on(name, decoder, NULL, 0), build(name, NULL, -1), max_tol, mean_tol);
}

/* Ragged host images uploaded to a GPU resize (CPU -> GPU edge before the first GPU operator). */
static const char kCpuDecodeGpuResize[] =
    "jpegs, labels = readers.file(random_shuffle=True)\n"
    "decoded = decoders.image(jpegs, device=\"cpu\")\n"
    "images = resize(decoded, device=\"%s\", resize_shorter=240)\n"
    "images = crop_mirror_normalize(images, device=\"%s\", dtype=\"float\", output_layout=\"CHW\", crop=[224, 224],"
    " mean=[123.675, 116.28, 103.53], std=[58.395, 57.12, 57.375])\n"
    "outputs(images, labels)\n";

static void compare_uploaded_resize(void) {
  char gpu_text[1024], cpu_text[1024];
  snprintf(gpu_text, sizeof gpu_text, kCpuDecodeGpuResize, "gpu", "gpu");
  snprintf(cpu_text, sizeof cpu_text, kCpuDecodeGpuResize, "cpu", "cpu");
  /* CPU and GPU resize agree exactly (test_gpu_ops) */
  compare_pipes("cpu decode -> gpu resize", build(NULL, gpu_text, 0), build(NULL, cpu_text, -1), 1e-4, 1e-6);
}

static const char kTrainExposed[] =
    "jpegs, labels = readers.file(random_shuffle=True, name=\"Reader\")\n"
    "decoded = decoders.image_random_crop(jpegs, device=\"mixed\", output_type=\"RGB\")\n"
    "images = resize(decoded, device=\"gpu\", resize_x=224, resize_y=224)\n"
    "coin = random.coin_flip(probability=0.5)\n"
    "images = crop_mirror_normalize(images, device=\"gpu\", dtype=\"float\", output_layout=\"CHW\", crop=[224, 224],"
    " mean=[123.675, 116.28, 103.53], std=[58.395, 57.12, 57.375], mirror=coin)\n"
    "outputs(images, labels, decoded, coin)\n";

static stk__op *cpu_op(const char *name, stk_args *args, int id) {
  char err[512] = "";
  stk__op *op = NULL;
  CHECK_MSG(stk__op_new_standalone(name, "cpu", args, NULL, id, &op, err, sizeof err) == STK_OK, "%s: %s", name, err);
  return op;
}

/* The GPU augmentation alone: CPU resize + cmn applied to the mixed decoder's own output. */
static void compare_without_decode_difference(void) {
  stk_pipeline *p = build(NULL, kTrainExposed, 0);
  stk_args *ra = NULL, *ca = NULL;
  stk_args_new(&ra);
  stk_args_new(&ca);
  stk_args_set_float(ra, "resize_x", 224);
  stk_args_set_float(ra, "resize_y", 224);
  const double crop[2] = {224, 224}, mean[3] = {123.675, 116.28, 103.53}, stdv[3] = {58.395, 57.12, 57.375};
  stk_args_set_string(ca, "dtype", "float");
  stk_args_set_float_list(ca, "crop", crop, 2);
  stk_args_set_float_list(ca, "mean", mean, 3);
  stk_args_set_float_list(ca, "std", stdv, 3);
  stk_args_set_input(ca, "mirror", "coin");
  stk__op *resize = cpu_op("resize", ra, 2), *cmn = cpu_op("crop_mirror_normalize", ca, 4);
  if (!p || !resize || !cmn) goto done;
  double worst = 0, sum = 0;
  size_t count = 0;
  int flips = 0;
  for (int k = 0; k < 2; k++) {
    stk_batch *b = NULL;
    stk_status st = stk_pipeline_next(p, &b);
    CHECK_MSG(st == STK_OK, "exposed pipeline: %s", stk_pipeline_last_error(p));
    if (st != STK_OK) break;
    stk_tensor_view out;
    float *gpu = (float *)host_copy(b, 0, &out);
    for (int s = 0; s < BATCH; s++) {
      stk_tensor_view dv, cv;
      CHECK(stk_batch_sample(b, 2, s, &dv) == STK_OK);
      CHECK(stk_batch_sample(b, 3, s, &cv) == STK_OK);
      stk__tensor decoded, coin, resized, normalized;
      memset(&decoded, 0, sizeof decoded);
      memset(&coin, 0, sizeof coin);
      memset(&resized, 0, sizeof resized);
      memset(&normalized, 0, sizeof normalized);
      int64_t shape[3] = {dv.shape[0], dv.shape[1], dv.shape[2]};
      CHECK(stk__tensor_resize(&decoded, STK_DTYPE_UINT8, 3, shape, "HWC") == STK_OK);
      CHECK(stk__gpu_memcpy_d2h(decoded.data, dv.data, dv.nbytes, g_stream) == STK_OK);
      coin.data = cv.data;
      coin.dtype = cv.dtype;
      coin.nbytes = cv.nbytes;
      flips += stk__tensor_scalar(&coin) != 0.0;
      stk__sample_ctx ctx;
      char err[512] = "";
      memset(&ctx, 0, sizeof ctx);
      ctx.err = err;
      ctx.err_size = sizeof err;
      ctx.thread_scratch = &g_worker;
      stk__tensor *in1[1] = {&decoded}, *out1[1] = {&resized}, *in2[2] = {&resized, &coin}, *out2[1] = {&normalized};
      CHECK_MSG(resize->impl->run_sample(resize, &ctx, in1, out1) == STK_OK, "%s", err);
      CHECK_MSG(cmn->impl->run_sample(cmn, &ctx, in2, out2) == STK_OK, "%s", err);
      const float *ref = (const float *)normalized.data;
      const float *got = gpu + (size_t)s * 3 * 224 * 224;
      if (normalized.nbytes == 3 * 224 * 224 * sizeof(float))
        for (size_t e = 0; e < 3 * 224 * 224; e++) {
          double d = fabs((double)got[e] - ref[e]);
          sum += d;
          if (d > worst) worst = d;
          count++;
        }
      stk__tensor_free(&decoded);
      stk__tensor_free(&resized);
      stk__tensor_free(&normalized);
    }
    free(gpu);
    stk_batch_release(b);
  }
  double mean_diff = count ? sum / count : 1e9;
  printf("GPU augmentation vs CPU on the same decoded pixels: max %.6f (<= %.6f), mean %.7f (<= 1e-3), %d flips\n",
         worst, 1.0 / MIN_STD + 1e-4, mean_diff, flips);
  CHECK(count == (size_t)2 * BATCH * 3 * 224 * 224);
  CHECK(worst <= 1.0 / MIN_STD + 1e-4);
  CHECK(mean_diff <= 1e-3);
done:
  stk__op_free_standalone(resize);
  stk__op_free_standalone(cmn);
  stk_args_destroy(ra);
  stk_args_destroy(ca);
  stk_pipeline_destroy(p);
}

static uint64_t fnv(uint64_t h, const void *data, size_t n) {
  const uint8_t *p = (const uint8_t *)data;
  for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 1099511628211ull;
  return h;
}

/* Digest of one epoch; with check_steady, a second epoch follows and allocations after warm-up
 * must stay 0; DLPack export of the first batch is checked. */
static uint64_t gpu_run_digest(int check_steady) {
  stk_pipeline *p = build("rn50-train", NULL, 0);
  if (!p) return 0;
  uint64_t h = 1469598103934665603ull;
  int epochs = check_steady ? 2 : 1;
  for (int e = 0; e < epochs; e++) {
    if (e > 0) CHECK(stk_pipeline_reset(p) == STK_OK);
    for (int k = 0; k < IMAGES / BATCH; k++) {
      stk_batch *b = NULL;
      stk_status st = stk_pipeline_next(p, &b);
      CHECK_MSG(st == STK_OK, "digest run: %s", stk_pipeline_last_error(p));
      if (st != STK_OK) break;
      stk_tensor_view v, l;
      void *img = host_copy(b, 0, &v), *lab = host_copy(b, 1, &l);
      if (e == 0) h = fnv(fnv(h, img, v.nbytes), lab, l.nbytes);
      free(img), free(lab);
      if (k == 0 && e == 0) {
        DLManagedTensor *t = NULL;
        CHECK(stk_batch_to_dlpack(b, 0, &t) == STK_OK);
        if (t) {
          CHECK(t->dl_tensor.device.device_type == kDLCUDA && t->dl_tensor.device.device_id == 0);
          CHECK(t->dl_tensor.ndim == 4 && t->dl_tensor.shape[0] == BATCH && t->dl_tensor.shape[1] == 3);
          CHECK(t->dl_tensor.dtype.code == kDLFloat && t->dl_tensor.dtype.bits == 32);
          CHECK(t->dl_tensor.data == v.data);
          t->deleter(t);
        }
      }
      stk_batch_release(b);
    }
  }
  if (check_steady) {
    stk_batch *b = NULL;
    CHECK(stk_pipeline_next(p, &b) == STK_EOF_EPOCH);
    stk_pipeline_stats s;
    CHECK(stk_pipeline_stats_get(p, &s) == STK_OK);
    printf(
        "two epochs: %llu allocations, %llu after warm-up; device bytes held %llu; decoded hw %llu cuda %llu "
        "hybrid %llu cpu %llu\n",
        (unsigned long long)s.allocations, (unsigned long long)s.allocations_after_warmup,
        (unsigned long long)s.device_bytes_held, (unsigned long long)s.decoded_hw, (unsigned long long)s.decoded_cuda,
        (unsigned long long)s.decoded_hybrid, (unsigned long long)s.decoded_cpu);
    CHECK_MSG(s.allocations_after_warmup == 0, "%llu allocations after warm-up",
              (unsigned long long)s.allocations_after_warmup);
    CHECK(s.decoded_hw + s.decoded_cuda + s.decoded_hybrid + s.decoded_cpu == (uint64_t)2 * IMAGES);
  }
  stk_pipeline_destroy(p);
  return h;
}

/* decoders.image_random_crop alone, mixed with hw_decoder_load 0.5 and cuda_decoder_load `cuda`
 * (0 or 0.5) against the CPU decoder. Positions of a batch of 8: the engines take 1, 3, 5, 7; with
 * cuda 0.5 the CUDA decoder takes 2 and 6 (ranks 1 and 3 of the non-engine positions 0, 2, 4, 6),
 * the CPU pre-stage 0 and 4; with cuda 0 the pre-stage takes 0, 2, 4, 6. */
static void split_against_cpu(double cuda) {
  char mixed[512];
  snprintf(mixed, sizeof mixed,
           "jpegs, labels = readers.file(random_shuffle=True, name=\"Reader\")\n"
           "decoded = decoders.image_random_crop(jpegs, device=\"mixed\", hw_decoder_load=0.5, "
           "cuda_decoder_load=%g)\n"
           "outputs(decoded, labels)\n",
           cuda);
  static const char kCpu[] =
      "jpegs, labels = readers.file(random_shuffle=True, name=\"Reader\")\n"
      "decoded = decoders.image_random_crop(jpegs, device=\"cpu\")\n"
      "outputs(decoded, labels)\n";
  stk_pipeline *gpu = build(NULL, mixed, 0), *cpu = build(NULL, kCpu, -1);
  if (!gpu || !cpu) goto done;
  int exact = 0, gpu_worst = 0, staged_diff = 0;
  for (int e = 0; e < 2; e++) {
    if (e > 0) {
      CHECK(stk_pipeline_reset(gpu) == STK_OK);
      CHECK(stk_pipeline_reset(cpu) == STK_OK);
    }
    for (int k = 0; k < IMAGES / BATCH; k++) {
      stk_batch *bg = NULL, *bc = NULL;
      stk_status sg = stk_pipeline_next(gpu, &bg), sc = stk_pipeline_next(cpu, &bc);
      CHECK_MSG(sg == STK_OK, "split gpu batch %d: %s", k, stk_pipeline_last_error(gpu));
      CHECK_MSG(sc == STK_OK, "split cpu batch %d: %s", k, stk_pipeline_last_error(cpu));
      if (sg == STK_OK && sc == STK_OK) {
        void *event = stk_batch_cuda_event(bg);
        if (event) CHECK(stk__gpu_event_synchronize(event) == STK_OK);
        for (int s = 0; s < BATCH; s++) {
          stk_tensor_view gv, cv;
          CHECK(stk_batch_sample(bg, 0, s, &gv) == STK_OK && stk_batch_sample(bc, 0, s, &cv) == STK_OK);
          CHECK_MSG(gv.nbytes == cv.nbytes && gv.shape[0] == cv.shape[0] && gv.shape[1] == cv.shape[1],
                    "split: sample %d window %lldx%lld vs CPU %lldx%lld", s, (long long)gv.shape[1],
                    (long long)gv.shape[0], (long long)cv.shape[1], (long long)cv.shape[0]);
          if (gv.nbytes != cv.nbytes) continue;
          uint8_t *g = (uint8_t *)malloc(gv.nbytes);
          CHECK(stk__gpu_memcpy_d2h(g, gv.data, gv.nbytes, g_stream) == STK_OK);
          const uint8_t *c = (const uint8_t *)cv.data;
          int worst = 0;
          for (size_t i = 0; i < gv.nbytes; i++) {
            int d = abs((int)g[i] - (int)c[i]);
            if (d > worst) worst = d;
          }
          int pre_staged = s % 2 == 0 && (cuda == 0.0 || s % 4 == 0);
          if (pre_staged) { /* CPU pre-stage: libjpeg-turbo, the same window */
            if (worst == 0) exact++;
            else staged_diff++;
          } else if (worst > gpu_worst) { /* the engines and the CUDA decoder: the hardware's bound */
            gpu_worst = worst;
          }
          free(g);
        }
      }
      if (sg == STK_OK) stk_batch_release(bg);
      if (sc == STK_OK) stk_batch_release(bc);
    }
  }
  stk_pipeline_stats st;
  CHECK(stk_pipeline_stats_get(gpu, &st) == STK_OK);
  printf(
      "split hw_decoder_load=0.5 cuda_decoder_load=%g: %d pre-staged samples byte-exact (%d not), engines and CUDA "
      "decoder max |diff| %d (<= 24); decoded hw %llu cuda %llu hybrid %llu cpu %llu; %llu allocations after "
      "warm-up\n",
      cuda, exact, staged_diff, gpu_worst, (unsigned long long)st.decoded_hw, (unsigned long long)st.decoded_cuda,
      (unsigned long long)st.decoded_hybrid, (unsigned long long)st.decoded_cpu,
      (unsigned long long)st.allocations_after_warmup);
  /* two epochs of IMAGES: half to the engines, the other half to the pre-stage or split with CUDA */
  const uint64_t cuda_count = cuda == 0.0 ? 0 : IMAGES / 2;
  CHECK(exact == (int)(IMAGES - cuda_count) && staged_diff == 0);
  CHECK(gpu_worst <= 24);
  CHECK(st.decoded_hw == (uint64_t)IMAGES && st.decoded_cuda == cuda_count && st.decoded_hybrid == 0 &&
        st.decoded_cpu == (uint64_t)IMAGES - cuda_count);
  CHECK_MSG(st.allocations_after_warmup == 0, "%llu allocations after warm-up",
            (unsigned long long)st.allocations_after_warmup);
  /* a user-set load wins over the router, and the routing record says where it came from */
  CHECK_MSG(strcmp(st.decoder_route, "hw_decoder_load 0.50 (the hw_decoder_load argument)") == 0, "record '%s'",
            st.decoder_route);
done:
  stk_pipeline_destroy(gpu);
  stk_pipeline_destroy(cpu);
}

static void test_split_with_pre_stage(void) { split_against_cpu(0.0); }
/* cuda_decoder_load 0.5: the CUDA decoder (GPU Huffman) on the lanes takes half the pre-stage's share */
static void test_split_cuda_decoder(void) { split_against_cpu(0.5); }
/* and with one worker: the prepare task's parallel_for has no other worker, so the caller runs its
 * own items (without that it would wait forever) */
static void test_split_cuda_decoder_one_worker(void) {
  g_threads = 1;
  split_against_cpu(0.5);
  g_threads = 2;
}

/* Out of device memory: with all but under 1 MiB of the GPU held, building or running rn50-train
 * gives an error with a message (never a crash); once the memory is back, a new pipeline runs. */
static void test_device_out_of_memory(void) {
  enum { MAX_HOLD = 8192 };
  static void *hold[MAX_HOLD];
  int held = 0;
  size_t chunk = (size_t)1 << 30;
  while (held < MAX_HOLD && chunk >= ((size_t)1 << 20)) {
    void *p = NULL;
    if (stk__gpu_malloc(&p, chunk, NULL) == STK_OK) hold[held++] = p;
    else chunk /= 2;
  }
  printf("out of memory: holding %d blocks, less than %zu bytes left\n", held, chunk * 2);
  stk_pipeline_options o = test_options(0);
  stk_pipeline *p = NULL;
  CHECK(stk_pipeline_new(&o, &p) == STK_OK);
  stk_status st = stk_pipeline_add_builtin(p, "rn50-train", g_root);
  if (st == STK_OK) st = stk_pipeline_build(p);
  stk_batch *b = NULL;
  if (st == STK_OK) st = stk_pipeline_next(p, &b);
  printf("out of memory: status %s: %s\n", stk_strerror(st), stk_pipeline_last_error(p));
  CHECK_MSG(st != STK_OK, "rn50-train ran with under 1 MiB of device memory");
  CHECK_MSG(stk_pipeline_last_error(p)[0] != '\0', "the out-of-memory failure came without a message");
  if (b) stk_batch_release(b);
  stk_pipeline_destroy(p);
  for (int i = 0; i < held; i++) stk__gpu_free(hold[i], NULL);
  stk_pipeline *again = build("rn50-train", NULL, 0);
  if (again) {
    CHECK_MSG(stk_pipeline_next(again, &b) == STK_OK, "after the memory came back: %s", stk_pipeline_last_error(again));
    if (b) stk_batch_release(b);
    stk_pipeline_destroy(again);
  }
}

/* The automatic router (hw_decoder_load unset; STOKER_ROUTER_BATCHES=1: batch 1 warm-up, batch 2
 * calibrated, the decision applied from batch 2 + (2 + 2) + 4 = 10 at prefetch 2): over 16 batches
 * the record names the decision, the routes of batches 10-16 follow it, and a second pipeline of
 * the process (the decision recorded under the same key) gives the same bytes batch for batch. */
static void router_run(uint64_t *digests, int n, stk_pipeline_stats *st) {
  stk_pipeline *p = build("rn50-train", NULL, 0);
  if (!p) return;
  for (int k = 0; k < n; k++) {
    if (k > 0 && k % (IMAGES / BATCH) == 0) CHECK(stk_pipeline_reset(p) == STK_OK);
    stk_batch *b = NULL;
    stk_status s = stk_pipeline_next(p, &b);
    CHECK_MSG(s == STK_OK, "router run, batch %d: %s", k + 1, stk_pipeline_last_error(p));
    if (s != STK_OK) break;
    stk_tensor_view v;
    void *img = host_copy(b, 0, &v);
    digests[k] = fnv(1469598103934665603ull, img, v.nbytes);
    free(img);
    stk_batch_release(b);
  }
  CHECK(stk_pipeline_stats_get(p, st) == STK_OK);
  stk_pipeline_destroy(p);
}

static void test_router_decides_and_repeats(void) {
  enum { N = 16 };
  uint64_t a[N] = {0}, b[N] = {0};
  stk_pipeline_stats sa, sb;
  memset(&sa, 0, sizeof sa), memset(&sb, 0, sizeof sb);
  setenv("STOKER_ROUTER_BATCHES", "1", 1);
  setenv("STOKER_HW_DECODER_LOAD", "-1", 1); /* the router, asked for whatever the default */
  setenv("STOKER_ROUTER_CACHE", "off", 1);    /* measured here, not taken from an earlier run's file */
  setenv("STOKER_ROUTER_TRIAL_BATCHES", "0", 1); /* the model's load is the decision (no trial) */
  router_run(a, N, &sa);
  router_run(b, N, &sb);
  unsetenv("STOKER_ROUTER_TRIAL_BATCHES");
  unsetenv("STOKER_ROUTER_CACHE");
  unsetenv("STOKER_HW_DECODER_LOAD");
  unsetenv("STOKER_ROUTER_BATCHES");
  printf("router: %s\nrouter, second pipeline: %s\n", sa.decoder_route, sb.decoder_route);
  CHECK_MSG(strncmp(sa.decoder_route, "hw_decoder_load auto -> ", 24) == 0, "record '%s'", sa.decoder_route);
  CHECK_MSG(strstr(sb.decoder_route, "earlier decision") != NULL, "record '%s'", sb.decoder_route);
  for (int k = 0; k < N; k++) CHECK_MSG(a[k] == b[k] && a[k] != 0, "batch %d differs between the pipelines", k + 1);
  CHECK(sa.decoded_hw == sb.decoded_hw && sa.decoded_cpu == sb.decoded_cpu);
  CHECK(sa.decoded_hw + sa.decoded_cuda + sa.decoded_hybrid + sa.decoded_cpu == (uint64_t)N * BATCH);
}

static void test_determinism(void) {
  uint64_t a = gpu_run_digest(1), b = gpu_run_digest(0);
  printf("digests: %016llx %016llx\n", (unsigned long long)a, (unsigned long long)b);
  CHECK_MSG(a == b && a != 0, "two GPU runs with the same seed gave different bytes");
}

static void test_destroy_mid_epoch(void) {
  stk_pipeline *p = build("rn50-train", NULL, 0);
  if (!p) return;
  stk_batch *held = NULL;
  CHECK_MSG(stk_pipeline_next(p, &held) == STK_OK, "%s", stk_pipeline_last_error(p));
  stk_pipeline_destroy(p); /* batches in flight are dropped; `held` stays valid until released */
  if (held) {
    stk_tensor_view v;
    void *img = host_copy(held, 0, &v);
    CHECK(v.shape[0] == BATCH);
    free(img);
    stk_batch_release(held);
  }
}

/* A zero-copy consumer releases a batch its stream still reads (stk_batch_record_stream): the
 * prefetch goes on into a spare slot instead of waiting for that stream. With the consumer's
 * stream held at a gate: the epoch's four batches must all arrive (depth 2: the fourth is planned
 * after the first was released). */
static void test_prefetch_past_consumer(void) {
  /* The CPU decoder (normalize on the GPU): the gate is a host function, and nvJPEG may queue host
   * functions of its own behind it on the driver's callback thread. */
  stk_pipeline *p = build_on("rn50-train", "cpu", NULL, 0);
  if (!p) return;
  void *consumer = NULL;
  CHECK(stk__gpu_stream_create(&consumer, STK_STREAM_PRIORITY_NORMAL) == STK_OK);
  gpu_gate gate;
  CHECK(gpu_gate_close(&gate, consumer, 30) == 0);
  stk_batch *b = NULL;
  CHECK(stk_pipeline_next(p, &b) == STK_OK);
  CHECK(b && stk_batch_record_stream(b, consumer) == STK_OK);
  stk_batch_release(b);
  int got = 1;
  for (int i = 0; i < IMAGES / BATCH - 1; i++) {
    b = NULL;
    if (stk_pipeline_next(p, &b) == STK_OK) got++;
    stk_batch_release(b);
  }
  int forced = gpu_gate_forced(&gate);
  gpu_gate_open(&gate, consumer);
  CHECK(got == IMAGES / BATCH);
  CHECK_MSG(!forced, "the pipeline waited for the consumer's stream instead of prefetching into a spare slot");
  stk_pipeline_destroy(p);
  stk__gpu_stream_destroy(consumer);
}

/* prefetch_queue_depth 0 (the default): 3 with the mixed decoder (its prepare stage submits to the
 * JPEG engines ahead), 2 when the workers decode. */
static void test_default_prefetch_depth(void) {
  const char *decoders[2] = {NULL, "cpu"};
  for (int k = 0; k < 2; k++) {
    stk_pipeline_options o = test_options(0);
    CHECK(o.prefetch_queue_depth == 0);
    stk_pipeline *p = NULL;
    CHECK(stk_pipeline_new(&o, &p) == STK_OK);
    if (!p) return;
    stk_status st = stk_pipeline_add_builtin_on(p, "rn50-train", g_root, decoders[k]);
    if (st == STK_OK) st = stk_pipeline_build(p);
    CHECK_MSG(st == STK_OK, "%s", stk_pipeline_last_error(p));
    stk_pipeline_stats stats;
    CHECK(stk_pipeline_stats_get(p, &stats) == STK_OK);
    CHECK_MSG(stats.prefetch_queue_depth == (k == 0 ? 3 : 2), "decoder %s: depth %d", decoders[k] ? "cpu" : "mixed",
              stats.prefetch_queue_depth);
    stk_batch *b = NULL;
    CHECK(stk_pipeline_next(p, &b) == STK_OK);
    stk_batch_release(b);
    stk_pipeline_destroy(p);
  }
}

/* mixed: the engines' IDCT and the GPU resize may differ from libjpeg-turbo by a few levels */
static void mixed_rn50_train_matches_cpu(void) {
  compare_with_cpu("rn50-train", NULL, 25.0 / MIN_STD + 1e-3, 2.0 / MIN_STD + 1e-3);
}
static void mixed_rn50_val_matches_cpu(void) {
  compare_with_cpu("rn50-val", NULL, 25.0 / MIN_STD + 1e-3, 2.0 / MIN_STD + 1e-3);
}
/* CPU decode + resize, uploaded, GPU normalize: the same uint8 pixels, so only float rounding */
static void cpu_decode_rn50_train_matches_cpu(void) { compare_with_cpu("rn50-train", "cpu", 1e-4, 1e-6); }
static void cpu_decode_rn50_val_matches_cpu(void) { compare_with_cpu("rn50-val", "cpu", 1e-4, 1e-6); }

/* one STK_TEST_CASE per line: tests/CMakeLists.txt reads them */
// clang-format off
static const stk_test_case cases[] = {
    STK_TEST_CASE(mixed_rn50_train_matches_cpu),
    STK_TEST_CASE(test_default_prefetch_depth),
    STK_TEST_CASE(mixed_rn50_val_matches_cpu),
    STK_TEST_CASE(cpu_decode_rn50_train_matches_cpu),
    STK_TEST_CASE(cpu_decode_rn50_val_matches_cpu),
    STK_TEST_CASE(compare_uploaded_resize),
    STK_TEST_CASE(compare_without_decode_difference),
    STK_TEST_CASE(test_split_with_pre_stage),
    STK_TEST_CASE(test_split_cuda_decoder),
    STK_TEST_CASE(test_split_cuda_decoder_one_worker),
    STK_TEST_CASE(test_determinism),
    STK_TEST_CASE(test_router_decides_and_repeats),
    STK_TEST_CASE(test_destroy_mid_epoch),
    STK_TEST_CASE(test_prefetch_past_consumer),
    STK_TEST_CASE(test_device_out_of_memory),
};
// clang-format on

int main(int argc, char **argv) {
  if (stk_test_list_cases(cases, STK_TEST_COUNT(cases), argc, argv)) return 0;
  /* Hardware queues for every stream (before CUDA starts): with the default 8, the gated consumer
   * stream of test_prefetch_past_consumer can share one with a pipeline stream and hold it. */
  setenv("CUDA_DEVICE_MAX_CONNECTIONS", "32", 0);
  gpu_test_open(&g_stream);
  make_data();
  int rc = stk_test_run_selected("test_gpu_pipeline", cases, STK_TEST_COUNT(cases), argc, argv);
  stk__gpu_stream_destroy(g_stream);
  for (int s = 0; s < 8; s++) free(g_worker.scratch[s]);
  CHECK(stk_test_remove_tree(g_root) == 0);
  free(g_root);
  return rc ? rc : stk_test_finish("test_gpu_pipeline");
}
#else
int main(void) { TEST_SKIP("this stoker was built without CUDA"); }
#endif
