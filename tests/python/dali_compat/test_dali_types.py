"""DALI's `types` module spelled stoker.types, and its enums accepted wherever DALI takes them
(dtype=, output_type=, interp_type=)."""
import numpy as np
import pytest

from dali_data import jpeg_folder
import stoker
from stoker import ArgumentError, fn, pipeline_def, types


def test_enums_have_dalis_names_values_and_module_aliases():
    assert types.UINT8 is types.DALIDataType.UINT8 and int(types.UINT8) == 0
    assert int(types.FLOAT) == 9 and int(types.FLOAT16) == 8 and int(types.FLOAT64) == 10
    assert int(types.INT32) == 6 and int(types.INT64) == 7 and int(types.BOOL) == 11 and int(types.NO_TYPE) == -1
    assert [int(getattr(types, n)) for n in ("RGB", "BGR", "GRAY", "YCbCr", "ANY_DATA")] == [0, 1, 2, 3, 4]
    assert [int(getattr(types, n)) for n in ("INTERP_NN", "INTERP_LINEAR", "INTERP_CUBIC", "INTERP_LANCZOS3",
                                             "INTERP_TRIANGULAR", "INTERP_GAUSSIAN")] == [0, 1, 2, 3, 4, 5]
    assert str(types.FLOAT) == "DALIDataType.FLOAT"
    assert (types.NCHW, types.NHWC, types.NFHWC, types.NFCHW, types.SAME) == ("CHW", "HWC", "FHWC", "FCHW", "")


@pytest.mark.parametrize("name", ["uint8", "uint16", "uint32", "uint64", "int8", "int16", "int32", "int64",
                                  "float16", "float32", "float64", "bool"])
def test_every_numeric_type_converts_both_ways(name):
    dali = types.to_dali_type(np.dtype(name))
    assert types.to_numpy_type(dali) == np.dtype(name).type
    assert types.to_dali_type(name) == dali


def test_to_dali_type_refuses_what_it_cannot_name():
    with pytest.raises(TypeError):
        types.to_dali_type("complex64")


def test_constant_and_infos():
    c = types.Constant(3)
    assert c.dtype == types.INT32 and int(c) == 3 and types.Constant(2.5).dtype == types.FLOAT
    assert types.Constant(7, dtype=types.UINT8).dtype == types.UINT8
    info = types.SampleInfo(5, 1, 2, 0)
    assert (info.idx_in_epoch, info.idx_in_batch, info.iteration, info.epoch_idx) == (5, 1, 2, 0)
    assert (types.BatchInfo(3, 1).iteration, types.BatchInfo(3, 1).epoch_idx) == (3, 1)


def test_constant_tensors_are_fn_constant_nodes():
    """types.Constant of a list / array (or with shape/layout) is a node giving the same tensor every
    sample, with DALI's dtype inference; fn.constant directly too, one value broadcast."""
    @pipeline_def(batch_size=2, num_threads=1, device_id=None, seed=3)
    def constants():
        x = fn.external_source(source=lambda: [np.zeros((2, 3), np.float32)] * 2, layout="HW")
        return (x + types.Constant(np.arange(6, dtype=np.float32).reshape(2, 3)), types.Constant([1, 2, 3]),
                types.Constant(True, shape=[2]), types.Constant(1.5, shape=(2, 2), layout="HW"),
                fn.constant(idata=[300], shape=[3], dtype=types.UINT8))

    with constants() as pipe:
        pipe.build()
        summed, ints, flags, filled, saturated = pipe.run()
        for i in range(2):
            np.testing.assert_array_equal(summed.as_array()[i], np.arange(6, dtype=np.float32).reshape(2, 3))
        assert ints.dtype == types.INT32 and ints.as_array().tolist() == [[1, 2, 3]] * 2
        assert flags.dtype == types.BOOL and flags.as_array().tolist() == [[True, True]] * 2
        assert filled.dtype == types.FLOAT and filled.layout() == "HW" and filled.as_array()[1].tolist() == [[1.5] * 2] * 2
        assert saturated.dtype == types.UINT8 and saturated.as_array()[0].tolist() == [255, 255, 255]
    with pytest.raises(TypeError):
        types.Constant(["a", "b"])

    @pipeline_def(batch_size=2, num_threads=1, device_id=None, seed=3)
    def mismatched():
        x = fn.external_source(source=lambda: [np.zeros(3, np.float32)] * 2)
        return x + fn.constant(fdata=[1.0, 2.0], shape=[3])

    with mismatched() as pipe, pytest.raises(RuntimeError, match="constant.*2 data values for shape of 3"):
        pipe.build()


