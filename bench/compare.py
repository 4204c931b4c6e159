#!/usr/bin/env python3
"""bench/compare.py: stoker against its peers with equal tuning, in one call, in two phases.

1. Sweep (not protocol rows: one run each, a short window): every loader runs every setting of
   --sweep (the same list for each loader: worker threads, prefetch depth, hw_decoder_load where
   the loader has one, and optionally a 4th field, cuda_load), settings in a shuffled order, each setting's loaders back to back in a
   shuffled order. The sweep stops early, a whole setting at a time, when the time left would not
   fit the protocol phase (--deadline; the protocol phase itself may run to --hard-deadline). Each loader's best setting is the one with the highest
   images/s.
2. Protocol: each loader at its best setting, --repeats runs each (>= 3), all runs interleaved in
   one shuffled order, warm-up >= 10 s excluded, window >= 30 s ended by a device synchronize
   (bench/peers.py's clock; `stoker bench` keeps the same). Rows are reported as median and range;
   bench/report.py calls a win only where ranges do not overlap.

Writes OUT/run.json (every row of both phases, the chosen settings, the order and its seed,
provenance) and OUT/results-section.md (bench/report.py). A benchmark driver, not on stoker's
hot path.

A --sweep entry is THREADS,PREFETCH[,HW_LOAD[,CUDA_LOAD]] (HW_LOAD may be empty: "16,2,,0.5").
CUDA_LOAD, for the mixed decoders only (bench/peers.py's cuda_load knob), is the third decoder,
nvJPEG's CUDA decoder (Huffman on the GPU), for the images the hardware engines do not take:
  - stoker: decoders.image(..., cuda_decoder_load=CUDA_LOAD), that share (by batch position) of
    the non-engine images decoded on the GPU instead of by libjpeg-turbo on the workers;
  - DALI: fn.decoders.image has no share; its closest knob is hybrid_huffman_threshold (images
    above that many pixels get GPU Huffman, the others its CPU Huffman), so CUDA_LOAD > 0 sets
    hybrid_huffman_threshold=0 (all of DALI's non-engine images to GPU Huffman) and CUDA_LOAD = 0
    (or no 4th field) keeps DALI's default.
So a tuple with CUDA_LOAD > 0 lets both loaders put their non-engine images on the SMs, and each
is reported at its best setting as before (equal tuning).
  usage: compare.py --data DIR --loaders stoker-cli-mixed,dali-mixed --mode train --out DIR
                    [--sweep "16,2,0.9 16,3,0.9 12,2,0.65 16,2,0.8,0.5"] [--deadline EPOCH_S] [--data-note TEXT]
"""
import argparse, json, os, random, shlex, sys, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import peers, protocol, report  # noqa: E402  (bench/ modules)

DEFAULT_SWEEP = '16,2,0.65 16,2,0.8 16,2,0.9 16,3,0.8 12,2,0.8'  # threads,prefetch,hw_load[,cuda_load] (loads: mixed decoders only)
DEFAULT_OVERHEAD_S = 25.0  # process start + set-up + first batch, until a sweep row has measured it


def sweep_settings(text):
    """'T,P[,H[,C]] ...' -> [(threads, prefetch, hw_load or None, cuda_load or None)]; exits naming a
    bad entry."""
    settings = []
    for item in text.split():
        parts = item.split(',')
        try:
            if len(parts) not in (2, 3, 4):
                raise ValueError('want THREADS,PREFETCH[,HW_LOAD[,CUDA_LOAD]]')
            loads = [float(p) if p else None for p in parts[2:]] + [None] * (4 - len(parts))
            settings.append((int(parts[0]), int(parts[1]), *loads))
        except ValueError as error:
            raise SystemExit(f'compare: bad --sweep entry {item!r}: {error}')
    return settings


def token(loader, mode, setting):
    threads, prefetch, hw_load, cuda_load = setting
    mixed = loader in peers.HW_LOAD_LOADERS
    knobs = f',prefetch={prefetch}' + (f',hw_load={hw_load:g}' if hw_load is not None and mixed else '')
    knobs += f',cuda_load={cuda_load:g}' if cuda_load is not None and mixed else ''
    return f'{loader}@{threads}:{mode}{knobs}'


