#!/usr/bin/env python3
"""bench/video_peers.py: the video measurement: stoker's readers.video CPU and GPU paths against
PyAV, TorchCodec (CPU and CUDA) and DALI at the same thread count, under the protocol of
bench/protocol.py. Not on stoker's hot path; needs numpy, PyAV (`av`) for the PyAV rows and the
keyframe index (or a clips.json beside the clips: --write-index), torch for the GPU peer rows.

The same work for every loader: sequences of 16 consecutive frames (stride 1), the sequences that
start at 0, 16, 32, ... of each clip (readers.video's default step), visited in a shuffled order
(a new permutation each epoch), decoded to RGB uint8 [16, H, W, 3] and delivered to the consumer
in batches of --batch sequences, each batch one [B, 16, H, W, 3] array written in place by the
workers (as stoker's workers write into the batch), two batches in flight (stoker's prefetch 2).

Rows (loaders):
  stoker-cpu     `stoker bench --device cpu --threads N --no-digest --json` on a readers.video
                 pipeline file (its own clock, same rules as below)
  pyav-threads   N Python threads; each decodes one sequence at a time: seek to the keyframe at or
                 before the sequence's first frame (keyframe index built once at start-up), decode
                 forward, frame.to_ndarray('rgb24') into the batch; one libavcodec thread per
                 decoder (thread_count 1), as stoker's CPU path; PyAV releases the GIL in decode
  pyav-procs     the same in N worker processes (fork) writing into shared memory
  torchcodec-cpu TorchCodec's VideoDecoder(device='cpu', num_ffmpeg_threads=1) in N threads, one
                 decoder per (thread, clip) kept open (its file scan once, as stoker's start-up index)
  stoker-gpu     `stoker bench --device gpu` on readers.video(device="gpu") (NVDEC)
  stoker-gpu-delay0  the same with STOKER_NVDEC_DISPLAY_DELAY=0 (an A/B row of the decode-ahead)
  stoker-gpu-sync    the same with STOKER_NVDEC_OUTPUT_SURFACES=0 (each frame's kernel waited for)
  stoker-gpu-noskip  the same with STOKER_NVDEC_SKIP_NONREF=0 (every picture before a sequence decoded)
  Any loader as NAME@N runs at N threads instead of --threads (a thread sweep: the same list of
  @N for every loader, equal tuning); VIDEO_TRACE=1 keeps the NVDEC trace lines of stoker-gpu rows.
  A knob row NAME+VAR=VALUE[+VAR=VALUE...][@N] runs NAME with those environment variables set, e.g.
  stoker-gpu+STOKER_NVDEC_EARLY=0@8 (the DEVELOPERS.md knobs' A/B); it is compared with NAME@N.
  dali-gpu       DALI's fn.readers.video(device="gpu"), num_threads N (bench/video_peers_gpu.py)
  torchcodec-cuda TorchCodec's VideoDecoder(device='cuda') in N threads (bench/video_peers_gpu.py)
A row that cannot run here (no GPU, a peer that does not import, TorchCodec without CUDA, over the
--budget) is a skipped row with the reason. GPU rows also report NVDEC and SM utilisation.

Clock (as `stoker bench`): the loader is built (index, pool) before the clock starts; batches of
the first --warmup seconds are not counted; the window then counts the sequences of the batches
delivered until --window seconds have passed (the last batch ends it). frames/s = sequences x 16 /
window seconds; CPU cores busy = CPU time of the process and its children (from /proc) over the
window / window seconds.

Driver: `video_peers.py --stoker CLI --data 720p=DIR --data 1080p=DIR --threads 2 --out DIR`
runs the rows in one shuffled interleaved order (seeded), writes run.json and results-section.md.
A short sweep (--sweep-seconds) first runs pyav-threads and pyav-procs once each per data set and
keeps the faster as the PyAV protocol row (both stay in run.json); --sweep-seconds 0 keeps both.
`--worker LOADER --data DIR ...` runs one measurement and prints one JSON line (used by the driver).
"""
import argparse, json, os, platform, random, shlex, subprocess, sys, tempfile, threading, time
from collections import deque

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import protocol  # noqa: E402
import video_peers_gpu as gpu  # noqa: E402

