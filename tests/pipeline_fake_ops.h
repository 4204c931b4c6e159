/* tests/pipeline_fake_ops.h: small test-only operators for the executor tests, so the engine is
 * tested independently of the real readers/decoders:
 *   test.reader  (reader; outputs: 4 bytes = sample id, int32 label = id % 3); test.seekable_reader
 *                the same with seek (by batch index); sample ids listed in
 *                bad_ids fail in run_sample with "cannot decode"; wraps around to fill the last batch;
 *                odd_names=True names files "dir/odd<newline><quote><0xff>_ID.jpg"
 *   test.fill    (input: reader bytes; output float [size,size] = id + 1000*random, or a ragged
 *                [1+id%3, size] when ragged=True); argument input "add" (float) adds per sample
 *   test.coin    (no inputs; int32 [1] = 1 with probability 0.5, keyed RNG)
 *   test.record  (input: reader bytes; output: a copy of them, and in the output's stage_record
 *                FAKE_RECORD_MAGIC and the sample id, as a mixed op's pre-stage records its plan)
 * fake_fill_runs[e] counts test.fill's samples run for epoch e (< 8), so a test sees when work
 * for an epoch was done.
 * Register them with fake_ops_register() before adding them to a pipeline. */
#ifndef STOKER_TEST_PIPELINE_FAKE_OPS_H
#define STOKER_TEST_PIPELINE_FAKE_OPS_H
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/args.h"

typedef struct fake_reader {
  int64_t num_samples, next;
  uint64_t epoch;
  char (*names)[48];
} fake_reader;

static stk_status fake_reader_init(stk__op *op, char *err, size_t err_size) {
  fake_reader *r = calloc(1, sizeof *r);
  if (!r) return STK_ENOMEM;
  r->num_samples = stk__arg_int(op, "num_samples");
  if (r->num_samples <= 0) {
    free(r);
    stk__errorf(err, err_size, "num_samples must be positive");
    return STK_EINVAL;
  }
  r->names = calloc((size_t)r->num_samples, sizeof *r->names);
  /* odd_names: a newline, a quote and a byte that is not UTF-8 in every name (escaping tests) */
  const char *format = stk__arg_bool(op, "odd_names") ? "dir/odd\n\"\xff_%lld.jpg" : "dir/file_%lld.jpg";
  for (int64_t i = 0; i < r->num_samples; i++) snprintf(r->names[i], sizeof r->names[i], format, (long long)i);
  op->state = r;
  return STK_OK;
}

static void fake_reader_destroy(stk__op *op) {
  fake_reader *r = op->state;
  if (r) free(r->names);
  free(r);
  op->state = NULL;
}

static stk_status fake_reader_reset(stk__op *op, uint64_t epoch) {
  fake_reader *r = op->state;
  r->next = 0;
  r->epoch = epoch;
  return STK_OK;
}

static stk_status fake_reader_plan(stk__op *op, stk__batch_plan *plan, char *err, size_t err_size) {
  fake_reader *r = op->state;
  if (r->next >= r->num_samples) return STK_EOF_EPOCH;
  plan->epoch = r->epoch;
  plan->batch_index = r->next / plan->batch_size;
  plan->valid_samples = 0;
  for (int s = 0; s < plan->batch_size; s++) {
    int64_t i = r->next + s;
    int fill = i >= r->num_samples;
    i %= r->num_samples;
    plan->samples[s] = (stk__sample_plan){
        .sample_id = i, .file_index = i, .label = (int32_t)(i % 3), .source = r->names[i], .is_fill = fill};
    plan->valid_samples += !fill;
  }
  r->next += plan->batch_size;
  plan->last_in_epoch = r->next >= r->num_samples;
  return STK_OK;
}

static void fake_reader_meta(const stk__op *op, uint64_t epoch, stk_reader_meta *out) {
  (void)epoch;
  const fake_reader *r = op->state;
  out->epoch_size = r->num_samples;
  out->shard_size = r->num_samples;
  out->num_shards = 1;
}

static stk_status fake_reader_run(stk__op *op, stk__sample_ctx *ctx, stk__tensor *const *in, stk__tensor *const *out) {
  size_t nbad;
  const int64_t *bad = stk__arg_int_list(op, "bad_ids", &nbad);
  for (size_t i = 0; i < nbad; i++)
    if (bad[i] == ctx->sample_id) {
      stk__errorf(ctx->err, ctx->err_size, "cannot decode (test: bad id %lld)", (long long)ctx->sample_id);
      return STK_EBADIMAGE;
    }
  int64_t shape1[1] = {4}, shape_label[1] = {1};
  stk_status st = stk__tensor_resize(out[0], STK_DTYPE_UINT8, 1, shape1, "B");
  if (st != STK_OK) return st;
  uint32_t id = (uint32_t)ctx->sample_id;
  memcpy(out[0]->data, &id, 4);
  st = stk__tensor_resize(out[1], STK_DTYPE_INT32, 1, shape_label, "");
  if (st != STK_OK) return st;
  *(int32_t *)out[1]->data = ctx->label;
  return STK_OK;
}

