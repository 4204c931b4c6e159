#!/usr/bin/env python3
"""bench/readme_table.py: the README's results table, generated from the runs kept in bench/results/.

Each bench/results/NAME/run.json is a bench/compare.py run (bench/run.sh train|val|cpu writes one).
Every loader's protocol rows (warm-up excluded, window ended by a device synchronize, >= 3 repeats)
become one table row: median and range of images/s, stoker against the run's peer (a win only
when the ranges are apart), and the provenance a reader needs to check it: the machine, the
commit of the build and the command that reproduces it. Standard library only; not on a hot path.

  readme_table.py                 print the table
  readme_table.py --write FILE    replace the table between the markers in FILE (README.md)
  readme_table.py --check FILE    exit 1 when FILE's table is not what the results give
"""
import argparse
import glob
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from protocol import runs_complete, summary, verdict  # noqa: E402  (bench/protocol.py)

BENCH = os.path.dirname(os.path.abspath(__file__))
START, END = "<!-- results-table:start -->", "<!-- results-table:end -->"
NAMES = {  # loader -> how the table names it
    "stoker-cli-mixed": "stoker, mixed decoder",
    "stoker-py-mixed": "stoker through its PyTorch iterator, mixed decoder, defaults",
    "stoker-cli-cpu": "stoker, CPU only",
    "stoker-cli-cpudec": "stoker, CPU decoder",
    "dali-mixed": "NVIDIA DALI, mixed decoder",
}


def machine_of(run):
    """'NVIDIA H200 + 16 CPUs' on a GPU run, 'CPU MODEL, N CPUs' on a CPU run."""
    m = run.get("machine", {})
    cpus = m.get("cpus", "?")
    if run.get("device") == "cpu" or not m.get("gpu"):
        return "%s, %s CPUs" % (m.get("cpu_model", "CPU").strip(), cpus)
    return "%s + %s CPUs" % (m["gpu"].split(",")[0], cpus)


def command_of(run):
    """The bench/run.sh line that reproduces the run (the sweep's settings included)."""
    if run.get("device") == "cpu":
        return "`bench/run.sh cpu`"
    settings = (run.get("sweep") or {}).get("settings")
    count = _count(run)
    env = "COUNT=%s " % count if count else ""
    env += 'SWEEP="%s" ' % settings if settings else ""
    words = run.get("command", "").split()
    for flag, name in (("--loaders", "LOADERS"), ("--defaults", "DEFAULTS")):
        if flag in words and words.index(flag) + 1 < len(words) and not words[words.index(flag) + 1].startswith("--"):
            env += "%s=%s " % (name, words[words.index(flag) + 1])
    env += "".join("%s=%s " % kv for kv in sorted(run.get("environment", {}).items()) if kv[0].startswith("STOKER_"))
    cpus = run.get("machine", {}).get("cpus")
    taskset = "taskset -c 0-%d " % (int(cpus) - 1) if run.get("device") != "cpu" and str(cpus).isdigit() else ""
    return "`%s%sbench/run.sh %s`" % (env, taskset, run.get("mode", "train"))


def _count(run):
    """The data set's image count from its note ('... --count N ...'), else None."""
    words = run.get("data_note", "").split()
    return words[words.index("--count") + 1] if "--count" in words else None


def loaders_of(run):
    """{loader: (setting text, summary of its protocol rows' images/s, their rows)} in the run's order."""
    out = {}
    for row in run.get("rows", []):
        if row.get("phase") == "protocol" and row.get("status") == "ok":
            out.setdefault(row["loader"], (row.get("setting_text", ""), []))[1].append(row)
    return {k: (s, summary([r.get("images_per_s") for r in rs]), rs) for k, (s, rs) in out.items()}


def median_of(rows, field, fmt):
    """The median of a field over rows, formatted ('-' when no row has it)."""
    s = summary([r.get(field) for r in rows])
    return fmt.format(s["median"]) if s["n"] else "-"


