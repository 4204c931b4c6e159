#!/usr/bin/env python3
"""bench/ops_micro.py: one operator at a time, stoker against DALI (nvidia.dali) on the same input.

A row is one operator in one library on one device. Both libraries get the SAME batch: --batch
(256) ImageNet-sized RGB uint8 HWC images (sizes around 500x375, the long side 500), cut from
bench/.photos when it holds photographs (--photos; each image from its own generator keyed by
(seed, i), cropped and resized with Pillow) else synthetic (smooth gradients plus noise, the same
sizes); made once by the parent and read by every row, so both see the same bytes. On the GPU the
images are torch CUDA tensors (CuPy without torch), made once per run and handed to the library's
fn.external_source(device="gpu", layout="HWC") by a callable returning the same list of tensors
every iteration (each library copies them into its own batch, its default); on the CPU
(--device cpu) the same arrays as NumPy. Then the operator with the same arguments in both
(DALI's names and values; OPS below), batch_size, num_threads and prefetch_queue_depth equal,
seed 42, no random argument nodes (what little randomness an operator has of its own -- noise,
jitter, random_resized_crop's window -- is drawn from the same distributions by each library).
The row 'source' is the external source alone (no operator): what the feed costs each library.

Clock: the project's protocol (bench/protocol.py, as bench/peers.py keeps it): the first batch
(time_to_first_batch_s: from the pipeline's creation, build included, to the first batch, ended
by a device synchronize), then a warm-up of --warmup s not counted, then a window of --seconds
counting the images delivered (batch x batches) and ended by a device-wide synchronize (every
stream of the process, the library's own included). Each row runs --repeats times, all runs in one
order shuffled with --order-seed (recorded and printed), each run a subprocess of its own (device
memory and CPU time per row). Per run: images/s, ms per batch, CPU cores busy (CPU time of the
run's process tree in the window / window), device memory (NVML memory used above the baseline,
bench/peers.py's GpuSampler as bench/compare.py uses it; it includes the CUDA context and the
source tensors, the same for both libraries: the 'source' row shows that part), first-batch time,
and the first sample's output shape and dtype (both libraries must make the same thing). Per
operator: stoker/DALI ratio of medians and the verdict of bench/protocol.py ('win' only when the
ranges do not overlap; with one repeat there is no range and no verdict), target >= 1.0x.

Writes OUT/run.json (every run, the order and its seed, provenance) and OUT/results-section.md.
A benchmark driver, not on stoker's hot path.
  usage: ops_micro.py --out DIR [--ops effnet|all|resize,flip,...] [--device cuda|cpu]
                      [--warmup 10 --seconds 30 --repeats 3] [--batch 256] [--threads 4] [--prefetch 2]
"""
import argparse, json, os, shlex, sys, tempfile, time, traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import peers, protocol, report  # noqa: E402  (bench/ modules)

LIBRARIES = ('stoker', 'dali')
MEAN = [123.675, 116.28, 103.53]
STD = [58.395, 57.12, 57.375]


class Type:
    """A DALI enum value (types.FLOAT, types.YCbCr) resolved in each library's own types module."""
    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return f'types.{self.name}'


