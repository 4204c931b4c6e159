"""tests/python/test_ops_filters.py: fn.normalize, fn.one_hot, fn.gaussian_blur and fn.jitter on
the CPU against NumPy written from DALI's documented semantics: normalize's statistics (numpy
mean/var with ddof), one_hot as rows of an identity matrix, gaussian_blur as a direct 2-d
convolution over np.pad(mode="reflect") (numpy's reflect is reflect-101, DALI's border), jitter's
moves recovered from a coordinate image. Per-sample arguments come from external_source nodes;
jitter gives the same bytes for the same seed. The GPU cases compare device="gpu" with the CPU
and skip without a CUDA device."""
import numpy as np
import pytest

from stoker import StokerError, fn, pipeline_def

from conftest import requires_cuda


def ragged(seed, count=3, channels=3, dtype=np.uint8):
    rng = np.random.default_rng(seed)
    return [rng.integers(0, 250, size=(6 + 3 * i, 5 + 4 * i, channels)).astype(dtype) for i in range(count)]


def run_op(build, batch, layout="HWC", extra=(), seed=7, device_id=-1):
    """Runs build(images[, *extra nodes]) over one batch; returns the first output per sample."""

    @pipeline_def(batch_size=len(batch), num_threads=1, device_id=device_id, seed=seed)
    def pipe():
        images = fn.external_source(source=[batch], layout=layout, cycle="raise", name="src")
        nodes = [fn.external_source(source=[s], cycle="raise", name="extra%d" % k) for k, s in enumerate(extra)]
        return build(images, *nodes)

    with pipe() as p:
        out = p.run()[0]
        if hasattr(out, "as_cpu"):
            out = out.as_cpu()
        return [np.asarray(out[i]) for i in range(len(batch))]


# ---- normalize ----------------------------------------------------------------------------------
def test_normalize_whole_sample_matches_numpy():
    batch = ragged(1)
    for got, x in zip(run_op(lambda x: fn.normalize(x), batch), batch):
        x = x.astype(np.float64)
        assert got.dtype == np.float32
        np.testing.assert_allclose(got, (x - x.mean()) / x.std(), rtol=1e-5, atol=1e-5)


def test_normalize_per_channel_with_ddof_epsilon_scale_shift():
    batch = ragged(2)
    build = lambda x: fn.normalize(x, axis_names="HW", ddof=1, epsilon=0.5, scale=64.0, shift=128.0)
    for got, x in zip(run_op(build, batch), batch):
        x = x.astype(np.float64)
        mean, var = x.mean(axis=(0, 1), keepdims=True), x.var(axis=(0, 1), ddof=1, keepdims=True)
        np.testing.assert_allclose(got, (x - mean) / np.sqrt(var + 0.5) * 64 + 128, rtol=1e-5, atol=1e-4)


def test_normalize_per_sample_mean_tensor_and_uint8_output():
    batch = ragged(3)
    means = [np.array([[[10.0, 100.0, 200.0]]], dtype=np.float32) + i for i in range(len(batch))]
    sds = [np.array(2.0 + i, dtype=np.float32) for i in range(len(batch))]
    build = lambda x, m, s: fn.normalize(x, mean=m, stddev=s, shift=100.0, dtype=np.uint8)
    for i, (got, x) in enumerate(zip(run_op(build, batch, extra=(means, sds)), batch)):
        want = (x.astype(np.float64) - means[i]) / sds[i] + 100
        assert got.dtype == np.uint8
        np.testing.assert_array_equal(got, np.clip(np.floor(want + 0.5), 0, 255).astype(np.uint8))


def test_normalize_batch_on_the_cpu_is_refused_naming_batch():
    with pytest.raises(StokerError, match="batch"):
        run_op(lambda x: fn.normalize(x, batch=True), ragged(4))


# ---- one_hot ------------------------------------------------------------------------------------
def test_one_hot_scalar_labels_are_identity_rows():
    labels = [np.array(c, dtype=np.int32) for c in (0, 3, 9, 4)]
    outs = run_op(lambda x: fn.one_hot(x, num_classes=5), labels, layout="")
    for got, c in zip(outs, (0, 3, 9, 4)):
        want = np.eye(5, dtype=np.float32)[c] if c < 5 else np.zeros(5, np.float32)
        np.testing.assert_array_equal(got, want)


def test_one_hot_class_map_axis_first_with_on_off():
    rng = np.random.default_rng(5)
    maps = [rng.integers(-1, 6, size=(3 + i, 4)).astype(np.int64) for i in range(3)]
    build = lambda x: fn.one_hot(x, num_classes=6, axis=0, on_value=2.0, off_value=-1.0, dtype=np.int32)
    for got, m in zip(run_op(build, maps, layout="HW"), maps):
        want = np.where(np.arange(6)[:, None, None] == m[None], 2, -1).astype(np.int32)
        np.testing.assert_array_equal(got, want)


