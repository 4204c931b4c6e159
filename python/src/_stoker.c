/* python/src/_stoker.c: the `stoker._stoker` extension module, a thin CPython binding over
 * stoker's public C API (the headers under include/stoker/ only). Written against the limited API (abi3, Python
 * 3.10+), so one build imports on every later CPython.
 *
 * What it exposes (the Python layer in python/stoker/ builds the user-facing API on it):
 *   - the operator registry as plain data (op_schemas()),
 *   - Pipeline: options, add_op, set_outputs, build, next (-> Batch or None at end of epoch),
 *     reset, reader_meta, stats, close,
 *   - Batch: per-output metadata, DLPack export (PyCapsule "dltensor"), host sample copies,
 *     release,
 *   - topology JSON, the affinity planner, CPU/memory binding.
 *
 * Hot path: Pipeline.next, Batch.to_dlpack and Batch.release run once per batch; they release the
 * GIL around the blocking C calls. Everything else runs at set-up time.
 *
 * GPU batches: an exported GPU tensor is handed over through stk_batch_to_dlpack_on_stream with the
 * consumer's stream (DLPack's __dlpack__(stream=...)): the stream waits on the batch's event, and
 * the tensor's deleter records the stream so the pipeline does not reuse the memory while GPU work
 * queued there may still read it. The extension needs no CUDA header: the library does both. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "stoker/stoker.h"

static PyObject *stoker_error_type; /* stoker._stoker.Error */

/* ---- Errors ------------------------------------------------------------------------------- */

/* Raises stoker._stoker.Error(message) with .status = "STK_..." and .code = int. */
static PyObject *raise_status(stk_status status, const char *detail) {
  const char *message = (detail && detail[0]) ? detail : stk_strerror(status);
  PyObject *exc = PyObject_CallFunction(stoker_error_type, "s", message);
  if (!exc) return NULL;
  PyObject *name = PyUnicode_FromString(stk_status_name(status));
  PyObject *code = PyLong_FromLong((long)status);
  if (name && code) {
    PyObject_SetAttrString(exc, "status", name);
    PyObject_SetAttrString(exc, "code", code);
  }
  Py_XDECREF(name);
  Py_XDECREF(code);
  PyErr_SetObject(stoker_error_type, exc);
  Py_DECREF(exc);
  return NULL;
}

/* ---- Small conversions ---------------------------------------------------------------------- */

