#!/usr/bin/env python3
"""bench/report.py: turns one bench/peers.py run (JSON) into a Markdown section for
bench/RESULTS.md and a PNG bar chart. Not on a hot path.

The section has the date, machine and command, the stoker-vs-peer comparisons the issues set
(ratio, target, verdict; where stoker only ties or loses, the reason read off the measurements:
which resource was saturated, or none), the training view, and every row.
  usage: report.py RUN.json [--results bench/RESULTS.md] [--section OUT.md] [--chart OUT.png]
"""
import argparse, json, os, sys

# (stoker row, peer row, target ratio, why this comparison): a row is (loader, workers or None, mode)
COMPARISONS = [
    (('stoker-cli-cpu', 16, 'train'), ('torch-decode-jpeg', 16, 'train'), 1.5, 'issue 3: CPU path vs best PyTorch CPU setup'),
    (('stoker-cli-cpudec', 16, 'train'), ('torch-decode-jpeg', 16, 'train'), 1.5,
     'issue 3: CPU decode + resize, normalize on the GPU as the peer does'),
    (('stoker-py-cpu', 16, 'train'), ('torch-decode-jpeg', 16, 'train'), 1.5, 'issue 3, through the Python iterator'),
    (('stoker-cli-mixed', 16, 'train'), ('torch-decode-jpeg', 16, 'train'), 2.5, 'issue 4: mixed vs best PyTorch CPU setup'),
    (('stoker-py-mixed', 16, 'train'), ('torch-decode-jpeg', 16, 'train'), 2.5, 'issue 4, through the Python iterator'),
    (('stoker-cli-mixed', 16, 'train'), ('decode-tv-gpu', None, 'decode'), 1.0, 'issue 4: more than torchvision GPU decode alone'),
    (('stoker-py-mixed', 16, 'train'), ('decode-tv-gpu', None, 'decode'), 1.0, 'issue 4, through the Python iterator'),
    (('stoker-py-mixed', 16, 'train'), ('dali-mixed', 16, 'train'), 1.0, 'against DALI'),
    (('stoker-py-mixed', 16, 'train'), ('tv-gpu-batched', None, 'train'), 1.0, 'against torchvision GPU pipeline'),
    (('stoker-py-cpu', 16, 'train'), ('torch-pil', 16, 'train'), 1.0, 'against the classic PIL DataLoader'),
    (('stoker-cli-cpu', 16, 'val'), ('torch-decode-jpeg', 16, 'val'), 1.0, 'rn50-val, CPU'),
    (('stoker-cli-cpudec', 16, 'val'), ('torch-decode-jpeg', 16, 'val'), 1.0, 'rn50-val, CPU decode, normalize on the GPU'),
    (('stoker-py-cpu', 16, 'train'), ('dali-cpu', 16, 'train'), 1.0, 'against DALI --dali_cpu'),
    (('stoker-cli-mixed', 16, 'val'), ('dali-mixed', 16, 'val'), 1.0, 'rn50-val, against DALI'),
    (('decode-stoker-cpu', 16, 'decode'), ('decode-tv-cpu', 16, 'decode'), 1.0, 'decode-only, CPU'),
    (('decode-stoker-mixed', 16, 'decode'), ('decode-tv-gpu', None, 'decode'), 1.0, 'decode-only, GPU'),
]
TIE = 0.05  # within 5% is a tie


def find(rows, key, dataset='imagenet'):
    loader, workers, mode = key
    for row in rows:
        if row['loader'] == loader and row['mode'] == mode and row.get('dataset') == dataset \
                and (workers is None or row.get('workers') == workers):
            return row
    return None


def name(row):
    # every loader uses its N now (the torchvision GPU rows: reader processes)
    return f"{row['loader']}@{row['workers']}" if row.get('workers') else row['loader']


