#!/usr/bin/env python3
"""bench/train_view.py: the training view (bench/train-view.sh runs it on the GPU
machine): ResNet-18 training throughput fed by each loader, under the project's protocol.

Each run is one fresh process of examples/train_resnet50.py (--loader L --arch resnet18
--warmup-seconds W --seconds S): a warm-up of at least W s excluded (the window starts after the
first step ending past W s, after a device synchronize), a window of at least S s ended by a
device synchronize, images counted as delivered to the step. The runs are REPEATS blocks, each
block one run of every loader in an order shuffled by random.Random(seed) (so a deadline drops
the last block's runs first, and every earlier block is whole). --cores N below the machine's
CPUs runs every process under `taskset -c 0-(N-1)`: the whole process tree (the training thread,
DataLoader worker processes, stoker's and DALI's threads) shares those N CPUs, because a worker
count alone limits none of them (each loader has threads besides its workers). The worker count
is the same for every loader (--workers). The synthetic loader (one batch made on the device,
fed again and again) is the step's ceiling; each row's shortfall is 1 - img/s / ceiling.

A loader may carry options, each its own row: NAME+KEY=VALUE[+KEY=VALUE] (VARIANT_FLAGS: decode=mixed|cpu
and hw=F for stoker and dali, priority=high|normal and tuning=KEY=N[/KEY=N] (STOKER_MIXED_TUNING) for
stoker, fusedblocks=N (STOKER_FUSED_BLOCKS), fusedsplit=N (STOKER_FUSED_SPLIT), pinshrink=on|off,
packed=on|off (STOKER_PACKED_UPLOAD) and sharedupload=on|off (STOKER_SHARED_UPLOAD),
torchupload=record|clone (STOKER_TORCH_UPLOAD) for stoker), e.g. `stoker+priority=normal` or
`dali+decode=cpu`, so a knob is tried for both loaders in the same call (equal tuning).
--loaders-from RUN.json (an earlier call's diagnostic run of variants, e.g. one repeat of short
windows) takes, for each loader in it, the variant with the highest median img/s, plus synthetic:
each loader measured at its best setting, the choice named in the table.

--gpus G (default 1) runs each process under torchrun (`python -m torch.distributed.run --standalone
--nproc_per_node G`): one rank per GPU, DistributedDataParallel over NCCL, each loader reading its
rank's shard (the example's own wiring); the whole job's process tree shares --cores CPUs (taskset),
each rank's loader has --workers workers (default cores / G - 2), and every loader keeps its own
placement inside those CPUs (as users run them). The row's img/s is the job's: every rank's images
over the slowest rank's window; device MB is rank 0's GPU; cores busy the machine's. A run whose
result line names another number of ranks is an error. No profile under torchrun.

--profile N profiles N more steps after the first run of each loader (outside the window) and
records the GPU time per step of every kernel and copy in the process; the loader's share is
estimated as that total less the synthetic run's (same step, no loader). Profiling gives way to
runs: it is skipped where the runs left would fit the hard deadline only without it.

Writes OUT/run.json (every run, the order, the seed, what was dropped) and OUT/table.md, and
each run's output to OUT/runs/. Standard library only. Not on stoker's hot path.
"""
import argparse, gzip, json, os, random, re, shutil, signal, statistics, subprocess, sys, time

LINE = re.compile(r"^train_resnet50: loader=")
PROFILE = re.compile(r"^profile: (\d+) steps, GPU busy ([0-9.]+) ms per step")


