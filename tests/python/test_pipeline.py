"""Pipeline build/run, epochs and reset, outputs, determinism, teardown, leaks (CPU only)."""
import gc
import os

import numpy as np
import pytest

from stoker import Pipeline, StokerError, fn, pipeline_def, types


@pipeline_def
def labels_pipe(root, **reader_args):
    jpegs, labels = fn.readers.file(file_root=root, name="Reader", **reader_args)
    return labels


@pipeline_def
def image_pipe(root, size=32, shuffle=True):
    jpegs, labels = fn.readers.file(file_root=root, random_shuffle=shuffle, name="Reader")
    images = fn.decoders.image(jpegs)
    images = fn.random_resized_crop(images, size=[size, size])
    images = fn.crop_mirror_normalize(images, mean=[128.0, 128.0, 128.0], std=[64.0, 64.0, 64.0],
                                      mirror=fn.random.coin_flip(probability=0.5))
    return images, labels


def labels_of(output):
    return [int(v) for v in np.asarray(output.as_array()).reshape(-1)]


def epoch_labels(pipe, valid_only=True):
    seen = []
    while True:
        try:
            batch = pipe.run_batch()
        except StopIteration:
            return seen
        labels = labels_of(batch.outputs[0])
        seen.extend(labels[: batch.valid_samples] if valid_only else labels)


def test_build_and_run_dense_images(small_dataset):
    with image_pipe(small_dataset, batch_size=4, num_threads=2, device_id=None) as pipe:
        pipe.build()
        images, labels = pipe.run()
        assert images.device == "cpu" and labels.device == "cpu"
        assert images.shape() == [(3, 32, 32)] * 4
        assert images.dtype == types.FLOAT and images.layout() == "CHW"
        array = images.as_array()
        assert array.shape == (4, 3, 32, 32) and array.dtype == np.float32
        assert np.isfinite(array).all() and array.std() > 0
        assert all(0 <= v < 3 for v in labels_of(labels))
    assert pipe.is_closed


def test_epoch_size_reader_meta_and_epochs(small_dataset):
    with labels_pipe(small_dataset, batch_size=6, num_threads=2) as pipe:
        pipe.build()
        assert pipe.epoch_size("Reader") == 20
        assert pipe.epoch_size() == {"Reader": 20}
        meta = pipe.reader_meta("Reader")
        assert meta["epoch_size"] == 20 and meta["number_of_shards"] == 1 and meta["shard_id"] == 0
        first = epoch_labels(pipe)
        assert sorted(first) == [0] * 7 + [1] * 7 + [2] * 6
        with pytest.raises(StopIteration):
            pipe.run_batch()
        pipe.reset()
        assert sorted(epoch_labels(pipe)) == sorted(first)
        # mid-epoch reset starts a fresh epoch
        pipe.reset()
        pipe.run()
        pipe.reset()
        assert sorted(epoch_labels(pipe)) == sorted(first)


def test_outputs_invalid_after_next_run_but_copies_and_exports_survive(small_dataset):
    with image_pipe(small_dataset, batch_size=4, num_threads=2) as pipe:
        pipe.build()
        images, _ = pipe.run()
        copy = np.array(images.as_array())       # what the docs tell users to do to keep data
        view = images.as_array()                 # zero-copy: holds a reference on the batch
        for _ in range(3):
            later, _ = pipe.run()
        np.testing.assert_array_equal(copy, view)
        with pytest.raises(StokerError):
            images.as_array()
        assert later.as_array().shape == copy.shape


def test_dlpack_round_trip_into_numpy(small_dataset):
    with image_pipe(small_dataset, batch_size=4, num_threads=1) as pipe:
        pipe.build()
        images, labels = pipe.run()
        assert images.__dlpack_device__() == (1, 0)
        a = np.from_dlpack(images)
        b = np.from_dlpack(images)
        assert a.ctypes.data == b.ctypes.data  # the same memory: zero-copy
        assert a.ctypes.data == images._info["data"]
        np.testing.assert_array_equal(a[2], images.at(2))  # per-sample copy path agrees
        # an unconsumed capsule frees its tensor when dropped
        capsule = images.__dlpack__()
        del capsule
        gc.collect()


def test_ragged_outputs_per_sample(small_dataset):
    @pipeline_def(batch_size=3, num_threads=1)
    def decode_only(root):
        jpegs, labels = fn.readers.file(file_root=root)
        return fn.decoders.image(jpegs), labels

    with decode_only(small_dataset) as pipe:
        pipe.build()
        images, _ = pipe.run()
        samples = [images.at(i) for i in range(len(images))]
        assert len(samples) == 3 and not images.is_dense_tensor()
        assert {s.shape for s in samples} <= {(48, 64, 3), (64, 48, 3), (60, 80, 3)}
        assert images.shape() == [s.shape for s in samples]
        with pytest.raises(StokerError):
            np.from_dlpack(images)
        with pytest.raises(StokerError, match="ragged"):
            images.as_array()


def run_digest(root, num_threads, seed, prefetch=2, batches=4):
    with image_pipe(root, batch_size=4, num_threads=num_threads, seed=seed, prefetch_queue_depth=prefetch) as pipe:
        pipe.build()
        out = []
        for _ in range(batches):
            images, labels = pipe.run()
            out.append((np.array(images.as_array()), labels_of(labels)))
        return out


