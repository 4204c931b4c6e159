"""decoders.image beyond JPEG: PNG (8/16-bit, palette, gray, alpha, interlaced), WebP (lossless),
BMP, TIFF and PNM files, made here with Pillow (and by hand for 16-bit PNG), decode to exactly
PIL's pixels in one mixed folder; output_type GRAY / ANY_DATA and dtype; corrupt or truncated
files give an error naming the file, or a recorded skip under skip_bad_files; readers.file lists
every format by default; decoders.image_crop / image_slice windows; peek_image_shape."""
import os
import struct
import zlib

import numpy as np
import pytest

from stoker import StokerError, fn, pipeline_def

Image = pytest.importorskip("PIL.Image")


def _pattern(width, height, channels, seed):
    rng = np.random.default_rng(seed)
    yy, xx = np.mgrid[0:height, 0:width]
    base = np.stack([(xx * 7 + yy * 3 + 40 * c) % 256 for c in range(channels)], axis=-1)
    noise = rng.integers(0, 40, size=(height, width, channels))
    return ((base + noise) % 256).astype(np.uint8)


def _png16(path, array):
    """A 16-bit PNG written by hand (Pillow cannot write 16-bit RGB): gray (H, W) or RGB (H, W, 3)."""
    height, width = array.shape[:2]
    colour_type = 0 if array.ndim == 2 else 2
    rows = array.astype(">u2").reshape(height, -1).tobytes()
    stride = len(rows) // height
    raw = b"".join(b"\0" + rows[y * stride:(y + 1) * stride] for y in range(height))

    def chunk(kind, body):
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body) & 0xFFFFFFFF)

    ihdr = struct.pack(">IIBBBBB", width, height, 16, colour_type, 0, 0, 0)
    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


def _write_formats(folder):
    """One file per format variant; returns their names (sorted as the reader lists them)."""
    os.makedirs(folder, exist_ok=True)
    rgb = Image.fromarray(_pattern(37, 23, 3, 1))
    rgba = Image.fromarray(_pattern(29, 31, 4, 2), "RGBA")
    gray = Image.fromarray(_pattern(33, 19, 1, 3)[:, :, 0])
    palette = rgb.quantize(colors=50)
    palette_alpha = rgba.quantize(colors=40)
    files = {
        "a_rgb.png": lambda p: rgb.save(p),
        "b_rgba.png": lambda p: rgba.save(p),
        "c_gray.png": lambda p: gray.save(p),
        "d_palette.png": lambda p: palette.save(p),
        "e_palette_alpha.png": lambda p: palette_alpha.save(p),
        "f_gray_alpha.png": lambda p: rgba.convert("LA").save(p),
        "g_bilevel.png": lambda p: gray.convert("1").save(p),
        "h_interlaced.PNG": lambda p: rgb.save(p, "PNG", interlace=1),
        "i_lossless.webp": lambda p: rgb.save(p, "WEBP", lossless=True),
        "j_lossless_alpha.webp": lambda p: rgba.save(p, "WEBP", lossless=True, exact=True),
        "k_rgb.bmp": lambda p: rgb.save(p),
        "l_gray.bmp": lambda p: gray.save(p),
        "m_palette.bmp": lambda p: palette.save(p),
        "n_bilevel.bmp": lambda p: gray.convert("1").save(p),
        "o_rgb.tif": lambda p: rgb.save(p),
        "p_rgba_lzw.tiff": lambda p: rgba.save(p, compression="tiff_lzw"),
        "q_gray_deflate.tif": lambda p: gray.save(p, compression="tiff_adobe_deflate"),
        "r_palette.tif": lambda p: palette.save(p),
        "s_rgb.ppm": lambda p: rgb.save(p),
        "t_gray.pgm": lambda p: gray.save(p),
    }
    for name, write in files.items():
        write(os.path.join(folder, name))
    return sorted(files)


