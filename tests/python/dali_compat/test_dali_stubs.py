"""The generated type stub stoker/fn.pyi is up to date with the C schemas, and a DALI-style user
script type-checks with mypy --strict against the installed package (skips without mypy)."""
import os
import subprocess
import sys

import pytest

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
USER_SCRIPT = '''
"""A DALI-style user script, type-checked with mypy --strict against stoker."""
from typing import List, Tuple

import numpy as np

from stoker import DataNode, Pipeline, fn, pipeline_def, types
from stoker.plugin.pytorch import DALIClassificationIterator, LastBatchPolicy


@pipeline_def(batch_size=4, num_threads=2, device_id=None)
def train_pipe(data_dir: str, crop: int) -> Tuple[DataNode, DataNode]:
    jpegs, labels = fn.readers.file(file_root=data_dir, random_shuffle=True, name="Reader")
    images = fn.decoders.image_random_crop(jpegs, output_type=types.RGB, random_area=[0.1, 1.0])
    images = fn.resize(images, resize_x=crop, resize_y=crop, interp_type=types.INTERP_TRIANGULAR)
    mirror = fn.random.coin_flip(probability=0.5)
    images = fn.crop_mirror_normalize(images, dtype=types.FLOAT, output_layout="CHW", crop=(crop, crop),
                                      mean=[0.485 * 255, 0.456 * 255, 0.406 * 255], mirror=mirror)
    return images, labels


def run(data_dir: str) -> List[int]:
    pipe: Pipeline = train_pipe(data_dir, 224)
    pipe.build()
    size: int = pipe.epoch_size("Reader")
    images, labels = pipe.run()
    shapes = images.shape()
    layout: str = images.layout()
    array = labels.as_array()
    assert isinstance(array, np.ndarray)
    loader = DALIClassificationIterator(pipe, reader_name="Reader", last_batch_policy=LastBatchPolicy.PARTIAL,
                                        auto_reset=True)
    saved: List[str] = loader.checkpoints()
    pipe.reset()
    return [size, len(shapes), len(layout), len(saved)]
'''


def test_committed_stub_matches_the_schemas():
    tool = os.path.join(REPO, "python", "tools", "gen_stubs.py")
    stub = os.path.join(REPO, "python", "stoker", "fn.pyi")
    result = subprocess.run([sys.executable, tool, "--check", "--output", stub], capture_output=True, text=True,
                            cwd=os.path.dirname(__file__))
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_installed_package_carries_the_stub():
    import stoker

    folder = os.path.dirname(stoker.__file__)
    assert os.path.exists(os.path.join(folder, "fn.pyi")) and os.path.exists(os.path.join(folder, "py.typed"))


def test_a_dali_style_script_passes_mypy_strict(tmp_path):
    pytest.importorskip("mypy")
    script = tmp_path / "user.py"
    script.write_text(USER_SCRIPT)
    result = subprocess.run([sys.executable, "-m", "mypy", "--strict", "--cache-dir", str(tmp_path / "cache"),
                             str(script)], capture_output=True, text=True, cwd=str(tmp_path))
    assert result.returncode == 0, result.stdout + result.stderr
    # and mypy does catch a misspelt argument through the stub
    script.write_text(USER_SCRIPT.replace("random_shuffle=True", "random_shufle=True"))
    result = subprocess.run([sys.executable, "-m", "mypy", "--strict", "--cache-dir", str(tmp_path / "cache"),
                             str(script)], capture_output=True, text=True, cwd=str(tmp_path))
    assert result.returncode != 0 and "random_shufle" in result.stdout
