/* tests/test_pinned_pool.c: the pinned block pool's rules (src/device/pinned_pool.c), on any host:
 * the pool pins through a backing this test installs (plain malloc, counted, and able to hold a
 * pinning until the test lets it go), so no GPU is needed. Checked: a class with no free block
 * takes a free block up to two classes (twice the size) larger, and no larger; the unused end of
 * a chunk becomes free blocks when the next chunk replaces it; while one thread pins a chunk,
 * other threads still take free blocks (the lock is not held over the pinning); two threads that
 * need a new chunk at once pin one, not two. Each case uses its own NUMA node's lists, so the
 * cases also pass one after another in one process. */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "device/device.h"
#include "case_list.h"
#include "testutil.h"

/* ---- The backing: malloc, counted; a gate can hold the next pinning ---------------------------- */
static struct {
  pthread_mutex_t lock;
  pthread_cond_t changed;
  int calls;        /* pinnings asked for */
  int held;         /* 1: a pinning waits at the gate */
  int gate_on;      /* 1: the next pinning waits until gate_on is 0 again */
  size_t bytes;     /* the last pinning's size */
  void *pinned[64]; /* every block handed out: the pool keeps them until exit (reachable for LSan) */
} fake = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0, 0, 0, {NULL}};

static stk_status fake_pin(void **ptr, size_t bytes, int numa_node, uint64_t *alloc_count) {
  (void)numa_node;
  pthread_mutex_lock(&fake.lock);
  fake.calls++;
  fake.bytes = bytes;
  if (fake.gate_on) {
    fake.held = 1;
    pthread_cond_broadcast(&fake.changed);
    while (fake.gate_on) pthread_cond_wait(&fake.changed, &fake.lock);
    fake.held = 0;
  }
  int slot = fake.calls - 1;
  pthread_mutex_unlock(&fake.lock);
  if (slot >= (int)(sizeof fake.pinned / sizeof fake.pinned[0])) return STK_ENOMEM;
  *ptr = fake.pinned[slot] = malloc(bytes); /* never freed: the pool keeps what it pinned until exit */
  if (!*ptr) return STK_ENOMEM;
  if (alloc_count) (*alloc_count)++;
  return STK_OK;
}

static int fake_calls(void) {
  pthread_mutex_lock(&fake.lock);
  int n = fake.calls;
  pthread_mutex_unlock(&fake.lock);
  return n;
}

/* Waits (30 s at most: a pool that held its lock over the pinning would hang here) until `done`
 * is set or, with held_wanted, until a pinning waits at the gate. 1 when it happened. */
static int wait_for(const int *done, int held_wanted) {
  struct timespec until;
  clock_gettime(CLOCK_REALTIME, &until);
  until.tv_sec += 30;
  pthread_mutex_lock(&fake.lock);
  int rc = 0;
  while (!(held_wanted ? fake.held : __atomic_load_n(done, __ATOMIC_ACQUIRE)) && rc == 0)
    rc = pthread_cond_timedwait(&fake.changed, &fake.lock, &until);
  int ok = held_wanted ? fake.held : __atomic_load_n(done, __ATOMIC_ACQUIRE);
  pthread_mutex_unlock(&fake.lock);
  return ok;
}

static void open_gate(void) {
  pthread_mutex_lock(&fake.lock);
  fake.gate_on = 0;
  pthread_cond_broadcast(&fake.changed);
  pthread_mutex_unlock(&fake.lock);
}

static void close_gate(void) {
  pthread_mutex_lock(&fake.lock);
  fake.gate_on = 1;
  pthread_mutex_unlock(&fake.lock);
}

/* A get in its own thread, so the test can see whether it finishes. */
typedef struct getter {
  int node;
  size_t bytes; /* in: asked; out: got */
  void *ptr;
  stk_status st;
  int done;
} getter;

static void *getter_run(void *arg) {
  getter *g = (getter *)arg;
  g->st = stk__gpu_pinned_block_get(&g->ptr, &g->bytes, g->node, NULL);
  pthread_mutex_lock(&fake.lock);
  __atomic_store_n(&g->done, 1, __ATOMIC_RELEASE);
  pthread_cond_broadcast(&fake.changed);
  pthread_mutex_unlock(&fake.lock);
  return NULL;
}

