"""tests/python/test_ops_cast.py: fn.cast as DALI users call it. On the CPU against NumPy written
from DALI's documented conversion: float to integer rounds to nearest with halves away from zero
and saturates, NaN becomes 0, integer narrowing saturates (negatives to unsigned become 0), bool
is value != 0, float16 rounds to nearest even from the value as float32. The GPU case (device="gpu"
through x.gpu()) gives the CPU's bytes for every pair of dtypes and skips without a CUDA device."""
import numpy as np
import pytest

from stoker import fn, pipeline_def

from conftest import requires_cuda

EDGES = [0.0, -0.0, 0.5, -0.5, 1.5, -1.5, 2.5, -2.5, 127.5, -128.5, 255.5, 256.0, -1.0, 32767.5, -32768.5,
         65535.5, 65520.0, 2147483647.5, -2147483649.0, 4294967296.0, 1e30, -1e30, 6e-8,
         float("nan"), float("inf"), float("-inf")]
DTYPES = [np.uint8, np.uint16, np.uint32, np.uint64, np.int8, np.int16, np.int32, np.int64, np.float16,
          np.float32, np.float64, np.bool_]


def run_cast(batch, dtype, device="cpu"):
    @pipeline_def(batch_size=len(batch), num_threads=1, device_id=0 if device == "gpu" else -1)
    def pipe():
        x = fn.external_source(source=[batch], cycle="raise", name="src")
        return fn.cast(x.gpu() if device == "gpu" else x, dtype=dtype)

    with pipe() as p:
        out = p.run()[0]
        if hasattr(out, "as_cpu"):
            out = out.as_cpu()
        return [np.asarray(out[i]) for i in range(len(batch))]


def reference(x, dtype):
    """DALI's cast of array x to dtype, written with NumPy."""
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return x != 0
    if dtype == np.float16:
        return x.astype(np.float32).astype(np.float16)
    if dtype.kind == "f":
        return x.astype(dtype)
    info = np.iinfo(dtype)
    v = x.astype(np.float64)
    v = np.where(np.isnan(v), 0.0, v)
    v = np.where(v < 0, np.ceil(v - 0.5), np.floor(v + 0.5))
    return np.clip(v, info.min, info.max).astype(dtype)


@pytest.mark.parametrize("src", [np.float32, np.float64])
@pytest.mark.parametrize("dst", [np.uint8, np.int8, np.int16, np.uint16, np.int32, np.float16, np.bool_])
def test_cpu_cast_from_float_rounds_saturates_and_zeroes_nan(src, dst):
    with np.errstate(invalid="ignore", over="ignore"):
        x = np.array(EDGES, dtype=src)
        batch = [x, x[::-1][:13].copy()]
        for got, inp in zip(run_cast(batch, dst), batch):
            assert got.dtype == np.dtype(dst) and got.shape == inp.shape
            np.testing.assert_array_equal(got, reference(inp, dst))


@pytest.mark.parametrize("src,dst", [(np.int32, np.uint8), (np.int64, np.int32), (np.int16, np.uint16),
                                     (np.uint32, np.int8), (np.int32, np.bool_)])
def test_cpu_cast_between_integers_saturates(src, dst):
    info = np.iinfo(src)
    x = np.array([0, 1, -1, 127, 128, -129, 255, 256, 65535, 65536, info.min, info.max], dtype=np.int64)
    x = np.clip(x, info.min, info.max).astype(src)
    (got,) = run_cast([x], dst)
    np.testing.assert_array_equal(got, reference(x, dst))


@requires_cuda
@pytest.mark.parametrize("src", DTYPES)
def test_gpu_gives_the_cpu_bytes_for_every_dtype(src):
    rng = np.random.default_rng(3)
    with np.errstate(invalid="ignore", over="ignore"):
        if np.dtype(src).kind in "iub":
            raw = rng.integers(0, 256, size=64 * np.dtype(src).itemsize, dtype=np.uint8)
            x = raw.view(src) if src != np.bool_ else raw.astype(np.bool_)
        else:
            x = np.concatenate([np.array(EDGES), rng.normal(0, 1e5, 38)]).astype(src)
    batch = [x, x[:30].copy(), x[:1].copy()]  # one ndim a batch, lengths differ
    for dst in DTYPES:
        cpu, gpu = run_cast(batch, dst), run_cast(batch, dst, device="gpu")
        for g, c in zip(gpu, cpu):
            assert g.dtype == c.dtype and g.shape == c.shape
            assert g.tobytes() == c.tobytes(), "%s -> %s" % (np.dtype(src), np.dtype(dst))
