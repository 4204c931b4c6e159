"""bench/lease/headline-job.sh's view steps without a GPU (DEVICE=cpu): view1 and view2 run
bench/train-view.sh on one and two ranks (torchrun, gloo), the second with the first's run.json as
its scaling baseline, each step's status in STEPS. The synthetic loader only: what is checked is the
plumbing (a step that could not start the view -- a shell word out of place -- fails here)."""
import os
import shutil
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))


def test_view_steps_run_and_scale(tmp_path):
    try:
        import torch.distributed as dist
        import torchvision  # noqa: F401
    except ImportError:
        pytest.skip("torch and torchvision are not installed (scripts/test-python.sh installs them)")
    if not dist.is_available() or not dist.is_gloo_available() or not shutil.which("taskset"):
        pytest.skip("needs torch.distributed with gloo, and taskset")
    data = tmp_path / "set"
    for c in range(2):  # the example lists class folders of JPEG files (the synthetic loader reads none)
        (data / ("class_%d" % c)).mkdir(parents=True)
        (data / ("class_%d" % c) / "a.jpg").write_bytes(b"\xff\xd8\xff\xd9")
    out = tmp_path / "job"
    env = dict(os.environ, OUT=str(out), SET_DIR=str(data), STEPS_TO_RUN="view1 view2", DEVICE="cpu",
               VIEW_CORES_PER="1", VIEW_LOADERS="synthetic", VIEW_SIZE="32", WARMUP="1", WINDOW="1", REPEATS="1",
               BATCH="2", PYTHON=sys.executable, STOKER_WHEEL="/nonexistent", EXTRA_PYTHONPATH="/nonexistent",
               OMP_NUM_THREADS="1")
    result = subprocess.run(["bash", os.path.join(REPO, "bench", "lease", "headline-job.sh")], env=env,
                            capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
    steps = dict(line.split()[:2] for line in (out / "STEPS").read_text().splitlines())
    assert steps == {"view1": "0", "view2": "0"}, (out / "STEPS").read_text()
    table = (out / "view2" / "table.md").read_text()
    assert "2 GPUs under torchrun (DDP), 2 cores" in table
    assert "Scaling from 1 GPU (img/s over 2 x the one-GPU row of %s): synthetic " % (out / "view1" / "run.json") in table
