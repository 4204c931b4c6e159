/* src/core/arg_get.c: typed argument getters used by operator implementations. Arguments were
 * validated against the schema at build time, so a getter for a name the schema lacks is a bug
 * in the operator (it returns a zero value). Called at init time, and per sample / per batch for
 * argument inputs (stk__arg_input, stk__arg_sample_float, stk__arg_batch_floats). */
#include <stdlib.h>
#include <string.h>

#include "core/op.h"
#include "device/device.h"

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

double stk__arg_sample_float(const stk__op *op, stk__tensor *const *inputs, const char *name) {
  const stk__tensor *t = stk__arg_input(op, inputs, name);
  return t ? stk__tensor_scalar(t) : stk__arg_float(op, name);
}

/* Element k of a host tensor as double (any dtype). */
static double tensor_element(const stk__tensor *t, size_t k) {
  stk__tensor one = *t;
  size_t bytes = stk_dtype_size(t->dtype);
  one.data = (uint8_t *)t->data + k * bytes;
  one.nbytes = bytes;
  return stk__tensor_scalar(&one);
}

void stk__arg_sample_floats(const stk__op *op, stk__tensor *const *inputs, const char *name, double *out, size_t max,
                            size_t *count) {
  const stk__tensor *t = stk__arg_input(op, inputs, name);
  *count = 0;
  if (t) {
    size_t n = t->data ? stk__tensor_numel(t) : 0;
    for (size_t k = 0; k < n && k < max; k++) out[(*count)++] = tensor_element(t, k);
    return;
  }
  const stk__arg_value *v = stk__arg(op, name);
  if (!v || !v->has_value) return;
  if (v->type == STK_ARG_FLOAT_LIST || v->type == STK_ARG_INT_LIST) {
    for (size_t k = 0; k < v->count && k < max; k++)
      out[(*count)++] = v->type == STK_ARG_FLOAT_LIST ? v->flist[k] : (double)v->ilist[k];
  } else if (max > 0) {
    out[(*count)++] = stk__arg_float(op, name);
  }
}

stk_status stk__arg_batch_floats(const stk__op *op, stk__tensor_list *const *inputs, const char *name, int n,
                                 void *cuda_stream, double *out, char *err, size_t err_size) {
  const stk__arg_value *v = stk__arg(op, name);
  if (!v || v->input_slot < 0) {
    double constant = stk__arg_float(op, name);
    for (int i = 0; i < n; i++) out[i] = constant;
    return STK_OK;
  }
  const stk__tensor_list *list = inputs[v->input_slot];
  for (int i = 0; i < n; i++) {
    const stk__tensor *t = list && list->samples && i < list->count ? &list->samples[i] : NULL;
    size_t bytes = t ? stk_dtype_size(t->dtype) : 0;
    if (!t || !t->data || t->nbytes < bytes || bytes == 0 || bytes > 8) {
      stk__errorf(err, err_size, "argument '%s': its input holds no value for sample %d", name, i);
      return STK_EINVAL;
    }
    if (t->device != STK_DEVICE_GPU) {
      out[i] = stk__tensor_scalar(t);
      continue;
    }
    uint8_t raw[8] = {0};
    stk_status st = stk__gpu_memcpy_d2h(raw, t->data, bytes, cuda_stream);
    if (st != STK_OK) {
      stk__errorf(err, err_size, "argument '%s': reading sample %d from the GPU failed (%s)", name, i,
                  stk_strerror(st));
      return st;
    }
    stk__tensor host = *t;
    host.data = raw;
    host.nbytes = bytes;
    out[i] = stk__tensor_scalar(&host);
  }
  return STK_OK;
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
