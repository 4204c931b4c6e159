"""stoker.torch: PyTorch integration.

* ``GenericIterator`` / ``ClassificationIterator`` (also under DALI's names
  ``DALIGenericIterator`` / ``DALIClassificationIterator``, and in ``stoker.plugin.pytorch``):
  DALI's PyTorch iterators over stoker pipelines, with DALI's arguments. Tensors reach PyTorch zero-copy through DLPack on the pipeline's device; for GPU
  outputs, torch's current stream is made to wait on the batch's CUDA event before the tensor is
  handed over (the DLPack ``stream`` protocol), so no host synchronisation is needed.
* ``feed_ndarray(tensor_list, torch_tensor)``: DALI's copy of an output (or one sample) into a
  preallocated torch tensor.
* ``worker_init_fn(gpu_id=None)``: for users who keep their ``torch.utils.data.DataLoader``; a
  picklable callable that re-pins each worker to its GPU's local cores and binds its memory
  policy to the GPU's NUMA node (numactl's policy does not survive the spawn start method).

Memory contract: a returned tensor shares the batch's buffer. The pipeline recycles that buffer
only after you asked the iterator for the next batch *and* the tensor is gone; holding tensors
beyond the training step keeps buffers out of the pool (more memory), so ``.clone()`` what you
keep. Copying is never needed for the usual ``for data in it: train(data)`` loop.

torch is imported lazily, so ``worker_init_fn`` works (and is tested) without it. Hot path:
``__next__`` once per batch.
"""
from __future__ import annotations

import os
from typing import Any, Optional, Sequence, Union

from .affinity import WorkerAffinity
from .iterator import LastBatchPolicy, NumpyIterator

__all__ = ["ClassificationIterator", "DALIClassificationIterator", "DALIGenericIterator", "GenericIterator",
           "LastBatchPolicy", "feed_ndarray", "worker_init_fn"]


class GenericIterator(NumpyIterator):
    """DALI's ``DALIGenericIterator`` for stoker pipelines: each step returns a list (one entry per
    pipeline) of dicts {output name: torch.Tensor}. See stoker.iterator for the arguments and the
    last-batch policy table. Outputs marked ``.gpu()`` in the pipeline definition but produced on
    the host (labels) are moved to the pipeline's GPU."""

    def __init__(self, pipelines: Any, output_map: Sequence[str], size: int = -1, reader_name: Optional[str] = None,
                 auto_reset: Union[bool, str, None] = False, fill_last_batch: Optional[bool] = None,
                 dynamic_shape: Any = False, last_batch_padded: bool = False,
                 last_batch_policy: LastBatchPolicy = LastBatchPolicy.FILL, prepare_first_batch: bool = True) -> None:
        import torch  # noqa: F401  (fail early with ImportError when torch is absent)

        self._torch = torch
        self._copy_events = []  # host->GPU copies of .gpu() outputs still reading the batch (_release_current)
        # STOKER_TORCH_UPLOAD=clone (A/B, default "record"): the consumer gets a clone made on its
        # own stream instead of the side stream's copy marked with record_stream (_upload)
        self._clone_uploads = os.environ.get("STOKER_TORCH_UPLOAD", "record") == "clone"
        self._clone_sources = []  # (side-stream copy, event after its clone on the consumer's stream)
        self._copy_streams = {}  # device index -> the side stream of those copies (_upload)
        super().__init__(pipelines, output_map, size=size, reader_name=reader_name, auto_reset=auto_reset,
                         fill_last_batch=fill_last_batch, dynamic_shape=dynamic_shape,
                         last_batch_policy=last_batch_policy, last_batch_padded=last_batch_padded,
                         prepare_first_batch=prepare_first_batch)

    def _convert(self, output, count):
        torch = self._torch
        tensor = torch.from_dlpack(output)
        if count != tensor.shape[0]:
            tensor = tensor[:count]
        if output.to_gpu and tensor.device.type == "cpu" and torch.cuda.is_available():
            device_id = next((p.device_id for p in self._pipes if p.device_id >= 0), None)
            if device_id is not None:
                tensor = self._upload(tensor, torch.device("cuda", device_id))
        return tensor

    def _upload(self, tensor, device):
        """A host output (pinned: the pipeline has a GPU) copied to `device` on a side stream of the
        iterator's own, which torch's current stream then waits for on the GPU. The batch may be
        handed back to the pipeline (and refilled) only once the copy is done, which
        _release_current waits for on the host: on the current stream that copy would queue behind
        the training step's kernels, and the next next() would wait for the GPU to finish the
        previous step (the host held to one step ahead of the GPU)."""
        torch = self._torch
        stream = self._copy_streams.get(device.index)
        if stream is None:
            stream = self._copy_streams[device.index] = torch.cuda.Stream(device)
        current = torch.cuda.current_stream(device)
        with torch.cuda.stream(stream):
            copy = tensor.to(device, non_blocking=True)
            event = torch.cuda.Event()
            event.record(stream)
        current.wait_event(event)
        self._copy_events.append(event)
        if not self._clone_uploads:
            copy.record_stream(current)  # allocated on the side stream, used on the current one
            return copy
        # record_stream leaves torch's caching allocator an event to poll at every allocation until
        # the step is done with the tensor (hundreds of cudaEventQuery calls a ResNet-50 step with
        # stoker's labels, none without). A clone made on the current stream is that
        # stream's own allocation; the side-stream copy is kept until the clone has run.
        out = copy.clone()
        done = torch.cuda.Event()
        done.record(current)
        self._clone_sources.append((copy, done))
        return out

    def _release_current(self):
        for event in self._copy_events:
            event.synchronize()  # normally long done: the training step used the tensors
        self._copy_events = []
        # side-stream copies whose clones have run go back to torch; a few steps' worth at most
        self._clone_sources = [(c, e) for c, e in self._clone_sources if not e.query()]
        while len(self._clone_sources) > 4:
            self._clone_sources.pop(0)[1].synchronize()
        super()._release_current()


