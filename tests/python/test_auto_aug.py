"""tests/python/test_auto_aug.py: the stoker.auto_aug package as DALI users call it
(``from stoker.auto_aug import auto_augment, rand_augment, trivial_augment``): the schemes run on
the CPU with DALI's argument names, the same seed gives the same bytes (another seed other bytes),
the ImageNet policy's table gives each step its probability, a scheme's draws follow its
distribution (RandAugment over {invert, identity}: about half the samples inverted, twice inverted
cancelling out), DALI's errors (unknown `excluded` name, `m` out of range, bad Policy), custom
``@augmentation`` functions mixed into a policy, and the GPU giving the CPU's bytes."""
import warnings

import numpy as np
import pytest

from stoker import ArgumentError, fn, pipeline_def, types
from stoker.auto_aug import Policy, augmentation, augmentations, auto_augment, rand_augment, trivial_augment
from stoker.auto_aug.auto_augment import policy_table

from conftest import requires_cuda


def images(count=8, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.integers(0, 256, size=(12 + i % 4, 15 + (2 * i) % 5, 3), dtype=np.uint8) for i in range(count)]


def run(build, batch, seed=42, device="cpu", threads=2):
    @pipeline_def(batch_size=len(batch), num_threads=threads, device_id=0 if device == "gpu" else -1, seed=seed)
    def pipe():
        x = fn.external_source(source=[batch], layout="HWC", cycle="raise", name="src")
        return build(x.gpu() if device == "gpu" else x)

    with pipe() as p:
        outs = p.run()
        return [[np.asarray(o.as_cpu()[i] if hasattr(o, "as_cpu") else o[i]) for i in range(len(batch))]
                for o in outs]


SCHEMES = {
    "auto_augment_image_net": lambda x: auto_augment.auto_augment_image_net(x),
    "auto_augment_shape": lambda x: auto_augment.auto_augment(x, policy_name="image_net", shape=[16, 16],
                                                              fill_value=128),
    "svhn": lambda x: auto_augment.auto_augment(x, policy_name="svhn", max_translate_abs=(4, 6)),
    "rand_augment": lambda x: rand_augment.rand_augment(x, n=2, m=9),
    "rand_augment_non_monotonic": lambda x: rand_augment.rand_augment(x, n=3, m=4, monotonic_mag=False,
                                                                      interp_type=types.INTERP_NN),
    "trivial_augment_wide": lambda x: trivial_augment.trivial_augment_wide(x, fill_value=None),
}


@pytest.mark.parametrize("name", sorted(SCHEMES))
def test_schemes_keep_shapes_and_same_seed_gives_same_bytes(name):
    batch = images(16)
    first, = run(SCHEMES[name], batch)
    again, = run(SCHEMES[name], batch, threads=1)
    other, = run(SCHEMES[name], batch, seed=7)
    for got, x in zip(first, batch):
        assert got.shape == x.shape and got.dtype == np.uint8
    assert all(np.array_equal(f, g) for f, g in zip(first, again)), "same seed, other bytes on one thread"
    assert not all(np.array_equal(f, o) for f, o in zip(first, other)), "another seed gave the same bytes"
    assert any(not np.array_equal(f, x) for f, x in zip(first, batch)), "nothing was augmented"


def test_image_net_policy_table_gives_each_step_its_probability():
    policy = auto_augment.get_image_net_policy()
    rows = policy_table(policy)
    assert len(rows) == 2 and len(rows[0]) == len(rows[1])
    assert abs(sum(p for _, _, p in rows[0]) - 1) < 1e-9
    # P(stage 0 is equalize) = sum over sub-policies starting with equalize of p / 25
    want = sum(p for sub in policy.sub_policies for k, (aug, p, _) in enumerate(sub) if k == 0 and aug.name == "equalize")
    got = sum(p for aug, _, p in rows[0] if aug.name == "equalize")
    assert abs(got - want / 25) < 1e-9
    # a negated augmentation's two signs are equally likely
    rotate = [(param, p) for aug, param, p in rows[1] if aug.name == "rotate"]
    assert abs(sum(p for v, p in rotate if v > 0) - sum(p for v, p in rotate if v < 0)) < 1e-9
    # the magnitude bin maps through DALI's linspace: rotate bin 8 of (0, 30) in 11 bins is 24 degrees
    assert max(abs(v) for v, _ in rotate) == pytest.approx(30 * 9 / 10)


