/* src/ops/video/test_video_bad.c: readers.video on bad input -- a truncated file (index at the end, and
 * index first), corrupt bytes, a file that is not a video, an audio-only file, a missing file, a
 * file shorter than one sequence, a variable-frame-rate file: each is a clear error naming the
 * file and the reason at start-up or at read time, or (skip_bad_files) is skipped and recorded by
 * the pipeline, never a crash or a hang. Also the whole pipeline through the public API. */
#include "video_clips.h"
#include "case_list.h"

static char *dir;
static const char *encoder;
static char good[512];

static char *path_in_dir(const char *name) {
  static char paths[16][600];
  static int next;
  char *p = paths[next++ % 16];
  snprintf(p, sizeof paths[0], "%s/%s", dir, name);
  return p;
}

/* Copies the first `keep` bytes of src to dst, then overwrites `count` bytes at `at` with a
 * pattern (count 0: none). */
static int damaged_copy(const char *src, const char *dst, long keep_percent, long at_percent, long count) {
  FILE *in = fopen(src, "rb");
  if (!in) return -1;
  fseek(in, 0, SEEK_END);
  long size = ftell(in);
  fseek(in, 0, SEEK_SET);
  uint8_t *data = malloc((size_t)size);
  if (!data || fread(data, 1, (size_t)size, in) != (size_t)size) return -1;
  fclose(in);
  long keep = size * keep_percent / 100, at = size * at_percent / 100;
  for (long i = 0; i < count && at + i < keep; i++) data[at + i] = (uint8_t)(0x5A ^ (i * 131));
  FILE *out = fopen(dst, "wb");
  if (!out) return -1;
  fwrite(data, 1, (size_t)keep, out);
  fclose(out);
  free(data);
  return 0;
}

/* Opens a reader on one file with sequence_length `length`; returns the status, message in r. */
static stk_status open_one(vc_reader *r, const char *file, int length, int skip_vfr_check) {
  stk_args *a = vc_args();
  vc_set_files(a, file, NULL, NULL);
  stk_args_set_int(a, "sequence_length", length);
  stk_args_set_bool(a, "skip_vfr_check", skip_vfr_check);
  stk_status st = vc_open(r, a, 1, 1);
  stk_args_destroy(a);
  return st;
}

/* Start-up refuses `file` with `reason` in the message, which names the file. */
static void expect_refused(const char *file, int length, const char *reason) {
  vc_reader r;
  stk_status st = open_one(&r, file, length, 0);
  if (getenv("STOKER_TEST_VERBOSE")) printf("%s: %s\n", stk_status_name(st), r.err);
  CHECK_MSG(st != STK_OK && strstr(r.err, file) && strstr(r.err, reason), "%s: status %s, message \"%s\", want \"%s\"",
            file, stk_status_name(st), r.err, reason);
  vc_close(&r);
}

