/* python/src/batch.c: the Batch type, one batch of pipeline outputs: per-output metadata, DLPack
 * export (PyCapsule "dltensor"), host copies of samples, release.
 *
 * Hot path: to_dlpack and release run once per output / batch; they release the GIL around the
 * calls that may wait. GPU batches: an exported GPU tensor is handed over through
 * stk_batch_to_dlpack_on_stream with the consumer's stream (DLPack's __dlpack__(stream=...)): the
 * stream waits on the batch's event, and the tensor's deleter records the stream so the pipeline
 * does not reuse the memory while GPU work queued there may still read it. The extension needs no
 * CUDA header: the library does both. */
#include "ext.h" /* first: Python.h comes before the system headers */

#include <stdint.h>
#include <string.h>
#include <unistd.h>

typedef struct {
  PyObject_HEAD stk_batch *batch; /* owned; NULL once released */
  pid_t owner;                    /* the process that got it: a forked child only forgets it (see runner.c) */
} BatchObject;

/* Gives the batch back, unless this is a forked child, where the pipeline's threads do not run
 * and its locks may have been held at the fork: there the batch is only forgotten. */
static void give_back(BatchObject *self) {
  stk_batch *batch = self->batch;
  self->batch = NULL;
  if (!batch || self->owner != getpid()) return;
  Py_BEGIN_ALLOW_THREADS stk_batch_release(batch);
  Py_END_ALLOW_THREADS
}

PyObject *stkpy_batch_new(stkpy_state *state, stk_batch *batch) {
  BatchObject *self = PyObject_New(BatchObject, (PyTypeObject *)state->batch_type);
  if (!self) {
    stk_batch_release(batch);
    return NULL;
  }
  self->batch = batch;
  self->owner = getpid();
  return (PyObject *)self;
}

static int batch_check_alive(BatchObject *self) {
  if (!self->batch) {
    stkpy_raise_status(stkpy_state_of((PyObject *)self), STK_ESTATE,
                       "this batch was released (this thread asked the pipeline for its next batch, or "
                       "release(), reset() or close() was called); copy outputs you need to keep before that");
    return -1;
  }
  return 0;
}

/* 0 when output (and sample, unless sample is NULL) index the live batch, else -1 with an error. */
static int batch_check_index(BatchObject *self, int output, const int *sample) {
  if (batch_check_alive(self) < 0) return -1;
  if (output < 0 || output >= stk_batch_num_outputs(self->batch)) {
    PyErr_Format(PyExc_IndexError, "output %d out of range (the batch has %d outputs)", output,
                 stk_batch_num_outputs(self->batch));
    return -1;
  }
  if (sample && (*sample < 0 || *sample >= stk_batch_size(self->batch))) {
    PyErr_Format(PyExc_IndexError, "sample %d out of range (batch size %d)", *sample, stk_batch_size(self->batch));
    return -1;
  }
  return 0;
}

static void batch_dealloc(PyObject *obj) {
  BatchObject *self = (BatchObject *)obj;
  PyTypeObject *type = Py_TYPE(obj);
  give_back(self);
  freefunc tp_free = (freefunc)PyType_GetSlot(type, Py_tp_free);
  tp_free(obj);
  Py_DECREF(type);
}

static PyObject *batch_release(PyObject *obj, PyObject *unused) {
  give_back((BatchObject *)obj);
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
  if (stkpy_dict_set_steal(d, "size", PyLong_FromLong(stk_batch_size(self->batch))) < 0 ||
      stkpy_dict_set_steal(d, "epoch", PyLong_FromLongLong(stk_batch_epoch(self->batch))) < 0 ||
      stkpy_dict_set_steal(d, "valid_samples", PyLong_FromLong(stk_batch_valid_samples(self->batch))) < 0 ||
      stkpy_dict_set_steal(d, "num_outputs", PyLong_FromLong(stk_batch_num_outputs(self->batch))) < 0 ||
      stkpy_dict_set_steal(d, "cuda_event", PyLong_FromVoidPtr(stk_batch_cuda_event(self->batch))) < 0) {
    Py_DECREF(d);
    return NULL;
  }
  return d;
}

