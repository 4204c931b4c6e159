"""stoker.fn: the operators, generated from the C registry at import.

``fn.readers.file``, ``fn.decoders.image``, ``fn.random_resized_crop``, ``fn.random.coin_flip``,
... are one Python function per registry entry; each one's ``__doc__`` is built from the
operator's schema (its doc, inputs, outputs, devices and every argument with type, default and
doc). Nothing about an operator's arguments is written here: a new operator in the C registry
appears here (and in the generated stub fn.pyi: python/tools/gen_stubs.py).

Calling an operator inside a pipeline's definition (a ``@pipeline_def`` function, a ``with
pipe:`` block, a ``define_graph`` method) adds it to that pipeline's C graph at once; outside any
pipeline the call is recorded and joins the graph of the pipeline that uses its nodes
(stoker.graph), as in DALI. Arguments are checked against the schema first (unknown name or
wrong type: ``stoker.ArgumentTypeError``, a TypeError; wrong device or value:
``stoker.ArgumentError``, a ValueError; both name the operator and the argument) and again by the
C side. ``device`` ("cpu", "mixed", "gpu") picks the implementation (default: "gpu" when an input
is on the GPU, else "cpu"); ``name`` names the node (readers: the name iterators use as
``reader_name``). Argument values may be nodes (argument inputs, e.g.
``mirror=fn.random.coin_flip()``) and DALI's enums (``dtype=types.FLOAT``,
``interp_type=types.INTERP_TRIANGULAR``, ``output_type=types.RGB``). DALI's arguments every
operator has, ``bytes_per_sample_hint`` and ``preserve`` (and ``seed`` on an operator that draws
nothing), are accepted and change nothing. Readers with ``shard_id`` and ``num_shards`` take them
from the launcher (rank and world size of torchrun, srun or mpirun; stoker.distributed) when
neither is given. Outputs are DALI's: one node, or a list of nodes (``readers.webdataset``: one
per ``ext`` entry; ``readers.video``: frames, then labels, frame numbers and timestamps as its
arguments ask). An operator stoker does not have raises AttributeError naming the closest one.

Not on a hot path (definition time only).
"""
from __future__ import annotations

import difflib as _difflib
import numbers as _numbers
import re as _re
import sys as _sys
import types as _pytypes
from typing import Any as _Any, Dict as _Dict, List as _List, Tuple as _Tuple

from . import _stoker
from . import types as _dali
from .distributed import shard_from_environment as _shard_from_environment
from .errors import ArgumentError as _ArgumentError, ArgumentTypeError as _ArgumentTypeError
from .graph import DataNode as _DataNode, DeferredCall as _DeferredCall, current_stack as _current_stack

_SCHEMAS = {schema["name"]: schema for schema in _stoker.op_schemas()}

# DALI's arguments of every operator: accepted, no effect in stoker (docs/porting.md)
_EVERY_OPERATOR = ("bytes_per_sample_hint", "preserve")

# DALI's older flat names of operators (fn.file_reader, ...)
_LEGACY_NAMES = {
    "file_reader": "readers.file",
    "numpy_reader": "readers.numpy",
    "video_reader": "readers.video",
    "image_decoder": "decoders.image",
    "image_decoder_random_crop": "decoders.image_random_crop",
    "coin_flip": "random.coin_flip",
}


def schemas() -> _Dict[str, _Dict[str, _Any]]:
    """The registry: {operator name: schema dict}."""
    return dict(_SCHEMAS)


def _arg_kind(type_name: str) -> str:
    """Maps the C registry's argument type name to the extension's setter kind."""
    t = type_name.lower()
    if "input" in t:
        return "input"
    base = "int" if "int" in t else "float" if "float" in t else "bool" if "bool" in t else "str"
    if "list" in t:
        return base + "_list"
    return base


def _describe(value: _Any) -> str:
    return "%s %r" % (type(value).__name__, value)


def _type_error(op_name: str, arg_name: str, expected: str, value: _Any) -> _ArgumentTypeError:
    return _ArgumentTypeError("%s: argument '%s' expects %s, got %s" % (op_name, arg_name, expected, _describe(value)))