static void test_refused_at_startup(void) {
  /* MP4 with its index (moov) at the end, cut: no index to read. */
  CHECK(damaged_copy(good, path_in_dir("cut.mp4"), 60, 0, 0) == 0);
  expect_refused(path_in_dir("cut.mp4"), 4, "cannot open as a video container");
  CHECK(vc_sh("echo 'just some text' > %s", path_in_dir("text.mp4")) == 0);
  expect_refused(path_in_dir("text.mp4"), 4, "cannot open as a video container");
  CHECK(vc_sh("ffmpeg -hide_banner -y -f lavfi -i sine=frequency=440:duration=1 -c:a aac %s",
              path_in_dir("audio.m4a")) == 0);
  expect_refused(path_in_dir("audio.m4a"), 4, "no video stream");
  expect_refused(path_in_dir("missing.mp4"), 4, "No such file");
  /* A playlist naming another (good) file: readers.video opens only the file it was given. */
  CHECK(vc_sh("printf '#EXTM3U\\n#EXT-X-TARGETDURATION:2\\n#EXTINF:2,\\ngood.mp4\\n#EXT-X-ENDLIST\\n' > %s",
              path_in_dir("list.m3u8")) == 0);
  expect_refused(path_in_dir("list.m3u8"), 4, "list.m3u8");
  vc_reader missing;
  CHECK(open_one(&missing, path_in_dir("missing.mp4"), 4, 0) == STK_ENOENT);
  vc_close(&missing);
  CHECK(vc_make_clip(path_in_dir("short.mp4"), encoder, 64, 48, 3, 30, 12, NULL) == 0);
  expect_refused(path_in_dir("short.mp4"), 4, "too short for one sequence (3 usable frames)");
  /* Variable frame rate: frames 0..9 at 1/30 s, then 1/15 s apart. */
  CHECK(vc_make_clip(path_in_dir("vfr.mp4"), encoder, 64, 48, 20, 30, 12,
                     "-vf setpts='(N+max(0\\,N-10))/30/TB' -vsync passthrough -video_track_timescale 600") == 0);
  expect_refused(path_in_dir("vfr.mp4"), 4, "variable frame rate");
  vc_reader r;
  CHECK_MSG(open_one(&r, path_in_dir("vfr.mp4"), 4, 1) == STK_OK, "skip_vfr_check: %s", r.err);
  if (r.op) CHECK_MSG(vc_read(&r, 4, 0) == STK_OK, "%s", r.err); /* frames 16..19 */
  vc_close(&r);
}

/* Damage inside the frame data: start-up indexes the packets fine; reading the damaged frames is an
 * error naming the file (or, for damage the decoder cannot see, correct-size output) -- never a
 * crash or a hang. Also a file cut inside its frame data with the index first. */
static void test_damaged_frames(void) {
  CHECK(vc_make_clip(path_in_dir("fast.mp4"), encoder, 96, 64, 40, 30, 10, "-movflags +faststart") == 0);
  CHECK(damaged_copy(path_in_dir("fast.mp4"), path_in_dir("fastcut.mp4"), 50, 0, 0) == 0);
  vc_reader r;
  stk_status st = open_one(&r, path_in_dir("fastcut.mp4"), 4, 0);
  int failed = st != STK_OK;
  for (int s = 0; st == STK_OK && s < 10; s++) failed |= vc_read(&r, s, 0) != STK_OK;
  CHECK_MSG(failed && strstr(r.err, "fastcut.mp4"), "a file cut in half reads without an error: \"%s\"", r.err);
  vc_close(&r);

  CHECK(damaged_copy(path_in_dir("fast.mp4"), path_in_dir("garbled.mp4"), 100, 40, 4000) == 0);
  st = open_one(&r, path_in_dir("garbled.mp4"), 4, 0);
  CHECK_MSG(st == STK_OK, "the container is intact, start-up should pass: %s", r.err);
  int errors = 0;
  for (int s = 0; r.op && s < 10; s++) {
    st = vc_read(&r, s, 0);
    if (st != STK_OK) {
      if (getenv("STOKER_TEST_VERBOSE")) printf("%s: %s\n", stk_status_name(st), r.err);
      errors++;
      CHECK_MSG(st == STK_EBADIMAGE && strstr(r.err, "garbled.mp4"), "%s: %s", stk_status_name(st), r.err);
    } else {
      CHECK(r.out[0].shape[0] == 4 && r.out[0].shape[1] == 64 && r.out[0].shape[2] == 96);
    }
  }
  CHECK_MSG(errors > 0, "4000 garbled bytes in the frame data went unnoticed");
  vc_close(&r);
}

