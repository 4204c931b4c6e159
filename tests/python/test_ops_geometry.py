"""tests/python/test_ops_geometry.py: the geometry operators on the CPU (fn.flip, transpose, crop,
slice, pad, paste, erase, reshape, squeeze, expand_dims, cat, stack, rotate, warp_affine,
transforms.*) against NumPy written from DALI's documented semantics: exact for the operators
that move elements (every dtype is moved as raw bytes), within one level for the resampling ones.
Per-sample arguments are bound to fn.random.coin_flip or external_source nodes; the same seed gives
the same bytes twice."""
import numpy as np
import pytest

from stoker import StokerError, fn, pipeline_def

from conftest import requires_cuda


def ragged_images(seed, count=4, channels=3, dtype=np.uint8):
    rng = np.random.default_rng(seed)
    out = []
    for i in range(count):
        h, w = 5 + (i * 3) % 7, 4 + (i * 5) % 9
        out.append((rng.integers(0, 250, size=(h, w, channels))).astype(dtype))
    return out


def run_op(build, batches, layout="HWC", extra=None, seed=7):
    """Runs build(images[, *extra nodes]) on the CPU over each batch; returns per-sample arrays."""
    size = len(batches[0])

    @pipeline_def(batch_size=size, num_threads=1, device_id=-1, seed=seed)
    def pipe():
        images = fn.external_source(source=batches, layout=layout, cycle="raise", name="src")
        nodes = []
        for k, source in enumerate(extra or []):
            nodes.append(fn.external_source(source=source, cycle="raise", name="extra%d" % k))
        return build(images, *nodes)

    results = []
    with pipe() as p:
        for _ in batches:
            outs = p.run()
            results.append([[np.asarray(o[i]) for i in range(size)] for o in outs])
    return results


def per_sample(batch, fn_np):
    return [fn_np(x) for x in batch]


# ---- flip ---------------------------------------------------------------------------------------
def test_flip_default_is_horizontal_on_hwc():
    batch = ragged_images(1)
    (outs,), = run_op(lambda x: fn.flip(x), [batch])
    for got, x in zip(outs, batch):
        np.testing.assert_array_equal(got, x[:, ::-1, :])


def test_flip_vertical_and_horizontal_on_chw_float():
    batch = [np.transpose(x, (2, 0, 1)).astype(np.float32) / 3 for x in ragged_images(2)]
    (outs,), = run_op(lambda x: fn.flip(x, horizontal=1, vertical=1), [batch], layout="CHW")
    for got, x in zip(outs, batch):
        np.testing.assert_array_equal(got, x[:, ::-1, ::-1])


def test_flip_per_sample_flags_from_a_node():
    batch = ragged_images(3)
    flags = [np.array([i % 2], dtype=np.int32) for i in range(len(batch))]
    (outs,), = run_op(lambda x, f: fn.flip(x, horizontal=f, vertical=0), [batch], extra=[[flags]])
    for i, (got, x) in enumerate(zip(outs, batch)):
        np.testing.assert_array_equal(got, x[:, ::-1, :] if i % 2 else x)


def test_flip_coin_flip_same_seed_same_bytes():
    batch = ragged_images(4, count=8)
    build = lambda x: fn.flip(x, horizontal=fn.random.coin_flip(), vertical=fn.random.coin_flip())
    a = run_op(build, [batch], seed=11)[0][0]
    b = run_op(build, [batch], seed=11)[0][0]
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x, y)
    flipped = sum(not np.array_equal(o, x) for o, x in zip(a, batch))
    assert flipped > 0


def test_flip_depthwise_on_dhwc():
    batch = [np.arange(2 * 3 * 4 * 2, dtype=np.int32).reshape(2, 3, 4, 2) + i for i in range(2)]
    (outs,), = run_op(lambda x: fn.flip(x, horizontal=0, depthwise=1), [batch], layout="DHWC")
    for got, x in zip(outs, batch):
        np.testing.assert_array_equal(got, x[::-1])


