"""tests/python/test_external_source.py: fn.external_source and pipe.feed_input (DALI semantics):
batch sizes 3, 7, 1, 256 in one run with exec_dynamic (content checked against NumPy through
crop_mirror_normalize), per-sample sources with SampleInfo, callables with the iteration index,
the cycle modes, feed_input, no_copy, num_outputs, the checks that name the source and the
sample, StopIteration through run() and the iterator; and DALI's reader semantics for run()
(a reader wraps around; stop_at_epoch_end=True keeps stoker's earlier stop)."""
import tracemalloc

import numpy as np
import pytest

from stoker import Pipeline, StokerError, fn, pipeline_def
from stoker.iterator import NumpyIterator

from conftest import requires_cuda, requires_torch

H, W, C = 6, 8, 3
MEAN = np.array([10.0, 20.0, 30.0], dtype=np.float32)
STD = np.array([2.0, 4.0, 5.0], dtype=np.float32)


def make_batch(seed, count):
    rng = np.random.default_rng(seed)
    return rng.integers(0, 256, size=(count, H, W, C), dtype=np.uint8)


def cmn_reference(images):
    """crop_mirror_normalize with crop (4, 4) at the center, CHW float output."""
    y0, x0 = (H - 4) // 2, (W - 4) // 2
    crop = images[:, y0:y0 + 4, x0:x0 + 4, :].astype(np.float32)
    return ((crop - MEAN) / STD).transpose(0, 3, 1, 2)


@pipeline_def(batch_size=256, num_threads=2, exec_dynamic=True)
def dynamic_pipe(source, cycle=None):
    images = fn.external_source(source=source, layout="HWC", dtype=np.uint8, ndim=3, cycle=cycle, name="src")
    return fn.crop_mirror_normalize(images, crop=[4, 4], mean=MEAN.tolist(), std=STD.tolist())


def test_dynamic_batch_sizes_come_back_exactly():
    sizes = [3, 7, 1, 256]
    batches = [make_batch(i, n) for i, n in enumerate(sizes)]
    with dynamic_pipe(batches, cycle="raise") as pipe:
        for epoch in range(2):
            for i, n in enumerate(sizes):
                (out,) = pipe.run()
                assert out.as_array().shape == (n, 3, 4, 4)
                np.testing.assert_allclose(out.as_array(), cmn_reference(batches[i]), rtol=0, atol=1e-4)
            with pytest.raises(StopIteration):
                pipe.run()
            with pytest.raises(StopIteration):  # stays ended until reset()
                pipe.run()
            pipe.reset()


def test_cycle_no_is_iterated_once_and_quiet_never_ends():
    batches = [make_batch(i, 5) for i in range(2)]
    with dynamic_pipe(iter(batches)) as pipe:
        pipe.run()
        pipe.run()
        with pytest.raises(StopIteration):
            pipe.run()
        pipe.reset()
        with pytest.raises(StopIteration):  # "no": not rewound
            pipe.run()
    with dynamic_pipe(batches, cycle="quiet") as pipe:
        for k in range(5):
            (out,) = pipe.run()
            np.testing.assert_allclose(out.as_array(), cmn_reference(batches[k % 2]), atol=1e-4)


def test_generator_function_restarts_with_raise():
    def gen():
        for i in range(3):
            yield make_batch(i, 2)

    with dynamic_pipe(gen, cycle="raise") as pipe:
        for _ in range(2):
            assert [len(pipe.run()[0]) for _ in range(3)] == [2, 2, 2]
            with pytest.raises(StopIteration):
                pipe.run()
            pipe.reset()


@pipeline_def(batch_size=4, num_threads=1)
def per_sample_pipe(source):
    return fn.external_source(source=source, batch=False, dtype="int64")


def test_per_sample_source_gets_sample_info():
    seen = []

    def sample(info):
        if info.idx_in_epoch >= 10:
            raise StopIteration
        seen.append(info)
        return np.array([info.idx_in_epoch, info.idx_in_batch, info.iteration, info.epoch_idx], dtype=np.int64)

    with per_sample_pipe(sample) as pipe:
        for iteration in range(2):
            (out,) = pipe.run()
            rows = out.as_array()
            assert rows.shape == (4, 4)
            assert rows[:, 0].tolist() == [4 * iteration + i for i in range(4)]
            assert rows[:, 1].tolist() == [0, 1, 2, 3]
            assert set(rows[:, 2].tolist()) == {iteration} and set(rows[:, 3].tolist()) == {0}
        with pytest.raises(StopIteration):  # 2 samples left: a partial batch needs exec_dynamic
            pipe.run()
        pipe.reset()
        (out,) = pipe.run()
        assert out.as_array()[:, 3].tolist() == [1, 1, 1, 1]  # epoch_idx


