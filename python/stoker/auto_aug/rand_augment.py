"""stoker.auto_aug.rand_augment: RandAugment (https://arxiv.org/abs/1909.13719) as DALI spells it:
``rand_augment(images, n, m, num_magnitude_bins=31, shape=None, fill_value=128, interp_type=None,
max_translate_abs=None, max_translate_rel=None, seed=None, monotonic_mag=True, excluded=None)``,
``apply_rand_augment(augmentations, images, n, m, ...)`` and the two suites. Each sample gets `n`
augmentations drawn uniformly (with repetition), each at magnitude bin `m` with a random sign where
the augmentation is negated: one ``random.choice`` of n entries per sample and one
``_auto_aug.apply`` node of n stages (core.py). Definition time only."""
import warnings
from typing import List, Optional

from ..errors import ArgumentError
from . import augmentations as a
from .core import Augmentation, apply_stages


def rand_augment(sample, n: int, m: int, num_magnitude_bins: int = 31, shape=None, fill_value: Optional[int] = 128,
                 interp_type=None, max_translate_abs: Optional[int] = None, max_translate_rel: Optional[float] = None,
                 seed: Optional[int] = None, monotonic_mag: bool = True, excluded: Optional[List[str]] = None):
    """Applies RandAugment to a batch of uint8 HWC images; arguments as DALI's."""
    suite = get_rand_augment_suite if monotonic_mag else get_rand_augment_non_monotonic_suite
    augmentations = suite(shape is not None, max_translate_abs, max_translate_rel)
    names = [aug.name for aug in augmentations]
    for name in excluded or []:
        if name not in names:
            raise ArgumentError("The `%s` was specified in `excluded`, but the RandAugment suite does not contain "
                                "augmentation with this name. The augmentations in the suite are: %s."
                                % (name, ", ".join(names)))
    selected = [aug for aug in augmentations if aug.name not in (excluded or [])]
    kwargs = {"fill_value": fill_value, "interp_type": interp_type}
    if shape is not None:
        kwargs["shape"] = shape
    return apply_rand_augment(selected, sample, n, m, num_magnitude_bins=num_magnitude_bins, seed=seed, **kwargs)


def apply_rand_augment(augmentations: List[Augmentation], sample, n: int, m: int, num_magnitude_bins: int = 31,
                       seed: Optional[int] = None, **kwargs):
    """Applies `n` augmentations drawn uniformly from `augmentations` per sample, each at bin `m`."""
    if not isinstance(n, int) or isinstance(n, bool) or n < 0:
        raise ArgumentError("The number of operations to apply `n` must be a non-negative integer, got %r." % (n,))
    if not isinstance(num_magnitude_bins, int) or num_magnitude_bins < 1:
        raise ArgumentError("The `num_magnitude_bins` must be a positive integer, got %r." % (num_magnitude_bins,))
    if not isinstance(m, int) or not 0 <= m < num_magnitude_bins:
        raise ArgumentError("The magnitude bin `m` must be an integer from `[0, %d]` range. Got %r."
                            % (num_magnitude_bins - 1, m))
    if n == 0:
        warnings.warn("The `apply_rand_augment` was called with `n=0`, no augmentation will be applied.", Warning)
        return sample
    if not augmentations:
        raise ArgumentError("The `augmentations` list cannot be empty, unless n=0. "
                            "Got empty list in `apply_rand_augment` call.")
    if n > 8:
        raise ArgumentError("apply_rand_augment: stoker applies at most 8 operations per sample, got n=%d" % n)
    share = 1.0 / len(augmentations)
    row = [(aug, param, share * part) for aug in augmentations
           for param, part in aug.signed_params(m, num_magnitude_bins)]
    return apply_stages(sample, [row] * n, single_draw=False, seed=seed, **kwargs)


def get_rand_augment_suite(use_shape: bool = False, max_translate_abs: Optional[int] = None,
                           max_translate_rel: Optional[float] = None) -> List[Augmentation]:
    """RandAugment's augmentations with magnitudes whose strength grows with the bin."""
    return a.get_translations(use_shape, 100, 100 / 224, max_translate_abs, max_translate_rel) + [
        a.shear_x.augmentation((0, 0.3), True),
        a.shear_y.augmentation((0, 0.3), True),
        a.rotate.augmentation((0, 30), True),
        a.brightness.augmentation((0, 0.9), True, a.shift_enhance_range),
        a.contrast.augmentation((0, 0.9), True, a.shift_enhance_range),
        a.color.augmentation((0, 0.9), True, a.shift_enhance_range),
        a.sharpness.augmentation((0, 0.9), True, a.sharpness_kernel),
        a.posterize.augmentation((8, 4), False, a.poster_mask_uint8),
        a.solarize.augmentation((256, 0)),
        a.equalize,
        a.auto_contrast,
        a.identity,
    ]


def get_rand_augment_non_monotonic_suite(use_shape: bool = False, max_translate_abs: Optional[int] = None,
                                         max_translate_rel: Optional[float] = None) -> List[Augmentation]:
    """The suite with AutoAugment's ranges for the colour operations (not monotonic in the bin)."""
    return a.get_translations(use_shape, 100, 100 / 224, max_translate_abs, max_translate_rel) + [
        a.shear_x.augmentation((0, 0.3), True),
        a.shear_y.augmentation((0, 0.3), True),
        a.rotate.augmentation((0, 30), True),
        a.brightness.augmentation((0.1, 1.9), False, None),
        a.contrast.augmentation((0.1, 1.9), False, None),
        a.color.augmentation((0.1, 1.9), False, None),
        a.sharpness.augmentation((0.1, 1.9), False, a.sharpness_kernel_shifted),
        a.posterize.augmentation((0, 4), False, a.poster_mask_uint8),
        a.solarize.augmentation((0, 256), False, None),
        a.equalize,
        a.auto_contrast,
        a.identity,
    ]
