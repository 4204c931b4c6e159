/* src/ops/video/test_video.c: readers.video on the CPU -- frames equal the documented conversion of FFmpeg's
 * own decode of the same frames (RGB, YCbCr, float; video_clips.h's vc_reference), in any read order (keyframe seeks, reading on, two worker sessions);
 * the sequence / step / stride / pad_sequences / file_list range / shard arithmetic on hand-worked
 * cases; labels, frame numbers and timestamps. Bad inputs are src/ops/video/test_video_bad.c. Clips are
 * made at test time with the ffmpeg CLI (skips without it). */
#include <math.h>

#include "video_clips.h"
#include "ops/video/video_demux.h"
#include "case_list.h"

static char *dir;
static const char *encoder;
static char clip_a[512], clip_b[512]; /* 96x64 50 frames GOP 12; 80x48 20 frames GOP 5 (mkv) */
static uint8_t *ref_a_rgb, *ref_a_yuv, *ref_b_rgb;
static size_t ref_a_rgb_size, ref_a_yuv_size, ref_b_rgb_size;

#define A_W      96
#define A_H      64
#define A_FRAMES 50
#define B_W      80
#define B_H      48
#define B_FRAMES 20

static void make_clips(void) {
  encoder = vc_require_ffmpeg();
  dir = stk_test_tmpdir("video");
  snprintf(clip_a, sizeof clip_a, "%s/a.mp4", dir);
  snprintf(clip_b, sizeof clip_b, "%s/b.mkv", dir);
  CHECK(vc_make_clip(clip_a, encoder, A_W, A_H, A_FRAMES, 30, 12, NULL) == 0);
  CHECK(vc_make_clip(clip_b, "mpeg4", B_W, B_H, B_FRAMES, 25, 5, NULL) == 0);
  ref_a_rgb = vc_reference(clip_a, "rgb24", A_W, A_H, &ref_a_rgb_size);
  ref_a_yuv = vc_reference(clip_a, "yuv444p", A_W, A_H, &ref_a_yuv_size);
  ref_b_rgb = vc_reference(clip_b, "rgb24", B_W, B_H, &ref_b_rgb_size);
  CHECK(ref_a_rgb && ref_a_rgb_size == (size_t)A_W * A_H * 3 * A_FRAMES);
  CHECK(ref_a_yuv && ref_a_yuv_size == (size_t)A_W * A_H * 3 * A_FRAMES);
  CHECK(ref_b_rgb && ref_b_rgb_size == (size_t)B_W * B_H * 3 * B_FRAMES);
  if (stk_test_failures) {
    fprintf(stderr, "cannot make the test clips\n");
    exit(1);
  }
}

/* Frame k of output 0 equals reference frame `frame` (rgb24 interleaved or yuv444p planar): YCbCr
 * exactly, RGB within 1 (the reference is computed in double precision, stoker in Q16). */
static int frame_equals(const stk__tensor *t, int k, const uint8_t *ref, int w, int h, int frame, int planar) {
  const size_t pixels = (size_t)w * h;
  const uint8_t *got = (const uint8_t *)t->data + (size_t)k * pixels * 3;
  const uint8_t *want = ref + (size_t)frame * pixels * 3;
  if (!planar) {
    for (size_t i = 0; i < pixels * 3; i++)
      if (abs((int)got[i] - (int)want[i]) > 1) return 0;
    return 1;
  }
  for (size_t i = 0; i < pixels; i++)
    if (got[3 * i] != want[i] || got[3 * i + 1] != want[pixels + i] || got[3 * i + 2] != want[2 * pixels + i]) return 0;
  return 1;
}

