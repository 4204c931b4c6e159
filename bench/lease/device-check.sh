#!/usr/bin/env bash
# bench/lease/device-check.sh: one device call that checks a change on the GPU machine and compares two
# builds of the CLI under the benchmark protocol. Builds nothing: the builds are carried.
#   1. bench/gpu-check.sh on AFTER_BUILD (every GPU test, compute-sanitizer memcheck/racecheck);
#   2. a sample set (stoker datagen, COUNT images) and bench/lease/ab.py: output digests of BEFORE and
#      AFTER for rn50-train / rn50-val on each layout (equal = the change moved no byte);
#   3. with TIMING=1, bench/lease/ab.py's throughput rows (shuffled, interleaved, REPEATS repeats,
#      WARMUP s excluded, SECONDS s window) for the same layouts.
# Output under $OUT: summary.txt (short table, printed last), logs.tgz (everything else).
# Settings: BEFORE (.carry/before/stoker), AFTER_BUILD (build), LAYOUTS (cpu,cpudec,mixed),
# COUNT (2000), TIMING (0), REPEATS (3), WARMUP (10), SECONDS (30), THREADS (16), SKIP_GPU_CHECK (0).
# Not on a hot path; a driver.
set -u
cd "$(dirname "$0")/../.."
out=${OUT:-/tmp/device-check}
work=$(mktemp -d)
mkdir -p "$out"
before=${BEFORE:-.carry/before/stoker}
after_build=${AFTER_BUILD:-build}
after=$after_build/stoker
{
  echo "device-check: commit $(cat .carry/COMMIT 2>/dev/null || git rev-parse --short HEAD 2>/dev/null)"
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null || echo "no nvidia-smi"
  echo "cpus: $(nproc); before: $($before --version 2>&1 | head -1); after: $($after --version 2>&1 | head -1)"
} | tee "$work/header.txt"

status=0
if [ "${SKIP_GPU_CHECK:-0}" != 1 ]; then
  OUT=$work/gpu-check bash bench/gpu-check.sh "$after_build" >/dev/null 2>&1 || status=1
  cp "$work/gpu-check/summary.txt" "$work/gpu-summary.txt"
fi

"$after" datagen "$work/data" --count "${COUNT:-2000}" --classes 10 >/dev/null 2>&1 || { echo "datagen failed"; status=1; }
python3 bench/lease/ab.py --cli before="$before" --cli after="$after" --data "$work/data" --layouts "${LAYOUTS:-cpu,cpudec,mixed}" \
  --threads "${THREADS:-16}" --skip-timing --out "$work/digests" > "$work/digests.log" 2>&1 || status=1
if [ "${TIMING:-0}" = 1 ]; then
  python3 bench/lease/ab.py --cli before="$before" --cli after="$after" --data "$work/data" --layouts "${LAYOUTS:-cpu,cpudec,mixed}" \
    --threads "${THREADS:-16}" --repeats "${REPEATS:-3}" --warmup "${WARMUP:-10}" --seconds "${SECONDS_WINDOW:-30}" \
    --skip-digests --out "$work/timing" > "$work/timing.log" 2>&1 || status=1
fi
tar czf "$out/logs.tgz" -C "$work" . 2>/dev/null
{
  cat "$work/header.txt"
  [ -f "$work/gpu-summary.txt" ] && cat "$work/gpu-summary.txt"
  [ -f "$work/digests/summary.md" ] && sed -n '/## Output digests/,$p' "$work/digests/summary.md"
  [ -f "$work/timing/summary.md" ] && sed -n '/## Throughput/,$p' "$work/timing/summary.md"
} > "$out/summary.txt"
cat "$out/summary.txt"
exit $status
