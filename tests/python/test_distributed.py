"""tests/python/test_distributed.py: one pipeline per rank (stoker.distributed).

* Placement from the launcher's variables, resolved by the C library on recorded machines
  (tests/fixtures): the rank's GPU through a remapped CUDA_VISIBLE_DEVICES (indices and
  GPU-<uuid>), torchrun / Slurm / Open MPI spellings, explicit arguments winning.
* Equal steps per rank under torchrun: 4 CPU processes (gloo) train a one-weight DDP model on
  every batch of readers.file, .numpy and .webdataset pipelines built with no placement argument;
  every rank takes the same number of steps, the ranks together cover the data set each epoch,
  the shards move every epoch, and a one-process run with explicit shard_id/num_shards and the
  same seed returns exactly what each rank got (torchrun_worker.py is the rank's program).
"""
import json
import os
import shutil
import subprocess
import sys
import tarfile

import numpy as np
import pytest

import stoker
from stoker import distributed, fn, pipeline_def
from conftest import make_dataset

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
SAMPLES = 13
WORLD = 4
EPOCHS = 3


# ---- recorded machines ------------------------------------------------------------------------
@pytest.fixture(scope="module")
def machines(tmp_path_factory):
    root = tmp_path_factory.mktemp("machines")
    subprocess.run(["bash", os.path.join(REPO, "tests", "fixtures", "make_fixtures.sh"), str(root)], check=True,
                   stdout=subprocess.DEVNULL)
    return str(root)


def test_rank_gpu_through_remapped_visible_devices(machines):
    dgx = os.path.join(machines, "dgx-2s20c2t-8gpu")
    info = distributed.rank_info({"LOCAL_RANK": "1", "RANK": "5", "WORLD_SIZE": "8", "LOCAL_WORLD_SIZE": "2",
                                  "CUDA_VISIBLE_DEVICES": "6,3"}, sysfs_root=dgx)
    assert info["status"] == "STK_OK", info
    assert (info["cuda_device"], info["gpu"], info["visible_gpus"]) == (1, 3, [6, 3])
    assert (info["rank"], info["world_size"], info["local_world_size"]) == (5, 8, 2)
    gpus = stoker.topology(dgx)["gpus"]
    assert info["pci_bus_id"] == gpus[3]["pci_bus_id"] and info["local_cpus"] == gpus[3]["local_cpus"]
    # the workers of CUDA device 1 go on PCI GPU 3's CPUs: the C executor maps the ordinal itself
    # (src/core/exec/affinity.c: by PCI bus id, else through CUDA_VISIBLE_DEVICES)


def test_rank_gpu_by_uuid_and_one_visible_gpu(machines):
    epyc = os.path.join(machines, "epyc-nps4-2s64c2t-8gpu")
    gpus = stoker.topology(epyc)["gpus"]
    # GPU 5's UUID, through the resolver itself (the fixture records driver UUIDs)
    uuid5 = distributed.rank_info({"LOCAL_RANK": "5"}, sysfs_root=epyc)["uuid"]
    assert uuid5.startswith("GPU-")
    # Slurm with --gpus-per-task 1: one visible GPU, whatever SLURM_LOCALID is
    info = distributed.rank_info({"SLURM_LOCALID": "3", "SLURM_PROCID": "11", "SLURM_NTASKS": "16",
                                  "CUDA_VISIBLE_DEVICES": uuid5}, sysfs_root=epyc)
    assert info["status"] == "STK_OK", info
    assert (info["rank_source"], info["cuda_device"], info["gpu"]) == ("SLURM_LOCALID", 0, 5)
    assert (info["rank"], info["world_size"]) == (11, 16)
    assert info["pci_bus_id"] == gpus[5]["pci_bus_id"]


def test_rank_without_a_gpu_and_bad_variables(machines):
    dgx = os.path.join(machines, "dgx-2s20c2t-8gpu")
    info = distributed.rank_info({"OMPI_COMM_WORLD_LOCAL_RANK": "2", "OMPI_COMM_WORLD_RANK": "2",
                                  "OMPI_COMM_WORLD_SIZE": "4", "CUDA_VISIBLE_DEVICES": "0,1"}, sysfs_root=dgx)
    assert info["status"] == "STK_EINVAL" and "local rank 2" in info["error"]
    assert distributed.rank_info({}, sysfs_root=dgx)["status"] == "STK_ENOENT"
    with pytest.raises(stoker.ArgumentError, match="RANK"):
        distributed.shard_from_environment({"LOCAL_RANK": "0", "RANK": "x", "WORLD_SIZE": "2"}, sysfs_root=dgx)
    with pytest.raises(stoker.ArgumentError, match="outside"):
        distributed.shard_from_environment({"LOCAL_RANK": "0", "RANK": "4", "WORLD_SIZE": "4"}, sysfs_root=dgx)


