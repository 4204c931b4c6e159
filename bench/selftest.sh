#!/usr/bin/env bash
# bench/selftest.sh: checks the benchmark harness without a GPU (and without torch): small data
# sets of each kind pass their own checks and are identical whatever the number of jobs, peers.py
# reports missing packages and devices as rows, and report.py turns its output into a section and
# a chart. Not on a hot path. PYTHON: an interpreter with Pillow and numpy (the data sets part is
# skipped, saying so, without them). Prints "N passed, N failed" at the end.
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

check "peers.py --help" "$python" bench/peers.py --help
check "peers.py --list names every loader" bash -c "'$python' bench/peers.py --list | grep -c . | grep -qx 14"
check "peers.py rejects a bad run token" bash -c "! '$python' bench/peers.py --data '$data' --runs nosuch:train"
check "dry run without GPU (and torch) writes rows" env -u PYTHONPATH "$python" bench/peers.py --data "$data" \
  --device cpu --seconds 0.2 --stoker "$work/no-stoker" --runs torch-pil@2:train stoker-cli-cpu:train \
  dali-mixed:train decode-tv-gpu:decode --out "$work/run.json"
check "rows say why they did not run" grep -q 'stoker CLI not found' "$work/run.json"
check "GPU rows skipped on CPU" grep -q 'needs a CUDA device' "$work/run.json"
if ! "$python" -c 'import torch' 2>/dev/null; then
  check "torch rows say torch is not installed" grep -q 'torch not installed' "$work/run.json"
fi
check "report.py writes a section" "$python" bench/report.py "$work/run.json" --section "$work/s.md"
check "section has the comparisons" grep -q 'stoker against its peers' "$work/s.md"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
