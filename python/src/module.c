/* python/src/module.c: the `stoker._stoker` extension module: its definition, multi-phase
 * initialization (PEP 489: PyInit__stoker returns the definition, the Py_mod_exec slot fills the
 * module), the module state that holds the types and the exception type, and the module-level
 * functions about the library itself (version, build info, error strings, the operator registry
 * as plain data). The rooms of the extension are listed in ext.h.
 *
 * The Python layer in python/stoker/ builds the user-facing API on this module. Set-up time only. */
#include "ext.h" /* first: Python.h comes before the system headers */

#include <string.h>

stkpy_state *stkpy_module_state(PyObject *module) { return (stkpy_state *)PyModule_GetState(module); }

stkpy_state *stkpy_state_of(PyObject *obj) { return (stkpy_state *)PyType_GetModuleState(Py_TYPE(obj)); }

/* ---- Module functions ---------------------------------------------------------------------- */

static PyObject *mod_version(PyObject *module, PyObject *unused) { return PyUnicode_FromString(stk_version_string()); }

static PyObject *mod_build_info(PyObject *module, PyObject *unused) { return PyUnicode_FromString(stk_build_info()); }

static PyObject *mod_strerror(PyObject *module, PyObject *args) {
  int code;
  if (!PyArg_ParseTuple(args, "i", &code)) return NULL;
  return PyUnicode_FromString(stk_strerror((stk_status)code));
}

static const char *device_names(unsigned devices, char *buf, size_t size) {
  buf[0] = '\0';
  if (devices & STK_OPDEV_CPU) strncat(buf, "cpu,", size - strlen(buf) - 1);
  if (devices & STK_OPDEV_MIXED) strncat(buf, "mixed,", size - strlen(buf) - 1);
  if (devices & STK_OPDEV_GPU) strncat(buf, "gpu,", size - strlen(buf) - 1);
  size_t n = strlen(buf);
  if (n) buf[n - 1] = '\0';
  return buf;
}

/* Appends a dict (name, type, default, required, doc) per argument of operator `op` to list. */
static int append_arg_dicts(PyObject *list, int op, int num_args) {
  for (int a = 0; a < num_args; a++) {
    stk_op_arg_info arg;
    if (stk_op_arg(op, a, &arg) != STK_OK) continue;
    PyObject *d = PyDict_New();
    if (!d) return -1;
    if (stkpy_dict_set_steal(d, "name", PyUnicode_FromString(arg.name)) < 0 ||
        stkpy_dict_set_steal(d, "type", PyUnicode_FromString(stk_arg_type_name(arg.type))) < 0 ||
        stkpy_dict_set_steal(d, "default", stkpy_str_or_none(arg.default_value)) < 0 ||
        stkpy_dict_set_steal(d, "required", PyBool_FromLong(arg.required)) < 0 ||
        stkpy_dict_set_steal(d, "doc", PyUnicode_FromString(arg.doc ? arg.doc : "")) < 0 ||
        PyList_Append(list, d) < 0) {
      Py_DECREF(d);
      return -1;
    }
    Py_DECREF(d);
  }
  return 0;
}

/* The dict of operator `op` (see mod_op_schemas), or NULL with an exception set. */
static PyObject *schema_dict(stkpy_state *state, int op) {
  stk_op_schema_info info;
  stk_status st = stk_op_schema(op, &info);
  if (st != STK_OK) return stkpy_raise_status(state, st, "could not read the operator registry");
  PyObject *d = PyDict_New();
  PyObject *args = PyList_New(0);
  char devices[32];
  device_names(info.devices, devices, sizeof devices);
  if (!d || !args || append_arg_dicts(args, op, info.num_args) < 0 ||
      stkpy_dict_set_steal(d, "name", PyUnicode_FromString(info.name)) < 0 ||
      stkpy_dict_set_steal(d, "doc", PyUnicode_FromString(info.doc ? info.doc : "")) < 0 ||
      stkpy_dict_set_steal(d, "min_inputs", PyLong_FromLong(info.min_inputs)) < 0 ||
      stkpy_dict_set_steal(d, "max_inputs", PyLong_FromLong(info.max_inputs)) < 0 ||
      stkpy_dict_set_steal(d, "num_outputs", PyLong_FromLong(info.num_outputs)) < 0 ||
      stkpy_dict_set_steal(d, "devices", PyUnicode_FromString(devices)) < 0 ||
      PyDict_SetItemString(d, "args", args) < 0) {
    Py_XDECREF(args);
    Py_XDECREF(d);
    return NULL;
  }
  Py_DECREF(args);
  return d;
}

/* op_schemas() -> list of dicts: name, doc, min_inputs, max_inputs, num_outputs, devices (a
 * comma-separated string of "cpu"/"mixed"/"gpu"), args (list of dicts: name, type, default,
 * required, doc). */
