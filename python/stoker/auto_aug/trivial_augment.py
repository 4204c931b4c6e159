"""stoker.auto_aug.trivial_augment: TrivialAugment Wide (https://arxiv.org/abs/2103.10158) as DALI
spells it: ``trivial_augment_wide(images, num_magnitude_bins=31, shape=None, fill_value=128,
interp_type=None, max_translate_abs=None, max_translate_rel=None, seed=None, excluded=None)``,
``apply_trivial_augment(augmentations, images, ...)`` and the wide suite. Each sample gets one
augmentation drawn uniformly, at a magnitude bin drawn uniformly, with a random sign where the
augmentation is negated: one ``random.choice`` entry per sample, one ``_auto_aug.apply`` node
(core.py). Definition time only."""
from typing import List, Optional

from ..errors import ArgumentError
from . import augmentations as a
from .core import Augmentation, apply_stages


def trivial_augment_wide(sample, num_magnitude_bins: int = 31, shape=None, fill_value: Optional[int] = 128,
                         interp_type=None, max_translate_abs: Optional[int] = None,
                         max_translate_rel: Optional[float] = None, seed: Optional[int] = None,
                         excluded: Optional[List[str]] = None):
    """Applies TrivialAugment Wide to a batch of uint8 HWC images; arguments as DALI's."""
    augmentations = get_trivial_augment_wide_suite(shape is not None, max_translate_abs, max_translate_rel)
    names = [aug.name for aug in augmentations]
    for name in excluded or []:
        if name not in names:
            raise ArgumentError("The `%s` was specified in `excluded`, but the TrivialAugmentWide suite does not "
                                "contain augmentation with this name. The augmentations in the suite are: %s."
                                % (name, ", ".join(names)))
    selected = [aug for aug in augmentations if aug.name not in (excluded or [])]
    kwargs = {"fill_value": fill_value, "interp_type": interp_type}
    if shape is not None:
        kwargs["shape"] = shape
    return apply_trivial_augment(selected, sample, num_magnitude_bins=num_magnitude_bins, seed=seed, **kwargs)


def apply_trivial_augment(augmentations: List[Augmentation], sample, num_magnitude_bins: int = 31,
                          seed: Optional[int] = None, **kwargs):
    """Applies one augmentation of `augmentations` per sample at a random magnitude bin."""
    if not isinstance(num_magnitude_bins, int) or num_magnitude_bins < 1:
        raise ArgumentError("The `num_magnitude_bins` must be a positive integer, got %r." % (num_magnitude_bins,))
    if not augmentations:
        raise ArgumentError("The `augmentations` list cannot be empty. Got empty list in `apply_trivial_augment` "
                            "call.")
    share = 1.0 / len(augmentations)
    row = []
    for aug in augmentations:
        if aug.mag_range is None:
            row.append((aug, None, share))
            continue
        for b in range(num_magnitude_bins):
            row += [(aug, param, share * part / num_magnitude_bins)
                    for param, part in aug.signed_params(b, num_magnitude_bins)]
    return apply_stages(sample, [row], single_draw=True, seed=seed, **kwargs)


def get_trivial_augment_wide_suite(use_shape: bool = False, max_translate_abs: Optional[int] = None,
                                   max_translate_rel: Optional[float] = None) -> List[Augmentation]:
    """The 14 augmentations of TrivialAugment's wide space with its ranges."""
    return a.get_translations(use_shape, 32, 1.0, max_translate_abs, max_translate_rel) + [
        a.shear_x.augmentation((0, 0.99), True),
        a.shear_y.augmentation((0, 0.99), True),
        a.rotate.augmentation((0, 135), True),
        a.brightness.augmentation((0.01, 0.99), True, a.shift_enhance_range),
        a.contrast.augmentation((0.01, 0.99), True, a.shift_enhance_range),
        a.color.augmentation((0.01, 0.99), True, a.shift_enhance_range),
        a.sharpness.augmentation((0.01, 0.99), True, a.sharpness_kernel),
        a.posterize.augmentation((8, 2), False, a.poster_mask_uint8),
        a.solarize.augmentation((256, 0)),
        a.equalize,
        a.auto_contrast,
        a.identity,
    ]