static const stk__op_impl fake_reader_impl = {.init = fake_reader_init,
                                              .destroy = fake_reader_destroy,
                                              .plan_batch = fake_reader_plan,
                                              .reset = fake_reader_reset,
                                              .reader_meta = fake_reader_meta,
                                              .run_sample = fake_reader_run};
static const stk__arg_schema fake_reader_args[] = {
    {"num_samples", STK_ARG_INT, "10", 0, 0, "samples per epoch"},
    {"bad_ids", STK_ARG_INT_LIST, "[]", 0, 0, "sample ids that fail"},
    {"skip_bad_files", STK_ARG_BOOL, "False", 0, 0, "skip failing samples"},
    {"odd_names", STK_ARG_BOOL, "False", 0, 0, "names with a newline, a quote and a non-UTF-8 byte"},
};
static const stk__op_schema fake_reader_schema = {.name = "test.reader",
                                                  .doc = "test reader",
                                                  .min_inputs = 0,
                                                  .max_inputs = 0,
                                                  .num_outputs = 2,
                                                  .devices = STK_OPDEV_CPU,
                                                  .args = fake_reader_args,
                                                  .num_args = 4,
                                                  .is_reader = 1};

static uint64_t fake_fill_runs[8]; /* atomic */

static stk_status fake_fill_run(stk__op *op, stk__sample_ctx *ctx, stk__tensor *const *in, stk__tensor *const *out) {
  if (ctx->epoch < 8) __atomic_fetch_add(&fake_fill_runs[ctx->epoch], 1, __ATOMIC_RELAXED);
  uint32_t id;
  memcpy(&id, in[0]->data, 4);
  int64_t size = stk__arg_int(op, "size");
  int64_t shape[2] = {stk__arg_bool(op, "ragged") ? 1 + id % 3 : size, size};
  stk_status st = stk__tensor_resize(out[0], STK_DTYPE_FLOAT32, 2, shape, "HW");
  if (st != STK_OK) return st;
  const stk__tensor *add_t = stk__arg_input(op, in, "add");
  double add = add_t ? stk__tensor_scalar(add_t) : stk__arg_float(op, "add");
  stk__rng rng;
  stk__rng_init(&rng, op->seed, (uint32_t)op->id, ctx->epoch, ctx->sample_id);
  float *p = out[0]->data;
  /* Use scratch like a real operator would. */
  float *tmp = stk__scratch_get(ctx, 0, (size_t)(shape[0] * shape[1]) * sizeof(float));
  if (!tmp) return STK_ENOMEM;
  for (int64_t i = 0; i < shape[0] * shape[1]; i++) tmp[i] = (float)(id + 1000.0 * stk__rng_uniform(&rng) + add);
  memcpy(p, tmp, (size_t)(shape[0] * shape[1]) * sizeof(float));
  return STK_OK;
}
static const stk__op_impl fake_fill_impl = {.run_sample = fake_fill_run};
static const stk__arg_schema fake_fill_args[] = {
    {"size", STK_ARG_INT, "3", 0, 0, "side"},
    {"ragged", STK_ARG_BOOL, "False", 0, 0, "vary the first dimension"},
    {"add", STK_ARG_FLOAT, "0", 0, 1, "added to every value"},
};
static const stk__op_schema fake_fill_schema = {.name = "test.fill",
                                                .doc = "test op",
                                                .min_inputs = 1,
                                                .max_inputs = 1,
                                                .num_outputs = 1,
                                                .devices = STK_OPDEV_CPU | STK_OPDEV_GPU,
                                                .args = fake_fill_args,
                                                .num_args = 3};

static stk_status fake_coin_run(stk__op *op, stk__sample_ctx *ctx, stk__tensor *const *in, stk__tensor *const *out) {
  int64_t shape[1] = {1};
  stk_status st = stk__tensor_resize(out[0], STK_DTYPE_INT32, 1, shape, "");
  if (st != STK_OK) return st;
  stk__rng rng;
  stk__rng_init(&rng, op->seed, (uint32_t)op->id, ctx->epoch, ctx->sample_id);
  *(int32_t *)out[0]->data = stk__rng_uniform(&rng) < 0.5;
  return STK_OK;
}
static const stk__op_impl fake_coin_impl = {.run_sample = fake_coin_run};
static const stk__op_schema fake_coin_schema = {.name = "test.coin",
                                                .doc = "test coin",
                                                .min_inputs = 0,
                                                .max_inputs = 0,
                                                .num_outputs = 1,
                                                .devices = STK_OPDEV_CPU,
                                                .args = NULL,
                                                .num_args = 0};

#define FAKE_RECORD_MAGIC UINT64_C(0x44524f4345524b46)