/* Reads sequences in a scrambled order and compares each frame with FFmpeg's decode. */
static void test_frames_exact(void) {
  stk_args *a = vc_args();
  vc_set_files(a, clip_a, NULL, NULL);
  stk_args_set_int(a, "sequence_length", 4);
  stk_args_set_int(a, "step", 5);
  stk_args_set_int(a, "stride", 2);
  vc_reader r;
  CHECK_MSG(vc_open(&r, a, 2, 2) == STK_OK, "%s", r.err);
  /* starts 0, 5, ..., 40 (40 + 3*2 = 46 < 50; 45 + 6 = 51 is past the end): 9 sequences */
  const int order[] = {8, 0, 3, 3, 7, 1, 2, 4, 5, 6, 0, 8};
  for (size_t i = 0; r.op && i < sizeof order / sizeof order[0]; i++) {
    int seq = order[i], thread = (int)(i % 2);
    stk_status st = vc_read(&r, seq, thread);
    CHECK_MSG(st == STK_OK, "sequence %d: %s", seq, r.err);
    if (st != STK_OK) continue;
    CHECK(r.out[0].ndim == 4 && r.out[0].shape[0] == 4 && r.out[0].shape[1] == A_H && r.out[0].shape[2] == A_W &&
          r.out[0].shape[3] == 3 && r.out[0].dtype == STK_DTYPE_UINT8);
    CHECK_STR(r.out[0].layout, "FHWC");
    for (int k = 0; k < 4; k++)
      CHECK_MSG(frame_equals(&r.out[0], k, ref_a_rgb, A_W, A_H, seq * 5 + 2 * k, 0), "sequence %d frame %d", seq, k);
    CHECK(*(int32_t *)r.out[1].data == 0);
    CHECK(*(int32_t *)r.out[2].data == seq * 5);
    const float *ts = r.out[3].data;
    for (int k = 0; k < 4; k++) CHECK(fabsf(ts[k] - (float)(seq * 5 + 2 * k) / 30.0f) < 1e-4f);
  }
  vc_close(&r);
  /* Every frame once, in order (reading on without seeks), then backwards (a seek per sequence). */
  stk_args_set_int(a, "sequence_length", 1);
  stk_args_set_int(a, "step", 1);
  stk_args_set_int(a, "stride", 1);
  CHECK_MSG(vc_open(&r, a, 1, 1) == STK_OK, "%s", r.err);
  for (int pass = 0; r.op && pass < 2; pass++)
    for (int i = 0; i < A_FRAMES; i++) {
      int f = pass == 0 ? i : A_FRAMES - 1 - i;
      CHECK_MSG(vc_read(&r, f, 0) == STK_OK && frame_equals(&r.out[0], 0, ref_a_rgb, A_W, A_H, f, 0), "frame %d: %s", f,
                r.err);
    }
  vc_close(&r);
  stk_args_destroy(a);
}

static void test_ycbcr_and_float(void) {
  stk_args *a = vc_args();
  vc_set_files(a, clip_a, NULL, NULL);
  stk_args_set_int(a, "sequence_length", 3);
  stk_args_set_string(a, "image_type", "YCbCr");
  vc_reader r;
  CHECK_MSG(vc_open(&r, a, 1, 1) == STK_OK, "%s", r.err);
  for (int seq = 15; r.op && seq >= 0; seq -= 5) { /* starts 45, 30, 15, 0 */
    CHECK_MSG(vc_read(&r, seq, 0) == STK_OK, "%s", r.err);
    for (int k = 0; k < 3; k++) CHECK_MSG(frame_equals(&r.out[0], k, ref_a_yuv, A_W, A_H, seq * 3 + k, 1), "%d", seq);
  }
  vc_close(&r);
  stk_args_set_string(a, "image_type", "RGB");
  stk_args_set_string(a, "dtype", "float");
  stk_args_set_bool(a, "normalized", 1);
  CHECK_MSG(vc_open(&r, a, 1, 1) == STK_OK, "%s", r.err);
  if (r.op && vc_read(&r, 7, 0) == STK_OK) {
    CHECK(r.out[0].dtype == STK_DTYPE_FLOAT32);
    const float *got = r.out[0].data;
    const uint8_t *want = ref_a_rgb + (size_t)21 * A_W * A_H * 3;
    int bad = 0;
    for (size_t i = 0; i < (size_t)A_W * A_H * 9; i++) bad += fabsf(got[i] - want[i] / 255.0f) > 1.0f / 255.0f + 1e-6f;
    CHECK_MSG(bad == 0, "%d float values differ from the reference / 255 by more than 1/255", bad);
  }
  vc_close(&r);
  stk_args_set_bool(a, "normalized", 0);
  stk_args_set_string(a, "dtype", "int32");
  CHECK(vc_open(&r, a, 1, 1) == STK_EINVAL && strstr(r.err, "dtype"));
  vc_close(&r);
  stk_args_destroy(a);
}

/* Counts the sequences of one configuration by planning a whole epoch with batch size 1. */
static int64_t count_sequences(stk_args *a) {
  vc_reader r;
  if (vc_open(&r, a, 1, 1) != STK_OK) {
    fprintf(stderr, "open: %s\n", r.err);
    return -1;
  }
  stk_reader_meta meta;
  r.op->impl->reader_meta(r.op, 0, &meta);
  vc_close(&r);
  return meta.epoch_size;
}

