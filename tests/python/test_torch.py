"""PyTorch integration: zero-copy DLPack into torch (same data_ptr), the iterators, stream
safety on the GPU and the ResNet-50 example. Skips without torch (CI) or without CUDA."""
import os
import subprocess
import sys

import numpy as np
import pytest

from stoker import LastBatchPolicy, fn, pipeline_def

from conftest import requires_cuda, requires_torch

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


@pipeline_def
def train_pipe(root, device="cpu", size=64):
    jpegs, labels = fn.readers.file(file_root=root, random_shuffle=True, name="Reader")
    images = fn.decoders.image(jpegs, device="mixed" if device == "gpu" else "cpu")
    images = fn.random_resized_crop(images, size=[size, size])
    images = fn.crop_mirror_normalize(images, mean=[124.0, 116.0, 104.0], std=[58.0, 57.0, 57.0],
                                      mirror=fn.random.coin_flip())
    return images, labels.gpu() if device == "gpu" else labels


@requires_torch
def test_zero_copy_into_torch_on_cpu(small_dataset):
    import torch

    with train_pipe(small_dataset, batch_size=4, num_threads=2) as pipe:
        pipe.build()
        images, labels = pipe.run()
        tensor = torch.from_dlpack(images)
        assert tensor.data_ptr() == images._info["data"]
        assert tuple(tensor.shape) == (len(images), *images.shape()[0]) and tensor.dtype == torch.float32
        np.testing.assert_array_equal(tensor.numpy(), images.as_array())


@requires_torch
def test_classification_iterator_partial(small_dataset):
    from stoker.torch import ClassificationIterator

    with train_pipe(small_dataset, batch_size=6, num_threads=2) as pipe:
        it = ClassificationIterator(pipe, reader_name="Reader", last_batch_policy=LastBatchPolicy.PARTIAL)
        sizes = [batch[0]["data"].shape[0] for batch in it]
        assert sizes == [6, 6, 6, 2] and len(it) == 4


# -- GPU: zero copy and stream safety --------------------------------------------------------------
# Every check below compares what a consumer got against a reference: the same pipeline and seed
# consumed one batch at a time with a full device synchronization around each (the same seed gives
# the same batches, test_gpu_batches_repeat_with_the_same_seed). A batch that was overwritten while
# still in use, or read before the pipeline finished writing it, differs from the reference.
GPU_BATCH = 4  # small_dataset has 20 images: 5 batches an epoch


def gpu_pipe(root, seed):
    return train_pipe(root, device="gpu", batch_size=GPU_BATCH, num_threads=2, device_id=0, seed=seed)


def take(iterator, count):
    """`count` batches from an auto-resetting iterator, across its epochs."""
    taken = 0
    while taken < count:
        for batch in iterator:
            yield batch
            taken += 1
            if taken == count:
                return


def reference_batches(root, seed, count, make=None):
    """(data, labels) of the first `count` batches of make(root, seed) (default gpu_pipe), copied to
    the host with the device synchronized before and after each copy."""
    import torch
    from stoker.torch import ClassificationIterator

    batches = []
    with (make or gpu_pipe)(root, seed) as pipe:
        it = ClassificationIterator(pipe, reader_name="Reader", auto_reset=True)
        for batch in take(it, count):
            torch.cuda.synchronize()
            batches.append((batch[0]["data"].cpu(), batch[0]["label"].cpu()))
            torch.cuda.synchronize()
    return batches


def assert_same_batches(got, expected, what):
    import torch

    assert len(got) == len(expected), "%s: %d batches, expected %d" % (what, len(got), len(expected))
    for index, ((data, labels), (ref_data, ref_labels)) in enumerate(zip(got, expected)):
        assert torch.equal(labels.cpu(), ref_labels), "%s: batch %d labels %s, reference %s" % (
            what, index, labels.tolist(), ref_labels.tolist())
        assert data.shape == ref_data.shape, "%s: batch %d shape %s" % (what, index, tuple(data.shape))
        diff = (data.cpu().float() - ref_data.float()).abs()
        assert diff.max().item() <= 1e-4, (
            "%s: batch %d differs from the synchronized reference (max |diff| %.3g on %.1f%% of the values): "
            "its memory was overwritten while in use, or read before it was written"
            % (what, index, diff.max().item(), 100.0 * (diff > 1e-4).float().mean().item()))