def test_per_sample_partial_last_batch_with_exec_dynamic():
    def sample(info):
        if info.idx_in_epoch >= 10:
            raise StopIteration
        return np.full((2,), info.idx_in_epoch, dtype=np.int64)

    with per_sample_pipe(sample, exec_dynamic=True) as pipe:
        sizes = []
        while True:
            try:
                (out,) = pipe.run()
            except StopIteration:
                break
            sizes.append(len(out))
        assert sizes == [4, 4, 2]


def test_callable_with_iteration_index_and_batch_info():
    @pipeline_def(batch_size=3, num_threads=1)
    def pipe_of(source, batch_info=False):
        return fn.external_source(source=source, batch_info=batch_info)

    with pipe_of(lambda i: np.full((3, 2), i, dtype=np.int32)) as pipe:
        assert [int(pipe.run()[0].as_array()[0, 0]) for _ in range(4)] == [0, 1, 2, 3]
    with pipe_of(lambda info: np.full((3, 1), 10 * info.epoch_idx + info.iteration, dtype=np.int32),
                 batch_info=True) as pipe:
        assert [int(pipe.run()[0].as_array()[0, 0]) for _ in range(2)] == [0, 1]


def test_num_outputs_and_ragged_samples():
    def source():
        images = [np.full((k + 1, 2), k, dtype=np.uint8) for k in range(3)]
        labels = np.arange(3, dtype=np.int32).reshape(3, 1)
        return images, labels

    @pipeline_def(batch_size=3, num_threads=1)
    def two():
        images, labels = fn.external_source(source=source, num_outputs=2, layout=["HW", "C"])
        return images, labels

    with two() as pipe:
        images, labels = pipe.run()
        assert not images.is_dense_tensor() and images.layout() == "HW"
        assert images.shape() == [(1, 2), (2, 2), (3, 2)]
        assert images.at(2).tolist() == [[2, 2]] * 3
        assert labels.as_array().reshape(-1).tolist() == [0, 1, 2]


def test_feed_input_and_no_copy():
    pipe = Pipeline(batch_size=2, num_threads=1, exec_dynamic=True)
    with pipe:
        data = fn.external_source(name="data", no_copy=True)
        pipe.set_outputs(data)
    with pytest.raises(StokerError, match="feed it first"):
        pipe.run()
    arrays = [np.arange(k + 2, dtype=np.float32) * (k + 1) for k in range(2)]
    pipe.feed_input("data", arrays)
    pipe.feed_input(data, np.ones((1, 3), dtype=np.float32))
    (out,) = pipe.run()
    assert [out.at(k).tolist() for k in range(2)] == [a.tolist() for a in arrays]
    (out,) = pipe.run()
    assert out.shape() == [(3,)]
    with pytest.raises(StokerError, match="no external_source named"):
        pipe.feed_input("nope", arrays)
    pipe.close()


@pytest.mark.parametrize(
    "bad, message",
    [
        (np.zeros((4, 6, 8, 3), dtype=np.float32), r"src: sample 0 of output 0 has the wrong dtype \(float, expected uint8\)"),
        (np.zeros((4, 6, 8), dtype=np.uint8), r"src: sample 0 of output 0 has the wrong number of dimensions"),
        ([np.zeros((6, 8, 3), np.uint8)] * 3 + [np.zeros((6, 8), np.uint8)], r"src: sample 3 of output 0"),
        (np.zeros((5, 6, 8, 3), dtype=np.uint8), r"src: fed a batch of 5 samples; it must hold 1..4"),
        (np.zeros((3, 6, 8, 3), dtype=np.uint8), r"src: fed a batch of 3 samples.*exec_dynamic"),
    ],
)
def test_bad_input_names_the_source_and_the_sample(bad, message):
    @pipeline_def(batch_size=4, num_threads=1)
    def checked():
        images = fn.external_source(name="src", dtype=np.uint8, ndim=3, layout="HWC")
        return images

    with checked() as pipe:
        with pytest.raises(StokerError, match=message):
            pipe.feed_input("src", bad)


