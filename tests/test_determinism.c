/* tests/test_determinism.c: the same seed gives byte-identical batches whatever the thread count
 * and prefetch depth (1 vs 4 threads, prefetch 1 vs 3), across two epochs; a different seed
 * gives different bytes. Test-only operators with keyed RNG (tests/pipeline_fake_ops.h). */
#include "pipeline_fake_ops.h"
#include "testutil.h"

static uint64_t digest(int threads, int prefetch, uint64_t seed) {
  stk_pipeline_options o;
  stk_pipeline_options_default(&o);
  o.batch_size = 8;
  o.num_threads = threads;
  o.prefetch_queue_depth = prefetch;
  o.seed = seed;
  stk_pipeline *p = NULL;
  if (fake_pipeline(&o, 50, 0, NULL, 0, 0, &p) != STK_OK) return 0;
  uint64_t h = 1469598103934665603ull;
  for (int epoch = 0; epoch < 2; epoch++) {
    stk_batch *b;
    stk_status st;
    while ((st = stk_pipeline_next(p, &b)) == STK_OK) {
      for (int o2 = 0; o2 < stk_batch_num_outputs(b); o2++) {
        stk_tensor_view v;
        if (stk_batch_tensor(b, o2, &v) == STK_OK) h = fnv1a(h, v.data, v.nbytes);
      }
      stk_batch_release(b);
    }
    CHECK(st == STK_EOF_EPOCH);
    CHECK(stk_pipeline_reset(p) == STK_OK);
  }
  stk_pipeline_destroy(p);
  return h;
}

int main(void) {
  fake_ops_register();
  uint64_t a = digest(1, 1, 7), b = digest(4, 3, 7), c = digest(4, 1, 7), d = digest(2, 3, 7), e = digest(4, 3, 8);
  CHECK(a != 0);
  CHECK_MSG(a == b && a == c && a == d, "%llx %llx %llx %llx", (unsigned long long)a, (unsigned long long)b,
            (unsigned long long)c, (unsigned long long)d);
  CHECK(a != e);
  return stk_test_finish("test_determinism");
}
