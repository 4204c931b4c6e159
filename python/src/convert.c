/* python/src/convert.c: errors and conversions between Python objects and the C API's types
 * (status codes -> stoker._stoker.Error, CPU sets, operator arguments, pipeline options, tensor
 * views, reader metadata and statistics -> dicts). Set-up time, except stkpy_view_to_dict (once
 * per output per batch). */
#include "ext.h" /* first: Python.h comes before the system headers */

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- Errors -------------------------------------------------------------------------------- */

PyObject *stkpy_raise_status(stkpy_state *state, stk_status status, const char *detail) {
  const char *message = (detail && detail[0]) ? detail : stk_strerror(status);
  PyObject *exc = PyObject_CallFunction(state->error_type, "s", message);
  if (!exc) return NULL;
  PyObject *name = PyUnicode_FromString(stk_status_name(status));
  PyObject *code = PyLong_FromLong((long)status);
  if (name && code) {
    PyObject_SetAttrString(exc, "status", name);
    PyObject_SetAttrString(exc, "code", code);
  }
  Py_XDECREF(name);
  Py_XDECREF(code);
  PyErr_SetObject(state->error_type, exc);
  Py_DECREF(exc);
  return NULL;
}

PyObject *stkpy_raise_argument(stkpy_state *state, const char *format, ...) {
  char message[512];
  va_list ap;
  va_start(ap, format);
  vsnprintf(message, sizeof message, format, ap);
  va_end(ap);
  return stkpy_raise_status(state, STK_EINVAL, message);
}

/* ---- Small conversions --------------------------------------------------------------------- */

int stkpy_dict_set_steal(PyObject *dict, const char *key, PyObject *value) {
  if (!value) return -1;
  int rc = PyDict_SetItemString(dict, key, value);
  Py_DECREF(value);
  return rc;
}

PyObject *stkpy_str_or_none(const char *text) {
  if (!text) Py_RETURN_NONE;
  return PyUnicode_FromString(text);
}

PyObject *stkpy_cpuset_to_list(const stk_cpuset *set) {
  PyObject *list = PyList_New(0);
  if (!list) return NULL;
  for (int cpu = stk_cpuset_first(set); cpu >= 0; cpu = stk_cpuset_next(set, cpu)) {
    PyObject *item = PyLong_FromLong(cpu);
    if (!item || PyList_Append(list, item) < 0) {
      Py_XDECREF(item);
      Py_DECREF(list);
      return NULL;
    }
    Py_DECREF(item);
  }
  return list;
}

int stkpy_cpuset_from_iterable(PyObject *obj, stk_cpuset *out) {
  stk_cpuset_zero(out);
  PyObject *iter = PyObject_GetIter(obj);
  if (!iter) return -1;
  PyObject *item;
  while ((item = PyIter_Next(iter))) {
    long cpu = PyLong_AsLong(item);
    Py_DECREF(item);
    if (cpu == -1 && PyErr_Occurred()) {
      Py_DECREF(iter);
      return -1;
    }
    if (cpu < 0 || cpu >= STK_MAX_CPUS) {
      Py_DECREF(iter);
      PyErr_Format(PyExc_ValueError, "cpu %ld out of range [0, %d)", cpu, STK_MAX_CPUS);
      return -1;
    }
    stk_cpuset_add(out, (int)cpu);
  }
  Py_DECREF(iter);
  return PyErr_Occurred() ? -1 : 0;
}

const char **stkpy_string_array(PyObject *seq, PyObject **seq_tuple, Py_ssize_t *count, const char *what) {
  *seq_tuple = PySequence_Tuple(seq);
  if (!*seq_tuple) return NULL;
  Py_ssize_t n = PyTuple_Size(*seq_tuple);
  const char **items = (const char **)calloc((size_t)(n ? n : 1), sizeof *items);
  if (!items) {
    Py_CLEAR(*seq_tuple);
    PyErr_NoMemory();
    return NULL;
  }
  for (Py_ssize_t i = 0; i < n; i++) {
    PyObject *item = PyTuple_GetItem(*seq_tuple, i);
    if (!PyUnicode_Check(item)) {
      PyErr_Format(PyExc_TypeError, "%s must be strings", what);
      items[i] = NULL;
    } else {
      items[i] = PyUnicode_AsUTF8AndSize(item, NULL);
    }
    if (!items[i]) {
      free(items);
      Py_CLEAR(*seq_tuple);
      return NULL;
    }
  }
  *count = n;
  return items;
}