def test_rand_augment_draws_follow_the_distribution():
    batch = [np.full((4, 4, 3), 10, np.uint8) for _ in range(400)]
    suite = [augmentations.invert, augmentations.identity]
    one, = run(lambda x: rand_augment.apply_rand_augment(suite, x, n=1, m=0), batch)
    inverted = sum(int(o[0, 0, 0] == 245) for o in one)
    assert 150 <= inverted <= 250, "n=1: %d of 400 inverted" % inverted
    two, = run(lambda x: rand_augment.apply_rand_augment(suite, x, n=2, m=0), batch)
    inverted = sum(int(o[0, 0, 0] == 245) for o in two)  # inverted once of two draws: p = 1/2
    assert 150 <= inverted <= 250 and all(o[0, 0, 0] in (10, 245) for o in two)


def test_dali_errors_name_the_argument():
    with pytest.raises(ArgumentError, match="excluded"):
        rand_augment.rand_augment(None, n=2, m=9, excluded=["swirl"])
    with pytest.raises(ArgumentError, match="magnitude bin `m`"):
        rand_augment.apply_rand_augment([augmentations.invert], None, n=1, m=31)
    with pytest.raises(ArgumentError, match="policy_name"):
        auto_augment.auto_augment(None, policy_name="cifar")
    with pytest.raises(ArgumentError, match="max_translate_rel"):
        trivial_augment.trivial_augment_wide(None, max_translate_rel=0.5)
    with pytest.raises(ArgumentError, match="probability"):
        Policy("bad", 11, [[(augmentations.invert, 1.5, None)]])
    with pytest.raises(ArgumentError, match="Augmentation"):
        Policy("bad", 11, [[(lambda s, p: s, 0.5, None)]])
    with pytest.raises(ArgumentError, match="shape"):
        run(lambda x: rand_augment.apply_rand_augment([augmentations.translate_x], x, n=1, m=3), images(2))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert rand_augment.apply_rand_augment([augmentations.invert], "x", n=0, m=0) == "x"
    assert caught


def test_custom_augmentations_mix_with_built_in_ones():
    @augmentation
    def mirror(sample, _):
        return fn.flip(sample, horizontal=1)

    @augmentation(mag_range=(0, 50))
    def darken(sample, amount):
        return fn.cast(fn.math.max(sample - amount, 0.0), dtype=types.UINT8)

    policy = Policy("mine", num_magnitude_bins=11, sub_policies=[
        [(mirror, 1.0, None)], [(augmentations.invert, 1.0, None)], [(darken, 1.0, 10)], [(darken, 1.0, 5)]])
    batch = images(24, seed=3)
    out, = run(lambda x: auto_augment.apply_auto_augment(policy, x, seed=3), batch)
    seen = set()
    for got, x in zip(out, batch):
        options = {"mirror": x[:, ::-1], "invert": 255 - x,
                   "darken50": np.maximum(x.astype(int) - 50, 0).astype(np.uint8),
                   "darken25": np.maximum(x.astype(int) - 25, 0).astype(np.uint8)}
        match = [name for name, want in options.items() if np.array_equal(got, want)]
        assert match, "a sample matches none of the policy's sub-policies"
        seen.update(match)
    assert seen == {"mirror", "invert", "darken50", "darken25"}
    # RandAugment with n=2 over {mirror, invert}: each stage draws on its own
    two, = run(lambda x: rand_augment.apply_rand_augment([mirror, augmentations.invert], x, n=2, m=0), batch)
    kinds = set()
    for got, x in zip(two, batch):
        options = {"none": x, "mirror": x[:, ::-1], "invert": 255 - x, "both": 255 - x[:, ::-1]}
        match = [name for name, want in options.items() if np.array_equal(got, want)]
        assert match, "a sample is not a composition of two draws"
        kinds.update(match)
    assert kinds == {"none", "both"}  # two of mirror/invert: the same twice cancels out