static PyObject *cpuset_to_list(const stk_cpuset *set) {
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

static int cpuset_from_iterable(PyObject *obj, stk_cpuset *out) {
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

/* Sets d[key] = value and drops the reference to value; returns -1 on failure. */
static int dict_set_steal(PyObject *d, const char *key, PyObject *value) {
  if (!value) return -1;
  int rc = PyDict_SetItemString(d, key, value);
  Py_DECREF(value);
  return rc;
}

static PyObject *str_or_none(const char *s) {
  if (!s) Py_RETURN_NONE;
  return PyUnicode_FromString(s);
}


/* ---- Batch ---------------------------------------------------------------------------------- */

typedef struct {
  PyObject_HEAD
  stk_batch *batch; /* NULL once released */
} BatchObject;

static PyObject *batch_type; /* heap type */

static int batch_check_alive(BatchObject *self) {
  if (!self->batch) {
    PyErr_SetString(stoker_error_type,
                    "this batch was released (the pipeline was asked for the next batch, or release() was "
                    "called); copy outputs you need to keep before that");
    return -1;
  }
  return 0;
}

static void batch_release_now(BatchObject *self) {
  stk_batch *batch = self->batch;
  self->batch = NULL;
  if (batch) {
    Py_BEGIN_ALLOW_THREADS
    stk_batch_release(batch);
    Py_END_ALLOW_THREADS
  }
}

static void batch_dealloc(PyObject *obj) {
  BatchObject *self = (BatchObject *)obj;
  PyTypeObject *type = Py_TYPE(obj);
  if (self->batch) stk_batch_release(self->batch);
  self->batch = NULL;
  freefunc tp_free = (freefunc)PyType_GetSlot(type, Py_tp_free);
  tp_free(obj);
  Py_DECREF(type);
}

static PyObject *batch_release(PyObject *obj, PyObject *unused) {
  batch_release_now((BatchObject *)obj);
  Py_RETURN_NONE;
}

static PyObject *batch_is_released(PyObject *obj, PyObject *unused) {
  return PyBool_FromLong(((BatchObject *)obj)->batch == NULL);
}

static PyObject *batch_num_outputs(PyObject *obj, PyObject *unused) {
  BatchObject *self = (BatchObject *)obj;
  if (batch_check_alive(self) < 0) return NULL;
  return PyLong_FromLong(stk_batch_num_outputs(self->batch));
}

static PyObject *batch_info(PyObject *obj, PyObject *unused) {
  BatchObject *self = (BatchObject *)obj;
  if (batch_check_alive(self) < 0) return NULL;
  PyObject *d = PyDict_New();
  if (!d) return NULL;
  if (dict_set_steal(d, "size", PyLong_FromLong(stk_batch_size(self->batch))) < 0 ||
      dict_set_steal(d, "epoch", PyLong_FromLongLong(stk_batch_epoch(self->batch))) < 0 ||
      dict_set_steal(d, "valid_samples", PyLong_FromLong(stk_batch_valid_samples(self->batch))) < 0 ||
      dict_set_steal(d, "num_outputs", PyLong_FromLong(stk_batch_num_outputs(self->batch))) < 0 ||
      dict_set_steal(d, "cuda_event", PyLong_FromVoidPtr(stk_batch_cuda_event(self->batch))) < 0) {
    Py_DECREF(d);
    return NULL;
  }
  return d;
}

static PyObject *view_to_dict(const stk_tensor_view *view) {
  PyObject *d = PyDict_New();
  if (!d) return NULL;
  PyObject *shape = PyTuple_New(view->ndim);
  if (!shape) {
    Py_DECREF(d);
    return NULL;
  }
  for (int i = 0; i < view->ndim; i++) {
    PyObject *dim = PyLong_FromLongLong(view->shape[i]);
    if (!dim) {
      Py_DECREF(shape);
      Py_DECREF(d);
      return NULL;
    }
    PyTuple_SetItem(shape, i, dim);
  }
  if (dict_set_steal(d, "shape", shape) < 0 ||
      dict_set_steal(d, "dtype", PyUnicode_FromString(stk_dtype_name(view->dtype))) < 0 ||
      dict_set_steal(d, "layout", PyUnicode_FromString(view->layout)) < 0 ||
      dict_set_steal(d, "device", PyUnicode_FromString(view->device_type == STK_DEVICE_GPU ? "gpu" : "cpu")) < 0 ||
      dict_set_steal(d, "device_id", PyLong_FromLong(view->device_id)) < 0 ||
      dict_set_steal(d, "nbytes", PyLong_FromSize_t(view->nbytes)) < 0 ||
      dict_set_steal(d, "dense", PyBool_FromLong(view->dense)) < 0 ||
      dict_set_steal(d, "data", PyLong_FromVoidPtr(view->data)) < 0) {
    Py_DECREF(d);
    return NULL;
  }
  return d;
}

/* output_info(i) -> dict (shape, dtype, layout, device, device_id, nbytes, dense, data) of the
 * dense tensor, or None when the output is ragged (see sample_info). */
static PyObject *batch_output_info(PyObject *obj, PyObject *args) {
  BatchObject *self = (BatchObject *)obj;
  int output;
  if (!PyArg_ParseTuple(args, "i", &output)) return NULL;
  if (batch_check_alive(self) < 0) return NULL;
  if (output < 0 || output >= stk_batch_num_outputs(self->batch))
    return PyErr_Format(PyExc_IndexError, "output %d out of range (batch has %d outputs)", output,
                        stk_batch_num_outputs(self->batch));
  stk_tensor_view view;
  stk_status st = stk_batch_tensor(self->batch, output, &view);
  if (st == STK_ESTATE) Py_RETURN_NONE;
  if (st != STK_OK) return raise_status(st, "batch output is not available as a tensor");
  return view_to_dict(&view);
}

static PyObject *batch_sample_info(PyObject *obj, PyObject *args) {
  BatchObject *self = (BatchObject *)obj;
  int output, sample;
  if (!PyArg_ParseTuple(args, "ii", &output, &sample)) return NULL;
  if (batch_check_alive(self) < 0) return NULL;
  if (output < 0 || output >= stk_batch_num_outputs(self->batch))
    return PyErr_Format(PyExc_IndexError, "output %d out of range", output);
  if (sample < 0 || sample >= stk_batch_size(self->batch))
    return PyErr_Format(PyExc_IndexError, "sample %d out of range (batch size %d)", sample, stk_batch_size(self->batch));
  stk_tensor_view view;
  stk_status st = stk_batch_sample(self->batch, output, sample, &view);
  if (st != STK_OK) return raise_status(st, "batch sample is not available");
  return view_to_dict(&view);
}

/* sample_bytes(output, sample) -> bytes: a host copy of one sample (host outputs only). */
static PyObject *batch_sample_bytes(PyObject *obj, PyObject *args) {
  BatchObject *self = (BatchObject *)obj;
  int output, sample;
  if (!PyArg_ParseTuple(args, "ii", &output, &sample)) return NULL;
  if (batch_check_alive(self) < 0) return NULL;
  if (output < 0 || output >= stk_batch_num_outputs(self->batch))
    return PyErr_Format(PyExc_IndexError, "output %d out of range", output);
  if (sample < 0 || sample >= stk_batch_size(self->batch))
    return PyErr_Format(PyExc_IndexError, "sample %d out of range (batch size %d)", sample, stk_batch_size(self->batch));
  stk_tensor_view view;
  stk_status st = stk_batch_sample(self->batch, output, sample, &view);
  if (st != STK_OK) return raise_status(st, "batch sample is not available");
  if (view.device_type != STK_DEVICE_CPU)
    return raise_status(STK_ENOTSUP, "sample_bytes: this output lives on the GPU; export it with DLPack instead");
  return PyBytes_FromStringAndSize((const char *)view.data, (Py_ssize_t)view.nbytes);
}

static void dlpack_capsule_destructor(PyObject *capsule) {
  /* Only an unconsumed capsule still owns its tensor: a consumer renames it "used_dltensor". */
  if (!PyCapsule_IsValid(capsule, "dltensor")) return;
  PyObject *type, *value, *traceback;
  PyErr_Fetch(&type, &value, &traceback);
  DLManagedTensor *tensor = (DLManagedTensor *)PyCapsule_GetPointer(capsule, "dltensor");
  if (tensor && tensor->deleter) tensor->deleter(tensor);
  PyErr_Restore(type, value, traceback);
}

/* to_dlpack(output, stream=None) -> PyCapsule "dltensor". For GPU outputs the consumer's `stream`
 * is made to wait on the batch's event first (None = legacy default stream, -1 = no
 * synchronization), and when the tensor is freed the stream is recorded on the batch, so the
 * pipeline reuses the memory only after the GPU work queued there has finished
 * (stk_batch_to_dlpack_on_stream). The capsule holds a reference on the batch: the memory stays
 * valid until the consumer's tensor is freed, even after release(). */
static PyObject *batch_to_dlpack(PyObject *obj, PyObject *args, PyObject *kwargs) {
  BatchObject *self = (BatchObject *)obj;
  static char *keywords[] = {"output", "stream", NULL};
  int output;
  PyObject *stream_obj = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "i|O", keywords, &output, &stream_obj)) return NULL;
  if (batch_check_alive(self) < 0) return NULL;
  if (output < 0 || output >= stk_batch_num_outputs(self->batch))
    return PyErr_Format(PyExc_IndexError, "output %d out of range", output);
  stk_tensor_view view;
  stk_status st = stk_batch_tensor(self->batch, output, &view);
  if (st == STK_ESTATE)
    return raise_status(st, "this output is ragged (samples differ in shape): it has no single DLPack tensor; "
                            "use per-sample access, or resize/crop to one shape in the pipeline");
  if (st != STK_OK) return raise_status(st, "batch output is not available as a tensor");
  DLManagedTensor *tensor = NULL;
  if (view.device_type == STK_DEVICE_GPU) {
    long long stream = 1; /* None: the legacy default stream */
    if (stream_obj != Py_None) {
      stream = PyLong_AsLongLong(stream_obj);
      if (stream == -1 && PyErr_Occurred()) return NULL;
    }
    Py_BEGIN_ALLOW_THREADS
    st = stream == -1 ? stk_batch_to_dlpack(self->batch, output, &tensor)
                      : stk_batch_to_dlpack_on_stream(self->batch, output, (void *)(intptr_t)stream, &tensor);
    Py_END_ALLOW_THREADS
  } else {
    st = stk_batch_to_dlpack(self->batch, output, &tensor);
  }
  if (st != STK_OK) return raise_status(st, "DLPack export failed");
  PyObject *capsule = PyCapsule_New(tensor, "dltensor", dlpack_capsule_destructor);
  if (!capsule) tensor->deleter(tensor);
  return capsule;
}

