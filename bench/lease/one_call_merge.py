#!/usr/bin/env python3
"""bench/lease/one_call_merge.py: bench/lease/one-call.sh's parts as one results section, one chart and the
README's table, all from that one call's files.

  one_call_merge.py OUT [--command TEXT]
writes OUT/section.md (provenance, where each part ran, the targets of issue 15 with each one's
verdict computed from the protocol rows, then every part's own table verbatim), OUT/chart.png (one
panel per part that has protocol rows: bars the medians, whiskers the ranges; no empty panels) and
OUT/readme-table.md (the targets table alone). A win is a win only when the ranges do not overlap;
a part without protocol rows says so instead of a verdict. Reads OUT/plan.txt, OUT/STEPS and the
parts' run.json files (bench/compare.py's and bench/train_view.py's). Standard library, plus
matplotlib for the chart when it is there. Not on a hot path.
"""
import argparse
import json
import os
import sys

# part -> (title, run.json paths under OUT/part tried in turn, kind)
PARTS = {
    "train": ("rn50-train (stand-alone, batch 256)", ["protocol/run.json"], "compare"),
    "val": ("rn50-val (stand-alone, batch 256)", ["protocol/run.json"], "compare"),
    "hires": ("2-3 MP photographs, decode only", ["protocol/run.json"], "compare"),
    "view16": ("training view: ResNet-18 at 160 px, 16 CPUs", ["run.json"], "view"),
    "view8": ("training view: ResNet-18 at 160 px, 8 CPUs", ["run.json"], "view"),
    "r50": ("ResNet-50 view (224 px): shortfall from the ceiling", ["protocol/run.json"], "view"),
}


sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))  # bench/
from report import bar_panel  # one chart panel: medians, whiskers to the ranges
from train_view import summary  # median, min, max, n of the numbers given (None when none)


def loaders_of(kind, run):
    """{loader: {"img_s": summary, "device_mb": summary, "cores": summary, "first_batch_s": summary}}
    from a part's protocol rows (compare.py: phase "protocol", status ok; train_view.py: its rows)."""
    out = {}
    if kind == "compare":
        rows = [r for r in run.get("rows", []) if r.get("phase") == "protocol" and r.get("status") == "ok"]
        for name in dict.fromkeys(r["loader"] for r in rows):
            mine = [r for r in rows if r["loader"] == name]
            out[name] = {"img_s": summary([r.get("images_per_s") for r in mine]),
                         "device_mb": summary([r.get("device_mem_used_mb") for r in mine]),
                         "cores": summary([r.get("cpu_cores_busy") for r in mine]),
                         "first_batch_s": summary([r.get("time_to_first_batch_s") for r in mine]),
                         "setting": mine[0].get("setting_text") or mine[0].get("setting")}
    else:
        for name, row in (run.get("rows") or {}).items():
            if not row.get("protocol"):
                continue
            out[name] = {"img_s": row.get("img_s"), "device_mb": row.get("device_mb"),
                         "cores": row.get("cpus_busy"), "first_batch_s": row.get("first_batch_s"),
                         "shortfall": row.get("shortfall"), "setting": name}
    return out


def family(name):
    """'stoker-cli-mixed', 'decode-stoker-mixed', 'stoker+decode=cpu' -> 'stoker'; likewise dali,
    tv (torchvision), pytorch (the DataLoader), synthetic."""
    for key in ("synthetic", "stoker", "dali", "tv", "pytorch"):
        if key in name.replace("+", "-").split("-"):
            return key
    return name


def best(loaders, fam):
    """The family's row with the highest median (each loader at its best setting)."""
    rows = [(n, r) for n, r in loaders.items() if family(n) == fam and r.get("img_s")]
    return max(rows, key=lambda nr: nr[1]["img_s"]["median"], default=(None, None))


def versus(a, b, factor=1.0):
    """(ratio of medians, ranges apart, met): met when the medians' ratio is at least factor and
    a's range lies wholly above b's (a win only with the ranges apart)."""
    ratio = a["median"] / b["median"]
    apart = a["min"] > b["max"] or a["max"] < b["min"]
    return ratio, apart, ratio >= factor and a["min"] > b["max"]


def fmt(s):
    return "%s (%s-%s)" % (f"{s['median']:,.0f}", f"{s['min']:,.0f}", f"{s['max']:,.0f}") if s else "-"


