"""stoker.ops: DALI's object API over the same operators as stoker.fn.

``ops.readers.File(file_root=..., random_shuffle=True)``, ``ops.decoders.Image(device="mixed")``,
``ops.RandomResizedCrop(size=224)``, ``ops.CropMirrorNormalize(...)``, ``ops.random.CoinFlip()``,
``ops.ExternalSource()`` ...: one class per registry entry, named as DALI names it (the
operator's last name part in CamelCase, under the same groups), plus DALI's older flat names
(``ops.FileReader``, ``ops.ImageDecoder``, ``ops.CoinFlip``, ...). An instance keeps its arguments;
calling it on nodes (``op(images, mirror=coin())``) adds one operator to the pipeline being
defined (typically in a ``Pipeline`` subclass's ``define_graph``), exactly as the matching
``fn.*`` call would, call-time keyword arguments added to the instance's. An operator stoker does
not have raises AttributeError naming the closest one.

Not on a hot path (definition time only).
"""
from __future__ import annotations

import sys as _sys
import types as _pytypes
from typing import Any as _Any, Dict as _Dict, List as _List

from . import fn as _fn
from .errors import ArgumentTypeError as _ArgumentTypeError

_LEGACY_CLASSES = {
    "FileReader": "readers.file",
    "NumpyReader": "readers.numpy",
    "VideoReader": "readers.video",
    "ImageDecoder": "decoders.image",
    "ImageDecoderRandomCrop": "decoders.image_random_crop",
    "CoinFlip": "random.coin_flip",
}


def _camel(name: str) -> str:
    return "".join(part[:1].upper() + part[1:] for part in name.split("_"))


class Operator:
    """An operator with its arguments, callable on graph nodes (DALI's ``ops`` object)."""

    _op_name = ""

    def __init__(self, **kwargs: _Any) -> None:
        self._kwargs: _Dict[str, _Any] = dict(kwargs)
        self.device = kwargs.get("device", "cpu")
        if self._op_name != "external_source":
            _fn._check_arguments(_fn._SCHEMAS[self._op_name], kwargs)  # unknown names raise here, as DALI

    @property
    def schema(self) -> _Dict[str, _Any]:
        return _fn._SCHEMAS[self._op_name]

    def __call__(self, *inputs: _Any, **kwargs: _Any) -> _Any:
        merged = dict(self._kwargs)
        for key, value in kwargs.items():
            if key in merged and key in ("device", "name"):
                raise _ArgumentTypeError("%s: '%s' is given when the operator is made, not when it is called"
                                         % (self._op_name, key))
            merged[key] = value
        if self._op_name == "external_source":
            return _fn.external_source(**merged)
        return _fn._call(_fn._SCHEMAS[self._op_name], inputs, merged)

    def __repr__(self) -> str:
        return "ops.%s(%s)" % (type(self).__qualname__, ", ".join("%s=%r" % kv for kv in self._kwargs.items()))


def _operator_class(op_name: str, class_name: str, qualified: str) -> type:
    cls = type(class_name, (Operator,), {"_op_name": op_name, "__doc__": _fn._schema_doc(_fn._SCHEMAS[op_name]),
                                         "__module__": __name__})
    cls.__qualname__ = qualified
    return cls


class _OperatorGroup(_pytypes.ModuleType):
    """ops.readers, ops.decoders, ops.random: a missing operator names the closest one."""

    def __getattr__(self, attribute: str) -> _Any:
        if attribute.startswith("__"):
            raise AttributeError(attribute)
        raise _missing(self.__name__[len(__name__) + 1:], attribute)


_CLASS_NAMES: _List[str] = []  # "readers.File", "CropMirrorNormalize", ... (filled by _install)


def _missing(prefix: str, attribute: str) -> AttributeError:
    return _fn._missing_operator("ops", (prefix + "." if prefix else "") + attribute, _CLASS_NAMES)


def __getattr__(attribute: str) -> _Any:
    if attribute.startswith("__"):
        raise AttributeError(attribute)
    raise _missing("", attribute)


def _install() -> None:
    module = _sys.modules[__name__]
    entries = [(name, name) for name in _fn._SCHEMAS]
    entries += [(legacy, target) for legacy, target in _LEGACY_CLASSES.items() if target in _fn._SCHEMAS]
    for spelled, op_name in entries:
        parts = spelled.split(".")
        parent: _Any = module
        for depth, part in enumerate(parts[:-1]):
            child = vars(parent).get(part)
            if child is None:
                qualified = __name__ + "." + ".".join(parts[: depth + 1])
                child = _OperatorGroup(qualified, "stoker operator classes under %s" % ".".join(parts[: depth + 1]))
                setattr(parent, part, child)
                _sys.modules[qualified] = child
            parent = child
        class_name = parts[-1] if spelled in _LEGACY_CLASSES else _camel(parts[-1])
        qualified = ".".join(parts[:-1] + [class_name])
        setattr(parent, class_name, _operator_class(op_name, class_name, qualified))
        _CLASS_NAMES.append(qualified)


_install()
del annotations