def test_determinism_across_threads_and_prefetch(small_dataset):
    a = run_digest(small_dataset, num_threads=1, seed=7, prefetch=1)
    b = run_digest(small_dataset, num_threads=2, seed=7, prefetch=3)
    for (ia, la), (ib, lb) in zip(a, b):
        assert la == lb
        np.testing.assert_array_equal(ia, ib)
    c = run_digest(small_dataset, num_threads=2, seed=8)
    assert any(not np.array_equal(x[0], y[0]) for x, y in zip(a, c))


def test_read_ahead_changes_no_output(small_dataset):
    """fn.readers.file(read_ahead=True) (DALI's argument) reaches the reader and delivers the same
    files in the same order as without it; a wrong type is refused naming the argument."""
    def epoch(**reader_args):
        with labels_pipe(small_dataset, batch_size=6, num_threads=2, seed=3, random_shuffle=True,
                         **reader_args) as pipe:
            pipe.build()
            return epoch_labels(pipe, valid_only=False)
    assert epoch(read_ahead=True) == epoch(read_ahead=False) == epoch()
    with pytest.raises(StokerError, match="read_ahead"):
        with labels_pipe(small_dataset, batch_size=6, num_threads=2, read_ahead="sometimes") as pipe:
            pipe.build()


def test_teardown_with_batches_in_flight(small_dataset):
    pipe = image_pipe(small_dataset, batch_size=2, num_threads=2, prefetch_queue_depth=3)
    pipe.build()
    images, _ = pipe.run()
    kept = images.as_array()
    expected = np.array(kept)
    pipe.close()  # workers still busy prefetching
    np.testing.assert_array_equal(kept, expected)  # exported memory outlives the pipeline
    with pytest.raises(StokerError):
        pipe.run()
    pipe.close()  # idempotent
    # dropping a running pipeline without close() must not hang or crash
    other = image_pipe(small_dataset, batch_size=2, num_threads=2)
    other.build()
    other.run()
    del other
    gc.collect()


def rss_kb():
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def test_no_leak_over_many_pipelines(small_dataset):
    def cycle():
        with image_pipe(small_dataset, batch_size=4, num_threads=2) as pipe:
            pipe.build()
            for _ in range(2):
                images, labels = pipe.run()
                np.from_dlpack(images).sum()

    for _ in range(5):  # warm up allocators and caches
        cycle()
    gc.collect()
    before = rss_kb()
    for _ in range(60):
        cycle()
    gc.collect()
    growth = rss_kb() - before
    assert growth < 16 * 1024, "RSS grew by %d kB over 60 pipelines" % growth


def test_plain_pipeline_with_block(small_dataset):
    pipe = Pipeline(batch_size=5, num_threads=1)
    with pipe:
        jpegs, labels = fn.readers.file(file_root=small_dataset, name="R")
        pipe.set_outputs(labels)
    assert not pipe.is_closed  # a definition block leaves the pipeline open
    pipe.build()
    assert len(labels_of(pipe.run()[0])) == 5
    pipe.close()


def test_call_time_arguments_override_decorator(small_dataset):
    @pipeline_def(batch_size=3, num_threads=1, seed=1)
    def p(root):
        return fn.readers.file(file_root=root)[1]

    pipe = p(small_dataset, batch_size=5)
    assert pipe.batch_size == 5 and pipe.seed == 1
    pipe.close()


def test_sharding_every_sample_once_per_epoch(numbered_dataset):
    for num_shards in (1, 2, 3, 4):
        seen = []
        for shard in range(num_shards):
            with labels_pipe(numbered_dataset, batch_size=2, num_threads=1, shard_id=shard,
                             num_shards=num_shards) as pipe:
                pipe.build()
                meta = pipe.reader_meta("Reader")
                assert meta["shard_id"] == shard and meta["number_of_shards"] == num_shards
                labels = epoch_labels(pipe)
                assert len(labels) == meta["shard_size"]
                seen.extend(labels)
        assert sorted(seen) == list(range(13)), "num_shards=%d" % num_shards


def test_sharding_from_rank_and_world_size(numbered_dataset, monkeypatch):
    monkeypatch.setenv("RANK", "1")
    monkeypatch.setenv("WORLD_SIZE", "3")
    with labels_pipe(numbered_dataset, batch_size=2, num_threads=1) as pipe:
        pipe.build()
        meta = pipe.reader_meta("Reader")
        assert (meta["shard_id"], meta["number_of_shards"]) == (1, 3)
    # explicit arguments win over the environment
    with labels_pipe(numbered_dataset, batch_size=2, num_threads=1, shard_id=0, num_shards=2) as pipe:
        pipe.build()
        meta = pipe.reader_meta("Reader")
        assert (meta["shard_id"], meta["number_of_shards"]) == (0, 2)


def test_stats_report_threads(small_dataset):
    with image_pipe(small_dataset, batch_size=4, num_threads=2) as pipe:
        pipe.build()
        pipe.run()
        stats = pipe.stats()
        assert stats["batches"] >= 1 and len(stats["thread_cpus"]) == 2
        allowed = os.sched_getaffinity(0)
        assert all(cpu == -1 or cpu in allowed for cpu in stats["thread_cpus"])
        assert stats["decoder_route"] == ""  # the mixed decoder's routing record: none on the CPU
