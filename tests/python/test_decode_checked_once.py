"""A CPU JPEG decoder checks a file's bytes once per run (docs/operators-io.md, "A file is checked
once per run"): through a pipeline over several epochs, every epoch's pixels are PIL's (the later
epochs decode the known files on libjpeg-turbo's fast path), and a file corrupt in its last rows is
skipped in every epoch, with decoders.image and with a random crop at the top of the image."""
import os
import shutil

import numpy as np
import pytest

from stoker import fn, pipeline_def

Image = pytest.importorskip("PIL.Image")

SOURCE = os.path.join(os.path.dirname(__file__), "..", "fixtures", "jpeg", "bad_huffman_bottom.jpg")


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    root = tmp_path_factory.mktemp("checked_once")
    rng = np.random.default_rng(5)
    good = []
    for i in range(5):
        yy, xx = np.mgrid[0:96 + 8 * i, 0:128]
        pixels = np.stack([(xx * 3 + yy + 50 * c) % 256 for c in range(3)], axis=-1)
        pixels = (pixels + rng.integers(0, 30, pixels.shape)) % 256
        path = str(root / f"good_{i}.jpg")
        Image.fromarray(pixels.astype(np.uint8)).save(path, quality=90)
        good.append(path)
    bad = str(root / "bad_bottom.jpg")
    shutil.copyfile(SOURCE, bad)
    return good, bad


def _run_epochs(files, decode, epochs):
    @pipeline_def
    def pipe():
        encoded, _ = fn.readers.file(files=files, random_shuffle=False, skip_bad_files=True, name="Reader")
        return decode(encoded)

    with pipe(batch_size=len(files), num_threads=2, device_id=None, seed=3) as p:
        p.build()
        out = [[np.array(t) for t in p.run()[0]] for _ in range(epochs)]
        skipped = p.stats().get("skipped_files")
    return out, skipped


def test_every_epoch_gives_pils_pixels_and_skips_the_bad_file(folder):
    good, bad = folder
    files = good[:2] + [bad] + good[2:]
    epochs, skipped = _run_epochs(files, lambda e: fn.decoders.image(e), 3)
    want = [np.asarray(Image.open(path).convert("RGB")) for path in good]
    for e, samples in enumerate(epochs):
        # the bad file's slot is refilled: the five good files in order, then a fill copy
        for k in range(5):
            np.testing.assert_array_equal(samples[k], want[k], err_msg=f"epoch {e} file {k}")
        np.testing.assert_array_equal(samples[5], want[0], err_msg=f"epoch {e}: fill")
    assert skipped == 1  # recorded once per run


def test_a_crop_above_the_corrupt_rows_is_refused_every_epoch(folder):
    good, bad = folder
    files = [good[0], bad]
    # windows inside the top of the images: the bad file's corrupt rows are all below them
    epochs, skipped = _run_epochs(files, lambda e: fn.decoders.image_crop(e, crop=(16, 16), crop_pos_x=0.0,
                                                                           crop_pos_y=0.0), 3)
    want = np.asarray(Image.open(good[0]).convert("RGB"))[:16, :16]
    for e, samples in enumerate(epochs):
        np.testing.assert_array_equal(samples[0], want, err_msg=f"epoch {e}")
        np.testing.assert_array_equal(samples[1], want, err_msg=f"epoch {e}: the bad file's slot is a fill copy")
    assert skipped == 1
