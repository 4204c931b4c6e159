/* python/src/pipeline.c: the Pipeline type, a C pipeline handle: options, add_op / add_builtin /
 * set_outputs, build, next (-> Batch, or None at the end of the epoch), reset, reader_meta, stats,
 * close.
 *
 * build, next and reset may wait (on files, on the workers): they run on the pipeline's call
 * thread (runner.c), so Ctrl-C reaches a waiting caller within a slice, and close() from another
 * thread ends the wait instead of being refused. The quick calls run on the calling thread once
 * no call is in progress (stkpy_runner_enter). The Python layer (stoker.Pipeline) serializes the
 * calls of several threads and decides which batch each thread may release.
 *
 * Hot path: next, once per batch. */
#include "ext.h" /* first: Python.h comes before the system headers */

#include <stdlib.h>
#include <string.h>

typedef struct {
  PyObject_HEAD stkpy_runner *runner; /* owns the C pipeline; NULL before __init__ */
} PipelineObject;

static stk_pipeline *pipeline_enter(PipelineObject *self) {
  if (!self->runner) {
    stkpy_raise_status(stkpy_state_of((PyObject *)self), STK_ESTATE, "the pipeline was not initialized");
    return NULL;
  }
  return stkpy_runner_enter(self->runner, stkpy_state_of((PyObject *)self));
}

static PyObject *pipeline_raise(PipelineObject *self, stk_pipeline *pipe, stk_status st) {
  return stkpy_raise_status(stkpy_state_of((PyObject *)self), st, stk_pipeline_last_error(pipe));
}

static int pipeline_init(PyObject *obj, PyObject *args, PyObject *kwargs) {
  PipelineObject *self = (PipelineObject *)obj;
  stkpy_state *state = stkpy_state_of(obj);
  stk_pipeline_options options;
  if (stkpy_pipeline_options(state, args, kwargs, &options) < 0) return -1;
  if (self->runner) {
    stkpy_raise_status(state, STK_ESTATE, "Pipeline.__init__ called twice");
    return -1;
  }
  stk_pipeline *pipe = NULL;
  stk_status st = stk_pipeline_new(&options, &pipe);
  if (st != STK_OK) {
    stkpy_raise_status(state, st, "could not create the pipeline");
    return -1;
  }
  self->runner = stkpy_runner_new(pipe);
  return self->runner ? 0 : -1;
}

static void pipeline_dealloc(PyObject *obj) {
  PipelineObject *self = (PipelineObject *)obj;
  PyTypeObject *type = Py_TYPE(obj);
  stkpy_runner_free(self->runner);
  self->runner = NULL;
  freefunc tp_free = (freefunc)PyType_GetSlot(type, Py_tp_free);
  tp_free(obj);
  Py_DECREF(type);
}

/* close(): never refused and never waits for a call in progress (see runner.c). */
static PyObject *pipeline_close(PyObject *obj, PyObject *unused) {
  PipelineObject *self = (PipelineObject *)obj;
  if (self->runner) stkpy_runner_close(self->runner);
  Py_RETURN_NONE;
}

static PyObject *pipeline_is_closed(PyObject *obj, PyObject *unused) {
  PipelineObject *self = (PipelineObject *)obj;
  return PyBool_FromLong(!self->runner || stkpy_runner_is_closed(self->runner));
}

static PyObject *pipeline_last_error(PyObject *obj, PyObject *unused) {
  PipelineObject *self = (PipelineObject *)obj;
  if (!self->runner || stkpy_runner_is_closed(self->runner)) return PyUnicode_FromString("");
  stk_pipeline *pipe = pipeline_enter(self);
  return pipe ? PyUnicode_FromString(stk_pipeline_last_error(pipe)) : NULL;
}

/* Fills args from a sequence of (name, kind, value). 0, or -1 with an exception set. */
static int collect_args(stkpy_state *state, PyObject *args_obj, stk_args *args) {
  PyObject *args_tuple = PySequence_Tuple(args_obj);
  if (!args_tuple) return -1;
  int rc = 0;
  for (Py_ssize_t i = 0; rc == 0 && i < PyTuple_Size(args_tuple); i++) {
    const char *name, *kind;
    PyObject *value;
    if (!PyArg_ParseTuple(PyTuple_GetItem(args_tuple, i), "ssO", &name, &kind, &value)) rc = -1;
    else rc = stkpy_set_arg(state, args, name, kind, value);
  }
  Py_DECREF(args_tuple);
  return rc;
}