SEQ = 16
PYAV = ('pyav-threads', 'pyav-procs')
LOADERS = ('stoker-cpu',) + PYAV + ('torchcodec-cpu',) + gpu.GPU_LOADERS


# ---------------------------------------------------------------- clips and the start-up index

def list_clips(root):
    """readers.video's file_root listing: class directories in sorted order, their regular,
    non-hidden files sorted. -> [(path, label)]"""
    classes = sorted(d for d in os.listdir(root) if not d.startswith('.') and os.path.isdir(os.path.join(root, d)))
    clips = []
    for label, d in enumerate(classes):
        for f in sorted(os.listdir(os.path.join(root, d))):
            p = os.path.join(root, d, f)
            if not f.startswith('.') and os.path.isfile(p):
                clips.append((p, label))
    if not clips:
        raise SystemExit(f'video_peers: {root}: no clips (expected class directories of video files)')
    return clips


def index_clip(path):
    """Demux every video packet once (no decoding): frames in presentation order (pts), and for
    each frame the decode timestamp of the last keyframe at or before it."""
    import av
    with av.open(path) as c:
        s = c.streams.video[0]
        pk = [(p.pts, p.dts, p.is_keyframe) for p in c.demux(s) if p.pts is not None]
        w, h = s.codec_context.width, s.codec_context.height
    pk.sort()
    seek, last = [], None
    for pts, dts, key in pk:
        if key:
            last = dts if dts is not None else pts
        if last is None:
            raise SystemExit(f'video_peers: {path}: first frame in presentation order is not after a keyframe')
        seek.append(last)
    return {'path': path, 'pts': [p[0] for p in pk], 'seek': seek, 'w': w, 'h': h}


def sequence_starts(index):
    """[(clip, first frame)] of every whole sequence (step = SEQ), clips in listing order."""
    return [(i, s) for i, c in enumerate(index) for s in range(0, len(c['pts']) - SEQ + 1, SEQ)]


def endless_order(seqs, seed):
    """Sequences, a fresh seeded permutation per epoch, forever."""
    rng = random.Random(seed)
    while True:
        perm = list(seqs)
        rng.shuffle(perm)
        yield from perm


class PyAVSession:
    """One worker's open file + decoder (kept while the next sequence is in the same file)."""
    def __init__(self):
        self.path, self.container, self.stream = None, None, None

    def decode(self, clip, start, out):
        import av
        if self.path != clip['path']:
            if self.container is not None:
                self.container.close()
            self.container = av.open(clip['path'])
            self.stream = self.container.streams.video[0]
            self.stream.thread_type = 'NONE'  # one libavcodec thread per decoder, as stoker's CPU path
            self.stream.thread_count = 1
            self.path = clip['path']
        want = clip['pts'][start:start + SEQ]
        self.container.seek(clip['seek'][start], stream=self.stream, backward=True, any_frame=False)
        i = 0
        for frame in self.container.decode(self.stream):
            if frame.pts < want[0]:
                continue
            if frame.pts != want[i]:
                raise RuntimeError(f"{clip['path']}: frame {start + i}: decoded pts {frame.pts}, expected {want[i]}")
            out[i] = frame.to_ndarray(format='rgb24')
            i += 1
            if i == SEQ:
                return
        raise RuntimeError(f"{clip['path']}: ended after {i} of the sequence's {SEQ} frames from frame {start}")


# ---------------------------------------------------------------- CPU time of a process tree

def tree_cpu_seconds(root=None):
    """utime + stime of process `root` (default: this one, all its threads) and its live
    descendants, from /proc/PID/stat."""
    root = root or os.getpid()
    tick = os.sysconf('SC_CLK_TCK')
    stats = {}
    for name in os.listdir('/proc'):
        if name.isdigit():
            try:
                with open(f'/proc/{name}/stat') as f:
                    rest = f.read().rsplit(')', 1)[1].split()
                stats[int(name)] = (int(rest[1]), (int(rest[11]) + int(rest[12])) / tick)
            except (OSError, IndexError, ValueError):
                pass
    kids = {}
    for pid, (ppid, _) in stats.items():
        kids.setdefault(ppid, []).append(pid)
    total, todo = 0.0, [root]
    while todo:
        pid = todo.pop()
        total += stats.get(pid, (0, 0.0))[1]
        todo.extend(kids.get(pid, []))
    return total