/* ---- Operator arguments -------------------------------------------------------------------- */

/* int_list / float_list: every item converted into an int64 or double array. */
static stk_status set_number_list(stk_args *args, const char *name, int is_int, PyObject *value, int *failed) {
  *failed = 1;
  PyObject *tuple = PySequence_Tuple(value);
  if (!tuple) return STK_OK;
  Py_ssize_t n = PyTuple_Size(tuple);
  int64_t *ints = (int64_t *)malloc((size_t)(n ? n : 1) * sizeof *ints);
  double *floats = (double *)malloc((size_t)(n ? n : 1) * sizeof *floats);
  stk_status st = STK_OK;
  if (!ints || !floats) {
    PyErr_NoMemory();
    goto done;
  }
  for (Py_ssize_t i = 0; i < n; i++) {
    PyObject *item = PyTuple_GetItem(tuple, i);
    if (is_int) ints[i] = PyLong_AsLongLong(item);
    else floats[i] = PyFloat_AsDouble(item);
    if (PyErr_Occurred()) goto done;
  }
  *failed = 0;
  st = is_int ? stk_args_set_int_list(args, name, ints, (size_t)n)
              : stk_args_set_float_list(args, name, floats, (size_t)n);
done:
  free(ints);
  free(floats);
  Py_DECREF(tuple);
  return st;
}

/* One scalar or list argument; *failed = 1 when a Python conversion raised. */
static stk_status set_arg_value(stk_args *args, const char *name, const char *kind, PyObject *value, int *failed) {
  *failed = 1;
  if (strcmp(kind, "int") == 0) {
    long long v = PyLong_AsLongLong(value);
    if (v == -1 && PyErr_Occurred()) return STK_OK;
    *failed = 0;
    return stk_args_set_int(args, name, v);
  }
  if (strcmp(kind, "float") == 0) {
    double v = PyFloat_AsDouble(value);
    if (v == -1.0 && PyErr_Occurred()) return STK_OK;
    *failed = 0;
    return stk_args_set_float(args, name, v);
  }
  if (strcmp(kind, "bool") == 0) {
    int v = PyObject_IsTrue(value);
    if (v < 0) return STK_OK;
    *failed = 0;
    return stk_args_set_bool(args, name, v);
  }
  if (strcmp(kind, "str") == 0 || strcmp(kind, "input") == 0) {
    const char *v = PyUnicode_AsUTF8AndSize(value, NULL);
    if (!v) return STK_OK;
    *failed = 0;
    return kind[0] == 's' ? stk_args_set_string(args, name, v) : stk_args_set_input(args, name, v);
  }
  if (strcmp(kind, "int_list") == 0 || strcmp(kind, "float_list") == 0)
    return set_number_list(args, name, kind[0] == 'i', value, failed);
  if (strcmp(kind, "str_list") == 0) {
    PyObject *tuple = NULL;
    Py_ssize_t n = 0;
    const char **values = stkpy_string_array(value, &tuple, &n, "list items");
    if (!values) return STK_OK;
    *failed = 0;
    stk_status st = stk_args_set_string_list(args, name, values, (size_t)n);
    free(values);
    Py_DECREF(tuple);
    return st;
  }
  PyErr_Format(PyExc_ValueError, "unknown argument kind '%s' for '%s'", kind, name);
  return STK_OK;
}

int stkpy_set_arg(stkpy_state *state, stk_args *args, const char *name, const char *kind, PyObject *value) {
  int failed = 0;
  stk_status st = set_arg_value(args, name, kind, value, &failed);
  if (failed) return -1;
  if (st != STK_OK) {
    stkpy_raise_status(state, st, "could not store an operator argument");
    return -1;
  }
  return 0;
}

/* ---- Pipeline options ---------------------------------------------------------------------- */

