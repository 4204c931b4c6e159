"""stoker.auto_aug.core: DALI's automatic-augmentation building blocks -- :class:`Augmentation`, the
:func:`augmentation` decorator, :class:`Policy`, :func:`signed_bin` -- and the one place where a
batch's random choices become operators.

How a scheme runs (``auto_augment``, ``rand_augment``, ``trivial_augment_wide``): every
(augmentation, magnitude bin, sign) a sample may get at a stage is one *entry* of a table, with its
probability; ``fn.random.choice`` draws each sample's entry (keyed by seed, operator, epoch and
sample, so the same seed gives the same bytes), and ONE ``_auto_aug.apply`` node applies, per
sample, the entries it drew, stage after stage -- on the CPU, or on the GPU in a few launches for
the whole batch. The parameters of every entry are computed here, once, from the augmentations'
magnitude ranges and ``as_param`` callbacks (DALI's rules: ``linspace(lo, hi, bins)`` in float32,
negated for the random sign).

Augmentations of your own (``@augmentation`` on a function of DALI-style operators) mix with the
built-in ones: a stage holding one runs the built-in entries through ``_auto_aug.apply`` and your
function on the whole batch, and keeps, per sample, the result of the entry it drew (the
``_conditional.merge`` operator, as ``enable_conditionals`` does: both run for every sample). Their
parameter must be a number (or ``None`` without ``mag_range``). Definition time only.
"""
from typing import Callable, Optional, Sequence, Tuple

import numpy as np

from .. import fn
from ..errors import ArgumentError
from ..graph import DataNode


class _Undefined:
    """Marks an argument not given (distinct from None)."""


class _SignedMagnitudeBin:
    """A magnitude bin with a random sign (DALI's ``signed_bin``). Here the sign of each entry is
    part of the table the entry draw chooses from, so this only carries the bin through."""

    def __init__(self, magnitude_bin, random_sign=None, seed=None):
        if not isinstance(magnitude_bin, (int, DataNode)):
            raise ArgumentError("signed_bin: `magnitude_bin` must be an int or a DataNode, got %r" % (magnitude_bin,))
        self.bin = magnitude_bin
        self.random_sign = random_sign
        self.seed = seed


def signed_bin(magnitude_bin, random_sign=None, seed=None):
    """DALI's ``signed_bin``: a magnitude bin whose sign is drawn per sample."""
    return _SignedMagnitudeBin(magnitude_bin, random_sign, seed)