/* add_op(op_name, instance_name, inputs, args) with args a sequence of (name, kind, value). */
static PyObject *pipeline_add_op(PyObject *obj, PyObject *call_args) {
  PipelineObject *self = (PipelineObject *)obj;
  stkpy_state *state = stkpy_state_of(obj);
  const char *op_name, *instance_name;
  PyObject *inputs_obj, *args_obj;
  if (!PyArg_ParseTuple(call_args, "szOO", &op_name, &instance_name, &inputs_obj, &args_obj)) return NULL;
  stk_pipeline *pipe = pipeline_enter(self);
  if (!pipe) return NULL;
  PyObject *inputs_tuple = NULL, *result = NULL;
  Py_ssize_t num_inputs = 0;
  stk_args *args = NULL;
  const char **inputs = stkpy_string_array(inputs_obj, &inputs_tuple, &num_inputs, "operator inputs");
  if (!inputs) return NULL;
  stk_status st = stk_args_new(&args);
  if (st != STK_OK) {
    stkpy_raise_status(state, st, "could not allocate operator arguments");
    goto done;
  }
  if (collect_args(state, args_obj, args) < 0) goto done;
  st = stk_pipeline_add_op(pipe, op_name, instance_name, inputs, (size_t)num_inputs, args);
  if (st != STK_OK) {
    pipeline_raise(self, pipe, st);
    goto done;
  }
  result = Py_None;
  Py_INCREF(result);
done:
  stk_args_destroy(args);
  free(inputs);
  Py_XDECREF(inputs_tuple);
  return result;
}

static PyObject *pipeline_set_outputs(PyObject *obj, PyObject *call_args) {
  PipelineObject *self = (PipelineObject *)obj;
  PyObject *outputs_obj, *tuple = NULL;
  Py_ssize_t count = 0;
  if (!PyArg_ParseTuple(call_args, "O", &outputs_obj)) return NULL;
  stk_pipeline *pipe = pipeline_enter(self);
  if (!pipe) return NULL;
  const char **outputs = stkpy_string_array(outputs_obj, &tuple, &count, "pipeline outputs");
  if (!outputs) return NULL;
  stk_status st = stk_pipeline_set_outputs(pipe, outputs, (size_t)count);
  free(outputs);
  Py_DECREF(tuple);
  if (st != STK_OK) return pipeline_raise(self, pipe, st);
  Py_RETURN_NONE;
}

static PyObject *pipeline_add_builtin(PyObject *obj, PyObject *call_args) {
  PipelineObject *self = (PipelineObject *)obj;
  const char *name, *data_dir;
  if (!PyArg_ParseTuple(call_args, "ss", &name, &data_dir)) return NULL;
  stk_pipeline *pipe = pipeline_enter(self);
  if (!pipe) return NULL;
  stk_status st = stk_pipeline_add_builtin(pipe, name, data_dir);
  if (st != STK_OK) return pipeline_raise(self, pipe, st);
  Py_RETURN_NONE;
}

/* Makes a blocking call on the call thread. 0 on STK_OK / STK_EOF_EPOCH (*status says which),
 * else -1 with an exception set (interrupted, closed, or the call's own error). */
static int pipeline_call(PipelineObject *self, stkpy_call call, stk_status *status, stk_batch **batch) {
  stkpy_state *state = stkpy_state_of((PyObject *)self);
  const char *error = "";
  if (!self->runner) {
    stkpy_raise_status(state, STK_ESTATE, "the pipeline was not initialized");
    return -1;
  }
  if (stkpy_runner_call(self->runner, state, call, status, batch, &error) < 0) return -1;
  if (*status == STK_OK || *status == STK_EOF_EPOCH) return 0;
  stkpy_raise_status(state, *status, error);
  return -1;
}

static PyObject *pipeline_build(PyObject *obj, PyObject *unused) {
  stk_status st;
  stk_batch *batch = NULL;
  if (pipeline_call((PipelineObject *)obj, STKPY_CALL_BUILD, &st, &batch) < 0) return NULL;
  Py_RETURN_NONE;
}

/* next() -> Batch, or None at the end of the epoch. */
static PyObject *pipeline_next(PyObject *obj, PyObject *unused) {
  stk_status st;
  stk_batch *batch = NULL;
  if (pipeline_call((PipelineObject *)obj, STKPY_CALL_NEXT, &st, &batch) < 0) return NULL;
  if (st == STK_EOF_EPOCH || !batch) Py_RETURN_NONE;
  return stkpy_batch_new(stkpy_state_of(obj), batch);
}

static PyObject *pipeline_reset(PyObject *obj, PyObject *unused) {
  stk_status st;
  stk_batch *batch = NULL;
  if (pipeline_call((PipelineObject *)obj, STKPY_CALL_RESET, &st, &batch) < 0) return NULL;
  Py_RETURN_NONE;
}