# A loader variant's options: key -> (the example's flag, the loaders that take it, allowed values or None for a float).
VARIANT_FLAGS = {"decode": ("--decode", ("stoker", "dali"), ("mixed", "cpu")),
                 "hw": ("--hw-decoder-load", ("stoker", "dali"), None),
                 "priority": ("--stream-priority", ("stoker",), ("high", "normal")),
                 "pin": ("--pin-threads", ("stoker",), ("on", "off")),
                 "pinshrink": ("--pinned-shrink", ("stoker",), ("on", "off")),  # STOKER_PINNED_SHRINK
                 "packed": ("--packed-upload", ("stoker",), ("on", "off")),  # STOKER_PACKED_UPLOAD
                 "sharedupload": ("--shared-upload", ("stoker",), ("on", "off")),  # STOKER_SHARED_UPLOAD
                 "torchupload": ("--torch-upload", ("stoker",), ("record", "clone")),  # STOKER_TORCH_UPLOAD
                 # STOKER_FUSED_BLOCKS: the looping grid's blocks, 0 for one block a tile
                 "fusedblocks": ("--fused-blocks", ("stoker",), range(0, 65536)),
                 # STOKER_FUSED_SPLIT: the fused kernel's batch in N launches
                 "fusedsplit": ("--fused-split", ("stoker",), range(1, 65536)),
                 # this loader's worker count instead of --workers (a knob swept for every loader alike)
                 "workers": ("--workers", ("stoker", "dali", "pytorch"), range(1, 257)),
                 "prefetch": ("--prefetch", ("stoker", "dali"), range(1, 257)),  # prefetch_queue_depth
                 # STOKER_MIXED_TUNING's KEY=N pairs joined by '/' (a loader list is comma-separated)
                 "tuning": ("--mixed-tuning", ("stoker",), "KEY=N[/KEY=N]")}
LOADER_NAMES = ("synthetic", "stoker", "pytorch", "dali")


def loader_flags(spec):
    """'stoker+priority=normal+hw=0.65' -> ('stoker', ['--stream-priority', 'normal', '--hw-decoder-load', '0.65']);
    ValueError naming the part that is wrong."""
    name, *options = spec.split("+")
    if name not in LOADER_NAMES:
        raise ValueError("unknown loader %r in %r (one of %s)" % (name, spec, ", ".join(LOADER_NAMES)))
    flags = []
    for option in options:
        key, _, value = option.partition("=")
        if key not in VARIANT_FLAGS or name not in VARIANT_FLAGS[key][1]:
            takes = [k for k, v in VARIANT_FLAGS.items() if name in v[1]]
            raise ValueError("%r in %r: %s takes %s" % (option, spec, name, ", ".join(takes) or "no options"))
        flag, _, allowed = VARIANT_FLAGS[key]
        if allowed is None:
            try:
                ok = 0.0 <= float(value) <= 1.0
            except ValueError:
                ok = False
        elif isinstance(allowed, range):
            ok = value.isdigit() and int(value) in allowed
        elif isinstance(allowed, str):
            ok = re.fullmatch(r"[a-z_]+=\d+(/[a-z_]+=\d+)*", value) is not None
            value = value.replace("/", ",")
        else:
            ok = value in allowed
        if not ok:
            must = ("a whole number in [%d, %d]" % (allowed.start, allowed.stop - 1) if isinstance(allowed, range)
                    else allowed if isinstance(allowed, str) else " or ".join(allowed)) if allowed else "a number in [0, 1]"
            raise ValueError("%r in %r: %s must be %s" % (option, spec, key, must))
        flags += [flag, value]
    return name, flags


