#!/usr/bin/env python3
"""bench/lease/diag_mixed.py: a diagnostic A/B of the mixed decoder's engine settings on the GPU machine:
runs `stoker bench --json` (rn50-train or rn50-val through a pipeline file that writes
hw_decoder_load out) once per configuration, with STOKER_MIXED_TUNING set per row, and samples
NVML's SM and JPEG-engine utilisation during each run. NOT protocol rows (one short run each, in
the order given): it picks what to measure under bench/compare.sh's protocol, nothing more.

  python3 bench/lease/diag_mixed.py --stoker .carry/build/stoker --data /tmp/d --out $OUT/diag.json \\
      --config 'hw=0.8 p=3 t=16 tune=' --config 'hw=0.8 p=3 t=16 tune=roi=1,prealloc=1' ...

A config: hw=F (hw_decoder_load), cuda=F (cuda_decoder_load; not written when absent), p=N (prefetch),
t=N (threads), b=N (--batch; the CLI's default when absent), mode=train|val|crop|decode (crop: reader +
random-crop decoder only; decode: reader + decoders.image, full images), tune=STRING
(STOKER_MIXED_TUNING), ring=N (STOKER_ARENA_RING), env=VAR:VALUE[,VAR:VALUE...] (more environment
for that row, e.g. env=STOKER_DENSE_IN_PLACE:0 for an A/B of an executor knob). --data names the
set (bench/lease/diag-mixed.sh: DATA=/tmp/stoker-hires for the high-resolution one). Not on stoker's hot
path.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time

TRAIN = ('jpegs, labels = readers.file(random_shuffle=True, name="Reader")\n'
         'decoded = decoders.image_random_crop(jpegs, device="mixed", output_type="RGB", hw_decoder_load={hw}{cuda})\n'
         'resized = resize(decoded, device="gpu", resize_x=224, resize_y=224)\n'
         'coin = random.coin_flip(probability=0.5)\n'
         'images = crop_mirror_normalize(resized, device="gpu", dtype="float", output_layout="CHW", crop=[224, 224],'
         ' mean=[123.675, 116.28, 103.53], std=[58.395, 57.12, 57.375], mirror=coin)\n'
         'outputs(images, labels)\n')
VAL = ('jpegs, labels = readers.file(random_shuffle=False, name="Reader")\n'
       'decoded = decoders.image(jpegs, device="mixed", output_type="RGB", hw_decoder_load={hw}{cuda})\n'
       'resized = resize(decoded, device="gpu", resize_shorter=256)\n'
       'images = crop_mirror_normalize(resized, device="gpu", dtype="float", output_layout="CHW", crop=[224, 224],'
       ' mean=[123.675, 116.28, 103.53], std=[58.395, 57.12, 57.375])\n'
       'outputs(images, labels)\n')
CROP = ('jpegs, labels = readers.file(random_shuffle=True, name="Reader")\n'
        'decoded = decoders.image_random_crop(jpegs, device="mixed", output_type="RGB", hw_decoder_load={hw}{cuda})\n'
        'outputs(decoded, labels)\n')
DECODE = ('jpegs, labels = readers.file(random_shuffle=True, name="Reader")\n'
          'decoded = decoders.image(jpegs, device="mixed", output_type="RGB", hw_decoder_load={hw}{cuda})\n'
          'outputs(decoded, labels)\n')
TEMPLATES = {'train': TRAIN, 'val': VAL, 'crop': CROP, 'decode': DECODE}


class Sampler:
    """SM and JPEG-engine utilisation (NVML) every 0.2 s while running, means over the samples; and the
    most device memory in use (the whole GPU's, nvJPEG's own buffers included: one run at a time)."""

    def __init__(self):
        self.sm, self.jpeg, self.used, self.stop = [], [], [], threading.Event()
        try:
            import pynvml
            pynvml.nvmlInit()
            self.nvml, self.handle = pynvml, pynvml.nvmlDeviceGetHandleByIndex(0)
        except Exception as e:  # noqa: BLE001 (no NVML: utilisation columns stay empty)
            self.nvml, self.why = None, str(e)

    def run(self):
        while not self.stop.wait(0.2):
            try:
                self.sm.append(self.nvml.nvmlDeviceGetUtilizationRates(self.handle).gpu)
                self.jpeg.append(self.nvml.nvmlDeviceGetJpgUtilization(self.handle)[0])
                self.used.append(self.nvml.nvmlDeviceGetMemoryInfo(self.handle).used)
            except Exception:  # noqa: BLE001
                pass

    def __enter__(self):
        if self.nvml:
            self.thread = threading.Thread(target=self.run, daemon=True)
            self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        if self.nvml:
            self.thread.join()


def parse_config(text):
    c = {'hw': 0.8, 'cuda': None, 'p': 3, 't': 16, 'b': 0, 'mode': 'train', 'tune': '', 'ring': 0, 'env': ''}
    for item in text.split():
        key, _, value = item.partition('=')
        if key not in c:
            sys.exit(f'diag_mixed: config {text!r}: unknown key {key!r} (hw, cuda, p, t, b, mode, tune, ring, env)')
        c[key] = value if key in ('mode', 'tune', 'env') else (float(value) if key in ('hw', 'cuda') else int(value))
    if c['mode'] not in TEMPLATES:
        sys.exit(f'diag_mixed: config {text!r}: mode must be one of {", ".join(TEMPLATES)}')
    pairs = [item.partition(':') for item in c['env'].split(',') if item]
    if any(not name or sep != ':' for name, sep, _ in pairs):
        sys.exit(f'diag_mixed: config {text!r}: env wants VAR:VALUE[,VAR:VALUE...]')
    c['env'] = {name: value for name, _, value in pairs}
    return c


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--stoker', required=True)
    ap.add_argument('--data', required=True)
    ap.add_argument('--out', required=True)
    ap.add_argument('--warmup', type=float, default=4)
    ap.add_argument('--seconds', type=float, default=10)
    ap.add_argument('--config', action='append', required=True)
    a = ap.parse_args()
    folder = tempfile.mkdtemp()
    rows = []
    for text in a.config:
        c = parse_config(text)
        cuda = '' if c['cuda'] is None else f", cuda_decoder_load={c['cuda']:g}"
        pipe = os.path.join(folder, f"{c['mode']}-{c['hw']:g}-{c['cuda']}.pipe")
        with open(pipe, 'w') as f:
            f.write(TEMPLATES[c['mode']].format(hw=f"{c['hw']:g}", cuda=cuda))
        cmd = [a.stoker, 'bench', '--data', a.data, '--pipeline', pipe, '--device', 'gpu', '--decoder', 'mixed',
               '--threads', str(c['t']), '--prefetch', str(c['p']), *(['--batch', str(c['b'])] if c['b'] else []),
               '--warmup', f'{a.warmup:g}', '--seconds', f'{a.seconds:g}', '--json', '--no-digest']
        env = dict(os.environ, STOKER_MIXED_TUNING=c['tune'])
        if c['ring']:
            env['STOKER_ARENA_RING'] = str(c['ring'])  # the GPU upload arena's pairs (A/B)
        env.update(c['env'])
        with Sampler() as s:
            p = subprocess.run(cmd, capture_output=True, text=True, env=env)
        row = {'config': text, 'command': ' '.join(cmd), 'tuning': c['tune'], 'rc': p.returncode}
        try:
            row.update(json.loads(p.stdout.strip().splitlines()[-1]))
        except (ValueError, IndexError):
            row['error'] = (p.stderr or p.stdout).strip()[-400:]
        row['trace'] = [line for line in p.stderr.splitlines() if ' trace ' in line]
        row['sm_mean'] = sum(s.sm) / len(s.sm) if s.sm else None
        row['jpeg_mean'] = sum(s.jpeg) / len(s.jpeg) if s.jpeg else None
        row['device_used_max_mb'] = max(s.used) / 1048576 if s.used else None
        rows.append(row)
        print(f"{text:45s} {row.get('images_per_second', 0):9.0f} img/s  cores {row.get('cpu_cores_busy', 0):5.1f}"
              f"  sm {row['sm_mean'] or 0:4.0f}%  jpeg {row['jpeg_mean'] or 0:4.0f}%"
              f"  dev {row['device_used_max_mb'] or 0:6.0f} MB  gpu_stage {row.get('gpu_stage_s', 0):6.1f}s"
              f"  next_wait {row.get('next_wait_s', 0):6.1f}s  slot_wait {row.get('slot_wait_s', 0):6.1f}s"
              f"  hw/cuda/cpu {row.get('decoded_hw', 0)}/{row.get('decoded_cuda', 0)}/{row.get('decoded_cpu', 0)}"
              + (f"  ERROR {row['error']}" if 'error' in row else ''), flush=True)
        for line in row['trace']:
            print('    ' + line.split(' trace ', 1)[1], flush=True)
    with open(a.out, 'w') as f:
        json.dump({'rows': rows, 'warmup': a.warmup, 'seconds': a.seconds, 'argv': sys.argv}, f, indent=1)


if __name__ == '__main__':
    main()
