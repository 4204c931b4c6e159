"""stoker.gpu_input: reading GPU arrays given to ``fn.external_source`` / ``feed_input`` without
touching their data: objects with ``__cuda_array_interface__`` (torch CUDA tensors, CuPy, Numba)
and CUDA DLPack producers (``__dlpack__`` with ``__dlpack_device__() == (kDLCUDA, id)``).

:func:`gpu_array` gives a :class:`GpuArray`: the device pointer, shape, NumPy dtype, GPU ordinal,
the producer's stream (the CUDA array interface's ``stream`` rule: ``None`` = nothing to wait
for, 1 = legacy default stream, 2 = per-thread default stream, else a ``cudaStream_t``) and the
object that keeps the memory alive. For DLPack we ask the producer to order its work before the
legacy default stream (``__dlpack__(stream=1)``; DLPack is preferred where both are spoken), which
the C side then waits for
(``stk_pipeline_feed_input_stream``). Only C-contiguous arrays are taken, as the host path takes
them after ``np.ascontiguousarray`` (a GPU copy to make them so would be a hidden cost: the error
says to call ``.contiguous()``).

Hot path: once per fed GPU array (a dict read, or a capsule read through ctypes). A list of torch
CUDA tensors, the common batch, does not come here: stoker.external_source reads each tensor's
pointer, dtype and shape from the tensor and waits for torch's current stream once a batch.
"""
import ctypes

import numpy as np

from .errors import StokerError

_KDL_CUDA = 2
_KDL_CUDA_MANAGED = 13
_DLPACK_FLOAT, _DLPACK_INT, _DLPACK_UINT, _DLPACK_BOOL = 2, 0, 1, 6


class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", _DLDevice), ("ndim", ctypes.c_int32), ("dtype", _DLDataType),
                ("shape", ctypes.POINTER(ctypes.c_int64)), ("strides", ctypes.POINTER(ctypes.c_int64)),
                ("byte_offset", ctypes.c_uint64)]


class GpuArray:
    """A GPU array's description (see the module's doc); ``owner`` keeps its memory alive."""

    __slots__ = ("pointer", "shape", "dtype", "device_id", "stream", "owner")

    def __init__(self, pointer, shape, dtype, device_id, stream, owner):
        self.pointer, self.shape, self.dtype = pointer, tuple(int(d) for d in shape), dtype
        self.device_id, self.stream, self.owner = device_id, stream, owner

    @property
    def nbytes(self):
        return int(np.prod(self.shape, dtype=np.int64)) * self.dtype.itemsize


def _c_contiguous(shape, strides, itemsize):
    """strides in bytes (None: contiguous); axes of extent 1 may have any stride."""
    if strides is None:
        return True
    expected = itemsize
    for extent, stride in zip(reversed(shape), reversed(strides)):
        if extent != 1 and stride != expected:
            return False
        expected *= extent
    return True


def _dlpack_device(value):
    get = getattr(value, "__dlpack_device__", None)
    if get is None:
        return None
    try:
        kind, ordinal = get()
    except Exception:  # noqa: BLE001 - not a DLPack producer after all
        return None
    return int(kind), int(ordinal)


def is_gpu_array(value):
    """True for objects in GPU memory (CUDA array interface, or a CUDA DLPack producer)."""
    if isinstance(value, np.ndarray):
        return False
    if hasattr(value, "__cuda_array_interface__"):
        return True
    device = _dlpack_device(value)
    return device is not None and device[0] in (_KDL_CUDA, _KDL_CUDA_MANAGED)


def _from_interface(value, where, default_device):
    cai = value.__cuda_array_interface__
    shape = tuple(cai["shape"])
    try:
        dtype = np.dtype(cai["typestr"])
    except TypeError:
        raise StokerError("%s has the CUDA array type %r, which NumPy does not know"
                          % (where, cai["typestr"])) from None
    if not _c_contiguous(shape, cai.get("strides"), dtype.itemsize):
        raise StokerError("%s is a non-contiguous GPU array (strides %s for shape %s); make it contiguous first "
                          "(e.g. tensor.contiguous())" % (where, tuple(cai["strides"]), shape))
    if cai.get("mask") is not None:
        raise StokerError("%s is a masked GPU array, which stoker does not take" % where)
    stream = cai.get("stream")
    if stream == 0:  # not allowed by the interface; older producers meant the legacy default stream
        stream = 1
    device = _dlpack_device(value)
    ordinal = device[1] if device is not None and device[0] in (_KDL_CUDA, _KDL_CUDA_MANAGED) else default_device
    return GpuArray(int(cai["data"][0]), shape, dtype, ordinal, stream, value)


_DLPACK_TYPES = {(_DLPACK_UINT, 8): "uint8", (_DLPACK_UINT, 16): "uint16", (_DLPACK_UINT, 32): "uint32",
                 (_DLPACK_UINT, 64): "uint64", (_DLPACK_INT, 8): "int8", (_DLPACK_INT, 16): "int16",
                 (_DLPACK_INT, 32): "int32", (_DLPACK_INT, 64): "int64", (_DLPACK_FLOAT, 16): "float16",
                 (_DLPACK_FLOAT, 32): "float32", (_DLPACK_FLOAT, 64): "float64", (_DLPACK_BOOL, 8): "bool"}


def _from_dlpack(value, where):
    try:
        capsule = value.__dlpack__(stream=1)  # order the producer's work before the legacy default stream
    except TypeError:
        capsule = value.__dlpack__()
    get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
    get_pointer.restype, get_pointer.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
    address = get_pointer(capsule, b"dltensor")  # the DLManagedTensor starts with its DLTensor
    t = _DLTensor.from_address(address)
    shape = tuple(t.shape[d] for d in range(t.ndim))
    key = (t.dtype.code, t.dtype.bits)
    if t.dtype.lanes != 1 or key not in _DLPACK_TYPES:
        raise StokerError("%s has DLPack type (code %d, %d bits, %d lanes), which stoker does not carry"
                          % (where, t.dtype.code, t.dtype.bits, t.dtype.lanes))
    dtype = np.dtype(_DLPACK_TYPES[key])
    strides = None if not t.strides else tuple(t.strides[d] * dtype.itemsize for d in range(t.ndim))
    if not _c_contiguous(shape, strides, dtype.itemsize):
        raise StokerError("%s is a non-contiguous GPU array (DLPack strides %s for shape %s); make it contiguous "
                          "first" % (where, tuple(s // dtype.itemsize for s in strides), shape))
    # The capsule (kept as the owner) frees the tensor through its deleter when dropped.
    return GpuArray(int(t.data or 0) + int(t.byte_offset), shape, dtype, int(t.device.device_id), 1, capsule)


def gpu_array(value, where, default_device):
    """The :class:`GpuArray` of a GPU array (``where`` names it in errors: the source and sample).
    DLPack first when the object speaks it (torch, CuPy): its ``stream`` argument orders the
    producer's current stream before ours, which torch's CUDA array interface (no ``stream``
    entry) does not; the CUDA array interface for the rest (Numba, older CuPy, ...)."""
    device = _dlpack_device(value)
    if hasattr(value, "__dlpack__") and device is not None and device[0] in (_KDL_CUDA, _KDL_CUDA_MANAGED):
        return _from_dlpack(value, where)
    return _from_interface(value, where, default_device)
