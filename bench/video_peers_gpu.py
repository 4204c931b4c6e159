"""bench/video_peers_gpu.py: the GPU rows of bench/video_peers.py: DALI's
`fn.readers.video(device="gpu")` and TorchCodec's CUDA decoder as worker processes, the probes that
say why a row cannot run here (a skipped row with the reason, never a crash of the whole call), the
NVDEC / SM utilisation sampler, and the time budget that keeps one device call under its limit.
stoker's own GPU row is `stoker bench --device gpu` (the driver in video_peers.py builds it). Not on
stoker's hot path; imported by video_peers.py only.

Same work as the CPU rows: sequences of 16 consecutive frames, RGB uint8 [16, H, W, 3], batches of
--batch sequences, shuffled; the batch is in GPU memory. The clock is video_peers.measure's (warm-up
excluded, then the window); the window ends with torch.cuda.synchronize() (cudaDeviceSynchronize:
every stream of the process, DALI's too, as they share the primary context).
"""
import json, os, shutil, subprocess, threading, time

GPU_LOADERS = ('stoker-gpu', 'stoker-gpu-delay0', 'stoker-gpu-sync', 'stoker-gpu-noskip', 'dali-gpu', 'torchcodec-cuda')
# Seconds a run takes beyond warm-up + window (process start, imports, index, pool), for the budget.
RUN_OVERHEAD_S = 8
# Which rows go first when the time budget cannot hold every row (the last ones are dropped).
PRIORITY = ('stoker-gpu', 'stoker-gpu-delay0', 'stoker-gpu-sync', 'stoker-gpu-noskip', 'dali-gpu', 'torchcodec-cuda', 'stoker-cpu', 'torchcodec-cpu', 'pyav-procs', 'pyav-threads')


# ---------------------------------------------------------------- probes (why a row cannot run)

def loader_parts(loader):
    """'stoker-gpu+STOKER_NVDEC_EARLY=0@8' -> ('stoker-gpu', {'STOKER_NVDEC_EARLY': '0'}, '8'): the
    loader, the environment variables its row sets (a knob row: +NAME=VALUE, any number of them) and
    its thread count ('' when none is given)."""
    name, _, threads = loader.partition('@')
    base, *knobs = name.split('+')
    return base, dict(k.partition('=')[::2] for k in knobs), threads


def knobs_valid(loader):
    """True when every +NAME=VALUE of a knob row names an environment variable."""
    knobs = loader.partition('@')[0].split('+')[1:]
    return all('=' in k and k.partition('=')[0].replace('_', 'A').isalnum() and not k[0].isdigit() for k in knobs)


def worker_env(loader):
    """The environment of a row's process: TorchCodec's get FFMPEG_LIB_DIR (the carried minimal
    FFmpeg) first on LD_LIBRARY_PATH; the others keep the caller's (DALI brings its own FFmpeg,
    the stoker wrapper sets its own path)."""
    env = dict(os.environ)
    loader, knobs, _ = loader_parts(loader)  # 'stoker-gpu@4': the loader at 4 threads
    if loader == 'stoker-gpu-delay0':  # the A/B row: NVDEC's decode-ahead off (DEVELOPERS.md knobs)
        env['STOKER_NVDEC_DISPLAY_DELAY'] = '0'
    if loader == 'stoker-gpu-sync':  # the A/B row: each frame's kernel waited for before its unmap
        env['STOKER_NVDEC_OUTPUT_SURFACES'] = '0'
    if loader == 'stoker-gpu-noskip':  # the A/B row: every picture before a sequence decoded
        env['STOKER_NVDEC_SKIP_NONREF'] = '0'
    if loader.startswith('stoker-gpu') and os.environ.get('VIDEO_TRACE') == '1':
        env['STOKER_NVDEC_TRACE'] = '1'  # a per-session line on stderr, kept in the row
    env.update(knobs)  # a knob row: 'stoker-gpu+STOKER_NVDEC_EARLY=0@8' (the A/B of a DEVELOPERS.md knob)
    lib = os.environ.get('FFMPEG_LIB_DIR')
    if lib and loader.startswith('torchcodec'):
        env['LD_LIBRARY_PATH'] = lib + (':' + env['LD_LIBRARY_PATH'] if env.get('LD_LIBRARY_PATH') else '')
    return env


