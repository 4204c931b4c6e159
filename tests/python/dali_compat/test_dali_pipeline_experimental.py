"""`from stoker.pipeline.experimental import pipeline_def` (DALI's nvidia.dali.pipeline.experimental,
as DALI's EfficientNet example imports it) gives stoker's pipeline_def: conditionals and Pipeline
options included."""
import numpy as np

from dali_data import jpeg_folder


def test_experimental_pipeline_def_is_importable_and_builds(tmp_path):
    from stoker import fn, types
    from stoker.pipeline.experimental import pipeline_def
    import stoker.pipeline

    assert stoker.pipeline.experimental.pipeline_def is stoker.pipeline.pipeline_def
    root = jpeg_folder(tmp_path / "jpegs")

    @pipeline_def(enable_conditionals=True)
    def pipe_fn(data_dir, mode):
        jpegs, labels = fn.readers.file(file_root=data_dir, name="Reader", pad_last_batch=True)
        images = fn.decoders.image_random_crop(jpegs, device="cpu", output_type=types.RGB)
        images = fn.resize(images, size=[32, 32], interp_type=types.INTERP_LINEAR, antialias=False)
        if mode == "flip":  # a Python value: decided once, while the graph is built
            images = fn.flip(images, horizontal=1)
        return images, labels

    pipe = pipe_fn(data_dir=root, mode="flip", batch_size=4, num_threads=1, device_id=None, seed=12,
                   prefetch_queue_depth=2)
    pipe.build()
    images, labels = pipe.run()
    assert np.asarray(images.as_array()).shape == (4, 32, 32, 3)
    assert pipe.epoch_size("Reader") == 12