@pytest.mark.parametrize(
    "env, shard",
    [
        ({"LOCAL_RANK": "1", "RANK": "3", "WORLD_SIZE": "4"}, (3, 4)),
        ({"SLURM_LOCALID": "0", "SLURM_PROCID": "5", "SLURM_NTASKS": "8"}, (5, 8)),
        ({"OMPI_COMM_WORLD_LOCAL_RANK": "1", "OMPI_COMM_WORLD_RANK": "1", "OMPI_COMM_WORLD_SIZE": "2"}, (1, 2)),
        ({"RANK": "2", "WORLD_SIZE": "3"}, (2, 3)),  # torch.distributed env:// without a local rank
        ({"LOCAL_RANK": "0", "RANK": "0", "WORLD_SIZE": "1"}, None),
        ({}, None),
    ],
)
def test_shard_from_each_launcher(env, shard):
    assert distributed.shard_from_environment(env) == shard


@pipeline_def
def labels_pipe(root, **reader_args):
    _, labels = fn.readers.file(file_root=root, name="Reader", **reader_args)
    return labels


def _clear_launchers(monkeypatch):
    for name in ("LOCAL_RANK", "RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "SLURM_LOCALID", "SLURM_PROCID",
                 "SLURM_NTASKS", "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"):
        monkeypatch.delenv(name, raising=False)


def test_pipeline_defaults_under_slurm(numbered_dataset, monkeypatch):
    _clear_launchers(monkeypatch)
    monkeypatch.setenv("SLURM_LOCALID", "0")
    monkeypatch.setenv("SLURM_PROCID", "2")
    monkeypatch.setenv("SLURM_NTASKS", "3")
    with labels_pipe(numbered_dataset, batch_size=2, num_threads=1) as pipe:
        pipe.build()
        meta = pipe.reader_meta("Reader")
        assert (meta["shard_id"], meta["number_of_shards"]) == (2, 3)
        if stoker.topology()["gpus"] and "cuda=yes" in stoker.build_info():
            assert pipe.device_id == 0
        else:
            assert pipe.device_id == -1  # this rank sees no GPU: a CPU pipeline
    with labels_pipe(numbered_dataset, batch_size=2, num_threads=1, device_id=None, shard_id=1,
                     num_shards=2) as pipe:
        pipe.build()
        meta = pipe.reader_meta("Reader")
        assert (pipe.device_id, meta["shard_id"], meta["number_of_shards"]) == (-1, 1, 2)
    with pytest.raises(stoker.ArgumentError, match="device_id"):
        stoker.Pipeline(device_id="first")


# ---- torchrun: equal steps per rank -------------------------------------------------------------
def _torchrun():
    try:
        import torch.distributed as dist
    except ImportError:
        pytest.skip("torch is not installed in this environment (scripts/test-python.sh installs it from PyPI; "
                    "the install failed or was skipped)")
    if not dist.is_available() or not dist.is_gloo_available():
        pytest.skip("this torch has no torch.distributed with the gloo backend")
    torchrun = shutil.which("torchrun", path=os.path.dirname(sys.executable)) or shutil.which("torchrun")
    return [torchrun] if torchrun else [sys.executable, "-m", "torch.distributed.run"]


def _write_tar(path, members):
    """A tar of (name, bytes) and its DALI wds2idx v1.2 index (one line per (jpg, cls) sample)."""
    lines = []
    with tarfile.open(path, "w", format=tarfile.USTAR_FORMAT) as tar:
        for name, payload in members:
            import io

            info = tarfile.TarInfo(name)
            info.size = len(payload)
            tar.addfile(info, io.BytesIO(payload))
    with tarfile.open(path) as tar:
        entries = [(m.name, m.offset_data, m.size) for m in tar.getmembers()]
    for jpg, cls in zip(entries[0::2], entries[1::2]):
        lines.append("jpg %d %d %s cls %d %d %s" % (jpg[1], jpg[2], jpg[0], cls[1], cls[2], cls[0]))
    with open(path[: -len(".tar")] + ".idx", "w") as index:
        index.write("v1.2 %d\n%s\n" % (len(lines), "\n".join(lines)))