def best_variants(rows):
    """A run.json's rows -> ['synthetic', the best variant of each other loader by median img/s], in
    LOADER_NAMES' order; ValueError when no row has a measured rate."""
    best = {}
    for spec, row in rows.items():
        name = spec.split("+")[0]
        rate = (row.get("img_s") or {}).get("median")
        if name != "synthetic" and rate and (name not in best or rate > best[name][1]):
            best[name] = (spec, rate)
    if not best:
        raise ValueError("no loader row with a measured img/s")
    return ["synthetic"] + [best[n][0] for n in LOADER_NAMES if n in best]


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", required=True)
    p.add_argument("--data-note", default="")
    p.add_argument("--loaders", default="synthetic,stoker,pytorch,dali")
    p.add_argument("--loaders-from", default=None, metavar="RUN.json",
                   help="instead of --loaders: synthetic and each loader's best variant in that run (best_variants)")
    p.add_argument("--cores", type=int, default=os.cpu_count())
    p.add_argument("--gpus", type=int, default=1, help="ranks under torchrun, one per GPU (1: one process, no torchrun)")
    p.add_argument("--cpus", default=None, help="the taskset CPU list when --cores is below the machine's "
                   "(default 0-(cores-1); e.g. the GPU's NUMA node's CPUs)")
    p.add_argument("--workers", type=int, default=None,
                   help="each rank's; default: cores / gpus - 2 (the example's own rule)")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--warmup-seconds", type=float, default=10.0)
    p.add_argument("--window", type=float, default=30.0)
    p.add_argument("--order-seed", type=int, default=None)
    p.add_argument("--hard-deadline", type=float, default=0, help="epoch seconds: no run starts that would end later")
    p.add_argument("--kill-deadline", type=float, default=0, help="epoch seconds: a run still going is killed then")
    p.add_argument("--overhead", type=float, default=8.0,
                   help="first guess of a run's seconds beyond warm-up + window (start-up, teardown); "
                        "replaced by the largest measured + 2 s once a run has ended")
    p.add_argument("--batch-size", type=int, default=256)
    p.add_argument("--size", type=int, default=160)
    p.add_argument("--arch", default="resnet18")
    p.add_argument("--profile", type=int, default=20, help="steps profiled after each loader's first run (0: none)")
    p.add_argument("--traces", action="store_true",
                   help="keep each profiled run's Chrome trace as runs/NAME.trace.json.gz (with --profile)")
    p.add_argument("--device", default="cuda")
    p.add_argument("--example", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples",
                                                     "train_resnet50.py"))
    p.add_argument("--python", default=sys.executable)
    p.add_argument("--command", default="", help="the command line that ran this, for the table's header")
    p.add_argument("--provenance", default="", help="commit, versions, GPU: one line for the table's header")
    p.add_argument("--ceiling-from", default=None,
                   help="run.json of an earlier call whose rows include synthetic: its row is the ceiling when "
                        "--loaders has no synthetic (a call then fits 3 loaders x 3 repeats; the table says so)")
    p.add_argument("--scaling-from", default=None, metavar="RUN.json",
                   help="with --gpus 2 or more: the run.json of the same view on one GPU; each loader's scaling "
                        "(its img/s over gpus x that row's) goes into the table and run.json")
    p.add_argument("--out", required=True)
    args = p.parse_args()
    args.loaders = [x.strip() for x in args.loaders.split(",") if x.strip()]
    if args.loaders_from:
        try:
            with open(args.loaders_from) as f:
                args.loaders = best_variants(json.load(f)["rows"])
        except (OSError, ValueError, KeyError, TypeError) as error:
            p.error("--loaders-from %s: not a train_view run.json with rows (%s)" % (args.loaders_from, error))
    for spec in args.loaders:
        try:
            loader_flags(spec)
        except ValueError as error:
            p.error("--loaders: %s" % error)
    if args.cpus is None:
        args.cpus = "0-%d" % (args.cores - 1)
    if args.gpus < 1:
        p.error("--gpus: %d: at least 1" % args.gpus)
    if args.workers is None:
        args.workers = max(1, args.cores // args.gpus - 2)
    if args.order_seed is None:
        args.order_seed = int(time.time()) % 100000
    return args


def block_order(loaders, repeats, seed):
    """REPEATS blocks, each every loader once in a shuffled order: [(loader, repeat)]."""
    rng = random.Random(seed)
    order = []
    for repeat in range(repeats):
        block = list(loaders)
        rng.shuffle(block)
        order += [(name, repeat) for name in block]
    return order


def run_command(args, spec, repeat, profile=True, trace=None):
    name, flags = loader_flags(spec)
    # the variant's flags last: the example takes an option's last value (workers=N beats --workers)
    launcher = [args.python]
    if args.gpus > 1:  # one rank per GPU; rendezvous on this host only
        launcher += ["-m", "torch.distributed.run", "--standalone", "--nnodes", "1", "--nproc_per_node", str(args.gpus)]
    cmd = [*launcher, args.example, "--data", args.data, "--loader", name, "--arch", args.arch,
           "--image-size", str(args.size), "--batch-size", str(args.batch_size), "--workers", str(args.workers),
           "--warmup-seconds", str(args.warmup_seconds), "--seconds", str(args.window), "--steps", "100000000",
           "--device", args.device, *flags]
    if profile and wants_profile(args, repeat):
        cmd += ["--profile", str(args.profile)]
        if trace:
            cmd += ["--profile-trace", trace]
    if limited(args):
        cmd = ["taskset", "-c", args.cpus] + cmd
    return cmd


def limited(args):
    """True when the runs go under `taskset -c CPUS` (fewer cores than the machine's)."""
    return args.cores < (os.cpu_count() or args.cores)


def cpu_list(text):
    """'0-7,12' (taskset's, sysfs local_cpulist's) -> {0, ..., 7, 12}; ValueError on a range that
    runs backwards or a part that is not a number (bench/lease/one_call_plan.py reads sysfs with it)."""
    cpus = set()
    for part in text.strip().split(","):
        if not part:
            continue
        low, _, high = part.partition("-")
        first, last = int(low), int(high or low)
        if last < first:
            raise ValueError("bad CPU range %r" % part)
        cpus.update(range(first, last + 1))
    return cpus


def wants_profile(args, repeat):
    return args.profile > 0 and repeat == 0 and args.device == "cuda" and args.gpus == 1


PROFILE_S = 8.0  # a first guess of what --profile adds to a run (profiler start-up, the steps)


def parse_run(text):
    """The example's result line as a dict of its key=value fields (numbers where they parse),
    plus profile_ms_per_step from its --profile summary; {} when there is no result line."""
    fields = {}
    for line in text.splitlines():
        if LINE.match(line):
            for key, value in re.findall(r"(\S+?)=(\S+)", line[len("train_resnet50: "):]):
                try:
                    fields[key] = float(value.rstrip("%"))
                except ValueError:
                    fields[key] = value
        m = PROFILE.match(line)
        if m:
            fields["profile_steps"], fields["profile_ms_per_step"] = int(m.group(1)), float(m.group(2))
    return fields


def one_run(args, name, repeat, index, timeout, profile):
    safe = re.sub(r"[^A-Za-z0-9+=.,_-]", "_", name)  # tuning=sets=2/lowest=1: no '/' in a file name
    log = os.path.join(args.out, "runs", "%02d-%s-r%d.log" % (index, safe, repeat))
    trace = log[:-len(".log")] + ".trace.json" if args.traces else None
    cmd = run_command(args, name, repeat, profile, trace)
    preexec = None
    if cmd[0] == "taskset" and not shutil.which("taskset"):  # the same limit without util-linux
        cpus, cmd = cpu_list(args.cpus), cmd[3:]
        preexec = lambda: os.sched_setaffinity(0, cpus)  # noqa: E731 (inherited by every child)
    t0 = time.time()
    # A session of its own: at the deadline the whole tree goes (DataLoader workers hold the pipe).
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True, preexec_fn=preexec)
    try:
        text, _ = proc.communicate(timeout=timeout)
        rc = proc.returncode
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        text, _ = proc.communicate()
        rc = "killed at the deadline after %.0f s" % timeout
    wall = time.time() - t0
    with open(log, "w") as f:
        f.write("$ %s%s\n%s" % (" ".join(cmd), "  # CPUs %s set by sched_setaffinity (no taskset here)" % args.cpus
                                 if preexec else "", text))
    fields = parse_run(text)
    if trace and os.path.exists(trace):  # about a tenth of the size; Perfetto opens .json.gz
        with open(trace, "rb") as src, gzip.open(trace + ".gz", "wb") as dst:
            shutil.copyfileobj(src, dst)
        os.unlink(trace)
    run = {"loader": name, "repeat": repeat, "index": index, "rc": rc, "wall_s": round(wall, 1),
           "command": " ".join(cmd) + ("  # CPUs %s by sched_setaffinity" % args.cpus if preexec else ""), "log": os.path.relpath(log, args.out),
           "img_s": fields.get("img/s"), "window_s": fields.get("seconds"), "warmup_s": fields.get("warmup_s"),
           "steps": fields.get("steps"), "cpus_busy": fields.get("cpus_busy"),
           "gpu_idle_share_pct": fields.get("gpu_idle_share"), "host_in_next_ms": fields.get("host_in_next_ms_per_step"),
           "profile_ms_per_step": fields.get("profile_ms_per_step"), "first_batch_s": fields.get("first_batch_s"),
           "device_mb": fields.get("device_mb"), "result_line": bool(fields)}
    ranks = fields.get("ranks", 1.0)
    if isinstance(run["steps"], float) and isinstance(fields.get("batch"), float) and isinstance(ranks, float):
        run["images"] = int(run["steps"] * fields["batch"] * ranks)  # rank 0's steps; every rank takes as many
    if rc != 0 or not fields:
        tail = text.strip().splitlines()[-3:]
        run["error"] = " / ".join(tail)[-400:]
    elif ranks != float(args.gpus):
        run["error"] = "the run had %s ranks, not --gpus %d" % (fields.get("ranks"), args.gpus)
    return run


