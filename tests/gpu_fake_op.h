/* tests/gpu_fake_op.h: builds operator instances for the GPU operator tests by hand (a schema
 * listing the argument names, values set directly), so the tests exercise the GPU
 * implementations without the pipeline engine. Not on any hot path. */
#ifndef STOKER_GPU_FAKE_OP_H
#define STOKER_GPU_FAKE_OP_H
#include <stdlib.h>
#include <string.h>

#include "core/op.h"

#define FAKE_MAX_ARGS 16
typedef struct fake_op {
  stk__op op;
  stk__op_schema schema;
  stk__arg_schema arg_schema[FAKE_MAX_ARGS];
  stk__arg_value args[FAKE_MAX_ARGS];
  double flists[FAKE_MAX_ARGS][4];
  stk_pipeline_options options;
} fake_op;

static inline void fake_op_init(fake_op *f, const char *name, int id, uint64_t seed, int num_threads) {
  memset(f, 0, sizeof *f);
  f->schema.name = name;
  f->schema.args = f->arg_schema;
  f->op.schema = &f->schema;
  f->op.args = f->args;
  f->op.id = id;
  f->op.seed = seed;
  f->op.num_inputs = 1;
  f->options.device_id = 0;
  f->options.num_threads = num_threads;
  f->op.options = &f->options;
}

static inline stk__arg_value *fake_arg(fake_op *f, const char *name, stk_arg_type type) {
  int i = f->schema.num_args++;
  f->arg_schema[i].name = name;
  f->arg_schema[i].type = type;
  f->args[i].type = type;
  f->args[i].is_set = 1;
  f->args[i].has_value = 1;
  f->args[i].input_slot = -1;
  return &f->args[i];
}
static inline void fake_int(fake_op *f, const char *name, int64_t v) { fake_arg(f, name, STK_ARG_INT)->i = v; }
static inline void fake_float(fake_op *f, const char *name, double v) { fake_arg(f, name, STK_ARG_FLOAT)->f = v; }
static inline void fake_string(fake_op *f, const char *name, char *v) { fake_arg(f, name, STK_ARG_STRING)->s = v; }
static inline void fake_flist(fake_op *f, const char *name, const double *v, size_t n) {
  int i = f->schema.num_args;
  stk__arg_value *a = fake_arg(f, name, STK_ARG_FLOAT_LIST);
  memcpy(f->flists[i], v, n * sizeof *v);
  a->flist = f->flists[i];
  a->count = n;
}
#endif