def test_layout_mismatch_and_bad_gpu_input_are_refused():
    @pipeline_def(batch_size=1, num_threads=1)
    def checked():
        return fn.external_source(name="src", layout="HWC")

    with checked() as pipe:
        with pytest.raises(StokerError, match="wrong layout"):
            pipe.feed_input("src", np.zeros((1, 2, 2, 3), np.uint8), layout="CHW")

        class FakeCuda:  # a GPU array as the CUDA array interface describes one (pointer never read here)
            def __init__(self, shape, strides=None, typestr="|u1", stream=None):
                self.__cuda_array_interface__ = {"shape": shape, "typestr": typestr, "data": (4096, False),
                                                 "version": 3, "strides": strides, "stream": stream}

        with pytest.raises(StokerError, match=r"src: sample 1 of output 0 is a non-contiguous GPU array"):
            pipe.feed_input("src", [FakeCuda((2, 2, 3)), FakeCuda((2, 2, 3), strides=(12, 3, 2))])
        with pytest.raises(StokerError, match=r"src: sample 0 of output 0 has dtype complex64"):
            pipe.feed_input("src", [FakeCuda((2, 2, 3), typestr="<c8")])
        with pytest.raises(StokerError, match=r"src: the GPU arrays of one batch come from 2 different CUDA streams"):
            pipe.feed_input("src", [FakeCuda((2, 2, 3), stream=7), FakeCuda((2, 2, 3), stream=9)])
        # well-formed, but this pipeline has no GPU (and this build may have no CUDA): refused by the C side
        with pytest.raises(StokerError, match=r"GPU memory"):
            pipe.feed_input("src", FakeCuda((1, 2, 2, 3)))


def test_gpu_arrays_are_read_by_pointer_not_copied_to_the_host():
    """The description the C feed gets for a dense and a listed GPU batch: device pointers per sample, the GPU
    ordinal, and the producer's stream (0 for the interface's "no synchronization needed")."""
    from stoker.external_source import describe_batch

    class FakeCuda:
        def __init__(self, shape, pointer, stream=None):
            self.__cuda_array_interface__ = {"shape": shape, "typestr": "<f4", "data": (pointer, False),
                                             "version": 3, "strides": None, "stream": stream}

        def __dlpack_device__(self):
            return (2, 3)

    flat, count, keep, stream = describe_batch("src", [FakeCuda((3, 2, 5), 1 << 20, stream=11)], [""], False, 0)
    assert count == 3 and stream == 11
    assert [d[0] for d in flat] == [(1 << 20) + i * 40 for i in range(3)]
    assert all(d[1] == 3 and d[2] == (2, 5) and d[3] == 40 and d[5:] == (1, 3) for d in flat)  # float32, GPU 3
    flat, count, keep, stream = describe_batch("src", [[FakeCuda((4,), 8192), FakeCuda((2,), 9216)]], ["N"], False, 0)
    assert count == 2 and stream == 0 and [d[0] for d in flat] == [8192, 9216] and [d[3] for d in flat] == [16, 8]


@requires_cuda
@pytest.mark.parametrize("no_copy", [False, True])
def test_torch_cuda_tensors_of_sizes_3_7_1_256_come_back_on_the_gpu(no_copy):
    """Dense samples, so the GPU output comes back whole through DLPack (ragged GPU samples are
    checked sample by sample by src/ops/feed/test_gpu_external_gpu.c)."""
    import torch

    sizes = [3, 7, 1, 256]
    batches = [[torch.arange(12, device="cuda", dtype=torch.float32).reshape(2, 6) + 1000 * k + i
                for i in range(n)] for k, n in enumerate(sizes)]  # queued, not waited for: the feed orders itself

    @pipeline_def(batch_size=256, num_threads=2, device_id=0, exec_dynamic=True, prefetch_queue_depth=1)
    def gpu_fed():
        return fn.external_source(source=batches, cycle="raise", device="gpu", no_copy=no_copy)

    with gpu_fed() as pipe:
        for k, n in enumerate(sizes):
            (out,) = pipe.run()
            assert out.device == "gpu" and len(out) == n
            got = torch.from_dlpack(out)  # one CUDA tensor, no host copy
            assert got.device.type == "cuda" and torch.equal(got, torch.stack(batches[k]))
        with pytest.raises(StopIteration):
            pipe.run()


@requires_cuda
def test_cpu_external_source_fed_cuda_tensors_gets_host_copies():
    import torch

    data = torch.arange(24, device="cuda", dtype=torch.int32).reshape(4, 6)

    @pipeline_def(batch_size=4, num_threads=1, device_id=0)
    def fed():
        return fn.external_source(name="src")

    with fed() as pipe:
        pipe.feed_input("src", data)
        (out,) = pipe.run()
        assert out.device == "cpu"
        np.testing.assert_array_equal(out.as_array(), data.cpu().numpy())


