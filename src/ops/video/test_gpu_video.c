/* src/ops/video/test_gpu_video.c: readers.video's NVDEC path (src/ops/gpu/video_nvdec*.cu) against the CPU
 * path (libavcodec + ops/video/video_color.h) on the same sequences of H.264 and HEVC clips, read in
 * a scrambled order (keyframe seeks). The decoded pictures are identical and both paths convert them
 * with the same integer arithmetic, so every output (RGB, YCbCr, float) must be equal byte for byte.
 * Skips (77, with the reason) without CUDA, a CUDA device, the driver's libnvcuvid.so.1 or ffmpeg. */
#include <math.h>
#include <unistd.h>

#include "gpu_testutil.h"
#include "ops/video/video_nvdec.h"
#include "video_clips.h"

/* With STOKER_TEST_VIDEO_DUMP=DIR: both sides' bytes of every case as DIR/<clip>-<format>-<case>-{cpu,gpu}.bin
 * (a diagnostic for a mismatch: compared offline against libavcodec's planes). */
static void dump_case(const char *clip, const char *what, size_t c, const void *want, const void *got, size_t bytes) {
  const char *dir = getenv("STOKER_TEST_VIDEO_DUMP");
  if (!dir || !*dir || strstr(what, "float")) return; /* the uint8 formats carry the information */
  const char *base = strrchr(clip, '/') ? strrchr(clip, '/') + 1 : clip;
  char name[1024], tag[64];
  size_t n = 0;
  for (const char *w = what; *w && n + 1 < sizeof tag; w++) tag[n++] = (*w == ' ') ? '_' : *w;
  tag[n] = '\0';
  const void *side[2] = {want, got};
  const char *label[2] = {"cpu", "gpu"};
  for (int i = 0; i < 2; i++) {
    snprintf(name, sizeof name, "%s/%s-%s-%zu-%s.bin", dir, base, tag, c, label[i]);
    FILE *f = fopen(name, "wb");
    if (f) {
      fwrite(side[i], 1, bytes, f);
      fclose(f);
    }
  }
}

typedef struct spans_case {
  int64_t first, stride;
  int count;
} spans_case;

/* keyframes every 12 frames: {12, 5, 4} and {24, 1, 3} start on one (HEVC: a CRA read as a BLA) */
static const spans_case cases[] = {{40, 2, 4}, {0, 1, 8}, {17, 3, 5}, {3, 1, 2}, {41, 1, 8}, {12, 5, 4}, {24, 1, 3}};

/* Compares the sequences of `cases` decoded both ways (file_id: the path's address, one per clip). */
static void compare(const char *clip, const stk__video_index *ix, stk__video_cpu_decoder *cpu, stk__video_nvdec *gpu,
                    void *stream, const stk__video_format *fmt, const char *what) {
  const size_t value_size = fmt->as_float ? sizeof(float) : 1;
  const size_t frame_values = (size_t)ix->width * ix->height * 3;
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    stk__video_span span = {.file_id = (int64_t)(uintptr_t)clip,
                            .path = clip,
                            .index = ix,
                            .first = cases[c].first,
                            .stride = cases[c].stride,
                            .count = cases[c].count};
    const size_t values = frame_values * (size_t)span.count, bytes = values * value_size;
    void *want = malloc(bytes), *got = malloc(bytes), *device = NULL;
    char err[512] = "";
    CHECK(stk__gpu_malloc(&device, bytes, NULL) == STK_OK);
    CHECK_MSG(stk__video_cpu_decode_sequence(cpu, &span, fmt, want, err, sizeof err) == STK_OK, "%s", err);
    stk_status st = stk__video_nvdec_decode_sequence(gpu, &span, fmt, device, stream, err, sizeof err);
    CHECK_MSG(st == STK_OK, "%s %s case %zu: %s", clip, what, c, err);
    if (st == STK_OK && stk__gpu_memcpy_d2h(got, device, bytes, stream) == STK_OK) {
      dump_case(clip, what, c, want, got, bytes);
      double max_diff = 0, sum = 0, max_luma = 0;
      for (size_t i = 0; i < values; i++) {
        double a = fmt->as_float ? ((float *)want)[i] : ((uint8_t *)want)[i];
        double b = fmt->as_float ? ((float *)got)[i] : ((uint8_t *)got)[i];
        if (fmt->normalized) a *= 255.0, b *= 255.0;
        double d = fabs(a - b);
        sum += d;
        if (d > max_diff) max_diff = d;
        if (i % 3 == 0 && d > max_luma) max_luma = d;
      }
      double mean = sum / (double)values;
      if (fmt->image_type == STK__VIDEO_YCBCR)
        CHECK_MSG(max_luma == 0, "%s %s case %zu: luma differs by %g", clip, what, c, max_luma);
      CHECK_MSG(max_diff == 0, "%s %s case %zu: max diff %g, mean %g", clip, what, c, max_diff, mean);
      printf("%s %s frames %lld+%lld*k (%d): max diff %g, mean %.3f\n", clip, what, (long long)span.first,
             (long long)span.stride, span.count, max_diff, mean);
    }
    stk__gpu_free(device, NULL);
    free(want);
    free(got);
  }
}

