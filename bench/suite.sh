#!/usr/bin/env bash
# bench/suite.sh: the whole benchmark suite in one call on the GPU machine (BUDGET + data sets; on the
# protocol clock only the first rows fit a 300 s budget: RUNS picks them).
# Not on a hot path. Builds nothing: build/stoker and the Python package are carried, and the
# source photographs in bench/.photos (bench/fetch_photos.sh). Steps:
#   1. wheels carried in .whl/ (if any) go into /tmp/site, as does DALI from bench/dali_install.sh;
#   2. the data sets are made in /tmp from the photographs (bench/make_dataset.py, checked);
#   2b. with GPU_PYTHON=1, bench/lease/gpu-python.sh: the Python tests and examples/train_resnet50.py
#      with each loader on the ImageNet-like set (gpu-python-logs.tgz; its lines in the log);
#   3. bench/peers.py runs every loader, each in its own subprocess, within a time budget, on the
#      protocol's clock (WARMUP s excluded, SECONDS_PER_RUN s window, REPEATS runs per row in one
#      shuffled order): the budget cuts the suite's later rows; bench/compare.sh is the one-call
#      protocol comparison with equal tuning;
#   4. bench/report.py appends the table to bench/RESULTS.md and draws the chart.
# Results go to $OUT (the device machine's return folder) or bench/out/DATE/: run.json,
# results-section.md (the part appended to RESULTS.md: copy it into the repo's RESULTS.md),
# chart.png, RESULTS.md and the log.
# Settings (environment): COUNT (10000), HIRES_COUNT (1000), SECONDS_PER_RUN (30), WARMUP (10),
# REPEATS (3), ORDER_SEED (from the clock), BUDGET (300 s
# for step 3), DEADLINE (epoch seconds by which everything must be done: step 3's budget shrinks
# to fit, keeping REPORT_RESERVE_S (25) for step 4), GPU_PYTHON (0), GPU_PYTHON_TIMEOUT_S (200),
# RUNS (peers.py run tokens; default all), SKIP (loaders to leave out), STOKER_CLI
# (build/stoker), STOKER_PYTHONPATH (where the stoker package is importable from; default
# build/python and python, where they exist), DATA_DIR (/tmp/stoker-bench), RESULTS_MD
# (bench/RESULTS.md).
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-bench/out/$(date +%Y%m%d-%H%M%S)}
data=${DATA_DIR:-/tmp/stoker-bench}
results_md=${RESULTS_MD:-bench/RESULTS.md}
mkdir -p "$out" "$data"
exec > >(tee "$out/log.txt") 2>&1
export PYTHONUNBUFFERED=1

if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
    || echo "suite.sh: installing the carried wheels failed; the rows that need them will say so"
fi
extra_path=""
for dir in ${STOKER_PYTHONPATH:-build/python:python} /tmp/site; do
  for d in ${dir//:/ }; do [ -d "$d" ] && extra_path="$extra_path:$(cd "$d" && pwd)"; done
done
export PYTHONPATH="${extra_path#:}${PYTHONPATH:+:$PYTHONPATH}"
echo "suite.sh: PYTHONPATH=$PYTHONPATH"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null || echo "suite.sh: no nvidia-smi"

start=$(date +%s)
python3 bench/make_dataset.py --kind imagenet --out "$data/imagenet" --count "${COUNT:-10000}" --seed 1 \
  --sources bench/.photos || { echo "suite.sh: the ImageNet-like set failed its checks"; exit 1; }
python3 bench/make_dataset.py --kind hires --out "$data/hires" --count "${HIRES_COUNT:-1000}" --seed 2 \
  --sources bench/.photos || { echo "suite.sh: the high-resolution set failed its checks"; exit 1; }
echo "suite.sh: data sets made in $(( $(date +%s) - start )) s"

python_status=0
if [ "${GPU_PYTHON:-0}" = 1 ]; then
  OUT=$out timeout "${GPU_PYTHON_TIMEOUT_S:-200}" bash bench/lease/gpu-python.sh "$data/imagenet"
  python_status=$?
  [ "$python_status" = 124 ] && echo "suite.sh: bench/lease/gpu-python.sh stopped after ${GPU_PYTHON_TIMEOUT_S:-200} s"
fi

budget=${BUDGET:-300}
if [ -n "${DEADLINE:-}" ]; then
  left=$(( DEADLINE - $(date +%s) - ${REPORT_RESERVE_S:-25} ))
  [ "$left" -lt "${budget%.*}" ] && budget=$(( left > 0 ? left : 1 ))
  echo "suite.sh: peers.py budget $budget s (DEADLINE in $(( DEADLINE - $(date +%s) )) s)"
fi
runs=()
[ -n "${RUNS:-}" ] && runs=(--runs $RUNS)
export COMMIT=${COMMIT:-$(git rev-parse HEAD 2>/dev/null || echo unknown)}
seed=()
[ -n "${ORDER_SEED:-}" ] && seed=(--order-seed "$ORDER_SEED")
python3 bench/peers.py --data "$data/imagenet" --hires "$data/hires" --seconds "${SECONDS_PER_RUN:-30}" \
  --warmup "${WARMUP:-10}" --repeats "${REPEATS:-3}" "${seed[@]}" \
  --budget "$budget" --stoker "${STOKER_CLI:-build/stoker}" --skip "${SKIP:-}" "${runs[@]}" \
  --out "$out/run.json"
status=$?

if [ -f "$out/run.json" ]; then
  python3 bench/report.py "$out/run.json" --results "$results_md" --section "$out/results-section.md" \
    --chart "$out/chart.png" >/dev/null && cp "$results_md" "$out/RESULTS.md"
  cat "$out/results-section.md"
fi
echo "suite.sh: done in $(( $(date +%s) - start )) s; results in $out"
[ "$status" = 0 ] && status=$python_status
exit $status
