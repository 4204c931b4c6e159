"""stoker.types: DALI's type names (``nvidia.dali.types`` spelled ``stoker.types``).

* :class:`DALIDataType` with DALI's numbering and every numeric type, and DALI's module-level
  aliases (``types.UINT8``, ``types.FLOAT``, ``types.FLOAT16``, ``types.INT32``, ...);
* :class:`DALIImageType` (``RGB``, ``BGR``, ``GRAY``, ``YCbCr``, ``ANY_DATA``);
* :class:`DALIInterpType` (``INTERP_NN`` ... ``INTERP_GAUSSIAN``): resize and random_resized_crop
  take NN, LINEAR, CUBIC and TRIANGULAR (linear, antialiased when downscaling: stoker's linear
  filter with ``antialias=True``); LANCZOS3 and GAUSSIAN raise a clear error until the operators
  have those filters;
* :class:`TensorLayout` and the layout aliases ``NHWC`` = "HWC", ``NCHW`` = "CHW", ``NFHWC``,
  ``NFCHW``, ``SAME``;
* :func:`Constant` / :class:`ScalarConstant`, :class:`SampleInfo`, :class:`BatchInfo`,
  :func:`to_numpy_type`, :func:`to_dali_type`.

Every ``fn.*`` argument that DALI types with one of these enums (``dtype=``, ``output_type=``,
``interp_type=``, ``image_type=``) takes them (stoker.fn converts them to the C schema's strings).
Not on a hot path.
"""
from __future__ import annotations

import enum
from typing import Any, Optional, Union


class _DaliEnum(enum.IntEnum):
    """An int enum printed as DALI prints its enums ("DALIDataType.FLOAT")."""

    def __str__(self) -> str:
        return "%s.%s" % (type(self).__name__, self.name)

    __format__ = object.__format__

    def __repr__(self) -> str:
        return str(self)


class DALIDataType(_DaliEnum):
    """Element types, numbered as DALI numbers them (its serialized pipelines depend on it)."""

    NO_TYPE = -1
    UINT8 = 0
    UINT16 = 1
    UINT32 = 2
    UINT64 = 3
    INT8 = 4
    INT16 = 5
    INT32 = 6
    INT64 = 7
    FLOAT16 = 8
    FLOAT = 9
    FLOAT64 = 10
    BOOL = 11
    STRING = 12
    IMAGE_TYPE = 20
    DATA_TYPE = 21
    INTERP_TYPE = 22
    TENSOR_LAYOUT = 23
    PYTHON_OBJECT = 24


class DALIImageType(_DaliEnum):
    """Colour spaces of decoded images."""

    RGB = 0
    BGR = 1
    GRAY = 2
    YCbCr = 3
    ANY_DATA = 4


class DALIInterpType(_DaliEnum):
    """Resampling filters."""

    INTERP_NN = 0
    INTERP_LINEAR = 1
    INTERP_CUBIC = 2
    INTERP_LANCZOS3 = 3
    INTERP_TRIANGULAR = 4
    INTERP_GAUSSIAN = 5


class PipelineAPIType(_DaliEnum):
    """DALI's pipeline API kinds (accepted for code that names them; stoker has one API)."""

    BASIC = 0
    ITERATOR = 1
    SCHEDULED = 2


# DALI exports every enum value at module level (types.UINT8, types.RGB, types.INTERP_LINEAR); written
# out (not generated) so that type checkers see them
NO_TYPE = DALIDataType.NO_TYPE
UINT8 = DALIDataType.UINT8
UINT16 = DALIDataType.UINT16
UINT32 = DALIDataType.UINT32
UINT64 = DALIDataType.UINT64
INT8 = DALIDataType.INT8
INT16 = DALIDataType.INT16
INT32 = DALIDataType.INT32
INT64 = DALIDataType.INT64
FLOAT16 = DALIDataType.FLOAT16
FLOAT = DALIDataType.FLOAT
FLOAT64 = DALIDataType.FLOAT64
BOOL = DALIDataType.BOOL
STRING = DALIDataType.STRING
IMAGE_TYPE = DALIDataType.IMAGE_TYPE
DATA_TYPE = DALIDataType.DATA_TYPE
INTERP_TYPE = DALIDataType.INTERP_TYPE
TENSOR_LAYOUT = DALIDataType.TENSOR_LAYOUT
PYTHON_OBJECT = DALIDataType.PYTHON_OBJECT
RGB = DALIImageType.RGB
BGR = DALIImageType.BGR
GRAY = DALIImageType.GRAY
YCbCr = DALIImageType.YCbCr
ANY_DATA = DALIImageType.ANY_DATA
INTERP_NN = DALIInterpType.INTERP_NN
INTERP_LINEAR = DALIInterpType.INTERP_LINEAR
INTERP_CUBIC = DALIInterpType.INTERP_CUBIC
INTERP_LANCZOS3 = DALIInterpType.INTERP_LANCZOS3
INTERP_TRIANGULAR = DALIInterpType.INTERP_TRIANGULAR
INTERP_GAUSSIAN = DALIInterpType.INTERP_GAUSSIAN


