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

# More hardware work queues than CUDA's default 8. stoker's streams (the pipeline's, the JPEG
# engines', one per decoder thread) otherwise share queues with the training loop's stream and
# wait behind the kernels it has queued: on the H100 the training step fed by the mixed decoder
# spent 16 ms per step in next() with 8 queues, 3.6 ms with 32 (bench/RESULTS.md, session 4).
# CUDA reads this once, when the process first initializes it; a value already set is kept.
_os.environ.setdefault("CUDA_DEVICE_MAX_CONNECTIONS", "32")

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
    "topology",
    "types",
]
