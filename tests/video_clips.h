/* tests/video_clips.h: helpers of the readers.video tests -- test clips made at test time with the
 * ffmpeg CLI (testsrc pattern; libx264 when Debian's ffmpeg has it, else mpeg4), FFmpeg's own
 * decode of them as the reference, and a standalone readers.video instance driven sample by
 * sample. Header-only (static functions); each test file includes it once. */
#ifndef STOKER_TESTS_VIDEO_CLIPS_H
#define STOKER_TESTS_VIDEO_CLIPS_H

#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/op.h"
#include "stoker/stoker.h"
#include "testutil.h"

/* Runs a shell command built like printf, its output discarded; returns its exit status. */
static int vc_sh(const char *fmt, ...) {
  char cmd[4096];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(cmd, sizeof cmd, fmt, ap);
  va_end(ap);
  char full[4200];
  snprintf(full, sizeof full, "%s >/dev/null 2>&1", cmd);
  return system(full);
}

/* Skips the test (exit 77) when the ffmpeg CLI is missing; returns the H.264 encoder to use
 * ("libx264", else "mpeg4"). */
static const char *vc_require_ffmpeg(void) {
  if (vc_sh("ffmpeg -hide_banner -version") != 0)
    TEST_SKIP("the ffmpeg CLI is not installed (scripts/install-deps.sh installs it): no test clips");
  return vc_sh("ffmpeg -hide_banner -encoders 2>/dev/null | grep -q ' libx264 '") == 0 ? "libx264" : "mpeg4";
}

/* A w x h clip of `frames` frames at `fps` of FFmpeg's testsrc2 pattern (moving), keyframe every
 * `gop` frames, encoded with `encoder` (B-frames on with libx264). `extra`: more output options. */
static int vc_make_clip(const char *path, const char *encoder, int w, int h, int frames, int fps, int gop,
                        const char *extra) {
  return vc_sh(
      "ffmpeg -hide_banner -y -f lavfi -i testsrc2=size=%dx%d:rate=%d -frames:v %d -c:v %s -g %d "
      "-pix_fmt yuv420p %s %s",
      w, h, fps, frames, encoder, gop, extra ? extra : "", path);
}

/* FFmpeg's own decode of every frame of `path`, in presentation order, as yuv420p planes (what the
 * decoders hand the conversion; H.264/MPEG-4 decoding is bit-exact), malloc'd, *size set. */
