"""bench/compare.py, bench/report.py and bench/pagecache.py without a GPU: --mode decode runs the
sweep, the protocol rows and the cold rows end to end on the CPU (a stand-in `stoker` CLI that
answers `stoker bench --json` as the real one does, so no build is needed), the section renders the
decode targets (1.2x torchvision's batched GPU decode, >= DALI) and the cold rows apart from the
protocol rows, and the eviction helper drops a file's pages from the page cache."""
import json
import os
import stat
import sys
import textwrap

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "bench"))
import compare  # noqa: E402
import pagecache  # noqa: E402
import peers  # noqa: E402
import report  # noqa: E402

# `stoker bench --json` as the real CLI prints it (the fields bench/peers.py reads), at a fixed rate
# of 1000 images/s after 0.05 s of start-up; it checks that it was given a decode-only pipeline file
# over the data folder. With --epochs 1 (cold rows) it delivers the folder's files once.
FAKE_STOKER = textwrap.dedent('''\
    #!{python}
    import json, os, sys, time
    args = sys.argv[1:]
    value = lambda name: args[args.index(name) + 1]
    if args[:1] == ['--version']:
        print('stoker 0.0-test'); sys.exit(0)
    text = open(value('--pipeline')).read()
    if os.environ.get('FAKE_STOKER_LOG'):
        with open(os.environ['FAKE_STOKER_LOG'], 'a') as log:
            log.write(text.splitlines()[0] + '\\n')
    if 'decoders.image(' not in text or value('--data') not in text:
        print('not a decode pipeline over the data: ' + text, file=sys.stderr); sys.exit(3)
    warmup, batch = float(value('--warmup')), int(value('--batch'))
    if '--epochs' in args:
        images = sum(len(files) for _, _, files in os.walk(value('--data')))
        seconds = images / 1000
    else:
        seconds = float(value('--seconds'))
        images = int(1000 * seconds) // batch * batch + batch
    time.sleep(0.05 + warmup + seconds)
    print(json.dumps({{'images': images, 'seconds': seconds, 'images_per_second': images / seconds,
                      'warmup_seconds': warmup, 'warmup_images': 0 if '--epochs' in args else batch,
                      'time_to_first_batch_s': 0.05, 'seconds_since_build': 0.05 + warmup + seconds,
                      'cpu_cores_busy': 1.0, 'device_bytes_held': 0, 'decoded_hw': 0}}))
    ''')


@pytest.fixture
def fake_stoker(tmp_path):
    path = tmp_path / "stoker"
    path.write_text(FAKE_STOKER.format(python=sys.executable))
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


@pytest.fixture
def image_folder(tmp_path):
    root = tmp_path / "hires"
    for c in range(2):
        (root / f"n{c:04d}").mkdir(parents=True)
        for i in range(60):
            (root / f"n{c:04d}" / f"img_{i:03d}.jpg").write_bytes(os.urandom(2048))
    return str(root)


def test_decode_mode_sweep_protocol_and_cold_rows(tmp_path, fake_stoker, image_folder):
    if not pagecache.mincore_available():
        pytest.skip("mincore or posix_fadvise not available")
    out = tmp_path / "out"
    status = compare.main(["--data", image_folder, "--data-label", "hires", "--data-note", "120 test files",
                           "--mode", "decode", "--loaders", "decode-stoker-cpu", "--sweep", "2,2 1,3",
                           "--sweep-warmup", "0.05", "--sweep-seconds", "0.1", "--warmup", "0.05", "--seconds", "0.2",
                           "--repeats", "3", "--batch", "16", "--device", "cpu", "--stoker", fake_stoker,
                           "--order-seed", "3", "--cold", "--out", str(out)])
    assert status == 0
    run = json.loads((out / "run.json").read_text())
    assert run["mode"] == "decode" and run["data_label"] == "hires"
    phases = [r["phase"] for r in run["rows"]]
    assert phases.count("sweep") == 2 and phases.count("protocol") == 3 and phases.count("cold") == 1
    assert all(r["status"] == "ok" and r["dataset"] == "hires" and r["mode"] == "decode" for r in run["rows"]), run["rows"]
    cold = run["rows"][-1]
    assert cold["cache"]["files"] == 120 and cold["cache"]["resident_after"] is not None
    if _filesystem(image_folder) not in ("tmpfs", "ramfs"):
        assert cold["cache"]["resident_after"] < 0.1
    # the whole first epoch from the build: 120 files at 1000 img/s after 0.05 s of start-up
    assert cold["images"] == 120 and cold["files"] == 120 and cold["epoch_share"] == 1.0
    assert cold["seconds"] == pytest.approx(0.17) and cold["images_per_s"] == pytest.approx(120 / 0.17)
    assert cold["epoch_images"] == 112 and "--epochs 1" in cold["command"]
    section = (out / "results-section.md").read_text()
    assert "### Cold cache, not protocol rows" in section
    assert "- data: hires: 120 test files" in section