def bottleneck(row, cores):
    """What limited a row, read off its measurements."""
    cpu, gpu, jpeg = row.get('cpu_cores_busy'), row.get('gpu_util_mean'), row.get('jpeg_util_mean')
    if cpu is not None and cpu >= 0.85 * cores:
        return f'CPU-bound ({cpu:.1f} of {cores} cores busy)'
    if jpeg is not None and jpeg >= 85:
        return f'JPEG engines saturated ({jpeg:.0f}% busy)'
    if gpu is not None and gpu >= 85:
        return f'GPU SMs saturated ({gpu:.0f}% busy)'
    parts = [f'{cpu:.1f} cores' if cpu is not None else None, f'SM {gpu:.0f}%' if gpu is not None else None,
             f'JPEG {jpeg:.0f}%' if jpeg is not None else None]
    return 'no resource saturated (' + ', '.join(p for p in parts if p) + '): the pipeline waits on itself'


def verdict(stoker, peer, target, cores):
    if not stoker or stoker.get('status') != 'ok':
        return None, 'not measured', (stoker or {}).get('error', 'row not in this run')
    if not peer or peer.get('status') != 'ok':
        return None, 'no peer figure', (peer or {}).get('error', 'row not in this run')
    ratio = stoker['images_per_s'] / peer['images_per_s']
    if ratio < 1 - TIE:
        word = 'LOSES'
    elif ratio <= 1 + TIE:
        word = 'ties'
    elif ratio < target:
        word = f'wins, misses the {target:g}x target'
    else:
        return ratio, 'wins', ''
    return ratio, word, f'stoker: {bottleneck(stoker, cores)}; peer: {bottleneck(peer, cores)}'


def fmt(value, pattern='{:.0f}'):
    return pattern.format(value) if isinstance(value, (int, float)) else '–'


def section(run, chart_name):
    rows, machine = run['rows'], run['machine']
    cores = machine.get('cpus') or 16
    lines = [f"## {run['date']} — {machine.get('gpu', 'no GPU')}, {cores} CPUs ({machine.get('cpu_model', '?')})",
             '', f"Command: `{run['command']}`  ", f"torch {machine.get('torch')}, torchvision "
             f"{machine.get('torchvision', '–')}, batch {run['batch']}, {run['seconds']:g} s a run after "
             f"{run['warmup_batches']} warm-up batches.", '', '### stoker against its peers', '',
             '| comparison | stoker img/s | peer img/s | ratio | target | verdict | reason |',
             '|---|---:|---:|---:|---:|---|---|']
    for stoker_key, peer_key, target, why in COMPARISONS:
        stoker, peer = find(rows, stoker_key), find(rows, peer_key)
        ratio, word, reason = verdict(stoker, peer, target, cores)
        lines.append(f"| {stoker_key[0]} vs {peer_key[0]} ({stoker_key[2]}) — {why} | "
                     f"{fmt((stoker or {}).get('images_per_s'))} | {fmt((peer or {}).get('images_per_s'))} | "
                     f"{fmt(ratio, '{:.2f}x')} | {target:g}x | {word} | {reason} |")
    view = [r for r in rows if r['mode'] == 'train+rn50']
    if view:
        lines += ['', '### Training view: ResNet-50 fwd+bwd (AMP bf16, channels-last) per batch', '',
                  '| loader | train img/s | step on synthetic data | GPU time lost waiting for input | status |',
                  '|---|---:|---:|---:|---|']
        for r in view:
            lines.append(f"| {name(r)} | {fmt(r.get('images_per_s'))} | {fmt(1000 * r['step_s_synthetic'] if 'step_s_synthetic' in r else None)} ms | "
                         f"{fmt(100 * r['gpu_wait_share'] if 'gpu_wait_share' in r else None)}% | "
                         f"{r['status']}{': ' + r['error'][:120] if r.get('error') else ''} |")
    lines += ['', '### All rows', '',
              '| loader | mode | data | img/s | CPU cores busy | first batch s | peak host MB | device MB (torch / NVML) | SM % | JPEG % | status |',
              '|---|---|---|---:|---:|---:|---:|---:|---:|---:|---|']
    for r in rows:
        status = r['status'] + (': ' + r['error'][:160].replace('|', '/') if r.get('error') else '')
        lines.append(f"| {name(r)} | {r['mode']} | {r.get('dataset')} | {fmt(r.get('images_per_s'))} | "
                     f"{fmt(r.get('cpu_cores_busy'), '{:.1f}')} | {fmt(r.get('time_to_first_batch_s'), '{:.2f}')} | "
                     f"{fmt(r.get('peak_host_mb'))} | {fmt(r.get('device_mem_torch_mb'))} / {fmt(r.get('device_mem_used_mb'))} | "
                     f"{fmt(r.get('gpu_util_mean'))} | {fmt(r.get('jpeg_util_mean'))} | {status} |")
    split = [(name(r), r['stoker']) for r in rows if isinstance(r.get('stoker'), dict) and 'decoded_hw' in r['stoker']]
    if split:
        lines += ['', 'Mixed decoder split (hardware / CUDA / hybrid / CPU): ' + '; '.join(
            f"{n} {s.get('decoded_hw')}/{s.get('decoded_cuda')}/{s.get('decoded_hybrid')}/{s.get('decoded_cpu')}"
            for n, s in split)]
    if chart_name:
        lines += ['', f'Chart: `{chart_name}`']
    return '\n'.join(lines) + '\n'


