"""tests/python/dali_compat/dali_data.py: small data sets for the DALI-compatibility tests (JPEG
folders through ../conftest.py's make_dataset, WebDataset tars, .npy files), written once per
test session into pytest's temporary directory."""
import io
import os
import sys
import tarfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from conftest import make_dataset  # noqa: E402


def jpeg_folder(root):
    """root/class_XX/img_YY.jpg: 12 JPEGs in 3 classes of 4."""
    make_dataset(str(root), [4, 4, 4])
    return str(root)


def webdataset_tar(root, count=6):
    """root/part.tar with `count` samples: NNN.jpg (a JPEG), NNN.cls (its label as text) and
    NNN.txt; returns the path and the labels in order."""
    from PIL import Image

    path = os.path.join(str(root), "part.tar")
    labels = []
    with tarfile.open(path, "w") as tar:
        for i in range(count):
            buffer = io.BytesIO()
            Image.new("RGB", (16 + i, 12), (10 * i, 20, 30)).save(buffer, "JPEG")
            for ext, data in (("jpg", buffer.getvalue()), ("cls", str(i % 3).encode()), ("txt", b"t%d" % i)):
                info = tarfile.TarInfo("%03d.%s" % (i, ext))
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
            labels.append(i % 3)
    return path, labels


def numpy_folder(root, count=5):
    """root/NN.npy: float32 [2, 3] arrays filled with their index."""
    os.makedirs(str(root), exist_ok=True)
    for i in range(count):
        np.save(os.path.join(str(root), "%02d.npy" % i), np.full((2, 3), i, dtype=np.float32))
    return str(root)