/* value in [low, high], else an error naming the argument, its value and its bounds. */
static int check_range(stkpy_state *state, const char *name, long long value, long long low, long long high,
                       const char *meaning) {
  if (value >= low && value <= high) return 0;
  stkpy_raise_argument(state, "Pipeline: %s must be at %s %lld (%s), got %lld", name, value < low ? "least" : "most",
                       value < low ? low : high, meaning, value);
  return -1;
}

int stkpy_pipeline_options(stkpy_state *state, PyObject *args, PyObject *kwargs, stk_pipeline_options *options) {
  static char *keywords[] = {"batch_size",
                             "num_threads",
                             "device_id",
                             "seed",
                             "prefetch_queue_depth",
                             "pin_threads",
                             "affinity_mask",
                             "verbose",
                             "stream_priority",
                             "enable_checkpointing",
                             "checkpoint",
                             "exec_dynamic",
                             NULL};
  stk_pipeline_options_default(options);
  long long batch_size = options->batch_size, num_threads = options->num_threads;
  long long device_id = options->device_id, prefetch = options->prefetch_queue_depth;
  long long priority = options->stream_priority;
  unsigned long long seed = options->seed;
  const char *affinity_mask = NULL, *checkpoint = NULL;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|LLLKLpzpLpzp", keywords, &batch_size, &num_threads, &device_id,
                                   &seed, &prefetch, &options->pin_threads, &affinity_mask, &options->verbose,
                                   &priority, &options->enable_checkpointing, &checkpoint, &options->exec_dynamic))
    return -1;
  if (check_range(state, "batch_size", batch_size, 1, INT32_MAX, "samples per batch") < 0 ||
      check_range(state, "num_threads", num_threads, 1, 256, "worker threads") < 0 ||
      check_range(state, "device_id", device_id, -1, INT32_MAX, "-1 or None: CPU only, else a CUDA device") < 0 ||
      check_range(state, "prefetch_queue_depth", prefetch, 0, INT32_MAX,
                  "batches prepared ahead; 0: the pipeline decides at build") < 0 ||
      check_range(state, "stream_priority", priority, STK_STREAM_PRIORITY_HIGH, STK_STREAM_PRIORITY_NORMAL,
                  "0 = high, 1 = normal") < 0)
    return -1;
  options->batch_size = (int)batch_size;
  options->num_threads = (int)num_threads;
  options->device_id = (int)device_id;
  options->prefetch_queue_depth = (int)prefetch;
  options->stream_priority = (int)priority;
  options->seed = seed;
  options->affinity_mask = affinity_mask;
  options->checkpoint = checkpoint; /* borrowed from the argument; stk_pipeline_new copies it */
  return 0;
}

/* ---- C structs -> dicts -------------------------------------------------------------------- */

/* NumPy's array-interface type string of every stk_dtype (little-endian, as stoker's buffers are),
 * so Python builds arrays of any element type without a table of its own. NULL: not a dtype. */
static const char *numpy_typestr(stk_dtype dtype) {
  switch (dtype) {
    case STK_DTYPE_UINT8:
      return "|u1";
    case STK_DTYPE_INT8:
      return "|i1";
    case STK_DTYPE_BOOL:
      return "|b1";
    case STK_DTYPE_INT16:
      return "<i2";
    case STK_DTYPE_UINT16:
      return "<u2";
    case STK_DTYPE_INT32:
      return "<i4";
    case STK_DTYPE_UINT32:
      return "<u4";
    case STK_DTYPE_INT64:
      return "<i8";
    case STK_DTYPE_UINT64:
      return "<u8";
    case STK_DTYPE_FLOAT16:
      return "<f2";
    case STK_DTYPE_FLOAT32:
      return "<f4";
    case STK_DTYPE_FLOAT64:
      return "<f8";
  }
  return NULL;
}

