"""bench/lease/one_call_plan.py: each part of bench/lease/one-call.sh gets a GPU and CPUs of its own, next to it."""
import os
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "bench", "lease"))
sys.path.insert(0, os.path.join(HERE, "..", "..", "bench"))
import one_call_plan as ocp  # noqa: E402


def test_lists_round_trip():
    assert ocp.parse_list("0-3,8,10-11") == [0, 1, 2, 3, 8, 10, 11]
    assert ocp.format_list([0, 1, 2, 3, 8, 10, 11]) == "0-3,8,10-11"
    assert ocp.format_list([5]) == "5"


def test_each_gpu_takes_its_local_cpus_first_and_none_are_shared():
    # Two NUMA nodes of 32 CPUs, GPUs 0-1 on node 0 and 2-3 on node 1 (as on a 4-GPU host).
    local = [list(range(0, 32))] * 2 + [list(range(32, 64))] * 2
    rows = ocp.plan(["train", "val", "hires", "view16", "view8", "r50"], 16, local, list(range(64)))
    # longest first to the least loaded: hires 0, view8 1, r50 2, view16 3, then train 3, val 1
    assert [r[1] for r in rows] == [3, 1, 0, 3, 1, 2]
    by_gpu = {g: cpus for _, g, cpus in rows}
    assert by_gpu[0] == list(range(0, 16)) and by_gpu[1] == list(range(16, 32))
    assert by_gpu[2] == list(range(32, 48)) and by_gpu[3] == list(range(48, 64))


def test_dealing_keeps_the_longest_gpu_short():
    assert ocp.deal(["train", "val", "hires", "view16", "view8", "r50"], 8) == [4, 5, 0, 3, 1, 2]
    # 4 GPUs, the parts listed longest first: dealt round, hires and train would share GPU 0 (25
    # minutes); longest-first to the least loaded keeps every GPU at 24 or less
    parts = ["hires", "view8", "r50", "view16", "train", "val"]
    loads = {}
    for part, g in zip(parts, ocp.deal(parts, 4)):
        loads[g] = loads.get(g, 0) + ocp.MINUTES[part]
    assert max(loads.values()) == 24 and sorted(loads) == [0, 1, 2, 3]


def test_minutes_given_replace_the_tables():
    # r50 without its one-run sweep (R50_DIAG=0): 8.5 minutes; on 4 GPUs the longest GPU then has
    # train + val (22) rather than 24
    parts = ["hires", "view8", "r50", "view16", "train", "val"]
    minutes = ocp.parse_minutes("r50=8.5")
    table = dict(ocp.MINUTES, **minutes)
    loads = {}
    for part, g in zip(parts, ocp.deal(parts, 4, minutes)):
        loads[g] = loads.get(g, 0) + table[part]
    assert max(loads.values()) == 22 and ocp.MINUTES["r50"] == 13  # the table itself is left alone
    # and the views without their synthetic rows (one-call.sh's VIEW_LOADERS without synthetic): 19.5
    minutes = ocp.parse_minutes("r50=8.5,view8=10,view16=9.5")
    table = dict(ocp.MINUTES, **minutes)
    loads = {}
    for part, g in zip(parts, ocp.deal(parts, 4, minutes)):
        loads[g] = loads.get(g, 0) + table[part]
    assert max(loads.values()) == 19.5 and sorted(loads) == [0, 1, 2, 3]
    for bad in ("r50", "r50=0", "r50=x", "=3", "r50=nan"):
        with pytest.raises(ValueError):
            ocp.parse_minutes(bad)
    script = os.path.join(HERE, "..", "..", "bench", "lease", "one_call_plan.py")
    out = subprocess.run([sys.executable, script, "--parts", "a", "--device", "cpu", "--minutes", "a=-1"],
                         capture_output=True, text=True)
    assert out.returncode != 0 and "--minutes wants PART=MINUTES" in out.stderr


def test_too_few_local_cpus_borrow_free_ones_and_too_few_in_all_share():
    rows = ocp.plan(["a", "b"], 4, [[0, 1], [0, 1]], list(range(8)))
    assert rows[0][2] == [0, 1, 2, 3] and rows[1][2] == [4, 5, 6, 7]
    rows = ocp.plan(["a", "b"], 2, [[], []], [0, 1])
    assert all(len(cpus) == len(set(cpus)) and cpus for _, _, cpus in rows)


def test_first_n_of_a_list_and_bad_requests():
    script = os.path.join(HERE, "..", "..", "bench", "lease", "one_call_plan.py")
    out = subprocess.run([sys.executable, script, "--first", "3", "--of", "8-15"], capture_output=True, text=True)
    assert out.returncode == 0 and out.stdout.strip() == "8-10"
    out = subprocess.run([sys.executable, script, "--first", "9", "--of", "8-15"], capture_output=True, text=True)
    assert out.returncode != 0 and "--first 9 of 8 CPUs" in out.stderr
    out = subprocess.run([sys.executable, script, "--parts", "a b", "--device", "cpu", "--slots", "2", "--cores", "1"],
                         capture_output=True, text=True)
    assert out.returncode == 0 and [line.split()[:2] for line in out.stdout.splitlines()] == [["a", "0"], ["b", "1"]]


def test_the_gpu_sampler_follows_cuda_visible_devices(monkeypatch):
    """NVML numbers GPUs on its own: peers.py's sampler must read the part's GPU, not GPU 0."""
    import peers
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "3,1")
    assert peers.visible_gpu_index() == 3
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "GPU-1234")
    assert peers.visible_gpu_index() == 0
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES")
    assert peers.visible_gpu_index() == 0


def test_a_plan_longer_than_a_held_machine_stops_and_says_how_many_gpus_would_do():
    parts = ["train", "val", "hires", "view16", "view8", "r50"]
    minutes = ocp.parse_minutes("r50=8.5,view8=10,view16=9.5")  # one-call.sh's R50_DIAG=0, VIEW_LOADERS
    assert ocp.longest(parts, 2, minutes) == 32.5 and ocp.longest(parts, 4, minutes) == 19.5
    script = os.path.join(HERE, "..", "..", "bench", "lease", "one_call_plan.py")
    base = [sys.executable, script, "--parts", " ".join(parts), "--device", "cpu", "--cores", "1",
            "--minutes", "r50=8.5,view8=10,view16=9.5", "--max-minutes", "22"]
    out = subprocess.run(base + ["--slots", "2"], capture_output=True, text=True)  # session 27's nvidia-h200-x2
    assert out.returncode != 0 and out.stdout == ""
    assert "on 2 GPU(s) the most loaded one's parts take ~32.5 minutes" in out.stderr
    assert "4 GPUs would do" in out.stderr
    out = subprocess.run(base + ["--slots", "4"], capture_output=True, text=True)
    assert out.returncode == 0 and len(out.stdout.split("\n")) == 7
    out = subprocess.run([sys.executable, script, "--parts", "hires", "--device", "cpu", "--cores", "1",
                          "--max-minutes", "10"], capture_output=True, text=True)
    assert out.returncode != 0 and "a part is longer" in out.stderr
