#!/usr/bin/env bash
# bench/lease/mixed-ab.sh: the mixed decoder's engine settings on the GPU machine (after
# bench/lease/unpack-carry.sh), on the carried build. Diagnostic rows, not protocol rows.
#   PART=check: makes /tmp/stoker-hires when absent (make_dataset.py --kind hires --count 5000
#     --seed 2, as bench/hires-compare.sh's STEP=data), runs test_gpu_decoder with several
#     STOKER_MIXED_TUNING settings and test_gpu_pipeline, and compares one epoch's output_digest of
#     decode-only on that set with each of them against the defaults (the bytes must not change).
#   PART=ab: the rows of CONFIGS (required: one row a line, `mode=... hw=... p=... t=... tune=...`;
#     e.g. bench/lease/ab-train.txt) on the hires set through bench/lease/diag-mixed.sh, with NVML's
#     SM and JPEG utilisation.
#   PART=val: the same on the ImageNet-like set (VAL_DATA, else diag-mixed.sh makes /tmp/stoker-cmp).
# Files under $OUT. Not on a hot path.
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/mixed-ab}; mkdir -p "$OUT"
export LD_LIBRARY_PATH=$PWD/.carry/build/lib STOKER_CLI=$PWD/.carry/build/stoker STOKER_SOURCE_DIR=$PWD
cli=$PWD/.carry/build/stoker
data=${DATA:-/tmp/stoker-hires}
all="prealloc_n=256,prealloc_w=2320,prealloc_h=1504,dev_padding=211025920,pin_padding=140544512,ex=1,order=1"
case "${PART:-check}" in
  check)
    if [ ! -d "$data" ]; then
      python3 bench/make_dataset.py --kind hires --out "$data" --count 5000 --seed 2 --sources bench/.photos 2>&1 | tail -2
    fi
    TESTS=test_gpu_decoder TUNINGS="order=1 ex=1 $all" CONFIGS_FILE=/dev/null DATA=$data OUT=$OUT \
      bash bench/lease/diag-mixed.sh > "$OUT/tests.log" 2>&1
    grep "^== \|^rc=" "$OUT/diag.txt"
    # the split cases (lanes_early on by default; test_split_cuda_decoder_lanes_in_run_batch sets 0) and the rest
    timeout 300 .carry/build/tests/test_gpu_pipeline > "$OUT/test_gpu_pipeline.log" 2>&1
    echo "test_gpu_pipeline rc=$? $(grep -c 'lanes_early\|split hw_decoder_load' "$OUT/test_gpu_pipeline.log") split lines; $(tail -1 "$OUT/test_gpu_pipeline.log")"
    pipe=$OUT/decode.pipe
    printf '%s\n' 'files, labels = readers.file(random_shuffle=True)' \
      'images = decoders.image(files, device="mixed", hw_decoder_load=1)' 'outputs(images, labels)' > "$pipe"
    for t in "" order=1 ex=1 "$all"; do
      d=$(STOKER_MIXED_TUNING=$t timeout 120 "$cli" bench --data "$data" --pipeline "$pipe" --device gpu --decoder mixed \
        --threads 16 --batch 256 --epochs 1 --json 2>/dev/null |
        python3 -c 'import json,sys; r=json.loads(sys.stdin.read().strip().splitlines()[-1]); print(r["output_digest"], r["images"])')
      echo "digest decode hw=1 STOKER_MIXED_TUNING='$t': $d"
    done ;;
  ab)
    [ -d "$data" ] || { echo "mixed-ab.sh: $data is missing: run PART=check first"; exit 2; }
    OUT=$OUT CONFIGS_FILE=${CONFIGS:?CONFIGS: a file of rows, e.g. bench/lease/ab-train.txt} TESTS=none DATA=$data bash bench/lease/diag-mixed.sh \
      > "$OUT/diag-run.log" 2>&1
    grep -v "^== \|^rc=" "$OUT/diag.txt" ;;
  val)  # rn50-val on the ImageNet-like set (diag-mixed.sh makes /tmp/stoker-cmp when absent): the 1.2x target's levers
    env -u DATA ${VAL_DATA:+DATA=$VAL_DATA} OUT=$OUT CONFIGS_FILE=${CONFIGS:?CONFIGS: a file of rows, e.g. bench/lease/ab-train.txt} TESTS=none \
      bash bench/lease/diag-mixed.sh > "$OUT/diag-run.log" 2>&1
    grep -v "^== \|^rc=" "$OUT/diag.txt" ;;
  *) echo "mixed-ab.sh: PART must be check, ab or val"; exit 2 ;;
esac
