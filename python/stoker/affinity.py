"""stoker.affinity: CPU/NUMA placement for training processes, over stoker's topology discovery
and affinity planner (the same code as ``stoker topo`` / ``stoker plan`` / ``stoker bind``).

* ``topology()`` -- the machine as ``stoker topo --json`` prints it (a dict).
* ``plan(...)`` -- the CPU plan for every rank of a node, without binding anything.
* ``set_affinity(gpu_id, ...)`` -- pins this process next to its GPU, like NVIDIA's
  ``gpu_affinity.set_affinity``, and returns the set of CPUs now allowed.
* ``WorkerAffinity`` -- a picklable, plan-carrying callable that pins a worker process (CPU
  affinity of all its threads + memory policy on the GPU's NUMA node); stoker.torch's
  ``worker_init_fn`` returns one. It never touches CUDA.

Not on a hot path.
"""
import json
import os

from . import _stoker
from .errors import StokerError

AFFINITY_MODES = (
    "none",
    "socket",
    "socket_single",
    "socket_single_unique",
    "socket_unique_interleaved",
    "socket_unique_contiguous",
)


def topology(sysfs_root=None):
    """The topology (CPUs, NUMA nodes, sockets, cores, GPUs, allowed CPUs) as a dict: the same
    document as ``stoker topo --json``. ``sysfs_root`` reads a recorded sysfs tree instead."""
    return json.loads(_stoker.topology_json(sysfs_root))


def plan(nproc_per_node=None, *, mode="socket_unique_contiguous", cores="all_logical", balanced=True,
         sysfs_root=None, allowed=None):
    """The affinity plan for ranks 0..nproc_per_node-1 (default: one per GPU): a list of dicts
    {gpu, status, error, cpus, numa_node}. A rank whose status is not "STK_OK" has no plan (its
    error says why). Pure: binds nothing."""
    if mode not in AFFINITY_MODES:
        raise ValueError("unknown affinity mode %r (one of %s)" % (mode, ", ".join(AFFINITY_MODES)))
    return _stoker.plan(
        nproc_per_node=int(nproc_per_node or 0),
        mode=mode,
        cores=cores,
        balanced=bool(balanced),
        sysfs_root=sysfs_root,
        allowed=None if allowed is None else sorted(allowed),
    )


def _rank_plan(gpu_id, nproc_per_node, mode, cores, balanced):
    ranks = plan(nproc_per_node, mode=mode, cores=cores, balanced=balanced)
    if not 0 <= gpu_id < len(ranks):
        raise ValueError("gpu_id %d is outside the plan's %d ranks" % (gpu_id, len(ranks)))
    rank = ranks[gpu_id]
    if rank["status"] != "STK_OK":
        raise StokerError("no CPU affinity plan for GPU %d: %s" % (gpu_id, rank["error"]))
    return rank


def set_affinity(gpu_id, nproc_per_node=None, *, mode="socket_unique_contiguous", cores="all_logical",
                 balanced=True):
    """Pins every thread of this process to the CPUs the planner gives GPU ``gpu_id`` (out of
    ``nproc_per_node`` processes, default one per GPU) and returns the set of CPUs now allowed
    (``os.sched_getaffinity(0)``). ``mode="none"`` changes nothing. Raises StokerError when there
    is no plan (no GPU, or no CPU left for this rank), saying why."""
    rank = _rank_plan(int(gpu_id), nproc_per_node, mode, cores, balanced)
    if mode != "none":
        _stoker.bind_process_cpus(0, rank["cpus"])
    return set(os.sched_getaffinity(0))


class WorkerAffinity:
    """Pins a worker process: CPU affinity of all its threads to ``cpus`` and, when ``numa_node``
    is not None, its memory policy to that node (``mempolicy`` "bind" or "preferred"). The plan is
    computed in the parent and carried by value, so it pickles across the spawn start method and
    the worker never touches CUDA. ``chain`` is called afterwards with the worker id (a user's own
    worker_init_fn)."""

    def __init__(self, cpus, numa_node=None, mempolicy="bind", chain=None):
        self.cpus = tuple(sorted(int(c) for c in cpus))
        if not self.cpus:
            raise ValueError("WorkerAffinity needs at least one CPU")
        self.numa_node = None if numa_node is None or numa_node < 0 else int(numa_node)
        if mempolicy not in ("bind", "preferred", "none"):
            raise ValueError("mempolicy must be 'bind', 'preferred' or 'none', got %r" % (mempolicy,))
        self.mempolicy = mempolicy
        self.chain = chain

    @classmethod
    def for_gpu(cls, gpu_id, nproc_per_node=None, *, mode="socket_unique_contiguous", cores="all_logical",
                balanced=True, mempolicy="bind", chain=None):
        """The plan for GPU ``gpu_id`` from stoker's planner (computed here, in the parent)."""
        rank = _rank_plan(int(gpu_id), nproc_per_node, mode, cores, balanced)
        return cls(rank["cpus"], rank["numa_node"], mempolicy, chain)

    def __call__(self, worker_id=None):
        if self.numa_node is not None and self.mempolicy != "none":
            _stoker.bind_memory(self.numa_node, self.mempolicy)
        _stoker.bind_process_cpus(0, self.cpus)
        if self.chain is not None:
            self.chain(worker_id)

    def __repr__(self):
        return "WorkerAffinity(cpus=%r, numa_node=%r, mempolicy=%r)" % (self.cpus, self.numa_node, self.mempolicy)