static size_t class_after(size_t cls, int steps) {
  while (steps-- > 0) cls = stk__size_class(cls + 1);
  return cls;
}

/* Takes blocks of `cls` from node's current chunk until fewer than `leave` + cls bytes are left
 * in it (the chunk is `chunk` bytes, fresh). Returns how many. */
static int drain_chunk(int node, size_t chunk, size_t cls, size_t leave) {
  int n = 0;
  for (size_t used = 0; used + cls + leave <= chunk; used += cls, n++) {
    void *p = NULL;
    size_t bytes = cls;
    if (stk__gpu_pinned_block_get(&p, &bytes, node, NULL) != STK_OK || bytes != cls) return -1;
  }
  return n;
}

#define CHUNK ((size_t)64 << 20)

static void test_empty_class_takes_a_free_block_up_to_twice_its_size(void) {
  const int node = 0;
  const size_t small = stk__size_class(10000), two_up = class_after(small, 2), three_up = class_after(small, 3);
  CHECK(two_up <= 2 * small && three_up > 2 * small);
  void *big = NULL;
  size_t bytes = two_up;
  CHECK(stk__gpu_pinned_block_get(&big, &bytes, node, NULL) == STK_OK && bytes == two_up);
  stk__gpu_pinned_block_put(big, bytes, node);
  void *p = NULL;
  bytes = 10000;
  CHECK(stk__gpu_pinned_block_get(&p, &bytes, node, NULL) == STK_OK);
  CHECK_MSG(p == big && bytes == two_up, "a %zu-byte class took %p (%zu bytes), not the free %zu-byte block %p", small,
            p, bytes, two_up, big);
  stk__gpu_pinned_block_put(p, bytes, node);
  /* three classes up (more than twice the size) is left for its own class: a new block is carved */
  const size_t three_down = stk__size_class(two_up / 3);
  CHECK(class_after(three_down, 3) == two_up);
  void *q = NULL;
  bytes = three_down;
  CHECK(stk__gpu_pinned_block_get(&q, &bytes, node, NULL) == STK_OK);
  CHECK_MSG(q != big && bytes == three_down, "a %zu-byte class took the free %zu-byte block", three_down, two_up);
  /* the free block is still there for its own class */
  void *r = NULL;
  bytes = two_up;
  CHECK(stk__gpu_pinned_block_get(&r, &bytes, node, NULL) == STK_OK && r == big && bytes == two_up);
}

static void test_chunk_end_becomes_free_blocks(void) {
  const int node = 1;
  const size_t quarter = CHUNK / 4, tail = (size_t)4 << 20;
  uint64_t allocs = 0;
  void *first = NULL;
  size_t bytes = quarter;
  CHECK(stk__gpu_pinned_block_get(&first, &bytes, node, &allocs) == STK_OK && bytes == quarter && allocs == 1);
  /* the chunk holds `first`; two more quarters and a 12 MiB block leave its last 4 MiB */
  const size_t twelve = (size_t)12 << 20;
  CHECK(stk__size_class(twelve) == twelve);
  const size_t takes[3] = {quarter, quarter, twelve};
  for (int i = 0; i < 3; i++) {
    void *p = NULL;
    bytes = takes[i];
    CHECK(stk__gpu_pinned_block_get(&p, &bytes, node, &allocs) == STK_OK && bytes == takes[i] && allocs == 1);
  }
  const int calls = fake_calls();
  void *next = NULL;
  bytes = quarter;
  CHECK(stk__gpu_pinned_block_get(&next, &bytes, node, &allocs) == STK_OK && allocs == 2);
  CHECK(fake_calls() == calls + 1 && fake.bytes == 2 * CHUNK);
  /* the old chunk's last 4 MiB are a free block now: a 4 MiB get takes it, pinning nothing */
  void *p = NULL;
  bytes = tail;
  CHECK(stk__gpu_pinned_block_get(&p, &bytes, node, &allocs) == STK_OK && allocs == 2 && fake_calls() == calls + 1);
  const uint8_t *old = (const uint8_t *)first;
  CHECK_MSG((const uint8_t *)p == old + CHUNK - tail, "the 4 MiB block is at +%td in the old chunk, not at its end",
            (const uint8_t *)p - old);
}

