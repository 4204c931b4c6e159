/* tests/test_gpu_backend.c: the device runtime on CUDA (src/device/device.h, src/device/cuda):
 * streams and events, counted device and pinned allocations, pinned memory placed on the GPU's
 * NUMA node (checked via the page placement), grow-only GPU tensor lists (no allocation once
 * warm), and an absurd device allocation failing with STK_ENOMEM instead of crashing, and frees
 * that do not wait for other streams' work, and batched device copies. Skips without a CUDA device. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "device/device.h"
#include "gpu_testutil.h"
#include "ops/common/gpu_ops.h"
#include "case_list.h"
#include "testutil.h"

#if defined(STOKER_HAVE_CUDA)
#include <cuda_runtime_api.h>

/* stk__gpu_copy_parts_async: 400 parts (three launches of at most 160), of sizes from 0 bytes to
 * 1 MiB + 5 and every alignment class (16-byte pairs, odd offsets, pairs whose misalignments
 * differ), copy exactly their bytes and nothing around them. */
static void test_copy_parts(void) {
  enum { PARTS = 400 };
  const size_t span = (size_t)5 << 20;
  uint8_t *src = NULL, *dst = NULL;
  CHECK(stk__gpu_malloc((void **)&src, span, NULL) == STK_OK);
  CHECK(stk__gpu_malloc((void **)&dst, span, NULL) == STK_OK);
  uint8_t *pattern = malloc(span), *want = malloc(span), *got = malloc(span);
  CHECK(pattern && want && got);
  for (size_t i = 0; i < span; i++) pattern[i] = (uint8_t)(i * 131 + (i >> 9) + 7);
  CHECK(stk__gpu_memcpy_h2d_async(src, pattern, span, NULL) == STK_OK);
  CHECK(cudaMemset(dst, 0xA5, span) == cudaSuccess);
  memset(want, 0xA5, span);
  static const size_t sizes[] = {0, 1, 15, 16, 17, 255, 4099, 65536};
  static const size_t src_offsets[] = {0, 1, 16, 3, 8};
  static const size_t dst_offsets[] = {0, 1, 16, 5, 8};
  stk__gpu_copy_part parts[PARTS];
  size_t src_at = 0, dst_at = 0;
  for (int i = 0; i < PARTS; i++) {
    size_t bytes = i == 7 ? ((size_t)1 << 20) + 5 : sizes[i % 8];
    size_t so = src_at + src_offsets[i % 5], d = dst_at + dst_offsets[(i / 5) % 5];
    CHECK(so + bytes <= span && d + bytes <= span);
    parts[i] = (stk__gpu_copy_part){dst + d, src + so, bytes};
    memcpy(want + d, pattern + so, bytes);
    src_at = (so + bytes + 32) & ~(size_t)15;
    dst_at = (d + bytes + 48) & ~(size_t)15;
  }
  CHECK(stk__gpu_copy_parts_async(parts, 0, NULL) == STK_OK);
  CHECK(stk__gpu_copy_parts_async(NULL, 1, NULL) == STK_EINVAL);
  CHECK(stk__gpu_copy_parts_async(parts, PARTS, NULL) == STK_OK);
  CHECK(stk__gpu_memcpy_d2h(got, dst, span, NULL) == STK_OK);
  CHECK(memcmp(got, want, span) == 0);
  free(pattern);
  free(want);
  free(got);
  stk__gpu_free(src, NULL);
  stk__gpu_free(dst, NULL);
}

/* HIGH gets the greatest priority the device allows, NORMAL CUDA's default (0). */
static void test_stream_priority(void) {
  int least = 1, greatest = 1;
  CHECK(cudaDeviceGetStreamPriorityRange(&least, &greatest) == cudaSuccess);
  void *high = NULL, *normal = NULL;
  CHECK(stk__gpu_stream_create(&high, STK_STREAM_PRIORITY_HIGH) == STK_OK);
  CHECK(stk__gpu_stream_create(&normal, STK_STREAM_PRIORITY_NORMAL) == STK_OK);
  int p_high = 99, p_normal = 99;
  CHECK(cudaStreamGetPriority((cudaStream_t)high, &p_high) == cudaSuccess);
  CHECK(cudaStreamGetPriority((cudaStream_t)normal, &p_normal) == cudaSuccess);
  CHECK(p_high == greatest);
  CHECK(p_normal == 0);
  CHECK(greatest < least ? p_high < p_normal : p_high == p_normal); /* devices without priorities */
  stk__gpu_stream_destroy(high);
  stk__gpu_stream_destroy(normal);
}

