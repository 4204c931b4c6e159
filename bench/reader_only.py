#!/usr/bin/env python3
"""bench/reader_only.py: what a reader costs on its own, without decoding: samples/s
and CPU time per sample of a pipeline whose only operator is the reader, through `stoker bench
--pipeline FILE --device cpu --no-digest --json` (the batches hold the encoded bytes and labels).
Rows: readers.file on the folder, readers.webdataset on the same images as tar shards streamed
from each shard's start (no index), and with their .idx indices. Runs every row RUNS times in
one shuffled order and prints the median and range of each. Not a hot path; standard library.

  python3 bench/reader_only.py --stoker build/stoker [--data DIR] [--count 6000] [--shards 8]
      [--threads N] [--batch 256] [--warmup 3] [--seconds 10] [--runs 3] [--rows file,wds,wds-index]
      [--json OUT]

The data (DIR, default /tmp/stoker-reader-only) is made once with `stoker datagen DIR --count N
--classes 100 --seed 1 --shards S` and kept. A row NAME+KEY=VALUE adds a readers.webdataset
argument (e.g. wds+parallel_shards=2).
"""
import argparse, glob, json, os, statistics, subprocess, sys, tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import protocol  # noqa: E402


def make_data(args):
    shards = os.path.join(args.data, 'shards')
    if glob.glob(os.path.join(shards, '*.tar')):
        return
    cmd = [args.stoker, 'datagen', args.data, '--count', str(args.count), '--classes', '100', '--seed', '1',
           '--shards', str(args.shards)]
    print('reader_only.py: ' + ' '.join(cmd), file=sys.stderr)
    subprocess.run(cmd, check=True, stdout=sys.stderr)


def pipeline_text(args, row):
    name, _, extra = row.partition('+')
    if name == 'file':
        return 'jpegs, labels = readers.file(random_shuffle=True)\noutputs(jpegs, labels)\n'
    tars = sorted(glob.glob(os.path.join(args.data, 'shards', '*.tar')))
    call = 'paths=[%s], ext=["jpg;jpeg", "cls"], label_ext="cls", random_shuffle=True' % ', '.join(
        '"%s"' % t for t in tars)
    if name == 'wds-index':
        call += ', index_paths=[%s]' % ', '.join('"%s"' % (t[:-4] + '.idx') for t in tars)
    elif name != 'wds':
        sys.exit('reader_only.py: unknown row %s (file, wds, wds-index, with +KEY=VALUE)' % row)
    for item in filter(None, extra.split('+')):
        call += ', ' + item
    return 'jpegs, labels = readers.webdataset(%s)\noutputs(jpegs, labels)\n' % call


def run_row(args, row, workdir):
    path = os.path.join(workdir, row.replace('+', '_').replace('=', '-') + '.pipe')
    with open(path, 'w') as f:
        f.write(pipeline_text(args, row))
    cmd = [args.stoker, 'bench', '--data', args.data, '--pipeline', path, '--device', 'cpu', '--no-digest', '--json',
           '--threads', str(args.threads), '--batch', str(args.batch), '--warmup', str(args.warmup), '--seconds',
           str(args.seconds)]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit('reader_only.py: %s failed: %s' % (' '.join(cmd), done.stderr[-800:]))
    r = json.loads(done.stdout)
    return {'samples_per_s': r['images_per_second'], 'cpu_us_per_sample': 1e6 * r['cpu_seconds'] / r['images'],
            'cores_busy': r['cpu_cores_busy']}


def main():
    p = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    p.add_argument('--stoker', required=True)
    p.add_argument('--data', default='/tmp/stoker-reader-only')
    p.add_argument('--count', type=int, default=6000)
    p.add_argument('--shards', type=int, default=8)
    p.add_argument('--threads', type=int, default=min(os.cpu_count() or 1, 16))
    p.add_argument('--batch', type=int, default=256)
    p.add_argument('--warmup', type=float, default=3)
    p.add_argument('--seconds', type=float, default=10)
    p.add_argument('--runs', type=int, default=3)
    p.add_argument('--rows', default='file,wds,wds-index')
    p.add_argument('--seed', type=int, default=1, help='order of the runs')
    p.add_argument('--json', help='write every run here')
    args = p.parse_args()
    make_data(args)
    rows = args.rows.split(',')
    runs = {row: [] for row in rows}
    with tempfile.TemporaryDirectory() as workdir:
        for row, _ in protocol.shuffled_order(rows, args.runs, args.seed):
            runs[row].append(run_row(args, row, workdir))
            print('reader_only.py: %-28s %9.0f samples/s %7.2f us CPU/sample' %
                  (row, runs[row][-1]['samples_per_s'], runs[row][-1]['cpu_us_per_sample']), file=sys.stderr)
    print('| reader | samples/s median (range) | CPU us/sample median (range) | cores busy |')
    print('|---|---|---|---|')
    for row in rows:
        rate = protocol.summary([x['samples_per_s'] for x in runs[row]])
        cpu = protocol.summary([x['cpu_us_per_sample'] for x in runs[row]])
        busy = statistics.median(x['cores_busy'] for x in runs[row])
        print('| %s | %.0f (%.0f-%.0f) | %.2f (%.2f-%.2f) | %.2f |' %
              (row, rate['median'], rate['min'], rate['max'], cpu['median'], cpu['min'], cpu['max'], busy))
    if args.json:
        with open(args.json, 'w') as f:
            json.dump({'args': vars(args), 'runs': runs}, f, indent=1)


if __name__ == '__main__':
    main()
