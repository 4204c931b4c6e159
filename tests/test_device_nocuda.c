/* tests/test_device_nocuda.c: the device runtime of a build without CUDA (src/device/nocuda plus
 * the shared C of src/device): opening a device fails with STK_ENOTSUP and a message saying the
 * build has no CUDA; every allocation path (device memory, pinned memory, the pinned block pool,
 * GPU tensor lists, pinned host tensors) fails cleanly, leaves its outputs empty and counts
 * nothing; releases of NULL are harmless. Skips in a CUDA build (tests/test_gpu_backend.c covers
 * that runtime). */
#include <stdint.h>
#include <string.h>

#include "base/tensor.h"
#include "device/device.h"
#include "case_list.h"
#include "testutil.h"

static void test_open(void) {
  char err[256] = "";
  CHECK(stk__gpu_open(0, err, sizeof err) == STK_ENOTSUP);
  CHECK_MSG(strstr(err, "device_id 0") && strstr(err, "without CUDA"), "message: %s", err);
  CHECK(stk__gpu_set_device(0) == STK_ENOTSUP);
  CHECK(stk__gpu_device_numa_node(0) == -1);
  CHECK(stk__gpu_bytes_held() == 0);
}

static void test_streams_and_events(void) {
  void *stream = (void *)&stream, *event = (void *)&event;
  CHECK(stk__gpu_stream_create(&stream, 0) == STK_ENOTSUP);
  CHECK(stream == NULL);
  CHECK(stk__gpu_event_create(&event) == STK_ENOTSUP);
  CHECK(event == NULL);
  CHECK(stk__gpu_event_done(NULL) == -1);
  stk__gpu_stream_destroy(NULL);
  stk__gpu_event_destroy(NULL);
  char a = 1, b = 2;
  stk__gpu_copy_part part = {&a, &b, 1};
  CHECK(stk__gpu_copy_parts_async(&part, 1, NULL) == STK_ENOTSUP);
  CHECK(a == 1); /* nothing copied */
  CHECK(stk__gpu_copy_parts_async(NULL, 0, NULL) == STK_OK);
}

static void test_allocations(void) {
  uint64_t count = 0;
  void *ptr = (void *)&ptr;
  CHECK(stk__gpu_malloc(&ptr, 4096, &count) == STK_ENOTSUP);
  CHECK(ptr == NULL);
  ptr = (void *)&ptr;
  int placed = 5;
  CHECK(stk__gpu_pinned_alloc(&ptr, 4096, 0, &placed, &count) == STK_ENOTSUP);
  CHECK(ptr == NULL && placed == -1);
  size_t bytes = 5000;
  ptr = (void *)&ptr;
  CHECK(stk__gpu_pinned_block_get(&ptr, &bytes, 0, &count) == STK_ENOTSUP);
  CHECK(ptr == NULL);
  CHECK(count == 0);
  stk__gpu_free(NULL, NULL);
  stk__gpu_pinned_free(NULL);
  stk__gpu_pinned_block_put(NULL, 4096, 0);
}

static void test_tensor_list(void) {
  uint64_t count = 0;
  stk__tensor_list list;
  memset(&list, 0, sizeof list);
  CHECK(stk__gpu_tensor_list_reserve(&list, 4, 1024, &count) == STK_ENOTSUP);
  CHECK(list.base == NULL && list.samples == NULL && list.count == 0);
  CHECK(stk__gpu_tensor_list_reserve(&list, -1, 1024, &count) == STK_EINVAL);
  const size_t sizes[2] = {256, 512};
  CHECK(stk__gpu_tensor_list_reserve_sizes(&list, 2, sizes, &count) == STK_ENOTSUP);
  CHECK(stk__gpu_tensor_list_reserve_sizes(&list, 2, NULL, &count) == STK_EINVAL);
  CHECK(list.base == NULL && list.samples == NULL && list.count == 0);
  CHECK(count == 0);
  stk__gpu_tensor_list_free(&list);
  CHECK(list.samples == NULL && list.count == 0);
}

static void test_pinned_host_tensor(void) {
  uint64_t count = 0;
  stk__tensor t;
  memset(&t, 0, sizeof t);
  t.pinned = 1;
  t.numa_node = -1;
  t.alloc_count = &count;
  const int64_t shape[3] = {8, 8, 3};
  CHECK(stk__tensor_resize(&t, STK_DTYPE_UINT8, 3, shape, "HWC") == STK_ENOTSUP);
  CHECK(t.data == NULL && t.capacity == 0 && count == 0);
  stk__tensor_free(&t);
  t.pinned = 0; /* the same tensor in plain host memory works */
  CHECK(stk__tensor_resize(&t, STK_DTYPE_UINT8, 3, shape, "HWC") == STK_OK);
  CHECK(t.data != NULL && t.nbytes == 192 && count == 1);
  stk__tensor_free(&t);
}

/* one STK_TEST_CASE per line: tests/CMakeLists.txt reads them */
// clang-format off
static const stk_test_case cases[] = {
    STK_TEST_CASE(test_open),
    STK_TEST_CASE(test_streams_and_events),
    STK_TEST_CASE(test_allocations),
    STK_TEST_CASE(test_tensor_list),
    STK_TEST_CASE(test_pinned_host_tensor),
};
// clang-format on

int main(int argc, char **argv) {
  if (stk_test_list_cases(cases, STK_TEST_COUNT(cases), argc, argv)) return 0;
  if (stk__gpu_built()) TEST_SKIP("CUDA build: the no-CUDA twin of src/device is not linked in");
  return stk_test_run_cases("test_device_nocuda", cases, STK_TEST_COUNT(cases), argc, argv);
}
