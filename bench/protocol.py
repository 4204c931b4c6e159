#!/usr/bin/env python3
"""bench/protocol.py: the project's benchmark protocol as small pure functions, shared by
bench/peers.py (ordering), bench/compare.py (sweep then protocol rows) and bench/report.py
(tables and verdicts). Not on stoker's hot path; no dependencies beyond the standard library.

The protocol, for every row: a warm-up of at least 10 s is excluded; then a window of at least
30 s counts the images delivered and ends with a device synchronize covering the loader's
streams. Each row runs 3 times or more, the runs of all rows interleaved in one shuffled order
(seeded; the seed and the order are recorded). A row is reported as its median and its range
(min-max); one row beats another only when the ranges do not overlap ('win'), else 'overlap'.

`python3 bench/protocol.py --self-test` checks these functions (bench/selftest.sh runs it).
"""
import random, statistics, sys

MIN_WARMUP_S, MIN_WINDOW_S, MIN_REPEATS = 10.0, 30.0, 3


def shuffled_order(keys, repeats, seed):
    """Every key `repeats` times, in one order shuffled by random.Random(seed): a list of
    (key, repeat index) pairs. The same seed gives the same order."""
    order = [(key, repeat) for repeat in range(repeats) for key in keys]
    random.Random(seed).shuffle(order)
    return order


def summary(values):
    """{'median', 'min', 'max', 'n'} of a list of numbers (None entries left out); n = 0 and
    None for the rest when nothing is left."""
    values = [v for v in values if isinstance(v, (int, float))]
    if not values:
        return {'median': None, 'min': None, 'max': None, 'n': 0}
    return {'median': statistics.median(values), 'min': min(values), 'max': max(values), 'n': len(values)}


def verdict(a, b):
    """'win' when summary a's range lies wholly above b's, 'loss' when wholly below, 'overlap'
    when the ranges meet (touching counts as overlap), None when either has no value."""
    if not a['n'] or not b['n']:
        return None
    if a['min'] > b['max']:
        return 'win'
    if a['max'] < b['min']:
        return 'loss'
    return 'overlap'


def is_protocol(warmup_s, window_s, repeats):
    """True when the timing settings meet the protocol's minimums."""
    return warmup_s >= MIN_WARMUP_S and window_s >= MIN_WINDOW_S and repeats >= MIN_REPEATS


def runs_complete(rows, repeats=MIN_REPEATS):
    """True when every protocol row (phase 'protocol', grouped by loader and setting) has at least
    `repeats` runs that ended ok: a call whose time budget cut runs short is not a protocol call
    whatever its clock settings were."""
    groups = group([r for r in rows if r.get('phase') == 'protocol'])
    return bool(groups) and all(sum(r.get('status') == 'ok' for r in g) >= repeats for _, g in groups)


def setting_text(setting):
    """A setting dict (threads, prefetch, hw_load, ...) as 'threads=16 prefetch=2 hw_load=0.9'."""
    return ' '.join(f'{k}={setting[k]:g}' if isinstance(setting[k], float) else f'{k}={setting[k]}'
                    for k in sorted(setting))


def group(rows, key_fields=('phase', 'dataset', 'loader', 'mode', 'setting_text')):
    """Rows -> list of (key tuple, rows with that key), in the order keys first appear."""
    groups = {}
    for row in rows:
        groups.setdefault(tuple(row.get(f) for f in key_fields), []).append(row)
    return list(groups.items())


def best(groups, field='images_per_s'):
    """Of [(key, rows)], the pair whose rows' median of `field` is highest (rows without a value
    are left out); None when none has a value."""
    scored = [(summary([r.get(field) for r in rows])['median'], key, rows) for key, rows in groups]
    scored = [s for s in scored if s[0] is not None]
    return max(scored, key=lambda s: s[0])[1:] if scored else None


def _self_test():
    failures = []
    def check(name, got, want):
        if got != want:
            failures.append(f'{name}: got {got!r}, want {want!r}')
    order = shuffled_order(['a', 'b'], 3, seed=5)
    check('every key repeats times', sorted(order), [('a', 0), ('a', 1), ('a', 2), ('b', 0), ('b', 1), ('b', 2)])
    check('same seed same order', shuffled_order(['a', 'b'], 3, seed=5), order)
    check('a seed changes the order', any(shuffled_order(['a', 'b', 'c'], 3, seed=s) != shuffled_order(['a', 'b', 'c'], 3, seed=1)
                                          for s in range(2, 6)), True)
    check('median odd', summary([3, 1, 2])['median'], 2)
    check('median even', summary([4, 1, 2, 3])['median'], 2.5)
    check('range', (summary([5, None, 1, 9])['min'], summary([5, None, 1, 9])['max'], summary([5, None, 1, 9])['n']), (1, 9, 3))
    check('empty', summary([None]), {'median': None, 'min': None, 'max': None, 'n': 0})
    check('win', verdict(summary([10, 11, 12]), summary([7, 8, 9])), 'win')
    check('loss', verdict(summary([1, 2]), summary([3, 4])), 'loss')
    check('overlap', verdict(summary([10, 11, 20]), summary([7, 8, 12])), 'overlap')
    check('touching is overlap', verdict(summary([9, 12]), summary([7, 9])), 'overlap')
    check('no value', verdict(summary([]), summary([1])), None)
    check('protocol minimums', (is_protocol(10, 30, 3), is_protocol(9.9, 30, 3), is_protocol(10, 30, 2)), (True, False, False))
    done = [{'phase': 'protocol', 'loader': l, 'status': 'ok'} for l in 'ab' for _ in range(3)]
    check('runs complete', runs_complete(done), True)
    check('a row cut short', runs_complete(done[:5] + [{'phase': 'protocol', 'loader': 'b', 'status': 'not run'}]), False)
    check('no protocol rows', runs_complete([{'phase': 'sweep', 'status': 'ok'}]), False)
    check('setting text', setting_text({'threads': 16, 'hw_load': 0.9, 'prefetch': 2}), 'hw_load=0.9 prefetch=2 threads=16')
    rows = [{'loader': 'x', 'setting_text': 's1', 'images_per_s': v} for v in (5, 6, 7)] + \
           [{'loader': 'x', 'setting_text': 's2', 'images_per_s': v} for v in (8, None)]
    check('group keeps order', [k[4] for k, _ in group(rows)], ['s1', 's2'])
    check('best by median', best(group(rows))[0][4], 's2')
    check('best of nothing', best([]), None)
    for line in failures:
        print('FAIL', line)
    print(f'protocol self-test: {len(failures)} failed')
    return not failures


if __name__ == '__main__':
    if sys.argv[1:] == ['--self-test']:
        sys.exit(0 if _self_test() else 1)
    print(__doc__)