def execute(args, order):
    runs, dropped, overhead, measured = [], [], args.overhead, []
    for index, (name, repeat) in enumerate(order):
        now = time.time()
        base = args.warmup_seconds + args.window + overhead
        extras = sum(PROFILE_S for _, r in order[index:] if wants_profile(args, r))
        # Profiling gives way to runs: skipped when the runs left fit the deadline only without it.
        profile = wants_profile(args, repeat) and not (
            args.hard_deadline and now + base * (len(order) - index) + extras > args.hard_deadline)
        if wants_profile(args, repeat) and not profile:
            print("train_view: no --profile for %s: the runs left fit the deadline only without it" % name, flush=True)
        extra = PROFILE_S if profile else 0.0
        estimate = base + extra
        if args.hard_deadline and now + estimate > args.hard_deadline:
            dropped.append({"loader": name, "repeat": repeat, "index": index,
                            "why": "would end about %.0f s past the hard deadline (estimate %.0f s a run)"
                                   % (now + estimate - args.hard_deadline, estimate)})
            print("train_view: DROPPED %s repeat %d: %s" % (name, repeat, dropped[-1]["why"]), flush=True)
            continue
        timeout = (args.kill_deadline - now) if args.kill_deadline else 10 * estimate
        print("train_view: run %d/%d %s repeat %d (estimate %.0f s)" % (index + 1, len(order), name, repeat, estimate),
              flush=True)
        run = one_run(args, name, repeat, index, max(5.0, timeout), profile)
        run["profiled"] = profile
        runs.append(run)
        print("train_view:   -> img/s %s, window %s s, warm-up %s s, cores busy %s, wall %.0f s%s"
              % (run["img_s"], run["window_s"], run["warmup_s"], run["cpus_busy"], run["wall_s"],
                 (" ERROR rc=%s %s" % (run["rc"], run.get("error", ""))) if run.get("error") else ""), flush=True)
        if run["result_line"] and isinstance(run["window_s"], float) and isinstance(run["warmup_s"], float):
            # Start-up, the last step, teardown (and the profile, once): the largest seen, 2 s to spare.
            measured.append(run["wall_s"] - run["window_s"] - run["warmup_s"] - extra)
            overhead = max(measured) + 2.0
    return runs, dropped