class Clock:
    """Per-loader overhead (child wall time beyond warm-up + window), learnt from the rows run; a
    loader that skipped (not installed, no GPU) costs what its skipped run cost."""
    def __init__(self):
        self.overhead, self.skipped = {}, {}

    def learn(self, row, warmup, seconds):
        if row.get('child_wall_s') is None:
            return
        if row.get('status') == 'ok':
            spent = row['child_wall_s'] - warmup - seconds
            self.overhead[row['loader']] = max(self.overhead.get(row['loader'], 0.0), spent)
        elif row.get('status') == 'skipped':
            self.skipped[row['loader']] = row['child_wall_s']

    def row_s(self, loader, warmup, seconds):
        if loader in self.skipped and loader not in self.overhead:
            return self.skipped[loader] + 1
        return warmup + seconds + self.overhead.get(loader, DEFAULT_OVERHEAD_S)


def run_sweep(args, loaders, settings, gpu, clock, deadline):
    rng = random.Random(args.order_seed)
    order = list(range(len(settings)))
    rng.shuffle(order)
    timing = argparse.Namespace(**{**vars(args), 'warmup': args.sweep_warmup, 'seconds': args.sweep_seconds})
    rows, position = [], 0
    for index in order:
        runs = []
        for loader in loaders:
            run = peers.parse_run(token(loader, args.mode, settings[index]))
            if not any(r['loader'] == loader and r['setting_text'] == run['setting_text'] for r in rows):
                runs.append(run)  # a loader without hw_load runs each (threads, prefetch) once
        rng.shuffle(runs)
        protocol_s = sum(args.repeats * clock.row_s(l, args.warmup, args.seconds) for l in loaders)
        setting_s = sum(clock.row_s(r['loader'], args.sweep_warmup, args.sweep_seconds) for r in runs)
        if deadline and time.time() + setting_s + protocol_s + args.reserve > deadline:
            print(f'compare: sweep stops before setting {settings[index]}: {deadline - time.time():.0f} s left, '
                  f'the protocol phase needs ~{protocol_s:.0f} s', flush=True)
            for run in runs:
                rows.append({'dataset': 'imagenet', **run, 'phase': 'sweep', 'status': 'not run', 'error': 'time budget kept for the protocol phase'})
            continue
        for run in runs:
            row = {**peers.run_child(run, 'imagenet', args.data, timing, gpu), 'phase': 'sweep', 'repeat': 0, 'order_index': position}
            position += 1
            clock.learn(row, args.sweep_warmup, args.sweep_seconds)
            rows.append(row)
            value = f"{row['images_per_s']:9.0f} img/s" if row.get('images_per_s') else f"{row['status']}: {row.get('error', '')[:200]}"
            print(f"[sweep] {run['loader']:18s} {run['setting_text']:36s} {value}", flush=True)
    return rows