static void check_clip(const char *clip, stk__video_nvdec *gpu, void *stream) {
  char err[512] = "";
  stk__video_demuxer *d = NULL;
  stk__video_index ix;
  CHECK_MSG(stk__video_demuxer_open(clip, NULL, 0, clip, &d, err, sizeof err) == STK_OK, "%s", err);
  if (!d) return;
  CHECK_MSG(stk__video_index_build(d, 0, &ix, err, sizeof err) == STK_OK, "%s", err);
  stk__video_demuxer_free(d);
  stk__video_cpu_decoder *cpu = NULL;
  CHECK(stk__video_cpu_decoder_new(1, &cpu) == STK_OK);
  stk__video_format rgb = {STK__VIDEO_RGB, 0, 0}, ycbcr = {STK__VIDEO_YCBCR, 0, 0}, normalized = {STK__VIDEO_RGB, 1, 1};
  compare(clip, &ix, cpu, gpu, stream, &rgb, "RGB uint8");
  compare(clip, &ix, cpu, gpu, stream, &ycbcr, "YCbCr uint8");
  compare(clip, &ix, cpu, gpu, stream, &normalized, "RGB float normalized");
  stk__video_cpu_decoder_free(cpu);
  stk__video_index_free(&ix);
}

/* An empty pipeline of batches of `batch` on the GPU ("gpu") or the CPU, 2 unpinned workers. */
static stk_pipeline *new_pipeline(const char *device, int batch) {
  stk_pipeline_options o;
  stk_pipeline_options_default(&o);
  o.batch_size = batch;
  o.num_threads = 2;
  o.pin_threads = 0;
  o.device_id = strcmp(device, "gpu") == 0 ? 0 : -1;
  stk_pipeline *p = NULL;
  return stk_pipeline_new(&o, &p) == STK_OK ? p : NULL;
}

/* A pipeline with readers.video(device="gpu") against the same pipeline on the CPU, batch by batch.
 * The GPU side decodes in the samples' CPU chains or in the GPU stage as STOKER_NVDEC_EARLY says
 * when it is built (the caller sets it). */
static stk_pipeline *video_pipeline(const char *const *files, int num_files, const char *device, int batch,
                                    int skip_bad_files) {
  stk_pipeline *p = new_pipeline(device, batch);
  if (!p) return NULL;
  stk_args *a = vc_args();
  stk_args_set_string_list(a, "filenames", files, (size_t)num_files);
  stk_args_set_int(a, "sequence_length", 5);
  stk_args_set_int(a, "stride", 2);
  stk_args_set_bool(a, "skip_bad_files", skip_bad_files);
  stk_args_set_string(a, "device", device);
  const char *outs[3] = {"v[0]", "v[1]", "v[2]"};
  stk_status st = stk_pipeline_add_op(p, "readers.video", "v", NULL, 0, a);
  if (st == STK_OK) st = stk_pipeline_set_outputs(p, outs, 3);
  if (st == STK_OK) st = stk_pipeline_build(p);
  CHECK_MSG(st == STK_OK, "%s pipeline: %s", device, stk_pipeline_last_error(p));
  stk_args_destroy(a);
  if (st != STK_OK) {
    stk_pipeline_destroy(p);
    return NULL;
  }
  return p;
}