def summary(values):
    values = [v for v in values if isinstance(v, (int, float)) and v == v]
    if not values:
        return None
    return {"median": statistics.median(values), "min": min(values), "max": max(values), "n": len(values)}


def rows_of(args, runs):
    rows = {}
    for name in args.loaders:
        mine = [r for r in runs if r["loader"] == name and r["rc"] == 0 and r["result_line"] and not r.get("error")]
        rows[name] = {"runs": len([r for r in runs if r["loader"] == name]), "ok": len(mine),
                      "img_s": summary([r["img_s"] for r in mine]), "cpus_busy": summary([r["cpus_busy"] for r in mine]),
                      "gpu_idle_share_pct": summary([r["gpu_idle_share_pct"] for r in mine]),
                      "window_s": summary([r["window_s"] for r in mine]), "warmup_s": summary([r["warmup_s"] for r in mine]),
                      "first_batch_s": summary([r.get("first_batch_s") for r in mine]),
                      "device_mb": summary([r.get("device_mb") for r in mine]),
                      "profile_ms_per_step": next((r["profile_ms_per_step"] for r in mine
                                                   if r["profile_ms_per_step"] is not None), None)}
        row = rows[name]
        problems = []
        if row["ok"] < 3:
            problems.append("%d good runs (< 3)" % row["ok"])
        if row["warmup_s"] and row["warmup_s"]["min"] < 10.0:
            problems.append("warm-up %.1f s (< 10)" % row["warmup_s"]["min"])
        if row["window_s"] and row["window_s"]["min"] < 30.0:
            problems.append("window %.1f s (< 30)" % row["window_s"]["min"])
        if row["cpus_busy"] and row["cpus_busy"]["max"] > args.cores + 0.5:
            problems.append("%.1f cores busy > the %d allowed (something ran outside the limit)"
                            % (row["cpus_busy"]["max"], args.cores))
        row["protocol"] = not problems
        row["problems"] = problems
    synthetic = rows.get("synthetic") or borrowed_ceiling(args) or {}
    ceiling = synthetic.get("img_s")
    base = synthetic.get("profile_ms_per_step")
    for name, row in rows.items():
        if ceiling and row["img_s"] and name != "synthetic":
            c = ceiling["median"]
            row["shortfall"] = {"median": 1 - row["img_s"]["median"] / c, "min": 1 - row["img_s"]["max"] / c,
                                "max": 1 - row["img_s"]["min"] / c}
        if base is not None and row["profile_ms_per_step"] is not None and name != "synthetic":
            row["loader_gpu_ms_per_step"] = row["profile_ms_per_step"] - base
    for name, scaled in (scaling(args, rows) or {}).items():
        rows[name]["scaling"] = scaled
    return rows


