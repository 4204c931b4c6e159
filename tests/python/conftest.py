"""tests/python/conftest.py: shared fixtures for the Python package's tests: small JPEG data sets
made with Pillow (one class folder per label), and skip helpers for torch / CUDA."""
import os
import random

import pytest

try:
    from PIL import Image
except ImportError:  # pragma: no cover - Pillow is installed by scripts/test-python.sh
    Image = None


def _write_jpeg(path, width, height, seed):
    """A JPEG with structure and noise (a gradient plus random blocks), deterministic per seed."""
    rng = random.Random(seed)
    image = Image.new("RGB", (width, height))
    pixels = image.load()
    base = [rng.randrange(256) for _ in range(3)]
    for y in range(height):
        for x in range(width):
            pixels[x, y] = (
                (base[0] + x * 3 + rng.randrange(24)) % 256,
                (base[1] + y * 5 + rng.randrange(24)) % 256,
                (base[2] + (x ^ y) + rng.randrange(24)) % 256,
            )
    image.save(path, "JPEG", quality=85)


def make_dataset(root, per_class, sizes=((64, 48), (48, 64), (80, 60))):
    """Writes root/class_XX/img_YY.jpg for per_class = [count of class 0, count of class 1, ...].
    Returns the list of (path, label) in the reader's (sorted) order."""
    if Image is None:
        pytest.skip("Pillow is not installed")
    entries = []
    index = 0
    for label, count in enumerate(per_class):
        folder = os.path.join(root, "class_%02d" % label)
        os.makedirs(folder, exist_ok=True)
        for i in range(count):
            width, height = sizes[index % len(sizes)]
            path = os.path.join(folder, "img_%02d.jpg" % i)
            _write_jpeg(path, width, height, seed=index)
            entries.append((path, label))
            index += 1
    return entries


@pytest.fixture(scope="session")
def seven_samples(tmp_path_factory):
    """Seven samples, one per class, so the label IS the sample (0..6 stand for DALI's 1..7)."""
    root = str(tmp_path_factory.mktemp("seven"))
    make_dataset(root, [1] * 7)
    return root


@pytest.fixture(scope="session")
def small_dataset(tmp_path_factory):
    """Twenty JPEGs in three classes (7, 7, 6)."""
    root = str(tmp_path_factory.mktemp("small"))
    make_dataset(root, [7, 7, 6])
    return root


@pytest.fixture(scope="session")
def numbered_dataset(tmp_path_factory):
    """Thirteen samples, one per class: labels identify samples (for sharding/order tests)."""
    root = str(tmp_path_factory.mktemp("numbered"))
    make_dataset(root, [1] * 13)
    return root


def have_torch():
    try:
        import torch  # noqa: F401

        return True
    except ImportError:
        return False


def have_cuda():
    if not have_torch():
        return False
    import torch

    return torch.cuda.is_available()


requires_torch = pytest.mark.skipif(not have_torch(), reason="torch is not installed (CI has no torch)")
requires_cuda = pytest.mark.skipif(not have_cuda(), reason="no CUDA device (or no torch with CUDA)")