def _dali_string(op_name: str, arg_name: str, value: _Any) -> _Any:
    """DALI's enums and dtypes as the C schema's strings; other values unchanged."""
    if isinstance(value, _dali.DALIDataType):
        try:
            return _dali.stoker_type_name(value)
        except TypeError:
            raise _ArgumentError("%s: argument '%s': %s is not an element type stoker carries"
                                 % (op_name, arg_name, value)) from None
    if isinstance(value, (_dali.DALIImageType, _dali.DALIInterpType)):
        return value.name
    if not isinstance(value, str) and arg_name in ("dtype", "dtypes", "output_dtype"):
        try:
            return _dali.stoker_type_name(_dali.to_dali_type(value))  # a NumPy or torch dtype
        except TypeError:
            return value
    return value


def _convert_scalar(op_name: str, arg_name: str, kind: str, value: _Any) -> _Any:
    if isinstance(value, _dali.ScalarConstant):
        value = value.value
    if kind == "int":
        # bool is an int in Python (mirror=False is 0, as DALI takes it)
        if not isinstance(value, _numbers.Integral):
            if isinstance(value, _numbers.Real) and float(value).is_integer():
                return int(value)
            raise _type_error(op_name, arg_name, "an int", value)
        return int(value)
    if kind == "float":
        if isinstance(value, bool) or not isinstance(value, _numbers.Real):
            raise _type_error(op_name, arg_name, "a float", value)
        return float(value)
    if kind == "bool":
        if isinstance(value, bool) or (isinstance(value, _numbers.Integral) and value in (0, 1)):
            return bool(value)
        raise _type_error(op_name, arg_name, "a bool", value)
    if kind == "str":
        value = _dali_string(op_name, arg_name, value)
        if not isinstance(value, str):
            raise _type_error(op_name, arg_name, "a string", value)
        return str(value)
    raise _ArgumentError("%s: argument '%s' has an unsupported type" % (op_name, arg_name))


def _convert(op_name: str, arg: _Dict[str, _Any], value: _Any) -> _Tuple[str, _Any]:
    """(kind, value) for the extension, or raises ArgumentError naming the operator/argument."""
    name = arg["name"]
    kind = _arg_kind(arg["type"])
    if isinstance(value, _DataNode):
        return "input", value.name
    if kind == "input":
        raise _type_error(op_name, name, "a graph node", value)
    if kind.endswith("_list"):
        base = kind[: -len("_list")]
        if isinstance(value, (str, bytes)) or not hasattr(value, "__iter__"):
            value = [value]
        return kind, [_convert_scalar(op_name, name, base, item) for item in value]
    if isinstance(value, (list, tuple)):
        raise _type_error(op_name, name, "a single %s" % kind, value)
    return kind, _convert_scalar(op_name, name, kind, value)


def _interp_names(arg: _Dict[str, _Any]) -> _List[str]:
    """The INTERP_* names the C side takes (its schema row's doc lists them)."""
    return _re.findall(r"INTERP_[A-Z0-9]+", arg.get("doc") or "")


def _dali_interp(schema: _Dict[str, _Any], kwargs: _Dict[str, _Any]) -> None:
    """interp_type in DALI's spelling (types.INTERP_* or its name) -> what the C side takes:
    TRIANGULAR is stoker's linear filter with antialiasing when downscaling; a filter stoker does
    not have is an ArgumentError naming those it has."""
    value = kwargs.get("interp_type")
    if value is None or isinstance(value, _DataNode):
        return
    name = value.name if isinstance(value, _dali.DALIInterpType) else value
    if not isinstance(name, str):
        raise _type_error(schema["name"], "interp_type", "a types.DALIInterpType or its name", value)
    args = {arg["name"]: arg for arg in schema["args"]}
    if name == "INTERP_TRIANGULAR" and "INTERP_TRIANGULAR" not in _interp_names(args["interp_type"]):
        name = "INTERP_LINEAR"
        if "antialias" in args:
            kwargs["antialias"] = True
    known = _interp_names(args["interp_type"])
    if name.startswith("INTERP_") and known and name not in known:
        raise _ArgumentError("%s: argument 'interp_type' %s is not available in stoker (it has %s, and "
                             "INTERP_TRIANGULAR as INTERP_LINEAR with antialias)"
                             % (schema["name"], name, ", ".join(known)))
    kwargs["interp_type"] = name


def _device_bits(schema: _Dict[str, _Any]) -> set:
    return set(filter(None, schema["devices"].split(",")))


