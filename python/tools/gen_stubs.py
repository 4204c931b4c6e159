"""python/tools/gen_stubs.py: writes python/stoker/fn.pyi, the type stub of stoker.fn, from the C
operator schemas (the installed stoker's registry): one signature per operator with its inputs
(positional), every schema argument (keyword, typed from the schema; DALI's enums where the
argument takes them), device/name, DALI's common arguments, and its return (one node, a list,
or Any where the count depends on the arguments).

    python python/tools/gen_stubs.py            # writes the stub
    python python/tools/gen_stubs.py --check    # exit 1 when the committed stub is out of date

tests/python/dali_compat/test_dali_stubs.py runs the check. Build time only.
"""
import argparse
import os
import sys

HEADER = '''# python/stoker/fn.pyi: the type stub of stoker.fn, generated from the C operator schemas by
# python/tools/gen_stubs.py -- do not edit; run it again after changing an operator's schema.
from typing import Any, Dict, List, Optional, Sequence, Union

from .graph import DataNode
from .types import DALIDataType, DALIImageType, DALIInterpType

def schemas() -> Dict[str, Dict[str, Any]]: ...
def external_source(source: Any = ..., num_outputs: Optional[int] = ..., *, batch: bool = ...,
                    batch_info: bool = ..., cycle: Union[str, bool, None] = ..., name: Optional[str] = ...,
                    device: str = ..., layout: Union[str, Sequence[str], None] = ..., dtype: Any = ...,
                    ndim: Union[int, Sequence[int], None] = ..., no_copy: bool = ..., parallel: bool = ...,
                    prefetch_queue_depth: Optional[int] = ..., blocking: Optional[bool] = ...,
                    cuda_stream: Any = ..., use_copy_kernel: Optional[bool] = ...,
                    bytes_per_sample_hint: Any = ..., preserve: Optional[bool] = ...,
                    repeat_last: bool = ...) -> Any: ...
'''

_ENUMS = {"dtype": "DALIDataType", "dtypes": "DALIDataType", "output_type": "DALIImageType",
          "image_type": "DALIImageType", "interp_type": "DALIInterpType"}
_SCALARS = {"int": "int", "float": "float", "bool": "bool", "string": "str"}
_VARIABLE_OUTPUTS = ("readers.webdataset", "readers.video")
_LEGACY = {"file_reader": "readers.file", "numpy_reader": "readers.numpy", "video_reader": "readers.video",
           "image_decoder": "decoders.image", "image_decoder_random_crop": "decoders.image_random_crop",
           "coin_flip": "random.coin_flip"}


def _annotation(arg):
    base = arg["type"].replace(" list", "")
    scalar = _SCALARS.get(base, "Any")
    if arg["name"] in _ENUMS:
        scalar = "Union[%s, %s]" % (scalar, _ENUMS[arg["name"]])
    if arg["type"].endswith(" list"):
        return "Union[Sequence[%s], %s]" % (scalar, scalar)
    return "Union[%s, DataNode]" % scalar


def _signature(name, schema, indent=""):
    params = ["input%d: DataNode" % i if i < schema["min_inputs"] else "input%d: Optional[DataNode] = ..." % i
              for i in range(schema["max_inputs"])]
    if params:
        params.append("/")
    params.append("*")
    names = set()
    for arg in schema["args"]:
        names.add(arg["name"])
        default = "" if arg["required"] else " = ..."
        annotation = _annotation(arg) if arg["required"] else "Optional[%s]" % _annotation(arg)
        params.append("%s: %s%s" % (arg["name"], annotation, default))
    for extra, annotation in (("device", "Optional[str]"), ("name", "Optional[str]"), ("seed", "Optional[int]"),
                              ("bytes_per_sample_hint", "Union[int, Sequence[int], None]"),
                              ("preserve", "Optional[bool]")):
        if extra not in names:
            params.append("%s: %s = ..." % (extra, annotation))
    if schema["name"] in _VARIABLE_OUTPUTS:
        result = "Any"
    else:
        result = "DataNode" if schema["num_outputs"] == 1 else "List[DataNode]"
    decorator = indent + "@staticmethod\n" if indent else ""
    return "%s%sdef %s(%s) -> %s: ...\n" % (decorator, indent, name, ", ".join(params), result)


def _group_classes(path, members, out):
    """Appends class _<path> (the operators under that group, e.g. _io_file for io.file.read),
    after the classes of its subgroups, which it names as attributes."""
    subgroups, own = {}, []
    for rest, schema in members:
        if "." in rest:
            head, tail = rest.split(".", 1)
            subgroups.setdefault(head, []).append((tail, schema))
        else:
            own.append((rest, schema))
    for head, sub in sorted(subgroups.items()):
        _group_classes(path + [head], sub, out)
    out.append("\nclass _%s:\n" % "_".join(path))
    for short, schema in own:
        out.append(_signature(short, schema, indent="    "))
    for head in sorted(subgroups):
        out.append("    %s: _%s\n" % (head, "_".join(path + [head])))


def render(schemas):
    out = [HEADER]
    groups = {}
    entries = [(name, schema) for name, schema in schemas.items() if name != "external_source"]
    entries += [(alias, schemas[target]) for alias, target in _LEGACY.items() if target in schemas]
    for name, schema in sorted(entries):
        if "." in name:
            group, short = name.split(".", 1)
            groups.setdefault(group, []).append((short, schema))
        else:
            out.append(_signature(name, schema))
    for group, members in sorted(groups.items()):
        _group_classes([group], members, out)
        out.append("\n%s: _%s\n" % (group, group))
    return "".join(out)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="compare with the committed stub instead of writing")
    parser.add_argument("--output", default=os.path.join(os.path.dirname(__file__), "..", "stoker", "fn.pyi"))
    args = parser.parse_args()
    from stoker import fn

    text = render(fn.schemas())
    if args.check:
        with open(args.output) as f:
            if f.read() != text:
                print("gen_stubs: %s is out of date: run python python/tools/gen_stubs.py" % args.output)
                return 1
        return 0
    with open(args.output, "w") as f:
        f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
