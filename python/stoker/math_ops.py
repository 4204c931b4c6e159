"""stoker.math_ops: DALI's mathematical expressions on graph nodes.

Installs, at import (``stoker/__init__.py`` imports this module last):

- the arithmetic, comparison and bitwise operators on :class:`stoker.DataNode` (``+ - * / // % **``,
  unary ``- + ~ abs()``, ``== != < <= > >=``, ``& | ^`` and their reflected forms), each one
  ``math.elementwise`` node of the C registry (docs/operators-math.md);
- ``stoker.math`` / ``fn.math``: ``abs, fabs, floor, ceil, pow, fpow, min, max, clamp, sqrt,
  rsqrt, cbrt, exp, log, log2, log10, sin, cos, tan, asin, acos, atan, atan2, sinh, cosh, tanh``.

The other operand may be a node or a scalar constant: a Python ``bool``/``int``/``float`` (typed
``bool``/``int32``/``float32`` as DALI types them, so ``uint8_node + 10`` is int32), a NumPy scalar
(its own dtype) or a :func:`Constant` / anything with ``value`` and ``dtype`` attributes (DALI's
``types.Constant``). Result types follow DALI's promotion table; shapes must be equal or one side a
per-sample scalar. Definition time only (each expression adds one node to the C graph).
"""
import numbers
import sys

from .errors import ArgumentError
from .pipeline import DataNode
from . import fn as _fn

_OP = "math.elementwise"

# DALI's DALIDataType names (and NumPy's) -> the C library's dtype names.
_DTYPE_ALIASES = {
    "bool": "bool", "int8": "int8", "int16": "int16", "int32": "int32", "int64": "int64",
    "uint8": "uint8", "uint16": "uint16", "uint32": "uint32", "uint64": "uint64",
    "float16": "float16", "half": "float16", "float": "float32", "float32": "float32",
    "float64": "float64", "double": "float64",
}


def _dtype_name(dtype):
    """The C dtype name of a NumPy dtype/type, a DALIDataType-like enum or a string."""
    name = getattr(dtype, "name", None)
    if name is None:
        name = getattr(getattr(dtype, "dtype", None), "name", None)  # numpy type classes
    if name is None and isinstance(dtype, type):
        name = dtype.__name__
    if name is None:
        name = str(dtype)
    key = str(name).lower()
    if key not in _DTYPE_ALIASES:
        raise ArgumentError("constant dtype %r is not a numeric type stoker carries" % (dtype,))
    return _DTYPE_ALIASES[key]


class ScalarConstant:
    """A scalar constant of a given type for expressions (what DALI's ``types.Constant(value,
    dtype)`` makes for a scalar). ``dtype``: None (int32 for an int, float32 for a float, bool for a
    bool), or a NumPy/DALI type or its name."""

    def __init__(self, value, dtype=None):
        if hasattr(value, "item") and getattr(value, "size", 1) == 1:
            if dtype is None:
                dtype = value.dtype
            value = value.item()
        if not isinstance(value, numbers.Number) or isinstance(value, complex):
            raise ArgumentError("Constant: only scalar bool/int/float values are supported, got %r" % (value,))
        self.value = value
        self.dtype = _default_dtype(value) if dtype is None else _dtype_name(dtype)

    def __repr__(self):
        return "%r:%s" % (self.value, self.dtype)


def Constant(value, dtype=None):  # noqa: N802 (DALI's spelling)
    """A typed scalar constant for DataNode expressions (DALI's ``types.Constant`` for scalars)."""
    return ScalarConstant(value, dtype)


def _default_dtype(value):
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, numbers.Integral):
        return "int32" if -2**31 <= value < 2**31 else "int64"
    return "float32"


def _constant(value):
    """(dtype name, value) of a scalar operand, or None when value is not one."""
    if isinstance(value, DataNode):
        return None
    if hasattr(value, "value") and hasattr(value, "dtype") and not hasattr(value, "shape"):
        return _dtype_name(value.dtype), value.value  # a Constant-like object
    if hasattr(value, "dtype") and hasattr(value, "item"):  # NumPy scalar or 1-element array
        if getattr(value, "size", 1) != 1:
            raise ArgumentError(
                "tensor constants (%s of shape %s) are not supported in expressions: only scalars"
                % (type(value).__name__, getattr(value, "shape", "?")))
        return _dtype_name(value.dtype), value.item()
    if isinstance(value, numbers.Number) and not isinstance(value, complex):
        return _default_dtype(value), value
    return None


def _constant_args(dtype, value):
    if dtype.startswith("float"):
        return {"scalar_dtype": dtype, "scalar": float(value)}
    value = int(value)
    if value >= 2**63:  # uint64 beyond int64: the same 64 bits
        value -= 2**64
    return {"scalar_dtype": dtype, "scalar_int": value}