class TensorLayout(str):
    """A layout string ("HWC", "CHW", "FHWC", ...): one letter per dimension of a sample."""

    def __repr__(self) -> str:
        return "TensorLayout(%s)" % str.__repr__(self)


# DALI's layout aliases: per-sample layouts (the batch dimension is not part of a layout)
NHWC = TensorLayout("HWC")
NCHW = TensorLayout("CHW")
NFHWC = TensorLayout("FHWC")
NFCHW = TensorLayout("FCHW")
SAME = TensorLayout("")

# element types: DALI enum <-> NumPy name <-> stoker's C type name (stk_dtype_name)
_NUMPY_NAMES = {
    DALIDataType.UINT8: "uint8",
    DALIDataType.UINT16: "uint16",
    DALIDataType.UINT32: "uint32",
    DALIDataType.UINT64: "uint64",
    DALIDataType.INT8: "int8",
    DALIDataType.INT16: "int16",
    DALIDataType.INT32: "int32",
    DALIDataType.INT64: "int64",
    DALIDataType.FLOAT16: "float16",
    DALIDataType.FLOAT: "float32",
    DALIDataType.FLOAT64: "float64",
    DALIDataType.BOOL: "bool",
}
_STOKER_NAMES = {**_NUMPY_NAMES, DALIDataType.FLOAT: "float"}

# names NumPy, torch and DALI's own string spellings use for each type
_BY_NAME = {name: dtype for dtype, name in _NUMPY_NAMES.items()}
_BY_NAME.update({
    "float": DALIDataType.FLOAT, "half": DALIDataType.FLOAT16, "double": DALIDataType.FLOAT64,
    "byte": DALIDataType.UINT8, "ubyte": DALIDataType.UINT8, "sbyte": DALIDataType.INT8,
    "short": DALIDataType.INT16, "ushort": DALIDataType.UINT16, "long": DALIDataType.INT64,
    "ulong": DALIDataType.UINT64, "boolean": DALIDataType.BOOL, "bool_": DALIDataType.BOOL,
})


def to_dali_type(framework_type: Any) -> DALIDataType:
    """The DALIDataType of a NumPy dtype, a torch dtype or a type name ("float32", "uint8", ...).
    TypeError when there is none."""
    if isinstance(framework_type, DALIDataType):
        return framework_type
    text = str(getattr(framework_type, "name", None) or framework_type)
    if text.startswith("torch."):
        text = text[len("torch."):]
    if text.startswith("<class 'numpy."):  # np.float32 the class
        text = text[len("<class 'numpy."):-2]
    found = _BY_NAME.get(text) or _BY_NAME.get(text.lower())
    if found is None:
        raise TypeError("'%s' could not be converted into any known DALIDataType" % (framework_type,))
    return found


def to_numpy_type(dali_type: DALIDataType) -> Any:
    """The NumPy type of a DALIDataType (KeyError for a non-numeric one, as DALI)."""
    import numpy as np

    return np.dtype(_NUMPY_NAMES[DALIDataType(dali_type)]).type


def stoker_type_name(dali_type: DALIDataType) -> str:
    """stoker's C name of a numeric DALIDataType ("uint8", "float", "float16", ...)."""
    try:
        return _STOKER_NAMES[DALIDataType(dali_type)]
    except (KeyError, ValueError):
        raise TypeError("%s is not a numeric element type" % (dali_type,)) from None


def from_stoker_name(name: str) -> DALIDataType:
    """The DALIDataType of stoker's C type name (what outputs report)."""
    return to_dali_type(name)


_INT_TYPES = {DALIDataType.INT8, DALIDataType.INT16, DALIDataType.INT32, DALIDataType.INT64, DALIDataType.UINT8,
              DALIDataType.UINT16, DALIDataType.UINT32, DALIDataType.UINT64}
_FLOAT_TYPES = {DALIDataType.FLOAT16, DALIDataType.FLOAT, DALIDataType.FLOAT64}


class ScalarConstant:
    """A scalar with an element type (what ``Constant(3)`` gives); used as an argument value it
    is its plain value. Arithmetic with graph nodes is not there yet (docs/porting.md)."""

    def __init__(self, value: Union[bool, int, float], dtype: Optional[DALIDataType] = None) -> None:
        if hasattr(value, "dtype") and hasattr(value, "item"):  # NumPy scalar / 0-d array
            dtype = dtype if dtype is not None else to_dali_type(value.dtype)
            value = value.item()
        if not isinstance(value, (bool, int, float)):
            raise TypeError("Expected scalar value of type 'bool', 'int' or 'float', got %s" % type(value))
        if dtype is None:
            dtype = (DALIDataType.BOOL if isinstance(value, bool) else
                     DALIDataType.INT32 if isinstance(value, int) else DALIDataType.FLOAT)
        self.dtype = DALIDataType(dtype)
        if self.dtype == DALIDataType.BOOL:
            self.value: Union[bool, int, float] = bool(value)
        elif self.dtype in _INT_TYPES:
            self.value = int(value)
        elif self.dtype in _FLOAT_TYPES:
            self.value = float(value)
        else:
            raise TypeError("a ScalarConstant holds a bool, integer or floating-point type, not %s" % (self.dtype,))
        self.shape: list = []

    def __int__(self) -> int:
        return int(self.value)

    def __float__(self) -> float:
        return float(self.value)

    def __bool__(self) -> bool:
        return bool(self.value)

    def __index__(self) -> int:
        if self.dtype in _FLOAT_TYPES:
            raise TypeError("a floating-point ScalarConstant is not an index")
        return int(self.value)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, ScalarConstant):
            return self.value == other.value and self.dtype == other.dtype
        return NotImplemented

    def __hash__(self) -> int:
        return hash((self.value, int(self.dtype)))

    def __str__(self) -> str:
        return "%s:%s" % (self.value, self.dtype)

    def __repr__(self) -> str:
        return repr(self.value)


