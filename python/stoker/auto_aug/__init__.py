"""stoker.auto_aug: DALI's automatic augmentations -- ``from stoker.auto_aug import auto_augment,
rand_augment, trivial_augment`` as ``nvidia.dali.auto_aug``: ``auto_augment.auto_augment`` /
``auto_augment_image_net`` (AutoAugment's policies), ``rand_augment.rand_augment``,
``trivial_augment.trivial_augment_wide``, the ``augmentations`` suite, and ``Policy``,
``augmentation`` and ``signed_bin`` for policies and augmentations of your own. A scheme draws
each sample's choices with ``fn.random.choice`` (same seed, same bytes) and applies them with one
fused ``_auto_aug.apply`` node, on the CPU or the GPU. docs/operators-augment.md, *AutoAugment*,
says what differs from DALI. Definition time only."""
from . import augmentations, auto_augment, core, rand_augment, trivial_augment
from .core import Augmentation, Policy, augmentation, signed_bin

__all__ = ["Augmentation", "Policy", "augmentation", "augmentations", "auto_augment", "core", "rand_augment",
           "signed_bin", "trivial_augment"]