def test_cold_read_ahead_adds_a_row_with_the_reader_argument(tmp_path, fake_stoker, image_folder, monkeypatch):
    """--cold-read-ahead: two cold rows for a loader whose reader has read_ahead, their pipeline
    files' readers.file(..., read_ahead=False) and (..., read_ahead=True); the sweep and protocol
    rows leave it at the reader's default (not named)."""
    if not pagecache.mincore_available():
        pytest.skip("mincore or posix_fadvise not available")
    log = tmp_path / "pipelines.txt"
    monkeypatch.setenv("FAKE_STOKER_LOG", str(log))
    out = tmp_path / "out"
    status = compare.main(["--data", image_folder, "--mode", "decode", "--loaders", "decode-stoker-cpu",
                           "--sweep", "2,2", "--sweep-warmup", "0.05", "--sweep-seconds", "0.1", "--warmup", "0.05",
                           "--seconds", "0.1", "--repeats", "1", "--batch", "16", "--device", "cpu",
                           "--stoker", fake_stoker, "--cold", "--cold-read-ahead", "--out", str(out)])
    assert status == 0
    rows = json.loads((out / "run.json").read_text())["rows"]
    cold = [r for r in rows if r["phase"] == "cold"]
    assert [r["setting"].get("read_ahead") for r in cold] == [0, 1]
    assert all(r["status"] == "ok" for r in cold), cold
    assert "read_ahead=0" in cold[0]["setting_text"] and "read_ahead=1" in cold[1]["setting_text"]
    readers = log.read_text().splitlines()
    assert len(readers) == 4  # sweep, protocol, 2 cold
    assert not any("read_ahead=" in line for line in readers[:2]), readers
    assert "read_ahead=False" in readers[2] and "read_ahead=True" in readers[3]


def test_read_ahead_knob_only_where_the_reader_has_it():
    run = peers.parse_run("decode-dali-mixed@16:decode,read_ahead=1")
    assert run["read_ahead"] == 1 and run["setting"]["read_ahead"] == 1
    run = peers.parse_run("decode-stoker-mixed@16:decode,read_ahead=0")
    assert run["read_ahead"] == 0 and run["setting"]["read_ahead"] == 0
    with pytest.raises(SystemExit, match="read_ahead"):
        peers.parse_run("decode-tv-gpu@16:decode,read_ahead=1")
    with pytest.raises(SystemExit, match="read_ahead"):
        peers.parse_run("decode-stoker-mixed@16:decode,read_ahead=2")


