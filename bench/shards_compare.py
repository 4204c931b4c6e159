#!/usr/bin/env python3
"""bench/shards_compare.py: the measuring half of bench/shards-compare.sh.
Not on stoker's hot path; standard library plus, where present, nvidia.dali, numpy and torch.

  rows    rn50-train rows under the project's protocol (bench/protocol.py): every row REPEATS
          times in one shuffled order, warm-up excluded, a window ended by a device synchronize;
          rows: stoker's CLI (`stoker bench --json`) on the folder, on local tar shards and on the
          same shards over HTTP, and DALI's fn.readers.webdataset on the local shards (with their
          .idx indices: DALI's reader needs them or scans every shard first; stoker streams from
          the shard's start without one). Per run: images/s and time to first batch. A row
          written LOADER:SOURCE@pN runs at prefetch queue depth N (default 2), e.g. the sweep
          stoker:shards@p2,stoker:shards@p4,dali:shards@p2,dali:shards@p4.
  numpy   GB/s of .npy files landing in GPU memory: stoker's readers.numpy (host output moved to
          the GPU by stoker.torch's iterator), a plain np.load + torch.from_numpy(...).cuda()
          loop, and DALI's fn.readers.numpy(device="gpu") when DALI imports (without GPUDirect
          Storage on the machine: fn.readers.numpy(device="cpu").gpu()).
  dali-row  (internal) one DALI run, printing one JSON line.
Results: JSON rows on stdout of the subcommands, summarized by `report` into a markdown table.
"""
import argparse, glob, json, os, subprocess, sys, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import protocol  # noqa: E402

CROP, MEAN, STD = 224, [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]


def stoker_run(args, row):
    cmd = [args.stoker, 'bench', '--json', '--pipeline', 'rn50-train', '--batch', str(args.batch),
           '--threads', str(args.threads), '--warmup', str(args.warmup), '--seconds', str(args.seconds),
           '--device', 'gpu' if row['mode'] == 'mixed' else 'cpu', '--no-digest', '--prefetch', str(row['prefetch'])]
    cmd += {'folder': ['--data', args.folder], 'shards': ['--shards', args.shards],
            'http': ['--shards', args.http_list]}[row['source']]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=args.warmup + args.seconds + 120)
    if done.returncode != 0:
        return {'error': (done.stderr or done.stdout).strip()[-400:]}
    result = json.loads(done.stdout)
    return {'images_per_s': result.get('images_per_second'), 'time_to_first_batch_s': result.get('time_to_first_batch_s'),
            'images': result['images'], 'window_s': result.get('seconds')}


def dali_run(args, row):
    cmd = [sys.executable, os.path.abspath(__file__), 'dali-row', '--shards', args.shards, '--batch', str(args.batch),
           '--threads', str(args.threads), '--warmup', str(args.warmup), '--seconds', str(args.seconds),
           '--mode', row['mode'], '--prefetch', str(row['prefetch'])]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=args.warmup + args.seconds + 180)
    lines = [line for line in done.stdout.splitlines() if line.startswith('{')]
    if done.returncode != 0 or not lines:
        return {'error': (done.stderr or done.stdout).strip()[-400:]}
    return json.loads(lines[-1])


def dali_row(args):
    """One DALI rn50-train run over the local shards (fn.readers.webdataset, their .idx files)."""
    from nvidia.dali import fn, pipeline_def, types

    tars = sorted(glob.glob(os.path.join(args.shards, '*.tar')))
    indices = [t[:-4] + '.idx' for t in tars]
    on_gpu = args.mode == 'mixed'

    @pipeline_def(batch_size=args.batch, num_threads=args.threads, device_id=0, seed=42, prefetch_queue_depth=args.prefetch)
    def rn50():
        jpegs, labels = fn.readers.webdataset(paths=tars, index_paths=indices, ext=['jpg;jpeg', 'cls'],
                                              random_shuffle=True, initial_fill=1024, name='Reader')
        images = fn.decoders.image_random_crop(jpegs, device='mixed' if on_gpu else 'cpu', random_area=[0.08, 1.0],
                                               random_aspect_ratio=[3 / 4, 4 / 3], num_attempts=10)
        images = fn.resize(images, device='gpu' if on_gpu else 'cpu', resize_x=CROP, resize_y=CROP)
        if not on_gpu:
            images = images.gpu()  # DALI's example with --dali_cpu: normalize on the GPU
        images = fn.crop_mirror_normalize(images, device='gpu', dtype=types.FLOAT, output_layout='CHW',
                                          crop=(CROP, CROP), mean=[m * 255 for m in MEAN],
                                          std=[s * 255 for s in STD], mirror=fn.random.coin_flip(probability=0.5))
        return images, labels

    t0 = time.perf_counter()
    pipe = rn50()
    pipe.build()
    images, _ = pipe.run()
    first = time.perf_counter() - t0
    end_warmup = time.perf_counter() + args.warmup
    while time.perf_counter() < end_warmup:
        images, _ = pipe.run()
    images.as_cpu()  # the warm-up's work is done before the window starts
    count, start = 0, time.perf_counter()
    while time.perf_counter() - start < args.seconds:
        images, _ = pipe.run()
        count += len(images)
    images.as_cpu()  # device synchronize: the last counted batch is ready
    window = time.perf_counter() - start
    print(json.dumps({'images_per_s': count / window, 'time_to_first_batch_s': first, 'images': count,
                      'window_s': window}))