static void test_stream_event_copy(void) {
  void *stream = NULL, *event = NULL;
  CHECK(stk__gpu_stream_create(&stream, STK_STREAM_PRIORITY_NORMAL) == STK_OK);
  CHECK(stk__gpu_event_create(&event) == STK_OK);
  uint64_t allocs = 0;
  void *dev = NULL, *pinned = NULL;
  const size_t bytes = 1 << 20;
  CHECK(stk__gpu_malloc(&dev, bytes, &allocs) == STK_OK);
  CHECK(allocs == 1);
  CHECK(stk__gpu_bytes_held() >= bytes);
  int placed = -2;
  const double pinning = stk__gpu_pinning_seconds();
  CHECK(stk__gpu_pinned_alloc(&pinned, bytes, -1, &placed, &allocs) == STK_OK);
  CHECK(allocs == 2);
  CHECK(stk__gpu_pinning_seconds() > pinning); /* the pinning clock ran over the call */
  uint8_t *host = (uint8_t *)pinned;
  for (size_t i = 0; i < bytes; i++) host[i] = (uint8_t)(i * 7 + 3);
  CHECK(stk__gpu_memcpy_h2d_async(dev, pinned, bytes, stream) == STK_OK);
  CHECK(stk__gpu_event_record(event, stream) == STK_OK);
  CHECK(stk__gpu_event_synchronize(event) == STK_OK);
  uint8_t *back = malloc(bytes);
  CHECK(stk__gpu_memcpy_d2h(back, dev, bytes, stream) == STK_OK);
  CHECK(memcmp(back, host, bytes) == 0);
  void *other = NULL;
  CHECK(stk__gpu_stream_create(&other, STK_STREAM_PRIORITY_HIGH) == STK_OK);
  CHECK(stk__gpu_stream_wait_event(other, event) == STK_OK);
  CHECK(stk__gpu_stream_synchronize(other) == STK_OK);
  free(back);
  uint64_t held = stk__gpu_bytes_held();
  stk__gpu_free(dev, NULL);
  CHECK(stk__gpu_bytes_held() == held - bytes);
  stk__gpu_pinned_free(pinned);
  stk__gpu_stream_destroy(other);
  stk__gpu_stream_destroy(stream);
  stk__gpu_event_destroy(event);
}

static void test_pinned_numa_placement(void) {
  int node = stk__gpu_device_numa_node(0);
  printf("GPU 0 NUMA node (sysfs): %d\n", node);
  if (node < 0) node = 0; /* unknown: the design resolves it to node 0 */
  void *pinned = NULL;
  int placed = -2;
  uint64_t allocs = 0;
  CHECK(stk__gpu_pinned_alloc(&pinned, 8 << 20, node, &placed, &allocs) == STK_OK);
  printf("pinned buffer asked on node %d, first page on node %d\n", node, placed);
  CHECK_MSG(placed == node || placed == -1, "pinned memory landed on node %d, asked for %d", placed, node);
  stk__gpu_pinned_free(pinned);
}

