/* python/src/topology.c: the module functions over the topology API: topology JSON, GPU count,
 * the affinity planner, CPU / memory binding of processes and threads, and the launcher rank's
 * GPU (stk_rank_gpu_resolve, for stoker.distributed). Set-up time only
 * (loading the topology reads sysfs; it runs with the GIL released). */
#include "ext.h" /* first: Python.h comes before the system headers */

#include <stdlib.h>
#include <string.h>

static stk_status load_topology(stkpy_state *state, const char *sysfs_root, stk_topology **out) {
  stk_topology *topo = NULL;
  stk_status st = stk_topology_new(&topo);
  if (st != STK_OK) {
    stkpy_raise_status(state, st, "could not allocate a topology");
    return st;
  }
  stk_topology_options options;
  stk_topology_options_default(&options);
  options.sysfs_root = sysfs_root;
  Py_BEGIN_ALLOW_THREADS st = stk_topology_load(topo, &options);
  Py_END_ALLOW_THREADS if (st != STK_OK) {
    stkpy_raise_status(state, st, stk_topology_last_error(topo));
    stk_topology_destroy(topo);
    return st;
  }
  *out = topo;
  return STK_OK;
}

PyObject *stkpy_topology_json(PyObject *module, PyObject *args) {
  stkpy_state *state = stkpy_module_state(module);
  const char *sysfs_root = NULL;
  if (!PyArg_ParseTuple(args, "|z", &sysfs_root)) return NULL;
  stk_topology *topo = NULL;
  if (load_topology(state, sysfs_root, &topo) != STK_OK) return NULL;
  char *json = NULL;
  stk_status st = stk_topology_to_json(topo, &json);
  PyObject *result = NULL;
  if (st != STK_OK) stkpy_raise_status(state, st, stk_topology_last_error(topo));
  else result = PyUnicode_FromString(json);
  stk_free(json);
  stk_topology_destroy(topo);
  return result;
}

/* plan(nproc_per_node, mode, cores, balanced, sysfs_root=None, allowed=None) -> list of dicts
 * (gpu, status, error, cpus, numa_node) for ranks 0..nproc_per_node-1. nproc_per_node <= 0 means
 * one per GPU. Raises when the options are invalid (e.g. no GPUs). */