static PyObject *mod_op_schemas(PyObject *module, PyObject *unused) {
  stkpy_state *state = stkpy_module_state(module);
  int count = stk_op_count();
  PyObject *list = PyList_New(0);
  if (!list) return NULL;
  for (int i = 0; i < count; i++) {
    PyObject *d = schema_dict(state, i);
    if (!d || PyList_Append(list, d) < 0) {
      Py_XDECREF(d);
      Py_DECREF(list);
      return NULL;
    }
    Py_DECREF(d);
  }
  return list;
}

static PyMethodDef module_methods[] = {
    {"version", mod_version, METH_NOARGS, "The C library's version string."},
    {"build_info", mod_build_info, METH_NOARGS, "How the C library was built."},
    {"op_schemas", mod_op_schemas, METH_NOARGS, "The operator registry as a list of dicts."},
    {"topology_json", stkpy_topology_json, METH_VARARGS, "topology_json(sysfs_root=None) -> str"},
    {"num_gpus", stkpy_num_gpus, METH_VARARGS, "num_gpus(sysfs_root=None) -> int"},
    {"plan", (PyCFunction)(void (*)(void))stkpy_plan, METH_VARARGS | METH_KEYWORDS,
     "plan(nproc_per_node=0, mode, cores, balanced, sysfs_root=None, allowed=None) -> [dict]"},
    {"bind_process_cpus", stkpy_bind_process_cpus, METH_VARARGS, "bind_process_cpus(pid, cpus)"},
    {"bind_thread_cpus", stkpy_bind_thread_cpus, METH_VARARGS, "bind_thread_cpus(cpus)"},
    {"bind_memory", stkpy_bind_memory, METH_VARARGS, "bind_memory(numa_node, 'bind'|'preferred'|'none')"},
    {"get_affinity", stkpy_get_affinity, METH_VARARGS, "get_affinity(pid=0) -> [cpu]"},
    {"rank_gpu", (PyCFunction)(void (*)(void))stkpy_rank_gpu, METH_VARARGS | METH_KEYWORDS,
     "rank_gpu(sysfs_root=None, env=None) -> dict (the launcher rank's GPU: stk_rank_gpu_resolve)"},
    {"strerror", mod_strerror, METH_VARARGS, "strerror(code) -> str"},
    {NULL, NULL, 0, NULL}};

/* ---- Module state and initialization ------------------------------------------------------- */

/* Py_mod_exec: creates the exception type and the types (bound to this module, so their methods
 * find the state) and adds them to the module. */
static int module_exec(PyObject *module) {
  stkpy_state *state = stkpy_module_state(module);
  state->error_type = PyErr_NewExceptionWithDoc("stoker._stoker.Error",
                                                "An error reported by stoker's C library; .status names the code.",
                                                PyExc_RuntimeError, NULL);
  if (!state->error_type) return -1;
  state->batch_type = PyType_FromModuleAndSpec(module, &stkpy_batch_spec, NULL);
  if (!state->batch_type) return -1;
  state->pipeline_type = PyType_FromModuleAndSpec(module, &stkpy_pipeline_spec, NULL);
  if (!state->pipeline_type) return -1;
  if (PyModule_AddObjectRef(module, "Error", state->error_type) < 0 ||
      PyModule_AddType(module, (PyTypeObject *)state->batch_type) < 0 ||
      PyModule_AddType(module, (PyTypeObject *)state->pipeline_type) < 0 ||
      PyModule_AddIntConstant(module, "HEADER_VERSION", STK_VERSION) < 0)
    return -1;
  return 0;
}

static int module_traverse(PyObject *module, visitproc visit, void *arg) {
  stkpy_state *state = stkpy_module_state(module);
  if (!state) return 0;
  Py_VISIT(state->error_type);
  Py_VISIT(state->batch_type);
  Py_VISIT(state->pipeline_type);
  return 0;
}

static int module_clear(PyObject *module) {
  stkpy_state *state = stkpy_module_state(module);
  if (!state) return 0;
  Py_CLEAR(state->error_type);
  Py_CLEAR(state->batch_type);
  Py_CLEAR(state->pipeline_type);
  return 0;
}

static void module_free(void *module) { module_clear((PyObject *)module); }

static PyModuleDef_Slot module_slots[] = {{Py_mod_exec, (void *)module_exec}, {0, NULL}};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "_stoker",      "stoker's C library (internal; import stoker instead).",
    sizeof(stkpy_state),   module_methods, module_slots,
    module_traverse,       module_clear,   module_free};

PyMODINIT_FUNC PyInit__stoker(void) { return PyModuleDef_Init(&module_def); }