PyObject *stkpy_view_to_dict(const stk_tensor_view *view) {
  const char *typestr = numpy_typestr(view->dtype);
  if (!typestr) {
    PyErr_Format(PyExc_TypeError, "stoker: element type %d has no NumPy equivalent", (int)view->dtype);
    return NULL;
  }
  PyObject *d = PyDict_New();
  PyObject *shape = PyTuple_New(view->ndim);
  if (!d || !shape) goto fail;
  for (int i = 0; i < view->ndim; i++) {
    PyObject *dim = PyLong_FromLongLong(view->shape[i]);
    if (!dim || PyTuple_SetItem(shape, i, dim) < 0) goto fail;
  }
  int failed = stkpy_dict_set_steal(d, "shape", shape) < 0;
  shape = NULL;
  if (failed || stkpy_dict_set_steal(d, "dtype", PyUnicode_FromString(stk_dtype_name(view->dtype))) < 0 ||
      stkpy_dict_set_steal(d, "typestr", PyUnicode_FromString(typestr)) < 0 ||
      stkpy_dict_set_steal(d, "layout", PyUnicode_FromString(view->layout)) < 0 ||
      stkpy_dict_set_steal(d, "device", PyUnicode_FromString(view->device_type == STK_DEVICE_GPU ? "gpu" : "cpu")) <
          0 ||
      stkpy_dict_set_steal(d, "device_id", PyLong_FromLong(view->device_id)) < 0 ||
      stkpy_dict_set_steal(d, "nbytes", PyLong_FromSize_t(view->nbytes)) < 0 ||
      stkpy_dict_set_steal(d, "dense", PyBool_FromLong(view->dense)) < 0 ||
      stkpy_dict_set_steal(d, "data", PyLong_FromVoidPtr(view->data)) < 0)
    goto fail;
  return d;
fail:
  Py_XDECREF(shape);
  Py_XDECREF(d);
  return NULL;
}

PyObject *stkpy_reader_meta_to_dict(const stk_reader_meta *meta) {
  PyObject *d = PyDict_New();
  if (!d) return NULL;
  if (stkpy_dict_set_steal(d, "epoch_size", PyLong_FromLongLong(meta->epoch_size)) < 0 ||
      stkpy_dict_set_steal(d, "epoch_size_padded", PyLong_FromLongLong(meta->epoch_size_padded)) < 0 ||
      stkpy_dict_set_steal(d, "shard_size", PyLong_FromLongLong(meta->shard_size)) < 0 ||
      stkpy_dict_set_steal(d, "shard_id", PyLong_FromLong(meta->shard_id)) < 0 ||
      stkpy_dict_set_steal(d, "number_of_shards", PyLong_FromLong(meta->num_shards)) < 0 ||
      stkpy_dict_set_steal(d, "pad_last_batch", PyBool_FromLong(meta->pad_last_batch)) < 0 ||
      stkpy_dict_set_steal(d, "stick_to_shard", PyBool_FromLong(meta->stick_to_shard)) < 0 ||
      stkpy_dict_set_steal(d, "epoch", PyLong_FromUnsignedLongLong(meta->epoch)) < 0 ||
      stkpy_dict_set_steal(d, "epoch_next_batch", PyLong_FromLongLong(meta->epoch_next_batch)) < 0 ||
      stkpy_dict_set_steal(d, "epoch_batches", PyLong_FromLongLong(meta->epoch_batches)) < 0 ||
      stkpy_dict_set_steal(d, "epoch_full_batches", PyLong_FromLongLong(meta->epoch_full_batches)) < 0 ||
      stkpy_dict_set_steal(d, "epoch_reader", PyBool_FromLong(meta->is_epoch_reader)) < 0) {
    Py_DECREF(d);
    return NULL;
  }
  return d;
}

