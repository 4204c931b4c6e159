"""examples/train_video.py on the CPU: one epoch of a tiny clip set (4 clips of 24 frames at 64x48,
2 classes: 12 sequences of 8 frames, 3 steps of 4), with --no-augment (the reader's frames,
normalised in torch) and with the default resize + crop_mirror_normalize. Skips without torch,
without the ffmpeg CLI (`stoker datagen --video` encodes with it) or without FFmpeg's libraries
(readers.video fails with STK_ENOLIB)."""
import math
import os
import shutil
import subprocess
import sys

import pytest

from stoker import StokerError, fn, pipeline_def
from stoker._cli import binary_path

from conftest import requires_torch

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
EXAMPLE = os.path.join(REPO, "examples", "train_video.py")
TINY = ["--make-count", "4", "--make-classes", "2", "--make-frames", "24", "--make-size", "64x48"]

pytestmark = [requires_torch,
              pytest.mark.skipif(shutil.which("ffmpeg") is None, reason="no ffmpeg CLI (stoker datagen --video)")]


@pipeline_def
def probe_pipe(root, op):
    frames = fn.readers.video(file_root=root, sequence_length=8, name="Reader")[0]
    if op == "resize":
        frames = fn.resize(frames, resize_x=32, resize_y=24)
    elif op == "crop_mirror_normalize":
        frames = fn.crop_mirror_normalize(frames, dtype="float", output_layout="CFHW", crop=(24, 32))
    return frames


def run_probe(root, op):
    with probe_pipe(root, op, batch_size=2, num_threads=1, device_id=None) as pipe:
        pipe.build()
        return pipe.run()[0].as_array().shape


@pytest.fixture(scope="module")
def clips(tmp_path_factory):
    """The tiny set, made by the packaged CLI; skips where readers.video has no FFmpeg libraries."""
    root = str(tmp_path_factory.mktemp("clips") / "data")
    os.makedirs(root)
    subprocess.run([binary_path(), "datagen", "--video", root, "--count", "4", "--classes", "2", "--frames", "24",
                    "--size", "64x48"], check=True, capture_output=True, timeout=120)
    try:
        assert run_probe(root, None) == (2, 8, 48, 64, 3)
    except StokerError as error:
        if error.status == "STK_ENOLIB":
            pytest.skip("readers.video: FFmpeg's libraries are missing (%s)" % error)
        raise
    return root


def run_example(args):
    result = subprocess.run([sys.executable, EXAMPLE, "--device", "cpu", "--epochs", "1", "--batch-size", "4",
                             "--workers", "2"] + args, capture_output=True, text=True, timeout=120)
    return result


def epoch_fields(result):
    assert result.returncode == 0, result.stderr[-3000:]
    lines = [line for line in result.stdout.splitlines() if line.startswith("train_video: epoch=")]
    assert len(lines) == 1, result.stdout[-2000:]
    fields = dict(item.split("=", 1) for item in lines[0].split()[1:])
    assert fields["epoch"] == "1" and fields["steps"] == "3" and fields["clips"] == "12"
    assert fields["frames"] == "96" and float(fields["frames/s"]) > 0 and math.isfinite(float(fields["loss"]))
    assert "train_video: done epochs=1 frames=96" in result.stdout
    return fields


def test_no_augment_makes_data_and_trains(tmp_path):
    """--make-data into an empty folder (the packaged CLI), then the reader's frames alone."""
    data = str(tmp_path / "made")
    result = run_example(["--data", data, "--make-data", "--no-augment"] + TINY)
    fields = epoch_fields(result)
    assert fields["clip_shape"] == "3x8x48x64"  # [C, F, H, W] of the 64x48 clips
    assert sorted(os.listdir(data)) == ["class_000", "class_001"]
    assert "augment=off" in result.stdout


def test_augment_resize_and_crop_mirror_normalize(clips):
    """The default pipeline: resize to 55x46, crop 48x40, CFHW float. Each operator alone takes the
    reader's FHWC sequences first (shapes checked), then the example trains on their output."""
    assert run_probe(clips, "resize") == (2, 8, 24, 32, 3)
    assert run_probe(clips, "crop_mirror_normalize") == (2, 3, 8, 24, 32)
    result = run_example(["--data", clips, "--size", "48x40"])
    fields = epoch_fields(result)
    assert fields["clip_shape"] == "3x8x40x48"
    assert "augment=on" in result.stdout