static PyMethodDef batch_methods[] = {
    {"release", batch_release, METH_NOARGS, "Give the batch's buffers back to the pipeline (idempotent)."},
    {"is_released", batch_is_released, METH_NOARGS, "True once release() ran."},
    {"num_outputs", batch_num_outputs, METH_NOARGS, "Number of outputs."},
    {"info", batch_info, METH_NOARGS, "dict: size, epoch, valid_samples, num_outputs, cuda_event."},
    {"output_info", batch_output_info, METH_VARARGS, "Dense tensor metadata of an output, or None if ragged."},
    {"sample_info", batch_sample_info, METH_VARARGS, "Metadata of one sample of an output."},
    {"sample_bytes", batch_sample_bytes, METH_VARARGS, "Host copy of one sample's bytes."},
    {"to_dlpack", (PyCFunction)(void (*)(void))batch_to_dlpack, METH_VARARGS | METH_KEYWORDS,
     "Export a dense output as a DLPack 'dltensor' capsule (zero-copy)."},
    {NULL, NULL, 0, NULL}};

static PyType_Slot batch_slots[] = {
    {Py_tp_dealloc, batch_dealloc},
    {Py_tp_methods, batch_methods},
    {Py_tp_doc, "One batch of pipeline outputs (internal; see stoker.pipeline)."},
    {0, NULL}};

static PyType_Spec batch_spec = {"stoker._stoker.Batch", sizeof(BatchObject), 0, Py_TPFLAGS_DEFAULT, batch_slots};

/* ---- Pipeline ------------------------------------------------------------------------------- */

typedef struct {
  PyObject_HEAD
  stk_pipeline *pipe;
  int busy; /* a call is running with the GIL released */
} PipelineObject;

static int pipeline_enter(PipelineObject *self) {
  if (!self->pipe) {
    PyErr_SetString(stoker_error_type, "the pipeline is closed");
    return -1;
  }
  if (self->busy) {
    PyErr_SetString(stoker_error_type,
                    "the pipeline is in use by another thread (drive one pipeline from one thread at a time)");
    return -1;
  }
  return 0;
}

static PyObject *pipeline_raise(PipelineObject *self, stk_status st) {
  return raise_status(st, self->pipe ? stk_pipeline_last_error(self->pipe) : NULL);
}

static int pipeline_init(PyObject *obj, PyObject *args, PyObject *kwargs) {
  PipelineObject *self = (PipelineObject *)obj;
  static char *keywords[] = {"batch_size", "num_threads", "device_id", "seed", "prefetch_queue_depth",
                             "pin_threads", "affinity_mask", "verbose", "stream_priority", "enable_checkpointing",
                             "checkpoint", NULL};
  stk_pipeline_options options;
  stk_pipeline_options_default(&options);
  unsigned long long seed = options.seed;
  const char *affinity_mask = NULL, *checkpoint = NULL;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|iiiKipzpipz", keywords, &options.batch_size, &options.num_threads,
                                   &options.device_id, &seed, &options.prefetch_queue_depth, &options.pin_threads,
                                   &affinity_mask, &options.verbose, &options.stream_priority,
                                   &options.enable_checkpointing, &checkpoint))
    return -1;
  options.checkpoint = checkpoint; /* copied by stk_pipeline_new */
  options.seed = seed;
  options.affinity_mask = affinity_mask;
  if (self->pipe) {
    PyErr_SetString(stoker_error_type, "Pipeline.__init__ called twice");
    return -1;
  }
  stk_pipeline *pipe = NULL;
  stk_status st = stk_pipeline_new(&options, &pipe);
  if (st != STK_OK) {
    raise_status(st, "could not create the pipeline (check batch_size, num_threads, device_id, prefetch_queue_depth, "
                        "stream_priority)");
    return -1;
  }
  self->pipe = pipe;
  return 0;
}

static void pipeline_close_now(PipelineObject *self) {
  stk_pipeline *pipe = self->pipe;
  self->pipe = NULL;
  if (pipe) {
    Py_BEGIN_ALLOW_THREADS
    stk_pipeline_destroy(pipe);
    Py_END_ALLOW_THREADS
  }
}

static void pipeline_dealloc(PyObject *obj) {
  PipelineObject *self = (PipelineObject *)obj;
  PyTypeObject *type = Py_TYPE(obj);
  pipeline_close_now(self);
  freefunc tp_free = (freefunc)PyType_GetSlot(type, Py_tp_free);
  tp_free(obj);
  Py_DECREF(type);
}

static PyObject *pipeline_close(PyObject *obj, PyObject *unused) {
  PipelineObject *self = (PipelineObject *)obj;
  if (self->busy) {
    PyErr_SetString(stoker_error_type, "close(): the pipeline is in use by another thread");
    return NULL;
  }
  pipeline_close_now(self);
  Py_RETURN_NONE;
}

static PyObject *pipeline_is_closed(PyObject *obj, PyObject *unused) {
  return PyBool_FromLong(((PipelineObject *)obj)->pipe == NULL);
}

static PyObject *pipeline_last_error(PyObject *obj, PyObject *unused) {
  PipelineObject *self = (PipelineObject *)obj;
  return PyUnicode_FromString(self->pipe ? stk_pipeline_last_error(self->pipe) : "");
}

/* Converts a Python sequence of str into a malloc'd array of borrowed UTF-8 pointers (valid while
 * `seq_fast` lives). */
static const char **string_array(PyObject *seq, PyObject **seq_fast, Py_ssize_t *count, const char *what) {
  *seq_fast = PySequence_Tuple(seq);
  if (!*seq_fast) return NULL;
  Py_ssize_t n = PyTuple_Size(*seq_fast);
  const char **items = (const char **)calloc((size_t)(n ? n : 1), sizeof *items);
  if (!items) {
    Py_CLEAR(*seq_fast);
    PyErr_NoMemory();
    return NULL;
  }
  for (Py_ssize_t i = 0; i < n; i++) {
    PyObject *item = PyTuple_GetItem(*seq_fast, i);
    if (!PyUnicode_Check(item)) {
      PyErr_Format(PyExc_TypeError, "%s must be strings", what);
      free(items);
      Py_CLEAR(*seq_fast);
      return NULL;
    }
    items[i] = PyUnicode_AsUTF8AndSize(item, NULL);
    if (!items[i]) {
      free(items);
      Py_CLEAR(*seq_fast);
      return NULL;
    }
  }
  *count = n;
  return items;
}