static PyObject *pipeline_reader_meta(PyObject *obj, PyObject *call_args) {
  PipelineObject *self = (PipelineObject *)obj;
  const char *name = NULL;
  if (!PyArg_ParseTuple(call_args, "|z", &name)) return NULL;
  stk_pipeline *pipe = pipeline_enter(self);
  if (!pipe) return NULL;
  stk_reader_meta meta;
  memset(&meta, 0, sizeof meta);
  stk_status st = stk_pipeline_reader_meta(pipe, name, &meta);
  if (st != STK_OK) return pipeline_raise(self, pipe, st);
  return stkpy_reader_meta_to_dict(&meta);
}

static PyObject *pipeline_stats(PyObject *obj, PyObject *unused) {
  PipelineObject *self = (PipelineObject *)obj;
  stk_pipeline *pipe = pipeline_enter(self);
  if (!pipe) return NULL;
  stk_pipeline_stats stats;
  memset(&stats, 0, sizeof stats);
  stk_status st = stk_pipeline_stats_get(pipe, &stats);
  if (st != STK_OK) return pipeline_raise(self, pipe, st);
  return stkpy_stats_to_dict(pipe, &stats);
}

/* One sample description (ptr, dtype code, shape tuple, nbytes, layout[, on_gpu, device_id]) ->
 * view; on_gpu 1: ptr is GPU memory on GPU device_id (-1: unknown, which the feed refuses). 0 or -1. */
static int sample_view(stkpy_state *state, PyObject *item, Py_ssize_t index, stk_tensor_view *v) {
  PyObject *shape = NULL;
  unsigned long long ptr = 0, nbytes = 0;
  int dtype = 0, on_gpu = 0, device_id = -1;
  const char *layout = "";
  if (!PyTuple_Check(item) || !PyArg_ParseTuple(item, "KiO!Ks|ii", &ptr, &dtype, &PyTuple_Type, &shape, &nbytes,
                                                &layout, &on_gpu, &device_id)) {
    if (!PyErr_Occurred() || PyErr_ExceptionMatches(PyExc_TypeError)) {
      PyErr_Clear();
      stkpy_raise_argument(state,
                           "feed_input: sample description %zd must be (pointer, dtype, shape, nbytes, layout"
                           "[, on_gpu, device_id])",
                           (Py_ssize_t)index);
    }
    return -1;
  }
  memset(v, 0, sizeof *v);
  Py_ssize_t ndim = PyTuple_Size(shape);
  if (ndim > STK_MAX_DIMS) {
    stkpy_raise_argument(state, "feed_input: sample %zd has %zd dimensions (at most %d)", (Py_ssize_t)index, ndim,
                         STK_MAX_DIMS - 1);
    return -1;
  }
  v->data = (void *)(uintptr_t)ptr;
  v->dtype = (stk_dtype)dtype;
  v->ndim = (int)ndim;
  for (Py_ssize_t d = 0; d < ndim; d++) {
    v->shape[d] = PyLong_AsLongLong(PyTuple_GetItem(shape, d));
    if (v->shape[d] == -1 && PyErr_Occurred()) return -1;
  }
  v->nbytes = (size_t)nbytes;
  v->device_type = on_gpu ? STK_DEVICE_GPU : STK_DEVICE_CPU;
  v->device_id = on_gpu ? device_id : -1;
  snprintf(v->layout, sizeof v->layout, "%s", layout);
  return 0;
}

/* feed_input(name, samples, count, flags=0, cuda_stream=0): samples[o * count + s] describes
 * sample s of output o as (pointer, stk_dtype code, shape, nbytes, layout[, on_gpu, device_id]); the
 * caller keeps the memory alive for the call (or, with no_copy, until the batch is released).
 * cuda_stream: the producer's stream of GPU samples (stk_pipeline_feed_input_stream; 0 = none).
 * count = -1: the end mark. The copy runs with the GIL released. */
static PyObject *pipeline_feed_input(PyObject *obj, PyObject *call_args) {
  PipelineObject *self = (PipelineObject *)obj;
  stkpy_state *state = stkpy_state_of(obj);
  const char *name;
  PyObject *samples;
  int count;
  unsigned int flags = 0;
  unsigned long long cuda_stream = 0;
  if (!PyArg_ParseTuple(call_args, "sOi|IK", &name, &samples, &count, &flags, &cuda_stream)) return NULL;
  PyObject *seq = PySequence_Tuple(samples);
  if (!seq) return NULL;
  Py_ssize_t n = PyTuple_Size(seq);
  stk_tensor_view *views = calloc((size_t)n + 1, sizeof *views);
  if (!views) {
    Py_DECREF(seq);
    return PyErr_NoMemory();
  }
  int failed = 0;
  for (Py_ssize_t i = 0; i < n && !failed; i++) failed = sample_view(state, PyTuple_GetItem(seq, i), i, &views[i]);
  Py_DECREF(seq);
  stk_pipeline *pipe = failed ? NULL : pipeline_enter(self);
  if (!pipe) {
    free(views);
    return NULL;
  }
  stk_status st;
  if (count < 0) {
    st = stk_pipeline_feed_end(pipe, name);
  } else if (n % (count ? count : 1) != 0 || count == 0) {
    free(views);
    return stkpy_raise_argument(state, "feed_input(%s): %zd sample descriptions for batches of %d", name, n, count);
  } else {
    Py_BEGIN_ALLOW_THREADS st =
        stk_pipeline_feed_input_stream(pipe, name, views, count, flags, (void *)(uintptr_t)cuda_stream);
    Py_END_ALLOW_THREADS
  }
  free(views);
  if (st != STK_OK) return pipeline_raise(self, pipe, st);
  Py_RETURN_NONE;
}

