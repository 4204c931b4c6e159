"""stoker.tensors: a batch's outputs as DALI's TensorListCPU / TensorListGPU, and their samples
as TensorCPU / TensorGPU.

What ``pipe.run()`` returns, one list per output: ``len()``, iteration and ``tl[i]`` (samples),
``at(i)`` (a sample as a NumPy array on the host; a TensorGPU on the GPU), ``as_array()``,
``as_tensor()``, ``as_reshaped_tensor(shape)``, ``as_cpu()``, ``layout()`` (a sample's layout:
"HWC", "CHW", "" for labels), ``shape()`` (one tuple per sample), ``is_dense_tensor()``,
``dtype`` (a :class:`stoker.types.DALIDataType`), ``source_info()``, and DLPack
(``__dlpack__``) on both devices plus ``__cuda_array_interface__`` on the GPU.

Memory: views of the pipeline's buffers, valid until the same thread's next ``run()`` (see
stoker.pipeline); arrays made through DLPack (``as_array()``, ``np.from_dlpack``,
``torch.from_dlpack``) keep the batch's memory alive. ``at(i)`` and ``np.array(tl[i])`` copy.

Source information: ``source_info()`` says where a sample came from, as DALI's: the file path
(readers.file, readers.numpy, readers.video, and the path io.file.read read),
``"<shard path>:<key>"`` (readers.webdataset), "" for an external source or an output of no
reader. An output's samples are those of the reader up
its first inputs (a decoded image keeps its file's source).

Hot path: DLPack export once per output per batch (the iterators); the rest is inspection.
"""
from __future__ import annotations

from typing import Any, Iterator, List, Optional, Sequence, Tuple, Union

from .errors import StokerError
from .types import DALIDataType, TensorLayout, from_stoker_name

_DLPACK_CPU = 1
_DLPACK_CUDA = 2
_LEGACY_DEFAULT_STREAM = 1  # DLPack's code for CUDA's legacy default stream


def _numpy_dtype(name: str) -> Any:
    import numpy as np

    return np.dtype("float32" if name == "float" else name)


def _sample_layout(layout: str, dense: bool) -> str:
    """The layout of one sample: a dense output's layout names the batch dimension first ("N")."""
    return layout[1:] if dense and layout.startswith("N") else layout


class _Tensor:
    """One sample, or a whole dense batch (``as_tensor``): shape() as a list, dtype, layout()."""

    def __init__(self, owner: "TensorListCPU", sample: Optional[int], shape: Optional[Sequence[int]] = None) -> None:
        self._owner = owner
        self._sample = sample  # None: the whole dense batch
        if sample is None:
            info = owner._dense_info()
            self._info = info
            self._shape = [int(d) for d in (shape if shape is not None else info["shape"])]
            self._layout = owner.layout() if shape is None else ""
            if shape is None and owner.is_dense_tensor():
                self._layout = "N" + owner.layout() if owner.layout() else ""
        else:
            self._info = owner._batch.sample_info(owner._index, sample)
            self._shape = [int(d) for d in self._info["shape"]]
            self._layout = self._info["layout"]

    @property
    def dtype(self) -> DALIDataType:
        return from_stoker_name(self._info["dtype"])

    def shape(self) -> List[int]:
        return list(self._shape)

    def layout(self) -> TensorLayout:
        return TensorLayout(self._layout)

    def source_info(self) -> str:
        """Where the sample came from (see the module's doc); "" for a whole batch (as_tensor)."""
        if self._sample is None:
            return ""
        return self._owner.source_info()[self._sample]

    def __len__(self) -> int:
        return self._shape[0] if self._shape else 0

    def _host_array(self) -> Any:
        import numpy as np

        if self._sample is None:
            array = np.from_dlpack(self._owner)
            return array.reshape(self._shape)
        data = self._owner._batch.sample_bytes(self._owner._index, self._sample)
        return np.frombuffer(data, dtype=_numpy_dtype(self._info["dtype"])).reshape(self._shape)

    def __repr__(self) -> str:
        return "%s(shape=%s, dtype=%s, layout=%r)" % (type(self).__name__, self._shape, self.dtype, self._layout)


