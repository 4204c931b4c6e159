#!/usr/bin/env python3
"""bench/trace_runahead.py: how far ahead of the GPU the training thread ran, from a Chrome trace
of examples/train_resnet50.py --profile-trace (or bench/train-view.sh TRACES=1's
runs/*.trace.json.gz).

    python3 bench/trace_runahead.py runs/02-stoker-r0.trace.json.gz [more traces]

For each trace: the training stream (the stream with the most GPU time), the run-ahead of each of
its kernels (the kernel's start less its launch call's return, through the CUDA runtime events'
correlation ids: how much queued work the host had in hand) as percentiles, and the stream's gaps
split into time the host had not yet returned from the launch of the kernel that ended the gap
(host late: the training thread was held up) and the rest (the kernel was queued; the GPU ran
other work or waited on an event). Then the step threads' longest spans without a CUDA call, and
each thread's longest CUDA calls. Standard library only; not on a hot path.
"""
import argparse
import collections
import gzip
import json
import sys

GPU_CATS = ("kernel", "gpu_memcpy", "gpu_memset")
API_CATS = ("cuda_runtime", "cuda_driver")


def load(path):
    """The trace's complete ("X") events: (GPU activities, CUDA API calls)."""
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        events = json.load(f).get("traceEvents", [])
    gpu = [e for e in events if e.get("ph") == "X" and e.get("cat") in GPU_CATS
           and isinstance(e.get("args"), dict) and "stream" in e["args"]]
    api = [e for e in events if e.get("ph") == "X" and e.get("cat") in API_CATS and isinstance(e.get("args"), dict)]
    return gpu, api


def percentile(sorted_values, q):
    return sorted_values[min(len(sorted_values) - 1, int(q * len(sorted_values)))]


def analyse(gpu, api):
    """A dict of the figures main() prints; ValueError when the trace has no GPU activity."""
    if not gpu:
        raise ValueError("no GPU activity with a stream in the trace")
    busy = collections.Counter()
    for e in gpu:
        busy[e["args"]["stream"]] += float(e.get("dur", 0.0))
    train = max(busy, key=busy.get)
    launch = {e["args"].get("correlation"): e for e in api if "correlation" in e["args"]}
    kernels = sorted((e for e in gpu if e["args"]["stream"] == train), key=lambda e: e["ts"])
    ahead, threads = [], collections.Counter()
    for k in kernels:
        call = launch.get(k["args"].get("correlation"))
        if call:
            ahead.append(float(k["ts"]) - float(call["ts"]) - float(call.get("dur", 0.0)))
            threads[call["tid"]] += 1
    ahead.sort()
    gaps = late = 0.0
    end = float(kernels[0]["ts"]) + float(kernels[0].get("dur", 0.0))
    for k in kernels[1:]:
        start = float(k["ts"])
        if start > end:
            gaps += start - end
            call = launch.get(k["args"].get("correlation"))
            if call:  # the launch returned after the stream went idle: the host was late by that much
                late += min(start - end, max(0.0, float(call["ts"]) + float(call.get("dur", 0.0)) - end))
        end = max(end, start + float(k.get("dur", 0.0)))
    quiet = []
    for tid in threads:
        calls = sorted((e for e in api if e["tid"] == tid), key=lambda e: e["ts"])
        for a, b in zip(calls, calls[1:]):
            quiet.append((float(b["ts"]) - float(a["ts"]) - float(a.get("dur", 0.0)), tid, a["name"], b["name"]))
    quiet.sort(reverse=True)
    longest = collections.defaultdict(list)
    for e in api:
        longest["step" if e["tid"] in threads else "other"].append((float(e.get("dur", 0.0)), e["name"]))
    return {"stream": train, "streams": len(busy), "ahead_us": ahead, "gaps_us": gaps, "late_us": late,
            "step_threads": len(threads), "quiet": quiet[:5],
            "longest": {k: sorted(v, reverse=True)[:5] for k, v in longest.items()}}


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("traces", nargs="+")
    args = p.parse_args(argv)
    status = 0
    for path in args.traces:
        try:
            r = analyse(*load(path))
        except (OSError, ValueError) as error:
            print("%s: %s" % (path, error), file=sys.stderr)
            status = 1
            continue
        a = r["ahead_us"]
        print("%s: training stream %s of %d; %d step thread(s)" % (path, r["stream"], r["streams"], r["step_threads"]))
        if a:
            print("  run-ahead ms: p5 %.1f  p25 %.1f  p50 %.1f  p75 %.1f  p95 %.1f" % tuple(
                percentile(a, q) / 1000.0 for q in (0.05, 0.25, 0.5, 0.75, 0.95)))
        print("  training-stream gaps %.1f ms, of which host late %.1f ms" % (r["gaps_us"] / 1000.0, r["late_us"] / 1000.0))
        for span, tid, before, after in r["quiet"]:
            print("  no CUDA call for %.1f ms on step thread %s (%s -> %s)" % (span / 1000.0, tid, before, after))
        for who, calls in sorted(r["longest"].items()):
            print("  longest calls, %s threads: %s" % (who, ", ".join("%s %.1f ms" % (n, d / 1000.0) for d, n in calls)))
    return status


if __name__ == "__main__":
    sys.exit(main())