static void test_pinning_a_chunk_does_not_hold_up_other_threads(void) {
  const int node = 2;
  const size_t quarter = CHUNK / 4;
  void *free_block = NULL;
  size_t bytes = 8192;
  CHECK(stk__gpu_pinned_block_get(&free_block, &bytes, node, NULL) == STK_OK);
  CHECK(drain_chunk(node, CHUNK - bytes, quarter, 0) == 3); /* less than a quarter is left */
  stk__gpu_pinned_block_put(free_block, bytes, node);
  close_gate();
  getter grower = {node, quarter, NULL, STK_OK, 0};
  pthread_t t1;
  CHECK(pthread_create(&t1, NULL, getter_run, &grower) == 0);
  CHECK_MSG(wait_for(NULL, 1), "the grower never reached the pinning");
  /* meanwhile a get that a free block serves finishes */
  getter other = {node, 8192, NULL, STK_OK, 0};
  pthread_t t2;
  CHECK(pthread_create(&t2, NULL, getter_run, &other) == 0);
  int finished = wait_for(&other.done, 0);
  CHECK_MSG(finished, "a get served by a free block waited for another thread's pinning");
  open_gate();
  pthread_join(t1, NULL);
  pthread_join(t2, NULL);
  CHECK(other.st == STK_OK && other.ptr == free_block);
  CHECK(grower.st == STK_OK && grower.ptr != NULL && grower.bytes == quarter);
}

static void test_threads_needing_a_chunk_at_once_pin_one(void) {
  const int node = 3;
  const size_t quarter = CHUNK / 4;
  void *p = NULL;
  size_t bytes = quarter;
  CHECK(stk__gpu_pinned_block_get(&p, &bytes, node, NULL) == STK_OK);
  CHECK(drain_chunk(node, CHUNK - quarter, quarter, 0) == 3); /* the chunk is used up */
  const int calls = fake_calls();
  close_gate();
  getter a = {node, quarter, NULL, STK_OK, 0}, b = {node, quarter, NULL, STK_OK, 0};
  pthread_t ta, tb;
  CHECK(pthread_create(&ta, NULL, getter_run, &a) == 0);
  CHECK_MSG(wait_for(NULL, 1), "the first thread never reached the pinning");
  CHECK(pthread_create(&tb, NULL, getter_run, &b) == 0);
  struct timespec nap = {0, 50 * 1000 * 1000}; /* b has time to reach the pool (it must wait there) */
  nanosleep(&nap, NULL);
  CHECK(!__atomic_load_n(&b.done, __ATOMIC_ACQUIRE));
  open_gate();
  pthread_join(ta, NULL);
  pthread_join(tb, NULL);
  CHECK(a.st == STK_OK && b.st == STK_OK && a.ptr && b.ptr && a.ptr != b.ptr);
  CHECK_MSG(fake_calls() == calls + 1, "%d pinnings for two threads' one new chunk", fake_calls() - calls);
}

/* one STK_TEST_CASE per line: tests/CMakeLists.txt reads them */
// clang-format off
static const stk_test_case cases[] = {
    STK_TEST_CASE(test_empty_class_takes_a_free_block_up_to_twice_its_size),
    STK_TEST_CASE(test_chunk_end_becomes_free_blocks),
    STK_TEST_CASE(test_pinning_a_chunk_does_not_hold_up_other_threads),
    STK_TEST_CASE(test_threads_needing_a_chunk_at_once_pin_one),
};
// clang-format on

int main(int argc, char **argv) {
  stk__gpu_pinned_pool_backing(fake_pin);
  return stk_test_run_cases(__FILE__, cases, STK_TEST_COUNT(cases), argc, argv);
}
