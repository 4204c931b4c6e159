#!/usr/bin/env python3
"""bench/compare.py: stoker against its peers with equal tuning, in one call: sweep, protocol rows, cold rows.

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

3. Cold cache (--cold; NOT protocol rows): after the protocol phase, one run per loader at its
   chosen setting on a cold page cache: bench/pagecache.py evicts the data set's files (os.sync,
   then posix_fadvise DONTNEED on every file: no root needed) and measures the share of their
   pages still resident (mincore) before and after. The clock runs from the loader's creation to
   the end of its first epoch (in whole batches; stoker's CLI: --epochs 1), ended by a device
   synchronize: start-up included, every image read from the disk once, whatever each loader
   reads ahead. (A window inside the first epoch would read a loader's
   queue drain as much as its reads when start-ups differed: DALI 5 s to its first batch, stoker
   1 s.) Each cold row records the eviction check, its clock and the share of an epoch it
   delivered (epoch_share). --cold-read-ahead runs, for each loader whose reader has readers.file's
   read_ahead (peers.READ_AHEAD_LOADERS: stoker's and DALI's decode and rn50 rows), two cold rows, with
   read_ahead=0 and =1 named (the readers' defaults differ): the knob tried both ways for both, as
   equal tuning asks.

--mode decode compares decode-only loaders (bench/peers.py's decode-*: the files read and decoded
to uint8 RGB, nothing else; e.g. decode-stoker-mixed,decode-dali-mixed,decode-tv-gpu on the
high-resolution set, --data-label hires). A loader without a knob of a --sweep entry (torchvision
has no hw_load) runs each distinct remaining setting once.

One 10-minute device call holds the protocol phase of three loaders (9 runs of 10 + 30 s plus
start-up: ~7.5 min) and little sweep; --sweep-only runs the sweep alone (a call of its own) and
--chosen-from RUN.json takes the settings (and the sweep rows, shown as such, with the file they
came from) from such a call, so the next call holds the protocol phase and the cold rows.

Writes OUT/run.json (every row of every phase, the chosen settings, the order and its seed,
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
                    [--data-label hires] [--cold [--cold-read-ahead]] [--sweep-only | --chosen-from RUN.json]
"""
import argparse, json, os, random, shlex, sys, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pagecache, peers, protocol, report  # noqa: E402  (bench/ modules)

DEFAULT_SWEEP = '16,2,0.65 16,2,0.8 16,2,0.9 16,3,0.8 16,4,0.8 12,2,0.8'  # threads,prefetch,hw_load[,cuda_load] (loads: mixed decoders only)
DEFAULT_OVERHEAD_S = 25.0  # process start + set-up + first batch, until a sweep row has measured it
# ... for the loaders seen on the H100 machine (bench/runs: child wall time minus warm-up and window)
OVERHEAD_PRIOR_S = {'stoker-cli-mixed': 5.0, 'stoker-cli-cpu': 5.0, 'stoker-cli-cpudec': 5.0, 'decode-stoker-mixed': 5.0,
                    'decode-stoker-cpu': 5.0, 'dali-mixed': 20.0, 'dali-cpu': 20.0, 'decode-dali-mixed': 20.0,
                    'decode-tv-gpu': 14.0, 'tv-gpu-batched': 14.0}
IMAGE_EXTENSIONS = ('.jpg', '.jpeg', '.png')


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
    knobs = (f',prefetch={prefetch}' if prefetch else '') + (f',hw_load={hw_load:g}' if hw_load is not None and mixed else '')
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
        return warmup + seconds + self.overhead.get(loader, OVERHEAD_PRIOR_S.get(loader, DEFAULT_OVERHEAD_S))


def later_phases_s(args, loaders, clock):
    """Seconds the phases after the sweep need: the protocol rows and, with --cold, one cold row
    per loader (planned as start-up plus at most 10 s: the first epoch of a set of 5,000-20,000
    images at a GPU loader's rate lasts 1-6 s; plus the eviction)."""
    total = 0.0 if args.sweep_only else sum(args.repeats * clock.row_s(l, args.warmup, args.seconds) for l in loaders)
    if args.cold:
        total += sum((clock.row_s(l, 0, 10.0) + 5) * len(cold_variants(args, l)) for l in loaders)
    return total


