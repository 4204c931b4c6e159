"""tests/python/test_auto_aug_ops.py: the kinds of the fused ``_auto_aug.apply`` operator and
``fn.experimental.equalize`` on the CPU against independent results: PIL's ImageOps and
ImageEnhance where DALI's augmentations follow PIL (exact for invert, posterize and solarize; within
one level for brightness and autocontrast, where PIL truncates and stoker rounds; within two for
contrast, color and sharpness, where PIL also rounds its grey image, mean or blur first), NumPy for
equalize (DALI's table, not PIL's), solarize_add and the translations, and PIL's affine transform
for shear and rotate (nearest neighbour: at most 0.5% of the pixels may differ, at sampling ties).
Each augmentation's parameter is what stoker.auto_aug.augmentations computes from DALI's magnitude."""
import numpy as np
import pytest
from PIL import Image, ImageEnhance, ImageOps

from stoker import StokerError, fn, pipeline_def
from stoker.auto_aug import augmentations as a


def images(seed=3, count=3, channels=3):
    rng = np.random.default_rng(seed)
    return [rng.integers(0, 256, size=(17 + 5 * i, 23 + 3 * i, channels), dtype=np.uint8) for i in range(count)]


def run(build, batch):
    @pipeline_def(batch_size=len(batch), num_threads=1, device_id=-1, seed=5)
    def pipe():
        return build(fn.external_source(source=[batch], layout="HWC", cycle="raise", name="src"))

    with pipe() as p:
        out, = p.run()
        return [np.asarray(out[i]) for i in range(len(batch))]


def apply_kind(kind, param, batch, **extra):
    return run(lambda x: fn._auto_aug.apply(x, kinds=[kind], params=[float(param)], **extra), batch)


def assert_close(got, want, levels, what):
    diff = np.abs(got.astype(int) - want.astype(int))
    assert diff.max() <= levels, "%s: %d levels off (allowed %d)" % (what, diff.max(), levels)


@pytest.mark.parametrize("kind,param,pil", [
    ("invert", 0, ImageOps.invert),
    ("posterize", a.poster_mask_uint8(2.4), lambda im: ImageOps.posterize(im, 2)),
    ("posterize", a.poster_mask_uint8(7), lambda im: ImageOps.posterize(im, 7)),
    ("solarize", 76.8, lambda im: ImageOps.solarize(im, 77)),
    ("solarize", 128, lambda im: ImageOps.solarize(im, 128)),
])
def test_exact_kinds_match_pil(kind, param, pil):
    batch = images()
    for got, x in zip(apply_kind(kind, param, batch), batch):
        np.testing.assert_array_equal(got, np.asarray(pil(Image.fromarray(x))), err_msg=kind)


@pytest.mark.parametrize("kind,factor,pil,levels", [
    ("brightness", 1.6, ImageEnhance.Brightness, 1),
    ("brightness", 0.3, ImageEnhance.Brightness, 1),
    ("contrast", 1.7, ImageEnhance.Contrast, 2),
    ("contrast", 0.2, ImageEnhance.Contrast, 2),
    ("color", 1.9, ImageEnhance.Color, 2),
    ("color", 0.1, ImageEnhance.Color, 2),
    ("sharpness", 1.9, ImageEnhance.Sharpness, 2),
    ("sharpness", 0.1, ImageEnhance.Sharpness, 2),
])
def test_enhance_kinds_match_pil_enhance(kind, factor, pil, levels):
    batch = images(seed=4)
    for got, x in zip(apply_kind(kind, factor, batch), batch):
        assert_close(got, np.asarray(pil(Image.fromarray(x)).enhance(factor)), levels, "%s(%g)" % (kind, factor))


def test_auto_contrast_matches_pil_autocontrast():
    batch = [(x // 3 + 40).astype(np.uint8) for x in images(seed=5)]
    batch.append(np.full((6, 7, 3), 90, np.uint8))  # one value: unchanged
    for got, x in zip(apply_kind("auto_contrast", 0, batch), batch):
        assert_close(got, np.asarray(ImageOps.autocontrast(Image.fromarray(x))), 1, "auto_contrast")


def equalize_reference(x):
    """DALI's equalize: per channel, (cdf - cdf[first]) * 255 / (total - cdf[first]), half to even."""
    out = np.empty_like(x)
    for c in range(x.shape[2]):
        channel = x[..., c]
        hist = np.bincount(channel.ravel(), minlength=256)
        cdf = np.cumsum(hist)
        first = hist[np.nonzero(hist)[0][0]]
        if first == channel.size:
            out[..., c] = channel
            continue
        lut = np.clip(np.rint((cdf - first) * (255.0 / (channel.size - first))), 0, 255).astype(np.uint8)
        out[..., c] = lut[channel]
    return out


def test_equalize_operator_and_kind_follow_dalis_table():
    batch = images(seed=6) + [np.full((5, 4, 3), 17, np.uint8), (images(seed=7)[0] // 8 + 100).astype(np.uint8)]
    by_op = run(lambda x: fn.experimental.equalize(x), batch)
    by_kind = apply_kind("equalize", 0, batch)
    for got, kind, x in zip(by_op, by_kind, batch):
        np.testing.assert_array_equal(got, equalize_reference(x))
        np.testing.assert_array_equal(kind, got)


def test_solarize_add_shifts_the_dark_half():
    batch = images(seed=8)
    for got, x in zip(apply_kind("solarize_add", 33, batch), batch):
        want = np.where(x < 128, x.astype(int) + 33, x)
        np.testing.assert_array_equal(got, want.astype(np.uint8))


def test_translations_shift_whole_pixels_with_fill():
    batch = images(seed=9)
    for got, x in zip(apply_kind("translate_x", 4, batch, fill_value=128), batch):
        want = np.full_like(x, 128)
        want[:, 4:] = x[:, :-4]
        np.testing.assert_array_equal(got, want)
    # relative to a given shape: -0.25 of a height of 8 moves up by 2 rows, borders repeat without fill
    for got, x in zip(apply_kind("translate_y_rel", -0.25, batch, shape=[8.0, 8.0]), batch):
        want = np.concatenate([x[2:], np.repeat(x[-1:], 2, axis=0)])
        np.testing.assert_array_equal(got, want)


def pil_affine(x, matrix, fill):
    return np.asarray(Image.fromarray(x).transform((x.shape[1], x.shape[0]), Image.AFFINE, matrix,
                                                   resample=Image.NEAREST, fillcolor=(fill,) * 3))


def test_shear_and_rotate_match_pils_affine_transform():
    batch = images(seed=10)
    for got, x in zip(apply_kind("shear_x", 0.3, batch, fill_value=128, interp_type="INTERP_NN"), batch):
        want = pil_affine(x, (1, -0.3, 0, 0, 1, 0), 128)  # PIL's matrix maps output to input
        assert (got != want).any(axis=2).mean() <= 0.005
    for got, x in zip(apply_kind("rotate", 20, batch, fill_value=0, interp_type="INTERP_NN"), batch):
        want = np.asarray(Image.fromarray(x).rotate(20, resample=Image.NEAREST, fillcolor=(0, 0, 0)))
        assert (got != want).any(axis=2).mean() <= 0.005


def test_bad_images_and_tables_are_refused_with_names():
    floats = [np.zeros((4, 4, 3), np.float32)]
    with pytest.raises(StokerError, match="uint8"):
        run(lambda x: fn.experimental.equalize(x), floats)
    with pytest.raises(StokerError, match="unknown kind"):
        apply_kind("swirl", 1, images())
