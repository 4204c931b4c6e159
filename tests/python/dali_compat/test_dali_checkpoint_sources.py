"""Checkpointing external_source and readers.numpy, with DALI's rules (its "External source
checkpointing"): a source that is a callable taking the batch index, a BatchInfo or a SampleInfo
continues from the checkpoint's position; any other source (an iterable, a generator, a callable
without an argument) is not in the checkpoint and starts from its beginning. Resume is exact: the
batches after a restore are those the checkpointed pipeline would have delivered, random operators
included, through pipe.checkpoint(), checkpoint=, restore() and the iterators' checkpoints() /
state_dict()."""
import numpy as np
import pytest

from dali_data import numpy_folder
from stoker import fn, pipeline_def, types
from stoker.iterator import NumpyIterator


def _run(pipe, count):
    return [[np.array(out.as_array()) for out in pipe.run()] for _ in range(count)]


def _same(expected, got):
    assert len(expected) == len(got)
    for want_batch, got_batch in zip(expected, got):
        for want, have in zip(want_batch, got_batch):
            np.testing.assert_array_equal(want, have)


def _resumes_exactly(make, taken_after=3, then=4):
    with make() as pipe:
        _run(pipe, taken_after)
        checkpoint = pipe.checkpoint()
        expected = _run(pipe, then)
    with make(checkpoint=checkpoint) as resumed:
        _same(expected, _run(resumed, then))
    with make() as restored:  # restore() on a built pipeline that ran elsewhere
        _run(restored, 1)
        restored.restore(checkpoint)
        _same(expected, _run(restored, then))
    return checkpoint


def test_numpy_reader_resumes_exactly(tmp_path):
    root = numpy_folder(tmp_path, count=7)

    @pipeline_def(batch_size=3, num_threads=2, device_id=None, enable_checkpointing=True)
    def arrays():
        data = fn.readers.numpy(file_root=root, random_shuffle=True, name="Arrays")
        return data, fn.random.coin_flip()

    checkpoint = _resumes_exactly(arrays, taken_after=4)  # 3 batches an epoch: across its end
    assert "epoch=1" in checkpoint and "position=1" in checkpoint


def _sample_source(info):
    return np.array([info.idx_in_epoch, info.idx_in_batch, info.iteration, info.epoch_idx], dtype=np.int64)


def _batch_info_source(info):
    return [np.array([info.iteration, info.epoch_idx, k], dtype=np.int64) for k in range(2)]


def _index_source(index):
    return [np.array([index, k], dtype=np.int32) for k in range(2)]


@pytest.mark.parametrize("kwargs", [dict(source=_sample_source, batch=False),
                                    dict(source=_batch_info_source, batch_info=True),
                                    dict(source=_index_source)], ids=["SampleInfo", "BatchInfo", "batch index"])
def test_callable_sources_resume_from_the_checkpoint(kwargs):
    @pipeline_def(batch_size=2, num_threads=2, device_id=None)
    def fed():
        data = fn.external_source(**kwargs)
        return data, fn.random.coin_flip(probability=0.5)

    _resumes_exactly(fed)


def test_a_resumed_sample_source_ends_its_epoch_where_it_would():
    def ten_samples(info):
        if info.idx_in_epoch >= 10:
            raise StopIteration
        return np.array([info.idx_in_epoch, info.epoch_idx], dtype=np.int64)

    @pipeline_def(batch_size=2, num_threads=1, device_id=None)
    def fed():
        return fn.external_source(source=ten_samples, batch=False)

    with fed() as pipe:
        _run(pipe, 3)
        checkpoint = pipe.checkpoint()
    with fed(checkpoint=checkpoint) as resumed:
        firsts = [int(np.array(resumed.run()[0].as_array())[0, 0]) for _ in range(2)]
        assert firsts == [6, 8]
        with pytest.raises(StopIteration):
            resumed.run()
        resumed.reset()
        assert np.array(resumed.run()[0].as_array()).tolist() == [[0, 1], [1, 1]]  # epoch 1 from its start


@pytest.mark.parametrize("source", [lambda: iter([[np.array([k], np.int32)] * 2 for k in range(8)]),
                                    lambda: (lambda: [np.array([7], np.int32)] * 2)],
                         ids=["iterable", "no-argument callable"])
def test_other_sources_start_from_their_beginning(source):
    @pipeline_def(batch_size=2, num_threads=1, device_id=None)
    def fed(made):
        return fn.external_source(source=made, cycle="quiet") if not callable(made) else fn.external_source(
            source=made)

    made = source()
    data = list(made) if not callable(made) else made
    with fed(data) as pipe:
        first = _run(pipe, 3)
        checkpoint = pipe.checkpoint()  # allowed: the source is simply not in it
    with fed(data, checkpoint=checkpoint) as resumed:
        _same(first[:1], _run(resumed, 1))


def test_iterator_checkpoints_include_the_external_source():
    @pipeline_def(batch_size=2, num_threads=2, device_id=None, enable_checkpointing=True)
    def fed():
        data = fn.external_source(source=_sample_source, batch=False, dtype=types.INT64)
        return data, fn.random.uniform(range=[0.0, 1.0])

    it = NumpyIterator(fed(), ["data", "noise"], size=40)
    for _ in range(3):
        next(it)
    state = it.state_dict()
    saved = it.checkpoints()
    expected = [next(it) for _ in range(3)]
    for resumed in (NumpyIterator(fed(checkpoint=saved[0]), ["data", "noise"], size=40),):
        got = [next(resumed) for _ in range(3)]
        for want, have in zip(expected, got):
            np.testing.assert_array_equal(want[0]["data"], have[0]["data"])
            np.testing.assert_array_equal(want[0]["noise"], have[0]["noise"])
    loaded = NumpyIterator(fed(), ["data", "noise"], size=40)
    loaded.load_state_dict(state)
    np.testing.assert_array_equal(next(loaded)[0]["data"], expected[0][0]["data"])