# ---- gaussian_blur ------------------------------------------------------------------------------
def gauss(sigma, radius):
    k = np.exp(-np.arange(-radius, radius + 1) ** 2 / (2.0 * sigma * sigma))
    return k / k.sum()


def direct_blur(x, sy, ry, sx, rx):
    """Direct 2-d convolution (outer-product kernel) of an HWC image, reflect-101 borders."""
    kernel = np.outer(gauss(sy, ry), gauss(sx, rx))
    padded = np.pad(x.astype(np.float64), ((ry, ry), (rx, rx), (0, 0)), mode="reflect")
    out = np.zeros(x.shape, np.float64)
    for dy in range(2 * ry + 1):
        for dx in range(2 * rx + 1):
            out += kernel[dy, dx] * padded[dy:dy + x.shape[0], dx:dx + x.shape[1]]
    return out


def test_gaussian_blur_matches_direct_convolution_uint8():
    batch = ragged(6)
    for got, x in zip(run_op(lambda x: fn.gaussian_blur(x, sigma=1.2), batch), batch):
        want = np.floor(direct_blur(x, 1.2, 4, 1.2, 4) + 0.5)
        assert got.dtype == np.uint8 and got.shape == x.shape
        assert np.abs(got.astype(int) - want).max() <= 1


def test_gaussian_blur_window_per_axis_float_and_sigma_per_sample():
    batch = [x.astype(np.float32) for x in ragged(7)]
    outs = run_op(lambda x: fn.gaussian_blur(x, window_size=[3, 7]), batch)
    for got, x in zip(outs, batch):  # window 3: sigma 0.8; window 7: sigma 1.4
        np.testing.assert_allclose(got, direct_blur(x, 0.8, 1, 1.4, 3), rtol=1e-4, atol=1e-3)
    sigmas = [np.array(0.6 + i, dtype=np.float32) for i in range(len(batch))]
    outs = run_op(lambda x, s: fn.gaussian_blur(x, sigma=s), batch, extra=(sigmas,))
    for i, (got, x) in enumerate(zip(outs, batch)):
        s = 0.6 + i
        r = int(np.ceil(3 * s))
        np.testing.assert_allclose(got, direct_blur(x, s, r, s, r), rtol=1e-4, atol=1e-3)


def test_gaussian_blur_leaves_channels_of_chw_apart():
    batch = [np.transpose(x, (2, 0, 1)).copy() for x in ragged(8)]
    outs = run_op(lambda x: fn.gaussian_blur(x, sigma=1.0, dtype=np.float32), batch, layout="CHW")
    for got, x in zip(outs, batch):
        want = np.transpose(direct_blur(np.transpose(x, (1, 2, 0)), 1.0, 3, 1.0, 3), (2, 0, 1))
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-3)


# ---- jitter -------------------------------------------------------------------------------------
def coords(h, w):
    yy, xx = np.mgrid[0:h, 0:w]
    return np.stack([yy, xx], axis=-1).astype(np.float32)


def test_jitter_moves_within_half_ndegree_and_fills_outside():
    batch = [coords(30, 40), coords(25, 17)]
    outs = run_op(lambda x: fn.jitter(x, nDegree=4, fill_value=-1.0), batch)
    for got, x in zip(outs, batch):
        filled = (got == -1).all(axis=-1)
        moves = got[~filled] - x[~filled]
        assert np.abs(moves).max() <= 2 and len(np.unique(moves, axis=0)) == 25
        inner = np.zeros(filled.shape, bool)
        inner[2:-2, 2:-2] = True
        assert filled.any() and not (filled & inner).any()


def test_jitter_same_seed_same_bytes():
    batch = ragged(9, count=4)
    a = run_op(lambda x: fn.jitter(x), batch, seed=3)
    b = run_op(lambda x: fn.jitter(x), batch, seed=3)
    c = run_op(lambda x: fn.jitter(x), batch, seed=4)
    assert all(np.array_equal(x, y) for x, y in zip(a, b))
    assert not all(np.array_equal(x, y) for x, y in zip(a, c))


# ---- GPU ----------------------------------------------------------------------------------------
@requires_cuda
@pytest.mark.parametrize("build", [
    lambda x: fn.normalize(x, axis_names="HW"),
    lambda x: fn.gaussian_blur(x, sigma=1.5),
])
def test_gpu_matches_cpu(build):
    batch = ragged(10, count=4)
    cpu = run_op(build, batch, device_id=0, seed=5)
    gpu = run_op(lambda x: build(x.gpu()), batch, device_id=0, seed=5)
    for g, c in zip(gpu, cpu):
        np.testing.assert_allclose(g.astype(np.float64), c.astype(np.float64), rtol=1e-5, atol=1)