def choose(sweep_rows, loaders, mode):
    """{loader: (run dict for its best sweep setting, why)}; the default setting when the sweep
    measured nothing for a loader."""
    chosen = {}
    for loader in loaders:
        groups = protocol.group([r for r in sweep_rows if r['loader'] == loader and r.get('status') == 'ok'])
        found = protocol.best(groups)
        if found:
            key, rows = found
            run = peers.parse_run(token(loader, mode, (rows[0]['workers'], rows[0]['prefetch'], rows[0].get('hw_load'),
                                                 rows[0].get('cuda_load'))))
            chosen[loader] = (run, f"best of {len(groups)} swept settings ({rows[0]['images_per_s']:.0f} img/s in the sweep)")
        else:
            chosen[loader] = (peers.parse_run(f'{loader}@16:{mode}'), 'default setting: the sweep measured nothing for it')
    return chosen


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0], epilog=__doc__.split('\n\n', 1)[1],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--data', required=True, help='ImageNet-like folder of class subfolders')
    parser.add_argument('--data-note', default='', help='how the data set was made (recorded as is)')
    parser.add_argument('--loaders', default='stoker-cli-mixed,dali-mixed', help='comma-separated loaders (peers.py --list)')
    parser.add_argument('--mode', default='train', choices=['train', 'val'])
    parser.add_argument('--sweep', default=DEFAULT_SWEEP, help=f'settings THREADS,PREFETCH[,HW_LOAD[,CUDA_LOAD]] (default "{DEFAULT_SWEEP}"; "" = none)')
    parser.add_argument('--sweep-warmup', type=float, default=3.0)
    parser.add_argument('--sweep-seconds', type=float, default=8.0)
    parser.add_argument('--deadline', type=float, default=0, help='epoch seconds by which both phases must end (0 = none)')
    parser.add_argument('--reserve', type=float, default=10.0, help='seconds kept for writing the results')
    parser.add_argument('--hard-deadline', type=float, default=0,
                        help='epoch seconds: a protocol row that would end later is not started (default: --deadline + 40 s); '
                             'the sweep plans for --deadline, so the protocol phase has this slack for estimates that ran short')
    parser.add_argument('--out', default=os.environ.get('OUT', '.'), help='folder for run.json and results-section.md')
    peers.add_timing_arguments(parser)
    args = parser.parse_args()
    peers.resolve_device(args)
    loaders = [l for l in args.loaders.split(',') if l]
    for loader in loaders:
        peers.parse_run(f'{loader}:{args.mode}')  # exits on an unknown loader
    if not os.path.isdir(args.data):
        parser.error(f'--data {args.data}: not a folder')
    started, gpu, clock = time.time(), peers.GpuSampler(), Clock()
    deadline = args.deadline or None
    settings = sweep_settings(args.sweep)
    print(f'compare: order seed {args.order_seed}; sweep {len(settings)} settings x {len(loaders)} loaders, '
          f'{args.sweep_warmup:g} s warm-up + {args.sweep_seconds:g} s each; protocol {args.repeats} x '
          f'({args.warmup:g} s warm-up + {args.seconds:g} s)', flush=True)
    sweep_rows = run_sweep(args, loaders, settings, gpu, clock, deadline)
    chosen = choose(sweep_rows, loaders, args.mode)
    for loader, (run, why) in chosen.items():
        print(f"compare: {loader} at {run['setting_text']} ({why})", flush=True)
    plan = [(run, 'imagenet', args.data) for run, _ in chosen.values()]
    hard = args.hard_deadline or (deadline + 40 if deadline else None)
    protocol_rows, order = peers.run_plan(plan, args, gpu, 'protocol', hard - args.reserve if hard else None,
                                          lambda run: clock.row_s(run['loader'], args.warmup, args.seconds))
    result = {'date': time.strftime('%Y-%m-%d %H:%M:%S %Z'), 'machine': peers.machine_description(args.stoker),
              'command': shlex.join([os.path.relpath(sys.argv[0])] + sys.argv[1:]), 'data': args.data,
              'data_note': args.data_note, 'batch': args.batch, 'mode': args.mode, 'device': args.device,
              'seconds': args.seconds, 'warmup_s': args.warmup, 'repeats': args.repeats,
              'sweep': {'settings': args.sweep, 'warmup_s': args.sweep_warmup, 'seconds': args.sweep_seconds},
              'meets_protocol': protocol.is_protocol(args.warmup, args.seconds, args.repeats),
              'order_seed': args.order_seed, 'order': order,
              'chosen': {l: {'setting': r['setting_text'], 'why': why} for l, (r, why) in chosen.items()},
              'rows': sweep_rows + protocol_rows, 'wall_s': round(time.time() - started, 1)}
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, 'run.json'), 'w') as f:
        json.dump(result, f, indent=1)
    text = report.section(result, None)
    with open(os.path.join(args.out, 'results-section.md'), 'w') as f:
        f.write(text)
    print(text)
    ok = any(r.get('status') == 'ok' for r in protocol_rows)
    return 0 if ok else 1


if __name__ == '__main__':
    sys.exit(main())