/* Sample s of two batches: frames equal byte for byte, labels and first frames equal. */
static void compare_sample(stk_batch *bc, stk_batch *bg, int batch, int s) {
  stk_tensor_view vc, vg;
  CHECK(stk_batch_sample(bc, 0, s, &vc) == STK_OK && stk_batch_sample(bg, 0, s, &vg) == STK_OK);
  CHECK(vg.device_type == STK_DEVICE_GPU && vg.nbytes == vc.nbytes && vg.ndim == 4 && vg.shape[0] == 5);
  uint8_t *host = malloc(vg.nbytes);
  CHECK(host && stk_batch_copy_to_host(bg, &vg, host, vg.nbytes) == STK_OK);
  double max_diff = 0, sum = 0;
  for (size_t i = 0; host && i < vc.nbytes; i++) {
    double d = fabs((double)host[i] - ((uint8_t *)vc.data)[i]);
    sum += d;
    if (d > max_diff) max_diff = d;
  }
  CHECK_MSG(max_diff == 0, "pipeline batch %d sample %d: max %g mean %g", batch, s, max_diff, sum / (double)vc.nbytes);
  for (int o = 1; o < 3; o++) {
    int32_t want, got = -7;
    CHECK(stk_batch_sample(bc, o, s, &vc) == STK_OK && stk_batch_sample(bg, o, s, &vg) == STK_OK);
    want = *(int32_t *)vc.data;
    CHECK(stk_batch_copy_to_host(bg, &vg, &got, sizeof got) == STK_OK && got == want);
  }
  free(host);
}

typedef void (*sample_check)(stk_batch *bc, stk_batch *bg, int batch, int s);

/* Batches of cpu and gpu compared (check on each of their `batch` samples) until the CPU side
 * ends; returns the batches both gave. */
static int compare_batches_with(stk_pipeline *cpu, stk_pipeline *gpu, int batch, sample_check check) {
  int batches = 0;
  stk_batch *bc, *bg;
  while (cpu && gpu && stk_pipeline_next(cpu, &bc) == STK_OK) {
    stk_status st = stk_pipeline_next(gpu, &bg);
    CHECK_MSG(st == STK_OK, "%s", stk_pipeline_last_error(gpu));
    if (st != STK_OK) {
      stk_batch_release(bc);
      break;
    }
    batches++;
    for (int s = 0; s < batch; s++) check(bc, bg, batches, s);
    stk_batch_release(bc);
    stk_batch_release(bg);
  }
  return batches;
}

static int compare_batches(stk_pipeline *cpu, stk_pipeline *gpu, int batch) {
  return compare_batches_with(cpu, gpu, batch, compare_sample);
}

/* Both pipelines list `bad` (and only it) in stk_pipeline_skipped_files. */
static void check_skipped(stk_pipeline *cpu, stk_pipeline *gpu, const char *bad) {
  for (int i = 0; cpu && gpu && i < 2; i++) {
    stk_pipeline *p = i ? gpu : cpu;
    stk_pipeline_stats stats;
    char *skipped = NULL;
    CHECK(stk_pipeline_stats_get(p, &stats) == STK_OK);
    CHECK_MSG(stats.skipped_files == 1, "%s: %llu skipped files (want 1: %s, STOKER_NVDEC_EARLY=%s)", i ? "gpu" : "cpu",
              (unsigned long long)stats.skipped_files, bad,
              getenv("STOKER_NVDEC_EARLY") ? getenv("STOKER_NVDEC_EARLY") : "unset");
    CHECK(stk_pipeline_skipped_files(p, &skipped) == STK_OK && skipped && strstr(skipped, bad));
    stk_free(skipped);
  }
}

/* batch 3: full batches; batch 4: the last batch has fill copies of its good samples (the early
 * path finds their sequences elsewhere in the slot). */