def busy_gpu(seconds):
    """Queues about `seconds` of work on the current stream as one single-thread kernel
    (torch.cuda._sleep), so the stream stays busy while the rest of the GPU is free for the pipeline."""
    import torch

    if not hasattr(torch.cuda, "_sleep"):
        pytest.skip("this torch has no torch.cuda._sleep to hold a stream busy")
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    torch.cuda._sleep(10_000_000)
    end.record()
    end.synchronize()
    cycles_per_second = 10_000_000 / (start.elapsed_time(end) / 1000.0)
    torch.cuda._sleep(int(cycles_per_second * seconds))


@requires_cuda
def test_zero_copy_into_torch_on_gpu(small_dataset):
    import torch
    from stoker.torch import ClassificationIterator

    with gpu_pipe(small_dataset, seed=1) as pipe:
        pipe.build()
        images, labels = pipe.run()
        assert images.device == "gpu"
        tensor = torch.from_dlpack(images)
        assert tensor.is_cuda and tensor.device.index == 0
        assert tensor.data_ptr() == images._info["data"], "the tensor is a copy, not the batch's memory"
        assert tuple(tensor.shape) == tuple(images.as_tensor().shape()) and tensor.shape[0] == GPU_BATCH
        assert tensor.dtype == torch.float32
        again = torch.from_dlpack(images)
        assert again.data_ptr() == tensor.data_ptr()
        tensor[0, 0, 0, 0] = 1234.5  # written through one export, seen through the other
        assert again[0, 0, 0, 0].item() == 1234.5
        assert torch.isfinite(tensor).all()
    with gpu_pipe(small_dataset, seed=1) as pipe:
        it = ClassificationIterator(pipe, reader_name="Reader")
        batch = next(it)
        data = batch[0]["data"]
        output = it._current[0].outputs[0]  # the batch output the iterator exported
        assert data.is_cuda and data.data_ptr() == output._info["data"], "the iterator copied the batch"
        assert batch[0]["label"].is_cuda  # labels marked .gpu() arrive on the GPU


@requires_cuda
def test_gpu_batches_repeat_with_the_same_seed(small_dataset):
    first = reference_batches(small_dataset, seed=3, count=7)
    assert_same_batches(reference_batches(small_dataset, seed=3, count=7), first, "second run, same seed")


@requires_cuda
def test_held_gpu_tensors_are_never_overwritten(small_dataset):
    """Tensors kept across many later batches (more than the pipeline has buffers) keep their
    values, also after the pipeline is closed: the pipeline must take new buffers, not reuse theirs."""
    import torch
    from stoker.torch import ClassificationIterator

    count = 12
    with gpu_pipe(small_dataset, seed=5) as pipe:
        it = ClassificationIterator(pipe, reader_name="Reader", auto_reset=True)
        held = [(batch[0]["data"], batch[0]["label"]) for batch in take(it, count)]  # no copy, no sync
        addresses = {data.data_ptr() for data, _ in held}
        assert len(addresses) == count, "held batches share memory: %d distinct buffers for %d batches" % (
            len(addresses), count)
        torch.cuda.synchronize()
        while_open = [(data.cpu(), labels.cpu()) for data, labels in held]
    expected = reference_batches(small_dataset, seed=5, count=count)
    assert_same_batches(while_open, expected, "held tensors, pipeline open")
    assert_same_batches([(data.cpu(), labels.cpu()) for data, labels in held], expected,
                        "held tensors, after the pipeline was closed")


@requires_cuda
@pytest.mark.parametrize("upload", ["record", "clone"])
def test_gpu_labels_do_not_hold_the_host_to_the_training_stream(small_dataset, monkeypatch, upload):
    """Labels marked .gpu() (host outputs) are copied on the iterator's side stream, which the
    training (current) stream waits for on the GPU. The host's next next() waits for that copy only:
    with the copy queued on the current stream it waited for all the work queued before it, so the
    host could never run more than one step ahead of the GPU. Here the current stream is held busy
    ~2 s while the host takes two more batches; every batch read on it is the reference's. Both
    ways of handing the copy over (STOKER_TORCH_UPLOAD: record_stream on the side stream's copy,
    or a clone made on the current stream)."""
    import torch
    from stoker.torch import ClassificationIterator

    monkeypatch.setenv("STOKER_TORCH_UPLOAD", upload)

    # CPU decode, GPU resize: no nvJPEG, whose own allocations (cudaFree) may wait for the device
    with cpu_decode_pipe(small_dataset, seed=3) as pipe:
        it = ClassificationIterator(pipe, reader_name="Reader", auto_reset=True)
        batches = take(it, 12)
        for _ in range(8):  # warm-up: every batch slot made and used
            next(batches)
        torch.cuda.synchronize()
        labels = []
        for index in range(3):
            batch = next(batches)
            labels.append(batch[0]["label"].clone())  # queued behind the busy work
            if index == 0:
                busy_gpu(2.0)
                done = torch.cuda.Event()
                done.record()
        host_ahead = not done.query()
        torch.cuda.synchronize()
    assert host_ahead, "next() waited for the training stream's queued work (the label copy is on it)"
    expected = reference_batches(small_dataset, 3, 11, make=cpu_decode_pipe)[8:]
    assert [t.cpu().reshape(-1).tolist() for t in labels] == [ref.reshape(-1).tolist() for _, ref in expected]