/* output_info(i) -> dict (shape, dtype, typestr, layout, device, device_id, nbytes, dense, data) of the
 * dense tensor, or None when the output is ragged (see sample_info). */
static PyObject *batch_output_info(PyObject *obj, PyObject *args) {
  BatchObject *self = (BatchObject *)obj;
  int output;
  if (!PyArg_ParseTuple(args, "i", &output)) return NULL;
  if (batch_check_index(self, output, NULL) < 0) return NULL;
  stk_tensor_view view;
  stk_status st = stk_batch_tensor(self->batch, output, &view);
  if (st == STK_ESTATE) Py_RETURN_NONE;
  if (st != STK_OK) return stkpy_raise_status(stkpy_state_of(obj), st, "batch output is not available as a tensor");
  return stkpy_view_to_dict(&view);
}

static PyObject *batch_sample_info(PyObject *obj, PyObject *args) {
  BatchObject *self = (BatchObject *)obj;
  int output, sample;
  if (!PyArg_ParseTuple(args, "ii", &output, &sample)) return NULL;
  if (batch_check_index(self, output, &sample) < 0) return NULL;
  stk_tensor_view view;
  stk_status st = stk_batch_sample(self->batch, output, sample, &view);
  if (st != STK_OK) return stkpy_raise_status(stkpy_state_of(obj), st, "batch sample is not available");
  return stkpy_view_to_dict(&view);
}

/* source_infos(output) -> list of str: where each sample came from (stk_batch_source_info). */
static PyObject *batch_source_infos(PyObject *obj, PyObject *args) {
  BatchObject *self = (BatchObject *)obj;
  int output;
  if (!PyArg_ParseTuple(args, "i", &output)) return NULL;
  if (batch_check_index(self, output, NULL) < 0) return NULL;
  int n = stk_batch_size(self->batch);
  PyObject *list = PyList_New(n);
  for (int s = 0; list && s < n; s++) {
    const char *info = stk_batch_source_info(self->batch, output, s);
    PyObject *text = PyUnicode_DecodeUTF8(info ? info : "", (Py_ssize_t)strlen(info ? info : ""), "surrogateescape");
    if (!text) {
      Py_DECREF(list);
      return NULL;
    }
    PyList_SetItem(list, s, text); /* steals text */
  }
  return list;
}

/* reader_valid_samples(name) -> (valid, last_in_epoch) of reader `name` in this batch. */
static PyObject *batch_reader_valid_samples(PyObject *obj, PyObject *args) {
  BatchObject *self = (BatchObject *)obj;
  const char *name;
  if (!PyArg_ParseTuple(args, "s", &name)) return NULL;
  if (batch_check_alive(self) < 0) return NULL;
  int valid = 0, last = 0;
  stk_status st = stk_batch_reader_valid_samples(self->batch, name, &valid, &last);
  if (st != STK_OK) return stkpy_raise_status(stkpy_state_of(obj), st, "the batch has no reader of that name");
  return Py_BuildValue("(iO)", valid, last ? Py_True : Py_False);
}