/* Sets one argument on args from (name, kind, value); kind is one of
 * "int", "float", "bool", "str", "int_list", "float_list", "str_list", "input". */
static int set_one_arg(stk_args *args, const char *name, const char *kind, PyObject *value) {
  stk_status st = STK_OK;
  if (strcmp(kind, "int") == 0) {
    long long v = PyLong_AsLongLong(value);
    if (v == -1 && PyErr_Occurred()) return -1;
    st = stk_args_set_int(args, name, v);
  } else if (strcmp(kind, "float") == 0) {
    double v = PyFloat_AsDouble(value);
    if (v == -1.0 && PyErr_Occurred()) return -1;
    st = stk_args_set_float(args, name, v);
  } else if (strcmp(kind, "bool") == 0) {
    int v = PyObject_IsTrue(value);
    if (v < 0) return -1;
    st = stk_args_set_bool(args, name, v);
  } else if (strcmp(kind, "str") == 0 || strcmp(kind, "input") == 0) {
    const char *v = PyUnicode_AsUTF8AndSize(value, NULL);
    if (!v) return -1;
    st = kind[0] == 's' ? stk_args_set_string(args, name, v) : stk_args_set_input(args, name, v);
  } else if (strcmp(kind, "int_list") == 0 || strcmp(kind, "float_list") == 0) {
    PyObject *tuple = PySequence_Tuple(value);
    if (!tuple) return -1;
    Py_ssize_t n = PyTuple_Size(tuple);
    int is_int = kind[0] == 'i';
    void *values = malloc((size_t)(n ? n : 1) * 8);
    if (!values) {
      Py_DECREF(tuple);
      PyErr_NoMemory();
      return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
      PyObject *item = PyTuple_GetItem(tuple, i);
      if (is_int) {
        ((int64_t *)values)[i] = PyLong_AsLongLong(item);
      } else {
        ((double *)values)[i] = PyFloat_AsDouble(item);
      }
      if (PyErr_Occurred()) {
        free(values);
        Py_DECREF(tuple);
        return -1;
      }
    }
    st = is_int ? stk_args_set_int_list(args, name, (const int64_t *)values, (size_t)n)
                : stk_args_set_float_list(args, name, (const double *)values, (size_t)n);
    free(values);
    Py_DECREF(tuple);
  } else if (strcmp(kind, "str_list") == 0) {
    PyObject *tuple = NULL;
    Py_ssize_t n = 0;
    const char **values = string_array(value, &tuple, &n, "list items");
    if (!values) return -1;
    st = stk_args_set_string_list(args, name, values, (size_t)n);
    free(values);
    Py_DECREF(tuple);
  } else {
    PyErr_Format(PyExc_ValueError, "unknown argument kind '%s' for '%s'", kind, name);
    return -1;
  }
  if (st != STK_OK) {
    raise_status(st, "could not store an operator argument");
    return -1;
  }
  return 0;
}

/* add_op(op_name, instance_name, inputs, args) with args a sequence of (name, kind, value). */
static PyObject *pipeline_add_op(PyObject *obj, PyObject *call_args) {
  PipelineObject *self = (PipelineObject *)obj;
  const char *op_name, *instance_name;
  PyObject *inputs_obj, *args_obj;
  if (!PyArg_ParseTuple(call_args, "szOO", &op_name, &instance_name, &inputs_obj, &args_obj)) return NULL;
  if (pipeline_enter(self) < 0) return NULL;

  PyObject *inputs_tuple = NULL, *args_tuple = NULL, *result = NULL;
  Py_ssize_t num_inputs = 0;
  stk_args *args = NULL;
  const char **inputs = string_array(inputs_obj, &inputs_tuple, &num_inputs, "operator inputs");
  if (!inputs) return NULL;
  stk_status st = stk_args_new(&args);
  if (st != STK_OK) {
    raise_status(st, "could not allocate operator arguments");
    goto done;
  }
  args_tuple = PySequence_Tuple(args_obj);
  if (!args_tuple) goto done;
  for (Py_ssize_t i = 0; i < PyTuple_Size(args_tuple); i++) {
    const char *name, *kind;
    PyObject *value;
    if (!PyArg_ParseTuple(PyTuple_GetItem(args_tuple, i), "ssO", &name, &kind, &value)) goto done;
    if (set_one_arg(args, name, kind, value) < 0) goto done;
  }
  st = stk_pipeline_add_op(self->pipe, op_name, instance_name, inputs, (size_t)num_inputs, args);
  if (st != STK_OK) {
    pipeline_raise(self, st);
    goto done;
  }
  result = Py_None;
  Py_INCREF(result);
done:
  stk_args_destroy(args);
  free(inputs);
  Py_XDECREF(inputs_tuple);
  Py_XDECREF(args_tuple);
  return result;
}

static PyObject *pipeline_set_outputs(PyObject *obj, PyObject *call_args) {
  PipelineObject *self = (PipelineObject *)obj;
  PyObject *outputs_obj, *tuple = NULL;
  Py_ssize_t count = 0;
  if (!PyArg_ParseTuple(call_args, "O", &outputs_obj)) return NULL;
  if (pipeline_enter(self) < 0) return NULL;
  const char **outputs = string_array(outputs_obj, &tuple, &count, "pipeline outputs");
  if (!outputs) return NULL;
  stk_status st = stk_pipeline_set_outputs(self->pipe, outputs, (size_t)count);
  free(outputs);
  Py_DECREF(tuple);
  if (st != STK_OK) return pipeline_raise(self, st);
  Py_RETURN_NONE;
}

static PyObject *pipeline_build(PyObject *obj, PyObject *unused) {
  PipelineObject *self = (PipelineObject *)obj;
  if (pipeline_enter(self) < 0) return NULL;
  stk_status st;
  self->busy = 1;
  Py_BEGIN_ALLOW_THREADS
  st = stk_pipeline_build(self->pipe);
  Py_END_ALLOW_THREADS
  self->busy = 0;
  if (st != STK_OK) return pipeline_raise(self, st);
  Py_RETURN_NONE;
}

