#!/usr/bin/env python3
"""bench/report.py: turns one bench/peers.py or bench/compare.py run (JSON) into a Markdown section
for bench/RESULTS.md and a PNG bar chart. Not on a hot path.

The section carries the provenance (date, commit, versions of stoker, DALI, torch, torchvision,
CUDA and the driver, machine, the exact command, the data set, the clock and the shuffled order's
seed), then per row (loader, setting, mode, data set) the median and range of images/s over its
repeats with CPU cores busy, device memory and time to first batch; then stoker against each peer
measured in the same call: ratio of medians and the verdict of bench/protocol.py ('win' only when
the ranges do not overlap, else 'overlap' or 'loss'), with what limited each row where stoker
does not win ('met' needs a win: ranges apart). Sweep rows (bench/compare.py's first phase) and cold-cache
rows (its --cold) are tables of their own, marked as not protocol rows.
  usage: report.py RUN.json [--results bench/RESULTS.md] [--section OUT.md] [--chart OUT.png]
"""
import argparse, json, os, statistics, sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from protocol import MIN_REPEATS, group, is_protocol, summary, verdict  # noqa: E402

# Targets the issues set: (stoker loader, peer loader, mode) -> ratio of medians wanted
TARGETS = {
    ('stoker-cli-cpu', 'torch-decode-jpeg', 'train'): (1.5, 'issue 3'), ('stoker-cli-cpudec', 'torch-decode-jpeg', 'train'): (1.5, 'issue 3'),
    ('stoker-py-cpu', 'torch-decode-jpeg', 'train'): (1.5, 'issue 3'), ('stoker-cli-mixed', 'torch-decode-jpeg', 'train'): (2.5, 'issue 4'),
    ('stoker-py-mixed', 'torch-decode-jpeg', 'train'): (2.5, 'issue 4'),
    ('stoker-cli-mixed', 'dali-mixed', 'train'): (1.2, 'issue 15'), ('stoker-py-mixed', 'dali-mixed', 'train'): (1.2, 'issue 15'),
    ('stoker-cli-mixed', 'dali-mixed', 'val'): (1.2, 'issue 15'), ('stoker-py-mixed', 'dali-mixed', 'val'): (1.2, 'issue 15'),
    ('decode-stoker-mixed', 'decode-tv-gpu', 'decode'): (1.2, 'issue 15'),
    ('decode-stoker-mixed', 'decode-dali-mixed', 'decode'): (1.0, 'issue 15'),  # high-resolution set: >= DALI
}
KEY = ('phase', 'dataset', 'loader', 'mode', 'setting_text')


def name(row):
    return f"{row['loader']}@{row['workers']}" if row.get('workers') else row['loader']


def setting(row):
    return row.get('setting_text') or (f"workers={row['workers']}" if row.get('workers') else '')


def median_of(rows, field):
    values = [r[field] for r in rows if isinstance(r.get(field), (int, float))]
    return statistics.median(values) if values else None


def per_core(rows):
    """Median over the runs of images/s per busy CPU core (None when no run has both)."""
    values = [r['images_per_s'] / r['cpu_cores_busy'] for r in rows
              if isinstance(r.get('images_per_s'), (int, float)) and isinstance(r.get('cpu_cores_busy'), (int, float))
              and r['cpu_cores_busy'] > 0]
    return statistics.median(values) if values else None


def bottleneck(rows, cores):
    """What limited a row, read off the medians of its measurements."""
    cpu, gpu, jpeg = (median_of(rows, f) for f in ('cpu_cores_busy', 'gpu_util_mean', 'jpeg_util_mean'))
    if cpu is not None and cpu >= 0.85 * cores:
        return f'CPU-bound ({cpu:.1f} of {cores} cores busy)'
    if jpeg is not None and jpeg >= 85:
        return f'JPEG engines saturated ({jpeg:.0f}% busy)'
    if gpu is not None and gpu >= 85:
        return f'GPU SMs saturated ({gpu:.0f}% busy)'
    parts = [f'{cpu:.1f} cores' if cpu is not None else None, f'SM {gpu:.0f}%' if gpu is not None else None,
             f'JPEG {jpeg:.0f}%' if jpeg is not None else None]
    return 'no resource saturated (' + ', '.join(p for p in parts if p) + ')'