@pytest.fixture(scope="module")
def datasets(tmp_path_factory):
    root = tmp_path_factory.mktemp("ranks")
    files = str(root / "file")
    make_dataset(files, [1] * SAMPLES, sizes=((16, 16),))  # one class per sample: label = sample
    numpy_dir = root / "numpy"
    numpy_dir.mkdir()
    for i in range(SAMPLES):
        np.save(str(numpy_dir / ("%02d.npy" % i)), np.full((2,), i, dtype=np.int32))
    wds = root / "webdataset"
    wds.mkdir()
    jpeg = open(os.path.join(files, "class_00", "img_00.jpg"), "rb").read()
    bounds = [0, 3, 6, 9, 11, SAMPLES]  # 5 tar files of 3, 3, 3, 2, 2 samples
    for t in range(len(bounds) - 1):
        members = []
        for i in range(bounds[t], bounds[t + 1]):
            members += [("s%02d.jpg" % i, jpeg), ("s%02d.cls" % i, b"%d\n" % i)]
        _write_tar(str(wds / ("part-%d.tar" % t)), members)
    return {"file": files, "numpy": str(numpy_dir), "webdataset": str(wds)}


CASES = [
    # shards of 3, 3, 3, 4 samples: without padding the readers still give every rank 2 batches
    {"reader": "file", "policy": "fill", "batch": 3, "pad": False},
    {"reader": "file", "policy": "partial", "batch": 3, "pad": True},
    {"reader": "file", "policy": "drop", "batch": 2, "pad": False},
    {"reader": "file", "policy": "fill", "batch": 3, "pad": False, "shuffle": False},
    {"reader": "file", "policy": "fill", "batch": 2, "pad": True, "stick": True, "seed": 3},
    {"reader": "numpy", "policy": "fill", "batch": 3, "pad": True},
    {"reader": "numpy", "policy": "partial", "batch": 2, "pad": False},
    {"reader": "webdataset", "policy": "fill", "batch": 3, "pad": False},
    {"reader": "webdataset", "policy": "partial", "batch": 2, "pad": True},
]


@pytest.fixture(scope="module")
def torchrun_results(datasets, tmp_path_factory):
    command = _torchrun()
    out = str(tmp_path_factory.mktemp("torchrun") / "results.json")
    env = dict(os.environ)
    for name in ("LOCAL_RANK", "RANK", "WORLD_SIZE", "SLURM_LOCALID", "OMPI_COMM_WORLD_LOCAL_RANK"):
        env.pop(name, None)
    env["OMP_NUM_THREADS"] = "1"
    # CPU pipelines on every machine: WORLD ranks on a one-GPU machine would otherwise ask for GPUs
    # 0..WORLD-1 (the rank -> GPU rule is tested on its own, test_affinity.py and the C tests)
    env["CUDA_VISIBLE_DEVICES"] = ""
    run = subprocess.run(
        command + ["--standalone", "--nnodes", "1", "--nproc-per-node", str(WORLD),
                   os.path.join(HERE, "torchrun_worker.py"), "--data", json.dumps(datasets),
                   "--cases", json.dumps(CASES), "--epochs", str(EPOCHS), "--out", out],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=600)
    assert run.returncode == 0, "torchrun failed:\n" + run.stdout[-6000:]
    with open(out) as results:
        ranks = sorted(json.load(results), key=lambda r: r["rank"])
    assert [r["rank"] for r in ranks] == list(range(WORLD))
    return ranks