def test_built_in_augmentation_ops_apply_a_fixed_parameter():
    batch = images(3)
    out, = run(lambda x: augmentations.invert.op(x, None), batch)
    for got, x in zip(out, batch):
        np.testing.assert_array_equal(got, 255 - x)
    # DALI's direct call: bin 10 of 11 over (0, 90) is 90 degrees, either sign; a 90-degree turn of a
    # square either way
    square = [np.arange(6 * 6 * 3, dtype=np.uint8).reshape(6, 6, 3)] * 4
    mine = augmentations.rotate.augmentation(mag_range=(0, 90))
    out, = run(lambda x: mine(x, magnitude_bin=10, num_magnitude_bins=11, interp_type=types.INTERP_NN), square)
    for got, x in zip(out, square):
        assert np.array_equal(got, np.rot90(x)) or np.array_equal(got, np.rot90(x, -1))
    assert mine.kind == "rotate" and mine.name == "rotate" and mine.randomly_negate


@requires_cuda
@pytest.mark.parametrize("name", ["auto_augment_image_net", "rand_augment", "trivial_augment_wide"])
def test_gpu_gives_the_cpu_bytes(name):
    batch = images(32, seed=5)
    cpu, = run(SCHEMES[name], batch)
    gpu, = run(SCHEMES[name], batch, device="gpu")
    differing = sum(int((c != g).sum()) for c, g in zip(cpu, gpu))
    worst = max(int(np.abs(c.astype(int) - g.astype(int)).max()) for c, g in zip(cpu, gpu))
    assert differing <= 0.005 * sum(c.size for c in cpu) and worst <= 1


def efficientnet_training_pipe(data_dir, automatic_augmentation, device_id):
    """DALI's EfficientNet training pipeline body, with only the imports changed (CPU or GPU)."""
    @pipeline_def(batch_size=8, num_threads=2, device_id=device_id, seed=11)
    def pipe():
        jpegs, labels = fn.readers.file(file_root=data_dir, random_shuffle=True, name="Reader")
        images = fn.decoders.image_random_crop(jpegs, device="mixed" if device_id >= 0 else "cpu",
                                               output_type=types.RGB, random_aspect_ratio=[0.75, 4.0 / 3.0],
                                               random_area=[0.08, 1.0])
        images = fn.resize(images, size=[32, 32], antialias=False)
        rng = fn.random.coin_flip(probability=0.5)
        images = fn.flip(images, horizontal=rng)
        if automatic_augmentation == "autoaugment":
            output = auto_augment.auto_augment_image_net(images, shape=[32, 32])
        else:
            output = trivial_augment.trivial_augment_wide(images, shape=[32, 32])
        output = fn.crop_mirror_normalize(output, dtype=types.FLOAT, output_layout=types.NCHW, crop=(32, 32),
                                          mean=[0.485 * 255, 0.456 * 255, 0.406 * 255],
                                          std=[0.229 * 255, 0.224 * 255, 0.225 * 255])
        return output, labels

    return pipe()


@pytest.mark.parametrize("scheme", ["autoaugment", "trivialaugment"])
def test_dalis_efficientnet_pipeline_runs_on_the_cpu(small_dataset, scheme):
    with efficientnet_training_pipe(small_dataset, scheme, -1) as p:
        for _ in range(3):
            images, labels = p.run()
            batch = np.asarray(images.as_array())
            assert batch.shape == (8, 3, 32, 32) and batch.dtype == np.float32 and np.isfinite(batch).all()


@requires_cuda
def test_dalis_efficientnet_pipeline_runs_on_the_gpu(small_dataset):
    with efficientnet_training_pipe(small_dataset, "autoaugment", 0) as p:
        for _ in range(3):
            images, labels = p.run()
            batch = np.asarray(images.as_cpu().as_array())
            assert batch.shape == (8, 3, 32, 32) and np.isfinite(batch).all()
