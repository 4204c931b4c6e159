/* python/src/ext.h: private header of the `stoker._stoker` extension module (not installed).
 *
 * The extension is a thin CPython binding over stoker's public C API (the headers under include/stoker/ only),
 * written against the limited API (abi3, Python 3.10+: Py_LIMITED_API is set by
 * python/CMakeLists.txt), so one build imports on every later CPython. Its rooms:
 *   module.c    module definition, multi-phase init (PEP 489), module state, registry as data
 *   convert.c   errors and conversions between Python objects and the C API's types
 *   batch.c     the Batch type: metadata, DLPack export, host copies, release
 *   pipeline.c  the Pipeline type: options, graph definition, build/next/reset, stats, close
 *   runner.c    the pipeline's call thread: blocking calls the caller can interrupt (Ctrl-C)
 *   topology.c  topology JSON, the affinity planner, CPU/memory binding, the rank's GPU
 *
 * No static globals: the type objects and the exception type live in the module state
 * (stkpy_state), reached from a module function through its module and from an instance
 * through its type (PyType_GetModuleState; the types are created with
 * PyType_FromModuleAndSpec and cannot be subclassed, so an instance's type is always ours).
 * Non-static names are prefixed stkpy_ and hidden (the module is built with hidden visibility;
 * only PyInit__stoker is exported). */
#ifndef STOKER_PYTHON_EXT_H
#define STOKER_PYTHON_EXT_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "stoker/stoker.h"

/* ---- Module state (module.c) --------------------------------------------------------------- */

typedef struct stkpy_state {
  PyObject *error_type;    /* stoker._stoker.Error (a RuntimeError) */
  PyObject *batch_type;    /* stoker._stoker.Batch */
  PyObject *pipeline_type; /* stoker._stoker.Pipeline */
} stkpy_state;

/* The state of the module that defined obj's type (obj is a Batch or a Pipeline). Never NULL. */
stkpy_state *stkpy_state_of(PyObject *obj);
/* The state of a module object (module-level functions get the module as `self`). */
stkpy_state *stkpy_module_state(PyObject *module);

/* ---- Errors and conversions (convert.c) ---------------------------------------------------- */

/* Raises stoker._stoker.Error(detail or stk_strerror(status)) with .status = "STK_..." and
 * .code = int; returns NULL. */
PyObject *stkpy_raise_status(stkpy_state *state, stk_status status, const char *detail);
/* Raises stoker._stoker.Error(message) with .status = "STK_EINVAL" naming a bad argument. */
PyObject *stkpy_raise_argument(stkpy_state *state, const char *format, ...);

/* Sets d[key] = value and drops the reference to value (NULL value: returns -1). */
int stkpy_dict_set_steal(PyObject *dict, const char *key, PyObject *value);
PyObject *stkpy_str_or_none(const char *text);

PyObject *stkpy_cpuset_to_list(const stk_cpuset *set);
int stkpy_cpuset_from_iterable(PyObject *obj, stk_cpuset *out);

/* A malloc'd array of UTF-8 pointers borrowed from *seq_tuple (a new tuple made from seq, which
 * the caller drops after the array): NULL with an exception set on failure. */
const char **stkpy_string_array(PyObject *seq, PyObject **seq_tuple, Py_ssize_t *count, const char *what);
/* Stores one operator argument (name, kind, value) in args; kind is "int", "float", "bool", "str",
 * "input", "int_list", "float_list" or "str_list". 0, or -1 with an exception set. */
int stkpy_set_arg(stkpy_state *state, stk_args *args, const char *name, const char *kind, PyObject *value);

/* Pipeline(...) keywords -> options, each checked and named in the error when out of range.
 * options->affinity_mask is borrowed from args/kwargs. 0, or -1 with an exception set. */
int stkpy_pipeline_options(stkpy_state *state, PyObject *args, PyObject *kwargs, stk_pipeline_options *options);

PyObject *stkpy_view_to_dict(const stk_tensor_view *view);
PyObject *stkpy_reader_meta_to_dict(const stk_reader_meta *meta);
PyObject *stkpy_stats_to_dict(const stk_pipeline *pipe, const stk_pipeline_stats *stats);

/* ---- Batch (batch.c) ----------------------------------------------------------------------- */

extern PyType_Spec stkpy_batch_spec;
/* A new Batch owning `batch` (released when the object is released or freed). On failure the
 * batch is released and NULL returned with an exception set. */
PyObject *stkpy_batch_new(stkpy_state *state, stk_batch *batch);

/* ---- Pipeline (pipeline.c) ----------------------------------------------------------------- */

extern PyType_Spec stkpy_pipeline_spec;

/* ---- The call thread (runner.c) ------------------------------------------------------------ */

/* The blocking calls a pipeline makes on its call thread. */
typedef enum stkpy_call { STKPY_CALL_NONE, STKPY_CALL_BUILD, STKPY_CALL_NEXT, STKPY_CALL_RESET } stkpy_call;

typedef struct stkpy_runner stkpy_runner;

/* Takes ownership of pipe. NULL with MemoryError set on failure (pipe is then destroyed). */
stkpy_runner *stkpy_runner_new(stk_pipeline *pipe);
/* The pipeline for a quick call made on the calling thread, with the GIL held: waits (GIL
 * released, interruptible) for a call an earlier interrupt left running, so the pipeline is
 * idle. NULL with an exception set when closed, or when another thread is waiting in a call. */
stk_pipeline *stkpy_runner_enter(stkpy_runner *runner, stkpy_state *state);
/* Makes `call` on the call thread and waits for it in short slices, the GIL released, checking
 * for signals between slices. 0 with *status (and *batch for NEXT) set; -1 with an exception set
 * when interrupted (the call goes on; the next call of the same kind collects its result), when
 * the pipeline was closed meanwhile, or when another thread is waiting in a call. *error is the
 * call's error message (borrowed, valid until the next call). */
int stkpy_runner_call(stkpy_runner *runner, stkpy_state *state, stkpy_call call, stk_status *status, stk_batch **batch,
                      const char **error);
/* Closes the pipeline now; never waits for a call in progress (the call thread then destroys the
 * pipeline when that call returns). Idempotent. */
void stkpy_runner_close(stkpy_runner *runner);
int stkpy_runner_is_closed(stkpy_runner *runner);
/* Closes and drops the Python object's reference (the call thread may hold the other). */
void stkpy_runner_free(stkpy_runner *runner);

/* ---- Topology, planning, binding (topology.c) ---------------------------------------------- */

PyObject *stkpy_topology_json(PyObject *module, PyObject *args);
PyObject *stkpy_num_gpus(PyObject *module, PyObject *args);
PyObject *stkpy_plan(PyObject *module, PyObject *args, PyObject *kwargs);
PyObject *stkpy_bind_process_cpus(PyObject *module, PyObject *args);
PyObject *stkpy_bind_thread_cpus(PyObject *module, PyObject *args);
PyObject *stkpy_bind_memory(PyObject *module, PyObject *args);
PyObject *stkpy_get_affinity(PyObject *module, PyObject *args);
PyObject *stkpy_rank_gpu(PyObject *module, PyObject *args, PyObject *kwargs);

#endif