class TensorCPU(_Tensor):
    """A host sample (or a dense host batch): NumPy takes it (``np.array(t)``), as does DLPack."""

    def as_cpu(self) -> "TensorCPU":
        return self

    def __array__(self, dtype: Any = None, copy: Any = None) -> Any:
        array = self._host_array()
        return array if dtype is None else array.astype(dtype)

    def __dlpack__(self, stream: Any = None, **_ignored: Any) -> Any:
        if self._sample is None and list(self._shape) == list(self._info["shape"]):
            return self._owner.__dlpack__(stream)
        return self._host_array().copy().__dlpack__()

    def __dlpack_device__(self) -> Tuple[int, int]:
        return (_DLPACK_CPU, 0)

    def copy_to_external(self, pointer: Any, *_args: Any, **_kwargs: Any) -> None:
        """Copies the data to host memory at `pointer` (an int or ctypes pointer), as DALI's."""
        import ctypes

        array = self._host_array()
        address = pointer.value if isinstance(pointer, ctypes.c_void_p) else int(pointer)
        ctypes.memmove(address, array.ctypes.data, array.nbytes)


class TensorGPU(_Tensor):
    """A GPU sample (or a dense GPU batch): DLPack and ``__cuda_array_interface__``."""

    def as_cpu(self) -> TensorCPU:
        host = _gpu_to_host(self._owner, self._sample)
        return _HostCopy(self._owner, self._sample, host)

    def __dlpack__(self, stream: Any = None, **_ignored: Any) -> Any:
        if self._sample is None:
            return self._owner.__dlpack__(stream)
        raise StokerError("a single GPU sample cannot be exported alone; export the batch (tl.as_tensor())")

    def __dlpack_device__(self) -> Tuple[int, int]:
        return (_DLPACK_CUDA, int(self._info["device_id"]))

    @property
    def __cuda_array_interface__(self) -> dict:
        if self._sample is None:
            return self._owner.__cuda_array_interface__
        info = self._info
        return _cai(info["data"], self._shape, info["dtype"], self._owner)


class _HostCopy(TensorCPU):
    """A host copy of GPU data (as_cpu of a TensorGPU)."""

    def __init__(self, owner: "TensorListCPU", sample: Optional[int], array: Any) -> None:
        self._owner = owner
        self._sample = sample
        self._array = array
        self._shape = list(array.shape)
        self._info = {"dtype": "float" if array.dtype.name == "float32" else array.dtype.name}
        self._layout = owner.layout() if sample is not None else ""

    def _host_array(self) -> Any:
        return self._array


def _cai(pointer: int, shape: Sequence[int], dtype_name: str, owner: "TensorListCPU") -> dict:
    # the consumer may read at once: CUDA's legacy default stream (which every blocking stream,
    # torch's default among them, waits for) is made to wait on the batch's event first
    if owner._info is not None:
        owner._batch.to_dlpack(owner._index, _LEGACY_DEFAULT_STREAM)
    else:  # ragged: no batch export to order the legacy stream on; wait for the device instead
        _device_synchronize()
    return {"shape": tuple(int(d) for d in shape), "typestr": _numpy_dtype(dtype_name).str,
            "data": (int(pointer), False), "version": 3, "strides": None, "stream": None}


def _device_synchronize() -> None:
    """Waits for the current device's work, through torch or CuPy (whichever is installed)."""
    try:
        import torch

        torch.cuda.synchronize()
        return
    except ImportError:
        pass
    import cupy

    cupy.cuda.Device().synchronize()


class _CudaArray:
    """One GPU sample seen only through its __cuda_array_interface__ (a sample has no DLPack export
    of its own, and consumers try DLPack first)."""

    def __init__(self, sample: Any) -> None:
        self.__cuda_array_interface__ = sample.__cuda_array_interface__


