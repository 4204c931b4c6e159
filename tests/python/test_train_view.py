"""bench/train_view.py's table arithmetic, without a GPU: a borrowed ceiling (--ceiling-from, the
synthetic row of an earlier call's run.json) gives the same shortfalls as a synthetic row run in
the same call, the table names where it came from and the model, and a run.json without that row
(or measured for another model, size or batch) is an error naming the file."""
import gzip
import json
import os
import sys
import types

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "bench"))
import train_view  # noqa: E402


def run(loader, img_s, rep, first_batch_s=None, device_mb=None):
    return {"loader": loader, "repeat": rep, "rc": 0, "result_line": "x", "img_s": img_s, "cpus_busy": 8.0,
            "gpu_idle_share_pct": 1.0, "window_s": 30.0, "warmup_s": 10.0, "profile_ms_per_step": None,
            "first_batch_s": first_batch_s, "device_mb": device_mb}


def options(loaders, ceiling_from=None):
    return types.SimpleNamespace(loaders=loaders, ceiling_from=ceiling_from, cores=16, gpus=1, cpus="0-15", workers=14,
                                 command="", provenance="", data="d", data_note="", arch="resnet18", size=160,
                                 batch_size=256, warmup_seconds=10.0, window=30.0, repeats=3, order_seed=1)


def test_borrowed_ceiling_gives_the_same_shortfall(tmp_path):
    ceiling_runs = [run("synthetic", v, i) for i, v in enumerate([20000.0, 19000.0, 21000.0])]
    loader_runs = [run("stoker", v, i) for i, v in enumerate([10000.0, 11000.0, 12000.0])]
    together = train_view.rows_of(options(["synthetic", "stoker"]), ceiling_runs + loader_runs)
    path = tmp_path / "run.json"
    path.write_text(json.dumps({"rows": train_view.rows_of(options(["synthetic"]), ceiling_runs)}))
    borrowed = train_view.rows_of(options(["stoker"], str(path)), loader_runs)
    assert borrowed["stoker"]["shortfall"] == together["stoker"]["shortfall"]
    assert borrowed["stoker"]["shortfall"]["median"] == pytest.approx(1 - 11000.0 / 20000.0)
    text = train_view.table(options(["stoker"], str(path)), borrowed, loader_runs, [], [])
    assert "Ceiling: the synthetic row of %s" % path in text
    assert "45.0% (40.0–50.0%)" in text


def test_no_ceiling_without_the_option():
    rows = train_view.rows_of(options(["stoker"]), [run("stoker", 100.0, 0)])
    assert "shortfall" not in rows["stoker"]


def test_missing_synthetic_row_names_the_file(tmp_path):
    path = tmp_path / "other.json"
    path.write_text(json.dumps({"rows": {"stoker": {}}}))
    with pytest.raises(SystemExit, match="other.json: no synthetic row"):
        train_view.rows_of(options(["stoker"], str(path)), [run("stoker", 100.0, 0)])


def test_ceiling_of_another_model_is_refused(tmp_path):
    ceiling_runs = [run("synthetic", 4000.0, 0)]
    path = tmp_path / "r50.json"
    path.write_text(json.dumps({"rows": train_view.rows_of(options(["synthetic"]), ceiling_runs),
                                "settings": {"arch": "resnet50", "size": 224, "batch_size": 256}}))
    with pytest.raises(SystemExit, match="r50.json: its arch is resnet50, this run's resnet18"):
        train_view.rows_of(options(["stoker"], str(path)), [run("stoker", 100.0, 0)])


def test_ceiling_of_one_gpu_is_refused_for_two(tmp_path):
    """A run.json without gpus (before --gpus) is one process's: no ceiling for a two-rank job."""
    path = tmp_path / "one.json"
    path.write_text(json.dumps({"rows": train_view.rows_of(options(["synthetic"]), [run("synthetic", 4000.0, 0)]),
                                "settings": {"arch": "resnet18", "size": 160, "batch_size": 256}}))
    two = options(["stoker"], str(path))
    two.gpus = 2
    with pytest.raises(SystemExit, match="one.json: its gpus is 1, this run's 2"):
        train_view.rows_of(two, [run("stoker", 100.0, 0)])
    assert train_view.rows_of(options(["stoker"], str(path)), [run("stoker", 100.0, 0)])["stoker"]["shortfall"]


def test_table_names_the_model_and_size():
    rows = train_view.rows_of(options(["stoker"]), [run("stoker", 100.0, 0)])
    text = train_view.table(options(["stoker"]), rows, [run("stoker", 100.0, 0)], [], [])
    assert text.startswith("### Training view: ResNet-18 at 160 px, 16 cores")


