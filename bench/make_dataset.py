#!/usr/bin/env python3
"""bench/make_dataset.py: builds the benchmark data sets from real photographs (bench/.photos,
made by bench/fetch_photos.sh). Not on a hot path; deterministic by (seed, count, sources):
every image i comes from its own random generator keyed by (seed, i), whatever --jobs is.

Kinds:
  imagenet  ImageNet-like JPEGs in class folders: random crops/rescales of the photographs, mean
            about 470x390 (0.18-0.2 MP), most with a 500-px long side, both orientations, about
            110 KB a file, mostly 4:4:4 at quality ~96 with a minority 4:2:0, sensor-like noise so
            that bits per pixel match real photos, ~1% grayscale, a few CMYK and progressive.
  hires     2-3 MP 4:2:0 photographs at quality 85-92 (camera-like), where GPU decoding matters most.
  faults    good images plus truncated, zero-byte, corrupt-marker, PNG-named-.jpg and
            huge-dimension-header files; faults.json lists every file with its expected outcome.

After writing, it reads every file back, prints the statistics of what was made and exits
non-zero when they are out of the ranges the kind promises.
  usage: make_dataset.py --kind imagenet --out /tmp/imagenet --count 10000 --seed 1 --sources bench/.photos
"""
import argparse, io, json, os, struct, sys
from multiprocessing import Pool

import numpy as np
from PIL import Image, JpegImagePlugin

Image.MAX_IMAGE_PIXELS = 10**8  # a huge-dimension fault must fail, not allocate 12 GB

SUBSAMPLING_NAMES = {0: '4:4:4', 1: '4:2:2', 2: '4:2:0'}
FAULT_KINDS = ['truncated', 'zero-byte', 'corrupt-marker', 'png-named-jpg', 'huge-dimensions']

_photos = {}  # path -> RGB image, cached per worker process


def load_photo(path):
    if path not in _photos:
        _photos[path] = Image.open(path).convert('RGB')
    return _photos[path]


def imagenet_size(rng):
    """(width, height) drawn like ImageNet's: 80% with a 500-px long side, the rest 250-800."""
    long_side = 500 if rng.random() < 0.8 else int(rng.integers(250, 801))
    aspect = rng.choice([4 / 3, 3 / 2, 1.0, 16 / 9, 5 / 4], p=[0.6, 0.22, 0.06, 0.06, 0.06])
    short_side = max(64, round(long_side / aspect))
    return (short_side, long_side) if rng.random() < 0.18 else (long_side, short_side)


def hires_size(rng):
    megapixels = rng.uniform(2.0, 3.0)
    aspect = rng.choice([4 / 3, 3 / 2, 16 / 9])
    height = round((megapixels * 1e6 / aspect) ** 0.5)
    size = (round(height * aspect), height)
    return size[::-1] if rng.random() < 0.15 else size


def cut(photo, size, rng):
    """A random window of the photograph with the target's aspect ratio, resampled to size."""
    target_aspect = size[0] / size[1]
    max_w = min(photo.width, photo.height * target_aspect)
    crop_w = max_w * rng.uniform(0.35, 1.0)
    crop_h = crop_w / target_aspect
    x0 = rng.uniform(0, photo.width - crop_w)
    y0 = rng.uniform(0, photo.height - crop_h)
    image = photo.resize(size, Image.BICUBIC, box=(x0, y0, x0 + crop_w, y0 + crop_h))
    if rng.random() < 0.5:
        image = image.transpose(Image.FLIP_LEFT_RIGHT)
    return image


def apply_sensor_noise(pixels, gain, luma, chroma, sigma):
    """The camera model both kinds share, in place on float32 pixels: exposure gain, then unit
    Gaussian luma (H, W, 1) and chroma (H, W, 3) fields scaled by sigma and 0.35 sigma; rounded to
    uint8. One order of float32 operations, so the same fields give the same bytes."""
    pixels *= gain
    pixels += luma * sigma
    pixels += chroma * (sigma * 0.35)
    pixels += 0.5
    np.clip(pixels, 0, 255, out=pixels)
    return Image.fromarray(pixels.astype(np.uint8))


def add_sensor_noise(image, sigma, rng):
    """Luminance-heavy Gaussian noise plus a little exposure change, as a camera would add."""
    pixels = np.array(image, dtype=np.float32)
    luma = rng.standard_normal(pixels.shape[:2], dtype=np.float32)[..., None]
    chroma = rng.standard_normal(pixels.shape, dtype=np.float32)
    return apply_sensor_noise(pixels, rng.uniform(0.9, 1.1), luma, chroma, sigma)