@pytest.mark.parametrize("case_index", range(len(CASES)), ids=lambda i: "%(reader)s-%(policy)s" % CASES[i] + "-%d" % i)
def test_equal_steps_and_whole_data_set_per_epoch(torchrun_results, datasets, case_index):
    import torchrun_worker

    case = CASES[case_index]
    per_rank = [r["results"][case_index] for r in torchrun_results]
    assert all(result["device_id"] == -1 for result in per_rank)  # CUDA_VISIBLE_DEVICES="": CPU pipelines
    sets = []
    for epoch in range(EPOCHS):
        epochs = [result["epochs"][epoch] for result in per_rank]
        steps = {e["steps"] for e in epochs}
        assert len(steps) == 1 and steps == {e["len"] for e in epochs}, "epoch %d: steps %r, len %r" % (
            epoch, [e["steps"] for e in epochs], [e["len"] for e in epochs])
        assert {e["num_shards"] for e in epochs} == {WORLD}
        ids = [i for e in epochs for batch in e["ids"] for i in batch]
        if case["policy"] == "partial":
            assert sorted(ids) == list(range(SAMPLES)), "epoch %d: each sample exactly once" % epoch
        elif case["policy"] == "fill":
            assert set(ids) == set(range(SAMPLES)), "epoch %d: every sample" % epoch
            assert all(len(batch) == case["batch"] for e in epochs for batch in e["ids"])
        else:  # drop: full batches of distinct samples, the same count on every rank
            assert len(ids) == len(set(ids)) == WORLD * steps.pop() * case["batch"]
        sets.append([frozenset(i for batch in e["ids"] for i in batch) for e in epochs])
    if case.get("stick"):
        assert all(sets[0][r] == sets[e][r] for e in range(EPOCHS) for r in range(WORLD))
    else:
        assert all(sets[0][r] != sets[1][r] for r in range(WORLD)), "the shards move every epoch"
    # the same seed in another process, with explicit shard_id/num_shards, gives each rank's batches
    for rank in range(WORLD):
        reference = torchrun_worker.run_case(case, datasets, EPOCHS, shard_id=rank, num_shards=WORLD)
        assert [e["ids"] for e in reference["epochs"]] == [e["ids"] for e in per_rank[rank]["epochs"]], "rank %d" % rank


def test_training_example_runs_ddp_on_cpu(tmp_path):
    """examples/train_resnet50.py under torchrun, 2 CPU ranks (gloo), stoker and DataLoader rows."""
    command = _torchrun()
    try:
        import torchvision  # noqa: F401
    except ImportError:
        pytest.skip("torchvision is not installed (scripts/test-python.sh installs it with torch)")
    data = str(tmp_path / "data")
    make_dataset(data, [3, 3, 2], sizes=((40, 32),))
    env = dict(os.environ, OMP_NUM_THREADS="1")
    run = subprocess.run(
        command + ["--standalone", "--nproc-per-node", "2", os.path.join(REPO, "examples", "train_resnet50.py"),
                   "--device", "cpu", "--arch", "resnet18", "--image-size", "32", "--batch-size", "2",
                   "--steps", "3", "--warmup", "1", "--workers", "1", "--data", data,
                   "--loader", "synthetic,stoker,pytorch"],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=600)
    assert run.returncode == 0, run.stdout[-6000:]
    lines = [line for line in run.stdout.splitlines() if line.startswith("train_resnet50: loader=")]
    assert [line.split()[1] for line in lines] == ["loader=synthetic", "loader=stoker", "loader=pytorch"], run.stdout
    assert all("ranks=2" in line and "steps=2" in line for line in lines), lines
    assert run.stdout.count("train_resnet50: shortfall") == 2


def test_training_example_ranks_end_the_window_together(tmp_path):
    """examples/train_resnet50.py's time-based warm-up and window under torchrun (2 CPU ranks, DDP),
    rank 1's clock starting 0.5 s after rank 0's: both end the warm-up and the window at the same
    step (a rank deciding by its own clock alone stops first and leaves the other's all-reduce
    waiting: the run never ends), and each rank's window is at least --seconds long."""
    command = _torchrun()
    env = dict(os.environ, OMP_NUM_THREADS="1")
    worker = os.path.join(os.path.dirname(__file__), "torchrun_window_worker.py")
    try:
        run = subprocess.run(command + ["--standalone", "--nproc-per-node", "2", worker, "--out", str(tmp_path),
                                        "--late", "0.5", "--warmup-seconds", "1", "--seconds", "1"],
                             env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=120)
    except subprocess.TimeoutExpired as e:
        pytest.fail("the ranks did not end the window together: still running after 120 s\n%s" % (e.output or "")[-4000:])
    assert run.returncode == 0, run.stdout[-6000:]
    ranks = [json.load(open(str(tmp_path / ("rank%d.json" % r)))) for r in range(2)]
    assert ranks[0]["warmup_steps"] == ranks[1]["warmup_steps"], ranks
    assert ranks[0]["steps"] == ranks[1]["steps"] > 0, ranks
    assert all(r["elapsed"] >= 1.0 and r["warmup_s"] >= 1.0 for r in ranks), ranks