def test_result_line_fields_reach_the_table():
    line = ("train_resnet50: loader=stoker arch=resnet18 image_size=160 device=cuda ranks=1 decode=mixed "
            "img/s=12000.0 seconds=30.02 warmup_s=10.0 steps=1400 batch=256 cpus_busy=8.0 gpu_idle_share=7.3% "
            "first_batch_s=0.61 device_mb=5123 final_loss=4.1")
    fields = train_view.parse_run(line)
    assert fields["first_batch_s"] == 0.61 and fields["device_mb"] == 5123.0
    runs = [run("stoker", 12000.0 + i, i, first_batch_s=0.5 + i / 10, device_mb=5000.0 + i) for i in range(3)]
    rows = train_view.rows_of(options(["stoker"]), runs)
    assert rows["stoker"]["first_batch_s"]["median"] == pytest.approx(0.6)
    text = train_view.table(options(["stoker"]), rows, runs, [], [])
    assert "| 5001 (5000–5002) | 0.60 (0.50–0.70) | yes |" in text
    assert "| 8.0 (8.0–8.0) | 1500 | 1.0 (1.0–1.0) |" in text  # 12,001 img/s on 8 busy cores


def test_loader_variants_become_the_examples_flags():
    assert train_view.loader_flags("stoker") == ("stoker", [])
    assert train_view.loader_flags("stoker+priority=normal+hw=0.65") == (
        "stoker", ["--stream-priority", "normal", "--hw-decoder-load", "0.65"])
    assert train_view.loader_flags("dali+decode=cpu") == ("dali", ["--decode", "cpu"])
    assert train_view.loader_flags("stoker+tuning=sets=2/lowest=1") == (
        "stoker", ["--mixed-tuning", "sets=2,lowest=1"])  # '/' because loader lists are comma-separated
    args = types.SimpleNamespace(python="py", example="ex.py", data="d", arch="resnet50", size=224, batch_size=256,
                                 workers=14, warmup_seconds=10.0, window=30.0, device="cuda", profile=0, cores=16,
                                 gpus=1, cpus="0-15")
    cmd = train_view.run_command(args, "dali+hw=0.8", 0)
    assert cmd[cmd.index("--loader") + 1] == "dali" and cmd[cmd.index("--hw-decoder-load") + 1] == "0.8"
    # a variant's worker count is the one the example takes: argparse keeps an option's last value
    cmd = train_view.run_command(args, "stoker+workers=6+pin=off", 0)
    workers = [cmd[i + 1] for i, flag in enumerate(cmd) if flag == "--workers"]
    assert workers == ["14", "6"] and cmd[cmd.index("--pin-threads") + 1] == "off"
    cmd = train_view.run_command(args, "stoker+pinshrink=on", 0)
    assert cmd[cmd.index("--pinned-shrink") + 1] == "on"
    cmd = train_view.run_command(args, "stoker+decode=cpu+fusedblocks=132", 0)
    assert cmd[cmd.index("--fused-blocks") + 1] == "132" and cmd[cmd.index("--decode") + 1] == "cpu"
    cmd = train_view.run_command(args, "stoker+decode=cpu+fusedblocks=0+packed=off", 0)  # 0: one block a tile
    assert cmd[cmd.index("--fused-blocks") + 1] == "0" and cmd[cmd.index("--packed-upload") + 1] == "off"
    cmd = train_view.run_command(args, "stoker+decode=cpu+priority=normal+fusedsplit=8", 0)
    assert cmd[cmd.index("--fused-split") + 1] == "8" and cmd[cmd.index("--stream-priority") + 1] == "normal"
    cmd = train_view.run_command(args, "stoker+decode=cpu+sharedupload=on", 0)
    assert cmd[cmd.index("--shared-upload") + 1] == "on"
    cmd = train_view.run_command(args, "dali+prefetch=5", 0)
    assert cmd[cmd.index("--prefetch") + 1] == "5"
    args.profile = 20
    cmd = train_view.run_command(args, "stoker", 0, trace="runs/00-stoker-r0.trace.json")
    assert cmd[cmd.index("--profile-trace") + 1] == "runs/00-stoker-r0.trace.json"