def test_read_ahead_on_the_rn50_rows_reaches_each_reader():
    """stoker's CLI and DALI's rn50 rows take read_ahead too (cold rows of rn50-train/val): stoker's
    as a written-out pipeline whose readers.file has it, DALI's as fn.readers.file's argument; unset,
    stoker runs its built-in pipeline and DALI's reader gets no argument."""
    import argparse
    assert peers.parse_run("stoker-cli-mixed@16:val,read_ahead=1")["setting"]["read_ahead"] == 1
    assert peers.parse_run("dali-mixed@12:train,read_ahead=0")["read_ahead"] == 0
    with pytest.raises(SystemExit, match="read_ahead"):
        peers.parse_run("stoker-py-mixed@16:train,read_ahead=1")
    row = argparse.Namespace(hw_load=None, cuda_load=None, read_ahead=0)
    for mode in ("train", "val"):
        text = open(peers.stoker_pipeline_file(row, mode, "gpu")).read()
        assert text.splitlines()[0].endswith('name="Reader", read_ahead=False)'), text
    assert peers.stoker_pipeline_file(argparse.Namespace(hw_load=None, cuda_load=None, read_ahead=None), "train",
                                      "gpu") == "rn50-train"

    class Recorder:  # stands in for nvidia.dali.fn: records readers.file's arguments, then stops the graph
        class readers:
            calls = []

            @staticmethod
            def file(**kwargs):
                Recorder.readers.calls.append(kwargs)
                raise StopIteration

    for ahead, expected in ((1, True), (None, None)):
        with pytest.raises(StopIteration):
            peers.rn50_graph(Recorder, "/data", "train", "mixed", "gpu", "float", {}, None,
                             peers.reader_options(argparse.Namespace(read_ahead=ahead)))
        assert Recorder.readers.calls[-1].get("read_ahead") == expected


def test_decode_mode_refuses_a_pipeline_loader(image_folder):
    with pytest.raises(SystemExit, match="bad mode"):
        compare.parse_arguments(["--data", image_folder, "--mode", "decode", "--loaders", "decode-stoker-mixed,dali-mixed"])
    args = compare.parse_arguments(["--data", image_folder, "--mode", "decode", "--device", "cpu",
                                    "--loaders", "decode-stoker-mixed,decode-dali-mixed,decode-tv-gpu"])
    assert args.loader_list == ["decode-stoker-mixed", "decode-dali-mixed", "decode-tv-gpu"]


def test_sweep_tokens_give_each_loader_its_own_knobs():
    setting = (16, 2, 0.9, 1.0)
    assert compare.token("decode-tv-gpu", "decode", setting) == "decode-tv-gpu@16:decode,prefetch=2"
    assert compare.token("decode-dali-mixed", "decode", setting) == "decode-dali-mixed@16:decode,prefetch=2,hw_load=0.9,cuda_load=1"
    run = peers.parse_run(compare.token("decode-dali-mixed", "decode", setting))
    assert (run["hw_load"], run["cuda_load"], run["workers"]) == (0.9, 1.0, 16)
    assert "decode-dali-mixed" in peers.NEEDS_CUDA and "decode-dali-mixed" in peers.DECODE_LOADERS


def test_cold_row_times_the_first_epoch_in_whole_batches():
    assert compare.cold_epoch_images(20000, 256) == 19968  # 78 batches: none from the second epoch
    assert compare.cold_epoch_images(100, 256) == 256  # a set smaller than a batch: one batch
    rows = [{"phase": "sweep", "status": "ok", "loader": "a", "images_per_s": 900.0, "setting_text": "s"},
            {"phase": "protocol", "status": "ok", "loader": "a", "images_per_s": 700.0, "setting_text": "s"},
            {"phase": "sweep", "status": "ok", "loader": "b", "images_per_s": 500.0, "setting_text": "s"}]
    assert compare.warm_rates(rows) == {"a": 700.0, "b": 500.0}


