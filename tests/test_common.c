/* tests/test_common.c: the shared helpers of src/base/common.c -- error formatting (NULL, empty
 * and short buffers), the monotonic clock in both units, allocation counting, the size classes
 * host tensors and the pinned pool share, and skip_bad_files' nearest-good-sample rule on an int
 * array and on a flag inside an array of structs; stk_json_escape (src/base/json.c) on quotes,
 * control characters, valid UTF-8 and bytes that are not. CPU only. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/common.h"
#include "stoker/pipeline.h"
#include "stoker/topology.h"
#include "case_list.h"
#include "testutil.h"

static void test_errorf(void) {
  char buf[8];
  stk__errorf(NULL, 10, "ignored %d", 1); /* must not crash */
  memset(buf, 'x', sizeof buf);
  stk__errorf(buf, 0, "ignored");
  CHECK(buf[0] == 'x');
  stk__errorf(buf, sizeof buf, "%s-%d", "abc", 42);
  CHECK_STR(buf, "abc-42");
  stk__errorf(buf, sizeof buf, "a long message %d", 7);
  CHECK(strlen(buf) == sizeof buf - 1); /* truncated, terminated */
  CHECK_STR(buf, "a long ");
}

static void test_clock(void) {
  double s0 = stk__now();
  uint64_t n0 = stk__now_ns();
  volatile unsigned spin = 0;
  for (unsigned i = 0; i < 1000000; i++) spin += i;
  double s1 = stk__now();
  uint64_t n1 = stk__now_ns();
  CHECK(s1 >= s0);
  CHECK(n1 >= n0);
  /* Same clock: the two readings agree to well under a second. */
  double diff = (double)n0 * 1e-9 - s0;
  CHECK_MSG(diff > -0.5 && diff < 0.5, "stk__now %.6f vs stk__now_ns %.6f", s0, (double)n0 * 1e-9);
}

static void test_count_alloc(void) {
  uint64_t count = 0;
  stk__count_alloc(&count);
  stk__count_alloc(&count);
  stk__count_alloc(NULL); /* not counted, no crash */
  CHECK(count == 2);
}

static void test_size_classes(void) {
  const size_t expected[] = {4096, 6144, 8192, 12288, 16384, 24576, 32768};
  for (int i = 0; i < 7; i++) {
    CHECK(stk__size_class(expected[i]) == expected[i]);
    CHECK(stk__size_class_index(expected[i]) == i);
    if (i > 0) {
      CHECK(stk__size_class(expected[i - 1] + 1) == expected[i]);
      CHECK(stk__size_class_index(expected[i - 1] + 1) == i);
    }
  }
  CHECK(stk__size_class(0) == 4096);
  CHECK(stk__size_class(1) == 4096);
  /* Every class is >= the request and at most 50% larger (half-octave steps). */
  for (size_t bytes = 4097; bytes < ((size_t)1 << 30); bytes = bytes * 5 / 3 + 11) {
    size_t c = stk__size_class(bytes);
    CHECK_MSG(c >= bytes && c <= bytes + bytes / 2, "class %zu for %zu bytes", c, bytes);
  }
}

typedef struct job {
  double payload;
  int failed;
  char name[5];
} job;

static void test_nearest_good_sample(void) {
  const int flags[] = {1, 0, 1, 1, 0, 1};
  const size_t stride = sizeof flags[0];
  CHECK(stk__nearest_good_sample(flags, stride, 6, 0) == 1);
  CHECK(stk__nearest_good_sample(flags, stride, 6, 2) == 1); /* 1 and 4: the nearer */
  CHECK(stk__nearest_good_sample(flags, stride, 6, 3) == 4);
  CHECK(stk__nearest_good_sample(flags, stride, 6, 5) == 4);
  const int tie[] = {0, 1, 0};
  CHECK(stk__nearest_good_sample(tie, stride, 3, 1) == 0); /* lower index on ties */
  const int all_bad[] = {1, 1, 1};
  CHECK(stk__nearest_good_sample(all_bad, stride, 3, 1) == -1);
  const int one[] = {1};
  CHECK(stk__nearest_good_sample(one, stride, 1, 0) == -1);

  job jobs[5];
  memset(jobs, 0, sizeof jobs);
  jobs[0].failed = 1;
  jobs[1].failed = 1;
  jobs[2].failed = 1;
  CHECK(stk__nearest_good_sample(&jobs[0].failed, sizeof jobs[0], 5, 0) == 3);
  CHECK(stk__nearest_good_sample(&jobs[0].failed, sizeof jobs[0], 5, 2) == 3);
  jobs[4].failed = 1;
  CHECK(stk__nearest_good_sample(&jobs[0].failed, sizeof jobs[0], 5, 4) == 3);
}

/* Each case: bytes in, the JSON string body out. */
static void test_json_escape(void) {
  const char *cases[][2] = {
      {"", ""},
      {"plain/img_0.jpg", "plain/img_0.jpg"},
      {"a\"b\\c", "a\\\"b\\\\c"},
      {"line\nbreak\ttab", "line\\nbreak\\u0009tab"},
      {"caf\xc3\xa9", "caf\xc3\xa9"},            /* valid UTF-8 stays as it is */
      {"bad\xff\xc3(", "bad\\udcff\\udcc3("},    /* a lone byte and a cut sequence */
      {"\xed\xa0\x80", "\\udced\\udca0\\udc80"}, /* an encoded surrogate is not valid UTF-8 */
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char *got = stk_json_escape(cases[i][0]);
    CHECK_MSG(got && strcmp(got, cases[i][1]) == 0, "case %zu: got %s", i, got ? got : "(null)");
    stk_free(got);
  }
}

/* one STK_TEST_CASE per line: tests/CMakeLists.txt reads them */
// clang-format off
static const stk_test_case cases[] = {
    STK_TEST_CASE(test_json_escape),
    STK_TEST_CASE(test_errorf),
    STK_TEST_CASE(test_clock),
    STK_TEST_CASE(test_count_alloc),
    STK_TEST_CASE(test_size_classes),
    STK_TEST_CASE(test_nearest_good_sample),
};
// clang-format on

int main(int argc, char **argv) {
  if (stk_test_list_cases(cases, STK_TEST_COUNT(cases), argc, argv)) return 0;
  return stk_test_run_cases("test_common", cases, STK_TEST_COUNT(cases), argc, argv);
}