/* skip_bad_files: bad files become samples the pipeline replaces and records by name. */
static void test_pipeline_skip_bad_files(void) {
  stk_pipeline_options o;
  stk_pipeline_options_default(&o);
  o.batch_size = 4;
  o.num_threads = 2;
  o.pin_threads = 0;
  stk_pipeline *p = NULL;
  CHECK(stk_pipeline_new(&o, &p) == STK_OK);
  stk_args *a = vc_args();
  const char *files[4] = {good, path_in_dir("cut.mp4"), path_in_dir("audio.m4a"), path_in_dir("short.mp4")};
  stk_args_set_string_list(a, "filenames", files, 4);
  stk_args_set_int(a, "sequence_length", 8);
  stk_args_set_bool(a, "skip_bad_files", 1);
  stk_args_set_bool(a, "random_shuffle", 1);
  CHECK_MSG(stk_pipeline_add_op(p, "readers.video", "video", NULL, 0, a) == STK_OK, "%s", stk_pipeline_last_error(p));
  const char *outs[3] = {"video[0]", "video[1]", "video[2]"};
  CHECK(stk_pipeline_set_outputs(p, outs, 3) == STK_OK);
  CHECK_MSG(stk_pipeline_build(p) == STK_OK, "%s", stk_pipeline_last_error(p));
  /* good: 50 frames -> 6 sequences of 8; plus 3 bad files = 9 samples in the epoch. The bad ones are
   * refilled from the next good samples (docs/pipeline.md), so the 6 good ones make 2 batches: 4, then
   * 2 valid samples and 2 fill copies. */
  stk_reader_meta meta;
  CHECK(stk_pipeline_reader_meta(p, NULL, &meta) == STK_OK && meta.epoch_size == 9);
  int batches = 0;
  stk_batch *b;
  while (stk_pipeline_next(p, &b) == STK_OK) {
    batches++;
    stk_tensor_view v, frame;
    CHECK(stk_batch_tensor(b, 0, &v) == STK_OK && v.ndim == 5 && v.shape[0] == 4 && v.shape[1] == 8 &&
          v.shape[2] == 64 && v.shape[3] == 96);
    for (int s = 0; s < 4; s++) {
      CHECK(stk_batch_sample(b, 2, s, &frame) == STK_OK && *(int32_t *)frame.data % 8 == 0);
    }
    stk_batch_release(b);
  }
  CHECK_MSG(batches == 2, "%d batches", batches);
  char *skipped = NULL;
  CHECK(stk_pipeline_skipped_files(p, &skipped) == STK_OK && skipped);
  CHECK_MSG(skipped && strstr(skipped, "cut.mp4") && strstr(skipped, "audio.m4a") && strstr(skipped, "short.mp4"),
            "skipped: %s", skipped ? skipped : "(null)");
  stk_free(skipped);
  stk_pipeline_destroy(p);
  /* Without skip_bad_files the same list fails at build, naming the first bad file. */
  CHECK(stk_pipeline_new(&o, &p) == STK_OK);
  stk_args_set_bool(a, "skip_bad_files", 0);
  CHECK(stk_pipeline_add_op(p, "readers.video", "video", NULL, 0, a) == STK_OK);
  CHECK(stk_pipeline_set_outputs(p, outs, 3) == STK_OK);
  CHECK(stk_pipeline_build(p) != STK_OK && strstr(stk_pipeline_last_error(p), "cut.mp4"));
  stk_pipeline_destroy(p);
  stk_args_destroy(a);
}

/* one STK_TEST_CASE per line: tests/CMakeLists.txt reads them */
// clang-format off
static const stk_test_case cases[] = {
    STK_TEST_CASE(test_refused_at_startup),
    STK_TEST_CASE(test_damaged_frames),
    STK_TEST_CASE(test_pipeline_skip_bad_files),
};
// clang-format on

int main(int argc, char **argv) {
  if (stk_test_list_cases(cases, STK_TEST_COUNT(cases), argc, argv)) return 0;
  encoder = vc_require_ffmpeg();
  dir = stk_test_tmpdir("video-bad");
  snprintf(good, sizeof good, "%s/good.mp4", dir);
  if (vc_make_clip(good, encoder, 96, 64, 50, 30, 12, NULL) != 0) {
    fprintf(stderr, "cannot make the test clip\n");
    return 1;
  }
  int rc = stk_test_run_selected("test_video_bad", cases, STK_TEST_COUNT(cases), argc, argv);
  vc_sh("rm -rf %s", dir);
  free(dir);
  return rc ? rc : stk_test_finish("test_video_bad");
}