@pipeline_def(batch_size=2, num_threads=1, device_id=None, seed=3)
def typed_pipe(root, interp, output_type=types.RGB, dtype=types.FLOAT, antialias=None):
    jpegs, labels = fn.readers.file(file_root=root)
    images = fn.decoders.image(jpegs, output_type=output_type)
    images = fn.resize(images, resize_x=20, resize_y=12, interp_type=interp, antialias=antialias)
    return fn.crop_mirror_normalize(images, dtype=dtype, output_layout=types.NCHW), fn.cast(labels, dtype=types.INT64)


def first_batch(pipe):
    with pipe:
        pipe.build()
        images, labels = pipe.run()
        return images.as_array().copy(), labels.as_array().copy(), images.dtype, labels.dtype, images.layout()


def test_enum_arguments_reach_the_operators(tmp_path):
    root = jpeg_folder(tmp_path)
    images, labels, image_type, label_type, layout = first_batch(typed_pipe(root, types.INTERP_LINEAR))
    assert image_type == types.FLOAT and images.dtype == np.float32 and layout == "CHW"
    assert label_type == types.INT64 and labels.dtype == np.int64
    half = first_batch(typed_pipe(root, types.INTERP_LINEAR, dtype=types.FLOAT16))[0]
    assert half.dtype == np.float16
    gray = first_batch(typed_pipe(root, types.INTERP_NN, output_type=types.GRAY))[0]
    assert gray.shape[1] == 1


def test_triangular_is_linear_with_antialias(tmp_path):
    root = jpeg_folder(tmp_path)
    triangular = first_batch(typed_pipe(root, types.INTERP_TRIANGULAR))[0]
    linear = first_batch(typed_pipe(root, types.INTERP_LINEAR, antialias=True))[0]
    plain = first_batch(typed_pipe(root, types.INTERP_LINEAR, antialias=False))[0]
    np.testing.assert_array_equal(triangular, linear)
    assert not np.array_equal(triangular, plain)  # the images are downscaled: antialiasing shows


def test_a_filter_stoker_lacks_is_a_clear_error(tmp_path):
    root = jpeg_folder(tmp_path)
    offered = {a["name"]: a for a in fn.resize.schema["args"]}["interp_type"]["doc"]
    missing = [i for i in (types.INTERP_GAUSSIAN, types.INTERP_LANCZOS3) if i.name not in offered]
    if not missing:
        pytest.skip("resize offers every DALI filter")
    for interp in missing:
        with pytest.raises(ArgumentError, match="resize.*interp_type.*%s.*INTERP_LINEAR" % interp.name):
            typed_pipe(root, interp)


def test_cpu_only_generators_asked_for_the_gpu_are_uploaded():
    """fn.constant / fn.random.* with device="gpu" (DALI has them there): made on the CPU and marked
    for the GPU, in a GPU pipeline (defined only: this test needs no GPU); a CPU pipeline refuses."""
    pipe = stoker.Pipeline(batch_size=2, num_threads=1, device_id=0)
    with pipe:
        constant = fn.constant(fdata=[1.0, 2.0], device="gpu")
        draw = fn.random.coin_flip(device="gpu")
        table = types.Constant([1, 2, 3], device="gpu")
    assert (constant.device, draw.device, table.device) == ("gpu", "gpu", "gpu")
    cpu_pipe = stoker.Pipeline(batch_size=2, num_threads=1, device_id=None)
    with cpu_pipe, pytest.raises(ArgumentError, match="device"):
        fn.constant(fdata=[1.0], device="gpu")