@pytest.fixture(scope="module")
def formats_root(tmp_path_factory):
    root = str(tmp_path_factory.mktemp("formats"))
    names = _write_formats(os.path.join(root, "class_00"))
    return root, [os.path.join(root, "class_00", n) for n in names]


def _decode_all(root, count, **decoder_args):
    @pipeline_def
    def pipe():
        encoded, _ = fn.readers.file(file_root=root, random_shuffle=False, name="Reader")
        return fn.decoders.image(encoded, **decoder_args)

    with pipe(batch_size=count, num_threads=2, device_id=None) as p:
        p.build()
        (images,) = p.run()
        return [np.asarray(images[i]) for i in range(count)]


def test_default_filter_lists_every_format_case_insensitively(formats_root):
    root, paths = formats_root
    open(os.path.join(root, "class_00", "notes.txt"), "w").write("not an image")

    @pipeline_def
    def pipe():
        encoded, labels = fn.readers.file(file_root=root, random_shuffle=False, name="Reader")
        return labels

    with pipe(batch_size=1, num_threads=1, device_id=None) as p:
        p.build()
        assert p.epoch_size("Reader") == len(paths)  # every format, .PNG too; not the .txt


def test_every_format_decodes_to_pil_rgb_exactly(formats_root):
    root, paths = formats_root
    images = _decode_all(root, len(paths))
    for path, image in zip(paths, images):
        expected = np.asarray(Image.open(path).convert("RGB"))
        assert image.shape == expected.shape, path
        assert np.array_equal(image, expected), path


def test_gray_and_bgr_outputs_match_pil(formats_root):
    root, paths = formats_root
    grays = _decode_all(root, len(paths), output_type="GRAY")
    bgrs = _decode_all(root, len(paths), output_type="BGR")
    for path, gray, bgr in zip(paths, grays, bgrs):
        pil = Image.open(path)
        expected = np.asarray(pil.convert("L"))
        assert np.array_equal(gray[:, :, 0], expected), path
        assert np.array_equal(bgr[:, :, ::-1], np.asarray(pil.convert("RGB"))), path


def test_any_data_keeps_alpha_and_gray(formats_root):
    root, paths = formats_root
    images = dict(zip([os.path.basename(p) for p in paths], _decode_all(root, len(paths), output_type="ANY_DATA")))
    rgba = np.asarray(Image.open(os.path.join(root, "class_00", "b_rgba.png")))
    assert np.array_equal(images["b_rgba.png"], rgba)
    assert np.array_equal(images["j_lossless_alpha.webp"], rgba)
    assert np.array_equal(images["p_rgba_lzw.tiff"], rgba)
    assert images["c_gray.png"].shape[2] == 1 and images["f_gray_alpha.png"].shape[2] == 2
    assert images["e_palette_alpha.png"].shape[2] == 4
    assert np.array_equal(images["e_palette_alpha.png"],
                          np.asarray(Image.open(os.path.join(root, "class_00", "e_palette_alpha.png")).convert("RGBA")))


def test_sixteen_bit_png_scales_as_dali_and_keeps_uint16(tmp_path):
    folder = tmp_path / "c"
    folder.mkdir()
    rng = np.random.default_rng(5)
    rgb16 = rng.integers(0, 65536, size=(9, 11, 3), dtype=np.uint16)
    gray16 = rng.integers(0, 65536, size=(7, 5), dtype=np.uint16)
    _png16(str(folder / "a.png"), rgb16)
    _png16(str(folder / "b.png"), gray16)
    as_u8 = _decode_all(str(tmp_path), 2, output_type="ANY_DATA")
    assert np.array_equal(as_u8[0], np.round(rgb16 / 257.0).astype(np.uint8))
    assert np.array_equal(as_u8[1][:, :, 0], np.round(gray16 / 257.0).astype(np.uint8))
    as_u16 = _decode_all(str(tmp_path), 2, output_type="ANY_DATA", dtype="uint16")
    assert as_u16[0].dtype == np.uint16 and np.array_equal(as_u16[0], rgb16)
    as_float = _decode_all(str(tmp_path), 2, output_type="RGB", dtype="float")
    assert np.allclose(as_float[1], np.repeat(gray16[:, :, None], 3, axis=2) / 65535.0, atol=1e-7)


