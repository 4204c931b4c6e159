"""bench/readme_table.py: the README's results table is generated from bench/results/*/run.json; each
row names its machine, commit and command, a win needs the ranges apart, and --check fails on a
stale copy."""
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.join(HERE, "..", "..")
SCRIPT = os.path.join(REPO, "bench", "readme_table.py")
sys.path.insert(0, os.path.join(REPO, "bench"))
import readme_table  # noqa: E402


def row(loader, ips, setting="prefetch=2 workers=16", phase="protocol"):
    return {"phase": phase, "status": "ok", "loader": loader, "images_per_s": ips, "setting_text": setting}


def gpu_run(stoker, peer):
    return {"mode": "train", "device": "cuda", "data_note": "make_dataset.py --count 20000 --seed 1",
            "meets_protocol": True, "repeats": 3,
            "sweep": {"settings": "16,2,0.8"},
            "machine": {"gpu": "NVIDIA H200, 580.159.04, 143771 MiB", "cpus": 16, "commit": "0123456789abcdef"},
            "rows": [row("stoker-cli-mixed", v) for v in stoker] + [row("dali-mixed", v) for v in peer]
            + [row("stoker-cli-mixed", 1.0, phase="sweep")]}


def test_the_readme_table_is_what_the_results_give():
    done = subprocess.run([sys.executable, SCRIPT, "--check", os.path.join(REPO, "README.md")],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_rows_name_machine_commit_command_and_verdict():
    rows = readme_table.rows_of(gpu_run([130.0, 120.0, 125.0], [100.0, 95.0, 105.0]))
    assert len(rows) == 2 and rows[0].startswith("| rn50-train | stoker, mixed decoder (prefetch=2 workers=16) | 125 (120-130)")
    assert "1.25x, ranges apart" in rows[0]
    assert "NVIDIA H200 + 16 CPUs | 0123456 | `COUNT=20000 SWEEP=\"16,2,0.8\" taskset -c 0-15 bench/run.sh train`" in rows[0]
    assert rows[1].startswith("| rn50-train | NVIDIA DALI, mixed decoder") and "| - |" in rows[1]
    overlapping = readme_table.rows_of(gpu_run([130.0, 100.0, 125.0], [100.0, 95.0, 105.0]))
    assert "ranges overlap" in overlapping[0]  # a higher median alone is no win


def test_cpu_run_names_the_cpu_and_its_command():
    run = {"mode": "train", "device": "cpu", "machine": {"cpu_model": "AMD EPYC", "cpus": 2, "commit": "abcdef0123"},
           "rows": [row("stoker-cli-cpu", v, "prefetch=2 workers=2") for v in (380.0, 361.0, 409.0)]}
    (only,) = readme_table.rows_of(run)
    assert "| 380 (361-409) | - | - | - | - | - | AMD EPYC, 2 CPUs | abcdef0 | `bench/run.sh cpu` |" in only


def test_rows_say_images_per_busy_core():
    run = {"mode": "train", "device": "cpu", "machine": {"cpu_model": "AMD EPYC", "cpus": 2, "commit": "abcdef0123"},
           "rows": [dict(row("stoker-cli-cpu", v, "prefetch=2 workers=2"), cpu_cores_busy=c)
                    for v, c in ((400.0, 2.0), (360.0, 2.0), (300.0, 1.0))]}
    (only,) = readme_table.rows_of(run)
    assert "| 360 (300-400) | - | 2.0 | 200 |" in only  # per run 200, 180, 300: median 200


def test_check_fails_on_a_stale_table_and_write_mends_it(tmp_path):
    results = tmp_path / "results" / "one"
    results.mkdir(parents=True)
    (results / "run.json").write_text(json.dumps(gpu_run([130.0, 120.0, 125.0], [100.0, 95.0, 105.0])))
    readme = tmp_path / "README.md"
    readme.write_text("# x\n%s\n| old |\n%s\nafter\n" % (readme_table.START, readme_table.END))
    base = [sys.executable, SCRIPT, "--results", str(tmp_path / "results")]
    stale = subprocess.run(base + ["--check", str(readme)], capture_output=True, text=True)
    assert stale.returncode == 1 and "bench/run.sh table --write" in stale.stderr
    assert subprocess.run(base + ["--write", str(readme)]).returncode == 0
    assert subprocess.run(base + ["--check", str(readme)]).returncode == 0
    text = readme.read_text()
    assert "| old |" not in text and "1.25x, ranges apart" in text and text.endswith("after\n")


def test_a_call_whose_rows_were_cut_short_is_refused(tmp_path):
    """Two runs of DALI's row where the call asked three (its time budget ended): not a protocol
    call, whatever its clock settings; the table names the run and writes nothing."""
    results = tmp_path / "results" / "short"
    results.mkdir(parents=True)
    (results / "run.json").write_text(json.dumps(gpu_run([130.0, 120.0, 125.0], [100.0, 95.0])))
    readme = tmp_path / "README.md"
    readme.write_text("# x\n%s\n| old |\n%s\n" % (readme_table.START, readme_table.END))
    done = subprocess.run([sys.executable, SCRIPT, "--results", str(tmp_path / "results"), "--write", str(readme)],
                          capture_output=True, text=True)
    assert done.returncode != 0 and "short/run.json is not a protocol call" in done.stderr
    assert "| old |" in readme.read_text()


def test_a_file_without_markers_is_refused(tmp_path):
    readme = tmp_path / "README.md"
    readme.write_text("no table here\n")
    done = subprocess.run([sys.executable, SCRIPT, "--check", str(readme)], capture_output=True, text=True)
    assert done.returncode == 2 and "markers" in done.stderr