def fmt(value, pattern='{:,.0f}'):
    return pattern.format(value) if isinstance(value, (int, float)) else '–'


def status_text(rows):
    ok = sum(r.get('status') == 'ok' for r in rows)
    bad = [r for r in rows if r.get('status') != 'ok']
    if not bad:
        return 'ok'
    text = f"{ok} ok, {len(bad)} {bad[0].get('status')}: {bad[0].get('error', '')[:160]}"
    return text.replace('|', '/').replace('\n', ' ')


def target_word(ratio, word, target, short=False):
    """'met' only for a win (ranges apart) at or above the target ratio; 'not shown' where the
    medians reach it but the ranges overlap, or a row has fewer runs than the protocol (short)."""
    if ratio is None:
        return '–'
    if ratio >= target:
        return 'not shown (too few runs)' if short else 'met' if word == 'win' else \
            'not shown (ranges overlap)' if word == 'overlap' else 'not met'
    return 'not met'


def cold_lines(rows):
    """The cold-cache rows (bench/compare.py --cold) as a table of their own."""
    cold = [r for r in rows if r.get('phase') == 'cold']
    if not cold:
        return []
    lines = ['### Cold cache, not protocol rows (one run each: page cache evicted before it, timed from the '
             'loader\'s creation to the end of its first epoch)', '',
             '| loader | setting | data | img/s | seconds from creation | epoch share | resident before → after | '
             'first batch s | CPU cores busy | status |', '|---|---|---|---:|---:|---:|---|---:|---:|---|']
    for r in cold:
        cache = r.get('cache') or {}
        share = lambda v: '–' if v is None else f'{100 * v:.0f}%'
        resident = f"{share(cache.get('resident_before'))} → {share(cache.get('resident_after'))}" if cache else '–'
        note = r.get('status', '?')
        if r.get('status') == 'ok' and (cache.get('resident_after') is None or cache['resident_after'] > 0.05):
            note = 'eviction not verified: not a cold row'
        elif r.get('status') == 'ok' and 'cold_clock' not in r:  # rows of runs before session 15's rule
            note = 'a window within the first epoch (the rule before session 15)'
        elif r.get('error'):
            note += ': ' + r['error'][:120].replace('|', '/')
        lines.append(f"| {r['loader']} | {setting(r)} | {r.get('dataset')} | {fmt(r.get('images_per_s'))} | "
                     f"{fmt(r.get('seconds'), '{:.2f}')} | {fmt(r.get('epoch_share'), '{:.2f}')} | {resident} | "
                     f"{fmt(r.get('time_to_first_batch_s'), '{:.2f}')} | {fmt(r.get('cpu_cores_busy'), '{:.1f}')} | {note} |")
    rule = next((r['window_rule'] for r in cold if r.get('window_rule')), None)
    lines += ['', 'Eviction: os.sync() then posix_fadvise(DONTNEED) on every file of the set (no root), checked with '
              'mincore; the host\'s or the disk\'s own caches are out of reach. Clock: '
              + (rule or 'from the loader\'s creation to the end of its first epoch') + '.', '']
    return lines


