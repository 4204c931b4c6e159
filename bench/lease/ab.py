#!/usr/bin/env python3
"""bench/lease/ab.py: two (or more) builds of `stoker bench` compared under the project's protocol, in
one call: every row = (build, layout), each run `stoker bench --json --warmup W --seconds S`
(warm-up excluded, window ended by a device synchronize), rows repeated R times in a shuffled,
interleaved order (the seed is printed), median and range per row. Also checks that the builds
give the same output digest for the same seed on each layout (`--epochs 1`). A benchmark driver,
not on stoker's hot path.

  usage: bench/lease/ab.py --cli before=/path/stoker --cli after=build/stoker --data DIR
                     [--layouts cpu,mixed] [--pipelines rn50-train] [--repeats 3] [--warmup 10]
                     [--seconds 30] [--threads 16] [--out DIR]
Layouts: cpu (--device cpu), cpudec (--device gpu --decoder cpu), mixed (--device gpu).
Writes runs.jsonl (one object per run), digests.json and summary.md under --out ($OUT or .)."""
import argparse, json, os, random, statistics, subprocess, sys, time

LAYOUT_FLAGS = {'cpu': ['--device', 'cpu'], 'cpudec': ['--device', 'gpu', '--decoder', 'cpu'],
                'mixed': ['--device', 'gpu']}


def run_bench(cli, data, pipeline, layout, extra, timeout):
    command = [cli, 'bench', '--json', '--data', data, '--pipeline', pipeline, *LAYOUT_FLAGS[layout], *extra]
    started = time.time()
    done = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
    row = {'command': ' '.join(command), 'exit': done.returncode, 'wall_s': round(time.time() - started, 2)}
    try:
        row.update(json.loads(done.stdout.strip().splitlines()[-1]))
    except (ValueError, IndexError):
        row['error'] = (done.stderr or done.stdout)[-2000:]
    return row


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--cli', action='append', required=True, help='NAME=PATH of a stoker binary')
    ap.add_argument('--data', required=True)
    ap.add_argument('--layouts', default='cpu,mixed')
    ap.add_argument('--pipelines', default='rn50-train')
    ap.add_argument('--repeats', type=int, default=3)
    ap.add_argument('--warmup', type=float, default=10)
    ap.add_argument('--seconds', type=float, default=30)
    ap.add_argument('--threads', type=int, default=16)
    ap.add_argument('--batch', type=int, default=256)
    ap.add_argument('--seed', type=int, default=int(time.time()) % 100000)
    ap.add_argument('--skip-digests', action='store_true')
    ap.add_argument('--skip-timing', action='store_true')
    ap.add_argument('--out', default=os.environ.get('OUT', '.'))
    args = ap.parse_args()
    clis = dict(item.split('=', 1) for item in args.cli)
    layouts, pipelines = args.layouts.split(','), args.pipelines.split(',')
    os.makedirs(args.out, exist_ok=True)
    common = ['--batch', str(args.batch), '--threads', str(args.threads), '--seed', '7']
    summary = [f'# bench/lease/ab.py: {" vs ".join(clis)}', '', f'command: {" ".join(sys.argv)}', '']
    for name, cli in clis.items():
        version = subprocess.run([cli, '--version'], capture_output=True, text=True).stdout.strip()
        summary.append(f'- {name}: `{cli}` -- {version}')
    summary.append('')

    if not args.skip_digests:
        digests = {}
        summary += ['## Output digests (--epochs 1, seed 7; equal = identical bytes)', '',
                    '| pipeline | layout | ' + ' | '.join(clis) + ' | equal |', '|---|---|' + '---|' * (len(clis) + 1)]
        for pipeline in pipelines + (['rn50-val'] if 'rn50-val' not in pipelines else []):
            for layout in layouts:
                found = {name: run_bench(cli, args.data, pipeline, layout, common + ['--epochs', '1'], 600)
                         for name, cli in clis.items()}
                values = [found[n].get('output_digest') for n in clis]
                digests[f'{pipeline}/{layout}'] = found
                same = len(set(values)) == 1 and values[0] is not None
                summary.append(f'| {pipeline} | {layout} | ' + ' | '.join(str(v) for v in values) + f' | {"yes" if same else "NO"} |')
                print(summary[-1], flush=True)
        with open(os.path.join(args.out, 'digests.json'), 'w') as f:
            json.dump(digests, f, indent=1)
        summary.append('')

    if not args.skip_timing:
        rows = [(name, pipeline, layout) for name in clis for pipeline in pipelines for layout in layouts]
        order = rows * args.repeats
        random.Random(args.seed).shuffle(order)
        summary += [f'## Throughput: warm-up {args.warmup:g} s excluded, {args.seconds:g} s window, {args.repeats} '
                    f'repeats, shuffled order (seed {args.seed}), batch {args.batch}, {args.threads} threads, --no-digest', '']
        results = {row: [] for row in rows}
        timing = ['--warmup', f'{args.warmup:g}', '--seconds', f'{args.seconds:g}', '--no-digest']
        with open(os.path.join(args.out, 'runs.jsonl'), 'a') as log:
            for i, (name, pipeline, layout) in enumerate(order):
                run = run_bench(clis[name], args.data, pipeline, layout, common + timing, args.warmup + args.seconds + 120)
                run.update(build=name, run_index=i)
                log.write(json.dumps(run) + '\n')
                log.flush()
                results[(name, pipeline, layout)].append(run)
                print(f'{i + 1}/{len(order)} {name} {pipeline} {layout}: {run.get("images_per_second")} img/s', flush=True)
        summary += ['| build | pipeline | layout | img/s median | range | cores busy | time to first batch s | device MiB |',
                    '|---|---|---|---:|---|---:|---:|---:|']
        for (name, pipeline, layout), runs in results.items():
            ips = [r['images_per_second'] for r in runs if 'images_per_second' in r]
            if not ips:
                summary.append(f'| {name} | {pipeline} | {layout} | failed | {runs[0].get("error", "")[:80]} | | | |')
                continue
            cores = statistics.median(r.get('cpu_cores_busy', 0) for r in runs if 'images_per_second' in r)
            ttfb = statistics.median(r.get('time_to_first_batch_s', 0) for r in runs if 'images_per_second' in r)
            dev = statistics.median(r.get('device_bytes_held', 0) for r in runs if 'images_per_second' in r) / 2**20
            summary.append(f'| {name} | {pipeline} | {layout} | {statistics.median(ips):,.0f} | {min(ips):,.0f}-{max(ips):,.0f} '
                           f'| {cores:.1f} | {ttfb:.2f} | {dev:.0f} |')
    text = '\n'.join(summary) + '\n'
    with open(os.path.join(args.out, 'summary.md'), 'w') as f:
        f.write(text)
    print(text)


if __name__ == '__main__':
    main()
