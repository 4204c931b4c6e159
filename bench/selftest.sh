#!/usr/bin/env bash
# bench/selftest.sh: checks the benchmark harness without a GPU (and without torch): the protocol's
# order/median/range/verdict functions (bench/protocol.py --self-test), small data sets of each
# kind pass their own checks and are identical whatever the number of jobs, peers.py parses run
# tokens and reports missing packages and devices as rows, its written-out mixed pipelines are the
# built-in ones (same output digest with the devices set to cpu), compare.py runs a sweep and
# protocol rows end to end on stoker's CPU CLI with short windows, and report.py turns the output
# into a section. Not on a hot path. PYTHON: an interpreter with Pillow and numpy (the data sets
# part is skipped, saying so, without them). STOKER_CLI: a stoker binary (default
# build-nocuda/stoker, else build/stoker; the parts that need one are skipped without).
# Prints "N passed, N failed" at the end.
set -uo pipefail
cd "$(dirname "$0")/.."
python=${PYTHON:-python3}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
passed=0 failed=0
check() { if "${@:2}" >"$work/out.txt" 2>&1; then passed=$((passed + 1)); echo "ok   $1";
          else failed=$((failed + 1)); echo "FAIL $1"; tail -20 "$work/out.txt"; fi; }

if "$python" -c 'import PIL, numpy' 2>/dev/null && ls bench/.photos/*.jpg >/dev/null 2>&1; then
  check "imagenet set passes its checks" "$python" bench/make_dataset.py --kind imagenet --out "$work/a" --count 300 --jobs 2
  check "same set with one job" "$python" bench/make_dataset.py --kind imagenet --out "$work/b" --count 300 --jobs 1
  check "byte-identical sets" diff -r "$work/a" "$work/b"
  check "hires set passes its checks" "$python" bench/make_dataset.py --kind hires --out "$work/h" --count 12
  check "faults set: every bad file fails as listed" "$python" bench/make_dataset.py --kind faults --out "$work/f" --count 40
  data="$work/a"
else
  echo "skip data sets: $python lacks Pillow/numpy or bench/.photos is empty (bench/fetch_photos.sh)"
  mkdir -p "$work/a/n0000" && data="$work/a"
fi

check "protocol.py self-test (order, median, range, win/overlap)" "$python" bench/protocol.py --self-test
check "peers.py --help" "$python" bench/peers.py --help
check "peers.py takes knobs" "$python" -c "import sys; sys.path.insert(0, 'bench'); import peers; \
r = peers.parse_run('dali-mixed@12:train,prefetch=3,hw_load=0.65'); \
assert (r['workers'], r['prefetch'], r['hw_load'], r['setting_text']) == (12, 3, 0.65, 'hw_load=0.65 prefetch=3 workers=12'), r"
check "peers.py takes cuda_load; compare.py's 4th SWEEP field maps to it" "$python" -c "import sys, argparse; \
sys.path.insert(0, 'bench'); import peers, compare; \
r = peers.parse_run('stoker-cli-mixed@16:val,hw_load=0.8,cuda_load=0.5'); \
assert (r['hw_load'], r['cuda_load'], r['setting_text']) == (0.8, 0.5, 'cuda_load=0.5 hw_load=0.8 workers=16'), r; \
assert r['prefetch'] is None and compare.token('stoker-py-mixed', 'val', (8, None, None, None)) == 'stoker-py-mixed@8:val'; \
s = compare.sweep_settings('16,2,0.8,0.5 16,2,,0.25 12,2'); \
assert s == [(16, 2, 0.8, 0.5), (16, 2, None, 0.25), (12, 2, None, None)], s; \
assert compare.token('dali-mixed', 'val', s[0]) == 'dali-mixed@16:val,prefetch=2,hw_load=0.8,cuda_load=0.5'; \
assert compare.token('stoker-cli-cpu', 'val', s[0]) == 'stoker-cli-cpu@16:val,prefetch=2'; \
t = peers.STOKER_MIXED_TEXT['val'].format(knobs=peers.mixed_knobs(argparse.Namespace(hw_load=0.8, cuda_load=0.5)), reader=''); \
assert 'output_type=\"RGB\", hw_decoder_load=0.8, cuda_decoder_load=0.5)' in t, t"
check "peers.py takes read_ahead on the rn50 rows of stoker and DALI, into readers.file" "$python" -c "import sys, argparse; \
sys.path.insert(0, 'bench'); import peers; \
r = peers.parse_run('dali-mixed@16:train,read_ahead=0'); assert r['read_ahead'] == 0, r; \
r = peers.parse_run('stoker-cli-mixed@16:val,read_ahead=1'); assert r['setting_text'] == 'read_ahead=1 workers=16', r; \
a = argparse.Namespace(hw_load=None, cuda_load=None, read_ahead=1, data='/d'); \
t = open(peers.stoker_pipeline_file(a, 'val', 'gpu')).read(); \
assert 'readers.file(random_shuffle=False, name=\"Reader\", read_ahead=True)' in t, t; \
assert peers.reader_options(argparse.Namespace(read_ahead=0)) == {'read_ahead': False}; \
assert peers.stoker_pipeline_file(argparse.Namespace(hw_load=None, cuda_load=None, read_ahead=None), 'val', 'gpu') == 'rn50-val'"
check "peers.py rejects cuda_load out of [0, 1]" bash -c "! '$python' bench/peers.py --data '$data' --runs dali-mixed:train,cuda_load=2"
check "peers.py rejects hw_load on a CPU loader" bash -c "! '$python' bench/peers.py --data '$data' --runs stoker-cli-cpu:train,hw_load=0.5"
check "peers.py rejects a bad knob value" bash -c "! '$python' bench/peers.py --data '$data' --runs dali-mixed:train,prefetch=x"
check "peers.py --list names every loader" bash -c "'$python' bench/peers.py --list | grep -c . | grep -qx 15"
check "peers.py rejects a bad run token" bash -c "! '$python' bench/peers.py --data '$data' --runs nosuch:train"
check "dry run without GPU (and torch) writes rows" env -u PYTHONPATH "$python" bench/peers.py --data "$data" \
  --device cpu --seconds 0.2 --warmup 0 --repeats 2 --stoker "$work/no-stoker" --runs torch-pil@2:train stoker-cli-cpu:train \
  dali-mixed:train decode-tv-gpu:decode --out "$work/run.json"
check "rows say why they did not run" grep -q 'stoker CLI not found' "$work/run.json"
check "GPU rows skipped on CPU" grep -q 'needs a CUDA device' "$work/run.json"
if ! "$python" -c 'import torch' 2>/dev/null; then
  check "torch rows say torch is not installed" grep -q 'torch not installed' "$work/run.json"
fi
check "report.py writes a section" "$python" bench/report.py "$work/run.json" --section "$work/s.md"
check "section has the rows with median and range" grep -q 'median and range over the repeats' "$work/s.md"
check "section says the clock is below the protocol" grep -q 'not protocol numbers' "$work/s.md"

cli=${STOKER_CLI:-}
[ -z "$cli" ] && for c in build-nocuda/stoker build/stoker; do [ -x "$c" ] && cli=$c && break; done
if [ -n "$cli" ] && [ -x "$cli" ]; then
  check "stoker datagen makes a small set" "$cli" datagen "$work/g" --count 300 --classes 4 --seed 3
  cat > "$work/same.py" <<'PY'
import json, subprocess, sys
sys.path.insert(0, 'bench')
import peers
cli, data, work = sys.argv[1:4]
for mode, reader in (('train', ''), ('val', ''), ('val', ', read_ahead=True')):  # read_ahead: same bytes
    text = peers.STOKER_MIXED_TEXT[mode].format(knobs='', reader=reader)
    text = text.replace('device="mixed"', 'device="cpu"').replace('device="gpu"', 'device="cpu"')
    open(f'{work}/{mode}.pipe', 'w').write(text)
    digests = [json.loads(subprocess.run([cli, 'bench', '--data', data, '--pipeline', p, '--threads', '2', '--epochs', '1',
                                          '--json', '--seed', '7'], capture_output=True, text=True, check=True).stdout)['output_digest']
               for p in (f'rn50-{mode}', f'{work}/{mode}.pipe')]
    assert digests[0] == digests[1] and digests[0], (mode, digests)
PY
  check "peers.py's written-out pipelines = the built-in ones (digests, cpu)" "$python" "$work/same.py" "$cli" "$work/g" "$work"
  check "compare.py: sweep + protocol rows end to end (cpu, short windows)" env STOKER_MIXED_TRACE=1 \
    "$python" bench/compare.py --data "$work/g" \
    --loaders stoker-cli-cpu,dali-cpu --device cpu --stoker "$cli" --sweep "2,2 1,2" --sweep-warmup 0.5 \
    --sweep-seconds 0.5 --warmup 0.5 --seconds 1 --repeats 3 --order-seed 9 --out "$work/cmp"
  cat > "$work/check.py" <<'PY'
import json, sys
run = json.load(open(sys.argv[1]))
protocol = [r for r in run['rows'] if r['phase'] == 'protocol' and r['loader'] == 'stoker-cli-cpu']
assert len(protocol) == 3 and all(r['status'] == 'ok' and r['images_per_s'] > 0 for r in protocol), protocol
assert sorted(r['repeat'] for r in protocol) == [0, 1, 2]
assert run['order_seed'] == 9 and len(run['order']) == 6 and run['meets_protocol'] is False
assert run['chosen']['stoker-cli-cpu']['why'].startswith('best of 2'), run['chosen']
assert all(r['status'] == 'skipped' for r in run['rows'] if r['loader'] == 'dali-cpu'), 'dali-cpu should skip here'
assert {'commit', 'stoker_cli', 'dali', 'torch'} <= set(run['machine']), run['machine']
assert run['environment'].get('STOKER_MIXED_TRACE') == '1', run.get('environment')
PY
  check "compare.py's run.json: 3 repeats, order, seed, chosen setting, provenance" "$python" "$work/check.py" "$work/cmp/run.json"
  check "compare.py's section: rows, sweep marked not protocol" grep -q 'Sweep — NOT protocol rows' "$work/cmp/results-section.md"
  check "compare.py's section names the environment's knobs" grep -q '^- environment: .*`STOKER_MIXED_TRACE=1`' \
    "$work/cmp/results-section.md"
else
  echo "skip the stoker CLI parts: no STOKER_CLI, build-nocuda/stoker or build/stoker"
fi
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