static void test_sequence_arithmetic(void) {
  stk_args *a = vc_args();
  vc_set_files(a, clip_a, NULL, NULL);
  stk_args_set_int(a, "sequence_length", 4); /* step = 4: starts 0..44 (44 + 3 < 50) */
  CHECK(count_sequences(a) == 12);
  stk_args_set_int(a, "sequence_length", 3);
  stk_args_set_int(a, "step", 10);
  stk_args_set_int(a, "stride", 4); /* span 8: starts 0, 10, 20, 30, 40 (40 + 8 = 48 < 50) */
  CHECK(count_sequences(a) == 5);
  stk_args_set_int(a, "stride", 5); /* span 10: 40 + 10 = 50 is past the end */
  CHECK(count_sequences(a) == 4);
  stk_args_set_bool(a, "pad_sequences", 1); /* then 40 pads: frames 40, 45, (50) */
  CHECK(count_sequences(a) == 5);
  vc_reader r;
  CHECK_MSG(vc_open(&r, a, 1, 1) == STK_OK, "%s", r.err);
  if (r.op && vc_read(&r, 4, 0) == STK_OK) {
    CHECK(frame_equals(&r.out[0], 0, ref_a_rgb, A_W, A_H, 40, 0) &&
          frame_equals(&r.out[0], 1, ref_a_rgb, A_W, A_H, 45, 0));
    const uint8_t *pad = (const uint8_t *)r.out[0].data + (size_t)2 * A_W * A_H * 3;
    int zeros = 1;
    for (size_t i = 0; i < (size_t)A_W * A_H * 3; i++) zeros &= pad[i] == 0;
    CHECK(zeros);
    const float *ts = r.out[3].data;
    CHECK(fabsf(ts[1] - 1.5f) < 1e-4f && ts[2] == -1.0f);
    CHECK(*(int32_t *)r.out[2].data == 40);
  }
  vc_close(&r);
  /* Two files: a = 12 sequences of 4, b (20 frames) = starts 0, 4, 8, 12, 16 = 5: 17 in all. */
  stk_args_destroy(a);
  a = vc_args();
  vc_set_files(a, clip_a, clip_b, NULL);
  const int64_t labels[2] = {3, 9};
  stk_args_set_int_list(a, "labels", labels, 2);
  stk_args_set_int(a, "sequence_length", 4);
  CHECK(count_sequences(a) == 17);
  /* Shard 1 of 3 holds sequences [floor(17/3), floor(34/3)) = [5, 11): a's starts 20..44 (6). */
  stk_args_set_int(a, "num_shards", 3);
  stk_args_set_int(a, "shard_id", 1);
  stk_args_set_bool(a, "stick_to_shard", 1);
  CHECK_MSG(vc_open(&r, a, 4, 1) == STK_OK, "%s", r.err);
  if (r.op) {
    int64_t got[8];
    int n = 0;
    for (int b = 0; b < 2 && vc_plan(&r) == STK_OK; b++)
      for (int k = 0; k < r.plan.batch_size; k++) got[n++] = r.plan.samples[k].file_index;
    CHECK(n == 8);
    for (int k = 0; k < 6; k++) CHECK(n == 8 && got[k] == 5 + k);
    CHECK(n == 8 && r.plan.valid_samples == 2 && r.plan.samples[2].is_fill);
    CHECK(vc_plan(&r) == STK_EOF_EPOCH);
    CHECK(vc_read(&r, 10, 0) == STK_OK && *(int32_t *)r.out[1].data == 3 && *(int32_t *)r.out[2].data == 40);
    CHECK_MSG(vc_read(&r, 13, 0) == STK_OK, "%s", r.err); /* b starts at sequence 12 */
    CHECK(*(int32_t *)r.out[1].data == 9 && *(int32_t *)r.out[2].data == 4 &&
          frame_equals(&r.out[0], 3, ref_b_rgb, B_W, B_H, 7, 0));
    CHECK(r.out[0].shape[1] == B_H && r.out[0].shape[2] == B_W);
  }
  vc_close(&r);
  stk_args_destroy(a);
}

static void write_text(const char *path, const char *text) {
  FILE *f = fopen(path, "w");
  if (f) {
    fputs(text, f);
    fclose(f);
  }
}