/* A reserve makes one chunk now; blocks carved from it later cost no page-locked allocation. */
static void test_pinned_reserve(void) {
  uint64_t allocs = 0;
  const uint64_t held = stk__gpu_pinned_bytes_held();
  CHECK(stk__gpu_pinned_reserve((size_t)96 << 20, 0, &allocs) == STK_OK);
  CHECK(allocs == 1 && stk__gpu_pinned_bytes_held() == held + ((uint64_t)96 << 20));
  CHECK(stk__gpu_pinned_reserve((size_t)32 << 20, 0, &allocs) == STK_OK && allocs == 1); /* room left */
  void *blocks[40];
  size_t sizes[40];
  for (int i = 0; i < 40; i++) { /* 40 x 1 MiB (as size classes round): well inside the reserve */
    sizes[i] = (size_t)1 << 20;
    CHECK(stk__gpu_pinned_block_get(&blocks[i], &sizes[i], 0, &allocs) == STK_OK && blocks[i]);
  }
  CHECK_MSG(allocs == 1, "%llu page-locked allocations after a 96 MiB reserve", (unsigned long long)allocs);
  memset(blocks[39], 0x5a, sizes[39]); /* the memory is there */
  for (int i = 0; i < 40; i++) stk__gpu_pinned_block_put(blocks[i], sizes[i], 0);
}

/* STOKER_TRACE_ALLOC=1 turns the allocation trace on (its line goes to stderr, in the test's log). */
static void test_alloc_trace(void) {
  setenv("STOKER_TRACE_ALLOC", "1", 1); /* read at each allocation: earlier cases in this process do not matter */
  CHECK(stk__alloc_trace_clock() > 0.0);
  void *p = NULL;
  uint64_t allocs = 0;
  CHECK(stk__gpu_pinned_alloc(&p, (size_t)1 << 20, -1, NULL, &allocs) == STK_OK && allocs == 1);
  stk__gpu_pinned_free(p);
}

static void test_tensor_list_grow_only(void) {
  stk__tensor_list list;
  memset(&list, 0, sizeof list);
  uint64_t allocs = 0;
  CHECK(stk__gpu_tensor_list_reserve(&list, 8, 1000, &allocs) == STK_OK);
  uint64_t warm = allocs;
  CHECK(warm >= 1);
  CHECK(list.count == 8 && list.dense && list.device == STK_DEVICE_GPU);
  /* Samples lie back to back (exactly sample_bytes apart) so an equal-shaped batch is one dense
   * [N, ...] tensor that stk_batch_tensor / DLPack export without a copy; the base is 256-byte
   * aligned, and callers that need every sample 256-aligned (the decoder) pass a multiple of 256. */
  CHECK(list.base == list.samples[0].data);
  CHECK(((uintptr_t)list.base & 255) == 0);
  for (int i = 0; i < 8; i++) {
    CHECK(list.samples[i].data != NULL);
    CHECK(((uintptr_t)list.samples[i].data & 7) == 0); /* 1000 = 8 * 125: aligned for 8-byte dtypes */
    if (i) CHECK((uint8_t *)list.samples[i].data - (uint8_t *)list.samples[i - 1].data == 1000);
  }
  /* Same or smaller requests never allocate again. */
  for (int round = 0; round < 20; round++)
    CHECK(stk__gpu_tensor_list_reserve(&list, 8 - (round % 3), 1000 - round, &allocs) == STK_OK);
  CHECK_MSG(allocs == warm, "reserve allocated %llu times after warm-up", (unsigned long long)(allocs - warm));
  /* A 256-multiple sample size keeps every sample 256-byte aligned. */
  CHECK(stk__gpu_tensor_list_reserve(&list, 8, 1024, &allocs) == STK_OK);
  for (int i = 0; i < 8; i++) CHECK(((uintptr_t)list.samples[i].data & 255) == 0);
  CHECK(list.count == 8);
  CHECK(stk__gpu_tensor_list_reserve(&list, 8, 100000, &allocs) == STK_OK);
  CHECK(allocs > warm);
  stk__gpu_tensor_list_free(&list);
  CHECK(list.base == NULL && list.samples == NULL);
}

/* reserve_exact: the first storage is the samples' bytes and no more (reserve adds a quarter); the
 * same or a smaller batch never allocates again; a batch of more samples grows it, with reserve's
 * headroom (variable batch sizes: the demand moves). */