static void check_pipeline(const char *clip, int skip_bad_files, int batch) {
  const char *files[2] = {"/nonexistent/video.mp4", clip}; /* the bad file first: read by batch 0 */
  const char *const *list = skip_bad_files ? files : files + 1;
  const int count = skip_bad_files ? 2 : 1;
  stk_pipeline *cpu = video_pipeline(list, count, "cpu", batch, skip_bad_files);
  stk_pipeline *gpu = video_pipeline(list, count, "gpu", batch, skip_bad_files);
  /* 50 frames, span 8: starts 0, 5, .., 40 = 9 sequences; with skip_bad_files the bad file's sample
   * is refilled from the next good ones (docs/pipeline.md), so 3 batches either way */
  int batches = compare_batches(cpu, gpu, batch);
  CHECK_MSG(batches == 3, "batch %d: %d batches", batch, batches);
  if (skip_bad_files) check_skipped(cpu, gpu, "/nonexistent/video.mp4");
  stk_pipeline_destroy(cpu);
  stk_pipeline_destroy(gpu);
}

/* A file that goes away after start-up fails only when its sequences are decoded. Early decode
 * (and the CPU path) fail the sample in its CPU chain: skip_bad_files refills it and records the
 * file, the same batches on both; without skip_bad_files (either GPU path) the error names it. */
static void check_vanished(const char *clip, int skip_bad_files, int early) {
  char *dir = stk_test_tmpdir("gpu-video-gone");
  char keep[700], gone[700];
  snprintf(keep, sizeof keep, "%s/keep.mp4", dir);
  snprintf(gone, sizeof gone, "%s/gone.mp4", dir);
  CHECK(vc_sh("cp %s %s && cp %s %s", clip, keep, clip, gone) == 0);
  const char *files[2] = {keep, gone}; /* 9 sequences each, in order: gone.mp4's from batch 3 on */
  stk_pipeline *cpu = video_pipeline(files, 2, "cpu", 3, skip_bad_files);
  stk_pipeline *gpu = video_pipeline(files, 2, "gpu", 3, skip_bad_files);
  CHECK(unlink(gone) == 0); /* prefetch 2: batches 0 and 1 are planned so far, keep.mp4's */
  int batches = compare_batches(cpu, gpu, 3);
  CHECK_MSG(batches == 3, "gone.mp4 (skip_bad_files %d, early %d): %d batches", skip_bad_files, early, batches);
  stk_batch *b = NULL;
  if (skip_bad_files) {
    /* gone.mp4's samples come last: the CPU side met them when its next() found the epoch's end;
     * the GPU side records them (once delivered or dropped) only when its next() gets there too */
    stk_status st = gpu ? stk_pipeline_next(gpu, &b) : STK_OK;
    CHECK_MSG(!gpu || st != STK_OK, "gpu (early %d): a batch after keep.mp4's", early);
    if (gpu && st == STK_OK) stk_batch_release(b);
    check_skipped(cpu, gpu, "gone.mp4");
  } else {
    for (int i = 0; cpu && gpu && i < 2; i++) {
      stk_pipeline *p = i ? gpu : cpu;
      stk_status st = stk_pipeline_next(p, &b);
      CHECK_MSG(st != STK_OK && strstr(stk_pipeline_last_error(p), "gone.mp4"), "%s (early %d): %s: %s",
                i ? "gpu" : "cpu", early, stk_status_name(st), stk_pipeline_last_error(p));
      if (st == STK_OK) stk_batch_release(b);
    }
  }
  stk_pipeline_destroy(cpu);
  stk_pipeline_destroy(gpu);
  vc_sh("rm -rf %s", dir);
  free(dir);
}

/* Every pipeline case under both GPU paths (STOKER_NVDEC_EARLY, read when a pipeline is built). */
static void check_pipelines(const char *clip) {
  for (int early = 1; early >= 0; early--) {
    setenv("STOKER_NVDEC_EARLY", early ? "1" : "0", 1);
    printf("pipeline cases, STOKER_NVDEC_EARLY=%d\n", early);
    check_pipeline(clip, 0, 3);
    check_pipeline(clip, 1, 3);
    check_pipeline(clip, 1, 4);
    check_pipeline(clip, 0, 4);
    check_vanished(clip, 0, early);
    if (early) check_vanished(clip, 1, early); /* early 0: replaced by a neighbour, not refilled */
  }
  unsetenv("STOKER_NVDEC_EARLY");
}