@pipeline_def
def cpu_decode_gpu_graph(root):
    jpegs, labels = fn.readers.file(file_root=root, random_shuffle=True, name="Reader")
    images = fn.resize(fn.decoders.image(jpegs, device="cpu"), resize_x=32, resize_y=32, device="gpu")
    return images, labels.gpu()


def cpu_decode_pipe(root, seed):
    """gpu_pipe's sizes with the CPU decoder and a GPU resize (no nvJPEG)."""
    return cpu_decode_gpu_graph(root, batch_size=GPU_BATCH, num_threads=2, device_id=0, seed=seed)


@requires_cuda
def test_released_gpu_tensor_still_read_by_a_busy_stream(small_dataset):
    """The usual training loop: the step's kernels that read the batch are queued on the training
    stream, then the host drops the tensor and asks for the next batches while the GPU is still
    behind. The buffer may go back to the pipeline only once that stream has read it: here the
    stream is held busy ~1 s before its read, while the host goes on until the pipeline hands the
    same memory out again (and has filled it)."""
    import torch
    from stoker.torch import ClassificationIterator

    reader = torch.cuda.Stream()
    with gpu_pipe(small_dataset, seed=7) as pipe:
        it = ClassificationIterator(pipe, reader_name="Reader", auto_reset=True)
        batches = take(it, 100)
        with torch.cuda.stream(reader):
            batch = next(batches)  # the reader stream waits on the batch's event
            data, labels = batch[0]["data"], batch[0]["label"]
            address = data.data_ptr()
            busy_gpu(1.0)  # then it is held busy...
            late = (data.clone(), labels.clone())  # ...so this reads the batch ~1 s from now
        del batch, data, labels  # the host's last references: the buffer goes back to the pipeline
        reused = False
        for _ in range(24):
            batch = next(batches)
            if batch[0]["data"].data_ptr() == address:
                torch.cuda.current_stream().synchronize()  # it waited on the batch: the memory is rewritten
                reused = True
                break
        still_busy = not reader.query()
        reader.synchronize()
    assert reused, "the released buffer never came back within 24 batches (has the buffer pool changed?)"
    expected = reference_batches(small_dataset, seed=7, count=1)
    assert_same_batches([late], expected, "read on a stream that was busy when the tensor was released"
                        + ("" if still_busy else " (that stream had finished before the reuse)"))


@requires_cuda
def test_gpu_batches_read_at_once_on_an_idle_stream(small_dataset):
    """A high-priority idle stream copies each batch the moment the iterator returns it, while a
    low-priority stream floods the GPU with matrix products (so the pipeline's own kernels run late):
    the copies must still see finished batches, i.e. the consumer's stream waits on the batch's event."""
    import torch
    from stoker.torch import ClassificationIterator

    count = 10
    flood, reader = torch.cuda.Stream(priority=0), torch.cuda.Stream(priority=-1)
    a, b = torch.randn(2048, 2048, device="cuda"), torch.randn(2048, 2048, device="cuda")
    product = torch.empty_like(a)
    flood.wait_stream(torch.cuda.current_stream())  # a and b are made on the current stream
    copies = []
    with gpu_pipe(small_dataset, seed=9) as pipe:
        it = ClassificationIterator(pipe, reader_name="Reader", auto_reset=True)
        with torch.cuda.stream(reader):
            for batch in take(it, count):
                with torch.cuda.stream(flood):
                    for _ in range(16):
                        torch.mm(a, b, out=product)
                copies.append((batch[0]["data"].clone(), batch[0]["label"].clone()))
        torch.cuda.synchronize()
    assert_same_batches(copies, reference_batches(small_dataset, seed=9, count=count),
                        "copied at once on an idle stream")


