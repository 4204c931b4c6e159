"""Resharding on resume from Python (docs/checkpoint.md, Resharding): a checkpoint taken with
num_shards=N_old in the middle of an epoch, given to pipelines with N_new shards
(``checkpoint=...``), continues the epoch: what the old ranks delivered before it plus what the new
ranks deliver after it is every sample exactly once, every new rank counts the same batches, the
next epoch is the normal N_new sharding, and a checkpoint inside the remainder resumes exactly.
The labels of ``numbered_dataset`` identify its 13 samples."""
import numpy as np
import pytest

from stoker import StokerError, fn, pipeline_def

SAMPLES = 13


@pipeline_def(batch_size=2, num_threads=1, seed=5, prefetch_queue_depth=2)
def labels_of(root, shards=1, shard=0, shuffle=True, skip_bad=False):
    jpegs, labels = fn.readers.file(file_root=root, num_shards=shards, shard_id=shard, random_shuffle=shuffle,
                                    initial_fill=4, skip_bad_files=skip_bad, name="Reader")
    return labels


def epoch(pipe):
    """The rest of the epoch: a list of (labels of the valid samples, every label) per batch."""
    out = []
    while True:
        try:
            batch = pipe.run_batch()
        except StopIteration:
            return out
        labels = np.array(np.from_dlpack(batch.outputs[0]), copy=True).reshape(-1)
        out.append((list(labels[: batch.valid_samples]), list(labels)))


def old_ranks(root, n_old, shuffle):
    """Epoch 0 read through, then epoch 1 with a checkpoint after every batch, for every rank:
    (texts[rank][b], delivered[rank][b])."""
    texts, delivered = [], []
    for r in range(n_old):
        pipe = labels_of(root, shards=n_old, shard=r, shuffle=shuffle, enable_checkpointing=True)
        epoch(pipe)
        pipe.reset()
        t, d = [pipe.checkpoint()], []
        while True:
            try:
                batch = pipe.run_batch()
            except StopIteration:
                break
            d.append(list(np.array(np.from_dlpack(batch.outputs[0])).reshape(-1)[: batch.valid_samples]))
            t.append(pipe.checkpoint())
        pipe.close()
        texts.append(t)
        delivered.append(d)
    return texts, delivered


@pytest.mark.parametrize("shuffle", [False, True])
@pytest.mark.parametrize("n_old", [1, 2, 3, 4])
def test_reshard_mid_epoch_delivers_every_sample_once(numbered_dataset, n_old, shuffle):
    texts, delivered = old_ranks(numbered_dataset, n_old, shuffle)
    for b in range(len(texts[0])):
        for n_new in (1, 2, 3, 5):
            seen = [x for r in range(n_old) for batch in delivered[r][:b] for x in batch]
            counts = set()
            for t in range(n_new):
                pipe = labels_of(numbered_dataset, shards=n_new, shard=t, shuffle=shuffle,
                                 checkpoint=texts[t % n_old][b])
                rest = epoch(pipe)
                counts.add(len(rest))
                seen += [x for valid, _ in rest for x in valid]
                if t == 0 and b == len(texts[0]) // 2:
                    pipe.reset()  # the next epoch: the normal sharding
                    fresh = labels_of(numbered_dataset, shards=n_new, shard=0, shuffle=shuffle)
                    for _ in range(2):
                        epoch(fresh)
                        fresh.reset()
                    assert epoch(pipe) == epoch(fresh)
                    fresh.close()
                pipe.close()
            assert len(counts) == 1, "%d -> %d at %d: batch counts %s" % (n_old, n_new, b, counts)
            assert sorted(seen) == list(range(SAMPLES)), "%d -> %d shards at batch %d" % (n_old, n_new, b)


def test_checkpoint_inside_the_remainder_resumes_exactly(numbered_dataset):
    texts, _ = old_ranks(numbered_dataset, 2, True)  # after batch 1: 9 samples left, 3 a new rank
    for j in range(3):
        pipe = labels_of(numbered_dataset, shards=3, shard=2, checkpoint=texts[0][1])
        for _ in range(j):
            pipe.run_batch()
        state = pipe.checkpoint()
        assert "\nreshard=2/1\n" in state
        want = epoch(pipe)
        assert len(want) == 2 - j
        pipe.close()
        resumed = labels_of(numbered_dataset, shards=3, shard=2)
        resumed.restore(state)
        assert epoch(resumed) == want
        resumed.close()


def test_reshard_under_skip_bad_files_is_refused(numbered_dataset):
    pipe = labels_of(numbered_dataset, shards=2, skip_bad=True)
    pipe.run_batch()
    state = pipe.checkpoint()
    pipe.close()
    with pytest.raises(StokerError, match="refused under skip_bad_files"):
        labels_of(numbered_dataset, shards=3, skip_bad=True, checkpoint=state).build()
