"""The iterators' epoch length and end with reader_name (issues 14 and 16), on the framework-free
stoker.iterator.NumpyIterator (stoker.torch's iterators share it), so it runs without torch:

* every epoch, not only the first, while the shards move (stick_to_shard=False) and differ by one
  sample: len() is the number of steps the epoch really has, DROP takes the same number of steps
  on every rank (the smallest shard's whole batches) and returns only real samples;
* an iterator over a pipeline restored mid-epoch (checkpoint=, or load_state_dict) continues that
  epoch: len() and the steps are its remaining batches, then whole epochs;
* a remainder resharded on resume (docs/checkpoint.md): DROP's equal steps are the remainder's;
* readers.webdataset without an index (sizes unknown before reading): len() raises TypeError, DROP
  ends at the first batch that is not full.

numbered_dataset: 13 samples, one per class, label = sample; 4 shards of 3, 3, 3, 4 samples.
"""
import os
import time

import numpy as np
import pytest

from stoker import LastBatchPolicy, fn, pipeline_def
from stoker.iterator import NumpyIterator

SAMPLES = 13
SHARDS = 4
POLICIES = list(LastBatchPolicy)


@pipeline_def(batch_size=2, num_threads=1, seed=9, prefetch_queue_depth=3)
def numbered(root, shard_id=0, num_shards=1, pad=False, stick=False, shuffle=False):
    _, labels = fn.readers.file(file_root=root, shard_id=shard_id, num_shards=num_shards, pad_last_batch=pad,
                                stick_to_shard=stick, random_shuffle=shuffle, name="Reader")
    return labels


def ids(step):
    return [int(v) for v in np.asarray(step[0]["ids"]).reshape(-1)]


def run_epoch(it):
    return [ids(step) for step in it]