# ---- transpose ----------------------------------------------------------------------------------
def test_transpose_hwc_to_chw_permutes_layout():
    batch = ragged_images(5)

    @pipeline_def(batch_size=len(batch), num_threads=1, device_id=-1)
    def pipe():
        x = fn.external_source(source=[batch], layout="HWC", cycle="raise")
        return fn.transpose(x, perm=[2, 0, 1])

    with pipe() as p:
        (out,) = p.run()
        assert out.layout() in ("CHW", "NCHW")
        for i, x in enumerate(batch):
            np.testing.assert_array_equal(out[i], np.transpose(x, (2, 0, 1)))


def test_transpose_output_layout_and_int64():
    batch = [np.arange(24, dtype=np.int64).reshape(2, 3, 4) * (i + 1) for i in range(3)]
    (outs,), = run_op(lambda x: fn.transpose(x, perm=[1, 2, 0], output_layout="XYZ"), [batch], layout="ABC")
    for got, x in zip(outs, batch):
        np.testing.assert_array_equal(got, np.transpose(x, (1, 2, 0)))


def test_transpose_bad_perm_names_the_argument():
    batch = ragged_images(6)
    with pytest.raises(StokerError, match="perm"):
        run_op(lambda x: fn.transpose(x, perm=[0, 0, 1]), [batch])


# ---- crop ---------------------------------------------------------------------------------------
def dali_start(pos, extent, crop):
    return int(np.floor(pos * (extent - crop) + 0.5))


def np_window(x, y0, x0, h, w, fill=0):
    """x[y0:y0+h, x0:x0+w] with fill outside (HWC)."""
    out = np.full((h, w) + x.shape[2:], fill, dtype=x.dtype)
    for yy in range(h):
        for xx in range(w):
            sy, sx = y0 + yy, x0 + xx
            if 0 <= sy < x.shape[0] and 0 <= sx < x.shape[1]:
                out[yy, xx] = x[sy, sx]
    return out


def test_crop_center_and_positions():
    batch = ragged_images(7)
    (outs,), = run_op(lambda x: fn.crop(x, crop=(3, 2), crop_pos_x=0.2, crop_pos_y=0.9), [batch])
    for got, x in zip(outs, batch):
        y0, x0 = dali_start(0.9, x.shape[0], 3), dali_start(0.2, x.shape[1], 2)
        np.testing.assert_array_equal(got, x[y0:y0 + 3, x0:x0 + 2])


def test_crop_out_of_bounds_pad_fills_per_channel():
    batch = ragged_images(8)
    fill = [1.0, 2.0, 3.0]
    (outs,), = run_op(lambda x: fn.crop(x, crop_h=14, crop_w=3, out_of_bounds_policy="pad", fill_values=fill),
                      [batch])
    for got, x in zip(outs, batch):
        y0, x0 = dali_start(0.5, x.shape[0], 14), dali_start(0.5, x.shape[1], 3)
        want = np_window(x, y0, x0, 14, 3)
        for yy in range(14):
            if not 0 <= y0 + yy < x.shape[0]:
                want[yy] = np.array(fill, dtype=np.uint8)
        np.testing.assert_array_equal(got, want)


def test_crop_trim_to_shape_and_error():
    batch = ragged_images(9)
    (outs,), = run_op(lambda x: fn.crop(x, crop=(20, 2), out_of_bounds_policy="trim_to_shape"), [batch])
    for got, x in zip(outs, batch):
        x0 = dali_start(0.5, x.shape[1], 2)
        np.testing.assert_array_equal(got, x[:, x0:x0 + 2])
    with pytest.raises(StokerError, match="out_of_bounds_policy"):
        run_op(lambda x: fn.crop(x, crop=(20, 2)), [batch])


def test_crop_per_sample_position_from_a_node():
    batch = ragged_images(10)
    pos = [np.array([i / 3.0], dtype=np.float32) for i in range(len(batch))]
    (outs,), = run_op(lambda x, p: fn.crop(x, crop=(2, 2), crop_pos_x=p), [batch], extra=[[pos]])
    for i, (got, x) in enumerate(zip(outs, batch)):
        y0, x0 = dali_start(0.5, x.shape[0], 2), dali_start(float(np.float32(i / 3.0)), x.shape[1], 2)
        np.testing.assert_array_equal(got, x[y0:y0 + 2, x0:x0 + 2])