# name -> (fn path, arguments, input: 'images' | 'labels', inputs repeated). DALI's spelling and
# values; what an ImageNet training (or validation) pipeline would use.
OPS = {
    'source': (None, {}, 'images', 1),
    'resize': ('resize', dict(resize_x=224, resize_y=224), 'images', 1),
    'resize_shorter': ('resize', dict(resize_shorter=256), 'images', 1),
    'random_resized_crop': ('random_resized_crop', dict(size=[224, 224]), 'images', 1),
    'crop': ('crop', dict(crop=[224, 224], crop_pos_x=0.5, crop_pos_y=0.5), 'images', 1),
    'crop_mirror_normalize': ('crop_mirror_normalize', dict(crop=[224, 224], mean=MEAN, std=STD, mirror=1,
                                                            dtype=Type('FLOAT'), output_layout='CHW'), 'images', 1),
    'resize_crop_mirror': ('resize_crop_mirror', dict(resize_shorter=256, crop=[224, 224], mirror=1), 'images', 1),
    'flip': ('flip', dict(horizontal=1, vertical=0), 'images', 1),
    'transpose': ('transpose', dict(perm=[2, 0, 1]), 'images', 1),
    'slice': ('slice', dict(rel_start=[0.1, 0.1], rel_shape=[0.8, 0.8], axis_names='HW'), 'images', 1),
    'pad': ('pad', dict(axis_names='HW', shape=[512, 512], fill_value=0.0), 'images', 1),
    'paste': ('paste', dict(ratio=2.0, paste_x=0.5, paste_y=0.5, fill_value=[0, 0, 0]), 'images', 1),
    'erase': ('erase', dict(anchor=[50.0, 50.0], shape=[100.0, 100.0], axis_names='HW', fill_value=[0.0]), 'images', 1),
    'cat': ('cat', dict(axis=2), 'images', 2),
    'stack': ('stack', dict(axis=0), 'images', 2),
    'rotate': ('rotate', dict(angle=15.0, keep_size=True, fill_value=0.0), 'images', 1),
    'warp_affine': ('warp_affine', dict(matrix=[1.0, 0.1, -10.0, 0.1, 1.0, -10.0], fill_value=0.0), 'images', 1),
    'brightness': ('brightness', dict(brightness=1.2), 'images', 1),
    'contrast': ('contrast', dict(contrast=0.8), 'images', 1),
    'brightness_contrast': ('brightness_contrast', dict(brightness=1.2, contrast=0.8), 'images', 1),
    'hue': ('hue', dict(hue=10.0), 'images', 1),
    'saturation': ('saturation', dict(saturation=1.2), 'images', 1),
    'hsv': ('hsv', dict(hue=10.0, saturation=1.2, value=0.9), 'images', 1),
    'color_twist': ('color_twist', dict(brightness=1.2, contrast=0.8, hue=10.0, saturation=1.2), 'images', 1),
    'color_space_conversion': ('color_space_conversion', dict(image_type=Type('RGB'), output_type=Type('YCbCr')),
                               'images', 1),
    'gaussian_blur': ('gaussian_blur', dict(window_size=5, sigma=1.0), 'images', 1),
    'jitter': ('jitter', dict(nDegree=2, fill_value=0.0), 'images', 1),
    'noise.gaussian': ('noise.gaussian', dict(stddev=10.0), 'images', 1),
    'noise.salt_and_pepper': ('noise.salt_and_pepper', dict(prob=0.05), 'images', 1),
    'noise.shot': ('noise.shot', dict(factor=20.0), 'images', 1),
    'normalize': ('normalize', dict(mean=128.0, stddev=64.0, dtype=Type('FLOAT')), 'images', 1),
    'normalize_hw': ('normalize', dict(axis_names='HW', dtype=Type('FLOAT')), 'images', 1),
    'cast': ('cast', dict(dtype=Type('FLOAT')), 'images', 1),
    'equalize': ('experimental.equalize', {}, 'images', 1),
    'one_hot': ('one_hot', dict(num_classes=1000), 'labels', 1),
}
# The operators of an EfficientNet / ResNet-50 training pipeline, plus the feed alone.
PRESETS = {
    'all': list(OPS),
    'effnet': ['source', 'resize', 'crop_mirror_normalize', 'flip', 'normalize', 'rotate', 'warp_affine',
               'color_twist', 'brightness_contrast', 'hsv', 'equalize', 'cast'],
}
STARTUP_S = 8.0  # a child's start, imports, set-up and first batch, until a run has measured it


class Skip(Exception):
    """The row cannot run here (library missing, no such operator on the device): a row saying why."""


