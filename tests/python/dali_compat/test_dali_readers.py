"""Readers as DALI has them: reader_meta()/epoch_size() before build (building implicitly),
reader_meta() without a name as {name: meta}, a wrong reader name as DALI's RuntimeError naming
the real readers, DALI's output counts (webdataset: one per ext; video: per its enable_* flags),
and DALI's memory-management arguments accepted."""
import os
import subprocess

import numpy as np
import pytest

from dali_data import jpeg_folder, numpy_folder, webdataset_tar
from stoker import Pipeline, StokerError, fn, pipeline_def


@pipeline_def(batch_size=4, num_threads=1, device_id=None)
def files(root):
    jpegs, labels = fn.readers.file(file_root=root, name="Reader")
    return labels


def test_reader_meta_and_epoch_size_before_build(tmp_path):
    pipe = files(jpeg_folder(tmp_path))
    assert not pipe.is_built
    assert pipe.epoch_size("Reader") == 12 and pipe.is_built
    assert pipe.epoch_size() == {"Reader": 12}
    meta = pipe.reader_meta()
    assert set(meta) == {"Reader"} and meta["Reader"]["epoch_size"] == 12
    assert pipe.reader_meta("Reader")["number_of_shards"] == 1
    pipe.close()


def test_a_wrong_reader_name_names_the_readers(tmp_path):
    with files(jpeg_folder(tmp_path)) as pipe:
        with pytest.raises(RuntimeError, match="no reader named 'Readr'.*'Reader'") as info:
            pipe.reader_meta("Readr")
        assert isinstance(info.value, StokerError)
        with pytest.raises(RuntimeError, match="'Reader'"):
            pipe.epoch_size("Readr")


@pytest.mark.parametrize("ext,count", [(["jpg", "cls"], 2), (["jpg"], 1), ("jpg", 1), (["jpg", "cls", "txt"], 3)])
def test_webdataset_returns_one_output_per_ext(tmp_path, ext, count):
    path, labels = webdataset_tar(tmp_path)

    @pipeline_def(batch_size=3, num_threads=1, device_id=None)
    def wds():
        outputs = fn.readers.webdataset(paths=[path], ext=ext, name="Reader")
        if count == 1:
            assert not isinstance(outputs, (list, tuple))
            return outputs
        assert len(outputs) == count
        return tuple(outputs)

    with wds() as pipe:
        outputs = pipe.run()
        assert len(outputs) == count
        if count >= 2:
            assert [bytes(outputs[1].at(i)).decode() for i in range(3)] == [str(v) for v in labels[:3]]


def test_webdataset_unpacks_like_dalis_resnet_loader(tmp_path):
    path, labels = webdataset_tar(tmp_path)
    jpegs, cls = fn.readers.webdataset(paths=[path], ext=["jpg", "cls"], missing_component_behavior="error")
    pipe = Pipeline(batch_size=2, num_threads=1, device_id=None)
    pipe.set_outputs(fn.decoders.image(jpegs), cls)
    with pipe:
        pipe.build()
        images, cls_out = pipe.run()
        assert images.shape()[0] == (12, 16, 3) and images.layout() == "HWC"


def test_numpy_reader_takes_dalis_memory_arguments(tmp_path):
    root = numpy_folder(tmp_path)

    @pipeline_def(batch_size=5, num_threads=1, device_id=None)
    def arrays(**hints):
        return fn.readers.numpy(file_root=root, name="Reader", **hints)

    hinted = arrays(cache_header_information=True, dont_use_mmap=True, use_o_direct=False, read_ahead=True)
    with hinted as a, arrays() as b:
        np.testing.assert_array_equal(a.run()[0].as_array(), b.run()[0].as_array())


def _clips(tmp_path):
    from stoker._cli import binary_path

    root = str(tmp_path / "clips")
    os.makedirs(root)
    try:
        subprocess.run([binary_path(), "datagen", "--video", root, "--count", "2", "--classes", "2", "--frames", "8",
                        "--size", "32x24"], check=True, capture_output=True, timeout=120)
    except (subprocess.CalledProcessError, OSError) as error:
        pytest.skip("no video data set: %s" % error)
    return root


@pytest.mark.parametrize("flags,count", [({}, 2), ({"enable_frame_num": True}, 3),
                                         ({"enable_frame_num": True, "enable_timestamps": True}, 4)])
def test_video_outputs_follow_the_enable_flags(tmp_path, flags, count):
    root = _clips(tmp_path)

    @pipeline_def(batch_size=1, num_threads=1, device_id=None)
    def video():
        outputs = fn.readers.video(file_root=root, sequence_length=4, name="Reader", **flags)
        assert len(outputs) == count
        return tuple(outputs)

    try:
        with video() as pipe:
            outputs = pipe.run()
            assert len(outputs) == count and outputs[0].shape()[0][0] == 4 and outputs[0].layout() == "FHWC"
            if count >= 3:
                assert outputs[2].dtype == outputs[1].dtype  # frame number: int32 like the label
    except StokerError as error:
        if error.status == "STK_ENOLIB":
            pytest.skip("readers.video: FFmpeg's libraries are missing (%s)" % error)
        raise


def test_video_without_labels_returns_frames_alone(tmp_path):
    root = _clips(tmp_path)
    names = sorted(os.path.join(d, f) for d, _, fs in os.walk(root) for f in fs)
    frames = fn.readers.video(filenames=names, sequence_length=4)
    assert not isinstance(frames, (list, tuple))
