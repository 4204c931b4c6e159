"""The iterators' last-batch policies, checked against DALI's docstring table exactly, plus len(),
reset/auto_reset and legacy size mode. Uses the framework-free stoker.iterator.NumpyIterator
(NumPy), which stoker.torch's iterators share, so it runs on CI without torch."""
import numpy as np
import pytest

from stoker import ArgumentError, LastBatchPolicy, fn, pipeline_def
from stoker.iterator import NumpyIterator


@pipeline_def(batch_size=2, num_threads=1)
def seven(root, pad_last_batch=False):
    jpegs, labels = fn.readers.file(file_root=root, pad_last_batch=pad_last_batch, name="Reader")
    return labels


def as_data(step):
    """DALI's table numbers samples 1..7; our labels are 0..6."""
    return [int(v) + 1 for v in np.asarray(step[0]["label"]).reshape(-1)]


def epoch(iterator):
    return [as_data(step) for step in iterator]


TABLE = [
    (LastBatchPolicy.PARTIAL, True, [7]),
    (LastBatchPolicy.PARTIAL, False, [7]),
    (LastBatchPolicy.FILL, True, [7, 7]),
    (LastBatchPolicy.FILL, False, [7, 1]),
    (LastBatchPolicy.DROP, True, [5, 6]),
    (LastBatchPolicy.DROP, False, [5, 6]),
]


@pytest.mark.parametrize("policy,padded,last", TABLE)
def test_dali_last_batch_table(seven_samples, policy, padded, last):
    pipe = seven(seven_samples, pad_last_batch=padded)
    it = NumpyIterator(pipe, ["label"], reader_name="Reader", last_batch_policy=policy)
    batches = epoch(it)
    assert batches[-1] == last
    assert batches[0] == [1, 2]
    expected_len = 3 if policy == LastBatchPolicy.DROP else 4
    assert len(batches) == expected_len == len(it)
    flat = [v for b in batches for v in b]
    if policy == LastBatchPolicy.DROP:
        assert flat == [1, 2, 3, 4, 5, 6]
    else:
        assert flat[:7] == [1, 2, 3, 4, 5, 6, 7]
    # the next epoch after reset() is whole again
    it.reset()
    again = epoch(it)
    assert len(again) == expected_len and again[-1] == last
    pipe.close()


def test_auto_reset_runs_epochs_back_to_back(seven_samples):
    pipe = seven(seven_samples)
    it = NumpyIterator(pipe, ["label"], reader_name="Reader", auto_reset=True,
                         last_batch_policy=LastBatchPolicy.PARTIAL)
    first = epoch(it)
    second = epoch(it)  # no reset() call needed
    assert [v for b in first for v in b] == [1, 2, 3, 4, 5, 6, 7]
    assert [v for b in second for v in b] == [1, 2, 3, 4, 5, 6, 7]
    pipe.close()


def test_prepare_first_batch_off_and_iteration_protocol(seven_samples):
    pipe = seven(seven_samples)
    it = NumpyIterator(pipe, ["label"], reader_name="Reader", prepare_first_batch=False,
                         last_batch_policy=LastBatchPolicy.PARTIAL)
    assert next(it)[0]["label"].shape[0] == 2
    rest = epoch(it)
    assert rest[-1] == [7]
    with pytest.raises(StopIteration):
        next(it)
    pipe.close()


def test_legacy_size_mode_counts_samples(seven_samples):
    pipe = seven(seven_samples)
    it = NumpyIterator(pipe, ["label"], size=5, last_batch_policy=LastBatchPolicy.PARTIAL)
    batches = epoch(it)
    assert [len(b) for b in batches] == [2, 2, 1]
    assert len(it) == 3
    pipe.close()
    pipe = seven(seven_samples)
    it = NumpyIterator(pipe, ["label"], size=5, last_batch_policy=LastBatchPolicy.DROP)
    assert [len(b) for b in epoch(it)] == [2, 2]
    assert len(it) == 2
    pipe.close()


def test_argument_checks(seven_samples):
    pipe = seven(seven_samples)
    with pytest.raises(ArgumentError):
        NumpyIterator(pipe, ["label"], reader_name="Reader", size=7)
    with pytest.raises(ArgumentError):
        NumpyIterator(pipe, ["label"], reader_name="Reader", last_batch_padded=True)
    with pytest.raises(ArgumentError):
        NumpyIterator(pipe, ["a", "a"], reader_name="Reader")
    with pytest.raises(ArgumentError):
        NumpyIterator(pipe, ["label", "extra"], reader_name="Reader")
    pipe.close()