/* checkpoint() -> str: the consumer's position (stk_pipeline_checkpoint; O(1), never waits). */
static PyObject *pipeline_checkpoint(PyObject *obj, PyObject *unused) {
  PipelineObject *self = (PipelineObject *)obj;
  stk_pipeline *pipe = pipeline_enter(self);
  if (!pipe) return NULL;
  char *text = NULL;
  stk_status st = stk_pipeline_checkpoint(pipe, &text);
  if (st != STK_OK) return pipeline_raise(self, pipe, st);
  PyObject *result = PyUnicode_FromString(text);
  stk_free(text);
  return result;
}

/* restore(text): stk_pipeline_restore, before build or on a built pipeline (then it waits for the
 * batches in flight to be dropped: bounded, a few batches' work). The GIL stays held, so close()
 * from another thread cannot free the pipeline under it. */
static PyObject *pipeline_restore(PyObject *obj, PyObject *call_args) {
  PipelineObject *self = (PipelineObject *)obj;
  const char *text;
  if (!PyArg_ParseTuple(call_args, "s", &text)) return NULL;
  stk_pipeline *pipe = pipeline_enter(self);
  if (!pipe) return NULL;
  stk_status st = stk_pipeline_restore(pipe, text);
  if (st != STK_OK) return pipeline_raise(self, pipe, st);
  Py_RETURN_NONE;
}

static PyMethodDef pipeline_methods[] = {
    {"feed_input", pipeline_feed_input, METH_VARARGS,
     "feed_input(name, [(pointer, dtype, shape, nbytes, layout[, on_gpu, device_id]), ...], count, flags=0, "
     "cuda_stream=0); count=-1: end mark"},
    {"checkpoint", pipeline_checkpoint, METH_NOARGS, "The pipeline's checkpoint text (stk_pipeline_checkpoint)."},
    {"restore", pipeline_restore, METH_VARARGS, "restore(text): resume from a checkpoint (stk_pipeline_restore)."},
    {"add_op", pipeline_add_op, METH_VARARGS, "add_op(op_name, instance_name, inputs, [(name, kind, value)...])"},
    {"add_builtin", pipeline_add_builtin, METH_VARARGS, "add_builtin(name, data_dir)"},
    {"set_outputs", pipeline_set_outputs, METH_VARARGS, "set_outputs([node_output, ...])"},
    {"build", pipeline_build, METH_NOARGS, "Validate the graph, start the workers, begin prefetching."},
    {"next", pipeline_next, METH_NOARGS,
     "Next Batch, or None at the end of the epoch. Interruptible: an interrupted call goes on, and the "
     "next call of next() returns its batch."},
    {"reset", pipeline_reset, METH_NOARGS, "Start the next epoch."},
    {"reader_meta", pipeline_reader_meta, METH_VARARGS, "reader_meta(name=None) -> dict"},
    {"stats", pipeline_stats, METH_NOARGS, "Pipeline statistics as a dict."},
    {"last_error", pipeline_last_error, METH_NOARGS, "The C side's last error message."},
    {"close", pipeline_close, METH_NOARGS,
     "Stop the threads and free the pipeline (idempotent; never waits for a call in progress)."},
    {"is_closed", pipeline_is_closed, METH_NOARGS, "True once close() ran."},
    {NULL, NULL, 0, NULL}};

static PyType_Slot pipeline_slots[] = {{Py_tp_init, pipeline_init},
                                       {Py_tp_new, PyType_GenericNew},
                                       {Py_tp_dealloc, pipeline_dealloc},
                                       {Py_tp_methods, pipeline_methods},
                                       {Py_tp_doc, "A C pipeline handle (internal; see stoker.pipeline.Pipeline)."},
                                       {0, NULL}};

PyType_Spec stkpy_pipeline_spec = {"stoker._stoker.Pipeline", sizeof(PipelineObject), 0, Py_TPFLAGS_DEFAULT,
                                   pipeline_slots};
