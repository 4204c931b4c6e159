/* tests/test_tensor_list_dense.c: when the samples of a list form one [N, ...] tensor
 * (stk__tensor_list_is_dense: what marks a GPU list dense once its samples have shapes, for
 * stk_batch_tensor and DLPack): the same dtype and shape, back to back from the list's base. A
 * ragged list (decoded images of different sizes) and equal shapes in rooms padded past their size
 * (the mixed decoder's 256-byte rooms) are not. Plain host lists stand in for GPU ones (the check
 * reads only shapes and addresses). */
#include <stdint.h>
#include <string.h>

#include "base/tensor.h"
#include "case_list.h"
#include "testutil.h"

#define N 4
static uint8_t storage[N * 256];
static stk__tensor samples[N];

/* A list of N HWC u8 samples of h x w x 3, sample s at storage + s * stride. */
static stk__tensor_list list_of(int h, int w, size_t stride) {
  memset(samples, 0, sizeof samples);
  for (int s = 0; s < N; s++) {
    samples[s].dtype = STK_DTYPE_UINT8;
    samples[s].ndim = 3;
    samples[s].shape[0] = h, samples[s].shape[1] = w, samples[s].shape[2] = 3;
    samples[s].nbytes = (size_t)h * w * 3;
    samples[s].data = storage + (size_t)s * stride;
  }
  stk__tensor_list l;
  memset(&l, 0, sizeof l);
  l.count = N;
  l.samples = samples;
  l.base = storage;
  return l;
}

static void test_equal_shapes_back_to_back_are_one_tensor(void) {
  stk__tensor_list l = list_of(8, 8, 8 * 8 * 3);
  CHECK(stk__tensor_list_is_dense(&l, N) == 1);
  l.base = NULL; /* no base: from sample 0 */
  CHECK(stk__tensor_list_is_dense(&l, N) == 1);
  CHECK(stk__tensor_list_is_dense(&l, 0) == 1);
}

static void test_ragged_shapes_are_not(void) {
  stk__tensor_list l = list_of(8, 8, 8 * 8 * 3);
  samples[2].shape[0] = 4, samples[2].nbytes = 4 * 8 * 3; /* a smaller decoded image */
  CHECK(stk__tensor_list_is_dense(&l, N) == 0);
  CHECK(stk__tensor_list_is_dense(&l, 2) == 1); /* the first two alone are */
  l = list_of(8, 8, 8 * 8 * 3);
  samples[3].dtype = STK_DTYPE_INT32;
  CHECK(stk__tensor_list_is_dense(&l, N) == 0);
}

static void test_equal_shapes_in_padded_rooms_are_not(void) {
  stk__tensor_list l = list_of(8, 8, 256); /* 192 bytes each in 256-byte rooms */
  CHECK(stk__tensor_list_is_dense(&l, N) == 0);
  CHECK(stk__tensor_list_is_dense(&l, 1) == 1);
}

static void test_no_samples_is_not(void) {
  stk__tensor_list l = list_of(8, 8, 8 * 8 * 3);
  l.samples = NULL;
  CHECK(stk__tensor_list_is_dense(&l, N) == 0);
  l = list_of(8, 8, 8 * 8 * 3);
  l.base = storage + 1; /* samples not where the base says */
  CHECK(stk__tensor_list_is_dense(&l, N) == 0);
}

/* one STK_TEST_CASE per line: tests/CMakeLists.txt reads them */
// clang-format off
static const stk_test_case cases[] = {
    STK_TEST_CASE(test_equal_shapes_back_to_back_are_one_tensor),
    STK_TEST_CASE(test_ragged_shapes_are_not),
    STK_TEST_CASE(test_equal_shapes_in_padded_rooms_are_not),
    STK_TEST_CASE(test_no_samples_is_not),
};
// clang-format on

int main(int argc, char **argv) { return stk_test_run_cases(__FILE__, cases, STK_TEST_COUNT(cases), argc, argv); }