_noise_tiles = {}  # seed -> (luma, chroma) noise fields, made once per worker process
NOISE_TILE = 2560  # > the longest side of a 3-MP image at 16:9 (2309 px)


def add_tiled_sensor_noise(image, sigma, rng, seed):
    """add_sensor_noise's camera model at a fraction of its cost, for the multi-megapixel set: the
    unit Gaussian fields are drawn once per set (keyed by its seed, so every worker holds the same
    ones) and each image takes a window of them at a random offset, scaled by its own sigma; drawing
    ~10 M normals an image was two thirds of the set's making time (0.13 of 0.29 s an image here)."""
    if seed not in _noise_tiles:
        tile_rng = np.random.default_rng([seed, 0x6e6f697365])
        _noise_tiles[seed] = (tile_rng.standard_normal((NOISE_TILE, NOISE_TILE, 1), dtype=np.float32),
                              tile_rng.standard_normal((NOISE_TILE, NOISE_TILE, 3), dtype=np.float32))
    luma_tile, chroma_tile = _noise_tiles[seed]
    pixels = np.array(image, dtype=np.float32)
    h, w = pixels.shape[:2]
    y, x = int(rng.integers(0, NOISE_TILE - h + 1)), int(rng.integers(0, NOISE_TILE - w + 1))
    return apply_sensor_noise(pixels, rng.uniform(0.9, 1.1), luma_tile[y:y + h, x:x + w],
                              chroma_tile[y:y + h, x:x + w], sigma)


def encode(image, quality, subsampling, mode='RGB', progressive=False):
    if mode != 'RGB':
        image = image.convert(mode)
    buffer = io.BytesIO()
    image.save(buffer, 'JPEG', quality=quality, subsampling=subsampling, progressive=progressive,
               optimize=False)
    return buffer.getvalue()


def make_image(job):
    """Builds image `index` of the set; returns its JPEG bytes. Pure function of the job."""
    kind, index, seed, variant, photos = job
    rng = np.random.default_rng([seed, index])
    photo = load_photo(photos[int(rng.integers(len(photos)))])
    if kind == 'hires':
        image = add_tiled_sensor_noise(cut(photo, hires_size(rng), rng), rng.uniform(1.0, 2.5), rng, seed)
        return encode(image, int(rng.integers(85, 93)), 2)  # camera-like: quality 85-92
    image = add_sensor_noise(cut(photo, imagenet_size(rng), rng), rng.uniform(2.5, 5.5), rng)
    if variant == '4:2:0':
        return encode(image, int(rng.integers(88, 97)), 2)
    if variant == 'gray':
        return encode(image, int(rng.integers(90, 97)), 0, mode='L')
    if variant == 'cmyk':
        return encode(image, 95, 0, mode='CMYK')
    return encode(image, int(rng.integers(95, 98)), 0, progressive=(variant == 'progressive'))


def plan_variants(count, seed):
    """Exact shares of each encoding, shuffled by seed: ~72% 4:4:4, 25% 4:2:0, 1% gray, 1% progressive, 0.2% CMYK."""
    special = {'gray': max(1, round(0.01 * count)), 'progressive': max(1, round(0.01 * count)),
               'cmyk': max(1, round(0.002 * count)), '4:2:0': round(0.25 * count)}
    variants = [name for name, n in special.items() for _ in range(n)]
    variants += ['4:4:4'] * (count - len(variants))
    np.random.default_rng([seed, 0x5EED]).shuffle(variants)
    return variants[:count]