def gpu_reason():
    """None when an NVIDIA GPU is visible (nvidia-smi -L lists one), else why not."""
    if not shutil.which('nvidia-smi'):
        return 'skipped: no NVIDIA GPU here (no nvidia-smi)'
    p = subprocess.run(['nvidia-smi', '-L'], capture_output=True, text=True)
    if p.returncode != 0 or 'GPU' not in p.stdout:
        return 'skipped: no NVIDIA GPU here (nvidia-smi -L: ' + ((p.stderr or p.stdout).strip()[:120] or 'none') + ')'
    return None


_PROBES = {
    'dali-gpu': 'import nvidia.dali as d; print(d.__version__)',
    # A CPU-only build (the PyPI wheel) fails here, at its first CUDA decode.
    'torchcodec-cuda': ('import sys, torch, torchcodec; from torchcodec.decoders import VideoDecoder\n'
                        'assert torch.cuda.is_available(), "torch sees no CUDA device"\n'
                        'f = VideoDecoder(sys.argv[1], device="cuda")[0]\n'
                        'assert f.is_cuda, "frame not on the GPU"\n'
                        'print(torchcodec.__version__)'),
}


def loader_reason(py, loader, clip):
    """None when `loader` can run (its import and, for TorchCodec, one CUDA decode of `clip`
    work), else the reason as a skipped-row text. Also returns the peer's version."""
    loader = loader_parts(loader)[0]
    why = gpu_reason() if loader in GPU_LOADERS else None
    if why or loader not in _PROBES:
        return why, None
    try:
        p = subprocess.run([py, '-c', _PROBES[loader], clip], capture_output=True, text=True, timeout=180,
                           env=worker_env(loader))
    except subprocess.TimeoutExpired:
        return f'skipped: the {loader} probe did not finish in 180 s', None
    if p.returncode == 0:
        return None, p.stdout.strip().splitlines()[-1] if p.stdout.strip() else '?'
    last = (p.stderr.strip().splitlines() or ['?'])[-1][:300]
    return f'skipped: {loader} cannot run here: {last}', None


def apply_budget(keys, repeats, seconds_per_run, budget):
    """Drops the lowest-priority loaders (PRIORITY) until len(keys) * repeats runs of
    seconds_per_run fit in budget seconds. -> (kept keys, [(dataset, loader, reason)])."""
    dropped = []
    rank = lambda k: PRIORITY.index(loader_parts(k[1])[0]) if loader_parts(k[1])[0] in PRIORITY else len(PRIORITY)
    keys = sorted(keys, key=rank)
    while budget > 0 and keys and len(keys) * repeats * seconds_per_run > budget:
        last = rank(keys[-1])
        gone = [k for k in keys if rank(k) == last]
        keys = [k for k in keys if rank(k) != last]
        dropped += [(ds, l, f'not run: {repeats} runs of ~{seconds_per_run:.0f} s each would pass the time '
                     f'budget of {budget:.0f} s (BUDGET_S)') for ds, l in gone]
    return keys, dropped


# ---------------------------------------------------------------- NVDEC / SM utilisation

