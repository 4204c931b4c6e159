/* src/core/arg_get.c: typed argument getters used by operator implementations. Arguments were
 * validated against the schema at build time, so a getter for a name the schema lacks is a bug
 * in the operator (it returns a zero value). Called at init time, and per sample for argument
 * inputs (stk__arg_input). */
#include <stdlib.h>
#include <string.h>

#include "core/op.h"

const stk__arg_value *stk__arg(const stk__op *op, const char *name) {
  for (int i = 0; i < op->schema->num_args; i++)
    if (strcmp(op->schema->args[i].name, name) == 0) return &op->args[i];
  return NULL;
}

int stk__arg_is_set(const stk__op *op, const char *name) {
  const stk__arg_value *v = stk__arg(op, name);
  return v && (v->is_set || v->input_ref);
}

int64_t stk__arg_int(const stk__op *op, const char *name) {
  const stk__arg_value *v = stk__arg(op, name);
  if (!v || !v->has_value) return 0;
  return v->type == STK_ARG_FLOAT ? (int64_t)v->f : v->i;
}

double stk__arg_float(const stk__op *op, const char *name) {
  const stk__arg_value *v = stk__arg(op, name);
  if (!v || !v->has_value) return 0.0;
  return v->type == STK_ARG_FLOAT ? v->f : (double)v->i;
}

int stk__arg_bool(const stk__op *op, const char *name) { return stk__arg_int(op, name) != 0; }

const char *stk__arg_string(const stk__op *op, const char *name) {
  const stk__arg_value *v = stk__arg(op, name);
  return v && v->has_value && v->s ? v->s : "";
}

const double *stk__arg_float_list(const stk__op *op, const char *name, size_t *count) {
  const stk__arg_value *v = stk__arg(op, name);
  *count = v && v->has_value ? v->count : 0;
  return *count ? v->flist : NULL;
}

const int64_t *stk__arg_int_list(const stk__op *op, const char *name, size_t *count) {
  const stk__arg_value *v = stk__arg(op, name);
  *count = v && v->has_value ? v->count : 0;
  return *count ? v->ilist : NULL;
}

char *const *stk__arg_string_list(const stk__op *op, const char *name, size_t *count) {
  const stk__arg_value *v = stk__arg(op, name);
  *count = v && v->has_value ? v->count : 0;
  return *count ? v->slist : NULL;
}

const stk__tensor *stk__arg_input(const stk__op *op, stk__tensor *const *inputs, const char *name) {
  const stk__arg_value *v = stk__arg(op, name);
  if (!v || v->input_slot < 0) return NULL;
  return inputs[v->input_slot];
}

stk_status stk__op_keep_state(stk__op *op, const void *state, size_t size) {
  void *copy = malloc(size);
  if (!copy) return STK_ENOMEM;
  memcpy(copy, state, size);
  op->state = copy;
  return STK_OK;
}

void stk__op_free_state(stk__op *op) {
  free(op->state);
  op->state = NULL;
}