@requires_cuda
def test_a_cuda_tensor_on_another_gpu_or_strided_is_refused():
    import torch

    @pipeline_def(batch_size=2, num_threads=1, device_id=0)
    def fed():
        return fn.external_source(name="src", device="gpu")

    with fed() as pipe:
        with pytest.raises(StokerError, match="src: sample 0 of output 0 is a non-contiguous GPU array"):
            pipe.feed_input("src", [torch.zeros(4, 4, device="cuda").t(), torch.zeros(4, 4, device="cuda")])
        if torch.cuda.device_count() > 1:
            with pytest.raises(StokerError, match="wrong GPU"):
                pipe.feed_input("src", torch.zeros(2, 3, device="cuda:1"))


def test_iterator_passes_sizes_through_and_stops_at_the_end():
    sizes = [3, 7, 1, 256]
    batches = [make_batch(10 + i, n) for i, n in enumerate(sizes)]
    pipe = dynamic_pipe(batches, cycle="raise")
    it = NumpyIterator(pipe, ["images"], auto_reset=True)
    for _ in range(2):
        got = [step[0]["images"] for step in it]
        assert [g.shape[0] for g in got] == sizes
        for g, b in zip(got, batches):
            np.testing.assert_allclose(g, cmn_reference(b), atol=1e-4)
    pipe.close()


@pipeline_def(batch_size=3, num_threads=1)
def reader_pipe(root):
    jpegs, labels = fn.readers.file(file_root=root, name="Reader")
    return labels


def test_reader_wraps_around_in_run_as_in_dali(seven_samples):
    with reader_pipe(seven_samples) as pipe:
        epochs = [pipe.run_batch().epoch for _ in range(3)]
        with pytest.raises(StopIteration):  # run_batch (the iterators' call) stops at the epoch end
            pipe.run_batch()
        assert epochs == [0, 0, 0]
        for _ in range(7):  # run() goes on into the next epochs
            pipe.run()
    with reader_pipe(seven_samples, stop_at_epoch_end=True) as pipe:
        for _ in range(3):
            pipe.run()
        with pytest.raises(StopIteration):
            pipe.run()


@requires_torch
def test_torch_cpu_tensors_are_fed_and_cuda_tensors_refused():
    import torch

    batches = [torch.arange(n * H * W * C, dtype=torch.uint8).reshape(n, H, W, C) for n in (3, 7)]
    with dynamic_pipe(batches) as pipe:
        for b in batches:
            (out,) = pipe.run()
            np.testing.assert_allclose(out.as_array(), cmn_reference(b.numpy()), atol=1e-4)
    if torch.cuda.is_available():
        with dynamic_pipe([batches[0].cuda()]) as pipe:
            with pytest.raises(StokerError, match="samples in GPU memory, but the pipeline has no GPU"):
                pipe.run()


@requires_cuda
def test_gpu_device_feeds_gpu_operators():
    import torch

    sizes = [3, 7, 1, 256]
    batches = [make_batch(20 + i, n) for i, n in enumerate(sizes)]

    @pipeline_def(batch_size=256, num_threads=2, device_id=0, exec_dynamic=True)
    def gpu_pipe():
        images = fn.external_source(source=batches, layout="HWC", device="gpu")
        return fn.crop_mirror_normalize(images, crop=[4, 4], mean=MEAN.tolist(), std=STD.tolist())

    with gpu_pipe() as pipe:
        for b in batches:
            (out,) = pipe.run()
            assert out.device == "gpu"
            got = torch.from_dlpack(out).cpu().numpy()
            np.testing.assert_allclose(got, cmn_reference(b), atol=1e-4)


def test_oversized_sample_refused_before_any_copy():
    """A 3 GiB sample under the default 256 MiB budget (batch_size 1) is refused by its declared
    size: a 0-stride broadcast view was made contiguous by NumPy (3 GiB) and then copied twice by C
    before the budget refused it; a calloc'd array is refused by C before its pages are read."""
    pipe = Pipeline(batch_size=1, num_threads=1)
    with pipe:
        pipe.set_outputs(fn.external_source(name="src", dtype=np.uint8))
    pipe.build()
    assert pipe.stats()["host_memory_budget"] == 256 << 20
    for big in (np.broadcast_to(np.zeros(1, np.uint8), (3 << 30,)), np.zeros(3 << 30, np.uint8)):
        tracemalloc.start()  # NumPy reports its allocations here: a contiguous copy would show 3 GiB
        with pytest.raises(StokerError, match="host memory budget"):
            pipe.feed_input("src", [big])
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        assert peak < 64 << 20, peak
    pipe.feed_input("src", [np.arange(8, dtype=np.uint8)])
    (out,) = pipe.run()
    assert np.array_equal(np.asarray(out[0]), np.arange(8, dtype=np.uint8))


