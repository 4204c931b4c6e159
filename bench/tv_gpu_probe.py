#!/usr/bin/env python3
"""bench/tv_gpu_probe.py: why bench/peers.py measures torchvision's batched GPU JPEG decode
(decode_jpeg(list, device="cuda")) below what a single-threaded loop over preloaded bytes gets on
the same machine. Runs variants that change one thing at a time and prints one table. Not on
stoker's hot path; a diagnostic, run by hand on the GPU machine.

What torchvision does per call (torchvision/csrc/io/image/cuda/decode_jpegs_cuda.cpp): one global
decoder behind one global mutex (calls from several threads run one after the other), nvJPEG's
hardware backend; per image nvjpegGetImageInfo and an output torch::empty, then a
cudaStreamSynchronize of its own stream, per image nvjpegJpegStreamParseHeader +
nvjpegDecodeBatchedSupported; the supported images go to nvjpegDecodeBatchedInitialize(n) +
nvjpegDecodeBatched, the rest one by one through the decoupled hybrid path (Huffman on the CPU, a
stream sync per image); a final cudaStreamSynchronize; the caller's stream waits on an event. So a
call holds the host until the engines are done, and host work never overlaps engine work.

Variants (--list-variants): preloaded bytes decoded in a loop on the main thread (by file class,
batch size, read mode, fixed or varying batch size, one image per call, two decode threads);
peers.py's decode thread/stream arrangement fed from memory, by the 16 reader threads it used
before (the 6,200 img/s rows), and by its DataLoader reader processes now; the readers alone.
Each row: images/s, CPU cores busy (this process and its child processes, nvidia-smi left out),
mean JPEG-engine and SM utilization (nvidia-smi, sampled in a background thread), ms per decode
call, and for the peers.py arrangements the decode thread's share of time inside decode_jpeg and
its own CPU. A subprocess also asks nvJPEG (ctypes, the library torchvision loaded) which files its
batched hardware decode takes (nvjpegDecodeBatchedSupported), per file class.
Reading the table: baseline-b256 is what torchvision can do here; if peers-arrangement-preloaded
matches it and thread-readers-16 does not (decode thread in decode_jpeg well under 100%), the
reader threads starve the decode thread of the GIL; the class rows and the nvJPEG check say
whether the data itself (4:4:4 at quality ~96) or a one-by-one fallback costs the rest.

  usage: tv_gpu_probe.py --data /tmp/inet --seconds 3 --out /tmp/probe.json
         tv_gpu_probe.py --data /tmp/probe-set --classify-only      (no torch needed)
"""
import argparse, collections, json, os, platform, random, shutil, subprocess, sys, threading, time, traceback

HERE = os.path.dirname(os.path.abspath(__file__))
SOF_NAMES = {0xC0: 'baseline', 0xC1: 'extended', 0xC2: 'progressive', 0xC3: 'lossless', 0xC5: 'hierarchical',
             0xC6: 'hierarchical', 0xC7: 'hierarchical', 0xC9: 'arithmetic', 0xCA: 'arithmetic',
             0xCB: 'arithmetic', 0xCD: 'arithmetic', 0xCE: 'arithmetic', 0xCF: 'arithmetic'}
SAMPLING_NAMES = {(1, 1): '4:4:4', (2, 2): '4:2:0', (2, 1): '4:2:2', (1, 2): '4:4:0', (4, 1): '4:1:1', (4, 2): '4:1:0'}
NVJPEG_SUBSAMPLING = {0: '4:4:4', 1: '4:2:2', 2: '4:2:0', 3: '4:4:0', 4: '4:1:1', 5: '4:1:0', 6: 'gray', 7: '4:1:0V',
                      -1: 'unknown'}


# ------------------------------------------------------------------------------------------------
# JPEG headers, in Python (no torch): what kind of file each one is
def jpeg_header(data):
    """Walks the marker segments of `data` (bytes) up to the first scan. Returns a dict: sof (marker
    byte or None), components, sampling [(h, v) per component], width, height, restart_interval,
    exif, adobe_transform, error (None when the header reads)."""
    info = {'sof': None, 'components': 0, 'sampling': [], 'width': 0, 'height': 0, 'restart_interval': 0,
            'exif': False, 'adobe_transform': None, 'error': None}
    size = len(data)
    if size < 4 or data[0] != 0xFF or data[1] != 0xD8:
        info['error'] = 'no SOI marker'
        return info
    at = 2
    while at + 4 <= size:
        if data[at] != 0xFF:
            info['error'] = f'marker expected at byte {at}'
            break
        marker = data[at + 1]
        if marker == 0xFF:  # fill byte
            at += 1
            continue
        if marker == 0x01 or 0xD0 <= marker <= 0xD8:  # no length
            at += 2
            continue
        if marker in (0xD9, 0xDA):  # end of image, start of scan: the header is over
            break
        length = (data[at + 2] << 8) | data[at + 3]
        body = data[at + 4:at + 2 + length]
        if 0xC0 <= marker <= 0xCF and marker not in (0xC4, 0xC8, 0xCC):
            if info['sof'] is None and len(body) >= 6:
                count = body[5]
                info.update(sof=marker, height=(body[1] << 8) | body[2], width=(body[3] << 8) | body[4],
                            components=count,
                            sampling=[(body[7 + 3 * i] >> 4, body[7 + 3 * i] & 15)
                                      for i in range(count) if 7 + 3 * i < len(body)])
        elif marker == 0xDD and len(body) >= 2:
            info['restart_interval'] = (body[0] << 8) | body[1]
        elif marker == 0xE1 and body[:6] == b'Exif\x00\x00':
            info['exif'] = True
        elif marker == 0xEE and body[:5] == b'Adobe' and len(body) >= 12:
            info['adobe_transform'] = body[11]
        at += 2 + length
    if info['sof'] is None and info['error'] is None:
        info['error'] = 'no frame header before the first scan'
    return info


