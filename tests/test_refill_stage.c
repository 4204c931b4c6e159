/* tests/test_refill_stage.c: under skip_bad_files a sample's stage_record travels with the sample.
 * A mixed op's CPU pre-stage records per sample what it decided (the mixed decoder: its decode
 * plan, src/ops/decode/jpeg_route.h) in the tensor's stage_record, and its GPU stage reads it per
 * slot. The refill moves samples between slots (good samples first, then fills as copies of good
 * ones: stk__exec_refill_resolve_fills, stk__exec_copy_sample), so every copy must carry the
 * record with the contents, or the batch stage finds, in a slot, no record or another sample's.
 * The GPU stage needs CUDA, so this checks the same copy on a CPU op's output: test.record
 * (tests/pipeline_fake_ops.h) records its sample id the way the pre-stage records a plan, and the
 * consumer's view of every slot must hold the record of the sample the slot's bytes come from.
 * Bad samples at a batch's start and middle (moved by the compaction) and at the epoch's end (fill
 * copies), with 1 and 3 worker threads. */
#include "core/engine.h"
#include "pipeline_fake_ops.h"
#include "testutil.h"

/* reader -> record; outputs: record (4 bytes: the sample id, and its stage_record). */
static stk_pipeline *record_pipeline(int batch, int threads, int num_samples, const int64_t *bad, size_t nbad) {
  stk_pipeline_options o;
  stk_pipeline_options_default(&o);
  o.batch_size = batch;
  o.num_threads = threads;
  o.prefetch_queue_depth = 2;
  o.seed = 7;
  o.skip_bad_files = 1;
  stk_pipeline *p = NULL;
  if (stk_pipeline_new(&o, &p) != STK_OK) return NULL;
  stk_args *ra;
  stk_args_new(&ra);
  stk_args_set_int(ra, "num_samples", num_samples);
  stk_args_set_int_list(ra, "bad_ids", bad, nbad);
  const char *rin[1] = {"reader"};
  const char *outs[1] = {"record"};
  stk_status st = stk_pipeline_add_op(p, "test.reader", "reader", NULL, 0, ra);
  if (st == STK_OK) st = stk_pipeline_add_op(p, "test.record", "record", rin, 1, NULL);
  if (st == STK_OK) st = stk_pipeline_set_outputs(p, outs, 1);
  if (st == STK_OK) st = stk_pipeline_build(p);
  stk_args_destroy(ra);
  if (st != STK_OK) {
    fprintf(stderr, "record_pipeline: %s: %s\n", stk_status_name(st), stk_pipeline_last_error(p));
    stk_pipeline_destroy(p);
    return NULL;
  }
  return p;
}

/* One epoch: every slot's record names the sample its bytes (and the batch plan) hold. Returns the
 * number of slots checked. */
static int check_epoch(stk_pipeline *p, int batch, int threads) {
  int slots = 0;
  for (int k = 0;; k++) {
    stk_batch *b = NULL;
    stk_status st = stk_pipeline_next(p, &b);
    if (st == STK_EOF_EPOCH) break;
    CHECK_MSG(st == STK_OK, "threads %d, batch %d: %s", threads, k, stk_pipeline_last_error(p));
    if (st != STK_OK) break;
    const stk__tensor_list *l = stk__batch_output(b, 0);
    CHECK(l->count == batch);
    for (int s = 0; s < l->count; s++, slots++) {
      const stk__tensor *t = &l->samples[s];
      uint32_t id = 0;
      CHECK(t->nbytes == 4);
      if (t->nbytes == 4) memcpy(&id, t->data, 4);
      CHECK_MSG(t->stage_record[0] == FAKE_RECORD_MAGIC && t->stage_record[1] == id,
                "threads %d, batch %d, slot %d: holds sample %u but the record of %s %llu", threads, k, s, id,
                t->stage_record[0] == FAKE_RECORD_MAGIC ? "sample" : "nothing, word 1 =",
                (unsigned long long)t->stage_record[1]);
      CHECK_MSG(b->plan.samples[s].sample_id == (int64_t)id, "threads %d, batch %d, slot %d: plan says %lld, bytes %u",
                threads, k, s, (long long)b->plan.samples[s].sample_id, id);
    }
    stk_batch_release(b);
  }
  return slots;
}

int main(void) {
  fake_ops_register();
  /* 11 samples, batches of 4: bad 0 and 5 are moved over by the compaction (batches 0 and 1), bad
   * 9 and 10 leave the epoch short, so its last batch ends with fill copies. */
  const int64_t bad[4] = {0, 5, 9, 10};
  for (int threads = 1; threads <= 3; threads += 2) {
    stk_pipeline *p = record_pipeline(4, threads, 11, bad, 4);
    CHECK(p != NULL);
    if (!p) continue;
    for (int e = 0; e < 2; e++) {
      int slots = check_epoch(p, 4, threads); /* 7 good samples: at least one fill copy */
      CHECK_MSG(slots >= 8 && slots % 4 == 0, "threads %d, epoch %d: %d slots", threads, e, slots);
      CHECK(stk_pipeline_reset(p) == STK_OK);
    }
    stk_pipeline_destroy(p);
  }
  return stk_test_finish("test_refill_stage");
}
