"""stoker.auto_aug.auto_augment: AutoAugment (https://arxiv.org/abs/1805.09501) as DALI spells it:
``auto_augment(images, policy_name="image_net", shape=None, fill_value=128, interp_type=None,
max_translate_abs=None, max_translate_rel=None, seed=None)``, ``auto_augment_image_net``,
``apply_auto_augment(policy, images, seed, **kwargs)`` and the four predefined policies of the paper
with DALI's magnitude ranges. Each sample gets one sub-policy (uniformly) and each of its steps with
the step's probability: every outcome (sub-policy, steps run or not, signs) is one entry of a table
drawn once per sample, and one ``_auto_aug.apply`` node applies the steps (core.py). Definition
time only."""
import itertools
from typing import Optional

from ..errors import ArgumentError
from . import augmentations as a
from .core import Policy, apply_stages


def auto_augment(sample, policy_name: str = "image_net", shape=None, fill_value: Optional[int] = 128,
                 interp_type=None, max_translate_abs: Optional[int] = None, max_translate_rel: Optional[float] = None,
                 seed: Optional[int] = None):
    """Applies one of the predefined policies (image_net, reduced_image_net, svhn,
    reduced_cifar10) to a batch of uint8 HWC images; arguments as DALI's."""
    policies = {"image_net": get_image_net_policy, "reduced_image_net": get_reduced_image_net_policy,
                "svhn": get_svhn_policy, "reduced_cifar10": get_reduced_cifar10_policy}
    if not isinstance(policy_name, str) or policy_name not in policies:
        raise ArgumentError("The `policy_name` must be a string that takes one of the values: %s"
                            % ", ".join("`%s`" % name for name in policies))
    if policy_name == "reduced_image_net":
        for value, name in ((shape, "shape"), (max_translate_abs, "max_translate_abs"),
                            (max_translate_rel, "max_translate_rel")):
            if value is not None:
                raise ArgumentError("The policy `reduced_image_net` does not contain any augmentations that rely on "
                                    "the image shape. The `%s` argument must not be specified in that case." % name)
        policy = get_reduced_image_net_policy()
    else:
        policy = policies[policy_name](use_shape=shape is not None, max_translate_abs=max_translate_abs,
                                       max_translate_rel=max_translate_rel)
    kwargs = {"fill_value": fill_value, "interp_type": interp_type}
    if shape is not None:
        kwargs["shape"] = shape
    return apply_auto_augment(policy, sample, seed, **kwargs)


def auto_augment_image_net(sample, shape=None, fill_value: Optional[int] = 128, interp_type=None,
                           max_translate_abs: Optional[int] = None, max_translate_rel: Optional[float] = None,
                           seed: Optional[int] = None):
    """``auto_augment`` with the ImageNet policy."""
    return auto_augment(sample, "image_net", shape, fill_value, interp_type, max_translate_abs, max_translate_rel,
                        seed)


def _stage_options(step, bins):
    if step is None:
        return [(a.identity, None, 1.0)]
    aug, p, mag = step
    options = [(aug, param, p * share) for param, share in aug.signed_params(mag or 0, bins)] if p > 0 else []
    if p < 1:
        options.append((a.identity, None, 1.0 - p))
    return options


def policy_table(policy: Policy):
    """The joint table: per stage a row of (augmentation, parameter, probability) entries, the
    entries of one index across rows being one outcome (its probability in row 0)."""
    if not policy.sub_policies:
        raise ArgumentError("Cannot run empty policy. Got %r in `apply_auto_augment` call." % (policy,))
    length = max(len(sub) for sub in policy.sub_policies)
    share = 1.0 / len(policy.sub_policies)
    rows = [[] for _ in range(length)]
    for sub in policy.sub_policies:
        steps = list(sub) + [None] * (length - len(sub))
        options = [_stage_options(step, policy.num_magnitude_bins) for step in steps]
        for outcome in itertools.product(*options):
            prob = share
            for _, _, p in outcome:
                prob *= p
            if prob <= 0:
                continue
            for k, (aug, param, _) in enumerate(outcome):
                rows[k].append((aug, param, prob))
    return rows