class UtilSampler:
    """Samples the GPU's decoder (NVDEC) and SM utilisation every `period` s while running, through
    NVML (pynvml) when it imports, else `nvidia-smi --query-gpu=utilization.decoder,...`.
    samples: [(time.time(), decoder %, gpu %)]. Silent (no samples) without either."""
    def __init__(self, period=0.5, device=0):
        self.period, self.device, self.samples, self.source = period, device, [], None
        self._stop, self._thread, self._proc = threading.Event(), None, None

    def start(self):
        try:
            import pynvml
            pynvml.nvmlInit()
            handle = pynvml.nvmlDeviceGetHandleByIndex(self.device)
            self.source = 'nvml'
            self._thread = threading.Thread(target=self._nvml, args=(pynvml, handle), daemon=True)
        except Exception:  # no pynvml, or no driver: fall back to nvidia-smi, else no samples
            if not shutil.which('nvidia-smi'):
                return self
            self.source = 'nvidia-smi'
            self._proc = subprocess.Popen(
                ['nvidia-smi', '-i', str(self.device), '--query-gpu=utilization.decoder,utilization.gpu',
                 '--format=csv,noheader,nounits', f'--loop-ms={int(self.period * 1000)}'],
                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
            self._thread = threading.Thread(target=self._smi, daemon=True)
        self._thread.start()
        return self

    def _nvml(self, pynvml, handle):
        while not self._stop.wait(self.period):
            try:
                dec = pynvml.nvmlDeviceGetDecoderUtilization(handle)[0]
                self.samples.append((time.time(), float(dec), float(pynvml.nvmlDeviceGetUtilizationRates(handle).gpu)))
            except Exception:
                pass

    def _smi(self):
        for line in self._proc.stdout:
            try:
                dec, gpu = (float(x) for x in line.split(','))
                self.samples.append((time.time(), dec, gpu))
            except ValueError:
                pass

    def stop(self):
        self._stop.set()
        if self._proc:
            self._proc.terminate()
            self._proc.wait()
        if self._thread:
            self._thread.join(timeout=5)

    def window(self, t0, t1):
        """Mean decoder % and SM % of the samples in [t0, t1]: {} without samples."""
        s = [x for x in self.samples if t0 <= x[0] <= t1]
        if not s:
            return {}
        return {'nvdec_util_pct': round(sum(x[1] for x in s) / len(s), 1),
                'sm_util_pct': round(sum(x[2] for x in s) / len(s), 1), 'util_samples': len(s), 'util_source': self.source}


# ---------------------------------------------------------------- workers

def run_dali(a, clips, index, measure):
    """DALI's fn.readers.video on the GPU, its own prefetch (2) and threads (a.threads)."""
    import torch
    from nvidia.dali import fn, pipeline_def
    h, w = index[0]['h'], index[0]['w']

    @pipeline_def(batch_size=a.batch, num_threads=a.threads, device_id=0, seed=a.seed, prefetch_queue_depth=2)
    def pipe():
        frames, labels = fn.readers.video(device='gpu', filenames=[p for p, _ in clips], labels=[l for _, l in clips],
                                          sequence_length=16, random_shuffle=True, name='Reader')
        return frames, labels

    p = pipe()
    p.build()
    out = {}

    def next_batch():
        frames, _ = p.run()
        out['last'] = frames  # TensorListGPU [B, 16, H, W, 3] uint8, written by DALI's streams
        return a.batch
    res = measure(next_batch, torch.cuda.synchronize)
    shape = out['last'].as_tensor().shape()
    if list(shape) != [a.batch, 16, h, w, 3]:
        raise RuntimeError(f'dali-gpu: batch shape {shape}, expected {[a.batch, 16, h, w, 3]}')
    return res


def run_torchcodec_cuda(a, index, measure_futures):
    """TorchCodec's VideoDecoder(device='cuda') in a.threads threads, one decoder per (thread,
    clip) kept open (its best case: no NVDEC session set up again), each sequence copied into
    a [2, B, 16, H, W, 3] uint8 CUDA buffer (two batches in flight, as the CPU rows)."""
    import torch
    from concurrent.futures import ThreadPoolExecutor
    from torchcodec.decoders import VideoDecoder
    h, w = index[0]['h'], index[0]['w']
    buf, local = torch.empty((2, a.batch, 16, h, w, 3), dtype=torch.uint8, device='cuda'), threading.local()

    def task(slot, j, seq):
        if not hasattr(local, 'decoders'):
            local.decoders = {}
        c = index[seq[0]]
        dec = local.decoders.get(c['path'])
        if dec is None:
            dec = local.decoders[c['path']] = VideoDecoder(c['path'], device='cuda', dimension_order='NHWC')
        buf[slot, j].copy_(dec.get_frames_in_range(seq[1], seq[1] + 16).data)
    with ThreadPoolExecutor(a.threads) as pool:
        return measure_futures(lambda s, j, q: pool.submit(task, s, j, q), torch.cuda.synchronize)


def load_index(data):
    """clips.json beside the class folders (written where the clips were made: frame counts and
    sizes, so a machine without PyAV can run the GPU rows), or None."""
    path = os.path.join(data, 'clips.json')
    if not os.path.isfile(path):
        return None
    with open(path) as f:
        doc = json.load(f)
    return [{'path': os.path.join(data, c['file']), 'pts': list(range(c['frames'])), 'w': c['w'], 'h': c['h']}
            for c in doc['clips']]


def _self_test():
    """python3 bench/video_peers_gpu.py --self-test: the budget arithmetic and the sampler's window."""
    keys = [(ds, l) for ds in ('720p', '1080p') for l in ('stoker-cpu', 'dali-gpu', 'stoker-gpu', 'torchcodec-cpu')]
    kept, dropped = apply_budget(keys, 3, 46, 0)
    assert len(kept) == 8 and not dropped, (kept, dropped)           # no budget: everything runs
    kept, dropped = apply_budget(keys, 3, 46, 6 * 3 * 46)            # room for 6 of 8 keys: one loader goes
    assert {l for _, l in kept} == {'stoker-gpu', 'dali-gpu', 'stoker-cpu'}, kept
    assert [(d, l) for d, l, _ in dropped] == [('720p', 'torchcodec-cpu'), ('1080p', 'torchcodec-cpu')], dropped
    assert 'BUDGET_S' in dropped[0][2]
    kept, dropped = apply_budget(keys, 3, 46, 10)                    # room for nothing: all dropped
    assert not kept and len(dropped) == 8
    s = UtilSampler()
    s.samples, s.source = [(1.0, 10, 50), (2.0, 30, 70), (3.0, 90, 90)], 'test'
    w = s.window(0.5, 2.5)
    assert (w['nvdec_util_pct'], w['sm_util_pct'], w['util_samples']) == (20.0, 60.0, 2), w
    assert s.window(5, 6) == {}
    env = dict(os.environ, FFMPEG_LIB_DIR='/x', LD_LIBRARY_PATH='/y')
    os.environ.update(env)
    assert worker_env('torchcodec-cpu')['LD_LIBRARY_PATH'] == '/x:/y' and worker_env('dali-gpu')['LD_LIBRARY_PATH'] == '/y'
    assert loader_parts('stoker-gpu+STOKER_NVDEC_EARLY=0+B=x=1@8') == ('stoker-gpu', {'STOKER_NVDEC_EARLY': '0', 'B': 'x=1'}, '8')
    assert loader_parts('stoker-gpu-sync') == ('stoker-gpu-sync', {}, '')
    assert worker_env('stoker-gpu+STOKER_NVDEC_EARLY=0@8')['STOKER_NVDEC_EARLY'] == '0'
    assert worker_env('stoker-gpu-sync@4')['STOKER_NVDEC_OUTPUT_SURFACES'] == '0'
    assert knobs_valid('stoker-gpu+STOKER_NVDEC_EARLY=0@8') and knobs_valid('stoker-gpu@8')
    assert not knobs_valid('stoker-gpu+EARLY@8') and not knobs_valid('stoker-gpu+1X=0') and not knobs_valid('stoker-gpu+=0')
    print('video_peers_gpu self-test: ok')


if __name__ == '__main__':
    import sys
    if sys.argv[1:] == ['--self-test']:
        _self_test()
    else:
        sys.exit('usage: bench/video_peers_gpu.py --self-test (the rows run through bench/video_peers.py)')