static PyObject *pipeline_add_builtin(PyObject *obj, PyObject *call_args) {
  PipelineObject *self = (PipelineObject *)obj;
  const char *name, *data_dir;
  if (!PyArg_ParseTuple(call_args, "ss", &name, &data_dir)) return NULL;
  if (pipeline_enter(self) < 0) return NULL;
  stk_status st = stk_pipeline_add_builtin(self->pipe, name, data_dir);
  if (st != STK_OK) return pipeline_raise(self, st);
  Py_RETURN_NONE;
}

/* next() -> Batch, or None at the end of the epoch. */
static PyObject *pipeline_next(PyObject *obj, PyObject *unused) {
  PipelineObject *self = (PipelineObject *)obj;
  if (pipeline_enter(self) < 0) return NULL;
  stk_batch *batch = NULL;
  stk_status st;
  self->busy = 1;
  Py_BEGIN_ALLOW_THREADS
  st = stk_pipeline_next(self->pipe, &batch);
  Py_END_ALLOW_THREADS
  self->busy = 0;
  if (st == STK_EOF_EPOCH) Py_RETURN_NONE;
  if (st != STK_OK) return pipeline_raise(self, st);
  BatchObject *result = PyObject_New(BatchObject, (PyTypeObject *)batch_type);
  if (!result) {
    stk_batch_release(batch);
    return NULL;
  }
  result->batch = batch;
  return (PyObject *)result;
}

static PyObject *pipeline_reset(PyObject *obj, PyObject *unused) {
  PipelineObject *self = (PipelineObject *)obj;
  if (pipeline_enter(self) < 0) return NULL;
  stk_status st;
  self->busy = 1;
  Py_BEGIN_ALLOW_THREADS
  st = stk_pipeline_reset(self->pipe);
  Py_END_ALLOW_THREADS
  self->busy = 0;
  if (st != STK_OK) return pipeline_raise(self, st);
  Py_RETURN_NONE;
}

static PyObject *pipeline_reader_meta(PyObject *obj, PyObject *call_args) {
  PipelineObject *self = (PipelineObject *)obj;
  const char *name = NULL;
  if (!PyArg_ParseTuple(call_args, "|z", &name)) return NULL;
  if (pipeline_enter(self) < 0) return NULL;
  stk_reader_meta meta;
  memset(&meta, 0, sizeof meta);
  stk_status st = stk_pipeline_reader_meta(self->pipe, name, &meta);
  if (st != STK_OK) return pipeline_raise(self, st);
  PyObject *d = PyDict_New();
  if (!d) return NULL;
  if (dict_set_steal(d, "epoch_size", PyLong_FromLongLong(meta.epoch_size)) < 0 ||
      dict_set_steal(d, "epoch_size_padded", PyLong_FromLongLong(meta.epoch_size_padded)) < 0 ||
      dict_set_steal(d, "shard_size", PyLong_FromLongLong(meta.shard_size)) < 0 ||
      dict_set_steal(d, "shard_id", PyLong_FromLong(meta.shard_id)) < 0 ||
      dict_set_steal(d, "number_of_shards", PyLong_FromLong(meta.num_shards)) < 0 ||
      dict_set_steal(d, "pad_last_batch", PyBool_FromLong(meta.pad_last_batch)) < 0 ||
      dict_set_steal(d, "stick_to_shard", PyBool_FromLong(meta.stick_to_shard)) < 0) {
    Py_DECREF(d);
    return NULL;
  }
  return d;
}

static PyObject *pipeline_stats(PyObject *obj, PyObject *unused) {
  PipelineObject *self = (PipelineObject *)obj;
  if (pipeline_enter(self) < 0) return NULL;
  stk_pipeline_stats stats;
  memset(&stats, 0, sizeof stats);
  stk_status st = stk_pipeline_stats_get(self->pipe, &stats);
  if (st != STK_OK) return pipeline_raise(self, st);
  PyObject *d = PyDict_New();
  if (!d) return NULL;
  int num_threads = stats.num_threads < 0 ? 0 : (stats.num_threads > 256 ? 256 : stats.num_threads);
  int num_nodes = stats.num_nodes < 0 ? 0 : (stats.num_nodes > 32 ? 32 : stats.num_nodes);
  PyObject *cpus = PyList_New(num_threads);
  PyObject *op_seconds = PyDict_New();
  if (!cpus || !op_seconds) goto fail;
  for (int i = 0; i < num_threads; i++) PyList_SetItem(cpus, i, PyLong_FromLong(stats.thread_cpus[i]));
  for (int i = 0; i < num_nodes; i++) {
    const char *node = stk_pipeline_node_name(self->pipe, i);
    if (node && dict_set_steal(op_seconds, node, PyFloat_FromDouble(stats.op_seconds[i])) < 0) goto fail;
  }
  if (dict_set_steal(d, "batches", PyLong_FromUnsignedLongLong(stats.batches)) < 0 ||
      dict_set_steal(d, "images", PyLong_FromUnsignedLongLong(stats.images)) < 0 ||
      dict_set_steal(d, "bytes_read", PyLong_FromUnsignedLongLong(stats.bytes_read)) < 0 ||
      dict_set_steal(d, "skipped_files", PyLong_FromUnsignedLongLong(stats.skipped_files)) < 0 ||
      dict_set_steal(d, "allocations", PyLong_FromUnsignedLongLong(stats.allocations)) < 0 ||
      dict_set_steal(d, "allocations_after_warmup", PyLong_FromUnsignedLongLong(stats.allocations_after_warmup)) < 0 ||
      dict_set_steal(d, "time_to_first_batch_s", PyFloat_FromDouble(stats.time_to_first_batch_s)) < 0 ||
      dict_set_steal(d, "decoded_hw", PyLong_FromUnsignedLongLong(stats.decoded_hw)) < 0 ||
      dict_set_steal(d, "decoded_cuda", PyLong_FromUnsignedLongLong(stats.decoded_cuda)) < 0 ||
      dict_set_steal(d, "decoded_hybrid", PyLong_FromUnsignedLongLong(stats.decoded_hybrid)) < 0 ||
      dict_set_steal(d, "decoded_cpu", PyLong_FromUnsignedLongLong(stats.decoded_cpu)) < 0 ||
      dict_set_steal(d, "device_bytes_held", PyLong_FromUnsignedLongLong(stats.device_bytes_held)) < 0 ||
      dict_set_steal(d, "pinned_bytes_held", PyLong_FromUnsignedLongLong(stats.pinned_bytes_held)) < 0 ||
      dict_set_steal(d, "next_wait_s", PyFloat_FromDouble(stats.next_wait_s)) < 0 ||
      dict_set_steal(d, "batch_latency_s", PyFloat_FromDouble(stats.batch_latency_s)) < 0 ||
      dict_set_steal(d, "gpu_stage_s", PyFloat_FromDouble(stats.gpu_stage_s)) < 0 ||
      dict_set_steal(d, "upload_s", PyFloat_FromDouble(stats.upload_s)) < 0 ||
      dict_set_steal(d, "slot_wait_s", PyFloat_FromDouble(stats.slot_wait_s)) < 0)
    goto fail;
  if (dict_set_steal(d, "thread_cpus", cpus) < 0) {
    cpus = NULL;
    goto fail;
  }
  cpus = NULL;
  if (dict_set_steal(d, "op_seconds", op_seconds) < 0) {
    op_seconds = NULL;
    goto fail;
  }
  return d;
fail:
  Py_XDECREF(cpus);
  Py_XDECREF(op_seconds);
  Py_DECREF(d);
  return NULL;
}