static uint8_t *vc_decode_420(const char *path, size_t *size) {
  char raw[1024];
  snprintf(raw, sizeof raw, "%s.yuv420p.raw", path);
  if (vc_sh("ffmpeg -hide_banner -y -i %s -vsync passthrough -f rawvideo -pix_fmt yuv420p %s", path, raw) != 0)
    return NULL;
  FILE *f = fopen(raw, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  uint8_t *data = malloc(n > 0 ? (size_t)n : 1);
  if (data && fread(data, 1, (size_t)n, f) != (size_t)n) {
    free(data);
    data = NULL;
  }
  fclose(f);
  *size = (size_t)n;
  return data;
}

/* Chroma plane `c` (cw x ch) at output pixel (x, y), bilinear at H.264's default siting (left:
 * sample j at luma column 2j, between luma rows 2i and 2i + 1), clamped at the edges. */
static double vc_chroma(const uint8_t *c, int cw, int ch, int x, int y) {
  double cx = x * 0.5, cy = (y - 0.5) * 0.5;
  cx = cx < 0 ? 0 : (cx > cw - 1 ? cw - 1 : cx);
  cy = cy < 0 ? 0 : (cy > ch - 1 ? ch - 1 : cy);
  int x0 = (int)cx, y0 = (int)cy, x1 = x0 + 1 < cw ? x0 + 1 : cw - 1, y1 = y0 + 1 < ch ? y0 + 1 : ch - 1;
  double fx = cx - x0, fy = cy - y0;
  double top = c[y0 * cw + x0] * (1 - fx) + c[y0 * cw + x1] * fx;
  double bottom = c[y1 * cw + x0] * (1 - fx) + c[y1 * cw + x1] * fx;
  return top * (1 - fy) + bottom * fy;
}

static uint8_t vc_round(double v) { return (uint8_t)(v < 0 ? 0 : (v > 255 ? 255 : floor(v + 0.5))); }

/* The reference of readers.video's output (docs/operators-video.md, *Colour*), computed here in
 * double precision from FFmpeg's decode: every frame of `path` (w x h, limited range, BT.601, the
 * clips' colour) as pix_fmt "rgb24" (interleaved) or "yuv444p" (planar), malloc'd, *size set.
 * stoker computes the same in Q16 integers, so RGB may differ by 1 (vc_frame_equals' tolerance);
 * YCbCr is exact. NULL on failure. */
__attribute__((unused)) static uint8_t *vc_reference(const char *path, const char *pix_fmt, int w, int h,
                                                     size_t *size) {
  size_t n = 0;
  uint8_t *yuv = vc_decode_420(path, &n);
  const int cw = (w + 1) / 2, ch = (h + 1) / 2;
  const size_t pixels = (size_t)w * h, frame = pixels + 2 * (size_t)cw * ch, frames = n / frame;
  uint8_t *out = yuv ? malloc(frames * pixels * 3 + 1) : NULL;
  const int rgb = strcmp(pix_fmt, "rgb24") == 0;
  for (size_t f = 0; out && f < frames; f++) {
    const uint8_t *Y = yuv + f * frame, *U = Y + pixels, *V = U + (size_t)cw * ch;
    uint8_t *o = out + f * pixels * 3;
    for (int y = 0; y < h; y++)
      for (int x = 0; x < w; x++) {
        const size_t i = (size_t)y * w + x;
        double cb = vc_chroma(U, cw, ch, x, y), cr = vc_chroma(V, cw, ch, x, y);
        if (!rgb) {
          o[i] = Y[i], o[pixels + i] = vc_round(cb), o[2 * pixels + i] = vc_round(cr);
          continue;
        }
        const double kr = 0.299, kb = 0.114, kg = 1 - kr - kb, yn = (Y[i] - 16) * 255.0 / 219.0;
        cb = (cb - 128) * 255.0 / 224.0, cr = (cr - 128) * 255.0 / 224.0;
        const double r = yn + 2 * (1 - kr) * cr, b = yn + 2 * (1 - kb) * cb, g = (yn - kr * r - kb * b) / kg;
        o[3 * i] = vc_round(r), o[3 * i + 1] = vc_round(g), o[3 * i + 2] = vc_round(b);
      }
  }
  free(yuv);
  *size = out ? frames * pixels * 3 : 0;
  return out;
}

/* ---- A standalone readers.video ------------------------------------------------------------- */
typedef struct vc_reader {
  stk__op *op;
  stk__tensor out[4];
  stk__batch_plan plan;
  stk__sample_plan samples[64];
  char err[1024];
} vc_reader;

__attribute__((unused)) static stk_status vc_open(vc_reader *r, const stk_args *args, int batch_size, int threads) {
  memset(r, 0, sizeof *r);
  stk_pipeline_options options;
  stk_pipeline_options_default(&options);
  options.batch_size = batch_size;
  options.num_threads = threads;
  options.seed = 7;
  static stk_pipeline_options kept; /* the op keeps the pointer */
  kept = options;
  r->plan.samples = r->samples;
  return stk__op_new_standalone("readers.video", "cpu", args, &kept, 0, &r->op, r->err, sizeof r->err);
}

__attribute__((unused)) static void vc_close(vc_reader *r) {
  if (r->op) stk__op_free_standalone(r->op);
  for (int i = 0; i < 4; i++) stk__tensor_free(&r->out[i]);
  r->op = NULL;
}

/* Plans the next batch into r->plan. */
__attribute__((unused)) static stk_status vc_plan(vc_reader *r) {
  return r->op->impl->plan_batch(r->op, &r->plan, r->err, sizeof r->err);
}

/* Reads sequence `index` (the reader's sequence number) on worker `thread` into r->out. */
__attribute__((unused)) static stk_status vc_read(vc_reader *r, int64_t index, int thread) {
  stk__sample_plan sp = {.sample_id = index, .file_index = index};
  stk__sample_ctx ctx = {
      .thread_index = thread, .sample_id = index, .plan = &sp, .err = r->err, .err_size = sizeof r->err};
  r->err[0] = '\0';
  stk__tensor *outs[4] = {&r->out[0], &r->out[1], &r->out[2], &r->out[3]};
  return r->op->impl->run_sample(r->op, &ctx, NULL, outs);
}

__attribute__((unused)) static stk_args *vc_args(void) {
  stk_args *a = NULL;
  stk_args_new(&a);
  return a;
}

__attribute__((unused)) static void vc_set_files(stk_args *a, const char *f0, const char *f1, const char *f2) {
  const char *names[3] = {f0, f1, f2};
  size_t n = f2 ? 3 : f1 ? 2 : 1;
  stk_args_set_string_list(a, "filenames", names, n);
}

#endif
