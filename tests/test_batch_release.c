/* tests/test_batch_release.c: batches released from threads other than the consumer's (the
 * thread contract of include/stoker/pipeline.h), and releases racing stk_pipeline_destroy. A
 * batch's references (the consumer's and DLPack exports) are handed to releaser threads, which
 * check the bytes are still what the consumer saw (a slot reused while referenced would change
 * them) and then drop them. Run under `make tsan` and `make sanitize`: each slot's owner_lock
 * (src/core/exec/slots.c) is what orders the last release against the pipeline's destruction. */
#include <pthread.h>

#include "pipeline_fake_ops.h"
#include "stoker/dlpack.h"
#include "case_list.h"
#include "testutil.h"

enum { RELEASERS = 3, QUEUE_CAP = 256 };

/* One reference handed over: a DLPack export of output 0 and the sum the consumer read. */
typedef struct handoff {
  DLManagedTensor *dl;
  double expected;
} handoff;

typedef struct release_queue {
  pthread_mutex_t lock;
  pthread_cond_t cond;
  handoff items[QUEUE_CAP];
  int head, count;
  int closed;
  int go; /* releasers wait for it before taking anything */
  int verified, mismatched;
} release_queue;

static double sum_floats(const void *data, size_t nbytes) {
  double sum = 0;
  for (size_t i = 0; i < nbytes / sizeof(float); i++) sum += ((const float *)data)[i];
  return sum;
}

static void queue_init(release_queue *q, int go) {
  memset(q, 0, sizeof *q);
  pthread_mutex_init(&q->lock, NULL);
  pthread_cond_init(&q->cond, NULL);
  q->go = go;
}

static void queue_destroy(release_queue *q) {
  pthread_cond_destroy(&q->cond);
  pthread_mutex_destroy(&q->lock);
}

static void queue_push(release_queue *q, handoff h) {
  pthread_mutex_lock(&q->lock);
  while (q->count == QUEUE_CAP) pthread_cond_wait(&q->cond, &q->lock);
  q->items[(q->head + q->count) % QUEUE_CAP] = h;
  q->count++;
  pthread_cond_broadcast(&q->cond);
  pthread_mutex_unlock(&q->lock);
}

static void queue_set(release_queue *q, int *field) {
  pthread_mutex_lock(&q->lock);
  *field = 1;
  pthread_cond_broadcast(&q->cond);
  pthread_mutex_unlock(&q->lock);
}

/* Releaser thread: checks each handed-over export still holds the consumer's bytes, drops it. */
static void *releaser_main(void *arg) {
  release_queue *q = arg;
  pthread_mutex_lock(&q->lock);
  for (;;) {
    while (!(q->go && q->count) && !(q->go && q->closed)) pthread_cond_wait(&q->cond, &q->lock);
    if (!q->count) break;
    handoff h = q->items[q->head];
    q->head = (q->head + 1) % QUEUE_CAP;
    q->count--;
    pthread_cond_broadcast(&q->cond);
    pthread_mutex_unlock(&q->lock);
    const DLTensor *t = &h.dl->dl_tensor;
    size_t nbytes = sizeof(float);
    for (int d = 0; d < t->ndim; d++) nbytes *= (size_t)t->shape[d];
    int same = sum_floats(t->data, nbytes) == h.expected;
    h.dl->deleter(h.dl);
    pthread_mutex_lock(&q->lock);
    q->verified += same;
    q->mismatched += !same;
  }
  pthread_mutex_unlock(&q->lock);
  return NULL;
}

static stk_pipeline_options small_options(void) {
  stk_pipeline_options o;
  stk_pipeline_options_default(&o);
  o.batch_size = 8;
  o.num_threads = 3;
  o.prefetch_queue_depth = 2;
  o.pin_threads = 0;
  return o;
}

/* Exports output 0 of b `copies` times onto the queue, with the sum the consumer reads now. */
static int hand_over(release_queue *q, stk_batch *b, int copies) {
  stk_tensor_view v;
  if (stk_batch_tensor(b, 0, &v) != STK_OK) return 0;
  double expected = sum_floats(v.data, v.nbytes);
  for (int c = 0; c < copies; c++) {
    DLManagedTensor *dl = NULL;
    if (stk_batch_to_dlpack(b, 0, &dl) != STK_OK || !dl) return 0;
    queue_push(q, (handoff){.dl = dl, .expected = expected});
  }
  return 1;
}