/* checkpoint() -> str: the consumer's position (stk_pipeline_checkpoint). */
static PyObject *pipeline_checkpoint(PyObject *obj, PyObject *unused) {
  PipelineObject *self = (PipelineObject *)obj;
  if (pipeline_enter(self) < 0) return NULL;
  char *text = NULL;
  stk_status st = stk_pipeline_checkpoint(self->pipe, &text);
  if (st != STK_OK) return pipeline_raise(self, st);
  PyObject *result = PyUnicode_FromString(text);
  stk_free(text);
  return result;
}

/* restore(text): stk_pipeline_restore (before build, or on a built pipeline). */
static PyObject *pipeline_restore(PyObject *obj, PyObject *call_args) {
  PipelineObject *self = (PipelineObject *)obj;
  const char *text;
  if (!PyArg_ParseTuple(call_args, "s", &text)) return NULL;
  if (pipeline_enter(self) < 0) return NULL;
  stk_status st;
  self->busy = 1;
  Py_BEGIN_ALLOW_THREADS
  st = stk_pipeline_restore(self->pipe, text);
  Py_END_ALLOW_THREADS
  self->busy = 0;
  if (st != STK_OK) return pipeline_raise(self, st);
  Py_RETURN_NONE;
}

static PyMethodDef pipeline_methods[] = {
    {"checkpoint", pipeline_checkpoint, METH_NOARGS, "The pipeline's checkpoint text (stk_pipeline_checkpoint)."},
    {"restore", pipeline_restore, METH_VARARGS, "restore(text): resume from a checkpoint (stk_pipeline_restore)."},
    {"add_op", pipeline_add_op, METH_VARARGS, "add_op(op_name, instance_name, inputs, [(name, kind, value)...])"},
    {"add_builtin", pipeline_add_builtin, METH_VARARGS, "add_builtin(name, data_dir)"},
    {"set_outputs", pipeline_set_outputs, METH_VARARGS, "set_outputs([node_output, ...])"},
    {"build", pipeline_build, METH_NOARGS, "Validate the graph, start the workers, begin prefetching."},
    {"next", pipeline_next, METH_NOARGS, "Next Batch, or None at the end of the epoch."},
    {"reset", pipeline_reset, METH_NOARGS, "Start the next epoch."},
    {"reader_meta", pipeline_reader_meta, METH_VARARGS, "reader_meta(name=None) -> dict"},
    {"stats", pipeline_stats, METH_NOARGS, "Pipeline statistics as a dict."},
    {"last_error", pipeline_last_error, METH_NOARGS, "The C side's last error message."},
    {"close", pipeline_close, METH_NOARGS, "Stop the threads and free the pipeline (idempotent)."},
    {"is_closed", pipeline_is_closed, METH_NOARGS, "True once close() ran."},
    {NULL, NULL, 0, NULL}};

static PyType_Slot pipeline_slots[] = {
    {Py_tp_init, pipeline_init},
    {Py_tp_new, PyType_GenericNew},
    {Py_tp_dealloc, pipeline_dealloc},
    {Py_tp_methods, pipeline_methods},
    {Py_tp_doc, "A C pipeline handle (internal; see stoker.pipeline.Pipeline)."},
    {0, NULL}};

static PyType_Spec pipeline_spec = {"stoker._stoker.Pipeline", sizeof(PipelineObject), 0,
                                    Py_TPFLAGS_DEFAULT, pipeline_slots};

/* ---- Module functions ----------------------------------------------------------------------- */

static PyObject *mod_version(PyObject *m, PyObject *unused) { return PyUnicode_FromString(stk_version_string()); }
static PyObject *mod_build_info(PyObject *m, PyObject *unused) { return PyUnicode_FromString(stk_build_info()); }

static const char *device_names(unsigned devices, char *buf, size_t size) {
  buf[0] = '\0';
  if (devices & STK_OPDEV_CPU) strncat(buf, "cpu,", size - strlen(buf) - 1);
  if (devices & STK_OPDEV_MIXED) strncat(buf, "mixed,", size - strlen(buf) - 1);
  if (devices & STK_OPDEV_GPU) strncat(buf, "gpu,", size - strlen(buf) - 1);
  size_t n = strlen(buf);
  if (n) buf[n - 1] = '\0';
  return buf;
}

/* op_schemas() -> list of dicts: name, doc, min_inputs, max_inputs, num_outputs, devices (list of
 * "cpu"/"mixed"/"gpu"), args (list of dicts: name, type, default, required, doc). */