static void test_file_list_and_root(void) {
  char list[600], text[2048];
  snprintf(list, sizeof list, "%s/list.txt", dir);
  /* frames [10, 30): starts 10..26; frames [30, 50) (-20 = 50 - 20): 30..46; seconds [0.5, 1.0) =
   * frames 15..29: starts 15, 19, 23 */
  snprintf(text, sizeof text, "a.mp4 7 10 30\n\n%s 2 -20\n", clip_a);
  write_text(list, text);
  stk_args *a = vc_args();
  stk_args_set_string(a, "file_list", list);
  stk_args_set_bool(a, "file_list_frame_num", 1);
  stk_args_set_int(a, "sequence_length", 4);
  vc_reader r;
  CHECK_MSG(vc_open(&r, a, 1, 1) == STK_OK, "%s", r.err);
  if (r.op) {
    stk_reader_meta meta;
    r.op->impl->reader_meta(r.op, 0, &meta);
    CHECK(meta.epoch_size == 10);
    CHECK(vc_read(&r, 4, 0) == STK_OK && *(int32_t *)r.out[1].data == 7 && *(int32_t *)r.out[2].data == 26);
    CHECK(vc_read(&r, 5, 0) == STK_OK && *(int32_t *)r.out[1].data == 2 && *(int32_t *)r.out[2].data == 30 &&
          frame_equals(&r.out[0], 0, ref_a_rgb, A_W, A_H, 30, 0));
  }
  vc_close(&r);
  write_text(list, "a.mp4 1 0.5 1.0\n");
  stk_args_set_bool(a, "file_list_frame_num", 0);
  CHECK(count_sequences(a) == 3);
  write_text(list, "a.mp4 1 0.5 1.0 extra\n");
  CHECK(vc_open(&r, a, 1, 1) == STK_EPARSE && strstr(r.err, "line 1"));
  vc_close(&r);
  stk_args_destroy(a);
  /* file_root: classes by sorted directory name */
  char root[600];
  snprintf(root, sizeof root, "%s/root", dir);
  CHECK(vc_sh("mkdir -p %s/cats %s/birds && cp %s %s/cats/ && cp %s %s/birds/", root, root, clip_a, root, clip_b,
              root) == 0);
  a = vc_args();
  stk_args_set_string(a, "file_root", root);
  stk_args_set_int(a, "sequence_length", 4);
  CHECK_MSG(vc_open(&r, a, 1, 1) == STK_OK, "%s", r.err);
  if (r.op) { /* birds (label 0) = b: 5 sequences first, then cats (label 1) = a */
    CHECK(vc_read(&r, 0, 0) == STK_OK && *(int32_t *)r.out[1].data == 0 && r.out[0].shape[2] == B_W);
    CHECK(vc_read(&r, 5, 0) == STK_OK && *(int32_t *)r.out[1].data == 1 && r.out[0].shape[2] == A_W);
  }
  vc_close(&r);
  stk_args_destroy(a);
}

/* test_hevc_frames_exact's reads of clip (rgb24 reference ref), cra naming the mode in messages. */
static void hevc_reads(const char *clip, const uint8_t *ref, int cra) {
  stk_args *a = vc_args();
  vc_set_files(a, clip, NULL, NULL);
  stk_args_set_int(a, "sequence_length", 1);
  stk_args_set_int(a, "step", 1);
  vc_reader r;
  CHECK_MSG(vc_open(&r, a, 1, 1) == STK_OK, "cra %d: %s", cra, r.err);
  for (int f = A_FRAMES - 1; r.op && f >= 0; f--)
    CHECK_MSG(vc_read(&r, f, 0) == STK_OK && frame_equals(&r.out[0], 0, ref, A_W, A_H, f, 0), "cra %d frame %d: %s",
              cra, f, r.err);
  vc_close(&r);
  stk_args_set_int(a, "sequence_length", 4);
  stk_args_set_int(a, "step", 5);
  stk_args_set_int(a, "stride", 2);
  CHECK_MSG(vc_open(&r, a, 2, 2) == STK_OK, "cra %d: %s", cra, r.err);
  const int order[] = {8, 0, 3, 7, 1, 2, 4, 5, 6, 2};
  for (size_t i = 0; r.op && i < sizeof order / sizeof order[0]; i++) {
    int seq = order[i];
    stk_status st = vc_read(&r, seq, (int)(i % 2));
    CHECK_MSG(st == STK_OK, "cra %d sequence %d: %s", cra, seq, r.err);
    for (int k = 0; st == STK_OK && k < 4; k++)
      CHECK_MSG(frame_equals(&r.out[0], k, ref, A_W, A_H, seq * 5 + 2 * k, 0), "cra %d sequence %d frame %d", cra, seq,
                k);
  }
  vc_close(&r);
  stk_args_destroy(a);
}

/* HEVC (libx265's default open GOPs: its keyframes after the first are CRA pictures whose leading
 * pictures refer to the GOP before) in MP4: every frame once backwards (a seek per frame) and
 * shuffled strided sequences, each equal to FFmpeg's own decode. Skipped (saying so) where the
 * ffmpeg CLI has no libx265. */