# ---------------------------------------------------------------- workers (one measurement each)

_G = {}  # the fork-inherited state of pyav-procs workers


def _proc_init(shm_name, shape):
    from multiprocessing import shared_memory
    import numpy as np
    _G['shm'] = shared_memory.SharedMemory(name=shm_name)
    _G['buf'] = np.ndarray(shape, dtype=np.uint8, buffer=_G['shm'].buf)
    _G['session'] = PyAVSession()


def _proc_task(slot, j, clip_i, start):
    _G['session'].decode(_G['index'][clip_i], start, _G['buf'][slot, j])
    return slot, j


def clock(next_batch, warmup, window, sync=None):
    """The clock of `stoker bench`: next_batch() blocks until one more batch is delivered and
    returns its sequences; batches of the first `warmup` s are not counted, then the window counts
    until `window` s have passed (the last batch ends it) and ends with sync() (a device
    synchronize for the GPU rows). window_wall: the window in time.time(), for the GPU sampler."""
    t_start = time.monotonic()
    window_start, cpu0, in_warm, wall0 = t_start, tree_cpu_seconds(), warmup > 0, time.time()
    seqs = warm_seqs = 0
    while True:
        t = time.monotonic()
        if in_warm and t - t_start >= warmup:
            in_warm, window_start, cpu0, wall0 = False, t, tree_cpu_seconds(), time.time()
        if not in_warm and t - window_start >= window:
            break
        n = next_batch()
        if in_warm:
            warm_seqs += n
        else:
            seqs += n
    if sync:
        sync()
    end = time.monotonic()
    cpu = tree_cpu_seconds() - cpu0
    return {'sequences': seqs, 'frames': seqs * SEQ, 'seconds': end - window_start,
            'warmup_s': window_start - t_start, 'warmup_sequences': warm_seqs,
            'frames_per_s': seqs * SEQ / (end - window_start), 'cpu_seconds': cpu,
            'cpu_cores_busy': cpu / (end - window_start), 'window_wall': [wall0, time.time()]}


def measure(submit, wait_batch, nslots, batch, order, warmup, window, sync=None):
    """clock() over a pool: submit(slot, j, seq) starts a decode into slot's j-th place and
    returns a future; wait_batch(futures) blocks until they are done (the batch delivered).
    nslots batches in flight; at the end the batches still queued are cancelled."""
    inflight = deque()
    for slot in range(nslots):
        inflight.append((slot, [submit(slot, j, next(order)) for j in range(batch)]))

    def next_batch():
        slot, handles = inflight.popleft()
        wait_batch(handles)  # the consumer has the batch: buf[slot], [B, 16, H, W, 3] uint8
        inflight.append((slot, [submit(slot, j, next(order)) for j in range(batch)]))
        return batch
    res = clock(next_batch, warmup, window, sync)
    for _, handles in inflight:  # the pool's exit then waits only for the sequences already running
        for h in handles:
            h.cancel()
    return res


