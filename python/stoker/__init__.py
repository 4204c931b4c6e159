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

Module map: ``stoker.fn`` (operators), ``stoker.pipeline`` (Pipeline, pipeline_def),
``stoker.iterator`` (framework-free iterator with DALI's last-batch policies),
``stoker.torch`` (PyTorch iterators, worker_init_fn), ``stoker.affinity`` (set_affinity,
topology). Not on a hot path except where noted in each module.
"""
from . import _stoker
from .errors import StokerError, ArgumentError
from .pipeline import Pipeline, pipeline_def, DataNode, TensorOutput
from .iterator import LastBatchPolicy
from .affinity import topology, set_affinity
from . import fn

__version__ = _stoker.version()


def build_info():
    """How the C library was built (CUDA or not, JPEG library), as ``stoker --version`` prints."""
    return _stoker.build_info()


__all__ = [
    "ArgumentError",
    "DataNode",
    "LastBatchPolicy",
    "Pipeline",
    "StokerError",
    "TensorOutput",
    "build_info",
    "fn",
    "pipeline_def",
    "set_affinity",
    "topology",
]