def provenance(run):
    m = run['machine']
    cores = m.get('cpus') or '?'
    if 'warmup_s' in run:
        clock = (f"warm-up {run['warmup_s']:g} s excluded, window {run['seconds']:g} s ended by a device synchronize, "
                 f"{run.get('repeats', 1)} repeats per row interleaved in a shuffled order (seed {run.get('order_seed')})")
        clock += '' if is_protocol(run['warmup_s'], run['seconds'], run.get('repeats', 1)) else \
            ' — **below the protocol\'s minimums (10 s, 30 s, 3 repeats): not protocol numbers**'
    else:  # runs written before the protocol
        clock = f"{run['seconds']:g} s a run after {run.get('warmup_batches')} warm-up batches, one run per row (before the protocol)"
    lines = [f"## {run['date']} — {m.get('gpu', 'no GPU')}, {cores} CPUs ({m.get('cpu_model', '?')})", '',
             f"- commit: {m.get('commit', 'not recorded')}",
             f"- versions: stoker CLI {m.get('stoker_cli', '–')}; stoker Python {m.get('stoker_python', '–')}; "
             f"DALI {m.get('dali', '–')}; torch {m.get('torch', '–')} (CUDA {m.get('torch_cuda', '–')}); "
             f"torchvision {m.get('torchvision', '–')}; driver CUDA API {m.get('cuda_driver_api', '–')}; "
             f"Python {m.get('python', '–')}",
             f"- machine: {m.get('gpu', 'no GPU')} (name, driver, memory: nvidia-smi); {cores} CPUs; host {m.get('host', '?')}",
             f"- command: `{run['command']}`"]
    if run.get('environment'):
        lines.append('- environment: ' + ' '.join(f'`{k}={v}`' for k, v in run['environment'].items()))
    if run.get('data_note') or run.get('data'):
        label = f"{run['data_label']}: " if run.get('data_label') else ''
        lines.append(f"- data: {label}{run.get('data_note') or run.get('data')}")
    lines += [f"- clock: {clock}; batch {run['batch']}", '']
    return lines