def rows(args):
    keys = [r for r in args.rows.split(',') if r]
    order = protocol.shuffled_order(keys, args.repeats, args.order_seed)
    per_run = args.warmup + args.seconds + 5
    out = []
    for key, repeat in order:
        if time.time() + per_run > args.hard_deadline:
            out.append({'row': key, 'repeat': repeat, 'skipped': 'would end past the call deadline'})
            continue
        # e.g. stoker:shards, dali:shards; '@pN' sets the prefetch queue depth (default 2) for either
        # loader, so a sweep is the same list of settings for both (equal tuning)
        base, _, depth = key.partition('@p')
        loader, source = base.split(':')
        row = {'row': key, 'repeat': repeat, 'mode': args.mode, 'source': source, 'loader': loader,
               'prefetch': int(depth or 2)}
        t0 = time.time()
        row.update(dali_run(args, row) if loader == 'dali' else stoker_run(args, row))
        row['run_s'] = round(time.time() - t0, 1)
        print(json.dumps(row), flush=True)
        out.append(row)
    json.dump({'order_seed': args.order_seed, 'warmup_s': args.warmup, 'window_s': args.seconds,
               'repeats': args.repeats, 'mode': args.mode, 'batch': args.batch, 'threads': args.threads,
               'protocol': protocol.is_protocol(args.warmup, args.seconds, args.repeats), 'runs': out},
              open(args.out, 'w'), indent=1)


def numpy_rates(args):
    """GB/s of .npy files into GPU memory: (loader, GB/s per repeat)."""
    import numpy as np
    import torch

    files = sorted(glob.glob(os.path.join(args.npy, '*.npy')))
    nbytes = sum(os.path.getsize(f) for f in files)
    results = []

    def timed(name, epoch):
        rates = []
        for _ in range(args.repeats):
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            moved = epoch()
            torch.cuda.synchronize()
            rates.append(moved / (time.perf_counter() - t0) / 1e9)
        results.append({'loader': name, 'gb_per_s': rates, 'bytes_per_epoch': nbytes, 'files': len(files)})
        print(json.dumps(results[-1]), flush=True)

    def plain():
        total = 0
        for f in files:
            total += torch.from_numpy(np.load(f)).cuda().numel() * 4
        return total

    timed('np.load+torch.cuda', plain)
    try:
        import stoker
        import stoker.torch as stoker_torch

        @stoker.pipeline_def(batch_size=args.batch_npy, num_threads=args.threads, device_id=0)
        def npy():
            return stoker.fn.readers.numpy(file_root=args.npy, name='Reader').gpu()

        pipe = npy()
        pipe.build()
        it = stoker_torch.GenericIterator(pipe, ['data'], reader_name='Reader', auto_reset=True)

        def stoker_epoch():
            return sum(batch[0]['data'].numel() * 4 for batch in it)

        stoker_epoch()  # warm-up epoch (allocations)
        timed('stoker readers.numpy', stoker_epoch)
    except Exception as error:  # noqa: BLE001 - reported as a row
        results.append({'loader': 'stoker readers.numpy', 'error': repr(error)[-300:]})
    # DALI's GPU numpy reader reads through GPUDirect Storage (cuFile); where the machine has no GDS it
    # fails, and DALI's CPU reader followed by .gpu() (host read, then a copy: stoker's path) is the row
    for device in ('gpu', 'cpu'):
        name = 'DALI readers.numpy(device=%s)%s' % (device, '' if device == 'gpu' else '.gpu()')
        try:
            from nvidia.dali import fn as dfn, pipeline_def as dali_def
            from nvidia.dali.plugin.pytorch import DALIGenericIterator

            @dali_def(batch_size=args.batch_npy, num_threads=args.threads, device_id=0)
            def dnpy():
                data = dfn.readers.numpy(file_root=args.npy, device=device, name='Reader')
                return data if device == 'gpu' else data.gpu()

            dpipe = dnpy()
            dpipe.build()
            dit = DALIGenericIterator(dpipe, ['data'], reader_name='Reader', auto_reset=True)

            def dali_epoch():
                return sum(batch[0]['data'].numel() * 4 for batch in dit)

            dali_epoch()
            timed(name, dali_epoch)
            break
        except Exception as error:  # noqa: BLE001
            results.append({'loader': name, 'error': repr(error)[-300:]})
    json.dump(results, open(args.out, 'w'), indent=1)