def half_up(v):
    """Nearest integer, halves away from zero (slice's rounding of start and end)."""
    return int(np.floor(v + 0.5))


# ---- slice --------------------------------------------------------------------------------------
def test_slice_rel_start_rel_shape_default_axes_wh():
    batch = ragged_images(11)
    (outs,), = run_op(lambda x: fn.slice(x, rel_start=[0.25, 0.5], rel_shape=[0.5, 0.5]), [batch])
    for got, x in zip(outs, batch):
        h, w = x.shape[:2]
        x0, x1 = half_up(0.25 * w), half_up(0.75 * w)
        y0, y1 = half_up(0.5 * h), half_up(1.0 * h)
        np.testing.assert_array_equal(got, x[y0:y1, x0:x1])


def test_slice_start_end_by_axis_names_and_axes():
    batch = ragged_images(12)
    (a, b), = run_op(lambda x: (fn.slice(x, start=[1, 2], end=[3, 4], axis_names="HW"),
                                fn.slice(x, start=[1], shape=[2], axes=[2])), [batch])
    for ga, gb, x in zip(a, b, batch):
        np.testing.assert_array_equal(ga, x[1:3, 2:4])
        np.testing.assert_array_equal(gb, x[:, :, 1:3])


def test_slice_positional_anchor_shape_inputs():
    batch = ragged_images(13)
    anchors = [np.array([0.0, 0.5], dtype=np.float32) for _ in batch]
    shapes = [np.array([3, 2], dtype=np.int32) for _ in batch]
    (outs,), = run_op(lambda x, a, s: fn.slice(x, a, s, normalized_anchor=True, normalized_shape=False), [batch],
                      extra=[[anchors], [shapes]])
    for got, x in zip(outs, batch):
        y0 = half_up(0.5 * x.shape[0])
        np.testing.assert_array_equal(got, x[y0:y0 + 2, 0:3])


def test_slice_pad_policy_fills():
    batch = ragged_images(14)
    (outs,), = run_op(lambda x: fn.slice(x, start=[-2, 0], shape=[4, 3], out_of_bounds_policy="pad",
                                         fill_values=[9.0]), [batch])
    for got, x in zip(outs, batch):
        np.testing.assert_array_equal(got, np_window(x, 0, -2, 3, 4, fill=9))