def apply_auto_augment(policy: Policy, sample, seed: Optional[int] = None, **kwargs):
    """Applies `policy` in AutoAugment fashion; kwargs (shape, fill_value, interp_type, or your
    augmentations' extra arguments) go to the augmentations that take them."""
    if not isinstance(policy, Policy):
        raise ArgumentError("apply_auto_augment: `policy` must be a Policy, got %r" % (policy,))
    return apply_stages(sample, policy_table(policy), single_draw=True, seed=seed, **kwargs)


def get_image_net_policy(use_shape: bool = False, max_translate_abs: Optional[int] = None,
                         max_translate_rel: Optional[float] = None) -> Policy:
    """The ImageNet policy of the AutoAugment paper (25 sub-policies, 11 magnitude bins)."""
    _, translate_y = a.get_translations(use_shape, 250, 1.0, max_translate_abs, max_translate_rel)
    shear_x = a.shear_x.augmentation((0, 0.3), True)
    shear_y = a.shear_y.augmentation((0, 0.3), True)
    rotate = a.rotate.augmentation((0, 30), True)
    color = a.color.augmentation((0.1, 1.9), False, None)
    posterize = a.posterize.augmentation((0, 4), False, a.poster_mask_uint8)
    solarize = a.solarize.augmentation((0, 256), False)
    solarize_add = a.solarize_add.augmentation((0, 110), False)
    invert, equalize, auto_contrast = a.invert, a.equalize, a.auto_contrast
    return Policy(name="ImageNetPolicy", num_magnitude_bins=11, sub_policies=[
        [(equalize, 0.8, None), (shear_y, 0.8, 4)],
        [(color, 0.4, 9), (equalize, 0.6, None)],
        [(color, 0.4, 1), (rotate, 0.6, 8)],
        [(solarize, 0.8, 3), (equalize, 0.4, None)],
        [(solarize, 0.4, 2), (solarize, 0.6, 2)],
        [(color, 0.2, 0), (equalize, 0.8, None)],
        [(equalize, 0.4, None), (solarize_add, 0.8, 3)],
        [(shear_x, 0.2, 9), (rotate, 0.6, 8)],
        [(color, 0.6, 1), (equalize, 1.0, None)],
        [(invert, 0.4, None), (rotate, 0.6, 0)],
        [(equalize, 1.0, None), (shear_y, 0.6, 3)],
        [(color, 0.4, 7), (equalize, 0.6, None)],
        [(posterize, 0.4, 6), (auto_contrast, 0.4, None)],
        [(solarize, 0.6, 8), (color, 0.6, 9)],
        [(solarize, 0.2, 4), (rotate, 0.8, 9)],
        [(rotate, 1.0, 7), (translate_y, 0.8, 9)],
        [(solarize, 0.8, 4)],
        [(shear_y, 0.8, 0), (color, 0.6, 4)],
        [(color, 1.0, 0), (rotate, 0.6, 2)],
        [(equalize, 0.8, None)],
        [(equalize, 1.0, None), (auto_contrast, 0.6, None)],
        [(shear_y, 0.4, 7), (solarize_add, 0.6, 7)],
        [(posterize, 0.8, 2), (solarize, 0.6, 10)],
        [(solarize, 0.6, 8), (equalize, 0.6, None)],
        [(color, 0.8, 6), (rotate, 0.4, 5)],
    ])


