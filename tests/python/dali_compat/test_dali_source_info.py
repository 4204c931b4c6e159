"""source_info() as DALI gives it: where each sample came from, on the output list and on each
sample, kept through the operators after the reader (a decoded image names its file):
readers.file and readers.numpy the file path, readers.webdataset "<tar path>:<sample key>",
readers.video the video's path, an external source ""."""
import os

import numpy as np
import pytest

from dali_data import jpeg_folder, numpy_folder, webdataset_tar
from stoker import StokerError, fn, pipeline_def
from test_dali_readers import _clips


def test_file_reader_gives_each_files_path_through_the_decoder(tmp_path):
    root = jpeg_folder(tmp_path)

    @pipeline_def(batch_size=4, num_threads=1, device_id=None)
    def images():
        jpegs, labels = fn.readers.file(file_root=root, random_shuffle=True, name="Reader")
        return fn.resize(fn.decoders.image(jpegs), size=[8, 8]), labels, jpegs

    with images() as pipe:
        seen = []
        for _ in range(3):
            decoded, labels, encoded = pipe.run()
            infos = decoded.source_info()
            assert infos == encoded.source_info() == labels.source_info()
            for k, info in enumerate(infos):  # the label is the class folder the file is in
                assert os.path.isfile(info) and info.startswith(root)
                assert os.path.basename(os.path.dirname(info)) == "class_%02d" % int(np.array(labels[k])[0])
                assert decoded[k].source_info() == info
            seen += infos
        assert len(set(seen)) == 12  # one epoch: every file once


def test_numpy_reader_gives_each_files_path(tmp_path):
    root = numpy_folder(tmp_path, count=5)

    @pipeline_def(batch_size=5, num_threads=1, device_id=None)
    def arrays():
        return fn.readers.numpy(file_root=root, random_shuffle=True, seed=3)

    with arrays() as pipe:
        (out,) = pipe.run()
        for k, info in enumerate(out.source_info()):  # each array holds its file's index
            assert info == os.path.join(root, "%02d.npy" % int(np.array(out[k])[0, 0]))


def test_webdataset_gives_tar_and_key(tmp_path):
    path, labels = webdataset_tar(tmp_path, count=6)

    @pipeline_def(batch_size=3, num_threads=1, device_id=None)
    def wds():
        jpegs, cls = fn.readers.webdataset(paths=[path], ext=["jpg", "cls"], name="Reader")
        return fn.decoders.image(jpegs), cls

    with wds() as pipe:
        infos = []
        for _ in range(2):
            images, cls = pipe.run()
            infos += images.source_info()
            assert cls.source_info() == images.source_info()
        assert infos == ["%s:%03d" % (path, i) for i in range(6)]


def test_video_reader_gives_the_videos_path(tmp_path):
    root = _clips(tmp_path)

    @pipeline_def(batch_size=2, num_threads=1, device_id=None)
    def video():
        frames, labels = fn.readers.video(file_root=root, sequence_length=4, name="Reader")
        return frames, labels

    try:
        with video() as pipe:
            frames, labels = pipe.run()
            for k, info in enumerate(frames.source_info()):
                assert os.path.isfile(info) and info.startswith(root), info
                assert frames[k].source_info() == info
    except StokerError as error:
        if error.status == "STK_ENOLIB":
            pytest.skip("readers.video: FFmpeg's libraries are missing (%s)" % error)
        raise


def test_external_source_has_no_source(tmp_path):
    @pipeline_def(batch_size=2, num_threads=1, device_id=None)
    def fed():
        return fn.external_source(source=lambda: [np.zeros(3, np.uint8)] * 2)

    with fed() as pipe:
        (out,) = pipe.run()
        assert out.source_info() == ["", ""] and out[1].source_info() == ""
