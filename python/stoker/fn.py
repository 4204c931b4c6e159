"""stoker.fn: the operators, generated from the C registry at import.

``fn.readers.file``, ``fn.decoders.image``, ``fn.random_resized_crop``, ``fn.random.coin_flip``,
... are one Python function per registry entry; each one's ``__doc__`` is built from the
operator's schema (its doc, inputs, outputs, devices and every argument with type, default and
doc). Nothing about operators is written here: a new operator in the C registry appears here.

Calling an operator inside a ``@pipeline_def`` function (or a ``with pipe:`` block) adds it to
that pipeline's C graph at once; arguments are checked against the schema first (unknown name,
wrong type, wrong device, wrong number of inputs) and again by the C side, so a mistake raises
:class:`stoker.ArgumentError` naming the operator and the argument. ``device`` ("cpu", "mixed",
"gpu") picks the implementation (default: "gpu" when an input is on the GPU, else "cpu");
``name`` names the node (readers: the name iterators use as ``reader_name``). Argument values may
be nodes (argument inputs, e.g. ``mirror=fn.random.coin_flip()``). Readers with ``shard_id`` and
``num_shards`` take them from the launcher (rank and world size of torchrun, srun or mpirun;
stoker.distributed) when neither is given.

Not on a hot path (definition time only).
"""
import numbers
import sys
import types

from . import _stoker
from .errors import ArgumentError
from .distributed import shard_from_environment
from .pipeline import DataNode, Pipeline

_SCHEMAS = {schema["name"]: schema for schema in _stoker.op_schemas()}


def schemas():
    """The registry: {operator name: schema dict}."""
    return dict(_SCHEMAS)


def _arg_kind(type_name):
    """Maps the C registry's argument type name to the extension's setter kind."""
    t = type_name.lower()
    if "input" in t:
        return "input"
    base = "int" if "int" in t else "float" if "float" in t else "bool" if "bool" in t else "str"
    if "list" in t:
        return base + "_list"
    return base


def _describe(value):
    return "%s %r" % (type(value).__name__, value)


def _convert_scalar(op_name, arg_name, kind, value):
    if kind == "int":
        # bool is an int in Python (mirror=False is 0, as DALI takes it)
        if not isinstance(value, numbers.Integral):
            if isinstance(value, numbers.Real) and float(value).is_integer():
                return int(value)
            raise ArgumentError("%s: argument '%s' expects an int, got %s" % (op_name, arg_name, _describe(value)))
        return int(value)
    if kind == "float":
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            raise ArgumentError("%s: argument '%s' expects a float, got %s" % (op_name, arg_name, _describe(value)))
        return float(value)
    if kind == "bool":
        if isinstance(value, bool) or (isinstance(value, numbers.Integral) and value in (0, 1)):
            return bool(value)
        raise ArgumentError("%s: argument '%s' expects a bool, got %s" % (op_name, arg_name, _describe(value)))
    if kind == "str":
        if not isinstance(value, str):
            raise ArgumentError("%s: argument '%s' expects a string, got %s" % (op_name, arg_name, _describe(value)))
        return value
    raise ArgumentError("%s: argument '%s' has an unsupported type" % (op_name, arg_name))


def _convert(op_name, arg, value):
    """(kind, value) for the extension, or raises ArgumentError naming the operator/argument."""
    name = arg["name"]
    kind = _arg_kind(arg["type"])
    if isinstance(value, DataNode):
        return "input", value.name
    if kind == "input":
        raise ArgumentError("%s: argument '%s' expects a graph node, got %s" % (op_name, name, _describe(value)))
    if kind.endswith("_list"):
        base = kind[: -len("_list")]
        if isinstance(value, (str, bytes)) or not hasattr(value, "__iter__"):
            value = [value]
        return kind, [_convert_scalar(op_name, name, base, item) for item in value]
    if isinstance(value, (list, tuple)):
        raise ArgumentError("%s: argument '%s' expects a single %s, got %s" % (op_name, name, kind, _describe(value)))
    return kind, _convert_scalar(op_name, name, kind, value)


def _device_bits(schema):
    return set(filter(None, schema["devices"].split(",")))


