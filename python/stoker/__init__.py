"""stoker: keeps GPUs fed.

A data-loading pipeline for deep-learning training (JPEG decode and augmentation on CPU cores,
CUDA cores and the GPU's JPEG engines) with topology-aware CPU/NUMA placement. This package is a
thin front end over stoker's C library (the ``stoker._stoker`` extension); operators, their
arguments, defaults and docs all come from the C registry.

Spelled like NVIDIA DALI so its users can switch by changing imports::

    import stoker
    from stoker import fn, pipeline_def

    @pipeline_def(batch_size=64, num_threads=4, device_id=-1)
    def train_pipe(data_dir):
        jpegs, labels = fn.readers.file(file_root=data_dir, random_shuffle=True, name="Reader")
        images = fn.decoders.image(jpegs)
        images = fn.random_resized_crop(images, size=[224, 224])
        return fn.crop_mirror_normalize(images, mirror=fn.random.coin_flip()), labels

Module map: ``stoker.fn`` (operators), ``stoker.ops`` (DALI's object API), ``stoker.types``
(DALI's enums and type names), ``stoker.pipeline`` (Pipeline, pipeline_def), ``stoker.graph``
(DataNode), ``stoker.tensors`` (outputs: TensorListCPU/GPU), ``stoker.iterator``
(framework-free iterator with DALI's last-batch policies), ``stoker.torch`` and
``stoker.plugin.pytorch`` (PyTorch iterators, feed_ndarray, worker_init_fn), ``stoker.affinity``
(set_affinity, topology). docs/porting.md says what differs from DALI. Not on a hot path except
where noted in each module.
"""
import os as _os

from . import _stoker  # noqa: E402
from .errors import StokerError, ArgumentError, ArgumentTypeError
from .pipeline import Pipeline, pipeline_def
from .graph import DataNode
from .tensors import TensorListCPU, TensorListGPU, TensorOutput
from .iterator import LastBatchPolicy
from .affinity import topology, set_affinity
from . import types
from . import fn
from . import ops

__version__ = _stoker.version()


def set_cuda_connections(count=32):
    """Asks CUDA for ``count`` hardware work queues (``CUDA_DEVICE_MAX_CONNECTIONS``) for this process,
    unless the variable is already set, and returns the value in effect.

    CUDA's default is 8 queues; streams beyond that share them, so the loader's streams (the
    pipeline's, the JPEG engines', one per decoder thread) can wait behind kernels the training
    loop has queued on its own stream. More queues let them run beside it (docs/python.md,
    *Sharing the GPU with training*). The setting is the whole process's, the training loop's
    included, which is why importing stoker does not make it for you. CUDA reads the variable once,
    when the process first initializes CUDA: call this before the first CUDA call (before torch
    touches the GPU); later it has no effect.
    """
    if isinstance(count, bool) or not isinstance(count, int) or not 1 <= count <= 32:
        raise ValueError("set_cuda_connections: count must be an int from 1 to 32 (CUDA's range), not %r" % (count,))
    return _os.environ.setdefault("CUDA_DEVICE_MAX_CONNECTIONS", str(count))


def build_info():
    """How the C library was built (CUDA or not, JPEG library), as ``stoker --version`` prints."""
    return _stoker.build_info()


__all__ = [
    "ArgumentError",
    "ArgumentTypeError",
    "DataNode",
    "LastBatchPolicy",
    "Pipeline",
    "StokerError",
    "TensorListCPU",
    "TensorListGPU",
    "TensorOutput",
    "build_info",
    "fn",
    "ops",
    "pipeline_def",
    "set_affinity",
    "set_cuda_connections",
    "topology",
    "types",
]

from . import math_ops as _math_ops  # noqa: E402,F401 (installs DataNode operators and stoker.math)