def earlier_run(path, option, args, keys):
    """(rows, settings) of an earlier call's run.json given as `option`; exits naming the file when
    it is not one, or when one of its settings in `keys` is not this run's (another model's rows
    compare with nothing here). A run.json from before --gpus ran one process."""
    try:
        with open(path) as f:
            record = json.load(f)
        rows, theirs = record["rows"], dict(record.get("settings") or {})
    except (OSError, ValueError, KeyError, TypeError) as e:
        sys.exit("train_view: %s %s: not a train_view run.json (%s)" % (option, path, e))
    theirs.setdefault("gpus", 1)
    for key in keys:
        if key in theirs and theirs[key] != getattr(args, key):
            sys.exit("train_view: %s %s: its %s is %s, this run's %s" % (option, path, key, theirs[key],
                                                                       getattr(args, key)))
    return rows, theirs


def borrowed_ceiling(args):
    """The synthetic row of --ceiling-from's run.json (None without it). A missing file or row is an
    error naming the file: a shortfall column without its ceiling would be silently empty."""
    if not args.ceiling_from or "synthetic" in args.loaders:
        return None
    rows, _ = earlier_run(args.ceiling_from, "--ceiling-from", args, ("arch", "size", "batch_size", "gpus"))
    row = rows.get("synthetic") if isinstance(rows, dict) else None
    if row is None:
        sys.exit("train_view: --ceiling-from %s: no synthetic row there" % args.ceiling_from)
    if not row.get("img_s"):
        sys.exit("train_view: --ceiling-from %s: its synthetic row has no good run" % args.ceiling_from)
    return row