/* thread_cpus (list) and op_seconds (dict by node name) of the stats. */
static int stats_lists(PyObject *d, const stk_pipeline *pipe, const stk_pipeline_stats *stats) {
  int num_threads = stats->num_threads < 0 ? 0 : (stats->num_threads > 256 ? 256 : stats->num_threads);
  int num_nodes = stats->num_nodes < 0 ? 0 : (stats->num_nodes > 32 ? 32 : stats->num_nodes);
  PyObject *cpus = PyList_New(num_threads);
  if (stkpy_dict_set_steal(d, "thread_cpus", cpus) < 0) return -1;
  for (int i = 0; i < num_threads; i++) {
    PyObject *cpu = PyLong_FromLong(stats->thread_cpus[i]);
    if (!cpu || PyList_SetItem(cpus, i, cpu) < 0) return -1;
  }
  PyObject *op_seconds = PyDict_New();
  if (stkpy_dict_set_steal(d, "op_seconds", op_seconds) < 0) return -1;
  for (int i = 0; i < num_nodes; i++) {
    const char *node = stk_pipeline_node_name(pipe, i);
    if (node && stkpy_dict_set_steal(op_seconds, node, PyFloat_FromDouble(stats->op_seconds[i])) < 0) return -1;
  }
  return 0;
}

PyObject *stkpy_stats_to_dict(const stk_pipeline *pipe, const stk_pipeline_stats *s) {
  PyObject *d = PyDict_New();
  if (!d) return NULL;
  if (stats_lists(d, pipe, s) < 0 || stkpy_dict_set_steal(d, "batches", PyLong_FromUnsignedLongLong(s->batches)) < 0 ||
      stkpy_dict_set_steal(d, "images", PyLong_FromUnsignedLongLong(s->images)) < 0 ||
      stkpy_dict_set_steal(d, "bytes_read", PyLong_FromUnsignedLongLong(s->bytes_read)) < 0 ||
      stkpy_dict_set_steal(d, "skipped_files", PyLong_FromUnsignedLongLong(s->skipped_files)) < 0 ||
      stkpy_dict_set_steal(d, "allocations", PyLong_FromUnsignedLongLong(s->allocations)) < 0 ||
      stkpy_dict_set_steal(d, "batches_discarded", PyLong_FromUnsignedLongLong(s->batches_discarded)) < 0 ||
      stkpy_dict_set_steal(d, "allocations_after_warmup", PyLong_FromUnsignedLongLong(s->allocations_after_warmup)) <
          0 ||
      stkpy_dict_set_steal(d, "time_to_first_batch_s", PyFloat_FromDouble(s->time_to_first_batch_s)) < 0 ||
      stkpy_dict_set_steal(d, "decoded_hw", PyLong_FromUnsignedLongLong(s->decoded_hw)) < 0 ||
      stkpy_dict_set_steal(d, "decoded_cuda", PyLong_FromUnsignedLongLong(s->decoded_cuda)) < 0 ||
      stkpy_dict_set_steal(d, "decoded_hybrid", PyLong_FromUnsignedLongLong(s->decoded_hybrid)) < 0 ||
      stkpy_dict_set_steal(d, "decoded_cpu", PyLong_FromUnsignedLongLong(s->decoded_cpu)) < 0 ||
      stkpy_dict_set_steal(d, "decoder_route", PyUnicode_FromString(s->decoder_route)) < 0 ||
      stkpy_dict_set_steal(d, "device_bytes_held", PyLong_FromUnsignedLongLong(s->device_bytes_held)) < 0 ||
      stkpy_dict_set_steal(d, "pinned_bytes_held", PyLong_FromUnsignedLongLong(s->pinned_bytes_held)) < 0 ||
      stkpy_dict_set_steal(d, "host_memory_budget", PyLong_FromUnsignedLongLong(s->host_memory_budget)) < 0 ||
      stkpy_dict_set_steal(d, "prefetch_queue_depth", PyLong_FromLong(s->prefetch_queue_depth)) < 0 ||
      stkpy_dict_set_steal(d, "next_wait_s", PyFloat_FromDouble(s->next_wait_s)) < 0 ||
      stkpy_dict_set_steal(d, "batch_latency_s", PyFloat_FromDouble(s->batch_latency_s)) < 0 ||
      stkpy_dict_set_steal(d, "gpu_stage_s", PyFloat_FromDouble(s->gpu_stage_s)) < 0 ||
      stkpy_dict_set_steal(d, "upload_s", PyFloat_FromDouble(s->upload_s)) < 0 ||
      stkpy_dict_set_steal(d, "slot_wait_s", PyFloat_FromDouble(s->slot_wait_s)) < 0) {
    Py_DECREF(d);
    return NULL;
  }
  return d;
}