static PyObject *mod_op_schemas(PyObject *m, PyObject *unused) {
  int count = stk_op_count();
  PyObject *list = PyList_New(0);
  if (!list) return NULL;
  for (int i = 0; i < count; i++) {
    stk_op_schema_info info;
    stk_status st = stk_op_schema(i, &info);
    if (st != STK_OK) {
      Py_DECREF(list);
      return raise_status(st, "could not read the operator registry");
    }
    PyObject *d = PyDict_New();
    PyObject *args = PyList_New(0);
    char devices[32];
    if (!d || !args) goto fail_item;
    for (int a = 0; a < info.num_args; a++) {
      stk_op_arg_info arg;
      if (stk_op_arg(i, a, &arg) != STK_OK) continue;
      PyObject *ad = PyDict_New();
      if (!ad) goto fail_item;
      if (dict_set_steal(ad, "name", PyUnicode_FromString(arg.name)) < 0 ||
          dict_set_steal(ad, "type", PyUnicode_FromString(stk_arg_type_name(arg.type))) < 0 ||
          dict_set_steal(ad, "default", str_or_none(arg.default_value)) < 0 ||
          dict_set_steal(ad, "required", PyBool_FromLong(arg.required)) < 0 ||
          dict_set_steal(ad, "doc", PyUnicode_FromString(arg.doc ? arg.doc : "")) < 0 ||
          PyList_Append(args, ad) < 0) {
        Py_DECREF(ad);
        goto fail_item;
      }
      Py_DECREF(ad);
    }
    device_names(info.devices, devices, sizeof devices);
    PyObject *device_list = PyUnicode_FromString(devices);
    if (dict_set_steal(d, "name", PyUnicode_FromString(info.name)) < 0 ||
        dict_set_steal(d, "doc", PyUnicode_FromString(info.doc ? info.doc : "")) < 0 ||
        dict_set_steal(d, "min_inputs", PyLong_FromLong(info.min_inputs)) < 0 ||
        dict_set_steal(d, "max_inputs", PyLong_FromLong(info.max_inputs)) < 0 ||
        dict_set_steal(d, "num_outputs", PyLong_FromLong(info.num_outputs)) < 0 ||
        dict_set_steal(d, "devices", device_list) < 0 || PyDict_SetItemString(d, "args", args) < 0 ||
        PyList_Append(list, d) < 0)
      goto fail_item;
    Py_DECREF(args);
    Py_DECREF(d);
    continue;
  fail_item:
    Py_XDECREF(args);
    Py_XDECREF(d);
    Py_DECREF(list);
    return NULL;
  }
  return list;
}

static stk_status load_topology(const char *sysfs_root, stk_topology **out) {
  stk_topology *topo = NULL;
  stk_status st = stk_topology_new(&topo);
  if (st != STK_OK) {
    raise_status(st, "could not allocate a topology");
    return st;
  }
  stk_topology_options options;
  stk_topology_options_default(&options);
  options.sysfs_root = sysfs_root;
  Py_BEGIN_ALLOW_THREADS
  st = stk_topology_load(topo, &options);
  Py_END_ALLOW_THREADS
  if (st != STK_OK) {
    raise_status(st, stk_topology_last_error(topo));
    stk_topology_destroy(topo);
    return st;
  }
  *out = topo;
  return STK_OK;
}

static PyObject *mod_topology_json(PyObject *m, PyObject *args) {
  const char *sysfs_root = NULL;
  if (!PyArg_ParseTuple(args, "|z", &sysfs_root)) return NULL;
  stk_topology *topo = NULL;
  if (load_topology(sysfs_root, &topo) != STK_OK) return NULL;
  char *json = NULL;
  stk_status st = stk_topology_to_json(topo, &json);
  PyObject *result = NULL;
  if (st != STK_OK)
    raise_status(st, stk_topology_last_error(topo));
  else
    result = PyUnicode_FromString(json);
  stk_free(json);
  stk_topology_destroy(topo);
  return result;
}

/* plan(nproc_per_node, mode, cores, balanced, sysfs_root=None, allowed=None) -> list of dicts
 * (gpu, status, error, cpus, numa_node) for ranks 0..nproc_per_node-1. nproc_per_node <= 0 means
 * one per GPU. Raises when the options are invalid (e.g. no GPUs). */
static PyObject *mod_plan(PyObject *m, PyObject *args, PyObject *kwargs) {
  static char *keywords[] = {"nproc_per_node", "mode", "cores", "balanced", "sysfs_root", "allowed", NULL};
  int nproc = 0, balanced = 1;
  const char *mode = "socket_unique_contiguous", *cores = "all_logical", *sysfs_root = NULL;
  PyObject *allowed_obj = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|isspzO", keywords, &nproc, &mode, &cores, &balanced, &sysfs_root,
                                   &allowed_obj))
    return NULL;
  stk_plan_options options;
  stk_plan_options_default(&options);
  if (stk_affinity_mode_parse(mode, &options.mode) != STK_OK)
    return PyErr_Format(PyExc_ValueError,
                        "unknown affinity mode '%s' (none, socket, socket_single, socket_single_unique, "
                        "socket_unique_interleaved, socket_unique_contiguous)",
                        mode);
  if (stk_cores_mode_parse(cores, &options.cores) != STK_OK)
    return PyErr_Format(PyExc_ValueError, "unknown cores mode '%s' (all_logical, single_logical)", cores);
  options.balanced = balanced;
  if (allowed_obj != Py_None) {
    if (cpuset_from_iterable(allowed_obj, &options.allowed) < 0) return NULL;
    options.use_allowed = 1;
  }
  stk_topology *topo = NULL;
  if (load_topology(sysfs_root, &topo) != STK_OK) return NULL;
  int num_gpus = stk_topology_num_gpus(topo);
  if (nproc <= 0) nproc = num_gpus;
  if (nproc <= 0) {
    stk_topology_destroy(topo);
    return raise_status(STK_ENODEV, "no GPU found in the topology: there is no GPU to plan CPU affinity for");
  }
  options.nproc_per_node = nproc;
  stk_plan_rank *ranks = (stk_plan_rank *)calloc((size_t)nproc, sizeof *ranks);
  if (!ranks) {
    stk_topology_destroy(topo);
    return PyErr_NoMemory();
  }
  stk_status st = stk_plan_compute(topo, &options, ranks);
  PyObject *list = NULL;
  if (st != STK_OK && st != STK_EPLAN) {
    raise_status(st, ranks[0].error);
    goto done;
  }
  list = PyList_New(0);
  if (!list) goto done;
  for (int r = 0; r < nproc; r++) {
    PyObject *d = PyDict_New();
    stk_gpu_info gpu;
    int numa_node = -1;
    if (stk_topology_gpu(topo, ranks[r].gpu, &gpu) == STK_OK) numa_node = gpu.numa_node;
    if (!d || dict_set_steal(d, "gpu", PyLong_FromLong(ranks[r].gpu)) < 0 ||
        dict_set_steal(d, "status", PyUnicode_FromString(stk_status_name(ranks[r].status))) < 0 ||
        dict_set_steal(d, "error", PyUnicode_FromString(ranks[r].status == STK_OK ? "" : ranks[r].error)) < 0 ||
        dict_set_steal(d, "numa_node", PyLong_FromLong(numa_node)) < 0 ||
        dict_set_steal(d, "cpus", ranks[r].status == STK_OK ? cpuset_to_list(&ranks[r].cpus) : PyList_New(0)) < 0 ||
        PyList_Append(list, d) < 0) {
      Py_XDECREF(d);
      Py_CLEAR(list);
      goto done;
    }
    Py_DECREF(d);
  }