# ---- pad / paste --------------------------------------------------------------------------------
def test_pad_shape_and_align():
    batch = [np.arange(n, dtype=np.float32) + 1 for n in (3, 5, 8)]
    (a, b), = run_op(lambda x: (fn.pad(x, shape=[9], fill_value=-1.0), fn.pad(x, align=[4])), [batch], layout="")
    for ga, gb, x in zip(a, b, batch):
        np.testing.assert_array_equal(ga, np.concatenate([x, -np.ones(9 - len(x), np.float32)]))
        n = -(-len(x) // 4) * 4
        np.testing.assert_array_equal(gb, np.concatenate([x, np.zeros(n - len(x), np.float32)]))


def test_pad_axis_names_on_hwc():
    batch = ragged_images(15)
    (outs,), = run_op(lambda x: fn.pad(x, axis_names="W", shape=[20], fill_value=7), [batch])
    for got, x in zip(outs, batch):
        want = np.full((x.shape[0], 20, 3), 7, np.uint8)
        want[:, :x.shape[1]] = x
        np.testing.assert_array_equal(got, want)


def test_paste_centered_canvas():
    batch = ragged_images(16)
    (outs,), = run_op(lambda x: fn.paste(x, ratio=2.0, paste_x=0.25, fill_value=[5, 6, 7]), [batch])
    for got, x in zip(outs, batch):
        h, w = x.shape[:2]
        want = np.empty((2 * h, 2 * w, 3), np.uint8)
        want[:] = np.array([5, 6, 7], np.uint8)
        y0, x0 = int(np.floor(0.5 * h)), int(np.floor(0.25 * w))
        want[y0:y0 + h, x0:x0 + w] = x
        np.testing.assert_array_equal(got, want)


# ---- erase --------------------------------------------------------------------------------------
def test_erase_two_regions_with_channel_fill():
    batch = ragged_images(17)
    fill = [10.0, 20.0, 30.0]
    (outs,), = run_op(lambda x: fn.erase(x, anchor=[1, 1, 3, 0], shape=[2, 3, 1, 100], fill_value=fill), [batch])
    for got, x in zip(outs, batch):
        want = x.copy()
        want[1:3, 1:4] = np.array(fill, np.uint8)
        want[3:4, 0:] = np.array(fill, np.uint8)
        np.testing.assert_array_equal(got, want)


def test_erase_normalized_centered_on_w_axis():
    batch = ragged_images(18)
    (outs,), = run_op(lambda x: fn.erase(x, anchor=[0.5], shape=[0.5], axis_names="W", normalized=True,
                                         centered_anchor=True), [batch])
    for got, x in zip(outs, batch):
        w = x.shape[1]
        lo, hi = half_up(0.5 * w - 0.25 * w), half_up(0.5 * w + 0.25 * w)
        want = x.copy()
        want[:, lo:hi] = 0
        np.testing.assert_array_equal(got, want)


# ---- reshape / squeeze / expand_dims ------------------------------------------------------------
def test_reshape_shape_with_inferred_extent_and_layout():
    batch = [np.arange(24, dtype=np.float32).reshape(2, 3, 4) + i for i in range(3)]
    (a, b), = run_op(lambda x: (fn.reshape(x, shape=[4, -1], layout="AB"), fn.reshape(x, rel_shape=[2, 1, 0.5])),
                     [batch], layout="XYZ")
    for ga, gb, x in zip(a, b, batch):
        np.testing.assert_array_equal(ga, x.reshape(4, 6))
        np.testing.assert_array_equal(gb, x.reshape(4, 3, 2))


def test_reshape_wrong_count_is_an_error():
    batch = [np.zeros((2, 3), np.uint8)]
    with pytest.raises(StokerError, match="elements"):
        run_op(lambda x: fn.reshape(x, shape=[5]), [batch], layout="HW")


def test_squeeze_and_expand_dims_layouts():
    batch = [np.arange(6, dtype=np.int32).reshape(1, 2, 3) * (i + 1) for i in range(2)]

    @pipeline_def(batch_size=2, num_threads=1, device_id=-1)
    def pipe():
        x = fn.external_source(source=[batch], layout="FHW", cycle="raise")
        return fn.squeeze(x, axis_names="F"), fn.expand_dims(x, axes=[0, 3], new_axis_names="AB")

    with pipe() as p:
        sq, ex = p.run()
        assert sq.layout() in ("HW", "NHW") and ex.layout() in ("AFHBW", "NAFHBW")  # dense: N first
        for i, x in enumerate(batch):
            np.testing.assert_array_equal(sq[i], x[0])
            np.testing.assert_array_equal(ex[i], x.reshape(1, 1, 2, 1, 3))


# ---- cat / stack --------------------------------------------------------------------------------
def test_cat_and_stack_two_inputs():
    a_batch = ragged_images(19)
    b_batch = [np.flip(x, 0).copy() for x in a_batch]
    (cat_w, cat_c, st), = run_op(lambda a, b: (fn.cat(a, b, axis_name="W"), fn.cat(a, b, axis=-1),
                                               fn.stack(a, b, axis=1)), [a_batch], extra=[[b_batch]])
    for i, (x, y) in enumerate(zip(a_batch, b_batch)):
        np.testing.assert_array_equal(cat_w[i], np.concatenate([x, y], axis=1))
        np.testing.assert_array_equal(cat_c[i], np.concatenate([x, y], axis=2))
        np.testing.assert_array_equal(st[i], np.stack([x, y], axis=1))


def test_cat_mismatched_extents_is_an_error():
    a_batch = ragged_images(20)
    b_batch = ragged_images(21, count=4)[::-1]
    with pytest.raises(StokerError, match="differs"):
        run_op(lambda a, b: fn.cat(a, b, axis=0), [a_batch], extra=[[b_batch]])


# ---- rotate / warp_affine / transforms ----------------------------------------------------------
def np_warp(x, m, out_h, out_w, nearest=False, fill=None):
    """Independent warp: output pixel centre (x+0.5, y+0.5) -> source point m @ [cx, cy, 1]; nearest
    = floor; linear = bilinear around (sx - 0.5, sy - 0.5); outside: fill, or the clamped border."""
    h, w, c = x.shape
    src = x.astype(np.float64)
    ys, xs = np.mgrid[0:out_h, 0:out_w]
    cx, cy = xs + 0.5, ys + 0.5
    sx = m[0] * cx + m[1] * cy + m[2]
    sy = m[3] * cx + m[4] * cy + m[5]

    def fetch(ix, iy):
        inside = (ix >= 0) & (iy >= 0) & (ix < w) & (iy < h)
        v = src[np.clip(iy, 0, h - 1), np.clip(ix, 0, w - 1)]
        if fill is not None:
            v = np.where(inside[..., None], v, fill)
        return v

    if nearest:
        v = fetch(np.floor(sx).astype(int), np.floor(sy).astype(int))
    else:
        fx, fy = sx - 0.5, sy - 0.5
        x0, y0 = np.floor(fx).astype(int), np.floor(fy).astype(int)
        ax, ay = (fx - x0)[..., None], (fy - y0)[..., None]
        v = ((fetch(x0, y0) * (1 - ax) + fetch(x0 + 1, y0) * ax) * (1 - ay)
             + (fetch(x0, y0 + 1) * (1 - ax) + fetch(x0 + 1, y0 + 1) * ax) * ay)
    return np.clip(np.floor(v + 0.5), 0, 255).astype(np.uint8) if x.dtype == np.uint8 else v.astype(x.dtype)


def assert_close_levels(got, want, levels=1, share=0.01):
    got = np.asarray(got)  # a DALI-style TensorCPU sample or an array
    assert got.shape == want.shape
    diff = np.abs(got.astype(np.int32) - want.astype(np.int32))
    assert diff.max() <= levels
    assert (diff > 0).mean() <= share


def test_rotate_90_is_rot90():
    batch = ragged_images(22)
    (a, b), = run_op(lambda x: (fn.rotate(x, angle=90), fn.rotate(x, angle=-90, interp_type="INTERP_NN")), [batch])
    for ga, gb, x in zip(a, b, batch):
        np.testing.assert_array_equal(ga, np.rot90(x, 1))
        np.testing.assert_array_equal(gb, np.rot90(x, -1))


def rotation_inverse(angle, in_w, in_h, out_w, out_h):
    t = np.deg2rad(angle)
    c, s = np.cos(t), np.sin(t)
    return [c, -s, in_w / 2 - (c * out_w / 2 - s * out_h / 2), s, c, in_h / 2 - (s * out_w / 2 + c * out_h / 2)]


def test_rotate_bounding_box_fill_and_keep_size():
    batch = ragged_images(23)
    (a, b), = run_op(lambda x: (fn.rotate(x, angle=30, fill_value=0), fn.rotate(x, angle=-17, keep_size=True)),
                     [batch])
    for ga, gb, x in zip(a, b, batch):
        h, w = x.shape[:2]
        t = np.deg2rad(30)
        ow = int(np.ceil(abs(w * np.cos(t)) + abs(h * np.sin(t)) - 1e-6))
        oh = int(np.ceil(abs(w * np.sin(t)) + abs(h * np.cos(t)) - 1e-6))
        assert_close_levels(ga, np_warp(x, rotation_inverse(30, w, h, ow, oh), oh, ow, fill=0.0))
        assert_close_levels(gb, np_warp(x, rotation_inverse(-17, w, h, w, h), h, w))


def test_rotate_per_sample_angle():
    batch = ragged_images(24)
    angles = [np.array([90.0 * i], dtype=np.float32) for i in range(len(batch))]
    (outs,), = run_op(lambda x, a: fn.rotate(x, angle=a), [batch], extra=[[angles]])
    for i, (got, x) in enumerate(zip(outs, batch)):
        np.testing.assert_array_equal(got, np.rot90(x, i))


def test_warp_affine_matrix_size_and_inverse_map():
    batch = [x.astype(np.float32) for x in ragged_images(25)]
    m = [0.9, 0.2, 1.5, -0.1, 1.1, -2.0]
    (a, b), = run_op(lambda x: (fn.warp_affine(x, matrix=m, size=[6, 7], fill_value=-1.0),
                                fn.warp_affine(x, matrix=m, inverse_map=False, interp_type="INTERP_NN")), [batch])
    inv = np.linalg.inv(np.array([m[:3], m[3:], [0, 0, 1]]))[:2].reshape(-1)
    for ga, gb, x in zip(a, b, batch):
        np.testing.assert_allclose(ga, np_warp(x, m, 6, 7, fill=-1.0), atol=1e-3)
        h, w = x.shape[:2]
        want = np_warp(x, inv, h, w, nearest=True)
        assert (np.abs(gb - want) > 1e-3).mean() <= 0.02  # floor ties at exact pixel edges may go either way


def test_transforms_compose_and_feed_warp_affine():
    batch = ragged_images(26, count=2)

    @pipeline_def(batch_size=2, num_threads=1, device_id=-1)
    def pipe():
        x = fn.external_source(source=[batch], layout="HWC", cycle="raise")
        t = fn.transforms.translation(offset=[3, -1])
        t = fn.transforms.rotation(t, angle=30, center=[1, 2])
        t = fn.transforms.scale(t, scale=[2, 0.5])
        s = fn.transforms.shear(shear=[0.1, 0.2])
        c = fn.transforms.crop(from_start=[0, 0], from_end=[1, 1], to_start=[10, 20], to_end=[12, 24])
        comb = fn.transforms.combine(s, c)
        return t, comb, fn.warp_affine(x, matrix=fn.transforms.scale(scale=[2.0]), inverse_map=False,
                                       size=[4, 4])

    def mat(a):
        return np.vstack([np.array(a, np.float64).reshape(2, 3), [0, 0, 1]])

    with pipe() as p:
        t, comb, warped = p.run()
        th = np.deg2rad(30)
        rot = mat([np.cos(th), -np.sin(th), 0, np.sin(th), np.cos(th), 0])
        center = mat([1, 0, 1, 0, 1, 2]) @ rot @ mat([1, 0, -1, 0, 1, -2])
        want = mat([2, 0, 0, 0, 0.5, 0]) @ center @ mat([1, 0, 3, 0, 1, -1])
        np.testing.assert_allclose(t[0], want[:2], rtol=1e-5, atol=1e-5)
        want_comb = mat([2, 0, 10, 0, 4, 20]) @ mat([1, 0.1, 0, 0.2, 1, 0])
        np.testing.assert_allclose(comb[1], want_comb[:2], rtol=1e-5, atol=1e-5)
        for i, x in enumerate(batch):
            assert_close_levels(warped[i], np_warp(x, [0.5, 0, 0, 0, 0.5, 0], 4, 4))


# ---- resize_crop_mirror -------------------------------------------------------------------------
def test_resize_crop_mirror_equals_resize_then_crop_then_flip():
    batch = ragged_images(27, count=6)
    mirror = [np.array([i % 2], dtype=np.int32) for i in range(6)]

    def build(x, m):
        fused = fn.resize_crop_mirror(x, resize_x=13, resize_y=11, crop=(6, 5), crop_pos_x=0.3, mirror=m)
        chain = fn.flip(fn.crop(fn.resize(x, resize_x=13, resize_y=11), crop=(6, 5), crop_pos_x=0.3), horizontal=m)
        return fused, chain

    (fused, chain), = run_op(build, [batch], extra=[[mirror]])
    for a, b in zip(fused, chain):
        np.testing.assert_array_equal(a, b)


def test_resize_crop_mirror_nearest_upsample_is_repeat():
    batch = ragged_images(28)
    (outs,), = run_op(lambda x: fn.resize_crop_mirror(x, size=[8, 8], mode="stretch", interp_type="INTERP_NN",
                                                      crop=(4, 4), crop_pos_x=0.0, crop_pos_y=0.0, mirror=1),
                      [[b[:4, :4] for b in batch]])
    for got, x in zip(outs, batch):
        up = np.repeat(np.repeat(x[:4, :4], 2, axis=0), 2, axis=1)
        np.testing.assert_array_equal(got, up[:4, :4][:, ::-1])


def test_rotate_dtype_float_from_uint8_and_paste_channel_check():
    batch = ragged_images(29)
    (outs,), = run_op(lambda x: fn.rotate(x, angle=25, keep_size=True, dtype="float"), [batch])
    for got, x in zip(outs, batch):
        h, w = x.shape[:2]
        assert got.dtype == np.float32
        np.testing.assert_allclose(got, np_warp(x.astype(np.float32), rotation_inverse(25, w, h, w, h), h, w),
                                   atol=1e-3)
    with pytest.raises(StokerError, match="n_channels"):
        run_op(lambda x: fn.paste(x, ratio=2.0, n_channels=4), [batch])


def test_rotate_fhwc_sequence_warps_every_frame_alike():
    frames = [np.stack([x, x[::-1].copy()]) for x in ragged_images(30)]
    (seq,), = run_op(lambda x: fn.rotate(x, angle=40, fill_value=3), [frames], layout="FHWC")
    (one,), = run_op(lambda x: fn.rotate(x, angle=40, fill_value=3), [[f[1] for f in frames]])
    for s, o, f in zip(seq, one, frames):
        assert s.shape[0] == 2
        np.testing.assert_array_equal(s[1], o)


def test_per_channel_fill_without_a_layout_takes_hwc_by_rank():
    batch = ragged_images(31)
    (outs,), = run_op(lambda x: fn.crop(x, crop=(3, 40), out_of_bounds_policy="pad", fill_values=[1, 2, 3]), [batch],
                      layout="")
    for got, x in zip(outs, batch):
        assert got.shape == (3, 40, 3)
        np.testing.assert_array_equal(got[:, 0], np.tile(np.array([1, 2, 3], np.uint8), (3, 1)))


# ---- the GPU implementations in a pipeline (skip without CUDA + torch) ---------------------------
@requires_cuda
def test_gpu_pipeline_matches_cpu_pipeline():
    """Every GPU geometry operator in one pipeline (arguments from CPU nodes, positional inputs
    uploaded, a transforms.* matrix) against the same pipeline on the CPU: same bytes, or one level
    for rotate/warp_affine."""
    import torch

    rng = np.random.default_rng(40)
    batch = [rng.integers(0, 256, size=(16, 20, 3), dtype=np.uint8) for _ in range(8)]
    anchors = [np.array([0.25, 0.125], np.float32) for _ in batch]
    shapes = [np.array([0.5, 0.5], np.float32) for _ in batch]

    def build(device):
        @pipeline_def(batch_size=8, num_threads=2, device_id=0, seed=5)
        def pipe():
            x = fn.external_source(source=[batch], layout="HWC", cycle="raise")
            a = fn.external_source(source=[anchors], cycle="raise")
            s = fn.external_source(source=[shapes], cycle="raise")
            if device == "gpu":
                x = x.gpu()
            coin = fn.random.coin_flip()
            m = fn.transforms.rotation(angle=20, center=[10, 8])
            return (fn.flip(x, horizontal=coin, vertical=1), fn.crop(x, crop=(10, 24), out_of_bounds_policy="pad"),
                    fn.slice(x, a, s), fn.pad(x, align=[8], axis_names="HW"), fn.erase(x, anchor=[2, 3], shape=[4, 5]),
                    fn.transpose(x, perm=[2, 0, 1]), fn.cat(x, x, axis=1), fn.stack(x, x),
                    fn.rotate(x, angle=30, keep_size=True), fn.warp_affine(x, matrix=m, inverse_map=False),
                    fn.resize_crop_mirror(x, size=[12, 12], crop=(8, 8), mirror=coin))
        return pipe()

    outs = {}
    for device in ("cpu", "gpu"):
        with build(device) as p:
            got = p.run()
            outs[device] = [torch.from_dlpack(o).cpu().numpy() if device == "gpu" else o.as_array() for o in got]
    for k, (c, g) in enumerate(zip(outs["cpu"], outs["gpu"])):
        assert c.shape == g.shape, k
        diff = np.abs(c.astype(np.int32) - g.astype(np.int32))
        assert diff.max() <= (1 if k >= 8 else 0), k
