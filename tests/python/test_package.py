"""The installed package: abi3 extension, vendored libjpeg, CLI entry point, registry-driven fn."""
import json
import os
import subprocess
import sys

import stoker
from stoker import _cli, fn


def test_extension_is_abi3_with_vendored_libjpeg():
    package_dir = os.path.dirname(stoker.__file__)
    assert stoker._stoker.__file__.endswith(".abi3.so")
    assert os.path.exists(os.path.join(package_dir, "libjpeg.so.62"))


def test_version_matches_header():
    assert stoker.__version__ == "%d.%d.%d" % (
        stoker._stoker.HEADER_VERSION // 10000,
        stoker._stoker.HEADER_VERSION // 100 % 100,
        stoker._stoker.HEADER_VERSION % 100,
    )
    assert isinstance(stoker.build_info(), str) and stoker.build_info()


def test_cli_binary_is_packaged_and_runs():
    result = subprocess.run([_cli.binary_path(), "--version"], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == stoker.build_info()


def test_console_entry_point_execs_the_cli():
    result = subprocess.run([sys.executable, "-m", "stoker._cli", "--help"], capture_output=True, text=True,
                            timeout=60)
    assert result.returncode == 0, result.stderr
    assert "usage: stoker" in result.stdout


def test_operators_come_from_the_registry():
    schemas = fn.schemas()
    assert schemas, "the C registry is empty"
    for name, schema in schemas.items():
        node = fn
        for part in name.split("."):
            node = getattr(node, part)
        assert node.schema is schema
        assert schema["doc"].strip() in node.__doc__
        for arg in schema["args"]:
            assert arg["name"] in node.__doc__
    for expected in ("readers.file", "decoders.image", "random_resized_crop", "crop_mirror_normalize",
                     "random.coin_flip"):
        assert expected in schemas
    assert fn.decoders.image.__doc__.startswith(schemas["decoders.image"]["doc"].strip())


def test_wheel_and_cli_see_the_same_operators():
    """The extension (object files) and the packaged CLI (a plain static link of libstoker.a) list
    the same operators in the same order: the operator table, not link order, decides."""
    result = subprocess.run([_cli.binary_path(), "ops"], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    cli_names = [line.split()[0] for line in result.stdout.splitlines() if line.strip()]
    assert cli_names == [schema["name"] for schema in stoker._stoker.op_schemas()]
    assert len(cli_names) >= 8


def test_topology_matches_cli_json():
    result = subprocess.run([_cli.binary_path(), "topo", "--json"], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert stoker.topology() == json.loads(result.stdout)
