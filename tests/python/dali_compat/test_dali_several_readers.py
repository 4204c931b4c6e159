"""Several readers in one pipeline, as DALI allows: each with its own sharding, shuffling and
epoch, reader_meta()/epoch_size() by name, source_info() per reader, an iterator whose
reader_name is the second reader counting that reader's epoch, and exact checkpoint/resume of
every reader's position."""
import os

import numpy as np
import pytest

from dali_data import jpeg_folder, numpy_folder
from stoker import StokerError, fn, pipeline_def
from stoker.iterator import LastBatchPolicy, NumpyIterator


@pipeline_def(batch_size=4, num_threads=2, device_id=None)
def files_and_arrays(jpegs_root, arrays_root):
    jpegs, labels = fn.readers.file(file_root=jpegs_root, name="Reader")
    arrays = fn.readers.numpy(file_root=arrays_root, name="Arrays")
    return labels, arrays


def _data(tmp_path):
    return jpeg_folder(tmp_path / "jpegs"), numpy_folder(tmp_path / "arrays", count=5)


def test_each_reader_keeps_its_own_epoch(tmp_path):
    with files_and_arrays(*_data(tmp_path)) as pipe:
        assert pipe.epoch_size() == {"Reader": 12, "Arrays": 5}
        meta = pipe.reader_meta()
        assert meta["Reader"]["epoch_reader"] and not meta["Arrays"]["epoch_reader"]
        firsts = []
        for _ in range(6):  # two epochs of Reader (3 batches each): Arrays runs on over its own
            labels, arrays = pipe.run()
            firsts.append([int(np.array(a)[0, 0]) for a in arrays])
        # Arrays: 5 samples, batches of 4: [0 1 2 3] then [4 + fill from the start], again and again
        assert firsts == [[0, 1, 2, 3], [4, 0, 1, 2]] * 3
        assert pipe.reader_meta("Arrays")["epoch"] == 3 and pipe.reader_meta("Arrays")["epoch_next_batch"] == 0


def test_source_info_follows_each_reader(tmp_path):
    jpegs, arrays_root = _data(tmp_path)

    @pipeline_def(batch_size=4, num_threads=1, device_id=None)
    def decoded():
        encoded, labels = fn.readers.file(file_root=jpegs, name="Reader")
        images = fn.decoders.image(encoded)
        return images, fn.readers.numpy(file_root=arrays_root, name="Arrays")

    with decoded() as pipe:
        images, arrays = pipe.run()
        infos = images.source_info()
        assert all(info.startswith(jpegs) and info.endswith(".jpg") for info in infos), infos
        assert images[0].source_info() == infos[0]  # the decoded image keeps its file's source
        assert arrays.source_info() == [os.path.join(arrays_root, "%02d.npy" % i) for i in range(4)]
        assert arrays[3].source_info().endswith("03.npy")


def test_two_file_readers_shard_on_their_own(tmp_path):
    root = jpeg_folder(tmp_path)

    @pipeline_def(batch_size=6, num_threads=1, device_id=None)
    def halves():
        first, _ = fn.readers.file(file_root=root, num_shards=2, shard_id=0, name="First")
        second, _ = fn.readers.file(file_root=root, num_shards=2, shard_id=1, name="Second")
        return first, second

    with halves() as pipe:
        assert pipe.reader_meta("Second")["shard_id"] == 1
        first, second = pipe.run()
        first_files, second_files = set(first.source_info()), set(second.source_info())
        assert len(first_files) == 6 and len(second_files) == 6 and not first_files & second_files
        # each reader's epoch (one batch here) moves it to the next shard, as DALI's readers do
        assert pipe.reader_meta("Second")["shard_id"] == 0 and pipe.reader_meta("First")["shard_id"] == 0


@pytest.mark.parametrize("policy,steps,last", [(LastBatchPolicy.PARTIAL, 2, 1), (LastBatchPolicy.FILL, 2, 4),
                                               (LastBatchPolicy.DROP, 1, 4)])
def test_iterator_counts_the_named_readers_epoch(tmp_path, policy, steps, last):
    pipe = files_and_arrays(*_data(tmp_path))
    it = NumpyIterator(pipe, ["labels", "arrays"], reader_name="Arrays", last_batch_policy=policy, auto_reset=True)
    assert len(it) == steps
    for _epoch in range(3):  # Arrays' epochs (2 batches) run across Reader's (3 batches)
        got = [batch[0]["arrays"] for batch in it]
        assert len(got) == steps and got[-1].shape[0] == last
        assert got[0][0, 0, 0] == 0  # every epoch of Arrays starts at its first sample
    pipe.close()


@pipeline_def(batch_size=5, num_threads=2, device_id=None)
def two_shuffled(root):
    first, first_labels = fn.readers.file(file_root=root, random_shuffle=True, name="Reader")
    second, second_labels = fn.readers.file(file_root=root, random_shuffle=True, num_shards=2, shard_id=1,
                                            seed=7, name="Second")
    return first, first_labels, second, second_labels


@pytest.mark.parametrize("taken_after", [2, 4, 5])  # mid-epoch of both; across their epoch ends
def test_checkpoint_resumes_every_reader_exactly(tmp_path, taken_after):
    root = jpeg_folder(tmp_path)
    with two_shuffled(root) as pipe:
        for _ in range(taken_after):
            pipe.run()
        checkpoint = pipe.checkpoint()
        assert "readers=" in checkpoint
        expected = [[o.source_info() for o in pipe.run()] for _ in range(5)]
    with two_shuffled(root, checkpoint=checkpoint) as resumed:
        assert [[o.source_info() for o in resumed.run()] for _ in range(5)] == expected
    with two_shuffled(root) as restored:  # restore() on a built pipeline that ran elsewhere
        restored.run()
        restored.restore(checkpoint)
        assert [[o.source_info() for o in restored.run()] for _ in range(5)] == expected


def test_an_external_source_is_the_epoch_reader(tmp_path):
    jpegs, arrays_root = _data(tmp_path)

    @pipeline_def(batch_size=4, num_threads=1, device_id=None)
    def two_external():
        first = fn.external_source(source=lambda: [np.zeros(2, np.float32)] * 4, name="a")
        arrays = fn.readers.numpy(file_root=arrays_root, name="Arrays")
        return first, arrays

    with two_external() as pipe:  # external source + reader: the source is the epoch reader
        first, arrays = pipe.run()
        assert len(first) == 4 and not pipe.reader_meta("Arrays")["epoch_reader"]