static stk_status fake_record_run(stk__op *op, stk__sample_ctx *ctx, stk__tensor *const *in, stk__tensor *const *out) {
  (void)op;
  stk_status st = stk__tensor_resize(out[0], in[0]->dtype, in[0]->ndim, in[0]->shape, in[0]->layout);
  if (st != STK_OK) return st;
  memcpy(out[0]->data, in[0]->data, in[0]->nbytes);
  out[0]->stage_record[0] = FAKE_RECORD_MAGIC;
  out[0]->stage_record[1] = (uint64_t)ctx->sample_id;
  return STK_OK;
}
static const stk__op_impl fake_record_impl = {.run_sample = fake_record_run};
static const stk__op_schema fake_record_schema = {.name = "test.record",
                                                  .doc = "test per-sample record",
                                                  .min_inputs = 1,
                                                  .max_inputs = 1,
                                                  .num_outputs = 1,
                                                  .devices = STK_OPDEV_CPU,
                                                  .args = NULL,
                                                  .num_args = 0};

/* test.seekable_reader: test.reader with seek (positions by batch index; no data fingerprint). */
static stk_status fake_reader_seek(stk__op *op, uint64_t epoch, int64_t batch_index, char *err, size_t err_size) {
  (void)err, (void)err_size;
  fake_reader *r = op->state;
  r->epoch = epoch;
  r->next = batch_index * op->options->batch_size;
  return STK_OK;
}
static const stk__op_impl fake_seekable_reader_impl = {.init = fake_reader_init,
                                                       .destroy = fake_reader_destroy,
                                                       .plan_batch = fake_reader_plan,
                                                       .reset = fake_reader_reset,
                                                       .reader_meta = fake_reader_meta,
                                                       .run_sample = fake_reader_run,
                                                       .seek = fake_reader_seek};
static const stk__op_schema fake_seekable_reader_schema = {.name = "test.seekable_reader",
                                                           .doc = "test reader that can seek",
                                                           .min_inputs = 0,
                                                           .max_inputs = 0,
                                                           .num_outputs = 2,
                                                           .devices = STK_OPDEV_CPU,
                                                           .args = fake_reader_args,
                                                           .num_args = 4,
                                                           .is_reader = 1};

static const stk__op_entry fake_reader_entry = {&fake_reader_schema, &fake_reader_impl, NULL, NULL};
static const stk__op_entry fake_seekable_reader_entry = {&fake_seekable_reader_schema, &fake_seekable_reader_impl,
                                                         NULL, NULL};
static const stk__op_entry fake_fill_entry = {&fake_fill_schema, &fake_fill_impl, NULL, NULL};
static const stk__op_entry fake_coin_entry = {&fake_coin_schema, &fake_coin_impl, NULL, NULL};
static const stk__op_entry fake_record_entry = {&fake_record_schema, &fake_record_impl, NULL, NULL};

static void fake_ops_register(void) {
  stk__op_register(&fake_reader_entry);
  stk__op_register(&fake_seekable_reader_entry);
  stk__op_register(&fake_fill_entry);
  stk__op_register(&fake_coin_entry);
  stk__op_register(&fake_record_entry);
}

/* Builds reader -> fill (add=coin) -> outputs(fill, reader[1]). extra_reader_args may be NULL. */
__attribute__((unused)) static stk_status fake_pipeline(const stk_pipeline_options *opts, int num_samples, int ragged,
                                                        const int64_t *bad, size_t nbad, int skip, stk_pipeline **out) {
  stk_pipeline *p;
  stk_status st = stk_pipeline_new(opts, &p);
  if (st != STK_OK) return st;
  stk_args *ra, *fa;
  stk_args_new(&ra);
  stk_args_new(&fa);
  stk_args_set_int(ra, "num_samples", num_samples);
  if (nbad) stk_args_set_int_list(ra, "bad_ids", bad, nbad);
  stk_args_set_bool(ra, "skip_bad_files", skip);
  stk_args_set_bool(fa, "ragged", ragged);
  stk_args_set_input(fa, "add", "coin");
  const char *fin[1] = {"reader"};
  const char *outs[2] = {"fill", "reader[1]"};
  st = stk_pipeline_add_op(p, "test.reader", "reader", NULL, 0, ra);
  if (st == STK_OK) st = stk_pipeline_add_op(p, "test.coin", "coin", NULL, 0, NULL);
  if (st == STK_OK) st = stk_pipeline_add_op(p, "test.fill", "fill", fin, 1, fa);
  if (st == STK_OK) st = stk_pipeline_set_outputs(p, outs, 2);
  if (st == STK_OK) st = stk_pipeline_build(p);
  stk_args_destroy(ra);
  stk_args_destroy(fa);
  if (st != STK_OK) {
    fprintf(stderr, "fake_pipeline: %s: %s\n", stk_status_name(st), stk_pipeline_last_error(p));
    stk_pipeline_destroy(p);
    return st;
  }
  *out = p;
  return STK_OK;
}

/* FNV-1a 64 over bytes. */
__attribute__((unused)) static uint64_t fnv1a(uint64_t h, const void *data, size_t n) {
  const unsigned char *p = data;
  for (size_t i = 0; i < n; i++) {
    h ^= p[i];
    h *= 1099511628211ull;
  }
  return h;
}
#endif