class Augmentation:
    """An augmentation for the automatic schemes (made with :func:`augmentation`). ``kind`` names
    the built-in ``_auto_aug.apply`` kind for stoker's own suite (augmentations.py), None for a
    function of your own."""

    def __init__(self, op: Callable, mag_range=None, randomly_negate=None, as_param=None, param_device=None,
                 name=None, kind=None):
        self._op = op
        self._mag_range = mag_range
        self._randomly_negate = randomly_negate
        self._as_param = as_param
        self._param_device = param_device
        self._name = name
        self.kind = kind
        if kind is None and _positional_count(op) < 2:
            raise ArgumentError("@augmentation: %r must accept two positional arguments: the samples and the "
                                "parameter" % (op,))

    op = property(lambda self: self._op)
    mag_range = property(lambda self: self._mag_range)
    randomly_negate = property(lambda self: bool(self._randomly_negate))
    param_device = property(lambda self: self._param_device or "cpu")
    name = property(lambda self: self._name or self._op.__name__)

    @property
    def as_param(self):
        return self._as_param or (lambda magnitude: np.array(magnitude))

    def _config(self):
        return dict(mag_range=self._mag_range, randomly_negate=self._randomly_negate, as_param=self._as_param,
                    param_device=self._param_device, name=self._name)

    def augmentation(self, mag_range=_Undefined, randomly_negate=_Undefined, as_param=_Undefined,
                     param_device=_Undefined, name=_Undefined, augmentation_cls=None):
        """A copy with some settings replaced (DALI's ``aug.augmentation(mag_range=...)``)."""
        config = self._config()
        for key, value in dict(mag_range=mag_range, randomly_negate=randomly_negate, as_param=as_param,
                               param_device=param_device, name=name).items():
            if value is not _Undefined:
                config[key] = value
        return (augmentation_cls or type(self))(self._op, kind=self.kind, **config)

    def __repr__(self):
        settings = ", ".join("%s=%r" % item for item in self._config().items() if item[1] is not None)
        return "Augmentation(%s%s)" % (self.name, ", " + settings if settings else "")

    # ---- magnitudes and parameters ----
    def magnitudes(self, num_magnitude_bins):
        """The magnitudes of the bins (None without ``mag_range``)."""
        if self._mag_range is None:
            return None
        if isinstance(self._mag_range, np.ndarray):
            if num_magnitude_bins is not None and len(self._mag_range) != num_magnitude_bins:
                raise ArgumentError("augmentation `%s`: its %d magnitudes do not match num_magnitude_bins=%d"
                                    % (self.name, len(self._mag_range), num_magnitude_bins))
            return self._mag_range
        if num_magnitude_bins is None:
            raise ArgumentError("augmentation `%s` needs `num_magnitude_bins`" % self.name)
        if not hasattr(self._mag_range, "__len__") or len(self._mag_range) != 2:
            raise ArgumentError("augmentation `%s`: `mag_range` must be (low, high) or an np.ndarray, got %r"
                                % (self.name, self._mag_range))
        lo, hi = self._mag_range
        return np.linspace(lo, hi, num_magnitude_bins, dtype=np.float32)

    def param(self, magnitude):
        """The parameter the augmentation gets for a (signed) magnitude, as a float (None: none)."""
        if magnitude is None:
            return None
        value = np.asarray(self.as_param(magnitude))
        if isinstance(value, DataNode) or value.dtype == object:
            raise ArgumentError("augmentation `%s`: `as_param` must return numbers, not pipeline nodes" % self.name)
        if value.size != 1:
            raise NotImplementedError(
                "augmentation `%s`: `as_param` returned an array of shape %s; stoker's auto_aug takes one number "
                "per magnitude (write the array-building inside the augmentation, from that number)"
                % (self.name, value.shape))
        return float(value.reshape(()))

    def signed_params(self, bin_index, num_magnitude_bins):
        """[(parameter, share)] for one bin: both signs (share 0.5 each) when randomly negated."""
        mags = self.magnitudes(num_magnitude_bins)
        if mags is None:
            return [(None, 1.0)]
        if not 0 <= bin_index < len(mags):
            raise ArgumentError("augmentation `%s`: magnitude bin %r is outside [0, %d]"
                                % (self.name, bin_index, len(mags) - 1))
        magnitude = mags[bin_index]
        if self.randomly_negate:
            return [(self.param(magnitude), 0.5), (self.param(-magnitude), 0.5)]
        return [(self.param(magnitude), 1.0)]

    def __call__(self, sample, *, magnitude_bin=None, num_magnitude_bins=None, seed=None, **kwargs):
        """Applies the augmentation to a batch (DALI's call): ``magnitude_bin`` an int (or a
        :func:`signed_bin` of one); a per-sample bin node is not supported outside the schemes."""
        if isinstance(magnitude_bin, _SignedMagnitudeBin):
            magnitude_bin = magnitude_bin.bin
        if isinstance(magnitude_bin, DataNode):
            raise NotImplementedError("augmentation `%s`: a per-sample magnitude_bin node is not supported by a "
                                      "direct call; use it through auto_augment / rand_augment / trivial_augment"
                                      % self.name)
        if self._mag_range is not None and magnitude_bin is None:
            raise ArgumentError("augmentation `%s` has `mag_range`: give `magnitude_bin`" % self.name)
        entries = [(self, p, share) for p, share in self.signed_params(magnitude_bin or 0, num_magnitude_bins)]
        if self.kind is None and len(entries) == 1:
            return self._op(sample, entries[0][1], **{k: v for k, v in kwargs.items() if _accepts(self._op, k)})
        return apply_stages(sample, [entries], single_draw=True, seed=seed, **kwargs)


def _positional_count(function):
    import inspect
    try:
        params = inspect.signature(function).parameters.values()
    except (TypeError, ValueError):
        return 2
    kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    if any(p.kind == inspect.Parameter.VAR_POSITIONAL for p in params):
        return 2
    return sum(1 for p in params if p.kind in kinds)


