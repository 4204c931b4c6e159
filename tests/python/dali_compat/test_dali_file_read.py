"""fn.io.file.read as DALI's EfficientNet example drives it: an external source gives file paths as
encoded text (int8 or uint8 arrays), fn.io.file.read reads each file, fn.decoders.image decodes the
bytes -- the same pixels as readers.file's bytes through the same decoder. A missing file or a
directory is an error naming the path."""
import glob
import os

import numpy as np
import pytest

from dali_data import jpeg_folder
from stoker import fn, pipeline_def


def _paths(root):
    return sorted(glob.glob(os.path.join(root, "*", "*.jpg")))


def _encoded(paths, dtype):
    return [np.frombuffer(p.encode(), dtype=dtype) for p in paths]


@pytest.mark.parametrize("dtype", [np.int8, np.uint8])
def test_paths_read_and_decode_like_the_file_reader(tmp_path, dtype):
    root = jpeg_folder(tmp_path)
    paths = _paths(root)
    batch = 4

    @pipeline_def(batch_size=batch, num_threads=2, device_id=None)
    def from_paths():
        names = fn.external_source(source=lambda info: _encoded(paths[info.iteration * batch % len(paths):][:batch],
                                                                 dtype), batch_info=True, batch=True)
        jpegs = fn.io.file.read(names, dont_use_mmap=True)
        return fn.decoders.image(jpegs), jpegs

    @pipeline_def(batch_size=batch, num_threads=2, device_id=None)
    def from_reader():
        jpegs, _ = fn.readers.file(files=paths, random_shuffle=False)
        return fn.decoders.image(jpegs)

    with from_paths() as a, from_reader() as b:
        for it in range(len(paths) // batch):
            images, raw = a.run()
            (want,) = b.run()
            for k in range(batch):
                path = paths[it * batch + k]
                with open(path, "rb") as f:
                    assert np.array(raw[k]).tobytes() == f.read()
                assert np.array_equal(np.array(images[k]), np.array(want[k]))


@pytest.mark.parametrize("make_bad, needle", [
    (lambda root: os.path.join(root, "missing.jpg"), "missing.jpg"),
    (lambda root: root, "directory"),
])
def test_a_bad_path_is_named(tmp_path, make_bad, needle):
    root = jpeg_folder(tmp_path)
    bad = make_bad(root)

    @pipeline_def(batch_size=1, num_threads=1, device_id=None)
    def pipe():
        names = fn.external_source(source=lambda: [np.frombuffer(bad.encode(), dtype=np.int8)], batch=True)
        return fn.io.file.read(names)

    with pytest.raises(RuntimeError, match=needle):
        with pipe() as p:
            p.run()
