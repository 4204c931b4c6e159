#!/usr/bin/env python3
"""bench/lease/one_call_plan.py: which GPU and which CPUs each part of bench/lease/one-call.sh runs on.

  one_call_plan.py --parts "train val hires" --cores 16 [--device cuda|cpu] [--slots N] [--minutes r50=8.5]
      one line per part: "PART GPU CPULIST", in the order given (a GPU runs its parts in that
      order). The parts are dealt to the GPUs longest first, each to the least loaded (MINUTES),
      so with fewer GPUs than parts a GPU runs several one after the other. Each GPU gets --cores CPUs of
      its own: first those next to it (the PCI device's local_cpulist in sysfs, as `stoker topo`
      reads them), then any other free ones, always within this process's allowed CPUs; GPUs do
      not share CPUs unless there are too few for all (then they are dealt round, and said so on
      stderr). --device cpu (a dry run without a GPU): --slots (1) pretend GPUs, no locality.
      --max-minutes M: fail instead (saying how many GPUs would do) when the most loaded GPU's parts
      would take more than M minutes (one-call.sh: a machine is held 30 minutes at most).
  one_call_plan.py --first N --of CPULIST
      the first N CPUs of CPULIST, as a list (the 8-CPU view inside a part's 16).
Standard library only. Not on a hot path.
"""
import argparse
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))  # bench/
from train_view import cpu_list  # taskset's and sysfs's CPU lists


def parse_list(text):
    """'0-3,8,10-11' -> [0, 1, 2, 3, 8, 10, 11] (train_view.cpu_list, sorted); ValueError on anything else."""
    return sorted(cpu_list(text))


def format_list(cpus):
    """[0, 1, 2, 5] -> '0-2,5'."""
    out, run = [], []
    for c in cpus:
        if run and c == run[-1] + 1:
            run.append(c)
            continue
        if run:
            out.append("%d-%d" % (run[0], run[-1]) if len(run) > 1 else str(run[0]))
        run = [c]
    if run:
        out.append("%d-%d" % (run[0], run[-1]) if len(run) > 1 else str(run[0]))
    return ",".join(out)


def gpu_local_cpus():
    """Per visible GPU (nvidia-smi's order), the CPUs sysfs lists next to its PCI device."""
    text = subprocess.run(["nvidia-smi", "--query-gpu=index,pci.bus_id", "--format=csv,noheader"],
                          capture_output=True, text=True, check=True).stdout
    local = []
    for line in text.splitlines():
        if not line.strip():
            continue
        _, bus = [x.strip() for x in line.split(",")]
        domain, rest = bus.split(":", 1)  # 00000000:18:00.0 -> 0000:18:00.0
        path = "/sys/bus/pci/devices/%s:%s/local_cpulist" % (domain[-4:].lower(), rest.lower())
        try:
            with open(path) as f:
                local.append(parse_list(f.read()))
        except OSError:
            local.append([])
    return local


# Minutes each part takes on an H100 with 16 CPUs (its sweep, protocol and cold rows: sessions
# 14-22's step times), for dealing the parts to the GPUs; a part not named here counts 12.
# --minutes overrides them (one-call.sh: r50 without its one-run sweep, 8.5: session 24's 12 runs
# took 659 s, 9 runs ~490 s in sessions 20-22).
MINUTES = {"hires": 14, "view8": 13, "view16": 12.5, "r50": 13, "train": 11, "val": 11}


def parse_minutes(text):
    """'r50=8.5,val=9' -> {'r50': 8.5, 'val': 9.0}; ValueError on anything else."""
    out = {}
    for item in (text or "").split(","):
        if not item.strip():
            continue
        part, sep, value = item.partition("=")
        if not sep or not part.strip() or not float(value) > 0:
            raise ValueError("--minutes wants PART=MINUTES[,PART=MINUTES], not %r" % item)
        out[part.strip()] = float(value)
    return out


