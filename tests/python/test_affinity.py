"""Topology and affinity from Python on this machine (2 CPUs, maybe no GPU): topology(),
plan/set_affinity, and WorkerAffinity pinning worker processes under fork and spawn."""
import multiprocessing
import os
import pickle

import pytest

import stoker
from stoker import StokerError
from stoker.affinity import WorkerAffinity, plan, set_affinity
from stoker.torch import worker_init_fn

from conftest import requires_torch

NUM_GPUS = stoker._stoker.num_gpus()
requires_gpu_topology = pytest.mark.skipif(NUM_GPUS == 0, reason="no GPU in this machine's topology")
requires_no_gpu = pytest.mark.skipif(NUM_GPUS > 0, reason="this machine has GPUs")


def test_topology_describes_this_machine():
    topo = stoker.topology()
    assert isinstance(topo, dict) and topo
    text = repr(topo)
    assert "cpu" in text.lower()


@requires_no_gpu
def test_set_affinity_without_gpu_says_why():
    before = os.sched_getaffinity(0)
    with pytest.raises(StokerError) as info:
        set_affinity(0)
    assert "GPU" in str(info.value)
    assert os.sched_getaffinity(0) == before  # nothing was changed
    with pytest.raises(StokerError):
        worker_init_fn(gpu_id=0)


@requires_gpu_topology
def test_set_affinity_pins_inside_the_allowed_set():
    before = os.sched_getaffinity(0)
    try:
        ranks = plan()
        got = set_affinity(0)
        assert got == set(ranks[0]["cpus"]) and got <= before
        assert got == os.sched_getaffinity(0)
    finally:
        os.sched_setaffinity(0, before)


def test_bad_mode_is_rejected():
    with pytest.raises(ValueError):
        plan(mode="sockets")


def report_affinity(init):
    init(0)
    return sorted(os.sched_getaffinity(0))


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_worker_affinity_survives_fork_and_spawn(method):
    allowed = sorted(os.sched_getaffinity(0))
    target = allowed[-1:]
    init = WorkerAffinity(target, numa_node=0, mempolicy="preferred")
    assert pickle.loads(pickle.dumps(init)).cpus == tuple(target)
    context = multiprocessing.get_context(method)
    with context.Pool(2) as pool:
        results = pool.map(report_affinity, [init, init])
    assert results == [target, target]
    assert sorted(os.sched_getaffinity(0)) == allowed  # the parent is untouched


@requires_gpu_topology
def test_worker_init_fn_plan_is_computed_in_parent():
    init = worker_init_fn(gpu_id=0)
    assert isinstance(init, WorkerAffinity) and init.cpus
    assert pickle.loads(pickle.dumps(init)).cpus == init.cpus


class TinyDataset:
    def __len__(self):
        return 4

    def __getitem__(self, index):
        import torch

        return torch.tensor(sorted(os.sched_getaffinity(0)) + [-1] * (64 - len(os.sched_getaffinity(0))))


@requires_torch
@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_dataloader_workers_are_pinned(method):
    import torch

    target = sorted(os.sched_getaffinity(0))[-1:]
    init = WorkerAffinity(target, numa_node=None) if NUM_GPUS == 0 else worker_init_fn(gpu_id=0)
    expected = list(init.cpus)
    loader = torch.utils.data.DataLoader(TinyDataset(), batch_size=1, num_workers=2, worker_init_fn=init,
                                         multiprocessing_context=method)
    for batch in loader:
        cpus = [c for c in batch[0].tolist() if c >= 0]
        assert cpus == expected