def report(args):
    lines = ['| row | mode | images/s median (range) | first batch s median | runs |', '|---|---|---|---|---|']
    for path in args.files:
        if not os.path.exists(path):
            continue
        data = json.load(open(path))
        if isinstance(data, list):  # numpy
            lines2 = ['', '| .npy into GPU memory | GB/s median (range) |', '|---|---|']
            for r in data:
                s = protocol.summary(r.get('gb_per_s', []))
                lines2.append('| %s | %s |' % (r['loader'], 'error: ' + r['error'] if 'error' in r else
                                               '%.2f (%.2f-%.2f)' % (s['median'], s['min'], s['max'])))
            lines += lines2
            continue
        by_row = {}
        for run in data['runs']:
            by_row.setdefault(run['row'], []).append(run)
        for key, runs in by_row.items():
            s = protocol.summary([r.get('images_per_s') for r in runs])
            f = protocol.summary([r.get('time_to_first_batch_s') for r in runs])
            errors = [r['error'] for r in runs if 'error' in r]
            rate = '%.0f (%.0f-%.0f)' % (s['median'], s['min'], s['max']) if s['n'] else 'none'
            if errors:
                rate += ' error: ' + errors[0][:120].replace('|', '/').replace('\n', ' ')
            lines.append('| %s | %s | %s | %s | %d |' % (key, data['mode'], rate,
                                                        '%.3f' % f['median'] if f['n'] else '-', s['n']))
        if not data['protocol']:
            lines.append('| (not under the protocol: warm-up %s s, window %s s, %s repeats) | | | | |'
                         % (data['warmup_s'], data['window_s'], data['repeats']))
    print('\n'.join(lines))


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest='cmd', required=True)
    r = sub.add_parser('rows')
    r.add_argument('--stoker', required=True)
    r.add_argument('--folder', required=True)
    r.add_argument('--shards', required=True)
    r.add_argument('--http-list', required=True)
    r.add_argument('--rows', default='stoker:folder,stoker:shards,stoker:http,dali:shards')
    r.add_argument('--mode', choices=['cpu', 'mixed'], default='mixed')
    d = sub.add_parser('dali-row')
    d.add_argument('--shards', required=True)
    d.add_argument('--mode', choices=['cpu', 'mixed'], default='mixed')
    d.add_argument('--prefetch', type=int, default=2)
    for q in (r, d):
        q.add_argument('--batch', type=int, default=256)
        q.add_argument('--threads', type=int, default=8)
        q.add_argument('--warmup', type=float, default=10)
        q.add_argument('--seconds', type=float, default=30)
    r.add_argument('--repeats', type=int, default=3)
    r.add_argument('--order-seed', type=int, default=int(time.time()) % 100000)
    r.add_argument('--hard-deadline', type=float, default=time.time() + 3600)
    r.add_argument('--out', required=True)
    n = sub.add_parser('numpy')
    n.add_argument('--npy', required=True)
    n.add_argument('--batch-npy', type=int, default=16)
    n.add_argument('--threads', type=int, default=8)
    n.add_argument('--repeats', type=int, default=3)
    n.add_argument('--out', required=True)
    rep = sub.add_parser('report')
    rep.add_argument('files', nargs='+')
    args = p.parse_args()
    {'rows': rows, 'dali-row': dali_row, 'numpy': numpy_rates, 'report': report}[args.cmd](args)


if __name__ == '__main__':
    main()