def synthetic_run(dali_rates):
    rows = []
    for loader, rates in (("decode-stoker-mixed", [3900, 4000, 4100]), ("decode-tv-gpu", [3000, 3100, 3200]),
                          ("decode-dali-mixed", dali_rates)):
        for repeat, rate in enumerate(rates):
            rows.append({"phase": "protocol", "dataset": "hires", "loader": loader, "mode": "decode", "workers": 16,
                         "setting_text": "prefetch=2 workers=16", "status": "ok", "images_per_s": rate, "repeat": repeat})
    rows.append({"phase": "cold", "dataset": "hires", "loader": "decode-stoker-mixed", "mode": "decode", "workers": 16,
                 "setting_text": "prefetch=2 workers=16", "status": "ok", "images_per_s": 777.0, "seconds": 5.4,
                 "epoch_share": 1.0, "cache": {"resident_before": 1.0, "resident_after": 0.0},
                 "cold_clock": "first epoch from the build"})
    rows.append({"phase": "cold", "dataset": "hires", "loader": "decode-dali-mixed", "mode": "decode", "workers": 16,
                 "setting_text": "prefetch=2 workers=16", "status": "ok", "images_per_s": 555.0, "seconds": 5.4,
                 "epoch_share": 0.3, "cache": {"resident_before": 1.0, "resident_after": 0.9}})
    return {"date": "d", "machine": {"gpu": "H100", "cpus": 16}, "command": "compare.py --mode decode", "batch": 256,
            "seconds": 30, "warmup_s": 10, "repeats": 3, "order_seed": 1, "mode": "decode", "data_label": "hires",
            "rows": rows}


def pair_line(text, peer):
    return next(l for l in text.splitlines() if l.startswith("| decode-stoker-mixed") and f"| {peer} " in l)


def test_report_decode_targets_and_cold_rows():
    text = report.section(synthetic_run([3800, 3900, 4000]), None)
    assert "1.29x | win | 1.2x (issue 15): met" in pair_line(text, "decode-tv-gpu")
    assert "1.03x | overlap | 1x (issue 15): not shown (ranges overlap)" in pair_line(text, "decode-dali-mixed")
    rows_part, cold_part = text.split("### Cold cache, not protocol rows")
    assert "777" not in rows_part and "777" in cold_part  # cold rows never among the protocol rows
    assert "eviction not verified: not a cold row" in cold_part.split("decode-dali-mixed")[1]
    assert "| ok |" in cold_part.split("decode-stoker-mixed")[1].splitlines()[0]
    beaten = report.section(synthetic_run([3000, 3100, 3150]), None)
    assert "1x (issue 15): met" in pair_line(beaten, "decode-dali-mixed")


def _filesystem(path):
    best = ("", "")
    with open("/proc/mounts") as mounts:
        for line in mounts:
            fields = line.split()
            if os.path.realpath(path).startswith(fields[1]) and len(fields[1]) > len(best[0]):
                best = (fields[1], fields[2])
    return best[1]


def test_eviction_drops_the_pages(tmp_path):
    if not pagecache.mincore_available():
        pytest.skip("mincore or posix_fadvise not available")
    if _filesystem(str(tmp_path)) in ("tmpfs", "ramfs"):
        pytest.skip("a tmpfs keeps its files in memory: nothing to evict")
    path = tmp_path / "data.bin"
    path.write_bytes(os.urandom(8 << 20))
    path.read_bytes()
    assert pagecache.resident([str(path)]) > 0.5
    result = pagecache.evict_checked(str(tmp_path))
    assert result["files"] == 1 and result["resident_before"] > 0.5
    assert result["resident_after"] < 0.1
    path.read_bytes()
    assert pagecache.resident([str(path)]) > 0.5


def test_python_loader_cold_clock_runs_one_epoch_from_creation(tmp_path):
    """peers.measure() with epoch_images (a cold row): the clock starts before the loader is made and
    stops once the first epoch's whole batches are delivered, so time_to_first_batch is inside it."""
    pytest.importorskip("torchvision")
    from PIL import Image
    root = tmp_path / "jpegs" / "n0000"
    root.mkdir(parents=True)
    for i in range(40):
        Image.new("RGB", (32 + i, 24), (i * 5, 100, 200)).save(root / f"img_{i:03d}.jpg", quality=90)
    import argparse
    args = argparse.Namespace(loader="decode-tv-cpu", data=str(tmp_path / "jpegs"), workers=1, prefetch=2,
                              batch=8, warmup=0.0, seconds=5.0, device="cpu", hw_load=None, cuda_load=None,
                              stoker="", epoch_images=compare.cold_epoch_images(40, 8))
    row = peers.measure(args, "decode")
    assert row["images"] == 40 and row["cold_clock"].startswith("first epoch")
    assert row["seconds"] >= row["time_to_first_batch_s"] > 0
    assert row["images_per_s"] == pytest.approx(40 / row["seconds"])