def scaling(args, rows):
    """{loader: {median, min, max}}: each loader's img/s over --gpus times its row in --scaling-from's
    one-GPU run (None without it). The range pairs the extremes (min over the other's max). A file
    that is not the same view on one GPU is an error naming it."""
    source = getattr(args, "scaling_from", None)
    if not source:
        return None
    their_rows, theirs = earlier_run(source, "--scaling-from", args, ("arch", "size", "batch_size"))
    if theirs["gpus"] != 1 or args.gpus < 2:
        sys.exit("train_view: --scaling-from %s: it ran on %s GPUs and this run on %d (one against several)"
                 % (source, theirs["gpus"], args.gpus))
    out = {}
    for name, row in rows.items():
        one, many = (their_rows.get(name) or {}).get("img_s"), row.get("img_s")
        if one and many and one["min"] > 0:
            g = float(args.gpus)
            out[name] = {"median": many["median"] / (g * one["median"]), "min": many["min"] / (g * one["max"]),
                         "max": many["max"] / (g * one["min"])}
    return out


def fmt_range(s, spec="%.0f"):
    if not s:
        return "–"
    return (spec + " (" + spec + "–" + spec + ")") % (s["median"], s["min"], s["max"])


def table(args, rows, runs, dropped, order):
    arch = {"resnet18": "ResNet-18", "resnet50": "ResNet-50"}.get(args.arch, args.arch)
    gpus = args.gpus
    lines = ["### Training view: %s at %d px, %s%d cores (%s), %d workers per loader%s" % (
        arch, args.size, "%d GPUs under torchrun (DDP), " % gpus if gpus > 1 else "", args.cores,
        "taskset -c %s" % args.cpus if limited(args) else "the whole machine: %d CPUs" % (os.cpu_count() or 0),
        args.workers, " and rank" if gpus > 1 else ""), ""]
    if args.command:
        lines.append("Command: `%s`  " % args.command)
    if args.provenance:
        lines.append("Provenance: %s  " % args.provenance)
    lines.append("Data: %s  " % (args.data_note or args.data))
    lines.append("Settings: --arch %s --image-size %d --batch-size %d --workers %d, warm-up >= %g s excluded, "
                 "window >= %g s (device synchronize at both ends), %d repeats in shuffled blocks, seed %d; "
                 "order: %s  " % (args.arch, args.size, args.batch_size, args.workers, args.warmup_seconds,
                                  args.window, args.repeats, args.order_seed,
                                  " ".join("%s#%d" % (n, r) for n, r in order)))
    if getattr(args, "loaders_from", None):
        lines.append("Loaders: each at its best variant (median img/s) in %s  " % args.loaders_from)
    borrowed = borrowed_ceiling(args)
    if borrowed:
        lines.append("Ceiling: the synthetic row of %s (another call: %s runs, img/s %s)  " % (
            args.ceiling_from, borrowed.get("ok"), fmt_range(borrowed["img_s"])))
    lines += ["", "| loader | runs ok | img/s median (range) | shortfall from synthetic | CPU cores busy | "
              "img/s per busy core | GPU idle waiting for data % | GPU ms/step, all kernels (loader's: less "
              "synthetic's) | device MB | first batch s | protocol |",
              "|---|---|---|---|---|---|---|---|---|---|---|"]
    for name in args.loaders:
        row = rows[name]
        short = row.get("shortfall")
        short_text = ("%.1f%% (%.1f–%.1f%%)" % (100 * short["median"], 100 * short["min"], 100 * short["max"])
                      if short else ("ceiling" if name == "synthetic" else "–"))
        prof = row["profile_ms_per_step"]
        prof_text = "–" if prof is None else "%.2f" % prof
        if row.get("loader_gpu_ms_per_step") is not None:
            prof_text += " (%+.2f)" % row["loader_gpu_ms_per_step"]
        rate, busy = row["img_s"], row["cpus_busy"]
        per_core = "%.0f" % (rate["median"] / busy["median"]) if rate and busy and busy["median"] > 0 else "–"
        lines.append("| %s | %d/%d | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            name, row["ok"], row["runs"], fmt_range(row["img_s"]), short_text, fmt_range(row["cpus_busy"], "%.1f"),
            per_core, fmt_range(row["gpu_idle_share_pct"], "%.1f"), prof_text, fmt_range(row.get("device_mb")),
            fmt_range(row.get("first_batch_s"), "%.2f"), "yes" if row["protocol"] else "no: " + "; ".join(row["problems"])))
    lines.append("\nDevice MB: the whole GPU's memory in use at the window's end (cudaMemGetInfo; each run alone on "
                 "the GPU, the model's memory included alike). First batch: from the loader's creation to its first "
                 "batch in the training loop (the model is built in between, alike for every loader).")
    if getattr(args, "scaling_from", None):
        scaled = ["%s %s" % (n, fmt_range(rows[n]["scaling"], "%.3f")) for n in args.loaders if "scaling" in rows[n]]
        lines.append("\nScaling from 1 GPU (img/s over %d x the one-GPU row of %s): %s." % (
            args.gpus, args.scaling_from, "; ".join(scaled) or "no loader in both"))
    for d in dropped:
        lines.append("\nDropped: %s repeat %d (%s)." % (d["loader"], d["repeat"], d["why"]))
    for r in runs:
        if r.get("error"):
            lines.append("\nFailed: %s repeat %d, rc %s: %s (log %s)." % (r["loader"], r["repeat"], r["rc"],
                                                                       r["error"], r["log"]))
    return "\n".join(lines) + "\n"