/* sample_bytes(output, sample) -> bytes: a host copy of one sample (host outputs only). */
static PyObject *batch_sample_bytes(PyObject *obj, PyObject *args) {
  BatchObject *self = (BatchObject *)obj;
  int output, sample;
  if (!PyArg_ParseTuple(args, "ii", &output, &sample)) return NULL;
  if (batch_check_index(self, output, &sample) < 0) return NULL;
  stk_tensor_view view;
  stk_status st = stk_batch_sample(self->batch, output, sample, &view);
  if (st != STK_OK) return stkpy_raise_status(stkpy_state_of(obj), st, "batch sample is not available");
  if (view.device_type != STK_DEVICE_CPU)
    return stkpy_raise_status(stkpy_state_of(obj), STK_ENOTSUP,
                              "sample_bytes: this output lives on the GPU; export it with DLPack instead");
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

/* The GPU export: stream None = the legacy default stream (1), -1 = no synchronization. */
static stk_status export_gpu(BatchObject *self, int output, PyObject *stream_obj, DLManagedTensor **tensor) {
  long long stream = 1;
  if (stream_obj != Py_None) {
    stream = PyLong_AsLongLong(stream_obj);
    if (stream == -1 && PyErr_Occurred()) return STK_EINVAL;
  }
  stk_status st;
  Py_BEGIN_ALLOW_THREADS st =
      stream == -1 ? stk_batch_to_dlpack(self->batch, output, tensor)
                   : stk_batch_to_dlpack_on_stream(self->batch, output, (void *)(intptr_t)stream, tensor);
  Py_END_ALLOW_THREADS return st;
}

/* to_dlpack(output, stream=None) -> PyCapsule "dltensor". For GPU outputs the consumer's `stream`
 * is made to wait on the batch's event first (None = legacy default stream, -1 = no
 * synchronization), and when the tensor is freed the stream is recorded on the batch, so the
 * pipeline reuses the memory only after the GPU work queued there has finished
 * (stk_batch_to_dlpack_on_stream). The capsule holds a reference on the batch: the memory stays
 * valid until the consumer's tensor is freed, even after release(). */
static PyObject *batch_to_dlpack(PyObject *obj, PyObject *args, PyObject *kwargs) {
  BatchObject *self = (BatchObject *)obj;
  stkpy_state *state = stkpy_state_of(obj);
  static char *keywords[] = {"output", "stream", NULL};
  int output;
  PyObject *stream_obj = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "i|O", keywords, &output, &stream_obj)) return NULL;
  if (batch_check_index(self, output, NULL) < 0) return NULL;
  stk_tensor_view view;
  stk_status st = stk_batch_tensor(self->batch, output, &view);
  if (st == STK_ESTATE)
    return stkpy_raise_status(state, st,
                              "this output is ragged (samples differ in shape): it has no single DLPack tensor; "
                              "use per-sample access, or resize/crop to one shape in the pipeline");
  if (st != STK_OK) return stkpy_raise_status(state, st, "batch output is not available as a tensor");
  DLManagedTensor *tensor = NULL;
  if (view.device_type == STK_DEVICE_GPU) {
    st = export_gpu(self, output, stream_obj, &tensor);
    if (PyErr_Occurred()) return NULL;
  } else {
    st = stk_batch_to_dlpack(self->batch, output, &tensor);
  }
  if (st != STK_OK) return stkpy_raise_status(state, st, "DLPack export failed");
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
    {"source_infos", batch_source_infos, METH_VARARGS, "Per sample of an output: where it came from (DALI's source_info)."},
    {"reader_valid_samples", batch_reader_valid_samples, METH_VARARGS,
     "(valid samples, last of its epoch) of the named reader in this batch."},
    {"sample_bytes", batch_sample_bytes, METH_VARARGS, "Host copy of one sample's bytes."},
    {"to_dlpack", (PyCFunction)(void (*)(void))batch_to_dlpack, METH_VARARGS | METH_KEYWORDS,
     "Export a dense output as a DLPack 'dltensor' capsule (zero-copy)."},
    {NULL, NULL, 0, NULL}};

static PyType_Slot batch_slots[] = {{Py_tp_dealloc, batch_dealloc},
                                    {Py_tp_methods, batch_methods},
                                    {Py_tp_doc, "One batch of pipeline outputs (internal; see stoker.pipeline)."},
                                    {0, NULL}};

PyType_Spec stkpy_batch_spec = {"stoker._stoker.Batch", sizeof(BatchObject), 0,
                                Py_TPFLAGS_DEFAULT | Py_TPFLAGS_DISALLOW_INSTANTIATION, batch_slots};
