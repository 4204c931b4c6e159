"""stoker.distributed: one pipeline per rank, placed from the launcher's environment.

Under torchrun (``LOCAL_RANK``, ``RANK``, ``WORLD_SIZE``, ``LOCAL_WORLD_SIZE``), Slurm's ``srun``
(``SLURM_LOCALID``, ``SLURM_PROCID``, ``SLURM_NTASKS``) or Open MPI's ``mpirun``
(``OMPI_COMM_WORLD_LOCAL_RANK``, ``OMPI_COMM_WORLD_RANK``, ``OMPI_COMM_WORLD_SIZE``), checked in
that order, a pipeline built with no explicit placement takes:

* ``device_id`` = the rank's local GPU: CUDA device ``local_rank``, or 0 when the rank sees one
  GPU (``srun --gpus-per-task 1``), as torchrun's ``cuda:LOCAL_RANK``. -1 (CPU only) when the
  rank sees no GPU or the library was built without CUDA. The rank's GPU is found by the C
  library (``stk_rank_gpu_resolve``: ``CUDA_VISIBLE_DEVICES`` as indices or ``GPU-<uuid>``,
  matched to sysfs by PCI bus id / UUID, never by assuming CUDA device i is PCI GPU i).
* worker threads pinned on that GPU's local CPUs (within the CPUs the process may use): the C
  executor finds the GPU a CUDA ordinal names by PCI bus id (or through ``CUDA_VISIBLE_DEVICES``),
  so a remapped visible list still gets the right CPUs; local rank r starts r x num_threads CPUs
  into them, so ranks whose GPUs share those CPUs do not pin their workers to the same ones.
* readers with ``shard_id``/``num_shards`` (readers.file, .numpy, .webdataset, .video):
  ``shard_id`` = rank, ``num_shards`` = world size. Without a launcher's local rank, plain
  ``RANK``/``WORLD_SIZE`` (torch.distributed's ``env://``) still shard.

Explicit arguments always win: ``device_id=None`` or ``-1`` is a CPU pipeline, ``device_id=k`` is
CUDA device k; ``shard_id``/``num_shards`` given to a reader are used as given; an
``affinity_mask`` (or ``STOKER_AFFINITY_MASK``) pins as it says.

Not on a hot path: once per pipeline (it reads sysfs once).
"""
import os

from . import _stoker
from .errors import ArgumentError

#: Pipeline(device_id=AUTO) (the default): the launcher rank's GPU, else CPU only.
AUTO = "auto"


def rank_info(env=None, sysfs_root=None):
    """What the launcher and CUDA say about this rank, as a dict: ``status`` ("STK_OK";
    "STK_ENOENT" = no launcher local rank; "STK_EINVAL" / "STK_ENOTSUP" with ``error``),
    ``rank_source`` (the variable that gave the local rank), ``local_rank``, ``local_world_size``,
    ``rank``, ``world_size`` (-1 when unknown), ``cuda_device`` (the CUDA ordinal to use),
    ``gpu`` (its index in ``stoker topo``), ``pci_bus_id``, ``uuid``, ``numa_node``,
    ``local_cpus``, ``visible_gpus`` (CUDA's devices in CUDA order, as topology GPU indices) and
    ``note``. ``env``: a dict (or ``NAME=value`` list) read instead of ``os.environ``;
    ``sysfs_root``: a recorded sysfs tree instead of ``/``."""
    if isinstance(env, dict):
        env = ["%s=%s" % (name, value) for name, value in env.items()]
    return _stoker.rank_gpu(sysfs_root=sysfs_root, env=None if env is None else list(env))


def _launcher_failed(info):
    """A launcher variable is malformed (not a GPU question): stk_rank_gpu_resolve says
    'NAME="value" is not a non-negative integer'."""
    return info["status"] == "STK_EINVAL" and "is not a non-negative integer" in info["error"]


def _plain_rank_and_world(env):
    """torch.distributed's env:// variables alone: (rank, world) or None."""
    try:
        world = int(env.get("WORLD_SIZE", "1"))
        rank = int(env.get("RANK", "0"))
    except ValueError:
        raise ArgumentError(
            "RANK=%r / WORLD_SIZE=%r are not integers" % (env.get("RANK"), env.get("WORLD_SIZE"))
        ) from None
    return None if world <= 1 else (rank, world)


def shard_from_environment(env=None, sysfs_root=None):
    """(shard_id, num_shards) = (rank, world size) from the launcher, or None when there is no
    launcher or the world has one rank. Raises ArgumentError for malformed variables or a rank
    outside the world."""
    info = rank_info(env, sysfs_root)
    if _launcher_failed(info):
        raise ArgumentError("reader sharding from the launcher: " + info["error"])
    if info["rank_source"] and info["rank"] >= 0 and info["world_size"] >= 0:
        shard = (info["rank"], info["world_size"])
    else:
        shard = _plain_rank_and_world(os.environ if env is None else dict(_pairs(env)))
    if shard is None or shard[1] <= 1:
        return None
    rank, world = shard
    if not 0 <= rank < world:
        raise ArgumentError("the launcher's rank %d is outside its world size %d" % (rank, world))
    return rank, world


def _pairs(env):
    if isinstance(env, dict):
        return env.items()
    return (entry.split("=", 1) for entry in env if "=" in entry)


def _has_cuda():
    return "cuda=yes" in _stoker.build_info()


def default_device_id(env=None, sysfs_root=None):
    """The CUDA ordinal a pipeline with no explicit ``device_id`` uses: the launcher rank's GPU,
    or -1 (CPU only) without a launcher, without GPUs or in a build without CUDA. Raises
    ArgumentError when the rank should have a GPU but it cannot be resolved (more local ranks than
    visible GPUs, MIG instances, mixed GPU models without CUDA_DEVICE_ORDER=PCI_BUS_ID), saying
    why; pass ``device_id`` explicitly then."""
    if not _has_cuda():
        return -1
    info = rank_info(env, sysfs_root)
    if info["status"] == "STK_ENOENT":
        return -1
    if info["status"] == "STK_OK":
        return info["cuda_device"]
    if _launcher_failed(info):
        raise ArgumentError("device_id from the launcher: " + info["error"])
    if not info["visible_gpus"] and info["status"] == "STK_EINVAL":
        return -1  # the rank sees no GPU (none present, or CUDA_VISIBLE_DEVICES hides them all)
    raise ArgumentError(
        "device_id from the launcher (%s=%d): %s; pass device_id explicitly (None for a CPU pipeline)"
        % (info["rank_source"], info["local_rank"], info["error"])
    )


def placement(device_id, num_threads, pin_threads=True, affinity_mask=None):
    """(device_id, affinity_mask) for a Pipeline: ``device_id`` AUTO becomes
    :func:`default_device_id`, None becomes -1. The mask is passed through: the C executor pins
    the workers on the local CPUs of the GPU the CUDA ordinal names (by PCI bus id, or through
    CUDA_VISIBLE_DEVICES), so nothing needs correcting here."""
    if isinstance(device_id, str):
        if device_id != AUTO:
            raise ArgumentError("device_id must be an int, None or %r, got %r" % (AUTO, device_id))
        device_id = default_device_id()
    device_id = -1 if device_id is None else int(device_id)
    return device_id, affinity_mask
