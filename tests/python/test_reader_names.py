"""A reader_name that names no reader (Pipeline.reader_meta, the iterators' reader_name) is an
error naming the missing reader and the pipeline's real ones. It is a StokerError, a RuntimeError,
as DALI's lookups of an unknown operator name raise (its DALI_ENFORCE errors are RuntimeError)."""
import pytest

from stoker import StokerError, fn, pipeline_def
from stoker.iterator import NumpyIterator as GenericIterator


@pipeline_def(batch_size=2, num_threads=1, seed=3)
def labelled(root):
    jpegs, labels = fn.readers.file(file_root=root, name="Reader")
    return labels


def test_reader_meta_of_an_unknown_name_names_the_real_readers(small_dataset):
    pipe = labelled(small_dataset)
    pipe.build()
    with pytest.raises(RuntimeError, match="no reader named 'nope' \\(its readers: 'Reader'\\)") as info:
        pipe.reader_meta("nope")
    assert isinstance(info.value, StokerError)
    assert "no such file" not in str(info.value)
    assert pipe.reader_meta("Reader")["epoch_size"] > 0
    pipe.close()


def test_iterator_with_an_unknown_reader_name_names_the_real_readers(small_dataset):
    with pytest.raises(RuntimeError, match="no reader named 'Readr' \\(its readers: 'Reader'\\)"):
        GenericIterator(labelled(small_dataset), ["labels"], reader_name="Readr")