def run_worker(a):
    import numpy as np
    from concurrent.futures import ThreadPoolExecutor, wait
    clips = list_clips(a.data)
    if a.worker == 'torchcodec-cpu':
        import torchcodec  # noqa: F401  (fails without torch: the driver records why)
    # PyAV seeks by its own keyframe index; the other rows need only frame counts and sizes, which
    # clips.json (made with the clips) gives on a machine without PyAV.
    index = (None if a.worker in PYAV else gpu.load_index(a.data)) or [index_clip(p) for p, _ in clips]
    sizes = {(c['h'], c['w']) for c in index}
    if len(sizes) != 1:
        raise SystemExit(f'video_peers: {a.data}: clips of several sizes {sorted(sizes)}; one size per set')
    (h, w), nslots = sizes.pop(), 2
    shape = (nslots, a.batch, SEQ, h, w, 3)
    order = endless_order(sequence_starts(index), a.seed)
    done = lambda hs: [f.result() for f in wait(hs)[0]]  # .result() re-raises a worker's error
    if a.worker == 'pyav-threads':
        buf, local = np.empty(shape, np.uint8), threading.local()

        def task(slot, j, seq):
            if not hasattr(local, 's'):
                local.s = PyAVSession()
            local.s.decode(index[seq[0]], seq[1], buf[slot, j])
        with ThreadPoolExecutor(a.threads) as pool:
            res = measure(lambda s, j, q: pool.submit(task, s, j, q), done, nslots, a.batch, order, a.warmup, a.window)
    elif a.worker == 'dali-gpu':
        res = gpu.run_dali(a, clips, index, lambda nb, sync: clock(nb, a.warmup, a.window, sync))
    elif a.worker == 'torchcodec-cuda':
        res = gpu.run_torchcodec_cuda(a, index, lambda submit, sync: measure(
            submit, done, nslots, a.batch, order, a.warmup, a.window, sync))
    elif a.worker == 'pyav-procs':
        import multiprocessing as mp
        from concurrent.futures import ProcessPoolExecutor
        from multiprocessing import shared_memory
        shm = shared_memory.SharedMemory(create=True, size=int(np.prod(shape)))
        _G['index'] = index
        try:
            with ProcessPoolExecutor(a.threads, mp_context=mp.get_context('fork'), initializer=_proc_init,
                                     initargs=(shm.name, shape)) as pool:
                wait([pool.submit(time.sleep, 0) for _ in range(a.threads)])  # start the workers
                res = measure(lambda s, j, q: pool.submit(_proc_task, s, j, q[0], q[1]), done,
                                 nslots, a.batch, order, a.warmup, a.window)
        finally:
            shm.close()
            shm.unlink()
    else:
        from torchcodec.decoders import VideoDecoder
        buf, local = np.empty(shape, np.uint8), threading.local()

        def task(slot, j, seq):  # one decoder per (thread, clip) kept open: its scan of the file once, as stoker's index
            c = index[seq[0]]
            if not hasattr(local, 'decoders'):
                local.decoders = {}
            dec = local.decoders.get(c['path'])
            if dec is None:
                dec = local.decoders[c['path']] = VideoDecoder(c['path'], device='cpu', num_ffmpeg_threads=1, dimension_order='NHWC')
            buf[slot, j] = dec.get_frames_in_range(seq[1], seq[1] + SEQ).data.numpy()
        with ThreadPoolExecutor(a.threads) as pool:
            res = measure(lambda s, j, q: pool.submit(task, s, j, q), done, nslots, a.batch, order, a.warmup, a.window)
    res.update(loader=a.worker, threads=a.threads, batch=a.batch, height=h, width=w, clips=len(clips))
    print(json.dumps(res))


# ---------------------------------------------------------------- driver

def pipe_text(device):
    return (f'frames, labels = readers.video(sequence_length=16, random_shuffle=True, device="{device}", name="Reader")\n'
            'outputs(frames, labels)\n')


def split_loader(loader, threads):
    """'torchcodec-cuda@4' -> ('torchcodec-cuda', 4); no @N: the default thread count. A knob row's
    +VAR=VALUE parts are left out (gpu.worker_env sets them)."""
    base, _, n = gpu.loader_parts(loader)
    return base, int(n) if n else threads


def command(a, loader, data, warmup, window, pipe_files, repeat):
    seed = a.seed + repeat
    loader, threads = split_loader(loader, a.threads)
    if loader in ('stoker-cpu', 'stoker-gpu', 'stoker-gpu-delay0', 'stoker-gpu-sync', 'stoker-gpu-noskip'):
        device = loader.split('-')[1]
        return [a.stoker, 'bench', '--data', data, '--pipeline', pipe_files[device], '--device', device,
                '--threads', str(threads), '--batch', str(a.batch), '--json', '--no-digest',
                '--warmup', f'{warmup:g}', '--seconds', f'{window:g}', '--seed', str(seed),
                # the default budget is sized for images (64 MiB a sample): a 1080p sequence of 16
                # frames is 95 MiB; the peers hold what they decode without a limit
                '--host-memory-budget', '16384']
    return [sys.executable, os.path.abspath(__file__), '--worker', loader, '--data', data,
            '--threads', str(threads), '--batch', str(a.batch), '--warmup', f'{warmup:g}',
            '--window', f'{window:g}', '--seed', str(seed)]