PyObject *stkpy_plan(PyObject *module, PyObject *args, PyObject *kwargs) {
  stkpy_state *state = stkpy_module_state(module);
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
    if (stkpy_cpuset_from_iterable(allowed_obj, &options.allowed) < 0) return NULL;
    options.use_allowed = 1;
  }
  stk_topology *topo = NULL;
  if (load_topology(state, sysfs_root, &topo) != STK_OK) return NULL;
  int num_gpus = stk_topology_num_gpus(topo);
  if (nproc <= 0) nproc = num_gpus;
  if (nproc <= 0) {
    stk_topology_destroy(topo);
    return stkpy_raise_status(state, STK_ENODEV,
                              "no GPU found in the topology: there is no GPU to plan CPU affinity for");
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
    stkpy_raise_status(state, st, ranks[0].error);
    goto done;
  }
  list = PyList_New(0);
  if (!list) goto done;
  for (int r = 0; r < nproc; r++) {
    PyObject *d = PyDict_New();
    stk_gpu_info gpu;
    int numa_node = -1;
    if (stk_topology_gpu(topo, ranks[r].gpu, &gpu) == STK_OK) numa_node = gpu.numa_node;
    if (!d || stkpy_dict_set_steal(d, "gpu", PyLong_FromLong(ranks[r].gpu)) < 0 ||
        stkpy_dict_set_steal(d, "status", PyUnicode_FromString(stk_status_name(ranks[r].status))) < 0 ||
        stkpy_dict_set_steal(d, "error", PyUnicode_FromString(ranks[r].status == STK_OK ? "" : ranks[r].error)) < 0 ||
        stkpy_dict_set_steal(d, "numa_node", PyLong_FromLong(numa_node)) < 0 ||
        stkpy_dict_set_steal(d, "cpus",
                             ranks[r].status == STK_OK ? stkpy_cpuset_to_list(&ranks[r].cpus) : PyList_New(0)) < 0 ||
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

PyObject *stkpy_num_gpus(PyObject *module, PyObject *args) {
  stkpy_state *state = stkpy_module_state(module);
  const char *sysfs_root = NULL;
  if (!PyArg_ParseTuple(args, "|z", &sysfs_root)) return NULL;
  stk_topology *topo = NULL;
  if (load_topology(state, sysfs_root, &topo) != STK_OK) return NULL;
  int n = stk_topology_num_gpus(topo);
  stk_topology_destroy(topo);
  return PyLong_FromLong(n);
}

PyObject *stkpy_bind_process_cpus(PyObject *module, PyObject *args) {
  stkpy_state *state = stkpy_module_state(module);
  int pid;
  PyObject *cpus_obj;
  if (!PyArg_ParseTuple(args, "iO", &pid, &cpus_obj)) return NULL;
  stk_cpuset cpus;
  if (stkpy_cpuset_from_iterable(cpus_obj, &cpus) < 0) return NULL;
  if (stk_cpuset_is_empty(&cpus)) return PyErr_Format(PyExc_ValueError, "refusing to bind to an empty CPU set");
  stk_status st = stk_bind_process_cpus(pid, &cpus);
  if (st != STK_OK) return stkpy_raise_status(state, st, "setting the CPU affinity failed (are these CPUs allowed?)");
  Py_RETURN_NONE;
}

PyObject *stkpy_bind_thread_cpus(PyObject *module, PyObject *args) {
  stkpy_state *state = stkpy_module_state(module);
  PyObject *cpus_obj;
  if (!PyArg_ParseTuple(args, "O", &cpus_obj)) return NULL;
  stk_cpuset cpus;
  if (stkpy_cpuset_from_iterable(cpus_obj, &cpus) < 0) return NULL;
  if (stk_cpuset_is_empty(&cpus)) return PyErr_Format(PyExc_ValueError, "refusing to bind to an empty CPU set");
  stk_status st = stk_bind_thread_cpus(&cpus);
  if (st != STK_OK) return stkpy_raise_status(state, st, "setting the thread's CPU affinity failed");
  Py_RETURN_NONE;
}

/* bind_memory(numa_node, policy) with policy "bind", "preferred" or "none". */
PyObject *stkpy_bind_memory(PyObject *module, PyObject *args) {
  stkpy_state *state = stkpy_module_state(module);
  int node;
  const char *policy_name;
  if (!PyArg_ParseTuple(args, "is", &node, &policy_name)) return NULL;
  stk_mempolicy policy;
  if (strcmp(policy_name, "bind") == 0) policy = STK_MEMPOLICY_BIND;
  else if (strcmp(policy_name, "preferred") == 0) policy = STK_MEMPOLICY_PREFERRED;
  else if (strcmp(policy_name, "none") == 0) policy = STK_MEMPOLICY_NONE;
  else return PyErr_Format(PyExc_ValueError, "unknown memory policy '%s' (bind, preferred, none)", policy_name);
  stk_status st = stk_bind_memory(node, policy);
  if (st != STK_OK) return stkpy_raise_status(state, st, "setting the memory policy failed");
  Py_RETURN_NONE;
}

PyObject *stkpy_get_affinity(PyObject *module, PyObject *args) {
  stkpy_state *state = stkpy_module_state(module);
  int pid = 0;
  if (!PyArg_ParseTuple(args, "|i", &pid)) return NULL;
  stk_cpuset cpus;
  stk_status st = stk_get_affinity(pid, &cpus);
  if (st != STK_OK) return stkpy_raise_status(state, st, "reading the CPU affinity failed");
  return stkpy_cpuset_to_list(&cpus);
}

/* Sets the dict's fields from a resolved (or partly resolved) rank. 0, or -1 with an exception. */
static int rank_gpu_fill(PyObject *d, const stk_topology *topo, stk_status st, const stk_rank_gpu *rank) {
  PyObject *visible = PyList_New(0);
  if (!visible) return -1;
  for (int i = 0; i < rank->visible_count; i++) {
    PyObject *gpu = PyLong_FromLong(rank->visible_gpus[i]);
    if (!gpu || PyList_Append(visible, gpu) < 0) {
      Py_XDECREF(gpu);
      Py_DECREF(visible);
      return -1;
    }
    Py_DECREF(gpu);
  }
  stk_cpuset local;
  stk_gpu_info info;
  int have_gpu = st == STK_OK && rank->gpu >= 0;
  int numa_node = have_gpu && stk_topology_gpu(topo, rank->gpu, &info) == STK_OK ? info.numa_node : -1;
  int have_local = have_gpu && stk_topology_gpu_local_cpus(topo, rank->gpu, &local) == STK_OK;
  if (stkpy_dict_set_steal(d, "status", PyUnicode_FromString(stk_status_name(st))) < 0 ||
      stkpy_dict_set_steal(d, "error", PyUnicode_FromString(st == STK_OK ? "" : rank->error)) < 0 ||
      stkpy_dict_set_steal(d, "note", PyUnicode_FromString(rank->note)) < 0 ||
      stkpy_dict_set_steal(d, "rank_source", PyUnicode_FromString(rank->rank_source)) < 0 ||
      stkpy_dict_set_steal(d, "local_rank", PyLong_FromLong(rank->local_rank)) < 0 ||
      stkpy_dict_set_steal(d, "local_world_size", PyLong_FromLong(rank->local_world_size)) < 0 ||
      stkpy_dict_set_steal(d, "rank", PyLong_FromLong(rank->rank)) < 0 ||
      stkpy_dict_set_steal(d, "world_size", PyLong_FromLong(rank->world_size)) < 0 ||
      stkpy_dict_set_steal(d, "cuda_device", PyLong_FromLong(have_gpu ? rank->cuda_device : -1)) < 0 ||
      stkpy_dict_set_steal(d, "gpu", PyLong_FromLong(have_gpu ? rank->gpu : -1)) < 0 ||
      stkpy_dict_set_steal(d, "pci_bus_id", PyUnicode_FromString(have_gpu ? rank->pci_bus_id : "")) < 0 ||
      stkpy_dict_set_steal(d, "uuid", PyUnicode_FromString(have_gpu ? rank->uuid : "")) < 0 ||
      stkpy_dict_set_steal(d, "numa_node", PyLong_FromLong(numa_node)) < 0 ||
      stkpy_dict_set_steal(d, "local_cpus", have_local ? stkpy_cpuset_to_list(&local) : PyList_New(0)) < 0 ||
      stkpy_dict_set_steal(d, "visible_gpus", visible) < 0)
    return -1;
  return 0;
}

/* rank_gpu(sysfs_root=None, env=None) -> dict: stk_rank_gpu_resolve for this process (env: a list
 * of "NAME=value" strings read instead of os.environ, e.g. for a recorded machine). Never raises
 * for a failed resolution: "status" ("STK_OK", "STK_ENOENT" = no launcher, "STK_EINVAL",
 * "STK_ENOTSUP") and "error" say what happened; launcher fields are -1 when unknown. Without a
 * launcher, "visible_gpus" is still CUDA's visible list (empty when that cannot be resolved). */
PyObject *stkpy_rank_gpu(PyObject *module, PyObject *args, PyObject *kwargs) {
  stkpy_state *state = stkpy_module_state(module);
  static char *keywords[] = {"sysfs_root", "env", NULL};
  const char *sysfs_root = NULL;
  PyObject *env_obj = Py_None, *env_tuple = NULL;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|zO", keywords, &sysfs_root, &env_obj)) return NULL;
  const char **env = NULL;
  Py_ssize_t env_count = 0;
  if (env_obj != Py_None) {
    const char **items = stkpy_string_array(env_obj, &env_tuple, &env_count, "env");
    if (!items) return NULL;
    env = (const char **)calloc((size_t)env_count + 1, sizeof *env); /* NULL-terminated copy */
    if (env) memcpy(env, items, (size_t)env_count * sizeof *env);
    free(items);
    if (!env) {
      Py_XDECREF(env_tuple);
      return PyErr_NoMemory();
    }
  }
  stk_topology *topo = NULL;
  PyObject *d = NULL;
  if (load_topology(state, sysfs_root, &topo) == STK_OK) {
    stk_rank_gpu_options options;
    stk_rank_gpu_options_default(&options);
    options.env = env;
    stk_rank_gpu rank;
    stk_status st = stk_rank_gpu_resolve(topo, &options, &rank);
    if (st == STK_ENOENT) /* no launcher: still say which GPUs CUDA shows (the pipeline maps device_id through them) */
      if (stk_visible_gpus_resolve(topo, &options, rank.visible_gpus, STK_MAX_VISIBLE_GPUS, &rank.visible_count, NULL,
                                   0, rank.note, sizeof rank.note) != STK_OK)
        rank.visible_count = 0;
    d = PyDict_New();
    if (d && rank_gpu_fill(d, topo, st, &rank) < 0) Py_CLEAR(d);
    stk_topology_destroy(topo);
  }
  free(env);
  Py_XDECREF(env_tuple);
  return d;
}