def dealt(parts, gpus, minutes=None):
    """([gpu of each part], [minutes of each GPU's parts]): the longest part first (MINUTES, or
    minutes where given), each to the GPU with the least work so far (so the call ends as early as
    it can); ties to the lower GPU number."""
    table = dict(MINUTES, **(minutes or {}))
    load = [0.0] * gpus
    where = {}
    for i in sorted(range(len(parts)), key=lambda i: (-table.get(parts[i], 12), i)):
        g = min(range(gpus), key=lambda g: (load[g], g))
        where[i] = g
        load[g] += table.get(parts[i], 12)
    return [where[i] for i in range(len(parts))], load


def deal(parts, gpus, minutes=None):
    """[gpu of each part], as dealt()."""
    return dealt(parts, gpus, minutes)[0]


def longest(parts, gpus, minutes=None):
    """Minutes of the most loaded GPU's parts when dealt() gives parts to that many GPUs."""
    return max(dealt(parts, gpus, minutes)[1])


def plan(parts, cores, local, allowed, minutes=None):
    """[(part, gpu, [cpus])]: the parts dealt to the GPUs (deal); each GPU's cores CPUs, local first."""
    gpus = min(len(parts), len(local))
    free = list(allowed)
    chosen = []
    for g in range(gpus):
        mine = [c for c in local[g] if c in free][:cores]
        mine += [c for c in free if c not in mine][:cores - len(mine)]
        for c in mine:
            free.remove(c)
        chosen.append(sorted(mine))
    short = [g for g in range(gpus) if len(chosen[g]) < cores]
    if short:  # too few CPUs for all: deal the allowed ones round
        print("one_call_plan: %d CPUs for %d GPUs x %d: CPUs are shared" % (len(allowed), gpus, cores),
              file=sys.stderr)
        for g in short:
            chosen[g] = sorted(set(chosen[g]) | set(allowed[(g * cores + k) % len(allowed)]
                                                    for k in range(cores - len(chosen[g]))))
    return [(part, g, chosen[g]) for part, g in zip(parts, deal(parts, gpus, minutes))]


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--parts")
    p.add_argument("--cores", type=int, default=16)
    p.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    p.add_argument("--slots", type=int, default=1)
    p.add_argument("--minutes", default="", help="PART=MINUTES[,...]: instead of MINUTES' for those parts")
    p.add_argument("--max-minutes", type=float, default=0,
                   help="fail when the most loaded GPU's parts would take longer (0: no limit)")
    p.add_argument("--first", type=int)
    p.add_argument("--of")
    a = p.parse_args()
    if a.first is not None:
        cpus = parse_list(a.of or "")
        if a.first < 1 or a.first > len(cpus):
            sys.exit("one_call_plan: --first %d of %d CPUs (%s)" % (a.first, len(cpus), a.of))
        print(format_list(cpus[:a.first]))
        return
    parts = (a.parts or "").split()
    if not parts or a.cores < 1:
        sys.exit("one_call_plan: --parts and --cores >= 1 are needed")
    try:
        minutes = parse_minutes(a.minutes)
    except ValueError as error:
        sys.exit("one_call_plan: %s" % error)
    allowed = sorted(os.sched_getaffinity(0))
    local = gpu_local_cpus() if a.device == "cuda" else [[] for _ in range(max(1, a.slots))]
    if not local:
        sys.exit("one_call_plan: nvidia-smi lists no GPU")
    gpus = min(len(parts), len(local))
    worst = longest(parts, gpus, minutes)
    if a.max_minutes > 0 and worst > a.max_minutes:
        need = [g for g in range(gpus + 1, len(parts) + 1) if longest(parts, g, minutes) <= a.max_minutes]
        sys.exit("one_call_plan: on %d GPU(s) the most loaded one's parts take ~%g minutes, over --max-minutes %g "
                 "(%s)" % (gpus, worst, a.max_minutes,
                           "%d GPUs would do" % need[0] if need else "no number of GPUs would: a part is longer"))
    for part, gpu, cpus in plan(parts, a.cores, local, allowed, minutes):
        print(part, gpu, format_list(cpus))


if __name__ == "__main__":
    main()