/* Every batch of two epochs: the consumer drops its own reference at once; two exports per batch
 * go to the releaser threads, which drop them later and in any order, while the pipeline plans
 * into the slots they give back. */
static void test_release_from_other_threads(void) {
  stk_pipeline_options o = small_options();
  stk_pipeline *p = NULL;
  CHECK(fake_pipeline(&o, 200, 0, NULL, 0, 0, &p) == STK_OK);
  if (!p) return;
  release_queue q;
  queue_init(&q, 1);
  pthread_t threads[RELEASERS];
  for (int i = 0; i < RELEASERS; i++) CHECK(pthread_create(&threads[i], NULL, releaser_main, &q) == 0);
  int handed = 0;
  for (int epoch = 0; epoch < 2; epoch++) {
    stk_batch *b = NULL;
    stk_status st;
    while ((st = stk_pipeline_next(p, &b)) == STK_OK) {
      CHECK(hand_over(&q, b, 2));
      handed += 2;
      stk_batch_release(b);
    }
    CHECK_MSG(st == STK_EOF_EPOCH, "%s: %s", stk_status_name(st), stk_pipeline_last_error(p));
    CHECK(stk_pipeline_reset(p) == STK_OK);
  }
  queue_set(&q, &q.closed);
  for (int i = 0; i < RELEASERS; i++) pthread_join(threads[i], NULL);
  CHECK_MSG(q.verified == handed && q.mismatched == 0, "verified %d of %d, %d changed while referenced", q.verified,
            handed, q.mismatched);
  queue_destroy(&q);
  stk_pipeline_destroy(p);
}

/* The consumer holds three batches, exports each, drops its own references, then lets the
 * releasers go and destroys the pipeline at once: their releases race the destroy's orphaning. */
static void test_release_races_destroy(void) {
  for (int round = 0; round < 12; round++) {
    stk_pipeline_options o = small_options();
    stk_pipeline *p = NULL;
    CHECK(fake_pipeline(&o, 100000, 0, NULL, 0, 0, &p) == STK_OK);
    if (!p) return;
    release_queue q;
    queue_init(&q, 0);
    pthread_t threads[RELEASERS];
    for (int i = 0; i < RELEASERS; i++) CHECK(pthread_create(&threads[i], NULL, releaser_main, &q) == 0);
    stk_batch *held[3] = {NULL, NULL, NULL};
    int handed = 0;
    for (int k = 0; k < 3; k++) {
      CHECK(stk_pipeline_next(p, &held[k]) == STK_OK);
      if (held[k] && hand_over(&q, held[k], 1 + k % 2)) handed += 1 + k % 2;
    }
    /* Round parity decides whether the consumer's own references go before or after destroy. */
    if (round % 2 == 0)
      for (int k = 0; k < 3; k++) stk_batch_release(held[k]);
    queue_set(&q, &q.go);
    queue_set(&q, &q.closed);
    stk_pipeline_destroy(p);
    if (round % 2 == 1)
      for (int k = 0; k < 3; k++) stk_batch_release(held[k]);
    for (int i = 0; i < RELEASERS; i++) pthread_join(threads[i], NULL);
    CHECK_MSG(q.verified == handed && q.mismatched == 0, "round %d: verified %d of %d, %d changed", round, q.verified,
              handed, q.mismatched);
    queue_destroy(&q);
  }
}

/* one STK_TEST_CASE per line: tests/CMakeLists.txt reads them */
// clang-format off
static const stk_test_case cases[] = {
    STK_TEST_CASE(test_release_from_other_threads),
    STK_TEST_CASE(test_release_races_destroy),
};
// clang-format on

int main(int argc, char **argv) {
  if (stk_test_list_cases(cases, STK_TEST_COUNT(cases), argc, argv)) return 0;
  fake_ops_register();
  return stk_test_run_cases("test_batch_release", cases, STK_TEST_COUNT(cases), argc, argv);
}