def test_gpu_baseline_waits_for_the_last_childs_memory(monkeypatch):
    """The device-memory baseline is taken once the previous child's memory has gone back (a killed
    child's memory returns some time after it exits; a baseline taken while it was held made the
    next row read ~7.5 GB low), and says so when it never did."""
    sampler = peers.GpuSampler.__new__(peers.GpuSampler)
    readings = iter([9000.0, 9000.0, 1600.0, 1500.0])  # torchvision's 7.5 GB still held, then gone
    sampler.query = lambda: (next(readings), 0, None)
    sampler.idle_mb = 1500.0
    monkeypatch.setattr(peers.time, 'sleep', lambda s: None)
    used, waited, settled = sampler.settled_baseline(slack_mb=256)
    assert used == 1600.0 and settled and waited >= 0
    sampler.query = lambda: (9000.0, 0, None)
    used, waited, settled = sampler.settled_baseline(slack_mb=256, timeout_s=0.01, step_s=0.001)
    assert used == 9000.0 and not settled
    sampler.query = None  # no meter at all: nothing to wait for
    used, waited, settled = sampler.settled_baseline()
    assert used is None and settled


def test_dali_preallocation_hints_are_a_knob():
    """prealloc=0 drops the ResNet-50 example's padding and preallocation hints from DALI's decoder
    (its own defaults, as the training example runs it); unset or 1 keeps them; stoker has no such knob."""
    import argparse
    run = peers.parse_run("dali-mixed@16:val,prefetch=2,hw_load=0.8,prealloc=0")
    assert run["prealloc"] == 0 and "prealloc=0" in run["setting_text"]
    with pytest.raises(SystemExit, match="prealloc"):
        peers.parse_run("stoker-cli-mixed@16:val,prealloc=0")
    hinted = peers.dali_decoder_options(argparse.Namespace(hw_load=0.8, cuda_load=None, prealloc=None), True)
    assert hinted["preallocate_width_hint"] == 5980 and hinted["hw_decoder_load"] == 0.8
    bare = peers.dali_decoder_options(argparse.Namespace(hw_load=0.8, cuda_load=None, prealloc=0), True)
    assert bare == {"hw_decoder_load": 0.8}


def test_the_router_choice_of_each_stoker_run_is_recorded_and_reported():
    """A stoker-py run's row carries its pipeline's routing record and images per decoder (the
    router decides per process: the rows must say what it chose), and the section lists them."""
    class FakePipe:
        def stats(self):
            return {"decoder_route": "automatic: kept 0.75 after its trial", "decoded_hw": 750, "decoded_cpu": 250,
                    "decoded_cuda": 0, "decoded_hybrid": 0, "batches": 4}

    peers.STOKER_PIPES[:] = [FakePipe()]
    try:
        row = {}
        peers.stoker_route(row)
    finally:
        peers.STOKER_PIPES[:] = []
    assert row == {"decoder_route": "automatic: kept 0.75 after its trial",
                   "decoded": {"hw": 750, "cpu": 250, "cuda": 0, "hybrid": 0}}
    untouched = {}
    peers.stoker_route(untouched)  # no stoker pipeline in this process (a DALI run): nothing added
    assert untouched == {}
    run = synthetic_run([3000, 3100, 3200])
    run["rows"][0].update(row)
    text = report.section(run, None)
    assert "- protocol decode-stoker-mixed prefetch=2 workers=16: automatic: kept 0.75 after its trial (hw 750, cpu 250)" \
        in text
