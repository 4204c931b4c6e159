#!/usr/bin/env bash
# bench/lease/gpu-python.sh: the Python package's end-to-end check on the GPU machine, short enough to
# share one device call with the benchmark (bench/suite.sh runs it when GPU_PYTHON=1):
#   1. `python3 -m pytest tests/python` (the GPU tests of test_torch.py run there: zero copy,
#      held tensors, release while a stream still reads, read at once on an idle stream, the example);
#   2. examples/train_resnet50.py with --loader stoker (high, then normal stream priority), then
#      --loader pytorch, on DATA_DIR (TRAIN_RUNS picks them): one summary line each (img/s, GPU idle
#      waiting for data, final loss).
# Builds nothing: `import stoker` must work as the environment stands (PYTHONPATH: the installed
# wheel, see bench/lease/device-steps.sh) and torch/torchvision with CUDA must be there (else the
# examples are skipped, saying why). Not on a hot path.
# Output: the summary on stdout, full logs in /tmp/gpu-python, packed into $OUT/gpu-python-logs.tgz
# when OUT is set (one file: a device call brings back at most 8).
#   usage: bench/lease/gpu-python.sh DATA_DIR
# Settings (environment): TRAIN_STEPS (200), TRAIN_SECONDS (12: the timed steps stop there),
# TRAIN_BATCH (256), TRAIN_WORKERS (cores - 2), PYTEST_TIMEOUT_S (150), TRAIN_TIMEOUT_S (75 per loader).
# Exit status 0 only when pytest and both runs passed.
set -uo pipefail
cd "$(dirname "$0")/../.."
data=${1:?usage: bench/lease/gpu-python.sh DATA_DIR (class folders of JPEGs)}
logs=/tmp/gpu-python
rm -rf "$logs" && mkdir -p "$logs"
export PYTHONUNBUFFERED=1
failed=0

if ! python3 -c 'import stoker; print("gpu-python: stoker", getattr(stoker, "__version__", "?"), "from", stoker.__file__)'; then
  echo "gpu-python: stoker is not importable (PYTHONPATH=${PYTHONPATH:-})"
  exit 1
fi

# 1. the test suite; per-test limit where pytest-timeout is installed, stacks dumped after 100 s
start=$(date +%s)
per_test=()
python3 -c 'import pytest_timeout' 2>/dev/null && per_test=(--timeout=100)
timeout "${PYTEST_TIMEOUT_S:-150}" python3 -m pytest -v -rs --durations=6 -p no:cacheprovider \
  -o faulthandler_timeout=100 "${per_test[@]}" tests/python >"$logs/pytest.log" 2>&1
rc=$?
[ "$rc" = 0 ] || failed=1
echo "gpu-python: pytest tests/python rc=$rc in $(( $(date +%s) - start )) s: $(tail -1 "$logs/pytest.log")"
grep -E "^(FAILED|ERROR|SKIPPED)" "$logs/pytest.log" | head -20  # pytest's short summary
grep -E "^E   " "$logs/pytest.log" | head -12

# 2. the ResNet-50 example with each loader
if python3 -c 'import torch, torchvision, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
  workers=${TRAIN_WORKERS:-$(( $(nproc) > 3 ? $(nproc) - 2 : 1 ))}
  # runs: LOADER or stoker:PRIORITY (stoker's CUDA stream priority against the training step's)
  for run in ${TRAIN_RUNS:-stoker:high stoker:normal pytorch}; do
    loader=${run%%:*} extra=()
    [ "$loader" != "$run" ] && extra=(--stream-priority "${run#*:}")
    start=$(date +%s)
    timeout "${TRAIN_TIMEOUT_S:-75}" python3 examples/train_resnet50.py --data "$data" --loader "$loader" \
      --steps "${TRAIN_STEPS:-200}" --seconds "${TRAIN_SECONDS:-12}" --batch-size "${TRAIN_BATCH:-256}" \
      --workers "$workers" "${extra[@]}" >"$logs/train-${run/:/-}.log" 2>&1
    rc=$?
    [ "$rc" = 0 ] || failed=1
    line=$(grep '^train_resnet50:' "$logs/train-${run/:/-}.log" || tail -3 "$logs/train-${run/:/-}.log" | tr '\n' ' ')
    echo "gpu-python: train_resnet50 $run rc=$rc in $(( $(date +%s) - start )) s: $line"
  done
else
  echo "gpu-python: examples/train_resnet50.py not run: no torch/torchvision with a CUDA device here"
fi

where=$logs
if [ -n "${OUT:-}" ]; then
  mkdir -p "$OUT" && tar czf "$OUT/gpu-python-logs.tgz" -C /tmp gpu-python && where=$OUT/gpu-python-logs.tgz
fi
echo "gpu-python: logs in $where; $([ $failed = 0 ] && echo 'all passed' || echo 'SOMETHING FAILED')"
exit $failed
