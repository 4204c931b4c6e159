/* tests/test_tensor_list_borrow.c: stk__gpu_tensor_list_borrow, what a slot's device copy of an
 * upload does when every slot shares one copy (STOKER_SHARED_UPLOAD, exec/gpu_stage.c): its views
 * point at the shared copy's samples, it takes none of that storage (freeing the slot's list must
 * not free it), a smaller batch then a full one reuses its views array, and a count past the shared
 * copy's is refused. Needs no GPU: borrowing allocates no device memory, so host arrays stand in for
 * the shared copy's storage (only addresses are read). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "device/device.h"
#include "case_list.h"
#include "testutil.h"

#define N 4
static uint8_t storage[N * 64];
static stk__tensor shared_samples[N];

/* The shared copy: N samples of 64 bytes back to back in storage. */
static stk__tensor_list shared_copy(void) {
  memset(shared_samples, 0, sizeof shared_samples);
  for (int s = 0; s < N; s++) {
    shared_samples[s].data = storage + (size_t)s * 64;
    shared_samples[s].nbytes = 64;
    shared_samples[s].device = STK_DEVICE_GPU;
  }
  stk__tensor_list l;
  memset(&l, 0, sizeof l);
  l.count = N;
  l.samples = shared_samples;
  l.base = storage;
  l.base_capacity = sizeof storage;
  l.device = STK_DEVICE_GPU;
  return l;
}

static void test_views_point_at_the_shared_samples(void) {
  stk__tensor_list shared = shared_copy();
  stk__tensor_list slot;
  memset(&slot, 0, sizeof slot);
  uint64_t allocs = 0;
  CHECK(stk__gpu_tensor_list_borrow(&slot, &shared, N, &allocs) == STK_OK);
  CHECK(slot.count == N && slot.samples_capacity >= N && slot.device == STK_DEVICE_GPU);
  for (int s = 0; s < N; s++) {
    CHECK(slot.samples[s].data == shared.samples[s].data);
    CHECK(slot.samples[s].capacity == 0); /* borrowed: nothing of its own to give back */
    CHECK(slot.samples[s].device == STK_DEVICE_GPU);
  }
  CHECK(slot.base == NULL && slot.base_capacity == 0); /* the slot took none of the storage */
  CHECK(allocs == 1);                                  /* the views array, once */
  free(slot.samples);
}

static void test_smaller_then_full_batch_reuses_the_views(void) {
  stk__tensor_list shared = shared_copy();
  stk__tensor_list slot;
  memset(&slot, 0, sizeof slot);
  uint64_t allocs = 0;
  CHECK(stk__gpu_tensor_list_borrow(&slot, &shared, N, &allocs) == STK_OK);
  CHECK(stk__gpu_tensor_list_borrow(&slot, &shared, 2, &allocs) == STK_OK); /* a short last batch */
  CHECK(slot.count == 2);
  CHECK(stk__gpu_tensor_list_borrow(&slot, &shared, N, &allocs) == STK_OK);
  CHECK(slot.count == N && slot.samples[N - 1].data == storage + (N - 1) * 64);
  CHECK_MSG(allocs == 1, "%llu allocations for the views (1 expected)", (unsigned long long)allocs);
  free(slot.samples);
}

static void test_more_than_the_shared_copy_holds_is_refused(void) {
  stk__tensor_list shared = shared_copy();
  stk__tensor_list slot;
  memset(&slot, 0, sizeof slot);
  uint64_t allocs = 0;
  CHECK(stk__gpu_tensor_list_borrow(&slot, &shared, N + 1, &allocs) == STK_EINVAL);
  CHECK(stk__gpu_tensor_list_borrow(&slot, NULL, 1, &allocs) == STK_EINVAL);
  CHECK(stk__gpu_tensor_list_borrow(&slot, &shared, -1, &allocs) == STK_EINVAL);
  CHECK(slot.samples == NULL && allocs == 0);
}

/* one STK_TEST_CASE per line: tests/CMakeLists.txt reads them */
// clang-format off
static const stk_test_case cases[] = {
    STK_TEST_CASE(test_views_point_at_the_shared_samples),
    STK_TEST_CASE(test_smaller_then_full_batch_reuses_the_views),
    STK_TEST_CASE(test_more_than_the_shared_copy_holds_is_refused),
};
// clang-format on

int main(int argc, char **argv) { return stk_test_run_cases(__FILE__, cases, STK_TEST_COUNT(cases), argc, argv); }