def run_one(a, loader, label, data, warmup, window, pipe_files, repeat, phase):
    cmd = command(a, loader, data, warmup, window, pipe_files, repeat)
    base, threads = split_loader(loader, a.threads)
    row = {'phase': phase, 'dataset': label, 'loader': loader, 'repeat': repeat, 'threads': threads,
           'command': shlex.join(cmd), 'loadavg_before': os.getloadavg()[0]}
    sampler = gpu.UtilSampler().start() if base in gpu.GPU_LOADERS else None
    t0 = time.monotonic()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=warmup + window + a.startup_timeout,
                           env=gpu.worker_env(loader))
        row['rc'], out, err = p.returncode, p.stdout, p.stderr
    except subprocess.TimeoutExpired as e:
        row['rc'], out, err = 'timeout', e.stdout or '', e.stderr or ''
        out, err = (x.decode() if isinstance(x, bytes) else x for x in (out, err))
    t_exit = time.time()
    if sampler:
        sampler.stop()
    row['wall_s'] = round(time.monotonic() - t0, 2)
    trace = [x for x in err.splitlines() if 'NVDEC trace' in x]
    if trace:
        row['trace'] = trace
    lines = [x for x in out.splitlines() if x.startswith('{')]
    if row['rc'] != 0 or not lines:
        row['error'] = (err.strip().splitlines() or ['no output'])[-1][:600]
        return row
    r = json.loads(lines[-1])
    if loader.startswith('stoker-'):  # stoker counts sequences as 'images'; its window ended just before it exited
        r = {'sequences': r['images'], 'frames': r['images'] * SEQ, 'seconds': r['seconds'],
             'warmup_s': r['warmup_seconds'], 'frames_per_s': r['images_per_second'] * SEQ,
             'cpu_seconds': r.get('cpu_seconds'), 'cpu_cores_busy': r.get('cpu_cores_busy'),
             'thread_cpus': r.get('thread_cpus'), 'window_wall': [t_exit - 0.5 - r['seconds'], t_exit - 0.5]}
    if sampler:
        r.update(sampler.window(*r['window_wall']))
    r.pop('loader', None)  # a peer worker's own name (no @N): the row keeps the name it was asked as
    r.pop('threads', None)
    row.update(r)
    return row


def provenance(a, versions):
    def sh(cmd):
        try:
            return subprocess.run(cmd, capture_output=True, text=True, shell=True, timeout=30).stdout.strip()
        except Exception as e:  # provenance is best effort, and says so
            return f'unknown ({e})'
    here = os.path.dirname(os.path.abspath(__file__))
    git = f'git -C {shlex.quote(here)}'
    dirty = sh(f'{git} diff --quiet HEAD -- 2>/dev/null || echo dirty') == 'dirty'
    pv = {'commit': os.environ.get('COMMIT') or sh(f'{git} rev-parse HEAD') + (' (with uncommitted changes)' if dirty else ''),
          'stoker_version': sh(f'{shlex.quote(a.stoker)} --version'),
          'stoker_ffmpeg': os.environ.get('STOKER_FFMPEG') or sh("dpkg-query -W -f='${Package} ${Version}, ' libavcodec59 libavformat59 2>/dev/null || ls /usr/lib/*/libavcodec.so.*").rstrip(','),
          'cpu_model': sh("grep -m1 'model name' /proc/cpuinfo | cut -d: -f2").strip(),
          'gpu': sh('nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1') or 'none',
          'nproc': os.cpu_count(), 'python': platform.python_version(),
          'peers': versions, 'date_utc': time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime()),
          'script': os.environ.get('VIDEO_COMPARE_COMMAND', ''),
          'command': ' '.join(f'{k}={shlex.quote(v)}' for k, v in sorted(os.environ.items())
                              if k in ('WARMUP', 'WINDOW', 'REPEATS', 'THREADS', 'SIZES', 'COUNT', 'FRAMES', 'SWEEP_S', 'BUDGET_S'))
                     + (' ' if any(k in os.environ for k in ('WARMUP', 'WINDOW', 'REPEATS', 'THREADS')) else '')
                     + shlex.join([sys.executable] + sys.argv)}
    try:
        import av
        pv['pyav'] = av.__version__
        pv['pyav_ffmpeg'] = getattr(av, 'ffmpeg_version_info', '?')
        pv['pyav_libavcodec'] = '.'.join(map(str, av.library_versions['libavcodec']))
    except ImportError as e:
        pv['pyav'] = f'not importable: {e}'
    return pv