def get_reduced_cifar10_policy(use_shape: bool = False, max_translate_abs: Optional[int] = None,
                               max_translate_rel: Optional[float] = None) -> Policy:
    """The reduced CIFAR-10 policy of the AutoAugment paper."""
    translate_x, translate_y = a.get_translations(use_shape, 250, 1.0, max_translate_abs, max_translate_rel)
    shear_y = a.shear_y.augmentation((0, 0.3), True)
    rotate = a.rotate.augmentation((0, 30), True)
    brightness = a.brightness.augmentation((0.1, 1.9), False, None)
    color = a.color.augmentation((0.1, 1.9), False, None)
    contrast = a.contrast.augmentation((0.1, 1.9), False, None)
    sharpness = a.sharpness.augmentation((0.1, 1.9), False, a.sharpness_kernel_shifted)
    posterize = a.posterize.augmentation((0, 4), False, a.poster_mask_uint8)
    solarize = a.solarize.augmentation((0, 256), False)
    invert, equalize, auto_contrast = a.invert, a.equalize, a.auto_contrast
    return Policy(name="ReducedCifar10Policy", num_magnitude_bins=11, sub_policies=[
        [(invert, 0.1, None), (contrast, 0.2, 6)],
        [(rotate, 0.7, 2), (translate_x, 0.3, 9)],
        [(sharpness, 0.8, 1), (sharpness, 0.9, 3)],
        [(shear_y, 0.5, 8), (translate_y, 0.7, 9)],
        [(auto_contrast, 0.5, None), (equalize, 0.9, None)],
        [(shear_y, 0.2, 7), (posterize, 0.3, 7)],
        [(color, 0.4, 3), (brightness, 0.6, 7)],
        [(sharpness, 0.3, 9), (brightness, 0.7, 9)],
        [(equalize, 0.6, None), (equalize, 0.5, None)],
        [(contrast, 0.6, 7), (sharpness, 0.6, 5)],
        [(color, 0.7, 7), (translate_x, 0.5, 8)],
        [(equalize, 0.3, None), (auto_contrast, 0.4, None)],
        [(translate_y, 0.4, 3), (sharpness, 0.2, 6)],
        [(brightness, 0.9, 6), (color, 0.2, 8)],
        [(solarize, 0.5, 2)],
        [(equalize, 0.2, None), (auto_contrast, 0.6, None)],
        [(equalize, 0.2, None), (equalize, 0.6, None)],
        [(color, 0.9, 9), (equalize, 0.6, None)],
        [(auto_contrast, 0.8, None), (solarize, 0.2, 8)],
        [(brightness, 0.1, 3), (color, 0.7, 0)],
        [(solarize, 0.4, 5), (auto_contrast, 0.9, None)],
        [(translate_y, 0.9, 9), (translate_y, 0.7, 9)],
        [(auto_contrast, 0.9, None), (solarize, 0.8, 3)],
        [(equalize, 0.8, None), (invert, 0.1, None)],
        [(translate_y, 0.7, 9), (auto_contrast, 0.9, None)],
    ])


def get_svhn_policy(use_shape: bool = False, max_translate_abs: Optional[int] = None,
                    max_translate_rel: Optional[float] = None) -> Policy:
    """The SVHN policy of the AutoAugment paper."""
    translate_x, translate_y = a.get_translations(use_shape, 250, 1.0, max_translate_abs, max_translate_rel)
    shear_x = a.shear_x.augmentation((0, 0.3), True)
    shear_y = a.shear_y.augmentation((0, 0.3), True)
    rotate = a.rotate.augmentation((0, 30), True)
    contrast = a.contrast.augmentation((0.1, 1.9), False, None)
    solarize = a.solarize.augmentation((0, 256), False)
    invert, equalize, auto_contrast = a.invert, a.equalize, a.auto_contrast
    return Policy(name="SvhnPolicy", num_magnitude_bins=11, sub_policies=[
        [(shear_x, 0.9, 4), (invert, 0.2, None)],
        [(shear_y, 0.9, 8), (invert, 0.7, None)],
        [(equalize, 0.6, None), (solarize, 0.6, 6)],
        [(invert, 0.9, None), (equalize, 0.6, None)],
        [(equalize, 0.6, None), (rotate, 0.9, 3)],
        [(shear_x, 0.9, 4), (auto_contrast, 0.8, None)],
        [(shear_y, 0.9, 8), (invert, 0.4, None)],
        [(shear_y, 0.9, 5), (solarize, 0.2, 6)],
        [(invert, 0.9, None), (auto_contrast, 0.8, None)],
        [(equalize, 0.6, None), (rotate, 0.9, 3)],
        [(shear_x, 0.9, 4), (solarize, 0.3, 3)],
        [(shear_y, 0.8, 8), (invert, 0.7, None)],
        [(equalize, 0.9, None), (translate_y, 0.6, 6)],
        [(invert, 0.9, None), (equalize, 0.6, None)],
        [(contrast, 0.3, 3), (rotate, 0.8, 4)],
        [(invert, 0.8, None)],
        [(shear_y, 0.7, 6), (solarize, 0.4, 8)],
        [(invert, 0.6, None), (rotate, 0.8, 4)],
        [(shear_y, 0.3, 7), (translate_x, 0.9, 3)],
        [(shear_x, 0.1, 6), (invert, 0.6, None)],
        [(solarize, 0.7, 2), (translate_y, 0.6, 7)],
        [(shear_y, 0.8, 4), (invert, 0.8, None)],
        [(shear_x, 0.7, 9), (translate_y, 0.8, 3)],
        [(shear_y, 0.8, 5), (auto_contrast, 0.7, None)],
        [(shear_x, 0.7, 2), (invert, 0.1, None)],
    ])