# ------------------------------------------------------------------------------------------------
# The input: made once by the parent, read by every child
def image_sizes(count, seed):
    """(height, width) of each image: ImageNet-like, the long side 500, the other 281-499 (mean
    about 500x375), three in four landscape."""
    import numpy as np
    rng = np.random.default_rng(seed)
    sizes = []
    for _ in range(count):
        short = int(rng.integers(281, 500))
        sizes.append((short, 500) if rng.random() < 0.75 else (500, short))
    return sizes


def photo_paths(folder):
    if not folder or not os.path.isdir(folder):
        return []
    return sorted(os.path.join(folder, f) for f in os.listdir(folder) if f.lower().endswith(('.jpg', '.jpeg', '.png')))


def make_images(count, seed, photos_dir):
    """(list of HWC uint8 RGB arrays, description). From the photographs when there are any (image
    i: photograph i mod n, a random crop of the target's aspect resized to the target size, its
    generator keyed by (seed, i)), else synthetic."""
    import numpy as np
    sizes, paths = image_sizes(count, seed), photo_paths(photos_dir)
    images, source = [], 'synthetic (gradients plus noise)'
    if paths:
        try:
            from PIL import Image
            opened = {}
            for i, (h, w) in enumerate(sizes):
                rng = np.random.default_rng([seed, i])
                path = paths[i % len(paths)]
                photo = opened.get(path) or opened.setdefault(path, Image.open(path).convert('RGB'))
                scale = min(photo.width / w, photo.height / h) * rng.uniform(0.5, 1.0)
                cw, ch = max(1, int(w * scale)), max(1, int(h * scale))
                x, y = int(rng.integers(0, photo.width - cw + 1)), int(rng.integers(0, photo.height - ch + 1))
                images.append(np.asarray(photo.crop((x, y, x + cw, y + ch)).resize((w, h), Image.BILINEAR)))
            source = f'{min(len(paths), count)} photographs of {photos_dir}, random crops resized'
        except ImportError:
            images, source = [], 'synthetic (gradients plus noise; Pillow missing, bench/.photos not read)'
    if not images:
        for i, (h, w) in enumerate(sizes):
            rng = np.random.default_rng([seed, i])
            yy, xx = np.mgrid[0:h, 0:w]
            base = np.stack([xx * 255 // w, yy * 255 // h, (xx + yy) * 255 // (w + h)], axis=-1)
            noise = rng.integers(-40, 41, size=(h, w, 3))
            images.append(np.clip(base + noise, 0, 255).astype(np.uint8))
    pixels = sum(h * w for h, w in sizes) / count
    mean_h, mean_w = (sum(s[k] for s in sizes) / count for k in (0, 1))
    return images, (f'{count} RGB uint8 HWC images, {source}; seed {seed}; mean {mean_w:.0f}x{mean_h:.0f} '
                    f'({pixels / 1e6:.3f} MP), long side 500')


def save_images(images, folder):
    import numpy as np
    np.save(os.path.join(folder, 'pixels.npy'), np.concatenate([a.reshape(-1) for a in images]))
    with open(os.path.join(folder, 'shapes.json'), 'w') as f:
        json.dump([list(a.shape) for a in images], f)


def load_images(folder):
    import numpy as np
    flat = np.load(os.path.join(folder, 'pixels.npy'))
    with open(os.path.join(folder, 'shapes.json')) as f:
        shapes = json.load(f)
    images, at = [], 0
    for shape in shapes:
        size = shape[0] * shape[1] * shape[2]
        images.append(np.ascontiguousarray(flat[at:at + size].reshape(shape)))
        at += size
    return images


# ------------------------------------------------------------------------------------------------
# Child: one run of one operator in one library
def library(name):
    """(fn, types, Pipeline class, device_id for the CPU) of 'stoker' or 'dali', or Skip."""
    try:
        if name == 'dali':
            import nvidia.dali as dali
            from nvidia.dali import fn, types
            return fn, types, dali.Pipeline, None
        import stoker
        return stoker.fn, stoker.types, stoker.Pipeline, -1
    except ImportError as error:
        raise Skip(f'{name} not importable ({error})')


def dali_has(path, device):
    """False when DALI's registry says it has no `path` operator on `device`, else True (unknown
    registry: let the build say)."""
    try:
        from nvidia.dali.ops import _registry
    except ImportError:
        return True
    schema = '__'.join(part if i < len(path.split('.')) - 1 else ''.join(w[:1].upper() + w[1:] for w in part.split('_'))
                       for i, part in enumerate(path.split('.')))
    ops = _registry.gpu_ops() if device == 'gpu' else _registry.cpu_ops()
    return schema in ops or not ops


def device_inputs(images, labels, device):
    """The source's batches on the device: (image list, labels, synchronize, backend name)."""
    if device == 'cpu':
        return images, labels, (lambda: None), 'numpy'
    try:
        import torch
        if not torch.cuda.is_available():
            raise Skip('torch sees no CUDA device')
        on_gpu = [torch.from_numpy(a).cuda() for a in images]
        gpu_labels = [torch.from_numpy(a).cuda() for a in labels]
        torch.cuda.synchronize()
        return on_gpu, gpu_labels, torch.cuda.synchronize, f'torch {torch.__version__}'
    except ImportError:
        pass
    try:
        import cupy
    except ImportError:
        raise Skip('neither torch nor cupy is importable: no GPU tensors for the source')
    on_gpu, gpu_labels = [cupy.asarray(a) for a in images], [cupy.asarray(a) for a in labels]
    sync = cupy.cuda.Device().synchronize  # cudaDeviceSynchronize: every stream of the process
    sync()
    return on_gpu, gpu_labels, sync, f'cupy {cupy.__version__}'


def build_pipeline(args, op, batch_images, batch_labels):
    fn, types, Pipeline, cpu_device_id = library(args.lib)
    path, arguments, input_kind, repeat = OPS[op]
    device = 'gpu' if args.device == 'cuda' else 'cpu'
    if args.lib == 'dali' and path and not dali_has(path, device):
        raise Skip(f'DALI {path} has no {device} implementation')
    operator = fn
    for part in (path or '').split('.'):
        operator = getattr(operator, part, None) if part else operator
        if operator is None:
            raise Skip(f'{args.lib} has no fn.{path}')
    resolved = {k: getattr(types, v.name) if isinstance(v, Type) else v for k, v in arguments.items()}
    pipe = Pipeline(batch_size=args.batch, num_threads=args.threads, prefetch_queue_depth=args.prefetch, seed=42,
                    device_id=0 if device == 'gpu' else cpu_device_id)
    data = batch_images if input_kind == 'images' else batch_labels
    with pipe:
        source = fn.external_source(source=lambda: data, device=device, batch=True,
                                    **({'layout': 'HWC'} if input_kind == 'images' else {}))
        out = operator(*([source] * repeat), device=device, **resolved) if path else source
        pipe.set_outputs(out)
    pipe.build()
    return pipe


def output_signature(outputs):
    """(shape of sample 0, dtype name) of the first output."""
    first = outputs[0]
    try:
        shape = list(first.shape()[0])
    except Exception:  # noqa: BLE001 - a signature is informative only
        shape = None
    dtype = getattr(first.dtype, 'name', None) or str(first.dtype)
    return shape, str(dtype).split('.')[-1]


def measure(args):
    """Runs one operator in one library; returns the row's fields (the protocol's clock)."""
    import numpy as np
    images = load_images(args.images)
    labels = [np.array([(i * 37) % 1000], dtype=np.int32) for i in range(len(images))]
    batch_images, batch_labels, sync, tensors = device_inputs(images, labels, 'cpu' if args.device == 'cpu' else 'gpu')
    row = {'source_tensors': tensors}
    start = time.perf_counter()
    pipe = build_pipeline(args, args.op, batch_images, batch_labels)
    outputs = pipe.run()
    sync()
    first = time.perf_counter()
    row['time_to_first_batch_s'] = first - start
    row['out_shape0'], row['out_dtype'] = output_signature(outputs)
    delivered = lambda outs: len(outs[0]) if hasattr(outs[0], '__len__') else args.batch
    warmup_images, batches = delivered(outputs), 0
    while time.perf_counter() - first < args.warmup:
        warmup_images += delivered(pipe.run())
    sync()
    cpu_before, start, images = peers.tree_cpu_seconds(os.getpid()), time.perf_counter(), 0
    stats_before = stoker_stats(args.lib, pipe)
    row.update(window_start=time.time(), warmup_s=start - first, warmup_images=warmup_images)
    while time.perf_counter() - start < args.seconds:
        images += delivered(pipe.run())
        batches += 1
    sync()
    wall = time.perf_counter() - start
    row.update(window_end=time.time(), images=images, batches=batches, seconds=wall, images_per_s=images / wall,
               ms_per_batch=1000 * wall / batches, cpu_cores_busy=(peers.tree_cpu_seconds(os.getpid()) - cpu_before) / wall)
    if stats_before is not None:
        row['stoker_ms_per_batch'] = stoker_breakdown(stats_before, stoker_stats(args.lib, pipe), batches, wall)
    return row


def stoker_stats(lib, pipe):
    """stoker's own counters (Pipeline.stats()), or None for DALI's pipeline, which has none."""
    return pipe.stats() if lib == 'stoker' else None


def stoker_breakdown(before, after, batches, wall):
    """Where a stoker batch's time went in the window, ms a batch: 'waiting' (run() waiting for
    the pipeline: next_wait_s), 'feeding' (the rest of run(): the source called, its samples
    described and fed, the outputs wrapped: wall minus waiting), the GPU stage's time and each
    operator's (busy time, summed over threads, so it may exceed the wall where they overlap)."""
    per = lambda key: 1000 * (after.get(key, 0) - before.get(key, 0)) / batches
    out = {'waiting': per('next_wait_s'), 'gpu_stage': per('gpu_stage_s'), 'upload': per('upload_s')}
    out['feeding'] = 1000 * wall / batches - out['waiting']
    for name, seconds in after.get('op_seconds', {}).items():
        out['op ' + name] = 1000 * (seconds - before.get('op_seconds', {}).get(name, 0)) / batches
    return {k: round(v, 3) for k, v in out.items()}


def child_main(args):
    row = {'status': 'ok'}
    try:
        row.update(measure(args))
    except Skip as reason:
        row = {'status': 'skipped', 'error': str(reason)}
    except Exception as error:  # noqa: BLE001 - the row says what failed
        row = {'status': 'error', 'error': f'{type(error).__name__}: {error}'[:600]}
        traceback.print_exc()
    with open(args.result_file, 'w') as f:
        json.dump(row, f)
    sys.stdout.flush()
    os._exit(0)  # no pipeline teardown inside the next run's baseline wait


# ------------------------------------------------------------------------------------------------
# Parent: the plan, each run in a subprocess, sampled
def run_child(op, lib, args, gpu):
    """One run of (op, lib) in a process of its own, sampled as bench/peers.py samples its loaders
    (peers.run_sampled_child): peak host memory of the tree, NVML memory above the settled baseline."""
    result_file = tempfile.NamedTemporaryFile(suffix='.json', delete=False).name
    command = [sys.executable, os.path.abspath(__file__), '--child', '--op', op, '--lib', lib, '--images', args.images,
               '--device', args.device, '--batch', str(args.batch), '--threads', str(args.threads),
               '--prefetch', str(args.prefetch), '--warmup', str(args.warmup), '--seconds', str(args.seconds),
               '--result-file', result_file]
    row = {'op': op, 'lib': lib, 'device': args.device}
    return peers.run_sampled_child(command, result_file, row, args.warmup + 2 * args.seconds + args.child_timeout, gpu)


def estimate_s(runs, args, startup_s=STARTUP_S):
    """Seconds `runs` runs take: warm-up + window + start-up (imports, set-up, first batch) each."""
    return runs * (args.warmup + args.seconds + startup_s)


def op_rows(rows, op, lib):
    return [r for r in rows if r['op'] == op and r['lib'] == lib]


def section(run):
    """The Markdown section: bench/report.py's provenance header, the rows, stoker against DALI."""
    rows, fmt = run['rows'], report.fmt
    lines = report.provenance(run)
    if not run['meets_protocol']:
        lines.insert(0, '**NOT protocol rows** (a clock below 10 s warm-up, 30 s window, 3 repeats)\n')
    lines += [f"- operators: {', '.join(run['ops'])}; device {run['device']}; threads {run['threads']}, "
              f"prefetch_queue_depth {run['prefetch']}, batch {run['batch']}; source: fn.external_source(device="
              f"\"{'gpu' if run['device'] == 'cuda' else 'cpu'}\") fed the same {run['source_kind']} every iteration", '',
              '### Rows (median and range over the repeats)', '',
              '| operator | library | median img/s | range img/s | n | ms/batch | CPU cores busy | device MB | '
              'first batch s | SM % | output (sample 0) | status |', '|---|---|---:|---|---:|---:|---:|---:|---:|---:|---|---|']
    for op in run['ops']:
        for lib in LIBRARIES:
            g = op_rows(rows, op, lib)
            s = protocol.summary([r.get('images_per_s') for r in g])
            shape = next((f"{r.get('out_shape0')} {r.get('out_dtype')}" for r in g if r.get('status') == 'ok'), '–')
            lines.append(f"| {op} | {lib} | {fmt(s['median'])} | {fmt(s['min']) + '–' + fmt(s['max']) if s['n'] else '–'} | "
                         f"{s['n']} | {fmt(report.median_of(g, 'ms_per_batch'), '{:.2f}')} | "
                         f"{fmt(report.median_of(g, 'cpu_cores_busy'), '{:.2f}')} | {fmt(report.median_of(g, 'device_mem_used_mb'))} | "
                         f"{fmt(report.median_of(g, 'time_to_first_batch_s'), '{:.2f}')} | {fmt(report.median_of(g, 'gpu_util_mean'))} | "
                         f"{shape} | {report.status_text(g)} |")
    lines += ['', 'device MB: NVML memory used above the baseline (taken once the previous run\'s memory had gone '
              'back) over the run\'s whole process, CUDA context and source tensors included (the \'source\' row: '
              'the feed alone). CPU cores busy: CPU time of the run\'s process tree in the window / window. SM %: NVML\'s '
              'GPU utilisation over the window.', '',
              '### stoker against DALI, per operator (target >= 1.0x, issue 45)', '',
              '| operator | stoker median | DALI median | ratio | ranges | target 1.0x | note |', '|---|---:|---:|---:|---|---|---|']
    for op in run['ops']:
        a, b = (protocol.summary([r.get('images_per_s') for r in op_rows(rows, op, lib)]) for lib in LIBRARIES)
        ratio = a['median'] / b['median'] if a['median'] and b['median'] else None
        if min(a['n'], b['n']) >= 2:
            word = protocol.verdict(a, b) or 'not measured'
        else:
            word = 'one run each: no range, no verdict' if a['n'] and b['n'] else 'not measured'
        met = report.target_word(ratio, word, 1.0) if min(a['n'], b['n']) >= 2 else (
            '–' if ratio is None else f"median {'at or above' if ratio >= 1.0 else 'below'} 1.0x (no ranges)")
        shapes = {lib: next(((tuple(r['out_shape0'] or ()), r.get('out_dtype')) for r in op_rows(rows, op, lib)
                             if r.get('status') == 'ok'), None) for lib in LIBRARIES}
        notes = []
        if all(shapes.values()) and shapes['stoker'] != shapes['dali']:
            notes.append(f"outputs differ: stoker {shapes['stoker']}, DALI {shapes['dali']}")
        for lib in LIBRARIES:
            bad = [r for r in op_rows(rows, op, lib) if r.get('status') != 'ok']
            if bad:
                notes.append(f"{lib}: {bad[0].get('status')}: {bad[0].get('error', '')[:140]}")
        note = '; '.join(notes).replace('|', '/').replace('\n', ' ')
        lines.append(f"| {op} | {fmt(a['median'])} | {fmt(b['median'])} | {fmt(ratio, '{:.2f}x')} | {word} | {met} | {note} |")
    lines += ['', "ranges: 'win' = stoker's whole range above DALI's; 'overlap' = no claim either way; 'loss' = "
              "stoker's whole range below. Arguments of each operator (DALI's names, the same for both): "
              "bench/ops_micro.py OPS.", '']
    return '\n'.join(lines)


def resolve_ops(text):
    names = []
    for item in filter(None, text.replace(' ', ',').split(',')):
        for name in PRESETS.get(item, [item]):
            if name not in OPS:
                raise SystemExit(f"ops_micro: unknown operator {name!r} (--list shows them; presets: {', '.join(PRESETS)})")
            if name not in names:
                names.append(name)
    return names


def parse_arguments(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0], epilog=__doc__.split('\n\n', 1)[1],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--ops', default='all', help=f"comma-separated operators or presets ({', '.join(PRESETS)}); default all")
    parser.add_argument('--libs', default=','.join(LIBRARIES), help='stoker,dali (default both)')
    parser.add_argument('--out', default=os.environ.get('OUT', '.'), help='folder for run.json and results-section.md')
    parser.add_argument('--photos', default=os.path.join(os.path.dirname(os.path.abspath(__file__)), '.photos'),
                        help='photographs to cut the images from (default bench/.photos; synthetic when empty)')
    parser.add_argument('--image-seed', type=int, default=1)
    parser.add_argument('--threads', type=int, default=4, help='num_threads of both pipelines')
    parser.add_argument('--prefetch', type=int, default=2, help='prefetch_queue_depth of both pipelines')
    parser.add_argument('--budget', type=float, default=0, help='runs that would end after this many seconds are not started (0 = none)')
    parser.add_argument('--estimate', action='store_true', help='print the runs and the time they need, run nothing')
    parser.add_argument('--list', action='store_true', help='list the operators and their arguments')
    parser.add_argument('--child', action='store_true', help=argparse.SUPPRESS)
    parser.add_argument('--op', help=argparse.SUPPRESS)
    parser.add_argument('--lib', help=argparse.SUPPRESS)
    parser.add_argument('--images', help=argparse.SUPPRESS)
    parser.add_argument('--result-file', help=argparse.SUPPRESS)
    peers.add_timing_arguments(parser)
    args = parser.parse_args(argv)
    if not args.child:
        peers.resolve_device(args)
        args.op_list = resolve_ops(args.ops)
        args.lib_list = [l for l in args.libs.split(',') if l]
        for lib in args.lib_list:
            if lib not in LIBRARIES:
                parser.error(f'--libs {lib}: not one of {", ".join(LIBRARIES)}')
    return args


def main(argv=None):
    args = parse_arguments(argv)
    if args.child:
        return child_main(args)
    if args.list:
        for name, (path, arguments, kind, repeat) in OPS.items():
            print(f"{name:24s} fn.{path or 'external_source alone'}({', '.join(f'{k}={v!r}' for k, v in arguments.items())})"
                  f"{' on int32 labels' if kind == 'labels' else ''}{f' x{repeat} inputs' if repeat > 1 else ''}")
        return 0
    plan = [(op, lib) for op in args.op_list for lib in args.lib_list]
    clock = f'warm-up {args.warmup:g} s, window {args.seconds:g} s, {args.repeats} repeats'
    meets = protocol.is_protocol(args.warmup, args.seconds, args.repeats)
    total = estimate_s(len(plan) * args.repeats, args)
    print(f"ops_micro: {'' if meets else 'NOT protocol rows; '}{len(args.op_list)} operators x {len(args.lib_list)} "
          f"libraries x {args.repeats} repeats = {len(plan) * args.repeats} runs; {clock}; ~{total / 60:.1f} min "
          f"at {STARTUP_S:g} s start-up a run; order seed {args.order_seed}; device {args.device}", flush=True)
    if args.estimate:
        return 0
    started, gpu = time.time(), peers.GpuSampler()
    with tempfile.TemporaryDirectory(prefix='ops-micro-') as folder:
        images, data_note = make_images(args.batch, args.image_seed, args.photos)
        save_images(images, folder)
        args.images = folder
        print(f'ops_micro: input: {data_note}', flush=True)
        order = protocol.shuffled_order(list(range(len(plan))), args.repeats, args.order_seed)
        print('ops_micro: order: ' + ' '.join(f'{plan[i][0]}/{plan[i][1]}#{r}' for i, r in order), flush=True)
        rows, startup = [], STARTUP_S
        for position, (index, repeat) in enumerate(order):
            op, lib = plan[index]
            label = f'[{position + 1}/{len(order)}] {op:24s} {lib:7s}'
            if args.budget and time.time() + args.warmup + args.seconds + startup > started + args.budget:
                rows.append({'op': op, 'lib': lib, 'device': args.device, 'repeat': repeat, 'order_index': position,
                             'status': 'not run', 'error': 'time budget spent'})
                print(f'{label} not run (budget)', flush=True)
                continue
            row = {**run_child(op, lib, args, gpu), 'repeat': repeat, 'order_index': position}
            if row.get('status') == 'ok':
                startup = max(startup if position else 0.0, row['child_wall_s'] - row['warmup_s'] - row['seconds'])
            rows.append(row)
            text = (f"{row['images_per_s']:9.0f} img/s, {row['ms_per_batch']:.2f} ms/batch, {row['cpu_cores_busy']:.2f} cores"
                    + (f", {row['device_mem_used_mb']:.0f} MB device" if row.get('device_mem_used_mb') is not None else '')
                    if row.get('status') == 'ok' else f"{row['status']}: {row.get('error', '')[:200]}")
            if row.get('stoker_ms_per_batch'):
                text += ' [' + ', '.join(f'{k} {v:.2f}' for k, v in row['stoker_ms_per_batch'].items()) + ' ms/batch]'
            print(f'{label} {text}', flush=True)
    result = {'date': time.strftime('%Y-%m-%d %H:%M:%S %Z'), 'machine': peers.machine_description(args.stoker),
              'command': shlex.join([os.path.relpath(sys.argv[0])] + sys.argv[1:]),
              'environment': {k: v for k, v in sorted(os.environ.items()) if k.startswith(('STOKER_', 'CUDA_', 'DALI_'))
                              and k not in ('STOKER_CLI', 'STOKER_SOURCE_DIR')},
              'data_label': 'ops-micro', 'data_note': data_note, 'batch': args.batch, 'device': args.device,
              'threads': args.threads, 'prefetch': args.prefetch, 'ops': args.op_list, 'libs': args.lib_list,
              'source_kind': 'list of numpy arrays' if args.device == 'cpu' else
              next((r['source_tensors'] + ' CUDA tensors' for r in rows if r.get('source_tensors')), 'GPU tensors'),
              'seconds': args.seconds, 'warmup_s': args.warmup, 'repeats': args.repeats, 'meets_protocol': meets,
              'order_seed': args.order_seed, 'order': [{'op': plan[i][0], 'lib': plan[i][1], 'repeat': r} for i, r in order],
              'arguments': {op: {k: repr(v) for k, v in OPS[op][1].items()} for op in args.op_list},
              'rows': rows, 'wall_s': round(time.time() - started, 1)}
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, 'run.json'), 'w') as f:
        json.dump(result, f, indent=1)
    text = section(result)
    with open(os.path.join(args.out, 'results-section.md'), 'w') as f:
        f.write(text)
    print(text)
    return 0 if any(r.get('status') == 'ok' for r in rows) else 1


if __name__ == '__main__':
    sys.exit(main())