def cold_variants(args, loader):
    """The read_ahead values a loader's cold rows run with: [None] (its default), or with
    --cold-read-ahead both 0 and 1, named, for the loaders whose reader has the argument
    (peers.READ_AHEAD_LOADERS; the readers' defaults differ: stoker's on, DALI's off)."""
    return [0, 1] if args.cold_read_ahead and loader in peers.READ_AHEAD_LOADERS else [None]


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
        protocol_s = later_phases_s(args, loaders, clock)
        setting_s = sum(clock.row_s(r['loader'], args.sweep_warmup, args.sweep_seconds) for r in runs)
        if deadline and time.time() + setting_s + protocol_s + args.reserve > deadline:
            print(f'compare: sweep stops before setting {settings[index]}: {deadline - time.time():.0f} s left, '
                  f'the protocol phase needs ~{protocol_s:.0f} s', flush=True)
            for run in runs:
                rows.append({'dataset': args.data_label, **run, 'phase': 'sweep', 'status': 'not run',
                             'error': 'time budget kept for the protocol phase'})
            continue
        for run in runs:
            row = {**peers.run_child(run, args.data_label, args.data, timing, gpu), 'phase': 'sweep', 'repeat': 0,
                   'order_index': position}
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


def cold_epoch_images(files, batch):
    """Images a cold row times: the first epoch in whole batches (at least one), so that no loader
    needs a batch of the second epoch, whose files the first one cached (stoker's CLI runs its one
    epoch to the end: --epochs 1)."""
    return max(batch, files // batch * batch)


def cold_estimate_s(files, warm_rate, clock, loader):
    """Seconds a cold row is expected to take (the budget check): start-up plus the epoch at the
    warm rate, doubled for the disk."""
    return clock.row_s(loader, 0, 2.0 * files / warm_rate)


def warm_rates(rows):
    """{loader: images/s} from the protocol rows' medians, else the best sweep run."""
    rates = {}
    for phase in ('sweep', 'protocol'):  # protocol last: it wins
        for key, group in protocol.group([r for r in rows if r.get('phase') == phase and r.get('status') == 'ok']):
            median = protocol.summary([r.get('images_per_s') for r in group])['median']
            if median and (phase == 'protocol' or median > rates.get(key[2], 0)):
                rates[key[2]] = median
    return rates


def run_cold(args, chosen, rates, gpu, clock, deadline):
    """One cold-cache run per loader at its chosen setting (module docstring, 3.); rows of phase
    'cold', each with the eviction's check ('cache'), its clock and epoch_share."""
    files = sum(1 for f in pagecache.data_files(args.data) if f.lower().endswith(IMAGE_EXTENSIONS))
    rows, runs = [], []
    for loader, (run, _) in chosen.items():
        for ahead in cold_variants(args, loader):
            runs.append((loader, run if ahead is None else peers.parse_run(
                token(loader, run['mode'], (run['workers'], run['prefetch'], run['hw_load'], run['cuda_load'])) +
                f',read_ahead={ahead}')))
    for position, (loader, run) in enumerate(runs):
        base = {'dataset': args.data_label, **run, 'phase': 'cold', 'repeat': 0, 'order_index': position, 'files': files}
        if not rates.get(loader):
            rows.append({**base, 'status': 'not run', 'error': 'no warm rate measured to size the budget'})
            continue
        expected = cold_estimate_s(files, rates[loader], clock, loader)
        if deadline and time.time() + expected + 5 > deadline:
            rows.append({**base, 'status': 'not run', 'error': 'time budget spent'})
            print(f'[cold] {loader:18s} not run (budget)', flush=True)
            continue
        cache = pagecache.evict_checked(args.data)
        epoch = cold_epoch_images(files, args.batch)
        # --seconds only sizes the child's time limit here: the row ends with the first epoch
        timing = argparse.Namespace(**{**vars(args), 'warmup': 0.0, 'seconds': expected, 'epoch_images': epoch})
        row = {**peers.run_child(run, args.data_label, args.data, timing, gpu), **base, 'cache': cache,
               'warm_rate': rates[loader], 'epoch_images': epoch,
               'window_rule': f'from the loader\'s creation to the end of its first epoch ({epoch} of {files} files '
               f'in whole batches; stoker\'s CLI: --epochs 1), start-up included, ended by a device synchronize'}
        if row.get('images') is not None and files:
            row['epoch_share'] = round(row['images'] / files, 3)
        rows.append(row)
        value = f"{row['images_per_s']:9.0f} img/s" if row.get('images_per_s') else f"{row['status']}: {row.get('error', '')[:200]}"
        print(f"[cold] {loader:18s} {run['setting_text']:36s} {value}; {row.get('seconds', 0):.2f} s from creation, "
              f"epoch share {row.get('epoch_share')}; resident {cache['resident_before']} -> {cache['resident_after']}",
              flush=True)
    return rows


def sweep_from(path, args):
    """The sweep rows of an earlier call's run.json (--chosen-from) and where they came from; exits
    when its mode or data label differ from this call's."""
    with open(path) as f:
        earlier = json.load(f)
    if earlier.get('mode') != args.mode or earlier.get('data_label', 'imagenet') != args.data_label:
        raise SystemExit(f"compare: {path} is mode {earlier.get('mode')} on {earlier.get('data_label', 'imagenet')}, "
                         f"not {args.mode} on {args.data_label}")
    rows = [{**r, 'sweep_from': path} for r in earlier['rows'] if r.get('phase') == 'sweep']
    origin = {'file': path, 'date': earlier.get('date'), 'gpu': earlier['machine'].get('gpu'),
              'host': earlier['machine'].get('host'), 'commit': earlier['machine'].get('commit'),
              'sweep': earlier.get('sweep', {})}
    return rows, origin


def parse_arguments(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0], epilog=__doc__.split('\n\n', 1)[1],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--data', required=True, help='folder of class subfolders')
    parser.add_argument('--data-note', default='', help='how the data set was made, its statistics (recorded as is)')
    parser.add_argument('--data-label', default='imagenet', help='the data set\'s name in the rows (imagenet, hires)')
    parser.add_argument('--loaders', default='stoker-cli-mixed,dali-mixed', help='comma-separated loaders (peers.py --list)')
    parser.add_argument('--mode', default='train', choices=['train', 'val', 'decode', 'effnet'],
                        help='decode: decode-only loaders (decode-*)')
    parser.add_argument('--sweep', default=DEFAULT_SWEEP, help=f'settings THREADS,PREFETCH[,HW_LOAD[,CUDA_LOAD]] (default "{DEFAULT_SWEEP}"; "" = none)')
    parser.add_argument('--defaults', default='',
                        help='comma-separated loaders run at their own defaults: not swept; their protocol row has the '
                             'first sweep setting\'s threads and prefetch and no other knob (hw_load left to the loader)')
    parser.add_argument('--sweep-warmup', type=float, default=3.0)
    parser.add_argument('--sweep-seconds', type=float, default=8.0)
    phases = parser.add_mutually_exclusive_group()
    phases.add_argument('--sweep-only', action='store_true', help='run the sweep alone (no protocol or cold rows)')
    phases.add_argument('--chosen-from', metavar='RUN_JSON',
                        help='no sweep: each loader\'s setting chosen from the sweep rows of an earlier call\'s run.json')
    parser.add_argument('--cold', action='store_true', help='after the protocol phase, one cold-cache run per loader')
    parser.add_argument('--cold-read-ahead', action='store_true',
                        help='with --cold: cold rows with readers.file read_ahead=0 and =1 for the loaders that have it')
    parser.add_argument('--deadline', type=float, default=0, help='epoch seconds by which all phases must end (0 = none)')
    parser.add_argument('--reserve', type=float, default=10.0, help='seconds kept for writing the results')
    parser.add_argument('--hard-deadline', type=float, default=0,
                        help='epoch seconds: a protocol or cold row that would end later is not started (default: --deadline + 40 s); '
                             'the sweep plans for --deadline, so the protocol phase has this slack for estimates that ran short')
    parser.add_argument('--out', default=os.environ.get('OUT', '.'), help='folder for run.json and results-section.md')
    peers.add_timing_arguments(parser)
    args = parser.parse_args(argv)
    peers.resolve_device(args)
    args.loader_list = [l for l in args.loaders.split(',') if l]
    args.default_list = [l for l in args.defaults.split(',') if l]
    for loader in args.default_list:
        if loader not in args.loader_list:
            parser.error(f'--defaults {loader}: not one of --loaders')
    for loader in args.loader_list:
        peers.parse_run(f'{loader}:{args.mode}')  # exits on an unknown loader or one of another mode
    if not os.path.isdir(args.data):
        parser.error(f'--data {args.data}: not a folder')
    if args.cold and not pagecache.mincore_available():
        parser.error('--cold: posix_fadvise or mincore is not available here')
    return args


def main(argv=None):
    args = parse_arguments(argv)
    loaders = args.loader_list
    started, gpu, clock = time.time(), peers.GpuSampler(), Clock()
    deadline = args.deadline or None
    settings = sweep_settings(args.sweep)
    origin = None
    if args.chosen_from:
        sweep_rows, origin = sweep_from(args.chosen_from, args)
        print(f'compare: order seed {args.order_seed}; settings from the sweep of {args.chosen_from} ({origin["date"]})', flush=True)
    else:
        print(f'compare: order seed {args.order_seed}; sweep {len(settings)} settings x {len(loaders)} loaders, '
              f'{args.sweep_warmup:g} s warm-up + {args.sweep_seconds:g} s each; protocol {args.repeats} x '
              f'({args.warmup:g} s warm-up + {args.seconds:g} s)' + ('; no protocol phase (--sweep-only)' if args.sweep_only else ''),
              flush=True)
        swept = [l for l in loaders if l not in args.default_list]
        sweep_rows = run_sweep(args, swept, settings, gpu, clock, deadline)
    for row in sweep_rows:
        clock.learn(row, row.get('warmup_s') or args.sweep_warmup, row.get('seconds') or args.sweep_seconds)
    chosen = choose(sweep_rows, [l for l in loaders if l not in args.default_list], args.mode)
    for loader in args.default_list:
        first = settings[0] if settings else (16, 2, None, None)
        chosen[loader] = (peers.parse_run(token(loader, args.mode, (first[0], None, None, None))),
                          "the loader's defaults (not swept)")
    for loader, (run, why) in chosen.items():
        print(f"compare: {loader} at {run['setting_text']} ({why})", flush=True)
    hard = args.hard_deadline or (deadline + 40 if deadline else None)
    if origin:  # the settings and clock of the call whose sweep chose them
        sweep = {**{k: origin['sweep'].get(k) for k in ('settings', 'warmup_s', 'seconds')}, 'only': False, 'from': origin}
    else:
        sweep = {'settings': args.sweep, 'warmup_s': args.sweep_warmup, 'seconds': args.sweep_seconds,
                 'only': args.sweep_only, 'from': None}
    protocol_rows, order, cold_rows = [], [], []
    if not args.sweep_only:
        plan = [(run, args.data_label, args.data) for run, _ in chosen.values()]
        protocol_rows, order = peers.run_plan(plan, args, gpu, 'protocol', hard - args.reserve if hard else None,
                                              lambda run: clock.row_s(run['loader'], args.warmup, args.seconds))
    if args.cold:
        cold_rows = run_cold(args, chosen, warm_rates(sweep_rows + protocol_rows), gpu, clock,
                             hard - args.reserve if hard else None)
    result = {'date': time.strftime('%Y-%m-%d %H:%M:%S %Z'), 'machine': peers.machine_description(args.stoker),
              'command': shlex.join([os.path.relpath(sys.argv[0])] + sys.argv[1:]), 'data': args.data,
              # knobs the loaders read from the environment (stoker's A/B knobs, CUDA's) belong to the command
              'environment': {k: v for k, v in sorted(os.environ.items()) if k.startswith(('STOKER_', 'CUDA_', 'DALI_'))
                              and k not in ('STOKER_CLI', 'STOKER_SOURCE_DIR')},
              'data_note': args.data_note, 'data_label': args.data_label, 'batch': args.batch, 'mode': args.mode,
              'device': args.device, 'seconds': args.seconds, 'warmup_s': args.warmup, 'repeats': args.repeats,
              'sweep': sweep,
              # the clock's settings AND every protocol row's runs (a time budget may cut them short)
              'meets_protocol': protocol.is_protocol(args.warmup, args.seconds, args.repeats)
              and (args.sweep_only or protocol.runs_complete(protocol_rows, args.repeats)),
              'order_seed': args.order_seed, 'order': order,
              'chosen': {l: {'setting': r['setting_text'], 'why': why} for l, (r, why) in chosen.items()},
              'rows': sweep_rows + protocol_rows + cold_rows, 'wall_s': round(time.time() - started, 1)}
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, 'run.json'), 'w') as f:
        json.dump(result, f, indent=1)
    text = report.section(result, None)
    with open(os.path.join(args.out, 'results-section.md'), 'w') as f:
        f.write(text)
    print(text)
    measured = sweep_rows if args.sweep_only else protocol_rows
    return 0 if any(r.get('status') == 'ok' for r in measured) else 1


if __name__ == '__main__':
    sys.exit(main())