def chart(run, path):
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt
    panels = [('rn50-train', lambda r: r['mode'] == 'train', 'images_per_s'),
              ('rn50-val', lambda r: r['mode'] == 'val', 'images_per_s'),
              ('decode only (ceilings)', lambda r: r['mode'] == 'decode', 'images_per_s'),
              ('training view: GPU time lost waiting for input (%)', lambda r: r['mode'] == 'train+rn50', 'gpu_wait_share')]
    figure, axes = plt.subplots(2, 2, figsize=(15, 9))
    for axis, (title, keep, field) in zip(axes.flat, panels):
        rows = [r for r in run['rows'] if keep(r) and r.get(field) is not None]
        labels = [name(r) + (' (hires)' if r.get('dataset') == 'hires' else '') for r in rows]
        values = [r[field] * (100 if field == 'gpu_wait_share' else 1) for r in rows]
        colours = ['tab:orange' if 'stoker' in r['loader'] else 'tab:gray' for r in rows]
        axis.barh(labels, values, color=colours)
        for y, value in enumerate(values):
            axis.text(value, y, f' {value:,.0f}', va='center', fontsize=8)
        axis.set_title(title)
        axis.invert_yaxis()
        axis.set_xlabel('%' if field == 'gpu_wait_share' else 'images/s')
        if not rows:
            axis.text(0.5, 0.5, 'no rows measured', ha='center', transform=axis.transAxes)
    figure.suptitle(f"stoker vs peers — {run['date']} — {run['machine'].get('gpu', 'no GPU')}")
    figure.tight_layout()
    figure.savefig(path, dpi=110)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('run', help='JSON written by peers.py --out')
    parser.add_argument('--results', help='Markdown file to append the section to (bench/RESULTS.md)')
    parser.add_argument('--section', help='also write the section alone to this file')
    parser.add_argument('--chart', help='PNG bar chart to draw (needs matplotlib)')
    args = parser.parse_args()
    run = json.load(open(args.run))
    text = section(run, os.path.basename(args.chart) if args.chart else None)
    for path in filter(None, [args.section]):
        with open(path, 'w') as f:
            f.write(text)
    if args.results:
        with open(args.results, 'a') as f:
            f.write('\n' + text)
    if args.chart:
        try:
            chart(run, args.chart)
        except ImportError as error:
            print(f'report: no chart ({error})', file=sys.stderr)
    print(text)


if __name__ == '__main__':
    main()