def _selected_outputs(schema: _Dict[str, _Any], kwargs: _Dict[str, _Any]) -> _List[int]:
    """The C outputs the call returns, in order: DALI's output count."""
    name = schema["name"]
    if name == "readers.webdataset":
        ext = kwargs.get("ext")
        count = 1 if isinstance(ext, str) else len(ext) if isinstance(ext, (list, tuple)) else schema["num_outputs"]
        if not 1 <= count <= schema["num_outputs"]:
            raise _ArgumentError("readers.webdataset: argument 'ext' has %d entries; stoker reads 1 to %d"
                                 % (count, schema["num_outputs"]))
        return list(range(count))
    if name == "readers.video":
        # DALI: frames; labels when labels, file_root or file_list say them; then the enabled extras
        labels = any(kwargs.get(k) is not None for k in ("labels", "file_root", "file_list"))
        return [0] + [1] * labels + [2] * bool(kwargs.get("enable_frame_num")) + \
            [3] * bool(kwargs.get("enable_timestamps"))
    return list(range(schema["num_outputs"]))


def _check_arguments(schema: _Dict[str, _Any], kwargs: _Dict[str, _Any]) -> _Dict[str, _Any]:
    """DALI's spelling normalised and every argument checked against the schema (no pipeline
    needed); returns the keyword arguments to replay."""
    op_name = schema["name"]
    args_by_name = {arg["name"]: arg for arg in schema["args"]}
    kwargs = dict(kwargs)
    for key in _EVERY_OPERATOR:
        kwargs.pop(key, None)
    if "seed" not in args_by_name:
        kwargs.pop("seed", None)  # an operator that draws nothing
    if "interp_type" in args_by_name:
        _dali_interp(schema, kwargs)
    for key, value in kwargs.items():
        if key in ("device", "name") and key not in args_by_name:
            continue
        if key not in args_by_name:
            known = ", ".join(sorted(args_by_name)) or "none"
            raise _ArgumentTypeError("%s: unknown argument '%s' (arguments: %s)" % (op_name, key, known))
        if value is not None and not isinstance(value, _DataNode):
            _convert(op_name, args_by_name[key], value)
    for arg in schema["args"]:
        if arg["required"] and kwargs.get(arg["name"]) is None and arg["name"] != "device":
            raise _ArgumentTypeError("%s: missing required argument '%s'" % (op_name, arg["name"]))
    return kwargs


def _check_inputs(schema: _Dict[str, _Any], inputs: _Tuple[_Any, ...]) -> None:
    op_name = schema["name"]
    for position, node in enumerate(inputs):
        if not isinstance(node, _DataNode):
            raise _ArgumentTypeError("%s: input %d must be a graph node (an fn.* result), got %s"
                                     % (op_name, position, _describe(node)))
    if not schema["min_inputs"] <= len(inputs) <= schema["max_inputs"]:
        raise _ArgumentTypeError(
            "%s: takes %s input(s), got %d"
            % (
                op_name,
                schema["min_inputs"]
                if schema["min_inputs"] == schema["max_inputs"]
                else "%d to %d" % (schema["min_inputs"], schema["max_inputs"]),
                len(inputs),
            )
        )


def _choose_device(schema: _Dict[str, _Any], inputs: _Tuple[_Any, ...], kwargs: _Dict[str, _Any]) -> str:
    op_name = schema["name"]
    device = kwargs.get("device")
    if device is None:
        device = "gpu" if any(node.device == "gpu" for node in inputs) else "cpu"
        if device == "gpu" and "gpu" not in _device_bits(schema) and "cpu" in _device_bits(schema):
            device = "cpu"
    if not isinstance(device, str) or device not in ("cpu", "mixed", "gpu"):
        raise _ArgumentError("%s: argument 'device' must be \"cpu\", \"mixed\" or \"gpu\", got %s"
                             % (op_name, _describe(device)))
    if device not in _device_bits(schema):
        raise _ArgumentError(
            "%s: argument 'device' is %r but this operator supports %s" % (op_name, device, schema["devices"] or "none")
        )
    return device


