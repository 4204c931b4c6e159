"""Outputs as DALI's TensorListCPU: at(i), as_cpu(), as_array(), as_tensor(),
as_reshaped_tensor(), layout()/shape() methods (shape per sample), is_dense_tensor(),
source_info(), len, iteration, DLPack; samples with shape()/layout()/as_cpu()/source_info(); every
numeric dtype end to end."""
import numpy as np
import pytest

from stoker import StokerError, TensorListCPU, fn, pipeline_def, types
from stoker.backend import TensorCPU


@pipeline_def(batch_size=3, num_threads=1, device_id=None)
def fed(batches, layout=None):
    return fn.external_source(source=batches, layout=layout, cycle="quiet")


def one_batch(data, layout=None):
    pipe = fed([data], layout=layout)
    pipe.build()
    return pipe, pipe.run()[0]


def test_dense_batch_methods():
    data = np.arange(3 * 2 * 4, dtype=np.float32).reshape(3, 2, 4)
    pipe, out = one_batch(data, layout="HW")
    assert isinstance(out, TensorListCPU) and len(out) == 3 and out.is_dense_tensor()
    assert out.shape() == [(2, 4)] * 3 and out.layout() == "HW" and out.dtype == types.FLOAT
    np.testing.assert_array_equal(out.as_array(), data)
    np.testing.assert_array_equal(out.at(1), data[1])
    assert out.as_cpu() is out
    tensor = out.as_tensor()
    assert isinstance(tensor, TensorCPU) and tensor.shape() == [3, 2, 4]
    np.testing.assert_array_equal(np.array(tensor), data)
    reshaped = out.as_reshaped_tensor([6, 4])
    assert reshaped.shape() == [6, 4]
    np.testing.assert_array_equal(np.array(reshaped), data.reshape(6, 4))
    with pytest.raises(ValueError):
        out.as_reshaped_tensor([5, 5])
    samples = list(out)
    assert [s.shape() for s in samples] == [[2, 4]] * 3 and samples[2].layout() == "HW"
    np.testing.assert_array_equal(np.array(samples[2].as_cpu()), data[2])
    assert samples[0].source_info() == "" and out.source_info() == ["", "", ""]
    np.testing.assert_array_equal(np.from_dlpack(out), data)
    pipe.close()


def test_ragged_batch_methods():
    data = [np.full((k + 1, 2), k, dtype=np.uint8) for k in range(3)]
    pipe, out = one_batch(data)
    assert not out.is_dense_tensor() and out.shape() == [(1, 2), (2, 2), (3, 2)]
    assert out.at(2).tolist() == [[2, 2]] * 3 and out[1].shape() == [2, 2]
    with pytest.raises(StokerError, match="ragged"):
        out.as_array()
    with pytest.raises(StokerError, match="ragged"):
        out.as_tensor()
    pipe.close()


@pytest.mark.parametrize("name", ["uint8", "uint16", "uint32", "uint64", "int8", "int16", "int32", "int64",
                                  "float16", "float32", "float64", "bool"])
def test_every_numeric_dtype_end_to_end(name):
    data = (np.arange(3 * 5).reshape(3, 5) % 2).astype(name)
    pipe, out = one_batch(data)
    assert out.dtype == types.to_dali_type(name)
    np.testing.assert_array_equal(out.as_array(), data)
    assert out.as_array().dtype == np.dtype(name) and out.at(0).dtype == np.dtype(name)
    pipe.close()


def test_labels_have_no_layout_and_dense_images_a_sample_layout(tmp_path):
    from dali_data import jpeg_folder

    root = jpeg_folder(tmp_path)

    @pipeline_def(batch_size=2, num_threads=1, device_id=None)
    def images():
        jpegs, labels = fn.readers.file(file_root=root)
        return fn.crop_mirror_normalize(fn.decoders.image(jpegs), crop=(8, 8)), labels

    with images() as pipe:
        imgs, labels = pipe.run()
        assert imgs.layout() == "CHW" and imgs.shape() == [(3, 8, 8)] * 2
        assert labels.layout() == "" and labels.dtype == types.INT32