class ClassificationIterator(GenericIterator):
    """``GenericIterator`` with output_map ["data", "label"] (DALI's ``DALIClassificationIterator``)."""

    def __init__(self, pipelines: Any, size: int = -1, reader_name: Optional[str] = None,
                 auto_reset: Union[bool, str, None] = False, fill_last_batch: Optional[bool] = None,
                 dynamic_shape: Any = False, last_batch_padded: bool = False,
                 last_batch_policy: LastBatchPolicy = LastBatchPolicy.FILL, prepare_first_batch: bool = True) -> None:
        super().__init__(pipelines, ["data", "label"], size=size, reader_name=reader_name, auto_reset=auto_reset,
                         fill_last_batch=fill_last_batch, dynamic_shape=dynamic_shape,
                         last_batch_policy=last_batch_policy, last_batch_padded=last_batch_padded,
                         prepare_first_batch=prepare_first_batch)


# DALI's names
DALIGenericIterator = GenericIterator
DALIClassificationIterator = ClassificationIterator


def feed_ndarray(dali_tensor: Any, arr: Any, cuda_stream: Any = None) -> Any:
    """Copies an output (a TensorListCPU/GPU, dense) or one sample (TensorCPU/GPU) into the
    preallocated torch tensor ``arr`` of the same element type and shape (DALI's feed_ndarray; a
    mismatch raises naming both). A GPU copy runs on ``cuda_stream`` (torch's current stream when
    None), after the batch is ready. Returns ``arr``."""
    import torch

    source = torch.from_dlpack(dali_tensor.as_tensor() if hasattr(dali_tensor, "as_tensor") else dali_tensor)
    if source.dtype != arr.dtype:
        raise TypeError("feed_ndarray: the element type of the output (%s) differs from the torch tensor's (%s)"
                        % (source.dtype, arr.dtype))
    if list(source.shape) != list(arr.shape):
        raise ValueError("feed_ndarray: shapes differ: the output has %s, the torch tensor %s"
                         % (list(source.shape), list(arr.shape)))
    if source.device.type == "cuda" or arr.device.type == "cuda":
        stream = cuda_stream if isinstance(cuda_stream, torch.cuda.Stream) or cuda_stream is None else \
            torch.cuda.ExternalStream(int(cuda_stream))
        with torch.cuda.stream(stream) if stream is not None else _null_context():
            arr.copy_(source, non_blocking=cuda_stream is not None)
    else:
        arr.copy_(source)
    return arr


class _null_context:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: Any) -> bool:
        return False


def _default_gpu_id():
    for variable in ("LOCAL_RANK", "SLURM_LOCALID", "OMPI_COMM_WORLD_LOCAL_RANK"):
        value = os.environ.get(variable)
        if value is not None and value.strip().isdigit():
            return int(value)
    import sys

    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_available() and torch.cuda.is_initialized():
        return torch.cuda.current_device()
    return 0


def worker_init_fn(gpu_id=None, nproc_per_node=None, *, mode="socket_unique_contiguous", cores="all_logical",
                   balanced=True, mempolicy="bind", chain=None):
    """A picklable ``DataLoader(worker_init_fn=...)`` callable pinning each worker next to GPU
    ``gpu_id`` (default: LOCAL_RANK / SLURM_LOCALID / the current CUDA device / 0).

    The plan (CPUs + NUMA node) is computed here, in the parent, by stoker's planner and carried by
    value; in the worker the callable only sets the CPU affinity of all the worker's threads and
    its memory policy (``mempolicy``: "bind", "preferred" or "none"), then calls ``chain(worker_id)``
    if given. Raises StokerError here when there is no plan (e.g. no GPU)."""
    if gpu_id is None:
        gpu_id = _default_gpu_id()
    return WorkerAffinity.for_gpu(gpu_id, nproc_per_node, mode=mode, cores=cores, balanced=balanced,
                                  mempolicy=mempolicy, chain=chain)
