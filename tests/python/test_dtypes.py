"""Every numeric element type stoker carries comes back to NumPy unchanged: external_source fed
arrays of each dtype and readers.numpy reading .npy files of each dtype deliver them through
TensorOutput[i] (a host copy of one sample), as_array() (dense: DLPack; ragged: per sample) and
.dtype. (TensorOutput[i] raised KeyError: 'float64' for int8, int16, uint16, uint32, uint64 and
float64.)"""
import numpy as np
import pytest

from stoker import types, fn, pipeline_def

DTYPES = ["uint8", "int8", "int16", "uint16", "int32", "uint32", "int64", "uint64", "float16", "float32",
          "float64", "bool"]


def samples(dtype, ragged):
    """Two samples of `dtype` with values at the type's edges (ragged: two shapes)."""
    dt = np.dtype(dtype)
    if dt.kind == "b":
        values = np.array([True, False, True, True, False, True])
    elif dt.kind == "f":
        info = np.finfo(dt)
        values = np.array([info.min, -1.5, 0.0, 0.25, info.max, info.tiny], dtype=dt)
    else:
        info = np.iinfo(dt)
        values = np.array([info.min, info.max, 0, 1, info.max - 1, info.min + 1], dtype=dt)
    values = values.astype(dt)
    first = values.reshape(2, 3)
    second = values[::-1].reshape(3, 2) if ragged else values[::-1].reshape(2, 3)
    return [first, second.copy()]


def check_output(out, expected, dtype):
    # DALI's TensorList.dtype is a types.DALIDataType
    assert np.dtype(types.to_numpy_type(out.dtype)) == np.dtype(dtype)
    for i, want in enumerate(expected):
        got = np.asarray(out[i])
        assert got.dtype == np.dtype(dtype) and got.shape == want.shape
        assert np.array_equal(got, want)
    if not out.is_dense_tensor():  # DALI's as_array() refuses a ragged list
        return
    arrays = out.as_array()
    for got, want in zip(arrays, expected):
        assert np.asarray(got).dtype == np.dtype(dtype)
        assert np.array_equal(got, want)


@pytest.mark.parametrize("ragged", [False, True], ids=["dense", "ragged"])
@pytest.mark.parametrize("dtype", DTYPES)
def test_external_source_round_trips_every_dtype(dtype, ragged):
    batch = samples(dtype, ragged)

    @pipeline_def(batch_size=2, num_threads=1)
    def pipe_def():
        return fn.external_source(source=lambda: batch, dtype=dtype, ndim=2, layout="HW")

    with pipe_def() as pipe:
        pipe.build()
        (out,) = pipe.run()
        check_output(out, batch, dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_readers_numpy_round_trips_every_dtype(dtype, tmp_path):
    arrays = samples(dtype, ragged=True)
    for i, a in enumerate(arrays):
        np.save(tmp_path / ("s%d.npy" % i), a)

    @pipeline_def(batch_size=2, num_threads=1)
    def pipe_def():
        return fn.readers.numpy(file_root=str(tmp_path), files=["s0.npy", "s1.npy"])

    with pipe_def() as pipe:
        pipe.build()
        (out,) = pipe.run()
        check_output(out, arrays, dtype)