def section(run, chart_name):
    rows, cores = run['rows'], run['machine'].get('cpus') or 16
    lines = provenance(run)
    groups = group(rows, KEY)
    main = [(k, g) for k, g in groups if k[0] in (None, 'protocol')]
    lines += ['### Rows (median and range over the repeats)', '',
              '| loader | setting | mode | data | median img/s | range img/s | n | CPU cores busy | img/s per core | '
              'device MB | first batch s | peak host MB | SM % | JPEG % | status |',
              '|---|---|---|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---|']
    for key, g in main:
        s = summary([r.get('images_per_s') for r in g])
        lines.append(f"| {g[0]['loader']} | {setting(g[0])} | {key[3]} | {key[1]} | {fmt(s['median'])} | "
                     f"{fmt(s['min']) + '–' + fmt(s['max']) if s['n'] else '–'} | {s['n']} | {fmt(median_of(g, 'cpu_cores_busy'), '{:.1f}')} | {fmt(per_core(g))} | "
                     f"{fmt(median_of(g, 'device_mem_used_mb'))} | {fmt(median_of(g, 'time_to_first_batch_s'), '{:.2f}')} | "
                     f"{fmt(median_of(g, 'peak_host_mb'))} | {fmt(median_of(g, 'gpu_util_mean'))} | "
                     f"{fmt(median_of(g, 'jpeg_util_mean'))} | {status_text(g)} |")
    unsettled = sum(1 for r in rows if r.get('device_baseline_note'))
    if any('device_baseline_wait_s' in r for r in rows):
        baseline = ('the baseline taken once the previous run\'s memory had gone back' +
                    (f'; {unsettled} run(s) timed out waiting: their device MB may read low, run.json says which'
                     if unsettled else ''))
    else:  # runs before the wait (session 17): a run right after another could read low by the other's memory
        baseline = 'the baseline sampled as the run started, before the previous run\'s memory was surely back'
    lines += ['', f'device MB: NVML memory used above the baseline over the run\'s whole process (the same meter '
              f'for every loader; {baseline}); CPU cores busy: CPU time of the loader\'s processes in the window / window.', '']
    routes = [r for r in rows if r.get('decoder_route')]
    if routes:
        lines += ['stoker\'s mixed decoder in each run (its routing record; images per decoder over the run):', '']
        lines += [f"- {r.get('phase', '')} {r.get('loader', '')} {r.get('setting_text', '')}: {r['decoder_route']}"
                  + (' (' + ', '.join(f'{k} {v:,}' for k, v in r.get('decoded', {}).items() if v) + ')'
                     if r.get('decoded') else '') for r in routes]
        lines.append('')
    pairs = []
    for sk, sg in main:
        for pk, pg in main:
            if 'stoker' in sk[2] and 'stoker' not in pk[2] and sk[1] == pk[1] and \
                    (sk[3] == pk[3] or (sk[3], pk[3]) == ('train', 'decode')):
                pairs.append((sk, sg, pk, pg))
    if pairs:
        lines += ['### stoker against each peer in this call', '',
                  '| stoker row | peer row | mode | stoker median | peer median | ratio | ranges | target | reason |',
                  '|---|---|---|---:|---:|---:|---|---|---|']
        for sk, sg, pk, pg in pairs:
            a, b = summary([r.get('images_per_s') for r in sg]), summary([r.get('images_per_s') for r in pg])
            ratio = a['median'] / b['median'] if a['median'] and b['median'] else None
            word = verdict(a, b) or 'not measured'
            short = word != 'not measured' and min(a['n'], b['n']) < MIN_REPEATS  # no claim on a cut-short row
            if short:
                word = f"too few runs (n={a['n']} and {b['n']}; the protocol asks {MIN_REPEATS}): no claim"
            target, issue = TARGETS.get((sk[2], pk[2], sk[3]), (None, None))
            met = '–' if target is None else f"{target:g}x ({issue}): " + target_word(ratio, word, target, short)
            reason = '' if word in ('win', 'not measured') or short else f"stoker: {bottleneck(sg, cores)}; peer: {bottleneck(pg, cores)}"
            lines.append(f"| {sk[2]} {setting(sg[0])} | {pk[2]} {setting(pg[0])} | {sk[3]} | {fmt(a['median'])} | "
                         f"{fmt(b['median'])} | {fmt(ratio, '{:.2f}x')} | {word} | {met} | {reason} |")
        lines += ['', "ranges: 'win' = stoker's whole range above the peer's; 'overlap' = no claim either way; "
                  "'loss' = stoker's whole range below.", '']
    view = [(k, g) for k, g in main if k[3] == 'train+rn50']
    if view:
        lines += ['### Training view: ResNet-50 fwd+bwd (AMP bf16, channels-last) per batch', '',
                  '| loader | setting | train img/s (median) | step on synthetic data | GPU time lost waiting for input |',
                  '|---|---|---:|---:|---:|']
        for k, g in view:
            step, wait = median_of(g, 'step_s_synthetic'), median_of(g, 'gpu_wait_share')
            lines.append(f"| {k[2]} | {setting(g[0])} | {fmt(median_of(g, 'images_per_s'))} | "
                         f"{fmt(1000 * step if step else None, '{:.1f}')} ms | {fmt(100 * wait if wait is not None else None)}% |")
        lines.append('')
    sweep = [(k, g) for k, g in groups if k[0] == 'sweep']
    if sweep:
        sw = run.get('sweep') or {}
        chosen = {l: c['setting'] for l, c in run.get('chosen', {}).items()}
        origin = sw.get('from')
        where = (f" in an earlier call ({origin.get('date')}, {origin.get('gpu')}, host {origin.get('host')}, "
                 f"commit {origin.get('commit')}; {origin.get('file')})") if origin else ''
        lines += [f"### Sweep — NOT protocol rows (one run each, {sw.get('warmup_s', '?')} s warm-up, "
                  f"{sw.get('seconds', '?')} s window{where}): how each loader's setting was chosen", '',
                  '| loader | setting | img/s | CPU cores busy | device MB | first batch s | chosen | status |',
                  '|---|---|---:|---:|---:|---:|---|---|']
        for k, g in sweep:
            lines.append(f"| {k[2]} | {setting(g[0])} | {fmt(median_of(g, 'images_per_s'))} | "
                         f"{fmt(median_of(g, 'cpu_cores_busy'), '{:.1f}')} | {fmt(median_of(g, 'device_mem_used_mb'))} | "
                         f"{fmt(median_of(g, 'time_to_first_batch_s'), '{:.2f}')} | "
                         f"{'**chosen**' if chosen.get(k[2]) == k[4] else ''} | {status_text(g)} |")
        lines.append('')
    if (run.get('sweep') or {}).get('only'):
        lines += ['No protocol rows in this call (compare.py --sweep-only): the chosen settings are for a later '
                  'call (--chosen-from).', '']
    lines += cold_lines(rows)
    split = [(name(r), r['stoker']) for r in rows if r.get('phase') in (None, 'protocol') and isinstance(r.get('stoker'), dict)
             and r['stoker'].get('decoded_hw')]
    if split:
        lines += ['Mixed decoder split (hardware / CUDA / hybrid / CPU): ' + '; '.join(
            f"{n} {s.get('decoded_hw')}/{s.get('decoded_cuda')}/{s.get('decoded_hybrid')}/{s.get('decoded_cpu')}"
            for n, s in split[:6]), '']
    if chart_name:
        lines += [f'Chart: `{chart_name}`', '']
    return '\n'.join(lines)


