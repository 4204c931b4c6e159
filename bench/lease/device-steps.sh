#!/usr/bin/env bash
# bench/lease/device-steps.sh: how the lead runs the GPU tests and the benchmark on the lent H100 in a
# few back-to-back calls, each carrying at most 64 MiB: one DALI wheel part per call (stashed in
# /tmp while the machine stays warm) plus one share of the GPU test binaries; the last call
# installs DALI, the stoker wheel, and runs bench/suite.sh. Builds nothing. Logs go to $OUT.
#   bench/lease/device-steps.sh tests DIR...      run the GPU test binaries in DIR (+ compute-sanitizer)
#   bench/lease/device-steps.sh bench             DALI install + stoker wheel + bench/suite.sh with the
#                                           Python GPU step (bench/lease/gpu-python.sh), all within
#                                           CALL_LIMIT_S (600, one device call): the peers' time
#                                           budget is what the other steps leave
#   bench/lease/device-steps.sh python            stoker wheel + a 2,000-image set + bench/lease/gpu-python.sh
# The stoker wheel is taken from STOKER_WHEEL_DIR (.carry5/wheel), the CLI from STOKER_CLI
# (.carry5/stoker).
set -uo pipefail
cd "$(dirname "$0")/../.."
deadline=$(( $(date +%s) + ${CALL_LIMIT_S:-600} - 20 ))  # 20 s spare: packing $OUT, a late row
out=${OUT:-/tmp/device-out}
wheels=${STOKER_WHEEL_DIR:-.carry5/wheel}
mkdir -p "$out"
export STOKER_SOURCE_DIR=$PWD
[ -d .whl-parts ] && bash bench/dali_install.sh stash
san=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
case "${1:-}" in
  tests)
    shift
    logs=/tmp/gpu-logs
    mkdir -p $logs
    for dir in "$@"; do
      for t in "$dir"/test_gpu_*; do
        name=$(basename "$t")
        start=$(date +%s)
        timeout 300 "$t" > "$logs/$name.log" 2>&1
        echo "$name rc=$? $(( $(date +%s) - start ))s: $(tail -1 "$logs/$name.log")"
        grep -E "max|mean|worst|tolerance|split|node" "$logs/$name.log" | head -12
        for tool in ${SANITIZERS:-}; do
          start=$(date +%s)
          timeout 300 "$san" --tool "$tool" --error-exitcode 99 "$t" > "$logs/$tool-$name.log" 2>&1
          echo "  compute-sanitizer $tool $name rc=$? $(( $(date +%s) - start ))s: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$logs/$tool-$name.log" | tail -1)"
        done
      done
    done
    tar czf "$out/gpu-logs-$(date +%s).tgz" -C /tmp gpu-logs ;;
  bench)
    bash bench/dali_install.sh install || echo "device-steps: DALI could not be installed; its rows will say so"
    python3 -m pip install -q --no-index --no-deps --upgrade --target /tmp/stk "$wheels"/*.whl || exit 1
    export STOKER_PYTHONPATH=/tmp/stk PYTHONPATH=/tmp/site
    # BUDGET large by default: the deadline decides how long the peers may run
    DEADLINE=$deadline BUDGET=${BUDGET:-600} GPU_PYTHON=${GPU_PYTHON:-1} STOKER_CLI=${STOKER_CLI:-.carry5/stoker} \
      bash bench/suite.sh ;;
  python)
    python3 -m pip install -q --no-index --no-deps --upgrade --target /tmp/stk "$wheels"/*.whl || exit 1
    export PYTHONPATH=/tmp/stk${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
    data=${DATA_DIR:-/tmp/stoker-bench}/imagenet-python
    python3 bench/make_dataset.py --kind imagenet --out "$data" --count "${COUNT:-2000}" --seed 1 \
      --sources bench/.photos >/dev/null || { echo "device-steps: the sample set failed its checks"; exit 1; }
    OUT=$out bash bench/lease/gpu-python.sh "$data" ;;
  *) echo "usage: $0 tests DIR... | bench | python" >&2; exit 2 ;;
esac
