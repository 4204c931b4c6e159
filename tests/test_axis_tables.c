/* tests/test_axis_tables.c: which resampling axes share one weight table (ops/common/axis_tables.h),
 * as the GPU resize and fused resize+crop_mirror_normalize use it: every axis gets the first axis
 * with its key as owner; the owners are exactly the distinct keys; the tables of an axis and its
 * owner are the same bytes (the key holds everything stk__resample_weights reads besides the
 * operator's fixed interp and antialias); no sharing asked, every axis owns its table; the scratch
 * grows only when the batch does. CPU only (the GPU side is in tests/test_gpu_ops.c). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ops/common/axis_tables.h"
#include "ops/augment/resize/resample.h"
#include "case_list.h"
#include "testutil.h"

/* A batch of count axes like an rn50-val batch: ImageNet's few sizes, whole-image intervals
 * (shared), and every 7th axis a random crop interval (its own). */
static void fill_keys(stk__axis_tables *t, int count, uint32_t seed) {
  static const int sizes[][2] = {{500, 375}, {375, 500}, {500, 333}, {333, 500}, {500, 500}, {500, 281}};
  uint32_t r = seed;
  for (int j = 0; j < count; j++) {
    r = r * 1664525u + 1013904223u;
    const int *size = sizes[(r >> 8) % 6];
    stk__axis_key *k = &t->keys[j];
    k->in_size = size[j % 2];
    k->out_size = 256 * size[j % 2] / (size[0] < size[1] ? size[0] : size[1]);
    k->roi_start = 0.0;
    k->roi_end = k->in_size;
    if (j % 7 == 3) { /* a random crop's fractional interval */
      k->roi_start = (double)((r >> 4) % 97) + 0.25;
      k->roi_end = k->roi_start + 100.5;
      k->out_size = 224;
    }
    k->owner = -7;
  }
}

static int same_key(const stk__axis_key *a, const stk__axis_key *b) {
  return a->in_size == b->in_size && a->out_size == b->out_size && a->roi_start == b->roi_start &&
         a->roi_end == b->roi_end;
}

static int distinct_keys(const stk__axis_tables *t, int count) {
  int distinct = 0;
  for (int j = 0; j < count; j++) {
    int seen = 0;
    for (int i = 0; i < j && !seen; i++) seen = same_key(&t->keys[i], &t->keys[j]);
    distinct += !seen;
  }
  return distinct;
}

static void test_owners_are_the_first_of_each_key(void) {
  stk__axis_tables t;
  memset(&t, 0, sizeof t);
  const int count = 512; /* a batch of 256 images, x and y */
  CHECK(stk__axis_tables_reserve(&t, count, NULL) == STK_OK);
  fill_keys(&t, count, 42);
  int owners = stk__axis_tables_share(&t, count, 1);
  CHECK_MSG(owners == distinct_keys(&t, count), "%d owners, %d distinct keys", owners, distinct_keys(&t, count));
  CHECK_MSG(owners < count / 4, "%d owners of %d axes: ImageNet's sizes should share", owners, count);
  for (int j = 0; j < count; j++) {
    const stk__axis_key *k = &t.keys[j], *o = &t.keys[k->owner];
    CHECK(k->owner >= 0 && k->owner <= j && o->owner == k->owner);
    CHECK(same_key(o, k));
    for (int i = 0; i < k->owner; i++) CHECK(!same_key(&t.keys[i], k)); /* no earlier axis has the key */
  }
  stk__axis_tables_free(&t);
}

/* The table an axis gets from its owner is the one it would have made itself. */
static void test_shared_tables_are_the_same_bytes(void) {
  stk__axis_tables t;
  memset(&t, 0, sizeof t);
  const int count = 128;
  CHECK(stk__axis_tables_reserve(&t, count, NULL) == STK_OK);
  fill_keys(&t, count, 7);
  stk__axis_tables_share(&t, count, 1);
  int32_t first_a[1024], first_b[1024];
  static float weights_a[1024 * 64], weights_b[1024 * 64];
  for (int j = 0; j < count; j++) {
    const stk__axis_key *k = &t.keys[j], *o = &t.keys[k->owner];
    int taps_a = stk__resample_weights(k->in_size, k->out_size, k->roi_start, k->roi_end, STK__INTERP_LINEAR, 1,
                                       first_a, weights_a);
    int taps_b = stk__resample_weights(o->in_size, o->out_size, o->roi_start, o->roi_end, STK__INTERP_LINEAR, 1,
                                       first_b, weights_b);
    CHECK(taps_a == taps_b && memcmp(first_a, first_b, (size_t)k->out_size * sizeof *first_a) == 0 &&
          memcmp(weights_a, weights_b, (size_t)k->out_size * (size_t)taps_a * sizeof *weights_a) == 0);
  }
  stk__axis_tables_free(&t);
}

/* share == 0 (STOKER_GPU_SERIAL_WEIGHTS=1): every axis its own table; -0.0 and 0.0 are one key. */
static void test_no_sharing_and_signed_zero(void) {
  stk__axis_tables t;
  memset(&t, 0, sizeof t);
  CHECK(stk__axis_tables_reserve(&t, 64, NULL) == STK_OK);
  fill_keys(&t, 64, 3);
  CHECK(stk__axis_tables_share(&t, 64, 0) == 64);
  for (int j = 0; j < 64; j++) CHECK(t.keys[j].owner == j);
  t.keys[0] = (stk__axis_key){.in_size = 500, .out_size = 341, .roi_start = -0.0, .roi_end = 500.0};
  t.keys[1] = (stk__axis_key){.in_size = 500, .out_size = 341, .roi_start = 0.0, .roi_end = 500.0};
  CHECK(stk__axis_tables_share(&t, 2, 1) == 1 && t.keys[1].owner == 0);
  stk__axis_tables_free(&t);
}

/* Many distinct keys (probing through a full-ish table) and growth only when the batch grows. */
static void test_many_keys_and_grow_only(void) {
  stk__axis_tables t;
  memset(&t, 0, sizeof t);
  uint64_t allocs = 0;
  CHECK(stk__axis_tables_reserve(&t, 4000, &allocs) == STK_OK && allocs == 2);
  for (int j = 0; j < 4000; j++)
    t.keys[j] =
        (stk__axis_key){.in_size = 100 + j % 1000, .out_size = 224, .roi_start = 0.5 * (j / 1000), .roi_end = 90.0};
  CHECK(stk__axis_tables_share(&t, 4000, 1) == 4000);
  CHECK(stk__axis_tables_reserve(&t, 512, &allocs) == STK_OK && allocs == 2);
  CHECK(stk__axis_tables_reserve(&t, 4000, &allocs) == STK_OK && allocs == 2);
  CHECK(stk__axis_tables_reserve(&t, -1, &allocs) == STK_EINVAL);
  stk__axis_tables_free(&t);
  CHECK(t.keys == NULL && t.slots == NULL && t.keys_cap == 0);
}

/* one STK_TEST_CASE per line: tests/CMakeLists.txt reads them */
// clang-format off
static const stk_test_case cases[] = {
    STK_TEST_CASE(test_owners_are_the_first_of_each_key),
    STK_TEST_CASE(test_shared_tables_are_the_same_bytes),
    STK_TEST_CASE(test_no_sharing_and_signed_zero),
    STK_TEST_CASE(test_many_keys_and_grow_only),
};
// clang-format on

int main(int argc, char **argv) {
  return stk_test_run_cases("test_axis_tables", cases, STK_TEST_COUNT(cases), argc, argv);
}