def _add(schema: _Dict[str, _Any], inputs: _Tuple[_Any, ...], kwargs: _Dict[str, _Any]) -> _Any:
    """Adds the operator to the pipeline being defined; its nodes (one, or a list)."""
    op_name = schema["name"]
    pipe = _current_stack()[-1]
    inputs = tuple(node.bind(pipe) for node in inputs)
    kwargs = {k: (v.bind(pipe) if isinstance(v, _DataNode) else v) for k, v in kwargs.items()}
    args_by_name = {arg["name"]: arg for arg in schema["args"]}
    if kwargs.get("device") == "gpu" and schema["max_inputs"] == 0 and "gpu" not in _device_bits(schema) \
            and "cpu" in _device_bits(schema) and pipe.device_id >= 0:
        # A generator stoker runs on the CPU only (fn.constant, fn.random.*): made there, uploaded
        # (the same values: the draws are keyed by seed, operator and sample, not by device).
        made = _add(schema, inputs, {**kwargs, "device": "cpu"})
        return [node.gpu() for node in made] if isinstance(made, list) else made.gpu()
    device = _choose_device(schema, inputs, kwargs)
    if device in ("mixed", "gpu") and pipe.device_id < 0:
        raise _ArgumentError(
            "%s: device=%r needs a GPU pipeline (device_id >= 0); this pipeline has device_id=%d"
            % (op_name, device, pipe.device_id)
        )
    instance = kwargs.get("name") if "name" in args_by_name else kwargs.pop("name", None)
    if instance is not None and not isinstance(instance, str):
        raise _ArgumentTypeError("%s: argument 'name' must be a string, got %s" % (op_name, _describe(instance)))
    if "device" not in args_by_name:
        kwargs.pop("device", None)

    is_reader = op_name.startswith("readers.")
    if is_reader and "shard_id" in args_by_name and "num_shards" in args_by_name:
        if kwargs.get("shard_id") is None and kwargs.get("num_shards") is None:
            shard = _shard_from_environment()
            if shard is not None:
                kwargs["shard_id"], kwargs["num_shards"] = shard

    c_args = [("device", "str", device)] if "device" not in args_by_name else []
    for key, value in kwargs.items():
        if value is None:
            continue  # None means "the default", as in DALI
        kind, converted = _convert(op_name, args_by_name[key], value)
        c_args.append((key, kind, converted))

    instance = pipe._unique_name(op_name, instance)
    pipe._add_op(op_name, instance, [node.name for node in inputs], c_args, is_reader)
    out_device = "gpu" if device in ("mixed", "gpu") else "cpu"
    nodes = [_DataNode(pipe, instance if i == 0 else "%s[%d]" % (instance, i), out_device, op_name)
             for i in _selected_outputs(schema, kwargs)]
    return nodes[0] if len(nodes) == 1 else nodes


def _call(schema: _Dict[str, _Any], inputs: _Tuple[_Any, ...], kwargs: _Dict[str, _Any]) -> _Any:
    _check_inputs(schema, inputs)
    kwargs = _check_arguments(schema, kwargs)
    if _current_stack():
        return _add(schema, inputs, kwargs)
    # outside any pipeline: recorded, replayed into the pipeline that uses the nodes (stoker.graph)
    device = _choose_device(schema, inputs, kwargs)
    out_device = "gpu" if device in ("mixed", "gpu") else "cpu"
    count = len(_selected_outputs(schema, kwargs))
    deferred = _DeferredCall(lambda *i, **k: _add(schema, i, k), inputs, kwargs, schema["name"], [out_device] * count)
    return deferred.result()


def _schema_doc(schema: _Dict[str, _Any]) -> str:
    lines = [schema["doc"].strip() or "(no description)", ""]
    if schema["max_inputs"]:
        lines.append(
            "Inputs: %d to %d graph node(s)." % (schema["min_inputs"], schema["max_inputs"])
            if schema["min_inputs"] != schema["max_inputs"]
            else "Inputs: %d graph node(s)." % schema["min_inputs"]
        )
    else:
        lines.append("Inputs: none.")
    lines.append("Outputs: %d." % schema["num_outputs"])
    lines.append("Devices: %s." % (schema["devices"] or "none"))
    lines.append("")
    lines.append("Keyword arguments")
    lines.append("-----------------")
    for arg in schema["args"]:
        if arg["required"]:
            default = "required"
        elif arg["default"] is None:
            default = "optional"
        else:
            default = "default %s" % arg["default"]
        lines.append("%s : %s, %s" % (arg["name"], arg["type"], default))
        if arg["doc"]:
            lines.append("    " + arg["doc"].strip())
    lines.append("device : str")
    lines.append('    "cpu", "mixed" or "gpu": which implementation runs.')
    lines.append("name : str")
    lines.append("    Name of the node (for readers: the reader_name the iterators ask for).")
    lines.append("bytes_per_sample_hint, preserve")
    lines.append("    DALI's arguments of every operator: accepted, no effect in stoker.")
    return "\n".join(lines)