def _node(op, inputs, **args):
    if any(node.device == "gpu" for node in inputs):
        inputs = [node.gpu() for node in inputs]
    return _fn.math.elementwise(*inputs, op=op, **args)


def _binary(op, left, right):
    """left <op> right where at least one side is a node; NotImplemented for an unknown operand."""
    if isinstance(left, DataNode) and isinstance(right, DataNode):
        return _node(op, [left, right])
    if isinstance(left, DataNode):
        constant = _constant(right)
        if constant is None:
            return NotImplemented
        return _node(op, [left], **_constant_args(*constant))
    constant = _constant(left)
    if constant is None or not isinstance(right, DataNode):
        return NotImplemented
    return _node(op, [right], scalar_left=True, **_constant_args(*constant))


def _function_binary(op, name):
    def function(left, right):
        result = _binary(op, left, right)
        if result is NotImplemented:
            raise TypeError("math.%s: needs a DataNode and a node or scalar constant, got %s and %s"
                            % (name, type(left).__name__, type(right).__name__))
        return result

    function.__name__ = name
    function.__doc__ = "Elementwise %s of two operands (nodes or scalar constants; DALI type promotion)." % name
    return function


def _function_unary(op, name):
    def function(value):
        if not isinstance(value, DataNode):
            raise TypeError("math.%s: needs a DataNode, got %s" % (name, type(value).__name__))
        return _node(op, [value])

    function.__name__ = name
    function.__doc__ = "Elementwise %s (float32 result for integer inputs where it is a float function)." % name
    return function


def clamp(value, lo, hi):
    """``value`` limited to [lo, hi]; the result type is the promotion of all three (DALI)."""
    if not isinstance(value, DataNode):
        raise TypeError("math.clamp: needs a DataNode, got %s" % type(value).__name__)
    lo_c, hi_c = _constant(lo), _constant(hi)
    if lo_c is not None and hi_c is not None:
        floats = [d for d, _ in (lo_c, hi_c) if d.startswith("float")]
        if floats:
            dtype = "float64" if "float64" in floats else "float32"
        else:
            dtype = lo_c[0] if lo_c[0] == hi_c[0] else ("int64" if "int64" in (lo_c[0], hi_c[0]) else "int32")
        return _node("clamp", [value], lo=float(lo_c[1]), hi=float(hi_c[1]), scalar_dtype=dtype)
    return _BINARY_FUNCTIONS["min"](_BINARY_FUNCTIONS["max"](value, lo), hi)


_BINARY_FUNCTIONS = {name: _function_binary(op, name) for name, op in (
    ("pow", "pow"), ("fpow", "fpow"), ("min", "min"), ("max", "max"), ("atan2", "atan2"))}
_UNARY_FUNCTIONS = {name: _function_unary(name, name) for name in (
    "abs", "fabs", "floor", "ceil", "sqrt", "rsqrt", "cbrt", "exp", "log", "log2", "log10", "sin", "cos", "tan",
    "asin", "acos", "atan", "sinh", "cosh", "tanh")}


def _dunder(op, reflected=False):
    if reflected:
        def method(self, other):
            return _binary(op, other, self)
    else:
        def method(self, other):
            return _binary(op, self, other)
    return method


def _bool(self):
    raise TypeError(
        "a DataNode (%s) has no truth value at pipeline definition time: its value differs per sample. "
        "For `if` on a node use @pipeline_def(enable_conditionals=True); for logical operations use & | ^ "
        "on comparisons" % self.name)


def _install():
    binary = {"add": "add", "sub": "sub", "mul": "mul", "truediv": "truediv", "floordiv": "floordiv",
              "mod": "mod", "pow": "pow", "and": "bitand", "or": "bitor", "xor": "bitxor"}
    for name, op in binary.items():
        setattr(DataNode, "__%s__" % name, _dunder(op))
        setattr(DataNode, "__r%s__" % name, _dunder(op, reflected=True))
    for name in ("eq", "ne", "lt", "le", "gt", "ge"):
        setattr(DataNode, "__%s__" % name, _dunder(name))
    DataNode.__neg__ = lambda self: _node("neg", [self])
    DataNode.__pos__ = lambda self: self
    DataNode.__abs__ = lambda self: _node("abs", [self])
    DataNode.__invert__ = lambda self: _node("invert", [self])
    DataNode.__bool__ = _bool
    DataNode.__hash__ = object.__hash__  # __eq__ builds a node; identity stays the hash
    math = _fn.math
    for table in (_UNARY_FUNCTIONS, _BINARY_FUNCTIONS):
        for name, function in table.items():
            function.__module__ = "stoker.math"
            setattr(math, name, function)
    math.clamp = clamp
    math.Constant = Constant
    sys.modules.setdefault("stoker.math", math)
    sys.modules["stoker"].math = math


_install()