def fmt(s, digits=0):
    if not s['n']:
        return '—'
    f = f'{{:.{digits}f}}'
    return f'{f.format(s["median"])} ({f.format(s["min"])}–{f.format(s["max"])})'


def report(a, runs, prov, skipped, sweep_pick):
    peers = ', '.join(f'{k} {v}' for k, v in sorted(prov['peers'].items())) or 'none'
    lines = ['## Video: readers.video (CPU and GPU paths) vs peers', '',
             f"{prov['date_utc']}, commit `{prov['commit']}`, `{prov['stoker_version']}` "
             f"(FFmpeg libraries: {prov['stoker_ffmpeg'] or '?'}), PyAV {prov.get('pyav')} "
             f"(bundled FFmpeg {prov.get('pyav_ffmpeg')}, libavcodec {prov.get('pyav_libavcodec')}); peers: {peers}; "
             f"GPU: {prov['gpu']}; {prov['cpu_model']}, nproc {prov['nproc']}, Python {prov['python']}.", '',
             f'Same work for every loader: sequences of {SEQ} consecutive frames, shuffled, RGB uint8 '
             f'[{SEQ}, H, W, 3], batch {a.batch}, {a.threads} threads unless a row says @N (CPU rows: one libavcodec thread each; '
             f'GPU rows: the loader\'s threads, output in GPU memory). '
             f'Warm-up {a.warmup:g} s excluded, window {a.window:g} s (GPU rows end it with a device '
             f'synchronize), {a.repeats} repeats, shuffled interleaved order (seed {a.seed}). '
             f'frames/s = sequences x {SEQ} / window; cores busy = process (and children) CPU time / window; '
             f'NVDEC % and SM % = mean of NVML / nvidia-smi samples (0.5 s) over the window. Median (min–max).', '']
    if not protocol.is_protocol(a.warmup, a.window, a.repeats):
        lines += ['**Not protocol numbers** (warm-up, window or repeats below 10 s / 30 s / 3): a smoke test.', '']
    lines += ['| clips | loader | frames/s | CPU cores busy | frames/s per core | NVDEC % | SM % | runs | stoker vs this |',
              '|---|---|---|---|---|---|---|---|---|']
    order = lambda g: (g[0][1], LOADERS.index(split_loader(g[0][2], 0)[0]), split_loader(g[0][2], a.threads)[1],
                       bool(gpu.loader_parts(g[0][2])[1]), g[0][2])  # a knob row after its loader
    groups = sorted(protocol.group(runs, ('phase', 'dataset', 'loader')), key=order)
    for (phase, ds, loader), rows in groups:
        if phase != 'protocol':
            continue
        fps = protocol.summary([r.get('frames_per_s') for r in rows])
        cores = protocol.summary([r.get('cpu_cores_busy') for r in rows])
        per = protocol.summary([r['frames_per_s'] / r['cpu_cores_busy'] for r in rows
                                if r.get('frames_per_s') and r.get('cpu_cores_busy')])
        nvdec = protocol.summary([r.get('nvdec_util_pct') for r in rows])
        sm = protocol.summary([r.get('sm_util_pct') for r in rows])
        base, _, at = gpu.loader_parts(loader)  # compared with stoker at the same thread count
        ours = ('stoker-gpu' if base in gpu.GPU_LOADERS else 'stoker-cpu') + ('@' + at if at else '')
        st = [r.get('frames_per_s') for r in runs if r['phase'] == 'protocol' and r['dataset'] == ds and r['loader'] == ours]
        v = '' if loader == ours else (protocol.verdict(protocol.summary(st), fps) or '')
        v = f'{ours}: {v}' if v else ''
        errs = sorted({r['error'] for r in rows if r.get('error')})
        note = f" — failed: {'; '.join(errs)}" if errs else ''
        lines.append(f'| {ds} | {loader}{note} | {fmt(fps)} | {fmt(cores, 2)} | {fmt(per)} | {fmt(nvdec)} | {fmt(sm)} '
                     f'| {fps["n"]}/{len(rows)} | {v} |')
    for ds, loader, why in skipped:
        lines.append(f'| {ds} | {loader} | {why} | | | | | 0 | |')
    if sweep_pick:
        lines += ['', 'PyAV pool kind picked by a short sweep (one run each, not protocol numbers): ' +
                  '; '.join(f'{ds}: {k} (' + ', '.join(f'{l} {v:.0f} frames/s' for l, v in vals) + ')'
                            for ds, (k, vals) in sweep_pick.items())]
    if prov.get('script'):
        lines += ['', f"Command: `{prov['script']}`, which ran `{prov['command']}`", '']
    else:
        lines += ['', f"Command: `{prov['command']}`", '']
    return '\n'.join(lines)


