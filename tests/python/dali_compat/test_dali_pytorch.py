"""stoker.plugin.pytorch as nvidia.dali.plugin.pytorch, and DALI's ResNet-50 example pipeline
(create_dali_pipeline, CPU branch) with only its imports changed: the iterator's arguments,
checkpoints(), _size, auto_reset strings and fill_last_batch. Torch parts skip without torch."""
import math

import numpy as np
import pytest

from dali_data import jpeg_folder
from stoker import fn, pipeline_def, types
from stoker.iterator import NumpyIterator
from stoker.plugin.base_iterator import LastBatchPolicy as BaseLastBatchPolicy
from stoker.plugin.pytorch import (DALIClassificationIterator, DALIGenericIterator, LastBatchPolicy,
                                   feed_ndarray)


@pipeline_def
def create_dali_pipeline(data_dir, crop, size, shard_id, num_shards, dali_cpu=False, is_training=True):
    # DALI's docs/examples/use_cases/pytorch/resnet50/main.py, its CPU branch (no .gpu() on CPU)
    images, labels = fn.readers.file(file_root=data_dir, shard_id=shard_id, num_shards=num_shards,
                                     random_shuffle=is_training, pad_last_batch=True, name="Reader")
    dali_device = "cpu" if dali_cpu else "gpu"
    decoder_device = "cpu" if dali_cpu else "mixed"
    device_memory_padding = 211025920 if decoder_device == "mixed" else 0
    host_memory_padding = 140544512 if decoder_device == "mixed" else 0
    preallocate_width_hint = 5980 if decoder_device == "mixed" else 0
    preallocate_height_hint = 6430 if decoder_device == "mixed" else 0
    if is_training:
        images = fn.decoders.image_random_crop(images, device=decoder_device, output_type=types.RGB,
                                               device_memory_padding=device_memory_padding,
                                               host_memory_padding=host_memory_padding,
                                               preallocate_width_hint=preallocate_width_hint,
                                               preallocate_height_hint=preallocate_height_hint,
                                               random_aspect_ratio=[0.8, 1.25], random_area=[0.1, 1.0],
                                               num_attempts=100)
        images = fn.resize(images, device=dali_device, resize_x=crop, resize_y=crop,
                           interp_type=types.INTERP_TRIANGULAR)
        mirror = fn.random.coin_flip(probability=0.5)
    else:
        images = fn.decoders.image(images, device=decoder_device, output_type=types.RGB)
        images = fn.resize(images, device=dali_device, size=size, mode="not_smaller",
                           interp_type=types.INTERP_TRIANGULAR)
        mirror = False
    images = fn.crop_mirror_normalize(images, dtype=types.FLOAT, output_layout="CHW", crop=(crop, crop),
                                      mean=[0.485 * 255, 0.456 * 255, 0.406 * 255],
                                      std=[0.229 * 255, 0.224 * 255, 0.225 * 255], mirror=mirror)
    return images, labels


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    return jpeg_folder(tmp_path_factory.mktemp("rn50"))


def make(root, training, **extra):
    return create_dali_pipeline(batch_size=5, num_threads=2, device_id=None, seed=12, data_dir=root, crop=24,
                                size=28, dali_cpu=True, shard_id=0, num_shards=1, is_training=training, **extra)


@pytest.mark.parametrize("training", [True, False])
def test_resnet50_pipeline_runs_on_cpu_with_the_imports_changed(root, training):
    pipe = make(root, training)
    loader = NumpyIterator(pipe, ["data", "label"], reader_name="Reader",
                           last_batch_policy=LastBatchPolicy.PARTIAL, auto_reset=True)
    assert int(math.ceil(loader._size / 5)) == 3  # the example's train_loader_len
    sizes = []
    for data in loader:
        assert data[0]["data"].shape[1:] == (3, 24, 24) and data[0]["data"].dtype == np.float32
        sizes.append(len(data[0]["label"]))
    assert sizes == [5, 5, 2]
    assert sum(len(d[0]["label"]) for d in loader) == 12  # auto_reset="yes" semantics: a second epoch


def test_plugin_names_and_policies():
    assert LastBatchPolicy is BaseLastBatchPolicy
    assert DALIClassificationIterator.__mro__[1] is DALIGenericIterator


def test_checkpoints_resume_the_next_batches(root):
    pipe = make(root, True, enable_checkpointing=True)
    loader = NumpyIterator(pipe, ["data", "label"], reader_name="Reader", auto_reset="yes")
    next(loader)
    saved = loader.checkpoints()
    assert len(saved) == 1 and isinstance(saved[0], str)
    expected = next(loader)[0]["data"].copy()
    resumed = NumpyIterator(make(root, True, enable_checkpointing=True, checkpoint=saved[0]), ["data", "label"],
                            reader_name="Reader")
    np.testing.assert_array_equal(next(resumed)[0]["data"], expected)


def test_fill_last_batch_and_auto_reset_spellings(root):
    with pytest.warns(DeprecationWarning):
        loader = NumpyIterator(make(root, False), ["data", "label"], reader_name="Reader", fill_last_batch=False,
                               auto_reset="no")
    assert [len(d[0]["label"]) for d in loader] == [5, 5, 2]  # False = PARTIAL
    with pytest.raises(ValueError, match="auto_reset"):
        NumpyIterator(make(root, False), ["data", "label"], reader_name="Reader", auto_reset="sometimes")


def test_torch_iterator_and_feed_ndarray(root):
    torch = pytest.importorskip("torch")
    loader = DALIClassificationIterator(make(root, False), reader_name="Reader",
                                        last_batch_policy=LastBatchPolicy.PARTIAL, dynamic_shape=True)
    data = next(loader)
    assert data[0]["data"].shape == (5, 3, 24, 24) and data[0]["data"].dtype == torch.float32

    pipe = make(root, False)
    pipe.build()
    images, labels = pipe.run()
    target = torch.empty((5, 3, 24, 24), dtype=torch.float32)
    feed_ndarray(images, target)
    np.testing.assert_array_equal(target.numpy(), images.as_array())
    with pytest.raises(TypeError):
        feed_ndarray(images, torch.empty((5, 3, 24, 24), dtype=torch.float16))
    pipe.close()