def _call(schema, inputs, kwargs):
    op_name = schema["name"]
    pipe = Pipeline.current()
    if pipe is None:
        raise ArgumentError(
            "fn.%s must be called while defining a pipeline (inside a @pipeline_def function or a "
            "`with pipe:` block)" % op_name
        )
    for position, node in enumerate(inputs):
        if not isinstance(node, DataNode):
            raise ArgumentError("%s: input %d must be a graph node (an fn.* result), got %s" % (op_name, position, _describe(node)))
        if node.pipeline is not pipe:
            raise ArgumentError("%s: input %d (%s) belongs to another pipeline" % (op_name, position, node.name))
    if not schema["min_inputs"] <= len(inputs) <= schema["max_inputs"]:
        raise ArgumentError(
            "%s: takes %s input(s), got %d"
            % (
                op_name,
                schema["min_inputs"]
                if schema["min_inputs"] == schema["max_inputs"]
                else "%d to %d" % (schema["min_inputs"], schema["max_inputs"]),
                len(inputs),
            )
        )

    args_by_name = {arg["name"]: arg for arg in schema["args"]}
    kwargs = dict(kwargs)
    device = kwargs.pop("device", None) if "device" not in args_by_name else kwargs.get("device")
    if device is None:
        device = "gpu" if any(node.device == "gpu" for node in inputs) else "cpu"
        if device == "gpu" and "gpu" not in _device_bits(schema) and "cpu" in _device_bits(schema):
            device = "cpu"
    if not isinstance(device, str) or device not in ("cpu", "mixed", "gpu"):
        raise ArgumentError("%s: argument 'device' must be \"cpu\", \"mixed\" or \"gpu\", got %s" % (op_name, _describe(device)))
    if device not in _device_bits(schema):
        raise ArgumentError(
            "%s: argument 'device' is %r but this operator supports %s" % (op_name, device, schema["devices"] or "none")
        )
    if device in ("mixed", "gpu") and pipe.device_id < 0:
        raise ArgumentError(
            "%s: device=%r needs a GPU pipeline (device_id >= 0); this pipeline has device_id=%d"
            % (op_name, device, pipe.device_id)
        )
    instance = kwargs.get("name") if "name" in args_by_name else kwargs.pop("name", None)
    if instance is not None and not isinstance(instance, str):
        raise ArgumentError("%s: argument 'name' must be a string, got %s" % (op_name, _describe(instance)))

    is_reader = op_name.startswith("readers.")
    if is_reader and "shard_id" in args_by_name and "num_shards" in args_by_name:
        if kwargs.get("shard_id") is None and kwargs.get("num_shards") is None:
            shard = shard_from_environment()
            if shard is not None:
                kwargs["shard_id"], kwargs["num_shards"] = shard

    c_args = [("device", "str", device)] if "device" not in args_by_name else []
    for key, value in kwargs.items():
        if key not in args_by_name:
            known = ", ".join(sorted(args_by_name)) or "none"
            raise ArgumentError("%s: unknown argument '%s' (arguments: %s)" % (op_name, key, known))
        if value is None:
            continue  # None means "the default", as in DALI
        kind, converted = _convert(op_name, args_by_name[key], value)
        if kind == "input" and (value.pipeline is not pipe):
            raise ArgumentError("%s: argument '%s' is a node of another pipeline" % (op_name, key))
        c_args.append((key, kind, converted))
    for arg in schema["args"]:
        if arg["required"] and arg["name"] not in kwargs and arg["name"] != "device":
            raise ArgumentError("%s: missing required argument '%s'" % (op_name, arg["name"]))

    instance = pipe._unique_name(op_name, instance)
    pipe._add_op(op_name, instance, [node.name for node in inputs], c_args, is_reader)
    out_device = "gpu" if device in ("mixed", "gpu") else "cpu"
    count = schema["num_outputs"]
    if count == 1:
        return DataNode(pipe, instance, out_device, op_name)
    return tuple(
        DataNode(pipe, instance if i == 0 else "%s[%d]" % (instance, i), out_device, op_name) for i in range(count)
    )


def _schema_doc(schema):
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
    return "\n".join(lines)


def _make_operator(schema):
    def operator(*inputs, **kwargs):
        return _call(schema, inputs, kwargs)

    short = schema["name"].rsplit(".", 1)[-1]
    operator.__name__ = short
    operator.__qualname__ = schema["name"]
    operator.__module__ = __name__
    operator.__doc__ = _schema_doc(schema)
    operator.schema = schema
    return operator


def _install():
    module = sys.modules[__name__]
    for name, schema in _SCHEMAS.items():
        parts = name.split(".")
        parent = module
        for depth, part in enumerate(parts[:-1]):
            child = getattr(parent, part, None)
            if child is None:
                qualified = __name__ + "." + ".".join(parts[: depth + 1])
                child = types.ModuleType(qualified, "stoker operators under %s" % ".".join(parts[: depth + 1]))
                setattr(parent, part, child)
                sys.modules[qualified] = child
            parent = child
        setattr(parent, parts[-1], _make_operator(schema))


_install()

# external_source is driven from Python (the source is called on the consumer's thread), so its
# function is written by hand over the C operator of the same name.
from .external_source import external_source  # noqa: E402

external_source.schema = _SCHEMAS["external_source"]
external_source.__doc__ = "%s\n\nThe C operator underneath\n-------------------------\n%s" % (
    external_source.__doc__.rstrip(), _schema_doc(external_source.schema))