def test_host_samples_of_every_form_come_back_with_their_values():
    """The direct read of contiguous NumPy samples and the general path beside it: a strided view, a
    transposed view, a big-endian array (values kept, not its bytes read as native), a list; and a
    0-d sample (a 1-element array, as np.ascontiguousarray makes it) beside a 1-d one."""
    base = np.arange(2 * 3 * 4, dtype=np.uint16).reshape(2, 3, 4) * 1000 + 1  # bytes that differ when swapped
    samples = [base[0], base[1][:, ::2], base[0].T, base[1].astype(">u2"), [[1, 2], [3, 4]]]
    want = [np.asarray(s, dtype=np.uint16) for s in samples]

    @pipeline_def(batch_size=len(samples), num_threads=2)
    def fed():
        return fn.external_source(name="src", dtype=np.uint16)

    with fed() as pipe:
        pipe.feed_input("src", samples[:-1] + [np.asarray(samples[-1], dtype=np.uint16)])
        (out,) = pipe.run()
        for i, w in enumerate(want):
            got = np.asarray(out[i])
            assert got.shape == w.shape and got.dtype == np.uint16, (i, got.shape, w.shape)
            np.testing.assert_array_equal(got, w, err_msg="sample %d" % i)

    @pipeline_def(batch_size=2, num_threads=1)
    def scalars():
        return fn.external_source(name="src")

    with scalars() as pipe:
        pipe.feed_input("src", [np.array(7, np.int32), np.array([8], np.int32)])
        (out,) = pipe.run()
        assert [np.asarray(out[i]).tolist() for i in range(2)] == [[7], [8]]


@requires_cuda
def test_torch_cuda_samples_are_described_as_dlpack_describes_them():
    """Lists of torch CUDA tensors are read from the tensors (no DLPack capsule per sample): the
    same pointers, dtypes, shapes, sizes and GPU as the DLPack reading, and the stream the feed
    waits for is torch's current one (1, the legacy default stream, outside a stream context)."""
    import torch

    from stoker.external_source import _describe_gpu, describe_batch
    from stoker.gpu_input import gpu_array

    tensors = [torch.zeros(3, 5, 2, device="cuda", dtype=dt)[1:] for dt in (torch.uint8, torch.float32, torch.int64,
                                                                               torch.float16)]
    tensors.append(torch.zeros(0, 4, device="cuda"))
    flat, count, keep, stream = describe_batch("src", [tensors], ["HWC"], False, 0)
    assert count == len(tensors) and stream == 1 and all(k is t for k, t in zip(keep, tensors))
    for i, (t, got) in enumerate(zip(tensors, flat)):
        array = gpu_array(t, "sample", 0)
        assert got == _describe_gpu("src", array, array.pointer, array.shape, 0, i, "HWC"), i
    flags = torch.zeros(2, 3, device="cuda", dtype=torch.bool)  # stoker's bool (code 5), whatever DLPack calls it
    (described,), _, _, _ = describe_batch("src", [[flags]], [""], False, 0)
    assert described[1:4] == (5, (2, 3), 6) and described[0] == flags.data_ptr()
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        _, _, _, stream = describe_batch("src", [tensors[:2]], [""], False, 0)
    assert stream == side.cuda_stream
    with pytest.raises(StokerError, match=r"src: sample 0 of output 0 has dtype torch.complex64"):
        describe_batch("src", [[torch.zeros(2, device="cuda", dtype=torch.complex64)]], [""], False, 0)


@requires_cuda
def test_torch_cuda_samples_made_on_a_side_stream_are_waited_for():
    """A batch still being written on torch's current stream (a side stream, made current around
    run(), which calls the source) when it is fed: the feed waits for that stream, so the pipeline
    copies the finished values, not what the memory held before."""
    import torch

    side = torch.cuda.Stream()

    def source():  # on torch's current stream, as a training loop's tensors are
        out = [torch.zeros((64, 64), device="cuda") for _ in range(4)]
        torch.cuda._sleep(50_000_000)  # keep the stream busy, then write the values after it
        for i, t in enumerate(out):
            t.fill_(float(i + 1))
        return out

    @pipeline_def(batch_size=4, num_threads=1, device_id=0, prefetch_queue_depth=1)
    def fed():
        return fn.external_source(source=source, device="gpu", name="src")

    with fed() as pipe:
        with torch.cuda.stream(side):
            (out,) = pipe.run()
        got = torch.from_dlpack(out).cpu()
        for i in range(4):
            assert torch.all(got[i] == i + 1), i
