"""bench/lease/one-call.sh's plumbing without a GPU (DEVICE=cpu): the plan, the set made once and copied
per part, each part run under taskset with its status in STEPS, and the merged section. The parts'
own rows fail here (no GPU, no DALI): what is checked is that the driver gets through and says so.
The two stand-alone parts (compare.sh) only: the views would train a model on this CPU."""
import os
import shutil
import subprocess

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))
CLI = os.path.join(REPO, "build", "stoker")


@pytest.mark.skipif(not os.path.exists(CLI) or not shutil.which("taskset"), reason="needs build/stoker and taskset")
def test_the_driver_runs_every_part_and_merges(tmp_path):
    out = tmp_path / "out"
    env = dict(os.environ, OUT=str(out), DATA_ROOT=str(tmp_path / "data"), DEVICE="cpu", GPU_SLOTS="2",
               CORES_PER="1", PARTS="val train", COUNT="40", STOKER_CLI=CLI, WARMUP="1", WINDOW="1", REPEATS="1",
               SWEEP_SECONDS="1", SWEEP_WARMUP="1", SWEEP="1,1,0.8", PROFILE="0", COMMIT="test",
               STOKER_WHEEL="/nonexistent")
    result = subprocess.run(["bash", os.path.join(REPO, "bench", "lease", "one-call.sh")], env=env, capture_output=True,
                            text=True, timeout=300)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
    plan = (out / "plan.txt").read_text().split("\n")
    assert [line.split()[0] for line in plan if line] == ["val", "train"]
    steps = {line.split()[0]: line.split()[1] for line in (out / "STEPS").read_text().splitlines()}
    assert set(steps) == {"val", "train"}  # both ran (and said how they ended)
    assert (tmp_path / "data-imagenet-val").is_dir() and (tmp_path / "data-imagenet-train").is_dir()
    assert "reusing" in (out / "val" / "sweep" / "log.txt").read_text()  # its copy, not a remade set
    section = (out / "section.md").read_text()
    assert "## One call: issue 15's section (2 parts side by side)" in section
    assert "### rn50-val (stand-alone, batch 256)" in section and "CPUs" in section