def main():
    args = parse_args()
    os.makedirs(os.path.join(args.out, "runs"), exist_ok=True)
    order = block_order(args.loaders, args.repeats, args.order_seed)
    plan = len(order) * (args.warmup_seconds + args.window + args.overhead)
    print("train_view: seed %d; order %s; planned about %.0f s for %d runs%s" % (
        args.order_seed, " ".join("%s#%d" % o for o in order), plan, len(order),
        ("; %.0f s left before the hard deadline" % (args.hard_deadline - time.time())) if args.hard_deadline else ""),
        flush=True)
    runs, dropped = execute(args, order)
    rows = rows_of(args, runs)
    text = table(args, rows, runs, dropped, order)
    with open(os.path.join(args.out, "table.md"), "w") as f:
        f.write(text)
    record = {"command": args.command, "provenance": args.provenance, "data": args.data, "data_note": args.data_note,
              "ceiling_from": args.ceiling_from if borrowed_ceiling(args) else None,
              "scaling_from": args.scaling_from,
              "settings": {k: getattr(args, k) for k in ("loaders", "cores", "gpus", "cpus", "workers", "repeats", "warmup_seconds",
                                                         "window", "batch_size", "size", "arch", "profile", "device")},
              "order_seed": args.order_seed, "order": order, "runs": runs, "dropped": dropped, "rows": rows}
    with open(os.path.join(args.out, "run.json"), "w") as f:
        json.dump(record, f, indent=1)
    print(text, flush=True)
    return 0 if runs and all(r["rc"] == 0 and r["result_line"] and not r.get("error") for r in runs) else 1


if __name__ == "__main__":
    sys.exit(main())