static void test_tensor_list_exact(void) {
  stk__tensor_list list;
  memset(&list, 0, sizeof list);
  uint64_t allocs = 0;
  CHECK(stk__gpu_tensor_list_reserve_exact(&list, 8, 1024, &allocs) == STK_OK);
  CHECK(allocs >= 1 && list.count == 8 && list.dense && list.base == list.samples[0].data);
  CHECK_MSG(list.base_capacity == 8 * 1024, "capacity %zu, want 8192", list.base_capacity);
  for (int i = 1; i < 8; i++) CHECK((uint8_t *)list.samples[i].data - (uint8_t *)list.samples[i - 1].data == 1024);
  uint64_t warm = allocs;
  for (int round = 0; round < 20; round++)
    CHECK(stk__gpu_tensor_list_reserve_exact(&list, 8 - (round % 3), 1024 - round, &allocs) == STK_OK);
  CHECK_MSG(allocs == warm, "reserve_exact allocated %llu times for batches no larger",
            (unsigned long long)(allocs - warm));
  CHECK(stk__gpu_tensor_list_reserve_exact(&list, 9, 1024, &allocs) == STK_OK);
  CHECK(allocs > warm && list.count == 9);
  CHECK_MSG(list.base_capacity == 9 * 1024 + 9 * 1024 / 4 + 256, "capacity %zu after growing", list.base_capacity);
  stk__gpu_tensor_list_free(&list);
  CHECK(list.base == NULL && list.samples == NULL);
}

/* reserve_sizes: each sample its own bytes, back to back (the mixed decoder's ragged batches hold
 * the sum of their images, not count times the largest); equal sizes are reserve's dense layout;
 * the same or a smaller sum never allocates again; bad arguments change nothing. */