def skip_reasons(a, loaders, sets):
    """Loaders that can run here, [(dataset, loader, reason)] for the others, and peer versions."""
    skipped, versions, first_clip = [], {}, list_clips(sets[0][1])[0][0]
    for loader in list(loaders):
        if split_loader(loader, 0)[0] in PYAV:
            p = subprocess.run([sys.executable, '-c', 'import av'], capture_output=True, text=True)
            why = None if p.returncode == 0 else 'skipped: PyAV (`import av`) is not installed here'
        elif split_loader(loader, 0)[0] == 'torchcodec-cpu':
            p = subprocess.run([sys.executable, '-c', 'import torchcodec; print(torchcodec.__version__)'],
                               capture_output=True, text=True, env=gpu.worker_env(loader))
            why = None if p.returncode == 0 else 'skipped: `import torchcodec` fails: ' + ((p.stderr.strip().splitlines() or ['?'])[-1])
            if not why:
                versions['torchcodec'] = p.stdout.strip()
        else:
            why, version = gpu.loader_reason(sys.executable, loader, first_clip)
            if version:
                versions[split_loader(loader, 0)[0].split('-')[0]] = version
        if why:
            loaders.remove(loader)
            skipped += [(ds, loader, why) for ds, _ in sets]
    return loaders, skipped, versions


def run_driver(a):
    sets = [d.split('=', 1) if '=' in d else (os.path.basename(d.rstrip('/')), d) for d in a.data]
    for _, d in sets:
        list_clips(d)
    os.makedirs(a.out, exist_ok=True)
    runs, sweep_pick = [], {}
    loaders = [x for x in a.loaders.split(',') if x]
    bad = [x for x in loaders if split_loader(x, 0)[0] not in LOADERS or not (x.partition('@')[2] or '1').isdigit()
           or not gpu.knobs_valid(x)]
    if bad:
        raise SystemExit(f'video_peers: --loaders: unknown {bad}; known: {",".join(LOADERS)}')
    loaders, skipped, versions = skip_reasons(a, loaders, sets)
    prov = provenance(a, versions)
    pipe_files = {}
    for device in ('cpu', 'gpu'):
        with tempfile.NamedTemporaryFile('w', suffix=f'-{device}.pipe', delete=False) as f:
            f.write(pipe_text(device))
            pipe_files[device] = f.name
    log = lambda r: print(f"[{r['phase']}] {r['dataset']} {r['loader']} #{r['repeat']}: "
                          + (f"{r['frames_per_s']:.1f} frames/s, {r['cpu_cores_busy']:.2f} cores"
                             + (f", NVDEC {r['nvdec_util_pct']:.0f}%" if 'nvdec_util_pct' in r else '') if 'frames_per_s' in r
                             else f"error: {r.get('error')}") + f" ({r['wall_s']} s)"
                          + ''.join('\n    ' + t.split('stoker: ', 1)[-1] for t in r.get('trace', [])), flush=True)
    keys = [(ds, l) for ds, _ in sets for l in loaders]
    if a.sweep_seconds > 0 and all(p in loaders for p in PYAV):
        for ds, d in sets:
            vals = []
            for l in PYAV:
                r = run_one(a, l, ds, d, min(2.0, a.warmup), a.sweep_seconds, pipe_files, 0, 'sweep')
                runs.append(r), log(r)
                vals.append((l, r.get('frames_per_s') or 0.0))
            pick = max(vals, key=lambda v: v[1])[0]
            sweep_pick[ds] = (pick, vals)
            keys = [k for k in keys if not (k[0] == ds and k[1] in PYAV and k[1] != pick)]
    keys, dropped = gpu.apply_budget(keys, a.repeats, a.warmup + a.window + gpu.RUN_OVERHEAD_S, a.budget)
    skipped += dropped
    order = protocol.shuffled_order(keys, a.repeats, a.seed)
    data = dict(sets)
    for (ds, l), rep in order:
        r = run_one(a, l, ds, data[ds], a.warmup, a.window, pipe_files, rep, 'protocol')
        runs.append(r), log(r)
    for f in pipe_files.values():
        os.unlink(f)
    doc = {'provenance': prov, 'settings': {'threads': a.threads, 'batch': a.batch, 'warmup_s': a.warmup,
           'window_s': a.window, 'repeats': a.repeats, 'seed': a.seed, 'sweep_s': a.sweep_seconds,
           'budget_s': a.budget, 'sequence_length': SEQ, 'datasets': dict(sets)},
           'order': [[ds, l, rep] for (ds, l), rep in order], 'skipped': skipped, 'runs': runs}
    with open(os.path.join(a.out, 'run.json'), 'w') as f:
        json.dump(doc, f, indent=1)
    md = report(a, runs, prov, skipped, sweep_pick)
    with open(os.path.join(a.out, 'results-section.md'), 'w') as f:
        f.write(md)
    print(md)
    return 0 if all(r.get('rc') == 0 for r in runs) else 1


