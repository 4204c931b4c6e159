/* src/ops/video/test_video_color.c: readers.video's colour arithmetic (src/ops/video/video_color.h), the
 * part shared by the CPU and GPU paths: the chroma taps at every siting, the vectorisable across
 * pass against the taps for every width, and the matrix's anchor points (black, white, grey, the
 * primaries' signs) in limited and full range, BT.601 and BT.709. Needs no FFmpeg and no GPU. */
#include <stdlib.h>

#include "case_list.h"
#include "ops/video/video_color.h"

/* Taps: sample positions (x - pos) / 2 with pos = pos2 / 2, clamped, in quarters. */
static void test_taps_follow_the_siting(void) {
  int i0, i1, w;
  stk__video_chroma_tap(0, 0, 8, &i0, &i1, &w); /* left: x 0 on sample 0 */
  CHECK(i0 == 0 && i1 == 1 && w == 0);
  stk__video_chroma_tap(3, 0, 8, &i0, &i1, &w); /* x 3: halfway between 1 and 2 */
  CHECK(i0 == 1 && i1 == 2 && w == 2);
  stk__video_chroma_tap(1, 1, 8, &i0, &i1, &w); /* centre: y 1 at 0.25 */
  CHECK(i0 == 0 && i1 == 1 && w == 1);
  stk__video_chroma_tap(2, 1, 8, &i0, &i1, &w); /* y 2 at 0.75 */
  CHECK(i0 == 0 && i1 == 1 && w == 3);
  stk__video_chroma_tap(0, 1, 8, &i0, &i1, &w); /* before sample 0: clamped */
  CHECK(i0 == 0 && w == 0);
  stk__video_chroma_tap(15, 0, 8, &i0, &i1, &w); /* past the last: clamped */
  CHECK(i0 == 7 && i1 == 7 && w == 0);
  stk__video_chroma_tap(3, 2, 8, &i0, &i1, &w); /* bottom: y 3 on sample 1 */
  CHECK(i0 == 1 && w == 0);
}

/* The across pass equals the taps for every width (odd ones included) and both horizontal sitings. */
static void test_across_equals_the_taps(void) {
  int32_t v[40], out[80];
  int bad = 0;
  for (int w = 1; w <= 80; w++) {
    const int cw = (w + 1) / 2;
    for (int j = 0; j < cw; j++) v[j] = rand() % 1021;
    for (int pos2 = 0; pos2 < 2; pos2++) {
      stk__video_chroma_across(v, cw, w, pos2, out);
      for (int x = 0; x < w; x++) {
        int i0, i1, wt;
        stk__video_chroma_tap(x, pos2, cw, &i0, &i1, &wt);
        bad += out[x] != v[i0] * (4 - wt) + v[i1] * wt;
      }
    }
  }
  CHECK_MSG(bad == 0, "%d values differ from the taps", bad);
}

static void rgb_of(int bt709, int full, int y, int cb, int cr, uint8_t out[3]) {
  stk__video_color c;
  stk__video_color_init(&c, bt709, full, 1);
  stk__video_pixel(c, y, cb * 16, cr * 16, 1, out);
}

/* Black, white and grey land exactly; a strong red is red; YCbCr rounds the 1/16 chroma. */
static void test_matrix_anchor_points(void) {
  uint8_t p[3];
  for (int bt709 = 0; bt709 < 2; bt709++) {
    rgb_of(bt709, 0, 16, 128, 128, p);
    CHECK(p[0] == 0 && p[1] == 0 && p[2] == 0);
    rgb_of(bt709, 0, 235, 128, 128, p);
    CHECK(p[0] == 255 && p[1] == 255 && p[2] == 255);
    rgb_of(bt709, 1, 0, 128, 128, p);
    CHECK(p[0] == 0 && p[1] == 0 && p[2] == 0);
    rgb_of(bt709, 1, 128, 128, 128, p);
    CHECK(p[0] == 128 && p[1] == 128 && p[2] == 128);
    rgb_of(bt709, 0, 81, 90, 240, p); /* BT.601 red is Y 81, Cb 90, Cr 240 */
    CHECK(p[0] >= 250 && p[1] <= 40 && p[2] <= 40);
    rgb_of(bt709, 0, 255, 255, 255, p); /* out of range in: clamped, not wrapped */
    CHECK(p[0] == 255 && p[2] == 255);
  }
  stk__video_color c;
  stk__video_color_init(&c, 0, 0, 1);
  stk__video_pixel(c, 77, 100 * 16 + 8, 200 * 16 + 7, 0, p); /* +0.5 rounds up, +0.44 down */
  CHECK(p[0] == 77 && p[1] == 101 && p[2] == 200);
  /* the sitings: unspecified = left; centre; top-left; bottom */
  const int h[7] = {0, 0, 1, 0, 1, 0, 1}, v[7] = {1, 1, 1, 0, 0, 2, 2};
  for (int loc = 0; loc < 7; loc++) {
    stk__video_color_init(&c, 0, 0, loc);
    CHECK_MSG(c.h_pos2 == h[loc] && c.v_pos2 == v[loc], "chroma location %d", loc);
  }
}

/* one STK_TEST_CASE per line: tests/CMakeLists.txt reads them */
// clang-format off
static const stk_test_case cases[] = {
    STK_TEST_CASE(test_taps_follow_the_siting),
    STK_TEST_CASE(test_across_equals_the_taps),
    STK_TEST_CASE(test_matrix_anchor_points),
};
// clang-format on

int main(int argc, char **argv) {
  if (stk_test_list_cases(cases, STK_TEST_COUNT(cases), argc, argv)) return 0;
  return stk_test_run_cases("test_video_color", cases, STK_TEST_COUNT(cases), argc, argv);
}