def get_reduced_image_net_policy() -> Policy:
    """The reduced ImageNet policy of the AutoAugment paper (no translations)."""
    shear_x = a.shear_x.augmentation((0, 0.3), True)
    rotate = a.rotate.augmentation((0, 30), True)
    color = a.color.augmentation((0.1, 1.9), False, None)
    contrast = a.contrast.augmentation((0.1, 1.9), False, None)
    sharpness = a.sharpness.augmentation((0.1, 1.9), False, a.sharpness_kernel_shifted)
    posterize = a.posterize.augmentation((0, 4), False, a.poster_mask_uint8)
    solarize = a.solarize.augmentation((0, 256), False)
    invert, equalize, auto_contrast = a.invert, a.equalize, a.auto_contrast
    return Policy(name="ReducedImageNetPolicy", num_magnitude_bins=11, sub_policies=[
        [(posterize, 0.4, 8), (rotate, 0.6, 9)],
        [(solarize, 0.6, 5), (auto_contrast, 0.6, None)],
        [(equalize, 0.8, None), (equalize, 0.6, None)],
        [(posterize, 0.6, 7), (posterize, 0.6, 6)],
        [(equalize, 0.4, None), (solarize, 0.2, 4)],
        [(equalize, 0.4, None), (rotate, 0.8, 8)],
        [(solarize, 0.6, 3), (equalize, 0.6, None)],
        [(posterize, 0.8, 5), (equalize, 1.0, None)],
        [(rotate, 0.2, 3), (solarize, 0.6, 8)],
        [(equalize, 0.6, None), (posterize, 0.4, 6)],
        [(rotate, 0.8, 8), (color, 0.4, 0)],
        [(rotate, 0.4, 9), (equalize, 0.6, None)],
        [(equalize, 0.8, None)],
        [(invert, 0.6, None), (equalize, 1.0, None)],
        [(color, 0.6, 4), (contrast, 1.0, 8)],
        [(rotate, 0.8, 8), (color, 1.0, 2)],
        [(color, 0.8, 8), (solarize, 0.8, 7)],
        [(sharpness, 0.4, 7), (invert, 0.6, None)],
        [(shear_x, 0.6, 5), (equalize, 1.0, None)],
        [(color, 0.4, 0), (equalize, 0.6, None)],
        [(equalize, 0.4, None), (solarize, 0.2, 4)],
        [(solarize, 0.6, 5), (auto_contrast, 0.6, None)],
        [(invert, 0.6, None), (equalize, 1.0, None)],
        [(color, 0.6, 4), (contrast, 1.0, 8)],
        [(equalize, 0.8, None), (equalize, 0.6, None)],
    ])