static void test_tensor_list_sizes(void) {
  stk__tensor_list list;
  memset(&list, 0, sizeof list);
  uint64_t allocs = 0;
  const size_t ragged[5] = {512, 2048, 256, 1024, 768};
  CHECK(stk__gpu_tensor_list_reserve_sizes(&list, 5, ragged, &allocs) == STK_OK);
  uint64_t warm = allocs;
  CHECK(warm >= 1 && list.count == 5 && list.device == STK_DEVICE_GPU);
  CHECK(list.base == list.samples[0].data);
  size_t offset = 0;
  for (int i = 0; i < 5; i++) {
    CHECK_MSG((uint8_t *)list.samples[i].data - (uint8_t *)list.base == (ptrdiff_t)offset,
              "sample %d at %td, expected %zu", i, (uint8_t *)list.samples[i].data - (uint8_t *)list.base, offset);
    CHECK(((uintptr_t)list.samples[i].data & 255) == 0); /* 256-multiples stay 256-aligned */
    CHECK(list.samples[i].device == STK_DEVICE_GPU && list.samples[i].capacity == 0);
    offset += ragged[i];
  }
  CHECK(list.base_capacity >= offset && list.base_capacity <= 5 * 2048 + 5 * 2048 / 4 + 256); /* <= reserve's */
  /* Every byte of every sample is writable: one fill per sample, read back at its last byte. */
  for (int i = 0; i < 5; i++) CHECK(cudaMemset(list.samples[i].data, i + 1, ragged[i]) == cudaSuccess);
  CHECK(cudaDeviceSynchronize() == cudaSuccess);
  for (int i = 0; i < 5; i++) {
    uint8_t last = 0;
    CHECK(cudaMemcpy(&last, (uint8_t *)list.samples[i].data + ragged[i] - 1, 1, cudaMemcpyDeviceToHost) == cudaSuccess);
    CHECK_MSG(last == i + 1, "sample %d's last byte is %d: a neighbour overlaps it", i, last);
  }
  /* Different sizes, same or smaller sum: no allocation. */
  const size_t again[5] = {2048, 256, 1024, 768, 512};
  for (int round = 0; round < 10; round++)
    CHECK(stk__gpu_tensor_list_reserve_sizes(&list, 5 - (round % 2), again, &allocs) == STK_OK);
  CHECK_MSG(allocs == warm, "reserve_sizes allocated %llu times after warm-up", (unsigned long long)(allocs - warm));
  /* Equal sizes: reserve's layout, which settle calls dense. */
  const size_t equal[4] = {1024, 1024, 1024, 1024};
  CHECK(stk__gpu_tensor_list_reserve_sizes(&list, 4, equal, &allocs) == STK_OK);
  for (int i = 0; i < 4; i++) {
    stk__tensor *t = &list.samples[i];
    t->dtype = STK_DTYPE_UINT8, t->ndim = 1, t->shape[0] = 1024, t->nbytes = 1024;
    CHECK((uint8_t *)t->data - (uint8_t *)list.base == 1024 * i);
  }
  stk__gpu_tensor_list_settle(&list);
  CHECK(list.dense);
  list.samples[2].nbytes = list.samples[2].shape[0] = 512; /* one smaller image: ragged */
  stk__gpu_tensor_list_settle(&list);
  CHECK(!list.dense);
  /* A large ragged batch holds about its sum, not count times its largest: 63 small images and one
   * 64 KiB one take a quarter of a MiB with headroom, where reserve would take 5 MiB. */
  size_t *many = (size_t *)malloc(64 * sizeof *many);
  for (int i = 0; i < 64; i++) many[i] = i == 17 ? 65536 : 256;
  stk__tensor_list wide;
  memset(&wide, 0, sizeof wide);
  CHECK(stk__gpu_tensor_list_reserve_sizes(&wide, 64, many, &allocs) == STK_OK);
  CHECK_MSG(wide.base_capacity >= 63 * 256 + 65536 && wide.base_capacity < (size_t)256 << 10,
            "64 ragged samples took %zu bytes", wide.base_capacity);
  CHECK((uint8_t *)wide.samples[18].data - (uint8_t *)wide.samples[17].data == 65536);
  /* Any later batch of 64 no larger than the first's largest fits without growing once the sums
   * of warm-up batches have reached it (here: the worst one, every sample 65536 bytes, grows once
   * to reserve's size and never again). */
  uint64_t before = allocs;
  for (int i = 0; i < 64; i++) many[i] = 65536;
  CHECK(stk__gpu_tensor_list_reserve_sizes(&wide, 64, many, &allocs) == STK_OK);
  CHECK(allocs == before + 1 && wide.base_capacity == 64 * 65536 + 64 * 65536 / 4 + 256);
  for (int round = 0; round < 5; round++) {
    for (int i = 0; i < 64; i++) many[i] = (size_t)256 << ((i + round) % 9);
    CHECK(stk__gpu_tensor_list_reserve_sizes(&wide, 64, many, &allocs) == STK_OK);
  }
  CHECK(allocs == before + 1);
  free(many);
  stk__gpu_tensor_list_free(&wide);
  /* Bad arguments: an error, the list as it was. */
  void *base = list.base;
  CHECK(stk__gpu_tensor_list_reserve_sizes(&list, -1, equal, &allocs) == STK_EINVAL);
  CHECK(stk__gpu_tensor_list_reserve_sizes(&list, 2, NULL, &allocs) == STK_EINVAL);
  const size_t overflow[2] = {SIZE_MAX, 2};
  CHECK(stk__gpu_tensor_list_reserve_sizes(&list, 2, overflow, &allocs) == STK_ENOMEM);
  CHECK(list.base == base && list.count == 4);
  /* A sum past what the list holds grows it. */
  const size_t big[2] = {(size_t)1 << 20, (size_t)1 << 20};
  CHECK(stk__gpu_tensor_list_reserve_sizes(&list, 2, big, &allocs) == STK_OK);
  CHECK(allocs > warm && list.base_capacity >= ((size_t)2 << 20));
  stk__gpu_tensor_list_free(&list);
  CHECK(list.base == NULL && list.samples == NULL);
}

static void test_device_oom(void) {
  void *p = (void *)1;
  uint64_t allocs = 0;
  stk_status st = stk__gpu_malloc(&p, (size_t)1 << 50, &allocs); /* a petabyte */
  CHECK_MSG(st == STK_ENOMEM, "absurd cudaMalloc gave %s", stk_status_name(st));
  CHECK(p == NULL && allocs == 0);
  /* The device still works afterwards. */
  CHECK(stk__gpu_malloc(&p, 4096, &allocs) == STK_OK);
  stk__gpu_free(p, NULL);
  stk__tensor_list list;
  memset(&list, 0, sizeof list);
  CHECK(stk__gpu_tensor_list_reserve(&list, 4, (size_t)1 << 48, &allocs) == STK_ENOMEM);
  stk__gpu_tensor_list_free(&list);
}