done:
  free(ranks);
  stk_topology_destroy(topo);
  return list;
}

static PyObject *mod_num_gpus(PyObject *m, PyObject *args) {
  const char *sysfs_root = NULL;
  if (!PyArg_ParseTuple(args, "|z", &sysfs_root)) return NULL;
  stk_topology *topo = NULL;
  if (load_topology(sysfs_root, &topo) != STK_OK) return NULL;
  int n = stk_topology_num_gpus(topo);
  stk_topology_destroy(topo);
  return PyLong_FromLong(n);
}

static PyObject *mod_bind_process_cpus(PyObject *m, PyObject *args) {
  int pid;
  PyObject *cpus_obj;
  if (!PyArg_ParseTuple(args, "iO", &pid, &cpus_obj)) return NULL;
  stk_cpuset cpus;
  if (cpuset_from_iterable(cpus_obj, &cpus) < 0) return NULL;
  if (stk_cpuset_is_empty(&cpus)) return PyErr_Format(PyExc_ValueError, "refusing to bind to an empty CPU set");
  stk_status st = stk_bind_process_cpus(pid, &cpus);
  if (st != STK_OK) return raise_status(st, "setting the CPU affinity failed (are these CPUs allowed?)");
  Py_RETURN_NONE;
}

static PyObject *mod_bind_thread_cpus(PyObject *m, PyObject *args) {
  PyObject *cpus_obj;
  if (!PyArg_ParseTuple(args, "O", &cpus_obj)) return NULL;
  stk_cpuset cpus;
  if (cpuset_from_iterable(cpus_obj, &cpus) < 0) return NULL;
  if (stk_cpuset_is_empty(&cpus)) return PyErr_Format(PyExc_ValueError, "refusing to bind to an empty CPU set");
  stk_status st = stk_bind_thread_cpus(&cpus);
  if (st != STK_OK) return raise_status(st, "setting the thread's CPU affinity failed");
  Py_RETURN_NONE;
}

/* bind_memory(numa_node, policy) with policy "bind", "preferred" or "none". */
static PyObject *mod_bind_memory(PyObject *m, PyObject *args) {
  int node;
  const char *policy_name;
  if (!PyArg_ParseTuple(args, "is", &node, &policy_name)) return NULL;
  stk_mempolicy policy;
  if (strcmp(policy_name, "bind") == 0)
    policy = STK_MEMPOLICY_BIND;
  else if (strcmp(policy_name, "preferred") == 0)
    policy = STK_MEMPOLICY_PREFERRED;
  else if (strcmp(policy_name, "none") == 0)
    policy = STK_MEMPOLICY_NONE;
  else
    return PyErr_Format(PyExc_ValueError, "unknown memory policy '%s' (bind, preferred, none)", policy_name);
  stk_status st = stk_bind_memory(node, policy);
  if (st != STK_OK) return raise_status(st, "setting the memory policy failed");
  Py_RETURN_NONE;
}

static PyObject *mod_get_affinity(PyObject *m, PyObject *args) {
  int pid = 0;
  if (!PyArg_ParseTuple(args, "|i", &pid)) return NULL;
  stk_cpuset cpus;
  stk_status st = stk_get_affinity(pid, &cpus);
  if (st != STK_OK) return raise_status(st, "reading the CPU affinity failed");
  return cpuset_to_list(&cpus);
}

static PyObject *mod_strerror(PyObject *m, PyObject *args) {
  int code;
  if (!PyArg_ParseTuple(args, "i", &code)) return NULL;
  return PyUnicode_FromString(stk_strerror((stk_status)code));
}

static PyMethodDef module_methods[] = {
    {"version", mod_version, METH_NOARGS, "The C library's version string."},
    {"build_info", mod_build_info, METH_NOARGS, "How the C library was built."},
    {"op_schemas", mod_op_schemas, METH_NOARGS, "The operator registry as a list of dicts."},
    {"topology_json", mod_topology_json, METH_VARARGS, "topology_json(sysfs_root=None) -> str"},
    {"num_gpus", mod_num_gpus, METH_VARARGS, "num_gpus(sysfs_root=None) -> int"},
    {"plan", (PyCFunction)(void (*)(void))mod_plan, METH_VARARGS | METH_KEYWORDS,
     "plan(nproc_per_node=0, mode, cores, balanced, sysfs_root=None, allowed=None) -> [dict]"},
    {"bind_process_cpus", mod_bind_process_cpus, METH_VARARGS, "bind_process_cpus(pid, cpus)"},
    {"bind_thread_cpus", mod_bind_thread_cpus, METH_VARARGS, "bind_thread_cpus(cpus)"},
    {"bind_memory", mod_bind_memory, METH_VARARGS, "bind_memory(numa_node, 'bind'|'preferred'|'none')"},
    {"get_affinity", mod_get_affinity, METH_VARARGS, "get_affinity(pid=0) -> [cpu]"},
    {"strerror", mod_strerror, METH_VARARGS, "strerror(code) -> str"},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module_def = {PyModuleDef_HEAD_INIT, "_stoker",
                                        "stoker's C library (internal; import stoker instead).", -1, module_methods,
                                        NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__stoker(void) {
  PyObject *m = PyModule_Create(&module_def);
  if (!m) return NULL;
  stoker_error_type = PyErr_NewExceptionWithDoc("stoker._stoker.Error",
                                                "An error reported by stoker's C library; .status names the code.",
                                                PyExc_RuntimeError, NULL);
  batch_type = PyType_FromSpec(&batch_spec);
  PyObject *pipeline_type = PyType_FromSpec(&pipeline_spec);
  if (!stoker_error_type || !batch_type || !pipeline_type) goto fail;
  Py_INCREF(stoker_error_type);
  if (PyModule_AddObject(m, "Error", stoker_error_type) < 0) goto fail;
  Py_INCREF(batch_type);
  if (PyModule_AddObject(m, "Batch", batch_type) < 0) goto fail;
  if (PyModule_AddObject(m, "Pipeline", pipeline_type) < 0) goto fail;
  if (PyModule_AddIntConstant(m, "HEADER_VERSION", STK_VERSION) < 0) goto fail;
  return m;
fail:
  Py_XDECREF(pipeline_type);
  Py_DECREF(m);
  return NULL;
}
