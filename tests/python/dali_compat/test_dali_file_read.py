"""fn.io.file.read as DALI's EfficientNet example uses it: an external_source named "images" fed
encoded paths (np.frombuffer(path.encode(), dtype=np.int8 or np.uint8)) with feed_input, then
fn.io.file.read, then fn.decoders.image -- the images equal those of readers.file on the same
files, the bytes are each file's, source_info() is the path; ops.io.file.Read does the same;
an empty file is a zero-length sample; a missing file, a directory, an empty path, a 2-D or
float sample, and use_o_direct without dont_use_mmap fail with a StokerError (a RuntimeError, as
DALI raises) naming the path or the fault. The mixed decoder's run needs a GPU (skipped without)."""
import os

import numpy as np
import pytest

import stoker
from dali_data import jpeg_folder
from stoker import Pipeline, StokerError, fn, ops, pipeline_def, types

BATCH = 4


def _encoded(path, dtype=np.int8):
    return np.frombuffer(path.encode(), dtype=dtype)


def _reference(root, device="cpu"):
    """{path: (decoded image, encoded bytes)} of every file under root, through readers.file."""

    @pipeline_def(batch_size=BATCH, num_threads=2, device_id=None if device == "cpu" else 0)
    def listed():
        jpegs, _ = fn.readers.file(file_root=root, random_shuffle=False, name="Reader")
        return fn.decoders.image(jpegs, device=device, output_type=types.RGB), jpegs

    seen = {}
    with listed() as pipe:
        for _ in range(pipe.epoch_size("Reader") // BATCH):
            images, jpegs = pipe.run()
            for k, path in enumerate(images.source_info()):
                seen[path] = (np.array(images.as_cpu()[k]), np.array(jpegs[k]))
    return seen


@pipeline_def(batch_size=BATCH, num_threads=2, device_id=None)
def _by_path(device="cpu"):  # DALI's training/validation_pipe_external_source, up to the decoder
    filepaths = fn.external_source(name="images", no_copy=True)
    jpegs = fn.io.file.read(filepaths)
    return fn.decoders.image(jpegs, device=device, output_type=types.RGB), jpegs


def _run_by_path(pipe, paths, dtype):
    """{path: (decoded image, bytes, source_info of both)} of paths fed BATCH at a time."""
    got = {}
    for start in range(0, len(paths), BATCH):
        batch = paths[start:start + BATCH]
        pipe.feed_input("images", [_encoded(p, dtype) for p in batch])
        images, jpegs = pipe.run()
        assert images.source_info() == jpegs.source_info() == batch
        for k, path in enumerate(batch):
            assert images.as_cpu()[k].source_info() == path
            got[path] = (np.array(images.as_cpu()[k]), np.array(jpegs[k]))
    return got


@pytest.mark.parametrize("dtype", [np.int8, np.uint8])
def test_external_source_paths_decode_as_readers_file(tmp_path, dtype):
    want = _reference(jpeg_folder(tmp_path))
    paths = sorted(want)[::-1]  # another order than the reader's
    with _by_path() as pipe:
        got = _run_by_path(pipe, paths, dtype)
    assert sorted(got) == sorted(want) and len(got) == 12
    for path, (image, data) in got.items():
        with open(path, "rb") as f:
            assert data.dtype == np.uint8 and data.ndim == 1 and data.tobytes() == f.read()
        assert data.tobytes() == want[path][1].tobytes()
        np.testing.assert_array_equal(image, want[path][0])


def test_ops_read_in_define_graph(tmp_path):
    root = jpeg_folder(tmp_path)
    path = os.path.join(root, "class_01", sorted(os.listdir(os.path.join(root, "class_01")))[0])

    class ByPath(Pipeline):
        def __init__(self):
            super().__init__(batch_size=2, num_threads=1, device_id=None)
            self.source = ops.ExternalSource()
            self.read = ops.io.file.Read(dont_use_mmap=True)

        def define_graph(self):
            self.paths = self.source()
            return self.read(self.paths)

        def iter_setup(self):
            self.feed_input(self.paths, [_encoded(path, np.uint8)] * 2)

    with ByPath() as pipe:
        pipe.build()
        (out,) = pipe.run()
        with open(path, "rb") as f:
            assert np.array(out[1]).tobytes() == f.read()
        assert out.source_info() == [path, path]


def test_empty_file_is_a_zero_length_sample(tmp_path):
    empty, full = str(tmp_path / "empty.jpg"), str(tmp_path / "full.bin")
    open(empty, "wb").close()
    with open(full, "wb") as f:
        f.write(b"\x01\x02\x03")

    @pipeline_def(batch_size=2, num_threads=1, device_id=None)
    def read():
        return fn.io.file.read(fn.external_source(name="images"), use_o_direct=True, dont_use_mmap=True)

    with read() as pipe:
        pipe.feed_input("images", [_encoded(empty), _encoded(full)])
        (out,) = pipe.run()
        assert out.shape() == [(0,), (3,)]
        assert np.array(out[1]).tolist() == [1, 2, 3]


def _fails(sample, *needles):
    @pipeline_def(batch_size=1, num_threads=1, device_id=None)
    def read():
        return fn.io.file.read(fn.external_source(name="images"))

    with read() as pipe:
        pipe.feed_input("images", [sample])
        with pytest.raises(StokerError) as caught:
            pipe.run()
    assert isinstance(caught.value, RuntimeError)
    for needle in needles:
        assert needle in str(caught.value), str(caught.value)


def test_missing_file_names_the_path(tmp_path):
    path = str(tmp_path / "no-such.jpg")
    _fails(_encoded(path), path, "No such file", "io.file.read")


def test_directory_names_the_path(tmp_path):
    _fails(_encoded(str(tmp_path)), str(tmp_path), "directory")


def test_bad_path_samples_say_what_is_wrong():
    _fails(np.zeros(0, np.uint8), "empty path")
    _fails(np.frombuffer(b"/tmp/abcd", np.uint8).reshape(3, 3), "1-D", "2-D")
    _fails(np.ones(4, np.float32), "uint8 or int8", "float")


def test_o_direct_needs_dont_use_mmap_as_in_dali():
    @pipeline_def(batch_size=1, num_threads=1, device_id=None)
    def read():
        return fn.io.file.read(fn.external_source(name="images"), use_o_direct=True)

    with pytest.raises(StokerError, match="dont_use_mmap"):
        with read() as pipe:
            pipe.build()


@pytest.mark.skipif(stoker._stoker.num_gpus() == 0, reason="no GPU here: the mixed decoder needs one")
def test_mixed_decoder_takes_the_bytes_as_from_readers_file(tmp_path):
    want = _reference(jpeg_folder(tmp_path), device="mixed")

    @pipeline_def(batch_size=BATCH, num_threads=2, device_id=0)
    def by_path_mixed():
        jpegs = fn.io.file.read(fn.external_source(name="images", no_copy=True))
        return fn.decoders.image(jpegs, device="mixed", output_type=types.RGB), jpegs

    with by_path_mixed() as pipe:
        got = _run_by_path(pipe, sorted(want), np.int8)
    for path, (image, _) in got.items():
        np.testing.assert_array_equal(image, want[path][0])
