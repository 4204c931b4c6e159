#!/usr/bin/env bash
# bench/gpu-check.sh: runs every GPU check on the GPU machine in one call, from an existing
# build (it BUILDS NOTHING: the build directory is carried from the build machine).
#   1. the GPU tests, one by one: test_gpu_backend, test_gpu_ops, test_gpu_decoder, test_gpu_pipeline
#   2. compute-sanitizer memcheck and racecheck on test_gpu_ops, test_gpu_decoder, test_gpu_backend
#      (memcheck runs the cases that fail CUDA calls on purpose with API-error reports off: api_error_cases)
#   3. a short table (summary.txt); full logs and the measured differences (measurements.txt)
#      under $OUT when set, else BUILD_DIR/gpu-check/.
# Usage: bench/gpu-check.sh [BUILD_DIR]   (default: build). Exit 0 only when everything passed.
set -u
BUILD_DIR="${1:-build}"
LOG_DIR="${OUT:-$BUILD_DIR/gpu-check}"
TESTS=${GPU_TESTS:-"test_gpu_backend test_gpu_ops test_gpu_decoder test_gpu_pipeline"}
SANITIZED=${GPU_SANITIZED:-"test_gpu_ops test_gpu_decoder test_gpu_backend"}
mkdir -p "$LOG_DIR"
if [ ! -d "$BUILD_DIR/tests" ]; then
  echo "gpu-check: no build at $BUILD_DIR (build it on the build machine and carry it)" >&2
  exit 2
fi
{ command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader; } > "$LOG_DIR/nvidia-smi.txt" 2>&1 || echo "no nvidia-smi" > "$LOG_DIR/nvidia-smi.txt"

verdict() { case "$1" in 0) echo pass ;; 77) echo skip ;; 124) echo timeout ;; *) echo "FAIL($1)" ;; esac; }

SAN=""
for candidate in compute-sanitizer /usr/local/cuda/bin/compute-sanitizer /usr/local/cuda/compute-sanitizer/compute-sanitizer; do
  if command -v "$candidate" >/dev/null 2>&1; then SAN="$candidate"; break; fi
done

# Test cases that make CUDA API calls fail on purpose, per test binary (memcheck above).
api_error_cases() { case "$1" in test_gpu_backend) echo "test_device_oom" ;; esac; }

failed=0
summary="$LOG_DIR/summary.txt"
{
  echo "gpu-check on $(cat "$LOG_DIR/nvidia-smi.txt" 2>/dev/null | head -1)"
  printf '%-34s %-9s %s\n' "check" "result" "seconds"
} > "$summary"
for t in $TESTS; do
  start=$(date +%s)
  (cd "$BUILD_DIR/tests" && STOKER_SOURCE_DIR="${STOKER_SOURCE_DIR:-$PWD/../..}" timeout 580 "./$t") > "$LOG_DIR/$t.log" 2>&1
  rc=$?
  [ "$rc" = 0 ] || [ "$rc" = 77 ] || failed=1 # a skip says why in the table; it is no failure
  printf '%-34s %-9s %s\n' "$t" "$(verdict $rc)" "$(( $(date +%s) - start ))" >> "$summary"
done
for tool in memcheck racecheck; do
  for t in $SANITIZED; do
    if [ -z "$SAN" ]; then
      printf '%-34s %-9s\n' "$tool $t" "n/a" >> "$summary"
      failed=1
      continue
    fi
    start=$(date +%s)
    expected=$(api_error_cases "$t")
    if [ "$tool" = memcheck ] && [ -n "$expected" ]; then
      # cases that provoke CUDA API errors on purpose (an out-of-memory test): memcheck reports each
      # failed API call as an error, so those cases run with API-error reports off (memory access
      # still checked) and every other case runs by name with full reporting.
      rc=0
      : > "$LOG_DIR/$tool-$t.log"
      for c in $(cd "$BUILD_DIR/tests" && "./$t" --list); do
        api=()
        case " $expected " in *" $c "*) api=(--report-api-errors no) ;; esac
        (cd "$BUILD_DIR/tests" && timeout 300 "$SAN" --tool memcheck "${api[@]}" --error-exitcode 99 "./$t" "$c") >> "$LOG_DIR/$tool-$t.log" 2>&1 || rc=$?
      done
    else
      (cd "$BUILD_DIR/tests" && timeout 580 "$SAN" --tool "$tool" --error-exitcode 99 "./$t") > "$LOG_DIR/$tool-$t.log" 2>&1
      rc=$?
    fi
    [ "$rc" = 0 ] || failed=1
    printf '%-34s %-9s %s\n' "$tool $t" "$(verdict $rc)" "$(( $(date +%s) - start ))" >> "$summary"
  done
done
# The measured differences, counters and failed checks, for the record (not in the table).
grep -hE "worst|mean|max|decoded|digest|allocations|CHECK failed|SKIP|checks," $(for t in $TESTS; do echo "$LOG_DIR/$t.log"; done) \
  > "$LOG_DIR/measurements.txt" 2>/dev/null
grep -h "CHECK failed" "$LOG_DIR"/*.log 2>/dev/null | head -5 >> "$summary"
cat "$summary"
exit $failed
