#!/usr/bin/env bash
# bench/gpu-check.sh: runs every GPU check on the GPU machine in one call, from an existing
# build (it BUILDS NOTHING: the build directory is carried from the build machine).
#   1. all GPU tests:          ctest -R gpu
#   2. compute-sanitizer memcheck and racecheck on test_gpu_ops (and test_gpu_backend)
#   3. a short table; logs under $OUT (when set) or build/gpu-check/.
# Usage: bench/gpu-check.sh [BUILD_DIR]   (default: build)
set -u
BUILD_DIR="${1:-build}"
LOG_DIR="${OUT:-$BUILD_DIR/gpu-check}"
mkdir -p "$LOG_DIR"
if [ ! -d "$BUILD_DIR/tests" ]; then
  echo "gpu-check: no build at $BUILD_DIR (build it on the build machine and carry it)" >&2
  exit 2
fi
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv > "$LOG_DIR/nvidia-smi.txt" 2>&1 || true
declare -A RESULT
(cd "$BUILD_DIR" && ctest -R gpu --output-on-failure) > "$LOG_DIR/ctest.log" 2>&1
RESULT[ctest]=$?
SAN=""
for candidate in compute-sanitizer /usr/local/cuda/bin/compute-sanitizer /usr/local/cuda/compute-sanitizer/compute-sanitizer; do
  if command -v "$candidate" >/dev/null 2>&1; then SAN="$candidate"; break; fi
done
for tool in memcheck racecheck; do
  for t in test_gpu_ops test_gpu_backend; do
    key="$tool:$t"
    if [ -z "$SAN" ]; then RESULT[$key]="n/a"; continue; fi
    "$SAN" --tool "$tool" --error-exitcode 99 "$BUILD_DIR/tests/$t" > "$LOG_DIR/$tool-$t.log" 2>&1
    RESULT[$key]=$?
  done
done
printf '%-28s %s\n' "check" "result (0 = pass, 77 = skipped)" | tee "$LOG_DIR/summary.txt"
printf '%-28s %s\n' "ctest -R gpu" "${RESULT[ctest]}" | tee -a "$LOG_DIR/summary.txt"
for tool in memcheck racecheck; do
  for t in test_gpu_ops test_gpu_backend; do
    printf '%-28s %s\n' "$tool $t" "${RESULT[$tool:$t]}" | tee -a "$LOG_DIR/summary.txt"
  done
done
grep -E "checks|SKIP|max|worst|node" "$LOG_DIR/ctest.log" | head -40 | tee -a "$LOG_DIR/summary.txt"
[ "${RESULT[ctest]}" = 0 ] || exit 1