@pytest.mark.parametrize("spec, message", [
    ("dali+priority=normal", "dali takes decode, hw"),  # stoker's stream priority only
    ("stoker+hw=1.5", "a number in \\[0, 1\\]"),
    ("stoker+decode=gpu", "mixed or cpu"),
    ("stoker+tuning=sets", "KEY=N"),
    ("stoker+tuning=sets=2,lowest=1", "KEY=N"),
    ("synthetic+hw=0.5", "synthetic takes no options"),
    ("stoker+workers=0", "a whole number in \\[1, 256\\]"),
    ("dali+workers=six", "a whole number"),
    ("dali+pin=off", "dali takes decode, hw, workers, prefetch"),
    ("dali+fusedblocks=132", "dali takes decode, hw, workers, prefetch"),  # stoker's kernel only
    ("pytorch+prefetch=4", "pytorch takes workers"),  # DALI's threads are not pinned by the example
    ("stoker+pin=no", "on or off"),
    ("stoker+fusedblocks=65536", "a whole number in \\[0, 65535\\]"),
    ("stoker+fusedsplit=0", "a whole number in \\[1, 65535\\]"),  # one launch at least
    ("dali+fusedsplit=8", "dali takes decode, hw, workers, prefetch"),
    ("stoker+packed=yes", "on or off"),
    ("nosuch", "unknown loader"),
])
def test_loader_variants_refuse_what_the_example_cannot_take(spec, message):
    with pytest.raises(ValueError, match=message):
        train_view.loader_flags(spec)


def test_loaders_from_takes_each_loaders_best_variant(tmp_path):
    rows = {"synthetic": {"img_s": {"median": 3960.0}},
            "stoker": {"img_s": {"median": 3800.0}}, "stoker+priority=normal": {"img_s": {"median": 3900.0}},
            "dali": {"img_s": {"median": 3910.0}}, "dali+decode=cpu": {"img_s": None}}
    assert train_view.best_variants(rows) == ["synthetic", "stoker+priority=normal", "dali"]
    with pytest.raises(ValueError, match="no loader row"):
        train_view.best_variants({"synthetic": rows["synthetic"]})
    path = tmp_path / "diag.json"
    path.write_text(json.dumps({"rows": rows}))
    argv = sys.argv
    try:
        sys.argv = ["train_view.py", "--data", "d", "--out", str(tmp_path / "o"), "--loaders-from", str(path)]
        assert train_view.parse_args().loaders == ["synthetic", "stoker+priority=normal", "dali"]
    finally:
        sys.argv = argv


def fake_example(tmp_path, prelude, **settings):
    """A stand-in example script (prelude, then the result line) and the driver's settings for it."""
    example = tmp_path / "example.py"
    example.write_text(prelude + "print('train_resnet50: loader=stoker img/s=123.0 seconds=30.0')\n")
    (tmp_path / "out" / "runs").mkdir(parents=True)
    settings.setdefault("gpus", 1)
    return types.SimpleNamespace(python=sys.executable, example=str(example), data="d", arch="resnet50", size=224,
                                 batch_size=256, workers=14, warmup_seconds=10.0, window=30.0, device="cuda",
                                 cores=os.cpu_count() or 1, cpus="0", out=str(tmp_path / "out"), **settings)


def test_a_variant_with_a_slash_gets_a_log_file(tmp_path):
    """tuning=KEY=N/KEY=N names a run whose log file must still be one file under runs/ (the '/'
    made train_view crash on the H100 in session 19)."""
    args = fake_example(tmp_path, "", profile=0, traces=False)
    run = train_view.one_run(args, "stoker+tuning=sets=2/lowest=1", 0, 3, 60, False)
    assert run["log"] == os.path.join("runs", "03-stoker+tuning=sets=2_lowest=1-r0.log")
    assert (tmp_path / "out" / run["log"]).read_text().startswith("$ ")
    assert run["img_s"] == 123.0


def test_traces_are_kept_compressed_beside_the_log(tmp_path):
    """--traces: the example writes its profiled steps' Chrome trace where --profile-trace says;
    the driver keeps it gzipped next to the run's log (a 20-step trace is tens of MB as JSON)."""
    args = fake_example(tmp_path, "import sys\n"
                                  "path = sys.argv[sys.argv.index('--profile-trace') + 1]\n"
                                  "open(path, 'w').write('{\"traceEvents\": []}')\n", profile=5, traces=True)
    run = train_view.one_run(args, "stoker", 0, 0, 60, True)
    assert run["img_s"] == 123.0, run.get("error")
    runs = tmp_path / "out" / "runs"
    assert sorted(p.name for p in runs.iterdir()) == ["00-stoker-r0.log", "00-stoker-r0.trace.json.gz"]
    with gzip.open(runs / "00-stoker-r0.trace.json.gz", "rt") as f:
        assert json.load(f) == {"traceEvents": []}