def bar_panel(axis, title, bars):
    """One panel of a chart: bars [(label, summary of img/s, is stoker's)], each its median with
    whiskers to its range and the median and n written beside it (bench/lease/one_call_merge.py too)."""
    axis.barh([label for label, _, _ in bars], [s['median'] for _, s, _ in bars],
              xerr=[[s['median'] - s['min'] for _, s, _ in bars], [s['max'] - s['median'] for _, s, _ in bars]],
              color=['tab:orange' if stoker else 'tab:gray' for _, _, stoker in bars], capsize=4)
    for y, (_, s, _) in enumerate(bars):
        axis.text(s['max'], y, f"  {s['median']:,.0f} (n={s['n']})", va='center', fontsize=8)
    axis.set_title(title)
    axis.invert_yaxis()
    axis.set_xlabel('images/s (bar: median, whiskers: range)')


def chart(run, path):
    """Bars: each protocol row's median, whiskers: its range; one panel per mode measured (no
    empty panels)."""
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt
    titles = {'train': 'rn50-train', 'val': 'rn50-val', 'decode': 'decode only (ceilings)',
              'train+rn50': 'training view: ResNet-50 img/s'}
    groups = [(k, g) for k, g in group(run['rows'], KEY) if k[0] in (None, 'protocol')]
    modes = [m for m in titles if any(k[3] == m and summary([r.get('images_per_s') for r in g])['n'] for k, g in groups)]
    if not modes:
        raise ValueError('no measured rows to draw')
    figure, axes = plt.subplots(len(modes), 1, figsize=(12, 1.5 + 0.5 * len(groups)), squeeze=False)
    for axis, mode in zip(axes.flat, modes):
        bars = [(k, summary([r.get('images_per_s') for r in g]), g) for k, g in groups if k[3] == mode]
        bars = [b for b in bars if b[1]['n']]
        bar_panel(axis, titles[mode], [(f"{k[2]} {setting(g[0])}" + (' (hires)' if k[1] == 'hires' else ''), s,
                                        'stoker' in k[2]) for k, s, g in bars])
    figure.suptitle(f"stoker vs peers — {run['date']} — {run['machine'].get('gpu', 'no GPU')}")
    figure.tight_layout()
    figure.savefig(path, dpi=110)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('run', help='JSON written by peers.py --out or compare.py (run.json)')
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
        except (ImportError, ValueError) as error:
            print(f'report: no chart ({error})', file=sys.stderr)
    print(text)


if __name__ == '__main__':
    main()