def _corrupt_copies(paths, folder):
    """A truncated copy of one file per format, and one with its pixel data overwritten."""
    os.makedirs(folder, exist_ok=True)
    made = []
    for path in paths:
        name = os.path.basename(path)
        if name[0] not in "aikos":  # one of each format: rgb png, webp, bmp, tif, ppm
            continue
        data = open(path, "rb").read()
        cut = os.path.join(folder, "cut_" + name)
        open(cut, "wb").write(data[: len(data) * 2 // 3] if not name.endswith(".bmp") else data[:200])
        made.append(cut)
    return made


@pytest.mark.parametrize("index", range(5))
def test_truncated_file_error_names_the_file(formats_root, tmp_path, index):
    _, paths = formats_root
    bad = _corrupt_copies(paths, str(tmp_path / "class_00"))[index]

    @pipeline_def
    def pipe():
        encoded, _ = fn.readers.file(files=[bad], random_shuffle=False, name="Reader")
        return fn.decoders.image(encoded)

    with pipe(batch_size=1, num_threads=1, device_id=None) as p:
        p.build()
        with pytest.raises(StokerError) as info:
            p.run()
    message = str(info.value)
    assert os.path.basename(bad) in message
    assert any(w in message.lower() for w in ("truncated", "corrupt")), message


def test_bad_files_are_skipped_and_counted(formats_root, tmp_path):
    _, paths = formats_root
    good = [p for p in paths if os.path.basename(p)[0] in "aikos"]
    bad = _corrupt_copies(paths, str(tmp_path / "bad"))
    files = [f for pair in zip(good, bad) for f in pair]  # good, bad, good, bad, ...

    @pipeline_def
    def pipe():
        encoded, labels = fn.readers.file(files=files, random_shuffle=False, skip_bad_files=True, name="Reader")
        return fn.decoders.image(encoded), labels

    seen = []
    with pipe(batch_size=2, num_threads=2, device_id=None) as p:
        p.build()
        while True:
            try:
                batch = p.run_batch()
            except StopIteration:
                break
            images, labels = batch.outputs
            for i in range(batch.valid_samples):
                label = int(np.asarray(labels[i]).reshape(-1)[0])
                seen.append(files[label])
                expected = np.asarray(Image.open(files[label]).convert("RGB"))
                assert np.array_equal(np.asarray(images[i]), expected), files[label]
        skipped = p.stats()["skipped_files"]
    assert set(seen) == set(good)  # every good file delivered, no bad one
    assert skipped == len(bad)


def test_unsupported_format_is_named(tmp_path):
    gif = str(tmp_path / "x.gif")
    Image.fromarray(_pattern(8, 8, 3, 9)).save(gif)

    @pipeline_def
    def pipe():
        encoded, _ = fn.readers.file(files=[gif], name="Reader")
        return fn.decoders.image(encoded)

    with pipe(batch_size=1, num_threads=1, device_id=None) as p:
        p.build()
        with pytest.raises(StokerError, match="GIF images are not supported"):
            p.run()


def _run_single(path, build):
    @pipeline_def
    def pipe():
        encoded, _ = fn.readers.file(files=[path], name="Reader")
        return build(encoded)

    with pipe(batch_size=1, num_threads=1, device_id=None) as p:
        p.build()
        (out,) = p.run()
        return np.asarray(out[0])


@pytest.mark.parametrize("name", ["a_rgb.png", "i_lossless.webp", "k_rgb.bmp", "o_rgb.tif"])
def test_image_crop_is_the_window_of_the_full_decode(formats_root, name):
    root, _ = formats_root
    path = os.path.join(root, "class_00", name)
    full = np.asarray(Image.open(path).convert("RGB"))
    h, w = full.shape[:2]
    out = _run_single(path, lambda e: fn.decoders.image_crop(e, crop=[10, 12], crop_pos_x=0.25, crop_pos_y=1.0))
    x, y = int(np.floor(0.25 * (w - 12) + 0.5)), h - 10
    assert np.array_equal(out, full[y:y + 10, x:x + 12])
    out = _run_single(path, lambda e: fn.decoders.image_crop(e, crop_w=5, crop_h=7, crop_pos_x=0.0, crop_pos_y=0.0))
    assert np.array_equal(out, full[:7, :5])


def test_image_crop_of_jpeg_matches_decode_then_cut(tmp_path):
    path = str(tmp_path / "x.jpg")
    Image.fromarray(_pattern(64, 48, 3, 4)).save(path, quality=90)
    full = _run_single(path, lambda e: fn.decoders.image(e))
    out = _run_single(path, lambda e: fn.decoders.image_crop(e, crop=[20, 30], crop_pos_x=0.5, crop_pos_y=0.5))
    assert np.array_equal(out, full[14:34, 17:47])


def test_image_slice_relative_and_absolute(formats_root):
    root, _ = formats_root
    path = os.path.join(root, "class_00", "a_rgb.png")
    full = np.asarray(Image.open(path).convert("RGB"))  # 23 x 37
    out = _run_single(path, lambda e: fn.decoders.image_slice(e, rel_start=[0.1, 0.2], rel_shape=[0.5, 0.5]))
    x0, y0 = round(0.1 * 37), round(0.2 * 23)
    x1, y1 = round(0.1 * 37 + 0.5 * 37), round(0.2 * 23 + 0.5 * 23)
    assert np.array_equal(out, full[y0:y1, x0:x1])
    out = _run_single(path, lambda e: fn.decoders.image_slice(e, start=[3, 4], end=[20, 9]))
    assert np.array_equal(out, full[4:9, 3:20])
    out = _run_single(path, lambda e: fn.decoders.image_slice(e, start=[2], shape=[5], axis_names="H"))
    assert np.array_equal(out, full[2:7, :])


def test_image_slice_out_of_bounds_is_an_error(formats_root):
    root, _ = formats_root
    path = os.path.join(root, "class_00", "a_rgb.png")
    with pytest.raises(StokerError, match="out of bounds"):
        _run_single(path, lambda e: fn.decoders.image_slice(e, start=[30, 0], shape=[10, 5]))


def test_peek_image_shape_every_format(formats_root):
    root, paths = formats_root
    for path in paths:
        shape = _run_single(path, lambda e: fn.peek_image_shape(e))
        pil = Image.open(path)
        channels = {"RGB": 3, "RGBA": 4, "L": 1, "LA": 2, "1": 1}.get(pil.mode)
        if pil.mode == "P":
            channels = 4 if "transparency" in pil.info and path.endswith(".png") else 3
        assert shape.dtype == np.int64
        assert list(shape) == [pil.height, pil.width, channels], path


def _have_cuda_torch():
    try:
        import torch

        return torch.cuda.is_available()
    except ImportError:
        return False


@pytest.mark.skipif(not _have_cuda_torch(), reason="no CUDA device (or no torch with CUDA)")
def test_mixed_decoder_takes_other_formats_through_its_cpu_lanes(tmp_path):
    """device="mixed": PNG, WebP, BMP, TIFF and PNM files (one size, so the GPU batch is dense and
    exports by DLPack) are decoded on the CPU and uploaded: PIL's pixels exactly."""
    import torch

    folder = tmp_path / "class_00"
    folder.mkdir()
    rgb = Image.fromarray(_pattern(40, 24, 3, 8))
    rgb.save(folder / "a.png")
    Image.fromarray(_pattern(40, 24, 4, 9), "RGBA").save(folder / "b.png")
    rgb.save(folder / "c.webp", lossless=True)
    rgb.save(folder / "d.bmp")
    rgb.save(folder / "e.tif")
    rgb.save(folder / "f.ppm")
    names = sorted(os.listdir(folder))

    @pipeline_def
    def pipe():
        encoded, _ = fn.readers.file(file_root=str(tmp_path), random_shuffle=False, name="Reader")
        return fn.decoders.image(encoded, device="mixed")

    with pipe(batch_size=len(names), num_threads=2, device_id=0) as p:
        p.build()
        (images,) = p.run()
        decoded = torch.from_dlpack(images).cpu().numpy()
    for name, image in zip(names, decoded):
        assert np.array_equal(image, np.asarray(Image.open(folder / name).convert("RGB"))), name


@pytest.mark.skipif(not _have_cuda_torch(), reason="no CUDA device (or no torch with CUDA)")
@pytest.mark.parametrize("op", ["image_crop", "image_slice"])
def test_mixed_region_decoders_upload_the_cpu_window(formats_root, op):
    """decoders.image_crop / image_slice on "mixed": the CPU pre-stage's window, uploaded (a fixed
    window size, so the GPU batch is dense)."""
    import torch

    root, paths = formats_root

    def run(device):
        @pipeline_def
        def pipe():
            encoded, _ = fn.readers.file(file_root=root, random_shuffle=False, name="Reader")
            if op == "image_crop":
                return fn.decoders.image_crop(encoded, device=device, crop=[9, 11], crop_pos_x=0.3, crop_pos_y=0.7)
            return fn.decoders.image_slice(encoded, device=device, start=[2, 3], shape=[11, 9])

        with pipe(batch_size=len(paths), num_threads=2, device_id=0) as p:
            p.build()
            (images,) = p.run()
            if device == "cpu":
                return np.stack([np.asarray(images[i]) for i in range(len(paths))])
            return torch.from_dlpack(images).cpu().numpy()

    assert np.array_equal(run("cpu"), run("mixed"))


def test_image_slice_positional_inputs_and_per_sample_crop_position(formats_root):
    """anchor/shape as positional inputs (float: relative, int: pixels) and crop_pos_x as a
    per-sample argument input, fed with the encoded file by one external_source."""
    root, _ = formats_root
    path = os.path.join(root, "class_00", "k_rgb.bmp")
    full = np.asarray(Image.open(path).convert("RGB"))  # 23 x 37
    encoded = np.frombuffer(open(path, "rb").read(), dtype=np.uint8)

    def outputs(extra, dtype, build):
        @pipeline_def
        def pipe():
            data, first, second = fn.external_source(
                source=lambda: ([encoded, encoded], [extra[0]] * 2 if len(extra) == 2 else [extra[0], extra[2]],
                                [extra[1]] * 2),
                num_outputs=3, dtype=["uint8", dtype, dtype])
            return build(data, first, second)

        with pipe(batch_size=2, num_threads=1, device_id=None) as p:
            p.build()
            (out,) = p.run()
            return [np.asarray(out[i]) for i in range(2)]

    rel = outputs([np.array([0.25, 0.5], np.float32), np.array([0.5, 0.25], np.float32)], "float",
                  lambda d, a, s: fn.decoders.image_slice(d, a, s))
    x0, y0 = round(0.25 * 37), round(0.5 * 23)
    assert np.array_equal(rel[0], full[y0:round(0.5 * 23 + 0.25 * 23), x0:round(0.25 * 37 + 0.5 * 37)])
    absolute = outputs([np.array([5, 6], np.int64), np.array([7, 8], np.int64)], "int64",
                       lambda d, a, s: fn.decoders.image_slice(d, a, s))
    assert np.array_equal(absolute[1], full[6:14, 5:12])
    per_sample = outputs([np.array(0.0, np.float32), np.array(0.0, np.float32), np.array(1.0, np.float32)], "float",
                         lambda d, x, _: fn.decoders.image_crop(d, crop=[10, 10], crop_pos_y=0.0, crop_pos_x=x))
    assert np.array_equal(per_sample[0], full[:10, :10]) and np.array_equal(per_sample[1], full[:10, 27:37])