def subsampling_name(info):
    count = info['components']
    if count == 1:
        return 'gray'
    if count == 4:
        return 'ycck' if info['adobe_transform'] == 2 else 'cmyk'
    if count != 3 or len(info['sampling']) != 3:
        return f'{count}-components'
    if info['sampling'][1] != (1, 1) or info['sampling'][2] != (1, 1):
        return 'other'
    return SAMPLING_NAMES.get(info['sampling'][0], 'other')


def file_class(info):
    """One label per file: 'progressive', 'cmyk'/'ycck', the subsampling of a baseline/extended
    file ('4:4:4', '4:2:0', 'gray', ...), or 'other'/'bad'."""
    if info['error'] and info['sof'] is None:
        return 'bad'
    if info['sof'] == 0xC2:
        return 'progressive'
    if info['components'] == 4:
        return subsampling_name(info)
    if info['sof'] in (0xC0, 0xC1):
        return subsampling_name(info)
    return SOF_NAMES.get(info['sof'], 'other')


def batch_decodable(info):
    """What bench/peers.py sends to the batched GPU decode: SOF0/SOF1 with 1 or 3 components."""
    return info['sof'] in (0xC0, 0xC1) and info['components'] in (1, 3)


def list_jpegs(root, limit=0):
    paths = []
    for folder, _, names in sorted(os.walk(root)):
        paths.extend(os.path.join(folder, n) for n in sorted(names) if n.lower().endswith(('.jpg', '.jpeg')))
    return paths[:limit] if limit else paths


def read_bytes(path):
    with open(path, 'rb') as f:
        return f.read()


def classify(paths, peers=None):
    """Per-file header facts and a summary per class (count, share, mean KB / MP, features)."""
    files, summary = [], collections.OrderedDict()
    disagree = 0
    for path in paths:
        data = read_bytes(path)
        info = jpeg_header(data)
        label = file_class(info)
        ok = batch_decodable(info)
        if peers is not None and bool(peers.gpu_decodable(data)) != ok:
            disagree += 1
        files.append({'path': path, 'class': label, 'bytes': len(data), 'batch_decodable': ok,
                      'width': info['width'], 'height': info['height'], 'restart': bool(info['restart_interval']),
                      'exif': info['exif']})
    counts = collections.Counter(f['class'] for f in files)
    for label in sorted(counts, key=lambda c: (-counts[c], c)):
        members = [f for f in files if f['class'] == label]
        summary[label] = {
            'files': len(members), 'share': len(members) / max(1, len(files)),
            'mean_kb': sum(f['bytes'] for f in members) / len(members) / 1000,
            'mean_mp': sum(f['width'] * f['height'] for f in members) / len(members) / 1e6,
            'odd_dimensions': sum((f['width'] % 2) or (f['height'] % 2) for f in members),
            'with_restart_markers': sum(f['restart'] for f in members),
            'with_exif': sum(f['exif'] for f in members),
            'sent_to_batched_gpu_decode_by_peers': sum(f['batch_decodable'] for f in members)}
    return files, summary, (disagree if peers is not None else None)


def print_classes(summary, total, disagree):
    print(f'{"class":12s} {"files":>6s} {"share":>6s} {"mean KB":>8s} {"mean MP":>8s} {"odd dim":>7s} '
          f'{"restart":>7s} {"exif":>5s} {"to GPU":>6s}')
    for label, row in summary.items():
        print(f'{label:12s} {row["files"]:6d} {100 * row["share"]:5.1f}% {row["mean_kb"]:8.1f} {row["mean_mp"]:8.3f} '
              f'{row["odd_dimensions"]:7d} {row["with_restart_markers"]:7d} {row["with_exif"]:5d} '
              f'{row["sent_to_batched_gpu_decode_by_peers"]:6d}')
    print(f'{total} files' + ('' if disagree is None else
                               f'; peers.gpu_decodable disagrees with this classification on {disagree}'))


