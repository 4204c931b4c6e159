"""stoker.auto_aug.augmentations: the standard suite of the automatic augmentations (AutoAugment's
ImageNet policy, RandAugment, TrivialAugment Wide), with DALI's names, magnitude ranges, random
negation and parameter mappings.

Each is an :class:`~stoker.auto_aug.core.Augmentation` whose work is one kind of the fused
``_auto_aug.apply`` operator (src/ops/augment/auto_aug/auto_aug.h lists the kinds and their
arithmetic), so a whole scheme runs as one node. The parameter each one takes is a number:
shear_x/shear_y the shear factor, translate_x/translate_y the offset in pixels (or, with the images'
``shape``, the fraction of the width/height), rotate degrees counter-clockwise, brightness /
contrast / color / sharpness the blend factor (1 = unchanged), posterize the bit mask, solarize the
threshold, solarize_add the shift. ``.op`` applies one with a fixed parameter to a batch:
``augmentations.rotate.op(images, 15.0)``. Change a range as in DALI:
``my_shear_x = shear_x.augmentation(mag_range=(0, 0.5))``. Definition time only.
"""
import numpy as np

from .. import fn
from ..errors import ArgumentError
from .core import Augmentation


def _kind_op(kind):
    """A function (sample, parameter, fill_value=128, interp_type=None, shape=None) applying one kind."""

    def op(sample, parameter, fill_value=128, interp_type=None, shape=None):
        args = dict(kinds=[kind], params=[0.0 if parameter is None else float(np.asarray(parameter).reshape(()))])
        if fill_value is not None:
            args["fill_value"] = float(fill_value)
        if interp_type is not None:
            args["interp_type"] = interp_type
        if shape is not None:
            args["shape"] = shape
        return fn._auto_aug.apply(sample, **args)

    op.__name__ = kind
    return op


class _Builtin(Augmentation):
    """A built-in augmentation keeps its kind (and whether its translation is relative) in copies."""

    def augmentation(self, *args, **kwargs):
        copy = super().augmentation(*args, **kwargs)
        copy.relative = getattr(self, "relative", False)
        return copy


def _make(kind, name=None, relative=False, **config):
    aug = _Builtin(_kind_op(kind + ("_rel" if relative else "")), kind=kind, name=name or kind, **config)
    aug.relative = relative
    return aug


# ---- parameter mappings (DALI's names; here each returns the number the kind takes) ----
def warp_x_param(magnitude):
    """The shear/translation along x (DALI returns [magnitude, 0]; the fused kind takes the number)."""
    return magnitude


def warp_y_param(magnitude):
    """The shear/translation along y (DALI returns [0, magnitude])."""
    return magnitude


def shift_enhance_range(magnitude):
    """Enhance magnitudes in [-1, 1] around the neutral 1: the blend factor 1 + magnitude."""
    return 1 + magnitude


def sharpness_kernel(magnitude):
    """DALI's sharpen kernel for a magnitude in [-1, 1] is -m * blur + (1 + m) * identity; the fused
    kind takes its blend factor 1 + m."""
    return 1 + magnitude


def sharpness_kernel_shifted(magnitude):
    """The same for a magnitude in [0, 2] (the factor itself)."""
    return magnitude


def poster_mask_uint8(magnitude):
    """The bit mask keeping round(magnitude) high bits (0 is taken as 1, more than 8 as 8), as DALI."""
    bits = int(np.round(magnitude))
    bits = 1 if bits <= 0 else min(bits, 8)
    return np.uint8(255 ^ (2 ** (8 - bits) - 1))


def solarize_add_shift(shift):
    if shift >= 128:
        raise ArgumentError("The solarize_add augmentation accepts shifts from 0 to 128")
    return np.uint8(shift)


shear_x = _make("shear_x", mag_range=(0, 0.3), randomly_negate=True, as_param=warp_x_param)
shear_y = _make("shear_y", mag_range=(0, 0.3), randomly_negate=True, as_param=warp_y_param)
translate_x = _make("translate_x", relative=True, mag_range=(0.0, 1.0), randomly_negate=True, as_param=warp_x_param)
translate_x_no_shape = _make("translate_x", name="translate_x", mag_range=(0, 250), randomly_negate=True,
                             as_param=warp_x_param)
translate_y = _make("translate_y", relative=True, mag_range=(0.0, 1.0), randomly_negate=True, as_param=warp_y_param)
translate_y_no_shape = _make("translate_y", name="translate_y", mag_range=(0, 250), randomly_negate=True,
                             as_param=warp_y_param)
rotate = _make("rotate", mag_range=(0, 30), randomly_negate=True)
brightness = _make("brightness", mag_range=(0, 0.9), randomly_negate=True, as_param=shift_enhance_range)
contrast = _make("contrast", mag_range=(0, 0.9), randomly_negate=True, as_param=shift_enhance_range)
color = _make("color", mag_range=(0, 0.9), randomly_negate=True, as_param=shift_enhance_range)
sharpness = _make("sharpness", mag_range=(0, 0.9), randomly_negate=True, as_param=sharpness_kernel)
posterize = _make("posterize", mag_range=(0, 4), as_param=poster_mask_uint8)
solarize = _make("solarize", mag_range=(256, 0))
solarize_add = _make("solarize_add", mag_range=(0, 110), as_param=solarize_add_shift)
invert = _make("invert")
equalize = _make("equalize")
auto_contrast = _make("auto_contrast")
identity = _make("identity")



def get_translations(use_shape, default_translate_abs, default_translate_rel, max_translate_abs=None,
                     max_translate_rel=None):
    """[translate_x, translate_y] with DALI's ranges: relative to the shape (use_shape) up to
    max_translate_rel, else absolute up to max_translate_abs pixels; a pair is (height, width)."""
    if not isinstance(use_shape, bool):
        raise ArgumentError("`use_shape` must be True or False, got %r" % (use_shape,))
    if use_shape:
        if max_translate_abs is not None:
            raise ArgumentError("The argument `max_translate_abs` cannot be used with image shapes. "
                                "You may use `max_translate_rel` instead.")
        limit = default_translate_rel if max_translate_rel is None else max_translate_rel
        height, width = limit if isinstance(limit, (tuple, list)) else (limit, limit)
        return [translate_x.augmentation(mag_range=(0, width), randomly_negate=True),
                translate_y.augmentation(mag_range=(0, height), randomly_negate=True)]
    if max_translate_rel is not None:
        raise ArgumentError("The argument `max_translate_rel` cannot be used without image shapes. "
                            "You may use `max_translate_abs` instead.")
    limit = default_translate_abs if max_translate_abs is None else max_translate_abs
    height, width = limit if isinstance(limit, (tuple, list)) else (limit, limit)
    return [translate_x_no_shape.augmentation(mag_range=(0, width), randomly_negate=True),
            translate_y_no_shape.augmentation(mag_range=(0, height), randomly_negate=True)]
