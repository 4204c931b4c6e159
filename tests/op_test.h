/* tests/op_test.h: helpers for operator tests that drive one operator outside a pipeline
 * (stk__op_new_standalone): build it from arguments, run it on one sample, expect a build error
 * naming an argument, make test images and bind per-sample argument inputs. Header-only (static
 * functions), for the tests beside the operators under src/ops/augment/. Test-only. */
#ifndef STOKER_TEST_OP_TEST_H
#define STOKER_TEST_OP_TEST_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/engine.h"
#include "core/op.h"
#include "testutil.h"

static char op_test_err[1024];
static char op_test_name[256]; /* what the operator named its sample (ctx->name) in op_run's last call */
static stk__worker op_test_worker;

static inline stk_args *op_args(void) {
  stk_args *a = NULL;
  CHECK(stk_args_new(&a) == STK_OK);
  return a;
}

/* Builds `name` on `device` ("cpu") with args (destroyed here), RNG key id; NULL (a failed check) on error. */
static inline stk__op *op_make(const char *name, stk_args *args, int id) {
  stk__op *op = NULL;
  op_test_err[0] = 0;
  stk_status st = stk__op_new_standalone(name, "cpu", args, NULL, id, &op, op_test_err, sizeof op_test_err);
  CHECK_MSG(st == STK_OK, "%s: %s", name, op_test_err);
  if (args) stk_args_destroy(args);
  return st == STK_OK ? op : NULL;
}

/* Expects building `name` with args (destroyed here) to fail with a message naming the operator and `needle`. */
static inline void op_expect_bad(const char *name, stk_args *args, const char *needle) {
  stk__op *op = NULL;
  op_test_err[0] = 0;
  stk_status st = stk__op_new_standalone(name, "cpu", args, NULL, 1, &op, op_test_err, sizeof op_test_err);
  CHECK_MSG(st != STK_OK && op == NULL, "%s accepted bad arguments (wanted an error about %s)", name, needle);
  CHECK_MSG(strstr(op_test_err, needle) != NULL, "%s: message \"%s\" does not mention \"%s\"", name, op_test_err,
            needle);
  CHECK_MSG(strstr(op_test_err, name) != NULL, "message \"%s\" does not name %s", op_test_err, name);
  if (op) stk__op_free_standalone(op);
  stk_args_destroy(args);
}

/* Runs op on one sample (epoch, sample id) with inputs; output 0 into *out, the sample's name (a
 * reader's or io.file.read's) into op_test_name. */
static inline stk_status op_run(stk__op *op, uint64_t epoch, int64_t sample, stk__tensor **inputs, stk__tensor *out) {
  stk__sample_ctx ctx;
  memset(&ctx, 0, sizeof ctx);
  ctx.epoch = epoch;
  ctx.sample_id = sample;
  ctx.err = op_test_err;
  ctx.err_size = sizeof op_test_err;
  ctx.thread_scratch = &op_test_worker;
  ctx.name = op_test_name;
  ctx.name_size = sizeof op_test_name;
  stk__tensor *outs[1] = {out};
  op_test_err[0] = 0;
  op_test_name[0] = 0;
  return op->impl->run_sample(op, &ctx, inputs, outs);
}

/* A w x h x c uint8 HWC image of varied (pseudo-random, seeded) pixels. */
static inline stk__tensor op_image(int w, int h, int c, unsigned seed) {
  stk__tensor t;
  memset(&t, 0, sizeof t);
  int64_t shape[3] = {h, w, c};
  CHECK(stk__tensor_resize(&t, STK_DTYPE_UINT8, 3, shape, "HWC") == STK_OK);
  uint8_t *p = t.data;
  uint32_t s = seed * 2654435761u + 1u;
  for (size_t i = 0; i < t.nbytes; i++) {
    s = s * 1664525u + 1013904223u;
    p[i] = (uint8_t)(s >> 24);
  }
  return t;
}

/* A 0-d float tensor holding v (a per-sample argument input). */
static inline stk__tensor op_scalar(float v) {
  stk__tensor t;
  memset(&t, 0, sizeof t);
  CHECK(stk__tensor_resize(&t, STK_DTYPE_FLOAT32, 0, NULL, "") == STK_OK);
  *(float *)t.data = v;
  return t;
}

static inline void op_test_cleanup(void) {
  for (int k = 0; k < STK__SCRATCH_SLOTS; k++) free(op_test_worker.scratch[k]);
}

#endif