def augmentation(function=None, *, mag_range=None, randomly_negate=None, as_param=None, param_device=None,
                 name=None, augmentation_cls=None):
    """DALI's ``@augmentation`` decorator: turns ``function(sample, parameter, **extra)`` (built of
    ``fn`` operators) into an :class:`Augmentation` the schemes can draw. The parameter is
    ``as_param(linspace(*mag_range, num_magnitude_bins)[bin] * (-1) ** sign)``; it must be a
    number here (DALI also allows arrays)."""

    def decorate(f):
        if isinstance(f, Augmentation):
            raise ArgumentError("@augmentation applied to the augmentation `%s` again: use `%s.augmentation(...)`"
                                % (f.name, f.name))
        if not callable(f):
            raise ArgumentError("@augmentation: %r is not callable" % (f,))
        return (augmentation_cls or Augmentation)(f, mag_range=mag_range, randomly_negate=randomly_negate,
                                                  as_param=as_param, param_device=param_device, name=name)

    return decorate if function is None else decorate(function)


class Policy:
    """DALI's AutoAugment policy: ``sub_policies`` is a list of sequences of (augmentation,
    probability, magnitude bin) triples; a sample gets one sub-policy, chosen uniformly, and each of
    its steps with the step's probability."""

    def __init__(self, name: str, num_magnitude_bins: int,
                 sub_policies: Sequence[Sequence[Tuple[Augmentation, float, Optional[int]]]]):
        if not isinstance(num_magnitude_bins, int) or num_magnitude_bins < 1:
            raise ArgumentError("Policy: `num_magnitude_bins` must be a positive integer, got %r" % (num_magnitude_bins,))
        if not isinstance(sub_policies, (list, tuple)):
            raise ArgumentError("Policy: `sub_policies` must be a list or tuple, got %r" % type(sub_policies))
        for sub_policy in sub_policies:
            if not isinstance(sub_policy, (list, tuple)):
                raise ArgumentError("Policy: each sub-policy must be a list or tuple, got %r" % (sub_policy,))
            for step in sub_policy:
                if not isinstance(step, (list, tuple)) or len(step) != 3:
                    raise ArgumentError("Policy: each step must be (augmentation, probability, magnitude), got %r"
                                        % (step,))
                aug, p, mag = step
                if not isinstance(aug, Augmentation):
                    raise ArgumentError("Policy: %r is not an Augmentation (did you forget @augmentation?)" % (aug,))
                if not isinstance(p, (float, int)) or not 0 <= p <= 1:
                    raise ArgumentError("Policy: probability %r of `%s` is not within [0, 1]" % (p, aug.name))
                if mag is not None and (not isinstance(mag, int) or not 0 <= mag < num_magnitude_bins):
                    raise ArgumentError("Policy: magnitude %r of `%s` is not an integer within [0, %d]"
                                        % (mag, aug.name, num_magnitude_bins - 1))
                if mag is None and aug.mag_range is not None:
                    raise ArgumentError("Policy: `%s` has a magnitude range, so its magnitude bin cannot be None"
                                        % aug.name)
        self.name = name
        self.num_magnitude_bins = num_magnitude_bins
        self.sub_policies = tuple(tuple(tuple(step) for step in sub) for sub in sub_policies)

    @property
    def augmentations(self):
        augs = {aug.name: aug for sub in self.sub_policies for aug, _, _ in sub}
        return dict(sorted(augs.items()))

    def __repr__(self):
        subs = ",\n\t".join(repr([(aug.name, p, mag) for aug, p, mag in sub]) for sub in self.sub_policies)
        return "Policy(name=%r, num_magnitude_bins=%r, sub_policies=[\n\t%s])" % (self.name, self.num_magnitude_bins,
                                                                                subs)


# ---- running a table of entries ---------------------------------------------------------------


def _warp_kwargs(kwargs, augs):
    """Checks the extra arguments (DALI forbids those no augmentation takes) and returns the
    fused operator's: fill_value, interp_type, shape."""
    known = {"fill_value", "interp_type", "shape"}
    custom = [aug for aug in augs if aug.kind is None]
    for key in kwargs:
        if key not in known and not any(_accepts(aug.op, key) for aug in custom):
            raise ArgumentError("auto_aug: argument `%s` is not used by any of the augmentations" % key)
    return {k: kwargs[k] for k in known if k in kwargs}


def _accepts(function, name):
    import inspect
    try:
        params = inspect.signature(function).parameters
    except (TypeError, ValueError):
        return False
    return name in params or any(p.kind == inspect.Parameter.VAR_KEYWORD for p in params.values())