@requires_cuda
def test_resnet50_example_runs(small_dataset):
    pytest.importorskip("torchvision")
    for loader in ("stoker", "pytorch"):
        result = subprocess.run(
            [sys.executable, os.path.join(REPO, "examples", "train_resnet50.py"), "--data", small_dataset,
             "--loader", loader, "--steps", "6", "--batch-size", "4", "--workers", "2"],
            capture_output=True, text=True, timeout=600)
        assert result.returncode == 0, result.stderr[-2000:]
        summary = [line for line in result.stdout.splitlines() if line.startswith("train_resnet50:")]
        assert len(summary) == 1, result.stdout[-2000:]
        fields = dict(item.split("=", 1) for item in summary[0].split()[1:])
        assert fields["loader"] == loader and int(fields["steps"]) == 4  # 6 steps, 2 of warm-up
        assert float(fields["img/s"]) > 0
        assert 0.0 <= float(fields["gpu_idle_share"].rstrip("%")) <= 100.0


@requires_torch
def test_example_warmup_seconds_on_cpu(small_dataset):
    """--warmup-seconds: the window starts only after the first step ending that long after the
    first batch (the protocol's warm-up), and is then timed for --seconds (bench/train-view.sh)."""
    pytest.importorskip("torchvision")
    result = subprocess.run(
        [sys.executable, os.path.join(REPO, "examples", "train_resnet50.py"), "--data", small_dataset,
         "--loader", "synthetic", "--device", "cpu", "--arch", "resnet18", "--image-size", "32", "--batch-size", "2",
         "--workers", "1", "--steps", "100000", "--warmup-seconds", "2.5", "--seconds", "1"],
        env=dict(os.environ, OMP_NUM_THREADS="1"), capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-2000:]
    summary = [line for line in result.stdout.splitlines() if line.startswith("train_resnet50: loader=")]
    assert len(summary) == 1, result.stdout[-2000:]
    fields = dict(item.split("=", 1) for item in summary[0].split()[1:])
    assert float(fields["warmup_s"]) >= 2.5 and int(fields["warmup_steps"]) >= 1, fields
    assert float(fields["seconds"]) >= 1.0 and int(fields["steps"]) >= 1, fields
    assert float(fields["img/s"]) == pytest.approx(int(fields["steps"]) * 2 / float(fields["seconds"]), rel=0.01)


@requires_torch
def test_example_warmup_seconds_keeps_least_steps(small_dataset):
    """--warmup-seconds with --warmup N: the window does not start before step N even when the time
    has passed (a 14-s first step on a fresh machine once made a one-step warm-up)."""
    pytest.importorskip("torchvision")
    result = subprocess.run(
        [sys.executable, os.path.join(REPO, "examples", "train_resnet50.py"), "--data", small_dataset,
         "--loader", "synthetic", "--device", "cpu", "--arch", "resnet18", "--image-size", "32", "--batch-size", "2",
         "--workers", "1", "--steps", "100000", "--warmup-seconds", "0.001", "--warmup", "7", "--seconds", "0.5"],
        env=dict(os.environ, OMP_NUM_THREADS="1"), capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-2000:]
    summary = [line for line in result.stdout.splitlines() if line.startswith("train_resnet50: loader=")]
    assert len(summary) == 1, result.stdout[-2000:]
    fields = dict(item.split("=", 1) for item in summary[0].split()[1:])
    assert int(fields["warmup_steps"]) == 7, fields


@requires_torch
def test_example_training_defaults(small_dataset):
    """The example's own defaults for a training loop (normal stream priority, the fused kernel in 8
    launches) are on its summary line, and the environment's STOKER_FUSED_SPLIT wins over them."""
    pytest.importorskip("torchvision")
    command = [sys.executable, os.path.join(REPO, "examples", "train_resnet50.py"), "--data", small_dataset,
               "--loader", "stoker", "--device", "cpu", "--arch", "resnet18", "--image-size", "32",
               "--batch-size", "2", "--workers", "1", "--steps", "3"]
    base = {key: value for key, value in os.environ.items() if key != "STOKER_FUSED_SPLIT"}
    for extra_env, flags, split, priority in (({}, [], "8", "normal"), ({"STOKER_FUSED_SPLIT": "2"}, [], "2", "normal"),
                                              ({}, ["--fused-split", "1", "--stream-priority", "high"], "1", "high")):
        result = subprocess.run(command + flags, env=dict(base, OMP_NUM_THREADS="1", **extra_env),
                                capture_output=True, text=True, timeout=600)
        assert result.returncode == 0, result.stderr[-2000:]
        summary = [line for line in result.stdout.splitlines() if line.startswith("train_resnet50: loader=")]
        assert len(summary) == 1, result.stdout[-2000:]
        fields = dict(item.split("=", 1) for item in summary[0].split()[1:])
        assert (fields["fused_split"], fields["stream_priority"]) == (split, priority), (extra_env, flags, fields)