/* readers.video -> resize -> crop_mirror_normalize(CFHW float, mirrored) on the GPU (the reader's
 * sequences into the GPU operators, fused or not) against the same pipeline on the CPU: float
 * [3, 5, 24, 32] per sample, within 1/std + 1e-4 of the CPU (tests/test_gpu_ops.c's bound for the
 * fused node, std 1 here), mean difference under 0.05. */
static stk_pipeline *augment_pipeline(const char *clip, const char *device) {
  stk_pipeline *p = new_pipeline(device, 3);
  if (!p) return NULL;
  stk_args *rd = vc_args(), *rs = NULL, *cm = NULL;
  if (stk_args_new(&rs) != STK_OK || stk_args_new(&cm) != STK_OK) {
    CHECK_MSG(0, "stk_args_new failed");
    stk_args_destroy(rd);
    stk_args_destroy(rs);
    stk_pipeline_destroy(p);
    return NULL;
  }
  stk_args_set_string_list(rd, "filenames", &clip, 1);
  stk_args_set_int(rd, "sequence_length", 5);
  stk_args_set_int(rd, "stride", 2);
  stk_args_set_string(rd, "device", device);
  stk_args_set_int(rs, "resize_x", 40);
  stk_args_set_int(rs, "resize_y", 34);
  stk_args_set_string(rs, "device", device);
  const int64_t crop[2] = {24, 32};
  stk_args_set_int_list(cm, "crop", crop, 2);
  stk_args_set_string(cm, "dtype", "float");
  stk_args_set_string(cm, "output_layout", "CFHW");
  stk_args_set_int(cm, "mirror", 1);
  stk_args_set_string(cm, "device", device);
  const char *frames = "v[0]", *resized = "r", *out = "c";
  stk_status st = stk_pipeline_add_op(p, "readers.video", "v", NULL, 0, rd);
  if (st == STK_OK) st = stk_pipeline_add_op(p, "resize", "r", &frames, 1, rs);
  if (st == STK_OK) st = stk_pipeline_add_op(p, "crop_mirror_normalize", "c", &resized, 1, cm);
  if (st == STK_OK) st = stk_pipeline_set_outputs(p, &out, 1);
  if (st == STK_OK) st = stk_pipeline_build(p);
  CHECK_MSG(st == STK_OK, "%s augment pipeline: %s", device, stk_pipeline_last_error(p));
  stk_args_destroy(rd);
  stk_args_destroy(rs);
  stk_args_destroy(cm);
  if (st != STK_OK) {
    stk_pipeline_destroy(p);
    return NULL;
  }
  return p;
}

/* Sample s: float [3, 5, 24, 32] on the GPU, within the bound above of the CPU's. */
static void compare_augmented(stk_batch *bc, stk_batch *bg, int batch, int s) {
  stk_tensor_view vc, vg;
  CHECK(stk_batch_sample(bc, 0, s, &vc) == STK_OK && stk_batch_sample(bg, 0, s, &vg) == STK_OK);
  CHECK_MSG(vg.device_type == STK_DEVICE_GPU && vg.nbytes == vc.nbytes && vg.ndim == 4 && vg.shape[0] == 3 &&
                vg.shape[1] == 5 && vg.shape[2] == 24 && vg.shape[3] == 32,
            "augment batch %d sample %d: ndim %d shape [%lld, %lld, ...]", batch, s, vg.ndim, (long long)vg.shape[0],
            (long long)vg.shape[1]);
  const size_t n = vc.nbytes / sizeof(float);
  float *host = malloc(vg.nbytes);
  CHECK(host && stk_batch_copy_to_host(bg, &vg, host, vg.nbytes) == STK_OK);
  double max_diff = 0, sum = 0;
  for (size_t i = 0; host && i < n; i++) {
    double d = fabs((double)host[i] - ((const float *)vc.data)[i]);
    sum += d;
    if (d > max_diff) max_diff = d;
  }
  CHECK_MSG(max_diff <= 1.0 + 1e-4 && sum / (double)n < 0.05, "augment batch %d sample %d: max %g mean %g", batch, s,
            max_diff, sum / (double)n);
  free(host);
}