def Constant(value: Any, dtype: Optional[DALIDataType] = None, shape: Any = None, layout: Optional[str] = None,
             device: Optional[str] = None, **kwargs: Any) -> Any:
    """DALI's constant wrapper. A scalar gives a :class:`ScalarConstant` (usable wherever an
    argument takes a number, and in DataNode arithmetic); a list, an array, ``shape``, ``layout`` or
    ``device`` give a ``fn.constant`` node (the same tensor every sample; ``device="gpu"`` uploads
    it). Without ``dtype``, floating-point values give FLOAT, integers INT32 and booleans BOOL, as
    in DALI."""
    if kwargs:
        raise TypeError("types.Constant: unexpected argument(s) %s" % ", ".join(sorted(kwargs)))
    scalar_shape = shape in (None, (), [], 1, [1], (1,))
    if device is None and layout is None and scalar_shape and not isinstance(value, (list, tuple)) \
            and not (hasattr(value, "shape") and tuple(getattr(value, "shape")) not in ((), (1,))):
        return ScalarConstant(value, dtype)
    import numpy as np

    array = np.asarray(value)
    if array.dtype.kind not in "biuf":
        raise TypeError("types.Constant: values of numpy kind %r (%s); give numbers" % (array.dtype.kind, array.dtype))
    if dtype is None:
        dtype = FLOAT if array.dtype.kind == "f" else BOOL if array.dtype.kind == "b" else INT32
    if shape is None:
        out_shape = list(array.shape)
    else:
        out_shape = [int(shape)] if isinstance(shape, int) else [int(extent) for extent in shape]
    data = array.reshape(-1).tolist()
    args = {"fdata": [float(v) for v in data]} if array.dtype.kind == "f" else {"idata": [int(v) for v in data]}
    if device not in (None, "cpu", "gpu"):
        raise ValueError("types.Constant: device must be \"cpu\" or \"gpu\", not %r" % (device,))
    return _constant_node(args, out_shape, dtype, layout, device)


def _constant_node(data: Any, shape: Any, dtype: Any, layout: Optional[str], device: Optional[str]) -> Any:
    """The fn.constant node of a constant tensor: stoker.fn replaces this when it is imported (fn
    imports this module, so this module does not import fn)."""
    raise RuntimeError("types.Constant of a tensor needs stoker.fn (import stoker)")


class SampleInfo:
    """What a per-sample external source callback receives: ``idx_in_epoch``, ``idx_in_batch``,
    ``iteration`` (batch within the epoch), ``epoch_idx``."""

    __slots__ = ("idx_in_epoch", "idx_in_batch", "iteration", "epoch_idx")

    def __init__(self, idx_in_epoch: int, idx_in_batch: int, iteration: int, epoch_idx: int) -> None:
        self.idx_in_epoch = idx_in_epoch
        self.idx_in_batch = idx_in_batch
        self.iteration = iteration
        self.epoch_idx = epoch_idx

    def __repr__(self) -> str:
        return "SampleInfo(idx_in_epoch=%d, idx_in_batch=%d, iteration=%d, epoch_idx=%d)" % (
            self.idx_in_epoch, self.idx_in_batch, self.iteration, self.epoch_idx)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SampleInfo) and all(getattr(self, k) == getattr(other, k) for k in self.__slots__)

    def __hash__(self) -> int:
        return hash(tuple(getattr(self, k) for k in self.__slots__))


class BatchInfo:
    """What a batch external source callback receives with ``batch_info=True``: ``iteration``
    (batch within the epoch) and ``epoch_idx``."""

    __slots__ = ("iteration", "epoch_idx")

    def __init__(self, iteration: int, epoch_idx: int) -> None:
        self.iteration = iteration
        self.epoch_idx = epoch_idx

    def __repr__(self) -> str:
        return "BatchInfo(iteration=%d, epoch_idx=%d)" % (self.iteration, self.epoch_idx)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, BatchInfo) and (self.iteration, self.epoch_idx) == (other.iteration, other.epoch_idx)

    def __hash__(self) -> int:
        return hash((self.iteration, self.epoch_idx))