def load_peers(path):
    """bench/peers.py as a module (it imports only the standard library at the top), or None."""
    import importlib.util
    try:
        spec = importlib.util.spec_from_file_location('peers_under_probe', path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module
    except Exception as error:  # the harness rows say why
        print(f'probe: cannot import {path}: {error}', file=sys.stderr)
        return None


# ------------------------------------------------------------------------------------------------
# Measurements: CPU time, GPU utilization
def thread_cpu_seconds(native_id):
    """CPU seconds of one thread of this process (Linux), or None."""
    try:
        with open(f'/proc/self/task/{native_id}/stat') as f:
            fields = f.read().rsplit(')', 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf('SC_CLK_TCK')
    except (OSError, ValueError, IndexError):
        return None


def process_cpu_seconds():
    """CPU seconds of this process (all its threads) plus its live descendants (DataLoader workers,
    peers.py's reader processes), nvidia-smi left out. Reaped children are not counted."""
    times = os.times()
    total, ticks, me = times.user + times.system, os.sysconf('SC_CLK_TCK'), os.getpid()
    parents, stats = {}, {}
    for entry in os.listdir('/proc'):
        if not entry.isdigit():
            continue
        try:
            with open(f'/proc/{entry}/stat') as f:
                text = f.read()
        except OSError:
            continue
        name, fields = text[text.index('(') + 1:text.rindex(')')], text.rsplit(')', 1)[1].split()
        parents[int(entry)] = int(fields[1])
        stats[int(entry)] = (name, (int(fields[11]) + int(fields[12])) / ticks)
    for pid, (name, seconds) in stats.items():
        ancestor, hops = parents.get(pid), 0
        while ancestor and ancestor != me and hops < 64:
            ancestor, hops = parents.get(ancestor), hops + 1
        if ancestor == me and name != 'nvidia-smi':
            total += seconds
    return total


def _number(text):
    text = text.strip()
    try:
        return float(text)
    except ValueError:
        return None  # "[N/A]", "[Not Supported]"


class UtilizationSampler:
    """Samples JPEG-engine and SM utilization of one GPU in a background thread while a variant's
    window runs: nvidia-smi --query-gpu=utilization.jpeg,utilization.gpu, else utilization.gpu
    alone (older nvidia-smi), else pynvml, else nothing. `note` says which and why."""

    def __init__(self, gpu_index=0, interval=0.25):
        self.interval, self.gpu_index, self.query, self.note = interval, gpu_index, None, ''
        self._stop, self._thread, self._samples = threading.Event(), None, []
        if shutil.which('nvidia-smi'):
            refused = None
            for fields in (('utilization.jpeg', 'utilization.gpu'), ('utilization.gpu',)):
                values, error = self._smi(fields)
                if values is None:
                    refused = refused or error
                    self.note = f'nvidia-smi failed: {error}'
                    continue
                self.query = lambda fields=fields: self._as_dict(fields, self._smi(fields)[0])
                self.note = 'nvidia-smi ' + ','.join(fields)
                if len(fields) == 1:
                    self.note += f' (utilization.jpeg refused: {refused})'
                elif values[0] is None:
                    self.note += ' (utilization.jpeg reads N/A on this GPU/driver)'
                break
        if self.query is None:
            try:
                import pynvml
                pynvml.nvmlInit()
                handle = pynvml.nvmlDeviceGetHandleByIndex(gpu_index)
                def query():
                    try:
                        jpeg = float(pynvml.nvmlDeviceGetJpgUtilization(handle)[0])
                    except Exception:
                        jpeg = None
                    return {'jpeg': jpeg, 'gpu': float(pynvml.nvmlDeviceGetUtilizationRates(handle).gpu)}
                self.query, self.note = query, 'pynvml'
            except Exception as error:
                self.note += f'; pynvml unavailable ({type(error).__name__})'

    def _smi(self, fields):
        try:
            done = subprocess.run(['nvidia-smi', f'--id={self.gpu_index}', '--format=csv,noheader,nounits',
                                   '--query-gpu=' + ','.join(fields)], capture_output=True, text=True, timeout=10)
        except (OSError, subprocess.SubprocessError) as error:
            return None, str(error)
        if done.returncode != 0:
            return None, (done.stdout + done.stderr).strip()[:200]
        parts = done.stdout.strip().splitlines()[0].split(',') if done.stdout.strip() else []
        if len(parts) != len(fields):
            return None, f'unexpected output {done.stdout.strip()[:100]!r}'
        return [_number(p) for p in parts], None

    @staticmethod
    def _as_dict(fields, values):
        values = values or [None] * len(fields)
        named = dict(zip(('jpeg', 'gpu') if len(fields) == 2 else ('gpu',), values))
        return {'jpeg': named.get('jpeg'), 'gpu': named.get('gpu')}

    def begin(self):
        self._samples, self._stop = [], threading.Event()
        if self.query is None:
            return
        def loop():
            while not self._stop.is_set():
                try:
                    self._samples.append(self.query())
                except Exception:
                    pass
                self._stop.wait(self.interval)
        self._thread = threading.Thread(target=loop, daemon=True, name='probe-sampler')
        self._thread.start()

    def end(self):
        self._stop.set()
        if self._thread:
            self._thread.join(timeout=15)
            self._thread = None
        result = {'util_samples': len(self._samples)}
        for key in ('jpeg', 'gpu'):
            values = [s[key] for s in self._samples if s.get(key) is not None]
            if values:
                result[f'{key}_util_mean'] = sum(values) / len(values)
                result[f'{key}_util_max'] = max(values)
        return result


# ------------------------------------------------------------------------------------------------
# The variants
class Probe:
    def __init__(self, args, files, peers):
        import torch, torchvision
        from torchvision.io import ImageReadMode, decode_jpeg
        self.torch, self.torchvision, self.decode_jpeg, self.ReadMode = torch, torchvision, decode_jpeg, ImageReadMode
        self.args, self.files, self.peers = args, files, peers
        self.sampler = UtilizationSampler(args.gpu_index)
        started = time.perf_counter()
        for f in files:  # preloaded: the timed loops never touch the file system
            f['tensor'] = torch.frombuffer(bytearray(read_bytes(f['path'])), dtype=torch.uint8)
        self.preload_s = time.perf_counter() - started

    # sets of preloaded tensors
    def pool(self, which):
        if which == 'all':
            chosen = self.files
        elif which == 'no-cmyk':
            chosen = [f for f in self.files if f['batch_decodable'] or f['class'] == 'progressive']
        elif which == 'baseline':
            chosen = [f for f in self.files if f['batch_decodable']]
        else:  # a class name
            chosen = [f for f in self.files if f['batch_decodable'] and f['class'] == which]
        return [f['tensor'] for f in chosen]

    def batches(self, pool, size):
        """A function returning the next list of `size` tensors: shuffled passes over `pool`,
        repeating files when the pool is smaller than a batch."""
        if not pool:
            raise RuntimeError('no files of this kind in the data set')
        order, rng, state = list(range(len(pool))), random.Random(7), {'at': len(pool)}
        def next_batch(count=size):
            out = []
            while len(out) < count:
                if state['at'] >= len(order):
                    rng.shuffle(order)
                    state['at'] = 0
                take = min(count - len(out), len(order) - state['at'])
                out.extend(pool[i] for i in order[state['at']:state['at'] + take])
                state['at'] += take
            return out
        return next_batch

    def timed(self, step, warmup=2, counters=None):
        """Runs step() (returns images done) `warmup` times, then for args.seconds; one device
        synchronize before and after the window. counters(): a dict of running totals whose
        change over the window goes in the row."""
        torch = self.torch
        for _ in range(warmup):
            step()
        torch.cuda.synchronize()
        before = dict(counters()) if counters else {}
        self.sampler.begin()
        cpu0, start, images, calls = process_cpu_seconds(), time.perf_counter(), 0, 0
        while time.perf_counter() - start < self.args.seconds:
            images += step()
            calls += 1
        torch.cuda.synchronize()
        wall = time.perf_counter() - start
        cpu = process_cpu_seconds() - cpu0
        row = {'images': images, 'seconds': wall, 'images_per_s': images / wall, 'cpu_cores': cpu / wall,
               'calls': calls, 'ms_per_call': 1000 * wall / max(1, calls)}
        row.update(self.sampler.end())
        if counters:
            after = counters()
            for key, value in after.items():
                if isinstance(value, (int, float)) and isinstance(before.get(key), (int, float)):
                    row['window_' + key] = value - before[key]
        return row

    def decode_loop(self, which, size, mode='RGB', device='cuda', vary=None, same_list=False):
        decode, read_mode = self.decode_jpeg, getattr(self.ReadMode, mode)
        pool = self.pool(which)
        next_batch = self.batches(pool, size)
        fixed = next_batch() if same_list else None
        sizes = vary or [size]
        turn = {'i': 0}
        def step():
            if fixed is not None:
                batch = fixed
            else:
                batch = next_batch(sizes[turn['i'] % len(sizes)])
                turn['i'] += 1
            decode(batch, mode=read_mode, device=device)
            return len(batch)
        row = self.timed(step)
        row.update(pool_files=len(pool), batch_sizes=sizes if vary else [len(fixed) if fixed else size])
        return row

    def per_image(self):
        decode, rgb = self.decode_jpeg, self.ReadMode.RGB
        next_batch = self.batches(self.pool('baseline'), 1)
        def step():
            decode(next_batch()[0], mode=rgb, device='cuda')
            return 1
        return self.timed(step, warmup=20)

    def two_threads(self):
        """Two Python threads calling the batched decode at once: torchvision's global mutex runs
        them one after the other, so this shows whether a second caller buys anything."""
        torch, decode, rgb = self.torch, self.decode_jpeg, self.ReadMode.RGB
        pool = self.pool('baseline')
        stop, done, errors = threading.Event(), [0, 0], []
        def worker(slot):
            next_batch = self.batches(pool, self.args.batch)
            try:
                while not stop.is_set():
                    decode(next_batch(), mode=rgb, device='cuda')
                    done[slot] += self.args.batch
            except Exception as error:
                errors.append(repr(error))
        threads = [threading.Thread(target=worker, args=(i,), daemon=True) for i in range(2)]
        for t in threads:
            t.start()
        time.sleep(0.5)
        torch.cuda.synchronize()
        self.sampler.begin()
        cpu0, start, before = process_cpu_seconds(), time.perf_counter(), sum(done)
        time.sleep(self.args.seconds)
        images, wall = sum(done) - before, time.perf_counter() - start
        cpu = process_cpu_seconds() - cpu0
        stop.set()
        for t in threads:
            t.join(timeout=30)
        row = {'images': images, 'seconds': wall, 'images_per_s': images / wall, 'cpu_cores': cpu / wall}
        row.update(self.sampler.end())
        if errors:
            raise RuntimeError(errors[0])
        return row

    # peers.py's own functions, measured with the decode call timed on the decode thread
    def need_peers(self):
        if self.peers is None:
            raise RuntimeError('bench/peers.py could not be imported (see stderr)')
        if len(self.files) < self.args.batch:  # its epochs would hold no batch: it would spin forever
            raise RuntimeError(f'{len(self.files)} files: fewer than a batch of {self.args.batch}')
        return self.peers

    def peers_arrangement(self, workers, feed):
        """peers.gpu_decoded_batches (decode thread, own stream, queue, record_stream) fed by
        feed: 'peers' (its own reader), 'preloaded' (memory) or 'threads' (the thread readers it had
        before, reproduced by thread_encoded_batches)."""
        peers, torch = self.need_peers(), self.torch
        from types import SimpleNamespace
        args = SimpleNamespace(data=self.args.data, workers=workers, batch=self.args.batch)
        stats = {'in_decode_s': 0.0, 'decode_calls': 0, 'gpu_images': 0, 'cpu_fallback_images': 0,
                 'decoder_thread_cpu_s': 0.0, 'tid': None}
        original_decode, original_batches = peers.decode_on_gpu, peers.encoded_batches
        def timed_decode(items):
            stats['tid'] = threading.get_native_id()
            start = time.perf_counter()
            try:
                return original_decode(items)
            finally:
                stats['in_decode_s'] += time.perf_counter() - start
                stats['decode_calls'] += 1
                on_gpu = sum(1 for data, _ in items if data is not None)
                stats['gpu_images'] += on_gpu
                stats['cpu_fallback_images'] += len(items) - on_gpu
        def memory_batches(_args):
            next_batch = self.batches(self.pool('baseline'), args.batch)
            labels = torch.zeros(args.batch, dtype=torch.int64)
            while True:
                yield [(t, None) for t in next_batch()], labels
        def counters():
            snapshot = dict(stats)
            if stats['tid'] is not None:
                snapshot['decoder_thread_cpu_s'] = thread_cpu_seconds(stats['tid']) or 0.0
            snapshot.pop('tid')
            return snapshot
        peers.decode_on_gpu = timed_decode
        if feed == 'preloaded':
            peers.encoded_batches = memory_batches
        elif feed == 'threads':
            peers.encoded_batches = lambda a: thread_encoded_batches(peers, a)
        try:
            batches = peers.gpu_decoded_batches(args)
            def step():
                images, _ = next(batches)
                return len(images)
            row = self.timed(step, warmup=4, counters=counters)
        finally:  # the old decode thread blocks on its full queue from here on
            peers.decode_on_gpu, peers.encoded_batches = original_decode, original_batches
        wall = row['seconds']
        row['decode_thread_in_decode_share'] = row.pop('window_in_decode_s', 0.0) / wall
        row['decoder_thread_cores'] = row.pop('window_decoder_thread_cpu_s', 0.0) / wall
        calls = max(1, row.get('window_decode_calls', 0))
        row['ms_per_decode_call'] = 1000 * row['decode_thread_in_decode_share'] * wall / calls
        row['gpu_images_per_call'] = row.get('window_gpu_images', 0) / calls
        return row

    def readers_only(self, workers, feed):
        peers = self.need_peers()
        from types import SimpleNamespace
        args = SimpleNamespace(data=self.args.data, workers=workers, batch=self.args.batch)
        batches = thread_encoded_batches(peers, args) if feed == 'threads' else peers.encoded_batches(args)
        def step():
            items, _ = next(batches)
            return len(items)
        return self.timed(step, warmup=4)

    def dataloader_processes(self, workers):
        """A DataLoader whose worker processes read a whole batch each, decode the few files the
        batched GPU decode does not take on the CPU (as peers.py's readers do), and hand the rest
        over as one packed uint8 tensor; the main thread cuts it into views and decodes."""
        torch, decode, rgb = self.torch, self.decode_jpeg, self.ReadMode.RGB
        dataset = PackedBatches([f['path'] for f in self.files], self.args.batch)
        loader = torch.utils.data.DataLoader(dataset, batch_size=None, num_workers=workers, prefetch_factor=4,
                                             persistent_workers=True)
        iterator = iter(loader)
        def step():
            packed, sizes, _, cpu_images = next(iterator)
            sizes = sizes.tolist()
            encoded, at = [], 0
            for size in sizes:
                encoded.append(packed[at:at + size])
                at += size
            decoded = decode(encoded, mode=rgb, device='cuda') if encoded else []
            uploaded = [image.cuda(non_blocking=True) for image in cpu_images]
            return len(decoded) + len(uploaded)
        try:
            row = self.timed(step, warmup=4)
        finally:
            try:
                iterator._shutdown_workers()
            except Exception:
                pass
        return row


def thread_encoded_batches(peers, args):
    """peers.py's reader before it moved to processes (commit df27157): args.workers threads, each
    batch cut into one task per thread (open/fstat/readinto into a bytearray, torch.frombuffer,
    marker walk, CPU decode of progressive/CMYK), READ_AHEAD_BATCHES + 1 batches in flight, driven
    from the decode thread. Yields what peers.encoded_batches yields."""
    import torch
    from concurrent.futures import ThreadPoolExecutor
    samples = peers.image_folder_samples(args.data)
    pool = ThreadPoolExecutor(max_workers=args.workers, thread_name_prefix='probe-reader')
    share = -(-args.batch // args.workers)
    def read(paths):
        items = []
        for path in paths:
            with open(path, 'rb') as f:
                data = bytearray(os.fstat(f.fileno()).st_size)
                got = f.readinto(data)
            if got < len(data):
                del data[got:]
            encoded = torch.frombuffer(data, dtype=torch.uint8) if data else torch.empty(0, dtype=torch.uint8)
            items.append((encoded, None) if peers.gpu_decodable(data) else (None, peers.decode_rgb_uint8(encoded)))
        return items
    def batch_orders():
        order, rng = list(range(len(samples))), random.Random(42)
        while True:
            rng.shuffle(order)
            for start in range(0, len(order) - args.batch + 1, args.batch):
                yield [samples[i] for i in order[start:start + args.batch]]
    def submit(chosen):
        paths = [p for p, _ in chosen]
        tasks = [pool.submit(read, paths[i:i + share]) for i in range(0, len(paths), share)]
        return tasks, torch.tensor([label for _, label in chosen])
    orders, in_flight = batch_orders(), collections.deque()
    while True:
        while len(in_flight) < 3:
            in_flight.append(submit(next(orders)))
        tasks, labels = in_flight.popleft()
        yield [item for task in tasks for item in task.result()], labels


class PackedBatches:
    """Dataset of whole batches (item i = batch i, files drawn at random): (packed bytes of the
    files the batched GPU decode takes, their sizes, positions of the others, the others decoded
    on the CPU as CHW uint8 RGB)."""

    def __init__(self, paths, batch):
        self.paths, self.batch = paths, batch

    def __len__(self):
        return 1 << 30

    def __getitem__(self, index):
        import torch
        from torchvision.io import ImageReadMode, decode_jpeg
        rng = random.Random(index)
        chosen = [rng.randrange(len(self.paths)) for _ in range(self.batch)]
        blobs, sizes, cpu_positions, cpu_images = [], [], [], []
        for position, i in enumerate(chosen):
            data = read_bytes(self.paths[i])
            if batch_decodable(jpeg_header(data)):
                blobs.append(data)
                sizes.append(len(data))
            else:
                cpu_positions.append(position)
                try:
                    cpu_images.append(decode_jpeg(torch.frombuffer(bytearray(data), dtype=torch.uint8),
                                                  mode=ImageReadMode.RGB))
                except RuntimeError:
                    cpu_images.append(torch.zeros(3, 8, 8, dtype=torch.uint8))  # CMYK refused: a stand-in
        packed = torch.frombuffer(bytearray(b''.join(blobs)), dtype=torch.uint8).clone() if blobs \
            else torch.empty(0, dtype=torch.uint8)
        return packed, torch.tensor(sizes, dtype=torch.int64), cpu_positions, cpu_images


VARIANTS = [  # name, what it isolates; run in this order (risky ones last)
    ('baseline-b256', 'preloaded, main thread, decode_jpeg(list of 256 baseline/extended files) in a loop: the reference'),
    ('444-b256', 'as baseline-b256, 4:4:4 files only'),
    ('420-b256', 'as baseline-b256, 4:2:0 files only'),
    ('gray-b256', 'as baseline-b256, grayscale files only (repeated: the set has few)'),
    ('no-cmyk-b256', 'baseline + progressive files: torchvision sends progressive ones one by one down its hybrid path'),
    ('baseline-b64', 'batch of 64'),
    ('baseline-b1024', 'batch of 1024'),
    ('baseline-b256-unchanged', 'mode=ImageReadMode.UNCHANGED instead of RGB'),
    ('baseline-b256-same-list', 'the same 256 tensors every call (fixed composition and size)'),
    ('baseline-varying-size', 'batch sizes 256, 250, 253, 247 in turn (as when peers.py takes a few files out)'),
    ('per-image', 'one decode_jpeg(tensor, device="cuda") per image'),
    ('two-decode-threads', 'two threads calling decode_jpeg(list of 256) at once (torchvision has one global mutex)'),
    ('peers-arrangement-preloaded', "peers.py's decode thread + own stream + queue + record_stream, fed from memory"),
    ('dataloader-procs-8', '8 DataLoader worker processes read and pack whole batches (no pinning); main thread decodes'),
    ('thread-readers-only-16', "peers.py's former reader alone: 16 threads (files/s)"),
    ('peers-readers-only-16', "peers.py's reader alone: 16 worker processes, packed + pinned batches (files/s)"),
    ('thread-readers-16', "peers.py's decode arrangement fed by its former 16 reader threads: decode-tv-gpu@16 before the fix"),
    ('thread-readers-4', 'the same with 4 reader threads'),
    ('peers-harness-16', 'peers.py gpu_decoded_batches as decode-tv-gpu@16 runs it now (16 reader processes)'),
    ('peers-harness-4', 'the same with 4 reader processes'),
    ('all-b256', 'every file, CMYK included, as a naive user passes them (may fail: the row says how)'),
]


def run_variant(probe, name):
    b = probe.args.batch
    table = {
        'baseline-b256': lambda: probe.decode_loop('baseline', b),
        '444-b256': lambda: probe.decode_loop('4:4:4', b),
        '420-b256': lambda: probe.decode_loop('4:2:0', b),
        'gray-b256': lambda: probe.decode_loop('gray', b),
        'no-cmyk-b256': lambda: probe.decode_loop('no-cmyk', b),
        'baseline-b64': lambda: probe.decode_loop('baseline', 64),
        'baseline-b1024': lambda: probe.decode_loop('baseline', 1024),
        'baseline-b256-unchanged': lambda: probe.decode_loop('baseline', b, mode='UNCHANGED'),
        'baseline-b256-same-list': lambda: probe.decode_loop('baseline', b, same_list=True),
        'baseline-varying-size': lambda: probe.decode_loop('baseline', b, vary=[b, b - 6, b - 3, b - 9]),
        'per-image': probe.per_image,
        'two-decode-threads': probe.two_threads,
        'peers-arrangement-preloaded': lambda: probe.peers_arrangement(16, 'preloaded'),
        'dataloader-procs-8': lambda: probe.dataloader_processes(8),
        'thread-readers-only-16': lambda: probe.readers_only(16, 'threads'),
        'peers-readers-only-16': lambda: probe.readers_only(16, 'peers'),
        'thread-readers-16': lambda: probe.peers_arrangement(16, 'threads'),
        'thread-readers-4': lambda: probe.peers_arrangement(4, 'threads'),
        'peers-harness-16': lambda: probe.peers_arrangement(16, 'peers'),
        'peers-harness-4': lambda: probe.peers_arrangement(4, 'peers'),
        'all-b256': lambda: probe.decode_loop('all', b),
    }
    return table[name]()


# ------------------------------------------------------------------------------------------------
# nvJPEG's own answer (subprocess: a ctypes mistake must not take the probe down)
def support_check_main(args):
    """Child mode: loads the libnvjpeg torchvision uses, asks its hardware backend which files the
    batched decode takes. Prints one JSON object."""
    import ctypes, glob
    result = {}
    try:
        import torch
        from torchvision.io import decode_jpeg
        paths = list_jpegs(args.data, args.max_files)
        first = next(p for p in paths if batch_decodable(jpeg_header(read_bytes(p))))
        decode_jpeg([torch.frombuffer(bytearray(read_bytes(first)), dtype=torch.uint8)], device='cuda')
        torch.cuda.synchronize()
        with open('/proc/self/maps') as f:
            loaded = sorted({line.split()[-1] for line in f if 'nvjpeg' in line.split()[-1]})
        candidates = loaded[:]
        for root in sys.path:
            candidates += sorted(glob.glob(os.path.join(root, 'torchvision*', '*nvjpeg*.so*')))
            candidates += sorted(glob.glob(os.path.join(root, 'nvidia', '*', 'lib', 'libnvjpeg.so*')))
        candidates += ['libnvjpeg.so.13', 'libnvjpeg.so.12', 'libnvjpeg.so']
        result['loaded_by_torchvision'] = loaded
        lib = None
        for path in candidates:
            try:
                lib = ctypes.CDLL(path)
                lib.nvjpegCreateEx
                result['library'] = path
                break
            except (OSError, AttributeError):
                lib = None
        if lib is None:
            raise RuntimeError(f'no libnvjpeg found (tried {candidates[:6]})')
        vp, ip, up = ctypes.c_void_p, ctypes.POINTER(ctypes.c_int), ctypes.POINTER(ctypes.c_uint)
        lib.nvjpegGetProperty.argtypes = [ctypes.c_int, ip]
        lib.nvjpegCreateEx.argtypes = [ctypes.c_int, vp, vp, ctypes.c_uint, ctypes.POINTER(vp)]
        lib.nvjpegJpegStreamCreate.argtypes = [vp, ctypes.POINTER(vp)]
        lib.nvjpegJpegStreamParseHeader.argtypes = [vp, ctypes.c_char_p, ctypes.c_size_t, vp]
        lib.nvjpegDecodeBatchedSupported.argtypes = [vp, vp, ip]
        lib.nvjpegGetImageInfo.argtypes = [vp, ctypes.c_char_p, ctypes.c_size_t, ip, ip, ip, ip]
        version = []
        for prop in (0, 1, 2):
            value = ctypes.c_int(-1)
            lib.nvjpegGetProperty(prop, ctypes.byref(value))
            version.append(value.value)
        result['nvjpeg_version'] = '.'.join(map(str, version))
        handle = vp()
        status = lib.nvjpegCreateEx(3, None, None, 0, ctypes.byref(handle))  # NVJPEG_BACKEND_HARDWARE
        result['hardware_backend_status'] = status
        if status != 0:
            raise RuntimeError(f'nvjpegCreateEx(NVJPEG_BACKEND_HARDWARE) returned {status}')
        try:
            engines, cores = ctypes.c_uint(0), ctypes.c_uint(0)
            lib.nvjpegGetHardwareDecoderInfo.argtypes = [vp, up, up]
            if lib.nvjpegGetHardwareDecoderInfo(handle, ctypes.byref(engines), ctypes.byref(cores)) == 0:
                result['hardware_engines'], result['cores_per_engine'] = engines.value, cores.value
        except AttributeError:
            pass
        stream = vp()
        if lib.nvjpegJpegStreamCreate(handle, ctypes.byref(stream)) != 0:
            raise RuntimeError('nvjpegJpegStreamCreate failed')
        per_class, examples = {}, {}
        for path in paths:
            data = read_bytes(path)
            label = file_class(jpeg_header(data))
            row = per_class.setdefault(label, collections.Counter())
            row['files'] += 1
            channels, subsampling = ctypes.c_int(0), ctypes.c_int(-9)
            widths, heights = (ctypes.c_int * 4)(), (ctypes.c_int * 4)()
            info_status = lib.nvjpegGetImageInfo(handle, data, len(data), ctypes.byref(channels),
                                                 ctypes.byref(subsampling), widths, heights)
            row['nvjpeg_sees_' + (NVJPEG_SUBSAMPLING.get(subsampling.value, str(subsampling.value))
                                  if info_status == 0 else f'info_status_{info_status}')] += 1
            if lib.nvjpegJpegStreamParseHeader(handle, data, len(data), stream) != 0:
                row['parse_header_failed'] += 1  # torchvision ignores this status: such a file goes one by one
                continue
            supported = ctypes.c_int(-1)
            lib.nvjpegDecodeBatchedSupported(handle, stream, ctypes.byref(supported))
            key = 'hardware_batched' if supported.value == 0 else 'one_by_one_hybrid'
            row[key] += 1
            if key == 'one_by_one_hybrid' and label not in ('progressive', 'cmyk', 'ycck'):
                examples.setdefault(label, path)
        result['per_class'] = {label: dict(counts) for label, counts in per_class.items()}
        result['unexpected_one_by_one_examples'] = examples
    except Exception as error:
        result['error'] = f'{type(error).__name__}: {error}'
    print('SUPPORT-JSON ' + json.dumps(result), flush=True)


def run_support_check(args):
    command = [sys.executable, os.path.abspath(__file__), '--support-check', '--data', args.data,
               '--max-files', str(args.max_files)]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=120)
    except subprocess.TimeoutExpired:
        return {'error': 'timed out after 120 s'}
    for line in done.stdout.splitlines():
        if line.startswith('SUPPORT-JSON '):
            return json.loads(line[len('SUPPORT-JSON '):])
    return {'error': f'exit status {done.returncode}: {(done.stdout + done.stderr).strip()[-500:]}'}


def print_support(support):
    if 'error' in support and 'per_class' not in support:
        print(f'nvJPEG support check: {support["error"]}')
        return
    print(f'nvJPEG {support.get("nvjpeg_version")} ({support.get("library")}), hardware engines '
          f'{support.get("hardware_engines", "?")}; which files nvjpegDecodeBatchedSupported takes:')
    for label, counts in support.get('per_class', {}).items():
        seen = ', '.join(f'{k[len("nvjpeg_sees_"):]} {v}' for k, v in counts.items() if k.startswith('nvjpeg_sees_'))
        print(f'  {label:12s} {counts.get("files", 0):5d} files: hardware batch {counts.get("hardware_batched", 0)}, '
              f'one by one (hybrid) {counts.get("one_by_one_hybrid", 0)}, header parse failed '
              f'{counts.get("parse_header_failed", 0)}; GetImageInfo says {seen}')
    if support.get('error'):
        print(f'  (stopped: {support["error"]})')


# ------------------------------------------------------------------------------------------------
def environment():
    info = {'host': platform.node(), 'python': platform.python_version(), 'cpus': os.cpu_count(),
            'cpus_allowed': len(os.sched_getaffinity(0)) if hasattr(os, 'sched_getaffinity') else None,
            'gil_switch_interval_s': sys.getswitchinterval()}
    try:
        import torch, torchvision
        info.update(torch=torch.__version__, torchvision=torchvision.__version__, torch_cuda=torch.version.cuda)
        if torch.cuda.is_available():
            info['gpu'] = torch.cuda.get_device_name(0)
    except Exception as error:
        info['torch'] = f'not importable ({error})'
    if shutil.which('nvidia-smi'):
        try:
            info['driver'] = subprocess.run(['nvidia-smi', '--query-gpu=driver_version', '--format=csv,noheader'],
                                            capture_output=True, text=True, timeout=10).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            pass
    return info


def print_table(rows):
    print(f'\n{"variant":30s} {"images":>8s} {"img/s":>8s} {"cores":>6s} {"jpeg %":>7s} {"sm %":>5s} '
          f'{"ms/call":>8s}  notes')
    for row in rows:
        if row.get('status') != 'ok':
            print(f'{row["variant"]:30s} {row.get("status", "?")}: {row.get("error", "")[:150]}')
            continue
        def num(key, fmt):
            return format(row[key], fmt) if row.get(key) is not None else '-'
        notes = []
        if 'decode_thread_in_decode_share' in row:
            notes.append(f'decode thread in decode_jpeg {100 * row["decode_thread_in_decode_share"]:.0f}%, '
                         f'its CPU {row["decoder_thread_cores"]:.2f} cores, {row["ms_per_decode_call"]:.1f} ms/call, '
                         f'{row["gpu_images_per_call"]:.1f} GPU images/call')
        if 'pool_files' in row:
            notes.append(f'{row["pool_files"]} files')
        print(f'{row["variant"]:30s} {row["images"]:8d} {row["images_per_s"]:8.0f} {num("cpu_cores", ".2f"):>6s} '
              f'{num("jpeg_util_mean", ".1f"):>7s} {num("gpu_util_mean", ".1f"):>5s} {num("ms_per_call", ".2f"):>8s}  '
              + '; '.join(notes))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0], epilog=__doc__.split('\n\n', 1)[1],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--data', help='image-folder tree of .jpg files (required but for --list-variants)')
    parser.add_argument('--seconds', type=float, default=3.0, help='measured seconds per variant (after its warm-up)')
    parser.add_argument('--batch', type=int, default=256)
    parser.add_argument('--out', help='JSON file for the rows (rewritten after every variant)')
    parser.add_argument('--variants', default='', help='comma-separated names to run (default: all)')
    parser.add_argument('--list-variants', action='store_true')
    parser.add_argument('--classify-only', action='store_true', help='classify the files and stop (no torch needed)')
    parser.add_argument('--no-support-check', action='store_true', help="skip asking nvJPEG which files it batches")
    parser.add_argument('--max-files', type=int, default=0, help='use only the first N files (0: all)')
    parser.add_argument('--gpu-index', type=int, default=0, help='nvidia-smi index of the GPU torch uses')
    parser.add_argument('--peers', default=os.path.join(HERE, 'peers.py'), help='the harness to import')
    parser.add_argument('--support-check', action='store_true', help=argparse.SUPPRESS)
    args = parser.parse_args()

    if args.list_variants:
        for name, what in VARIANTS:
            print(f'{name:30s} {what}')
        return 0
    if not args.data or not os.path.isdir(args.data):
        parser.error('--data must name a folder of .jpg files')
    if args.support_check:
        support_check_main(args)
        return 0
    names = [n for n in args.variants.split(',') if n] or [name for name, _ in VARIANTS]
    unknown = [n for n in names if n not in dict(VARIANTS)]
    if unknown:
        parser.error(f'unknown variants {unknown} (see --list-variants)')

    suite_start = time.perf_counter()
    paths = list_jpegs(args.data, args.max_files)
    if not paths:
        parser.error(f'no .jpg files under {args.data}')
    peers = load_peers(args.peers)
    files, summary, disagree = classify(paths, peers)
    print_classes(summary, len(files), disagree)
    result = {'date': time.strftime('%Y-%m-%d %H:%M:%S %Z'), 'command': ' '.join(sys.argv), 'data': args.data,
              'seconds_per_variant': args.seconds, 'batch': args.batch, 'classes': summary,
              'peers_classification_disagreements': disagree, 'rows': []}

    def write():
        if args.out:
            os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
            with open(args.out, 'w') as f:
                json.dump(result, f, indent=1)

    if args.classify_only:
        result['files'] = [{k: v for k, v in f.items()} for f in files]
        write()
        return 0

    result['environment'] = environment()
    print('environment: ' + ', '.join(f'{k} {v}' for k, v in result['environment'].items()))
    if not args.no_support_check:
        result['nvjpeg_support'] = run_support_check(args)
        print_support(result['nvjpeg_support'])
    write()
    try:
        import torch
        if not torch.cuda.is_available():
            raise RuntimeError('torch sees no CUDA device')
        probe = Probe(args, files, peers)
        result['preload_s'] = probe.preload_s
        result['utilization_source'] = probe.sampler.note
        print(f'utilization from: {probe.sampler.note}; preloaded {len(files)} files in {probe.preload_s:.1f} s')
        warm = probe.batches(probe.pool('baseline'), args.batch)
        for _ in range(3):  # creates torchvision's decoder and grows nvJPEG's buffers
            probe.decode_jpeg(warm(), mode=probe.ReadMode.RGB, device='cuda')
        torch.cuda.synchronize()
    except Exception as error:
        result['error'] = f'{type(error).__name__}: {error}'
        print(f'probe: cannot measure: {result["error"]}')
        traceback.print_exc()
        write()
        return 1

    for name in names:
        row = {'variant': name, 'description': dict(VARIANTS)[name]}
        try:
            row.update(run_variant(probe, name))
            row['status'] = 'ok'
            line = f'{row["images_per_s"]:8.0f} img/s, {row.get("cpu_cores", 0):.2f} cores, ' \
                   f'jpeg {row.get("jpeg_util_mean", float("nan")):.0f}%'
        except Exception as error:
            probe.sampler.end()
            row.update(status='error', error=f'{type(error).__name__}: {error}'[:500])
            line = row['error'][:160]
            try:
                torch.cuda.synchronize()
            except Exception:
                pass
        result['rows'].append(row)
        print(f'{name:30s} {line}', flush=True)
        write()
    result['total_s'] = time.perf_counter() - suite_start
    print_table(result['rows'])
    print(f'\ntotal {result["total_s"]:.0f} s' + (f'; rows in {args.out}' if args.out else ''))
    write()
    return 0


if __name__ == '__main__':
    sys.exit(main())