def fault_bytes(fault, good_jpeg, png_bytes):
    if fault == 'truncated':
        return good_jpeg[:len(good_jpeg) * 3 // 5]
    if fault == 'zero-byte':
        return b''
    if fault == 'png-named-jpg':
        return png_bytes
    data = bytearray(good_jpeg)
    sof = find_marker(data, (0xC0, 0xC1, 0xC2))
    if fault == 'corrupt-marker':  # SOF turned into a reserved marker: scan data with no frame header
        data[sof + 1] = 0x01
    else:  # 'huge-dimensions': a valid file whose frame header claims 65500 x 65500 pixels
        data[sof + 5:sof + 9] = struct.pack('>HH', 65500, 65500)
    return bytes(data)


def find_marker(data, codes):
    position = 2
    while position < len(data) - 4:
        marker, length = data[position + 1], struct.unpack('>H', data[position + 2:position + 4])[0]
        if data[position] == 0xFF and marker in codes:
            return position
        position += 2 + length
    raise ValueError('no frame header found')


def frame_size(path):
    """(width, height) as the JPEG frame header states it, without decoding."""
    with open(path, 'rb') as f:
        data = f.read(1 << 16)
    sof = find_marker(data, (0xC0, 0xC1, 0xC2))
    height, width = struct.unpack('>HH', data[sof + 5:sof + 9])
    return width, height


def write_set(kind, out, count, seed, photos, classes, jobs):
    variants = plan_variants(count, seed) if kind != 'hires' else ['4:2:0'] * count
    good_count = count if kind != 'faults' else count - count // 10
    work = [('hires' if kind == 'hires' else 'imagenet', i, seed, variants[i], photos) for i in range(good_count)]
    with Pool(jobs) as pool:
        encoded = pool.map(make_image, work, chunksize=16)
    classes = max(1, min(classes, count // 10 or 1))
    files = []
    for i, data in enumerate(encoded):
        files.append((os.path.join(f'n{i % classes:04d}', f'img_{i:07d}.jpg'), data, variants[i]))
    if kind == 'faults':
        png = io.BytesIO()
        Image.open(io.BytesIO(encoded[0])).convert('RGB').save(png, 'PNG')
        for j in range(count - good_count):
            fault = FAULT_KINDS[j % len(FAULT_KINDS)]
            data = fault_bytes(fault, encoded[j % good_count], png.getvalue())
            files.append((os.path.join(f'n{j % classes:04d}', f'bad_{j:05d}_{fault}.jpg'), data, fault))
    for name, data, _ in files:
        os.makedirs(os.path.dirname(os.path.join(out, name)), exist_ok=True)
        with open(os.path.join(out, name), 'wb') as f:
            f.write(data)
    if kind == 'faults':
        manifest = {name: {'expect': 'error' if what in FAULT_KINDS else 'ok', 'kind': what}
                    for name, _, what in files}
        with open(os.path.join(out, 'faults.json'), 'w') as f:
            json.dump(manifest, f, indent=1, sort_keys=True)
    return [name for name, _, _ in files]


def describe(path):
    """What a reader sees in one file: size, dimensions, colour mode, subsampling, progressive."""
    size = os.path.getsize(path)
    try:
        with Image.open(path) as image:
            info = {'bytes': size, 'format': image.format, 'width': image.width, 'height': image.height,
                    'mode': image.mode, 'progressive': bool(image.info.get('progressive'))}
            info['subsampling'] = SUBSAMPLING_NAMES.get(JpegImagePlugin.get_sampling(image)) \
                if image.format == 'JPEG' and image.mode == 'RGB' else None
            image.load()
            info['decodes'] = True
    except Exception as error:  # a fault file: which error is part of what the check looks at
        info = locals().get('info', {'bytes': size, 'format': None})
        info['decodes'] = False
        info['error'] = type(error).__name__
    return info


def check_range(problems, label, value, low, high, fmt='{:.3f}'):
    status = 'ok' if low <= value <= high else 'OUT OF RANGE'
    print(f'  {label:28s} {fmt.format(value):>10s}   expected {fmt.format(low)}..{fmt.format(high)}  {status}')
    if status != 'ok':
        problems.append(label)


def report(kind, out, names, jobs):
    with Pool(jobs) as pool:
        infos = pool.map(describe, [os.path.join(out, name) for name in names], chunksize=32)
    problems = []
    if kind == 'faults':
        manifest = json.load(open(os.path.join(out, 'faults.json')))
        for name, info in zip(names, infos):
            fault = manifest[name]['kind']
            if fault == 'png-named-jpg':
                wrong = info['format'] != 'PNG'
            elif fault == 'huge-dimensions':
                wrong = frame_size(os.path.join(out, name)) != (65500, 65500) or info['decodes']
            else:
                wrong = info['decodes'] != (manifest[name]['expect'] == 'ok')
            if wrong:
                problems.append(f'{name} ({fault}): {info}')
        counts = {}
        for entry in manifest.values():
            counts[entry['kind']] = counts.get(entry['kind'], 0) + 1
        print(f'faults set in {out}: ' + ', '.join(f'{k} {v}' for k, v in counts.items()))
    else:
        good = [i for i in infos if i['decodes']]
        n = len(infos)
        pixels = np.array([i['width'] * i['height'] for i in good], dtype=np.float64)
        file_bytes = np.array([i['bytes'] for i in good], dtype=np.float64)
        share = lambda pred: sum(1 for i in good if pred(i)) / n
        print(f'{kind} set in {out}: {n} files, {len(good)} decode, '
              f'{len(set(os.path.dirname(x) for x in names))} classes')
        print(f'  mean size {np.mean([i["width"] for i in good]):.0f} x {np.mean([i["height"] for i in good]):.0f},'
              f' {file_bytes.sum() / 2**20:.1f} MB in all')
        check_range(problems, 'files that decode', len(good) / n, 1.0, 1.0)
        bits_range = (3.5, 6.0) if kind == 'imagenet' else (0.8, 4.0)  # q96 4:4:4 / q85-95 4:2:0 photos
        check_range(problems, 'bits per pixel', float(np.mean(file_bytes * 8 / pixels)), *bits_range, '{:.2f}')
        if kind == 'imagenet':
            check_range(problems, 'portrait share', share(lambda i: i['height'] > i['width']), 0.1, 0.3)
            check_range(problems, 'mean megapixels', float(pixels.mean() / 1e6), 0.17, 0.21)
            check_range(problems, 'mean file KB', float(file_bytes.mean() / 1024), 90, 130, '{:.1f}')
            check_range(problems, 'long side 500 share', share(lambda i: max(i['width'], i['height']) == 500), 0.7, 0.9)
            check_range(problems, '4:4:4 share', share(lambda i: i['subsampling'] == '4:4:4'), 0.6, 0.85)
            check_range(problems, '4:2:0 share', share(lambda i: i['subsampling'] == '4:2:0'), 0.15, 0.35)
            check_range(problems, 'grayscale share', share(lambda i: i['mode'] == 'L'), 0.001, 0.03)
            check_range(problems, 'CMYK files', sum(i['mode'] == 'CMYK' for i in good), 1, max(1, n // 100), '{:.0f}')
            check_range(problems, 'progressive files', sum(i['progressive'] for i in good), 1, max(1, n // 20), '{:.0f}')
        else:
            check_range(problems, 'min megapixels', float(pixels.min() / 1e6), 1.95, 3.05)
            check_range(problems, 'max megapixels', float(pixels.max() / 1e6), 1.95, 3.05)
            check_range(problems, '4:2:0 share', share(lambda i: i['subsampling'] == '4:2:0'), 1.0, 1.0)
    for problem in problems[:20]:
        print(f'  problem: {problem}', file=sys.stderr)
    return not problems


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--kind', choices=['imagenet', 'hires', 'faults'], required=True)
    parser.add_argument('--out', required=True, help='output folder (class subfolders are made in it)')
    parser.add_argument('--count', type=int, default=10000)
    parser.add_argument('--seed', type=int, default=1)
    parser.add_argument('--sources', default=os.path.join(os.path.dirname(__file__), '.photos'),
                        help='folder of source photographs (bench/fetch_photos.sh)')
    parser.add_argument('--classes', type=int, default=100)
    parser.add_argument('--jobs', type=int, default=os.cpu_count())
    parser.add_argument('--check-only', action='store_true', help='only read back and check an existing set')
    args = parser.parse_args()

    photos = sorted(os.path.join(args.sources, f) for f in os.listdir(args.sources)
                    if f.lower().endswith(('.jpg', '.jpeg'))) if os.path.isdir(args.sources) else []
    if not photos and not args.check_only:
        sys.exit(f'make_dataset: no photographs in {args.sources} (run bench/fetch_photos.sh)')
    if args.count < (10 if args.kind == 'faults' else 1):
        sys.exit('make_dataset: --count too small')
    if args.check_only:
        names = sorted(os.path.relpath(os.path.join(d, f), args.out) for d, _, fs in os.walk(args.out)
                       for f in fs if f != 'faults.json')
    else:
        names = write_set(args.kind, args.out, args.count, args.seed, photos, args.classes, args.jobs)
    sys.exit(0 if report(args.kind, args.out, names, args.jobs) else 1)


if __name__ == '__main__':
    main()
