"""Several external sources in one pipeline (DALI allows it: e.g. images and labels from two
sources): stoker feeds them as one node (stoker.source_group), one batch from each per iteration."""
import numpy as np
import pytest

from stoker import ArgumentError, StokerError, fn, pipeline_def


def images(k, n):
    return np.arange(n * 2 * 3, dtype=np.uint8).reshape(n, 2, 3) + k


def test_images_and_labels_from_two_sources_come_back_paired():
    sizes = [3, 7, 1, 5]
    image_batches = [images(k, n) for k, n in enumerate(sizes)]
    label_batches = [np.arange(n, dtype=np.int32) * 10 + k for k, n in enumerate(sizes)]

    @pipeline_def(batch_size=8, num_threads=2, exec_dynamic=True)
    def two():
        img = fn.external_source(source=image_batches, name="images", dtype="uint8", ndim=2)
        lab = fn.external_source(source=iter(label_batches), name="labels", dtype="int32", ndim=0)
        return lab, img  # any order, any slot

    with two() as pipe:
        for k, n in enumerate(sizes):
            lab, img = pipe.run()
            np.testing.assert_array_equal(img.as_array(), image_batches[k])
            np.testing.assert_array_equal(lab.as_array(), label_batches[k])
        with pytest.raises(StopIteration):
            pipe.run()


def test_per_sample_and_batch_sources_mix_and_feed_input_feeds_each_by_name():
    @pipeline_def(batch_size=4, num_threads=1)
    def mixed():
        a = fn.external_source(source=lambda info: np.full((2,), info.idx_in_epoch, np.int64), batch=False, name="a")
        b, c = fn.external_source(source=lambda: (np.ones((4, 3), np.float32), np.zeros((4, 1), np.uint8)),
                                  num_outputs=2, name="bc")
        return a, b, c

    with mixed() as pipe:
        for k in range(2):
            a, b, c = pipe.run()
            np.testing.assert_array_equal(a.as_array()[:, 0], np.arange(4 * k, 4 * k + 4))
            assert b.as_array().shape == (4, 3) and c.as_array().shape == (4, 1)

    @pipeline_def(batch_size=2, num_threads=1)
    def fed():
        x = fn.external_source(name="x")
        y = fn.external_source(name="y")
        return x, y

    with fed() as pipe:
        pipe.feed_input("y", np.array([7, 8], np.int32))  # waits for x's batch of the same iteration
        pipe.feed_input("x", np.array([[1.0], [2.0]], np.float32))
        x, y = pipe.run()
        np.testing.assert_array_equal(y.as_array(), [7, 8])
        np.testing.assert_array_equal(x.as_array(), [[1.0], [2.0]])


def test_errors_name_the_source_that_is_wrong():
    @pipeline_def(batch_size=4, num_threads=1, exec_dynamic=True)
    def two():
        return (fn.external_source(source=lambda: np.zeros((4, 2), np.uint8), name="first"),
                fn.external_source(source=lambda: np.zeros((3, 2), np.uint8), name="second"))

    with two() as pipe:
        with pytest.raises(StokerError, match="second gave 3 samples, but external_source first gave 4"):
            pipe.run()

    @pipeline_def(batch_size=2, num_threads=1)
    def typed():
        return (fn.external_source(name="first", dtype="uint8"), fn.external_source(name="second", dtype="float32"))

    with typed() as pipe:
        pipe.feed_input("first", np.zeros((2, 3), np.uint8))
        with pytest.raises(StokerError, match=r"external_source second: sample 0 of output 0 has the wrong dtype "
                                              r"\(float64, expected float\)"):
            pipe.feed_input("second", np.zeros((2, 3), np.float64))

    with pytest.raises(ArgumentError, match="at most 8 outputs"):
        @pipeline_def(batch_size=2, num_threads=1)
        def too_many():
            a = fn.external_source(name="a", num_outputs=5)
            b = fn.external_source(name="b", num_outputs=4)
            return a + b

        too_many()
