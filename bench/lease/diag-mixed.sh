#!/usr/bin/env bash
# bench/lease/diag-mixed.sh: one device call (after bench/lease/unpack-carry.sh) that checks the mixed
# decoder's engine settings for correctness (test_gpu_decoder with each STOKER_MIXED_TUNING given)
# and then A/Bs them with bench/lease/diag_mixed.py on the rn50 set compare.sh uses (stoker datagen
# --count 10000 --classes 100 --seed 1), or on DATA (a set made before, e.g. /tmp/stoker-hires by
# `STEP=data bash bench/hires-compare.sh` on the same warm machine). Diagnostic rows, not protocol
# rows. Writes $OUT/diag.json, $OUT/diag.txt. Not on a hot path.
# usage: OUT=... TESTS="test_gpu_decoder ..." TUNINGS="roi=1,prealloc=1,sets=3" CONFIGS_FILE=file [DATA=dir] bash bench/lease/diag-mixed.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/diag}; mkdir -p "$OUT"
cli=$PWD/.carry/build/stoker
export LD_LIBRARY_PATH=$PWD/.carry/build/lib STOKER_CLI=$cli STOKER_SOURCE_DIR=$PWD
{
  echo "commit $(cat .carry/COMMIT) on $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader) $(nproc) cpus"
  for t in "" ${TUNINGS:-}; do
    for test in ${TESTS:-test_gpu_decoder}; do
      [ "$test" = none ] && continue
      echo "== $test STOKER_MIXED_TUNING='$t'"
      STOKER_MIXED_TUNING=$t timeout 120 .carry/build/tests/$test > /tmp/$test.log 2>&1
      echo "rc=$? $(tail -1 /tmp/$test.log)"
    done
  done
  data=${DATA:-/tmp/stoker-cmp}
  if [ -z "${DATA:-}" ]; then
    [ -d $data ] || "$cli" datagen $data --count 10000 --classes 100 --seed 1 2>&1 | tail -1
  elif [ ! -d "$data" ]; then
    echo "diag-mixed.sh: DATA=$data does not exist (make it first: STEP=data bash bench/hires-compare.sh)"; exit 2
  fi
  echo "data $data: $(find "$data" -name '*.jpg' | wc -l) jpg files"
  mapfile -t cfg < "${CONFIGS_FILE:-/dev/null}"
  args=()
  for c in "${cfg[@]}"; do [ -n "$c" ] && args+=(--config "$c"); done
  if [ ${#args[@]} -gt 0 ]; then
    python3 bench/lease/diag_mixed.py --stoker "$cli" --data "$data" --out "$OUT/diag.json" \
      --warmup "${WARMUP:-4}" --seconds "${SECONDS_:-10}" "${args[@]}"
  fi
} 2>&1 | tee "$OUT/diag.txt"
