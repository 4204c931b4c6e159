"""bench/selftest.sh, the benchmark harness's own checks without a GPU (the protocol's functions,
peers.py's run tokens and knobs, its written-out pipelines against the built-in ones by output
digest, compare.py's sweep and protocol rows end to end on stoker's CPU CLI, report.py's section),
run from `make test` so a change to the harness cannot land with them failing."""
import os
import subprocess
import sys

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def test_bench_selftest_passes():
    cli = next((os.path.join(ROOT, c) for c in ("build-nocuda/stoker", "build/stoker")
                if os.access(os.path.join(ROOT, c), os.X_OK)), None)
    if cli is None:
        pytest.skip("no stoker CLI built (make build)")
    env = dict(os.environ, PYTHON=sys.executable, STOKER_CLI=cli)
    done = subprocess.run(["bash", os.path.join(ROOT, "bench", "selftest.sh")], env=env, capture_output=True,
                          text=True, timeout=600)
    tail = (done.stdout + done.stderr)[-4000:]
    assert done.returncode == 0 and " 0 failed" in done.stdout, tail
    assert "FAIL" not in done.stdout, tail