def shard_samples(shard, shards=SHARDS):
    return list(range(SAMPLES * shard // shards, SAMPLES * (shard + 1) // shards))


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("stick,pad", [(False, False), (False, True), (True, False)])
def test_every_epoch_on_moving_shards(numbered_dataset, policy, stick, pad):
    epochs = 3
    steps = {}
    union = [[] for _ in range(epochs)]
    for rank in range(SHARDS):
        pipe = numbered(numbered_dataset, shard_id=rank, num_shards=SHARDS, pad=pad, stick=stick)
        it = NumpyIterator(pipe, ["ids"], reader_name="Reader", last_batch_policy=policy)
        for e in range(epochs):
            shard = rank if stick else (rank + e) % SHARDS
            length = len(it)
            batches = run_epoch(it)
            steps[rank, e] = len(batches)
            assert len(batches) == length, "rank %d epoch %d: %d steps, len() %d" % (rank, e, len(batches), length)
            real = [v for b in batches for v in b]
            if policy == LastBatchPolicy.DROP:
                assert all(len(b) == 2 for b in batches)
                assert real == shard_samples(shard)[: len(real)]  # real samples only, in order
            elif policy == LastBatchPolicy.PARTIAL:
                assert real == shard_samples(shard)
            else:
                assert all(len(b) == 2 for b in batches) and real[: len(shard_samples(shard))] == shard_samples(shard)
            union[e] += real
            it.reset()
        pipe.close()
    expected = 1 if policy == LastBatchPolicy.DROP else 2  # floor(3 / 2), ceil(4 / 2)
    assert set(steps.values()) == {expected}, steps
    if policy == LastBatchPolicy.PARTIAL:
        assert all(sorted(u) == list(range(SAMPLES)) for u in union)


def _checkpoint_after(root, taken, shards, rank, **reader):
    """The checkpoint of rank `rank` after `taken` batches of epoch 1 (epoch 0 read through)."""
    pipe = numbered(root, shard_id=rank, num_shards=shards, **reader)
    pipe.build()
    while True:
        try:
            pipe.run_batch()
        except StopIteration:
            break
    pipe.reset()
    for _ in range(taken):
        pipe.run_batch()
    text = pipe.checkpoint()
    pipe.close()
    return text


def _epochs(pipe, policy, count, **iterator):
    """[(len(), batches)] of `count` epochs through one iterator."""
    it = NumpyIterator(pipe, ["ids"], reader_name="Reader", last_batch_policy=policy, **iterator)
    out = []
    for _ in range(count):
        length = len(it)
        out.append((length, run_epoch(it)))
        it.reset()
    return out


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("shuffle", [False, True])
def test_restored_mid_epoch_continues_the_epoch(numbered_dataset, policy, shuffle):
    for rank in range(SHARDS):
        reference = numbered(numbered_dataset, shard_id=rank, num_shards=SHARDS, shuffle=shuffle)
        whole = _epochs(reference, policy, 3)  # epochs 0, 1, 2
        reference.close()
        text = _checkpoint_after(numbered_dataset, 1, SHARDS, rank, shuffle=shuffle)
        resumed = numbered(numbered_dataset, shard_id=rank, num_shards=SHARDS, shuffle=shuffle, checkpoint=text)
        (rest_len, rest), (next_len, following) = _epochs(resumed, policy, 2)
        resumed.close()
        # epoch 1 from its batch 1: the remaining batches (DROP: every rank stops after 1 step)
        assert rest == whole[1][1][1:], "rank %d" % rank
        assert rest_len == len(rest) == (0 if policy == LastBatchPolicy.DROP else 1)
        assert (next_len, following) == whole[2]  # then whole epochs


@pytest.mark.parametrize("policy", POLICIES)
def test_load_state_dict_mid_epoch_continues_the_epoch(numbered_dataset, policy):
    rank = 3  # the 4-sample shard in epoch 0: DROP's equal steps stop it before its second full batch
    pipe = numbered(numbered_dataset, shard_id=rank, num_shards=SHARDS)
    it = NumpyIterator(pipe, ["ids"], reader_name="Reader", last_batch_policy=policy)
    first = next(it)
    state = it.state_dict()
    rest = run_epoch(it)
    pipe.close()
    other = numbered(numbered_dataset, shard_id=rank, num_shards=SHARDS)
    it = NumpyIterator(other, ["ids"], reader_name="Reader", last_batch_policy=policy)
    it.load_state_dict(state)
    assert len(it) == len(rest) == (0 if policy == LastBatchPolicy.DROP else 1)
    assert run_epoch(it) == rest
    it.reset()
    assert len(it) == (1 if policy == LastBatchPolicy.DROP else 2)
    assert ids(first) == [9, 10]
    other.close()


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("new_shards,batches,full", [(2, 3, 2), (3, 2, 1)])
def test_resharded_remainder_counts_its_own_steps(numbered_dataset, policy, new_shards, batches, full):
    """One shard, checkpoint after 1 batch of epoch 1 (11 samples left), resumed on 2 shards (5 and
    6 samples: 3 batches, 2 full on both) or 3 (3, 4, 4: 2 batches, 1 full on all)."""
    text = _checkpoint_after(numbered_dataset, 1, 1, 0)
    seen = []
    for rank in range(new_shards):
        pipe = numbered(numbered_dataset, shard_id=rank, num_shards=new_shards, checkpoint=text)
        (length, rest), (next_len, _) = _epochs(pipe, policy, 2)
        pipe.close()
        expected = full if policy == LastBatchPolicy.DROP else batches
        assert length == len(rest) == expected, "rank %d of %d" % (rank, new_shards)
        if policy == LastBatchPolicy.DROP:
            assert all(len(b) == 2 for b in rest)
        if policy == LastBatchPolicy.PARTIAL:
            seen += [v for b in rest for v in b]
        largest = -(-SAMPLES // new_shards)
        assert next_len == (SAMPLES // new_shards // 2 if policy == LastBatchPolicy.DROP else -(-largest // 2))
    if policy == LastBatchPolicy.PARTIAL:
        assert len(seen) == len(set(seen)) == SAMPLES - 2


@pytest.fixture(scope="module")
def tar_parts(tmp_path_factory):
    """Five tar files of 3, 3, 3, 2, 2 samples (ids 0..12) with their indexes."""
    from test_distributed import _write_tar

    root = tmp_path_factory.mktemp("parts")
    bounds = [0, 3, 6, 9, 11, SAMPLES]
    for t in range(len(bounds) - 1):
        members = []
        for i in range(bounds[t], bounds[t + 1]):
            members += [("s%02d.jpg" % i, b"not decoded"), ("s%02d.cls" % i, b"%d\n" % i)]
        _write_tar(str(root / ("part-%d.tar" % t)), members)
    return sorted(str(root / p) for p in os.listdir(str(root)) if p.endswith(".tar"))


@pipeline_def(batch_size=2, num_threads=1, seed=9)
def parts(paths, indexed, shard_id):
    index = [p[: -len(".tar")] + ".idx" for p in paths] if indexed else None
    outputs = fn.readers.webdataset(paths=paths, index_paths=index, ext=["jpg", "cls"], label_ext="cls",
                                    shard_id=shard_id, num_shards=2, name="Reader")
    return outputs[1]


@pytest.mark.parametrize("policy", POLICIES)
def test_webdataset_sizes_known_or_not(tar_parts, policy):
    # shard 1 of 2 in epoch 0: with the index samples 6..12; without, the files 2..4 (samples 6..12)
    for indexed in (True, False):
        pipe = parts(tar_parts, indexed, 1)
        it = NumpyIterator(pipe, ["ids"], reader_name="Reader", last_batch_policy=policy)
        if indexed:
            assert len(it) == (3 if policy == LastBatchPolicy.DROP else 4)
        else:
            with pytest.raises(TypeError, match="unknown"):
                len(it)
        batches = run_epoch(it)
        if policy == LastBatchPolicy.DROP:
            assert batches == [[6, 7], [8, 9], [10, 11]]
        else:
            assert [v for b in batches for v in b][:7] == list(range(6, 13)) and len(batches) == 4
        pipe.close()


@pytest.mark.parametrize("policy", POLICIES)
def test_two_pipelines_in_one_iterator_restored(numbered_dataset, policy):
    """One process, two pipelines (ranks 2 and 3 of 4), both restored after 1 batch of epoch 1."""
    texts = [_checkpoint_after(numbered_dataset, 1, SHARDS, rank) for rank in (2, 3)]
    pipes = [numbered(numbered_dataset, shard_id=rank, num_shards=SHARDS, checkpoint=text)
             for rank, text in zip((2, 3), texts)]
    it = NumpyIterator(pipes, ["ids"], reader_name="Reader", last_batch_policy=policy)
    length = len(it)
    steps = [[ids([part]) for part in step] for step in it]
    assert length == len(steps) == (0 if policy == LastBatchPolicy.DROP else 1)
    if policy != LastBatchPolicy.DROP:  # epoch 1: rank 2 reads shard 3 (9..12), rank 3 shard 0 (0..2)
        assert steps[0][0] == [11, 12] and steps[0][1][:1] == [2]
    it.reset()
    assert len(it) == len(list(it)) == (1 if policy == LastBatchPolicy.DROP else 2)
    for pipe in pipes:
        pipe.close()


@pytest.mark.parametrize("policy", POLICIES)
def test_epoch_end_keeps_the_prefetch(numbered_dataset, policy):
    """Every policy's epoch end, DROP's included (it stops before the readers' partial last batch),
    keeps the batches the pipeline prefetched across the boundary: stats' batches_discarded stays 0
    over several auto-reset epochs (a mid-epoch reset discarded the next epoch's first batches and
    started it from an empty queue). A reset mid-epoch still discards (the stat counts them)."""
    pipe = numbered(numbered_dataset)  # 13 samples in batches of 2: 6 full, 1 partial
    it = NumpyIterator(pipe, ["ids"], reader_name="Reader", last_batch_policy=policy, auto_reset=True)
    for _ in range(4):
        batches = run_epoch(it)
        assert len(batches) == (6 if policy == LastBatchPolicy.DROP else 7)
        assert set(range(12)) <= {v for b in batches for v in b}
    assert pipe.stats()["batches_discarded"] == 0
    next(it)
    time.sleep(0.1)  # the pipeline plans the epoch's next batches meanwhile
    it.reset()  # mid-epoch: what is in flight is dropped
    assert pipe.stats()["batches_discarded"] > 0
    assert set(range(12)) <= {v for b in run_epoch(it) for v in b}
    pipe.close()