def _kind_of(aug, param, kwargs):
    """The fused operator's kind for a built-in augmentation (translations: the _rel kinds with
    shape)."""
    kind = aug.kind
    if kind in ("translate_x", "translate_y") and getattr(aug, "relative", False):
        if "shape" not in kwargs:
            raise ArgumentError(
                "augmentation `%s` needs the `shape` argument (the images' HWC shape), as in DALI; or use the "
                "suite's translations without shape (use_shape=False, max_translate_abs)" % aug.name)
        kind += "_rel"
    return kind


def _draw(entries_p, count, seed):
    """Each sample's entry index (count of them per sample, or a scalar when count is None)."""
    probs = np.asarray(entries_p, dtype=np.float64)
    probs = probs / probs.sum()
    args = dict(a=[float(len(probs))], dtype="int32")
    if len(set(np.round(probs, 12))) > 1:
        args["p"] = [float(v) for v in probs]
    if count is not None:
        args["shape"] = [count]
    if seed is not None:
        args["seed"] = seed
    if len(probs) > 4096:
        raise ArgumentError("auto_aug: %d table entries exceed random.choice's 4096; use fewer magnitude bins or "
                            "augmentations" % len(probs))
    return fn.random.choice(**args)


def apply_stages(sample, stages, single_draw, seed=None, **kwargs):
    """Applies `stages` -- per stage a list of (augmentation, parameter, probability) entries --
    to the batch. single_draw: one draw picks the same entry index in every stage's row (rows
    aligned: AutoAugment's joint sub-policy table); else each stage draws on its own (RandAugment)."""
    augs = [aug for stage in stages for aug, _, _ in stage]
    op_kwargs = _warp_kwargs(kwargs, augs)
    num = len(stages)
    probs = [p for _, _, p in stages[0]]
    if not single_draw and any(stage != stages[0] for stage in stages):
        raise ArgumentError("internal: independent stages must share one table")
    if not any(aug.kind is None for aug in augs):
        return _fused(sample, stages, _draw(probs, None if single_draw or num == 1 else num, seed), op_kwargs)
    # A custom augmentation: one fused node per stage, each custom function merged in per sample.
    if single_draw:
        entries = [_draw(probs, None, seed)] * num
    else:
        entries = [_draw(probs, None, seed) for _ in stages]
    for stage, stage_entry in zip(stages, entries):
        sample = _stage_with_custom(sample, stage, stage_entry, op_kwargs, kwargs)
    return sample


def _fused(sample, stages, entry, op_kwargs):
    kinds, params = [], []
    for stage in stages:
        for aug, param, _ in stage:
            if aug.kind is None:
                kinds.append("identity")
                params.append(0.0)
            else:
                kinds.append(_kind_of(aug, param, op_kwargs))
                params.append(0.0 if param is None else float(param))
    args = dict(kinds=kinds, params=params, num_stages=len(stages), entry=entry)
    if op_kwargs.get("fill_value") is not None:
        args["fill_value"] = float(op_kwargs["fill_value"])
    if op_kwargs.get("interp_type") is not None:
        args["interp_type"] = op_kwargs["interp_type"]
    if op_kwargs.get("shape") is not None:
        shape = op_kwargs["shape"]
        args["shape"] = shape if isinstance(shape, DataNode) else [float(v) for v in shape]
    return fn._auto_aug.apply(sample, **args)


def _stage_with_custom(sample, stage, entry, op_kwargs, kwargs):
    out = _fused(sample, [stage], entry, op_kwargs)
    custom = {}
    for index, (aug, param, _) in enumerate(stage):
        if aug.kind is None:
            custom.setdefault(id(aug), (aug, []))[1].append((index, param))
    for aug, picks in custom.values():
        chosen = None
        for index, _ in picks:
            hit = entry == index
            chosen = hit if chosen is None else (chosen | hit)
        if any(param is None for _, param in picks):
            param_node = None
        else:
            param_node = None
            for index, param in picks:
                term = (entry == index) * float(param)
                param_node = term if param_node is None else param_node + term
        extra = {k: v for k, v in kwargs.items() if _accepts(aug.op, k)}
        result = aug.op(sample, param_node, **extra)
        if not isinstance(result, DataNode):
            raise ArgumentError("augmentation `%s` must return one DataNode, got %r" % (aug.name, result))
        if result.device != out.device:
            result, out = result.gpu(), out.gpu()
        out = fn._conditional.merge(result, out, predicate=chosen)
    return out