def _gpu_to_host(owner: "TensorListCPU", sample: Optional[int]) -> Any:
    """A NumPy copy of GPU data, through torch or CuPy (whichever is installed): the whole dense
    batch (sample None), or one sample exported on its own (ragged batches have no batch tensor)."""
    try:
        import torch

        if sample is None:
            return torch.from_dlpack(owner).cpu().numpy()
        return torch.as_tensor(_CudaArray(owner[sample]), device="cuda").cpu().numpy()
    except ImportError:
        pass
    try:
        import cupy

        return cupy.asnumpy(cupy.from_dlpack(owner) if sample is None else cupy.asarray(_CudaArray(owner[sample])))
    except ImportError:
        raise StokerError("as_cpu() of GPU data copies it through torch or CuPy; neither is installed") from None


class TensorListCPU:
    """One output of one batch on the host (DALI's TensorListCPU). See the module's doc."""

    _sample_type: type = TensorCPU

    def __init__(self, batch: Any, index: int, name: str, to_gpu: bool = False) -> None:
        self._batch = batch
        self._index = index
        self.name = name
        self.to_gpu = to_gpu
        self._info = batch.output_info(index)  # None when ragged

    # -- metadata --------------------------------------------------------------------------
    def is_dense_tensor(self) -> bool:
        """True when every sample has the same shape (the batch is one tensor)."""
        return self._info is not None

    @property
    def is_dense(self) -> bool:
        return self._info is not None

    def _dense_info(self) -> dict:
        if self._info is None:
            raise StokerError(
                "output %r is ragged (its samples differ in shape); use tl[i] per sample, or "
                "resize/crop to one shape in the pipeline" % self.name
            )
        return self._info

    def _any_info(self) -> dict:
        return self._info if self._info is not None else self._batch.sample_info(self._index, 0)

    def shape(self) -> List[Tuple[int, ...]]:
        """The shape of every sample (a list of tuples, as DALI's)."""
        if self._info is not None:
            return [tuple(int(d) for d in self._info["shape"][1:])] * len(self)
        return [tuple(int(d) for d in self._batch.sample_info(self._index, i)["shape"]) for i in range(len(self))]

    @property
    def dtype(self) -> DALIDataType:
        return from_stoker_name(self._any_info()["dtype"])

    def layout(self) -> TensorLayout:
        """A sample's layout ("HWC", "CHW", "FHWC"; "" where the output has none, e.g. labels)."""
        info = self._any_info()
        layout = _sample_layout(info["layout"], self._info is not None)
        return TensorLayout("" if layout == "N" else layout)

    @property
    def device(self) -> str:
        """"cpu" or "gpu"."""
        return str(self._any_info()["device"])

    @property
    def device_id(self) -> int:
        return int(self._any_info()["device_id"])

    def source_info(self) -> List[str]:
        """Each sample's source (see the module's doc)."""
        if getattr(self, "_sources", None) is None:
            self._sources = self._batch.source_infos(self._index)
        return list(self._sources)

    def __len__(self) -> int:
        return int(self._batch.info()["size"])

    # -- samples ---------------------------------------------------------------------------
    def __getitem__(self, sample: int) -> Any:
        count = len(self)
        if sample < 0:
            sample += count
        if not 0 <= sample < count:
            raise IndexError("sample %d out of range (the batch has %d)" % (sample, count))
        return self._sample_type(self, sample)

    def __iter__(self) -> Iterator[Any]:
        return (self[i] for i in range(len(self)))

    def at(self, sample: int) -> Any:
        """Sample `sample` as a NumPy array (a copy)."""
        import numpy as np

        return np.array(self[sample])

    # -- whole batch -----------------------------------------------------------------------
    def as_cpu(self) -> "TensorListCPU":
        return self

    def as_array(self) -> Any:
        """The dense batch as a NumPy array (zero-copy: the array keeps the batch alive)."""
        import numpy as np

        self._dense_info()
        return np.from_dlpack(self)

    def as_tensor(self) -> Any:
        """The dense batch as one tensor (batch dimension first)."""
        return self._sample_type(self, None)

    def as_reshaped_tensor(self, shape: Sequence[int]) -> Any:
        """The dense batch as one tensor of another shape with as many elements."""
        import math

        info = self._dense_info()
        if math.prod(int(d) for d in shape) != math.prod(int(d) for d in info["shape"]):
            raise ValueError("as_reshaped_tensor: shape %s has another number of elements than %s"
                             % (list(shape), list(info["shape"])))
        return self._sample_type(self, None, shape)

    # -- DLPack ----------------------------------------------------------------------------
    def __dlpack__(self, stream: Any = None, **_ignored: Any) -> Any:
        # max_version/dl_device/copy (DLPack 1.0 keywords) are accepted and ignored: the export is
        # a DLPack 0.8 "dltensor" capsule, which every consumer still accepts.
        return self._batch.to_dlpack(self._index, stream)

    def __dlpack_device__(self) -> Tuple[int, int]:
        info = self._dense_info()
        if info["device"] == "gpu":
            return (_DLPACK_CUDA, int(info["device_id"]))
        return (_DLPACK_CPU, 0)

    def __repr__(self) -> str:
        try:
            shapes = self.shape()
            shown = shapes[0] if self.is_dense_tensor() else "ragged"
            return "%s(%r, %d samples, shape=%s, dtype=%s, layout=%r)" % (
                type(self).__name__, self.name, len(shapes), shown, self.dtype, str(self.layout()))
        except StokerError:
            return "%s(%r, released)" % (type(self).__name__, self.name)