static void test_arena(void) {
  stk__gpu_arena arena;
  memset(&arena, 0, sizeof arena);
  uint64_t allocs = 0;
  void *stream = NULL;
  CHECK(stk__gpu_stream_create(&stream, STK_STREAM_PRIORITY_NORMAL) == STK_OK);
  for (int round = 0; round < 5; round++) {
    CHECK(stk__gpu_arena_reserve(&arena, 4096, 0, &allocs) == STK_OK);
    size_t a = stk__gpu_arena_push(&arena, 13);
    size_t b = stk__gpu_arena_push(&arena, 100);
    CHECK(a == 0 && b == 16);
    memset(arena.host + b, round, 100);
    CHECK(stk__gpu_arena_upload(&arena, stream) == STK_OK);
    uint8_t back[100];
    CHECK(stk__gpu_memcpy_d2h(back, arena.device + b, 100, stream) == STK_OK);
    CHECK(back[0] == round && back[99] == round);
  }
  /* every pair (pinned + device) made once, all at the first reserve */
  CHECK_MSG(allocs == 2 * STK__GPU_ARENA_RING, "arena allocated %llu times (want pinned + device once per pair)",
            (unsigned long long)allocs);
  stk__gpu_arena_free(&arena);
  stk__gpu_stream_destroy(stream);
}

/* Giving device memory back must not wait for other streams' work: cudaFree waits for the whole
 * device, so a training loop's queued kernels stalled the loader whenever a buffer grew. With a
 * stream held at a gate: allocate, free, and grow a tensor list (which frees its old storage). */
static void test_free_waits_for_nothing(void) {
  void *held = NULL;
  CHECK(stk__gpu_stream_create(&held, STK_STREAM_PRIORITY_NORMAL) == STK_OK);
  gpu_gate gate;
  CHECK(gpu_gate_close(&gate, held, 20) == 0);
  uint64_t allocs = 0;
  void *p = NULL;
  CHECK(stk__gpu_malloc(&p, (size_t)1 << 20, &allocs) == STK_OK);
  stk__gpu_free(p, NULL);
  stk__tensor_list list;
  memset(&list, 0, sizeof list);
  CHECK(stk__gpu_tensor_list_reserve(&list, 4, 1024, &allocs) == STK_OK);
  CHECK(stk__gpu_tensor_list_reserve(&list, 4, (size_t)1 << 20, &allocs) == STK_OK);
  CHECK(allocs >= 3);
  int forced = gpu_gate_forced(&gate);
  gpu_gate_open(&gate, held);
  CHECK_MSG(!forced, "freeing device memory waited for another stream's work");
  stk__gpu_tensor_list_free(&list);
  stk__gpu_stream_destroy(held);
}

/* one STK_TEST_CASE per line: tests/CMakeLists.txt reads them */
// clang-format off
static const stk_test_case cases[] = {
    STK_TEST_CASE(test_stream_priority),
    STK_TEST_CASE(test_stream_event_copy),
    STK_TEST_CASE(test_copy_parts),
    STK_TEST_CASE(test_pinned_numa_placement),
    STK_TEST_CASE(test_pinned_reserve),
    STK_TEST_CASE(test_alloc_trace),
    STK_TEST_CASE(test_tensor_list_grow_only),
    STK_TEST_CASE(test_tensor_list_sizes),
    STK_TEST_CASE(test_tensor_list_exact),
    STK_TEST_CASE(test_device_oom),
    STK_TEST_CASE(test_arena),
    STK_TEST_CASE(test_free_waits_for_nothing),
};
// clang-format on

int main(int argc, char **argv) {
  if (stk_test_list_cases(cases, STK_TEST_COUNT(cases), argc, argv)) return 0;
  gpu_test_require_device(0);
  return stk_test_run_cases("test_gpu_backend", cases, STK_TEST_COUNT(cases), argc, argv);
}
#else
int main(void) { TEST_SKIP("this stoker was built without CUDA"); }
#endif
