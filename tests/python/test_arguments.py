"""Operator arguments are checked at definition time; errors name the operator and argument."""
import pytest

import stoker
from stoker import ArgumentError, StokerError, fn, pipeline_def


def define(body, **options):
    @pipeline_def(batch_size=2, num_threads=1, **options)
    def pipe():
        return body()

    return pipe()


def test_unknown_argument_names_operator_and_argument(small_dataset):
    with pytest.raises(ArgumentError) as info:
        define(lambda: fn.readers.file(file_root=small_dataset, fle_list="x")[1])
    message = str(info.value)
    assert "readers.file" in message and "fle_list" in message
    assert isinstance(info.value, ValueError) and isinstance(info.value, StokerError)


def test_wrong_type_names_operator_and_argument(small_dataset):
    with pytest.raises(ArgumentError) as info:
        define(lambda: fn.readers.file(file_root=small_dataset, random_shuffle="yes")[1])
    assert "readers.file" in str(info.value) and "random_shuffle" in str(info.value)
    with pytest.raises(ArgumentError) as info:
        define(lambda: fn.random_resized_crop(fn.decoders.image(fn.readers.file(file_root=small_dataset)[0]),
                                              size="big"))
    assert "random_resized_crop" in str(info.value) and "size" in str(info.value)


def test_unsupported_device_is_an_argument_error(small_dataset):
    with pytest.raises(ArgumentError) as info:
        define(lambda: fn.readers.file(file_root=small_dataset, device="gpu")[1])
    assert "readers.file" in str(info.value) and "device" in str(info.value)
    with pytest.raises(ArgumentError) as info:  # mixed decode on a CPU-only pipeline
        define(lambda: fn.decoders.image(fn.readers.file(file_root=small_dataset)[0], device="mixed"))
    assert "decoders.image" in str(info.value) and "device" in str(info.value)


def test_wrong_inputs(small_dataset):
    with pytest.raises(ArgumentError) as info:
        define(lambda: fn.decoders.image())
    assert "decoders.image" in str(info.value) and "input" in str(info.value)
    with pytest.raises(ArgumentError):
        define(lambda: fn.decoders.image("not a node"))


def test_operator_outside_a_pipeline_is_checked_at_once():
    """A call outside any pipeline is recorded for later (DALI allows it), but its arguments are
    checked when it is made."""
    assert fn.random.coin_flip(probability=0.25).pipeline is None
    with pytest.raises(ArgumentError) as info:
        fn.random.coin_flip(probabilty=0.5)
    assert "random.coin_flip" in str(info.value) and "probabilty" in str(info.value)


def test_duplicate_node_name(small_dataset):
    def body():
        fn.readers.file(file_root=small_dataset, name="Reader")
        return fn.readers.file(file_root=small_dataset, name="Reader")[1]

    with pytest.raises(ArgumentError) as info:
        define(body)
    assert "Reader" in str(info.value)


def test_missing_data_dir_error_comes_from_c_with_the_path(tmp_path):
    missing = str(tmp_path / "no-such-dir")
    with pytest.raises(StokerError) as info:
        pipe = define(lambda: fn.readers.file(file_root=missing, name="Reader")[1])
        with pipe:
            pipe.build()
            pipe.run()
    assert "no-such-dir" in str(info.value)
    assert info.value.status.startswith("STK_")


def test_corrupt_file_error_names_the_file(tmp_path, small_dataset):
    root = tmp_path / "bad"
    (root / "a").mkdir(parents=True)
    (root / "a" / "broken.jpg").write_bytes(b"\xff\xd8\xff\xe0 this is not a jpeg")

    def body():
        jpegs, labels = fn.readers.file(file_root=str(root))
        return fn.decoders.image(jpegs), labels

    with pytest.raises(StokerError) as info:
        with define(body) as pipe:
            pipe.build()
            pipe.run()
    assert "broken.jpg" in str(info.value)



def _cmn_pipe(small_dataset, mirror):
    def body():
        jpegs, labels = fn.readers.file(file_root=small_dataset)
        images = fn.decoders.image(jpegs)
        return fn.crop_mirror_normalize(images, crop=[8, 8], mirror=mirror)

    return define(body)


def test_bool_is_accepted_for_an_int_argument(small_dataset):
    """mirror=False is 0, as DALI takes it (bool is an int in Python)."""
    pipe = _cmn_pipe(small_dataset, False)
    pipe.build()
    (images,) = pipe.run()
    assert len(images) == 2
    pipe.close()


def test_string_is_rejected_for_an_int_argument(small_dataset):
    with pytest.raises(ArgumentError, match="mirror"):
        _cmn_pipe(small_dataset, "yes")


def test_stream_priority_is_checked(small_dataset):
    # Both values build (a CPU-only pipeline has no streams, the option is still validated).
    for priority in ("high", "normal"):
        pipe = define(lambda: fn.readers.file(file_root=small_dataset)[1], stream_priority=priority)
        pipe.build()
        pipe.close()
    with pytest.raises(ValueError) as info:
        define(lambda: fn.readers.file(file_root=small_dataset)[1], stream_priority="urgent")
    assert "stream_priority" in str(info.value) and "urgent" in str(info.value)


@pytest.mark.parametrize(
    "option, value, bound",
    [
        ("batch_size", 0, "at least 1"),
        ("batch_size", -3, "at least 1"),
        ("batch_size", 2**40, "at most"),
        ("num_threads", 0, "at least 1"),
        ("num_threads", 257, "at most 256"),
        ("prefetch_queue_depth", 0, "at least 1"),
        ("device_id", -2, "at least -1"),
    ],
)
def test_bad_pipeline_option_names_the_argument(option, value, bound):
    """A bad Pipeline option is an ArgumentError naming that option (and no other), its value and
    its bound, both through @pipeline_def and through Pipeline()."""
    others = {"batch_size", "num_threads", "prefetch_queue_depth", "device_id"} - {option}
    @pipeline_def(batch_size=2, num_threads=1)
    def flips():
        return fn.random.coin_flip()

    for make in (lambda: flips(**{option: value}), lambda: stoker.Pipeline(**{option: value})):
        with pytest.raises(ArgumentError) as info:
            make()
        message = str(info.value)
        assert option in message and str(value) in message and bound in message, message
        assert not any(other in message for other in others), message
        assert isinstance(info.value, ValueError) and info.value.status == "STK_EINVAL"