class TensorListGPU(TensorListCPU):
    """One output of one batch on the GPU (DALI's TensorListGPU)."""

    _sample_type = TensorGPU

    def at(self, sample: int) -> Any:
        """Sample `sample` (a TensorGPU, as DALI's TensorListGPU.at)."""
        return self[sample]

    def as_cpu(self) -> TensorListCPU:  # type: ignore[override]
        """A host copy of the batch (through torch or CuPy)."""
        return _HostList(self)

    def as_array(self) -> Any:
        raise StokerError("output %r lives on the GPU: use as_cpu().as_array(), torch.from_dlpack or cupy" % self.name)

    @property
    def __cuda_array_interface__(self) -> dict:
        info = self._dense_info()
        return _cai(info["data"], info["shape"], info["dtype"], self)


class _HostList(TensorListCPU):
    """A host copy of a TensorListGPU."""

    def __init__(self, source: TensorListGPU) -> None:
        self._source = source
        self.name = source.name
        self.to_gpu = False
        self._batch = source._batch
        self._index = source._index
        self._info = source._info
        if source.is_dense_tensor():
            self._arrays: Union[Any, List[Any]] = _gpu_to_host(source, None)
        else:
            self._arrays = [_gpu_to_host(source, i) for i in range(len(source))]

    def __getitem__(self, sample: int) -> Any:
        array = self._arrays[sample]
        return _HostCopy(self, sample, array)

    def as_array(self) -> Any:
        self._dense_info()
        return self._arrays

    def as_tensor(self) -> Any:
        self._dense_info()
        return _HostCopy(self, None, self._arrays)

    @property
    def device(self) -> str:
        return "cpu"

    def __dlpack__(self, stream: Any = None, **_ignored: Any) -> Any:
        return self.as_array().__dlpack__()

    def __dlpack_device__(self) -> Tuple[int, int]:
        return (_DLPACK_CPU, 0)


def tensor_list(batch: Any, index: int, name: str, to_gpu: bool = False) -> TensorListCPU:
    """The TensorListCPU or TensorListGPU of output `index` of `batch`."""
    info = batch.output_info(index)
    if info is None:
        info = batch.sample_info(index, 0) if batch.info()["size"] else {"device": "cpu"}
    cls = TensorListGPU if info["device"] == "gpu" else TensorListCPU
    return cls(batch, index, name, to_gpu)


# stoker's older name of a batch output
TensorOutput = TensorListCPU
