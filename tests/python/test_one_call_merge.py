"""bench/lease/one_call_merge.py on real artefacts of earlier device calls (their run.json and tables,
kept in tests/fixtures/one_call/; the whole runs are on the `results` branch) laid out as
bench/lease/one-call.sh's parts: the targets' verdicts come from the protocol rows, and a missing part
says so."""
import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.join(HERE, "..", "..")
RUNS = os.path.join(REPO, "tests", "fixtures", "one_call")
sys.path.insert(0, os.path.join(REPO, "bench", "lease"))
sys.path.insert(0, os.path.join(REPO, "bench"))
import one_call_merge as merge  # noqa: E402

SOURCES = {  # part -> (an earlier call's run.json and its table, where it goes)
    "train": ("train", "protocol"),  # H100, rn50-train, stoker mixed against DALI mixed
    "hires": ("hires", "protocol"),  # H100, 2-3 MP photographs, decode only
    "view16": ("view16", ""),  # H100, the loader-bound training view, 16 CPUs
    "r50": ("r50", "protocol"),  # H100, the ResNet-50 view
}


def lay_out(tmp_path, parts):
    out = tmp_path / "out"
    out.mkdir()
    with open(out / "plan.txt", "w") as f:
        for i, part in enumerate(parts):
            f.write("%s %d %d-%d\n" % (part, i, 16 * i, 16 * i + 15))
    with open(out / "STEPS", "w") as f:
        for part in parts:
            if part in SOURCES:
                f.write("%s 0 600\n" % part)
    for part in parts:
        if part in SOURCES:
            src, sub = SOURCES[part]
            dst = out / part / sub if sub else out / part
            shutil.copytree(os.path.join(RUNS, src), dst)
    return out


def test_verdicts_from_the_protocol_rows(tmp_path):
    out = lay_out(tmp_path, ["train", "val", "hires", "view16", "r50"])
    result = subprocess.run([sys.executable, os.path.join(REPO, "bench", "lease", "one_call_merge.py"), str(out)],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    table = (out / "readme-table.md").read_text()
    # the train fixture: stoker 23,566 (23,004-23,630) against DALI 17,686 (17,580-18,240): 1.33x, apart
    assert "rn50-train (stand-alone, batch 256): stoker >= 1.2x dali | stoker-cli-mixed 23,566" in table
    assert "1.33x, ranges apart: met" in table
    assert "rn50-train: stoker >= 20,000 img/s" in table
    # the r50 fixture (ResNet-50 view): stoker 0.8% against DALI 0.4%, overlapping
    assert "ResNet-50 view: stoker's shortfall <= DALI's" in table and "NOT met, ranges overlap" in table
    # no val part ran: said so, no verdict invented
    assert "rn50-val (stand-alone, batch 256): stoker >= 1.2x its peer | - | - | not measured in this call" in table
    section = (out / "section.md").read_text()
    assert "No protocol results: the part did not finish" in section  # val
    parts = [line for line in section.splitlines() if line.startswith("### ")]
    assert parts == ["### " + merge.PARTS[p][0] for p in ("train", "val", "hires", "view16", "r50")]
    assert not [line for line in section.splitlines() if line.startswith("## ")][1:]  # one section


def test_versus_needs_the_ranges_apart():
    a = {"median": 130.0, "min": 100.0, "max": 140.0}
    b = {"median": 100.0, "min": 95.0, "max": 105.0}
    assert merge.versus(a, b, 1.2) == (1.3, False, False)  # 1.3x on medians, but the ranges overlap
    a["min"] = 106.0
    assert merge.versus(a, b, 1.2)[2] and not merge.versus(a, b, 1.4)[2]


def test_loader_families():
    assert [merge.family(n) for n in ("stoker-cli-mixed", "decode-stoker-mixed", "stoker+decode=cpu",
                                      "dali-mixed", "decode-tv-gpu", "pytorch", "synthetic")] == \
        ["stoker", "stoker", "stoker", "dali", "tv", "pytorch", "synthetic"]