def rows_of(run):
    """The table rows of one run: one per loader, stoker's first."""
    loaders = loaders_of(run)
    stoker = [k for k in loaders if k.startswith("stoker")]
    peers = [k for k in loaders if not k.startswith("stoker")]
    bench = {"train": "rn50-train", "val": "rn50-val", "decode": "decode only", "effnet": "EfficientNet train (AutoAugment)"}.get(run.get("mode"), run.get("mode"))
    commit = run.get("machine", {}).get("commit", "unknown")[:7]
    rows = []
    for name in stoker + peers:
        setting, s, rs = loaders[name]
        against = ""
        if name in stoker and peers:
            p = loaders[peers[0]][1]
            ratio = s["median"] / p["median"]
            against = "%.2fx, %s" % (ratio, {"win": "ranges apart", "loss": "ranges apart (behind)",
                                                "overlap": "ranges overlap"}[verdict(s, p)])
        per_core = summary([r["images_per_s"] / r["cpu_cores_busy"] for r in rs
                            if r.get("images_per_s") and r.get("cpu_cores_busy")])
        rows.append("| %s | %s (%s) | %s (%s-%s) | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            bench, NAMES.get(name, name), setting, "{:,.0f}".format(s["median"]), "{:,.0f}".format(s["min"]),
            "{:,.0f}".format(s["max"]), against or "-", median_of(rs, "cpu_cores_busy", "{:.1f}"),
            "{:,.0f}".format(per_core["median"]) if per_core["n"] else "-",
            median_of(rs, "device_mem_used_mb", "{:,.0f}"), median_of(rs, "time_to_first_batch_s", "{:.2f}"),
            machine_of(run), commit, command_of(run)))
    return rows


def table(results_dir):
    """The whole table (a string): from the one call results_dir/README_CALL names (the README shows
    one call, never rows assembled across calls or machines), else from every
    results_dir/*/run.json, GPU runs first, then by name."""
    runs = []
    chosen = os.path.join(results_dir, "README_CALL")
    pattern = "*"
    if os.path.exists(chosen):
        with open(chosen) as f:
            pattern = f.read().strip()
    for path in sorted(glob.glob(os.path.join(results_dir, pattern, "run.json"))):
        with open(path) as f:
            run = json.load(f)
        if not run.get("meets_protocol") or not runs_complete(run.get("rows", []), run.get("repeats", 3)):
            raise SystemExit("readme_table: %s is not a protocol call (its clock, or a row with fewer runs than "
                             "its repeats): the README shows protocol rows only" % path)
        runs.append(run)
    runs.sort(key=lambda r: (r.get("device") == "cpu", r.get("mode", "")))
    lines = ["| benchmark | loader (setting) | img/s median (range) | stoker vs peer | CPU cores busy | img/s per core "
             "| device MB | first batch s | machine | commit | command |",
             "|---|---|---:|---|---:|---:|---:|---:|---|---|---|"]
    for run in runs:
        lines += rows_of(run)
    return "\n".join(lines) + "\n"


def replace(text, new_table):
    """text with the part between the markers replaced by new_table; ValueError without markers."""
    a, b = text.find(START), text.find(END)
    if a < 0 or b < a:
        raise ValueError("no %s ... %s markers" % (START, END))
    return text[:a + len(START)] + "\n" + new_table + text[b:]


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--results", default=os.path.join(BENCH, "results"), help="folder of NAME/run.json")
    group = p.add_mutually_exclusive_group()
    group.add_argument("--write", metavar="FILE", help="replace the table between the markers in FILE")
    group.add_argument("--check", metavar="FILE", help="exit 1 when FILE's table differs from the results")
    a = p.parse_args()
    new = table(a.results)
    if not (a.write or a.check):
        sys.stdout.write(new)
        return 0
    path = a.write or a.check
    with open(path) as f:
        text = f.read()
    try:
        updated = replace(text, new)
    except ValueError as error:
        print("readme_table.py: %s: %s" % (path, error), file=sys.stderr)
        return 2
    if a.check:
        if updated != text:
            print("readme_table.py: %s's results table is not what %s gives; run bench/run.sh table --write %s"
                  % (path, a.results, path), file=sys.stderr)
            return 1
        return 0
    with open(path, "w") as f:
        f.write(updated)
    return 0


if __name__ == "__main__":
    sys.exit(main())