static void check_augment(const char *clip) {
  stk_pipeline *cpu = augment_pipeline(clip, "cpu"), *gpu = augment_pipeline(clip, "gpu");
  int batches = compare_batches_with(cpu, gpu, 3, compare_augmented);
  CHECK_MSG(batches == 3, "augment: %d batches (want 3)", batches);
  stk_pipeline_destroy(cpu);
  stk_pipeline_destroy(gpu);
}

/* The two clips: made here with the ffmpeg CLI, or taken from STOKER_TEST_VIDEO_CLIPS=DIR (made there
 * by this test where the ffmpeg CLI is, before it looks for a GPU, so they can be carried to a GPU
 * machine without ffmpeg: bench/lease/video-gpu.sh --prepare). *dir: the temporary folder to remove, or NULL. */
static void get_clips(char *h264, char *hevc, size_t size, char **dir) {
  const char *given = getenv("STOKER_TEST_VIDEO_CLIPS");
  *dir = given && *given ? NULL : stk_test_tmpdir("gpu-video");
  snprintf(h264, size, "%s/h264.mp4", *dir ? *dir : given);
  snprintf(hevc, size, "%s/hevc.mp4", *dir ? *dir : given);
  if (access(h264, R_OK) == 0) return;
  const char *encoder = vc_require_ffmpeg();
  if (!*dir) CHECK(vc_sh("mkdir -p %s", given) == 0);
  /* 192x160: above HEVC's NVDEC minimum (144x144); B-frames; a keyframe every 12 frames */
  CHECK(vc_make_clip(h264, encoder, 192, 160, 50, 30, 12, NULL) == 0);
  if (vc_sh("ffmpeg -hide_banner -encoders 2>/dev/null | grep -q ' libx265 '") == 0)
    CHECK(vc_make_clip(hevc, "libx265", 192, 160, 50, 30, 12, "-tag:v hvc1 -x265-params log-level=error") == 0);
}

int main(void) {
  char h264[600], hevc[600], *dir = NULL;
  get_clips(h264, hevc, sizeof h264, &dir);
  gpu_test_require_device(0);
  char err[512] = "";
  stk__video_nvdec *gpu = NULL;
  stk_status st = stk__video_nvdec_new(0, &gpu, err, sizeof err);
  if (st == STK_ENOLIB || st == STK_ENOTSUP || st == STK_ENODEV) {
    char reason[600];
    snprintf(reason, sizeof reason, "no NVDEC here: %s", err);
    TEST_SKIP(reason);
  }
  CHECK_MSG(st == STK_OK, "%s", err);
  void *stream = NULL;
  CHECK(stk__gpu_stream_create(&stream, 0) == STK_OK);
  if (gpu && !stk_test_failures) {
    check_clip(h264, gpu, stream);
    check_pipelines(h264);
    check_augment(h264);
  }
  if (access(hevc, R_OK) == 0) {
    if (gpu) check_clip(hevc, gpu, stream); /* the default: a seek starts at its CRA, read as a BLA */
    /* STOKER_HEVC_CRA_START=0, where the container's seek lands: read when a file opens, so a
     * fresh session (the CPU side's decoder is fresh in check_clip) */
    setenv("STOKER_HEVC_CRA_START", "0", 1);
    stk__video_nvdec *container_seek = NULL;
    if (gpu && stk__video_nvdec_new(0, &container_seek, err, sizeof err) == STK_OK) {
      printf("HEVC with STOKER_HEVC_CRA_START=0:\n");
      check_clip(hevc, container_seek, stream);
    }
    stk__video_nvdec_free(container_seek);
    unsetenv("STOKER_HEVC_CRA_START");
  } else {
    printf("no HEVC clip (no libx265 encoder where the clips were made): HEVC not checked\n");
  }
  stk__video_nvdec_free(gpu);
  stk__gpu_stream_destroy(stream);
  if (dir) vc_sh("rm -rf %s", dir);
  free(dir);
  return stk_test_finish("test_gpu_video");
}