def write_index(dirs):
    """clips.json in each DIR: every clip's frame count and size (PyAV), for machines without it."""
    for d in dirs:
        clips = [index_clip(p) for p, _ in list_clips(d)]
        doc = {'clips': [{'file': os.path.relpath(c['path'], d), 'frames': len(c['pts']), 'w': c['w'], 'h': c['h']}
                         for c in clips]}
        with open(os.path.join(d, 'clips.json'), 'w') as f:
            json.dump(doc, f, indent=1)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--worker', choices=[l for l in LOADERS if not l.startswith('stoker-')], help='run one measurement (internal)')
    ap.add_argument('--write-index', action='store_true', help="write each --data DIR's clips.json and exit")
    ap.add_argument('--data', action='append', required=True, help='[LABEL=]DIR of clips (class folders); repeatable')
    ap.add_argument('--stoker', default='build-nocuda/stoker', help='the stoker CLI')
    ap.add_argument('--loaders', default=','.join(LOADERS))
    ap.add_argument('--threads', type=int, default=int(os.environ.get('THREADS', 2)))
    ap.add_argument('--batch', type=int, default=8)
    ap.add_argument('--warmup', type=float, default=float(os.environ.get('WARMUP', 10)))
    ap.add_argument('--window', type=float, default=float(os.environ.get('WINDOW', 30)))
    ap.add_argument('--repeats', type=int, default=int(os.environ.get('REPEATS', 3)))
    ap.add_argument('--sweep-seconds', type=float, default=float(os.environ.get('SWEEP_S', 3)))
    ap.add_argument('--budget', type=float, default=float(os.environ.get('BUDGET_S', 0)),
                    help='seconds the protocol runs may take (0: no limit); lowest-priority rows are dropped to fit')
    ap.add_argument('--startup-timeout', type=float, default=120, help='seconds a run may take beyond warm-up + window')
    ap.add_argument('--seed', type=int, default=42)
    ap.add_argument('--out', default='bench/out/video')
    a = ap.parse_args()
    if a.threads < 1 or a.batch < 1 or a.repeats < 1 or a.window <= 0 or a.warmup < 0:
        raise SystemExit('video_peers: --threads, --batch, --repeats must be >= 1, --window > 0, --warmup >= 0')
    if a.write_index:
        return write_index([d.split('=', 1)[-1] for d in a.data])
    if a.worker:
        a.data = a.data[0].split('=', 1)[-1]
        return run_worker(a)
    return run_driver(a)


if __name__ == '__main__':
    sys.exit(main())