def targets(results):
    """Rows of the targets table: (target, stoker, peer, verdict)."""
    rows = []
    for part, factor, peers in (("train", 1.2, ("dali",)), ("val", 1.2, ("dali",)),
                                ("hires", 1.2, ("tv",)), ("hires", 1.0, ("dali",)),
                                ("view16", 1.0, ("dali",)), ("view16", 1.5, ("pytorch",)),
                                ("view8", 1.0, ("dali",)), ("view8", 1.5, ("pytorch",))):
        loaders = results.get(part)
        name = PARTS[part][0]
        if not loaders:
            rows.append((f"{name}: stoker >= {factor}x its peer", "-", "-", "not measured in this call"))
            continue
        sn, s = best(loaders, "stoker")
        for fam in peers:
            pn, p = best(loaders, fam)
            if not s or not p:
                rows.append((f"{name}: stoker >= {factor}x {fam}", sn or "-", pn or "-", "a row is missing"))
                continue
            ratio, apart, met = versus(s["img_s"], p["img_s"], factor)
            verdict = "%.2fx, ranges %s: %s" % (ratio, "apart" if apart else "overlap", "met" if met else "NOT met")
            rows.append((f"{name}: stoker >= {factor}x {fam}", f"{sn} {fmt(s['img_s'])}", f"{pn} {fmt(p['img_s'])}",
                         verdict))
    if "train" in results:
        sn, s = best(results["train"], "stoker")
        if s:
            rows.append(("rn50-train: stoker >= 20,000 img/s", f"{sn} {fmt(s['img_s'])}", "-",
                         "met" if s["img_s"]["median"] >= 20000 else "NOT met"))
    r50 = results.get("r50")
    if r50:
        sn, s = best(r50, "stoker")
        dn, d = best(r50, "dali")
        if s and d and s.get("shortfall") and d.get("shortfall"):
            a, b = s["shortfall"], d["shortfall"]
            apart = a["min"] > b["max"] or a["max"] < b["min"]
            met = a["median"] <= b["median"]
            rows.append(("ResNet-50 view: stoker's shortfall <= DALI's",
                         f"{sn} {a['median']:.1%} ({a['min']:.1%}-{a['max']:.1%})",
                         f"{dn} {b['median']:.1%} ({b['min']:.1%}-{b['max']:.1%})",
                         "%s, ranges %s" % ("met" if met else "NOT met", "apart" if apart else "overlap")))
    for part, loaders in results.items():  # device memory: stoker's best row against DALI's best row
        sn, s = best(loaders, "stoker")
        dn, d = best(loaders, "dali")
        if s and d and s.get("device_mb") and d.get("device_mb"):
            met = s["device_mb"]["median"] <= d["device_mb"]["median"]
            rows.append((f"{PARTS[part][0]}: device MB, stoker <= DALI", f"{sn} {fmt(s['device_mb'])}",
                         f"{dn} {fmt(d['device_mb'])}", "met" if met else "NOT met"))
    return rows


def chart(results, path, title):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    panels = [(p, l) for p, l in results.items() if any(r.get("img_s") for r in l.values())]
    if not panels:
        raise ValueError("no protocol rows to draw")
    height = sum(1.0 + 0.45 * len(l) for _, l in panels)
    figure, axes = plt.subplots(len(panels), 1, figsize=(11, height), squeeze=False)
    for axis, (part, loaders) in zip(axes.flat, panels):
        bar_panel(axis, PARTS[part][0],
                  [(n, r["img_s"], family(n) == "stoker") for n, r in loaders.items() if r.get("img_s")])
    figure.suptitle(title)
    figure.tight_layout()
    figure.savefig(path, dpi=110)


def read_table(path):
    """{first field: (second, third)} of a file of three-field lines (plan.txt, STEPS); {} when absent."""
    rows = {}
    if os.path.exists(path):
        for line in open(path):
            fields = line.split()
            if len(fields) == 3:
                rows[fields[0]] = (fields[1], fields[2])
    return rows


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("out")
    p.add_argument("--command", default="bash bench/lease/one-call.sh")
    a = p.parse_args()
    plan = read_table(os.path.join(a.out, "plan.txt"))  # part -> (GPU, CPUs)
    steps = read_table(os.path.join(a.out, "STEPS"))  # part -> (exit status, seconds)
    results, texts, provenance = {}, [], None
    for part, (title, paths, kind) in PARTS.items():
        if part not in plan:
            continue
        run = None
        for rel in paths:
            path = os.path.join(a.out, part, rel)
            if os.path.exists(path):
                run = json.load(open(path))
                break
        rc, seconds = steps.get(part, ("not finished", "-"))
        texts.append(f"### {title}\n\nGPU {plan[part][0]}, CPUs {plan[part][1]}; the part's exit status {rc} "
                     f"after {seconds} s.\n")
        if run is None:
            texts.append("No protocol results: the part did not finish (its log: `%s.log`).\n" % part)
            continue
        results[part] = loaders_of(kind, run)
        if provenance is None and kind == "compare":
            m = run.get("machine", {})
            provenance = "; ".join(f"{k} {m[k]}" for k in ("commit", "gpu", "cpu_model", "stoker_cli", "torch",
                                                            "torchvision", "dali", "cuda_driver_api") if m.get(k))
        for name in ("results-section.md", "table.md"):
            path = os.path.join(os.path.dirname(os.path.join(a.out, part, paths[0])), name)
            if os.path.exists(path):  # its headings two levels down, under the part's
                lines = open(path).read().strip().splitlines()
                texts.append("\n".join("##" + l if l.startswith("#") else l for l in lines) + "\n")
    rows = targets(results)
    table = ["| target | stoker (best row) | peer (best row) | verdict |", "|---|---|---|---|"]
    table += ["| %s | %s | %s | %s |" % r for r in rows]
    head = [f"## One call: issue 15's section ({len(plan)} parts side by side)", "",
            f"Command on the device: `{a.command}`.  ",
            f"Provenance: {provenance or 'commit ' + os.environ.get('COMMIT', 'unknown')}.  ",
            "Each part ran on a GPU of its own with the CPUs named under it (taskset, the whole process "
            "tree), at the same time as the others; they shared the host's memory bandwidth, PCIe and "
            "disks, and each part's loaders were interleaved, so they shared that alike.", "",
            "**Issue 15's targets, from this call's protocol rows** (medians, ranges in brackets; a win only "
            "with the ranges apart):", ""] + table + ["", "Chart: `chart.png`.", ""]
    with open(os.path.join(a.out, "section.md"), "w") as f:
        f.write("\n".join(head + texts) + "\n")
    with open(os.path.join(a.out, "readme-table.md"), "w") as f:
        f.write("\n".join(table) + "\n")
    try:
        chart(results, os.path.join(a.out, "chart.png"), "stoker vs peers, one call")
    except (ImportError, ValueError) as error:
        print("one_call_merge: no chart (%s)" % error, file=sys.stderr)
    print("\n".join(head))


if __name__ == "__main__":
    main()