def _make_operator(schema: _Dict[str, _Any]) -> _Any:
    def operator(*inputs: _Any, **kwargs: _Any) -> _Any:
        return _call(schema, inputs, kwargs)

    short = schema["name"].rsplit(".", 1)[-1]
    operator.__name__ = short
    operator.__qualname__ = schema["name"]
    operator.__module__ = __name__
    operator.__doc__ = _schema_doc(schema)
    operator.schema = schema  # type: ignore[attr-defined]
    return operator


def _all_names() -> _List[str]:
    return sorted(set(_SCHEMAS) | set(_LEGACY_NAMES))


def _missing_operator(api: str, wanted: str, names: _List[str]) -> AttributeError:
    """The AttributeError for an operator stoker does not have (``api``.``wanted``), naming the
    closest of ``names``."""
    close = _difflib.get_close_matches(wanted, names, n=3, cutoff=0.5)
    close += [n for n in names if n.rsplit(".", 1)[-1] == wanted.rsplit(".", 1)[-1] and n not in close]
    hint = " (closest: %s)" % ", ".join("%s.%s" % (api, n) for n in close) if close else ""
    return AttributeError("stoker has no operator %s.%s%s; `stoker ops` lists the operators stoker has, and "
                          "docs/porting.md what is not there yet" % (api, wanted, hint))


class _OperatorGroup(_pytypes.ModuleType):
    """fn.readers, fn.decoders, fn.random: a missing operator names the closest one."""

    def __getattr__(self, attribute: str) -> _Any:
        if attribute.startswith("__"):
            raise AttributeError(attribute)
        raise _missing_operator("fn", self.__name__[len(__name__) + 1:] + "." + attribute, _all_names())


def __getattr__(attribute: str) -> _Any:
    if attribute.startswith("__"):
        raise AttributeError(attribute)
    raise _missing_operator("fn", attribute, _all_names())


def _install() -> None:
    module = _sys.modules[__name__]
    for name, schema in list(_SCHEMAS.items()) + [(alias, _SCHEMAS[target]) for alias, target in
                                                  _LEGACY_NAMES.items() if target in _SCHEMAS]:
        parts = name.split(".")
        parent: _Any = module
        for depth, part in enumerate(parts[:-1]):
            child = getattr(parent, part, None) if part in vars(parent) else None
            if child is None:
                qualified = __name__ + "." + ".".join(parts[: depth + 1])
                child = _OperatorGroup(qualified, "stoker operators under %s" % ".".join(parts[: depth + 1]))
                setattr(parent, part, child)
                _sys.modules[qualified] = child
            parent = child
        setattr(parent, parts[-1], _make_operator(schema))


_install()


def _constant_node(data: _Any, shape: _Any, dtype: _Any, layout: _Any, device: _Any) -> _Any:
    """types.Constant's tensor node: fn.constant with the values, uploaded for device="gpu"."""
    node = _sys.modules[__name__].constant(**data, shape=shape, dtype=dtype, **({"layout": layout} if layout else {}))
    return node.gpu() if device == "gpu" else node


_dali._constant_node = _constant_node

# external_source is driven from Python (the source is called on the consumer's thread), so its
# function is written by hand over the C operator of the same name (stoker.external_source).
from .external_source import external_source as _external_source  # noqa: E402


def external_source(source: _Any = None, num_outputs: _Any = None, **kwargs: _Any) -> _Any:
    if _current_stack():
        return _external_source(source, num_outputs, **kwargs)
    count = 1 if num_outputs is None else int(num_outputs)
    device = "gpu" if kwargs.get("device") == "gpu" else "cpu"
    deferred = _DeferredCall(lambda **k: _external_source(source, num_outputs, **k), (), kwargs, "external_source",
                             [device] * count)
    nodes = list(deferred.nodes)
    return nodes if num_outputs is not None else nodes[0]


external_source.schema = _SCHEMAS["external_source"]  # type: ignore[attr-defined]
external_source.__doc__ = "%s\n\nThe C operator underneath\n-------------------------\n%s" % (
    (_external_source.__doc__ or "").rstrip(), _schema_doc(_SCHEMAS["external_source"]))

del annotations
