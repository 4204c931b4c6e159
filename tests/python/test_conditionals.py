"""tests/python/test_conditionals.py: enable_conditionals=True (DALI's `if` on DataNodes): per
sample the branch the predicate picks (checked against NumPy per sample), elif chains, nested
ifs, `not`/`and`/`or` on nodes, a Python condition still runs as Python, a variable defined
before the `if` and changed in one branch, samples of different shapes per branch (crop with and
without mirror through crop_mirror_normalize), random operators in branches giving the same bytes
with the same seed, and DALI's errors (a variable set in one branch only, differing dtypes)."""
import numpy as np
import pytest

from stoker import StokerError, fn, pipeline_def

N = 8


def batch(seed=0, shape=(2, 3)):
    rng = np.random.default_rng(seed)
    return [rng.integers(-50, 50, size=shape).astype(np.int32) for _ in range(N)]


DATA = batch()


def run(pipe_fn, **kwargs):
    with pipe_fn(**kwargs) as pipe:
        pipe.build()
        outs = pipe.run()
        # a ragged output (branches of other shapes) comes as its samples, as DALI's TensorList does
        return [o.as_array() if o.is_dense_tensor() else [np.asarray(o[i]) for i in range(len(o))] for o in outs]


@pipeline_def(batch_size=N, num_threads=2, device_id=-1, enable_conditionals=True, seed=7)
def coin_pipe():
    x = fn.external_source(source=lambda: DATA, dtype=np.int32)
    coin = fn.random.coin_flip()
    if coin:
        out = x * 10
    else:
        out = -x
    return out, coin


def test_each_sample_takes_the_branch_its_predicate_picks():
    out, coin = run(coin_pipe)
    flags = coin.reshape(N)
    assert 0 < flags.sum() < N  # both branches taken in this batch
    for i in range(N):
        want = DATA[i] * 10 if flags[i] else -DATA[i]
        np.testing.assert_array_equal(out[i], want)


@pipeline_def(batch_size=N, num_threads=2, device_id=-1, enable_conditionals=True, seed=7)
def elif_pipe(threshold):
    x = fn.external_source(source=lambda: DATA, dtype=np.int32)
    s = fn.external_source(source=lambda: [np.array([d[0, 0]], np.int32) for d in DATA], dtype=np.int32)
    y = x + 0
    if s > threshold:
        y = x * 2
    elif not (s > -threshold):
        y = x - 1000
    if threshold > 100:  # a Python condition: plain Python
        y = x * 0
    if (s > 0) and (s < 30) or s == -1:
        flag = s * 0 + 1
    else:
        flag = s * 0
    return y, flag


def test_elif_not_and_or_and_python_conditions():
    y, flag = run(elif_pipe, threshold=20)
    for i in range(N):
        v = DATA[i][0, 0]
        want = DATA[i] * 2 if v > 20 else (DATA[i] - 1000 if not v > -20 else DATA[i])
        np.testing.assert_array_equal(y[i], want)
        assert flag[i][0] == int((0 < v < 30) or v == -1)
    y, _ = run(elif_pipe, threshold=200)
    assert not np.any(np.asarray(y))


@pipeline_def(batch_size=N, num_threads=2, device_id=-1, enable_conditionals=True, seed=7)
def nested_pipe():
    x = fn.external_source(source=lambda: DATA, dtype=np.int32)
    s = fn.external_source(source=lambda: [np.array([d[0, 1]], np.int32) for d in DATA], dtype=np.int32)
    if s > 0:
        if s > 25:
            out = x + 1
        else:
            out = x + 2
    else:
        out = x + 3
    return out


def test_nested_ifs():
    (out,) = run(nested_pipe)
    for i in range(N):
        v = DATA[i][0, 1]
        np.testing.assert_array_equal(out[i], DATA[i] + (1 if v > 25 else 2) if v > 0 else DATA[i] + 3)


IMAGES = [np.random.default_rng(i).integers(0, 256, size=(6, 8, 3), dtype=np.uint8) for i in range(N)]


@pipeline_def(batch_size=N, num_threads=2, device_id=-1, enable_conditionals=True, seed=11)
def image_pipe():
    images = fn.external_source(source=lambda: IMAGES, dtype=np.uint8, layout="HWC")
    coin = fn.random.coin_flip(probability=0.5)
    if coin:
        out = fn.crop_mirror_normalize(images, mirror=1, crop=[4, 4], output_layout="HWC", dtype="uint8",
                                       mean=[0.0], std=[1.0])
    else:
        out = fn.crop_mirror_normalize(images, crop=[2, 6], output_layout="HWC", dtype="uint8", mean=[0.0],
                                       std=[1.0])
    return out, coin


def test_branches_may_give_samples_of_different_shapes():
    out, coin = run(image_pipe)
    flags = coin.reshape(N)
    assert 0 < flags.sum() < N
    for i in range(N):
        if flags[i]:
            y0, x0 = (6 - 4) // 2, (8 - 4) // 2
            want = IMAGES[i][y0:y0 + 4, x0:x0 + 4][:, ::-1]
        else:
            y0, x0 = (6 - 2) // 2, (8 - 6) // 2
            want = IMAGES[i][y0:y0 + 2, x0:x0 + 6]
        np.testing.assert_array_equal(out[i], want)


@pipeline_def(batch_size=N, num_threads=3, device_id=-1, enable_conditionals=True)
def random_in_branch_pipe():
    x = fn.external_source(source=lambda: DATA, dtype=np.int32)
    if fn.random.coin_flip():
        out = x * fn.random.coin_flip(probability=0.3)
    else:
        out = x + fn.random.coin_flip(probability=0.7)
    return out


def test_random_operators_in_branches_repeat_with_the_same_seed():
    first = run(random_in_branch_pipe, seed=5)[0]
    again = run(random_in_branch_pipe, seed=5)[0]
    other = run(random_in_branch_pipe, seed=6)[0]
    for i in range(N):
        np.testing.assert_array_equal(first[i], again[i])
    assert any(not np.array_equal(first[i], other[i]) for i in range(N))


def test_a_variable_assigned_in_one_branch_only_must_exist_before():
    @pipeline_def(batch_size=N, num_threads=1, device_id=-1, enable_conditionals=True)
    def pipe():
        x = fn.external_source(source=lambda: DATA, dtype=np.int32)
        if fn.random.coin_flip():
            fresh = x + 1
        return x

    with pytest.raises(StokerError, match="'fresh'.*only one branch"):
        pipe()


def test_branches_with_different_dtypes_fail_naming_both():
    @pipeline_def(batch_size=N, num_threads=1, device_id=-1, enable_conditionals=True)
    def pipe():
        x = fn.external_source(source=lambda: DATA, dtype=np.int32)
        if fn.random.coin_flip():
            out = x / 2
        else:
            out = x + 1
        return out

    with pytest.raises(StokerError, match="int32.*float|float.*int32"):
        run(pipe)


def test_without_enable_conditionals_a_node_condition_says_how():
    @pipeline_def(batch_size=N, num_threads=1, device_id=-1)
    def pipe():
        x = fn.external_source(source=lambda: DATA, dtype=np.int32)
        if x > 0:
            x = x + 1
        return x

    with pytest.raises(TypeError, match="enable_conditionals"):
        pipe()