def load_example():
    import importlib.util
    path = os.path.join(os.path.dirname(os.path.abspath(train_view.__file__)), "..", "examples", "train_resnet50.py")
    spec = importlib.util.spec_from_file_location("train_resnet50_example", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_timeline_splits_the_training_streams_stops(tmp_path, capsys):
    """The example's --profile timeline: the busiest stream is the step's; a stop while another
    stream's kernel runs is the loader's (serialized with the step), the rest is GPU idle."""
    example = load_example()
    events = []
    for step in range(2):  # each step: 100 us of kernels on stream 7, then a 40 us stop
        t = step * 140.0
        events.append({"ph": "X", "cat": "kernel", "name": "conv", "ts": t, "dur": 100.0, "args": {"stream": 7}})
        # the loader's kernel covers 30 us of the stop and 10 us beside the step's kernel
        events.append({"ph": "X", "cat": "kernel", "name": "stk_fused_kernel", "ts": t + 90.0, "dur": 40.0,
                       "args": {"stream": 21}})
    events.append({"ph": "X", "cat": "kernel", "name": "conv", "ts": 280.0, "dur": 100.0, "args": {"stream": 7}})
    events.append({"ph": "X", "cat": "cpu_op", "name": "aten::add", "ts": 0.0, "dur": 5.0, "args": {}})

    class Prof:
        def export_chrome_trace(self, path):
            with open(path, "w") as f:
                json.dump({"traceEvents": events}, f)

    keep = tmp_path / "trace.json"
    example.print_timeline(types.SimpleNamespace(profile=2, profile_trace=str(keep)), Prof())
    err = capsys.readouterr().err
    # wall 380 us over 2 steps, busy 300, stopped 80 (60 with the loader's kernel running, 20 idle)
    assert "0.19 ms/step wall, busy 0.15, stopped 0.04 (loader's work running 0.03, GPU idle 0.01)" in err, err
    assert "loader's work 0.04 ms/step on 1 stream(s), 0.01 of it beside the step's kernels" in err
    assert err.count("timeline:   stop") == 2 and "s21 stk_fused_kernel 30 us" in err
    # each stop names the step's kernels on either side of it
    assert err.count("(after conv, before conv): s21 stk_fused_kernel 30 us") == 2, err
    assert keep.exists()  # --profile-trace keeps it
    example.print_timeline(types.SimpleNamespace(profile=2, profile_trace=None), Prof())
    assert "stopped 0.04" in capsys.readouterr().err


def test_trace_runahead_tells_a_late_host_from_a_queued_kernel(tmp_path):
    """bench/trace_runahead.py: a gap the host had not launched into counts as host late; a gap
    whose kernel was queued long before does not; run-ahead is kernel start less launch return."""
    import trace_runahead

    def kernel(ts, dur, corr, stream=7):
        return {"ph": "X", "cat": "kernel", "name": "k", "ts": ts, "dur": dur, "args": {"stream": stream, "correlation": corr}}

    def call(ts, dur, corr, tid=1):
        return {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "ts": ts, "dur": dur, "tid": tid,
                "args": {"correlation": corr}}

    events = [call(0, 5, 1), kernel(100, 100, 1),      # run-ahead 95
              call(10, 5, 2), kernel(250, 100, 2),     # gap 200..250, launched at 15: queued, not late
              call(380, 10, 3), kernel(400, 100, 3),   # gap 350..400, launch returned at 390: 40 late
              kernel(120, 50, 9, stream=21)]           # another stream's work
    path = tmp_path / "t.json.gz"
    with gzip.open(path, "wt") as f:
        json.dump({"traceEvents": events}, f)
    r = trace_runahead.analyse(*trace_runahead.load(str(path)))
    assert r["stream"] == 7 and r["streams"] == 2 and r["step_threads"] == 1
    assert r["ahead_us"] == [10.0, 95.0, 235.0]
    assert r["gaps_us"] == 100.0 and r["late_us"] == 40.0
    assert r["quiet"][0][0] == 365.0  # 15 -> 380 with no CUDA call on the step thread
    assert trace_runahead.main([str(path)]) == 0
    assert trace_runahead.main([str(tmp_path / "none.json")]) == 1


def test_torchrun_runs_one_rank_per_gpu_without_a_profile():
    """--gpus 2: the example under torchrun, two ranks on this host, and no profiled steps (the
    profile is one process's)."""
    args = types.SimpleNamespace(python="py", example="ex.py", data="d", arch="resnet18", size=160, batch_size=256,
                                 workers=14, warmup_seconds=10.0, window=30.0, device="cuda", profile=20, cores=32,
                                 cpus="0-31", gpus=2)
    cmd = train_view.run_command(args, "stoker", 0)
    assert cmd[:8] == ["py", "-m", "torch.distributed.run", "--standalone", "--nnodes", "1", "--nproc_per_node", "2"]
    assert cmd[8] == "ex.py" and "--profile" not in cmd
    args.gpus = 1
    cmd = train_view.run_command(args, "stoker", 0)
    assert cmd[:2] == ["py", "ex.py"] and "--profile" in cmd


def test_a_job_of_two_ranks_counts_both(tmp_path):
    """A real torchrun of a stand-in example (each rank prints its WORLD_SIZE as ranks=): the run is
    whole, and its images are rank 0's steps times the batch times the ranks."""
    pytest.importorskip("torch.distributed.run")
    example = tmp_path / "example.py"
    example.write_text("import os\n"
                       "print('train_resnet50: loader=stoker ranks=%s batch=256 steps=10 img/s=123.0 seconds=30.0'"
                       " % os.environ.get('WORLD_SIZE', '1'), flush=True)\n")
    (tmp_path / "out" / "runs").mkdir(parents=True)
    args = types.SimpleNamespace(python=sys.executable, example=str(example), data="d", arch="resnet18", size=160,
                                 batch_size=256, workers=1, warmup_seconds=10.0, window=30.0, device="cpu",
                                 cores=os.cpu_count() or 1, cpus="0", out=str(tmp_path / "out"), profile=0,
                                 traces=False, gpus=2)
    run = train_view.one_run(args, "stoker", 0, 0, 120, False)
    assert run["rc"] == 0 and not run.get("error"), run
    assert run["images"] == 10 * 256 * 2 and run["img_s"] == 123.0


def test_a_run_with_other_ranks_than_asked_is_an_error(tmp_path):
    args = fake_example(tmp_path, "", profile=0, traces=False, gpus=1)
    (tmp_path / "example.py").write_text(
        "print('train_resnet50: loader=stoker ranks=2 batch=256 steps=10 img/s=123.0 seconds=30.0')\n")
    run = train_view.one_run(args, "stoker", 0, 0, 60, False)
    assert "2.0 ranks, not --gpus 1" in run["error"]
    rows = train_view.rows_of(types.SimpleNamespace(loaders=["stoker"], ceiling_from=None), [run])
    assert rows["stoker"]["ok"] == 0


def test_scaling_from_one_gpu(tmp_path):
    """--scaling-from: each loader's img/s on 2 GPUs over twice its one-GPU row, the range pairing
    the extremes; in the table; a one-GPU file for a one-GPU run, or another model's, is refused."""
    one = options(["stoker", "dali"])
    one_rows = train_view.rows_of(one, [run("stoker", v, i) for i, v in enumerate([10000.0, 9000.0, 11000.0])] +
                                  [run("dali", v, i) for i, v in enumerate([8000.0, 8000.0, 8000.0])])
    path = tmp_path / "one.json"
    path.write_text(json.dumps({"rows": one_rows, "settings": {"gpus": 1, "arch": "resnet18", "size": 160,
                                                               "batch_size": 256}}))
    two = options(["stoker", "dali"])
    two.gpus, two.scaling_from = 2, str(path)
    runs = [run("stoker", v, i) for i, v in enumerate([19000.0, 20000.0, 18000.0])] + \
        [run("dali", v, i) for i, v in enumerate([16000.0, 15200.0, 16800.0])]
    rows = train_view.rows_of(two, runs)
    scaled = train_view.scaling(two, rows)
    assert scaled["stoker"]["median"] == pytest.approx(19000.0 / 20000.0)
    assert scaled["stoker"]["min"] == pytest.approx(18000.0 / 22000.0)
    assert scaled["stoker"]["max"] == pytest.approx(20000.0 / 18000.0)
    assert scaled["dali"]["median"] == pytest.approx(1.0)
    text = train_view.table(two, rows, runs, [], [])
    assert "Scaling from 1 GPU (img/s over 2 x the one-GPU row of %s): stoker 0.950 (0.818–1.111); dali 1.000" % path in text
    same = options(["stoker"])
    same.scaling_from = str(path)
    with pytest.raises(SystemExit, match="one.json: it ran on 1 GPUs and this run on 1"):
        train_view.scaling(same, rows)
    other = tmp_path / "r50.json"
    other.write_text(json.dumps({"rows": one_rows, "settings": {"gpus": 1, "arch": "resnet50"}}))
    two.scaling_from = str(other)
    with pytest.raises(SystemExit, match="r50.json: its arch is resnet50, this run's resnet18"):
        train_view.scaling(two, rows)