static void test_hevc_frames_exact(void) {
  if (vc_sh("ffmpeg -hide_banner -encoders 2>/dev/null | grep -q ' libx265 '") != 0) {
    printf("test_hevc_frames_exact: no libx265 encoder in the ffmpeg CLI: not checked\n");
    return;
  }
  char clip[600];
  snprintf(clip, sizeof clip, "%s/h.mp4", dir);
  CHECK(vc_make_clip(clip, "libx265", A_W, A_H, A_FRAMES, 30, 12, "-tag:v hvc1 -x265-params log-level=error") == 0);
  size_t ref_size = 0;
  uint8_t *ref = vc_reference(clip, "rgb24", A_W, A_H, &ref_size);
  CHECK(ref && ref_size == (size_t)A_W * A_H * 3 * A_FRAMES);
  /* cra 1, the default: seeks drop to a CRA, read as a BLA; 0: where the container's seek lands */
  for (int cra = 0; ref && cra < 2; cra++) {
    setenv("STOKER_HEVC_CRA_START", cra ? "1" : "0", 1);
    hevc_reads(clip, ref, cra);
    unsetenv("STOKER_HEVC_CRA_START");
  }
  free(ref);
}

/* A seek to a keyframe's decode timestamp reads on from that keyframe, not an earlier one: in an
 * MP4 with B-frames (clip a, H.264) libavformat's seek to the keyframe's dts lands one keyframe
 * early, which made every shuffled sequence decode a whole extra GOP (bench/RESULTS.md, session
 * 10). The packets from the seek to the next keyframe are those of a straight read. */
static void test_seek_lands_on_its_keyframe(void) {
  char err[512] = "";
  CHECK_MSG(stk__ffmpeg_load(err, sizeof err) == STK_OK, "%s", err);
  stk__video_demuxer *d = NULL;
  stk__video_index ix;
  CHECK_MSG(stk__video_demuxer_open(clip_a, NULL, 0, clip_a, &d, err, sizeof err) == STK_OK, "%s", err);
  if (!d) return;
  CHECK_MSG(stk__video_index_build(d, 0, &ix, err, sizeof err) == STK_OK, "%s", err);
  CHECK(ix.num_keyframes >= 4); /* 50 frames, GOP 12 */
  AVPacket *pkt = av_packet_alloc();
  for (int64_t k = ix.num_keyframes - 1; k >= 0 && pkt; k--) {
    CHECK(stk__video_demuxer_seek(d, ix.key_dts[k], err, sizeof err) == STK_OK);
    int64_t count = 0, first_dts = AV_NOPTS_VALUE;
    int first_key = 0;
    while (stk__video_demuxer_read(d, pkt, err, sizeof err) == STK_OK) {
      if (count == 0) first_dts = pkt->dts, first_key = (pkt->flags & AV_PKT_FLAG_KEY) != 0;
      count++;
      av_packet_unref(pkt);
      if (k + 1 < ix.num_keyframes && count == ix.key_frame[k + 1] - ix.key_frame[k]) break;
    }
    CHECK_MSG(first_dts == ix.key_dts[k] && first_key,
              "keyframe %lld (frame %lld, dts %lld): the read starts at dts %lld%s", (long long)k,
              (long long)ix.key_frame[k], (long long)ix.key_dts[k], (long long)first_dts,
              first_key ? "" : ", not a keyframe");
  }
  av_packet_free(&pkt);
  stk__video_index_free(&ix);
  stk__video_demuxer_free(d);
}

/* one STK_TEST_CASE per line: tests/CMakeLists.txt reads them */
// clang-format off
static const stk_test_case cases[] = {
    STK_TEST_CASE(test_frames_exact),
    STK_TEST_CASE(test_ycbcr_and_float),
    STK_TEST_CASE(test_sequence_arithmetic),
    STK_TEST_CASE(test_file_list_and_root),
    STK_TEST_CASE(test_seek_lands_on_its_keyframe),
    STK_TEST_CASE(test_hevc_frames_exact),
};
// clang-format on

int main(int argc, char **argv) {
  if (stk_test_list_cases(cases, STK_TEST_COUNT(cases), argc, argv)) return 0;
  make_clips();
  int rc = stk_test_run_selected("test_video", cases, STK_TEST_COUNT(cases), argc, argv);
  vc_sh("rm -rf %s", dir);
  free(dir);
  free(ref_a_rgb);
  free(ref_a_yuv);
  free(ref_b_rgb);
  return rc ? rc : stk_test_finish("test_video");
}
