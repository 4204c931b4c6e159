#!/usr/bin/env bash
# bench/session15-hires-check.sh: the engine-path A/B on the high-resolution set (issue 15), on the
# GPU machine after bench/unpack-carry.sh; two calls on the same warm machine (each < 10 min):
#   PART=check: makes /tmp/stoker-hires when absent (make_dataset.py --kind hires --count 5000
#     --seed 2, as bench/hires-compare.sh's STEP=data: ~100 s on 16 cores), runs test_gpu_decoder
#     with the new STOKER_MIXED_TUNING knobs (order, ex, all of nvImageCodec's settings together) and
#     test_gpu_pipeline (its split cases, lanes_early on and off), and
#     compares one epoch's output_digest of decode-only on that set with each of them against the
#     defaults (order and ex must not change the bytes).
#   PART=ab: the diagnostic rows of CONFIGS (default bench/diag-configs-s15-hires.txt; next:
#     bench/diag-configs-s16-hires.txt, what limits the GPU-Huffman row: prefetch 1-3, separate
#     engine handles, sets, batch, the split) (bench/diag-mixed.sh, DATA=the
#     set; 4 s warm-up, 10 s window, one run each: NOT protocol rows) with NVML's SM and JPEG %.
#   PART=lanes (session 15, after the first A/B): the set when absent, test_gpu_pipeline's
#     lanes_early cases (the parallel lanes, one worker included), then bench/diag-configs-s15b-hires.txt
#     (which of the nvImageCodec knobs carry the gain; lanes_early with the GPU-Huffman share; with
#     NVML's device memory in use).
#   PART=val: the same for rn50-val on the ImageNet-like set (CONFIGS, default
#     bench/diag-configs-s15-val.txt: the blocking-sync, lanes_early + cuda_decoder_load and padding
#     knobs against the 1.2x target; next: bench/diag-configs-s18-val.txt, the weight tables on the
#     worker pool against STOKER_GPU_SERIAL_WEIGHTS=1, rn50-val and rn50-train).
# Files under $OUT. Not on a hot path.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/s15}; mkdir -p "$OUT"
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
      bash bench/diag-mixed.sh > "$OUT/tests.log" 2>&1
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
    [ -d "$data" ] || { echo "session15-hires-check.sh: $data is missing: run PART=check first"; exit 2; }
    OUT=$OUT CONFIGS_FILE=${CONFIGS:-bench/diag-configs-s15-hires.txt} TESTS=none DATA=$data bash bench/diag-mixed.sh \
      > "$OUT/diag-run.log" 2>&1
    grep -v "^== \|^rc=" "$OUT/diag.txt" ;;
  lanes)
    if [ ! -d "$data" ]; then
      python3 bench/make_dataset.py --kind hires --out "$data" --count 5000 --seed 2 --sources bench/.photos 2>&1 | tail -1
    fi
    for t in test_split_cuda_decoder test_split_cuda_decoder_lanes_in_run_batch test_split_cuda_decoder_one_worker; do
      timeout 120 .carry/build/tests/test_gpu_pipeline "$t" > "$OUT/$t.log" 2>&1
      echo "$t rc=$? $(grep 'split hw' "$OUT/$t.log" | cut -c1-200); $(tail -1 "$OUT/$t.log")"
    done
    OUT=$OUT CONFIGS_FILE=bench/diag-configs-s15b-hires.txt TESTS=none DATA=$data bash bench/diag-mixed.sh \
      > "$OUT/diag-run.log" 2>&1
    grep -v "^== \|^rc=" "$OUT/diag.txt" ;;
  val)  # rn50-val on the ImageNet-like set (diag-mixed.sh makes /tmp/stoker-cmp when absent): the 1.2x target's levers
    env -u DATA ${VAL_DATA:+DATA=$VAL_DATA} OUT=$OUT CONFIGS_FILE=${CONFIGS:-bench/diag-configs-s15-val.txt} TESTS=none \
      bash bench/diag-mixed.sh > "$OUT/diag-run.log" 2>&1
    grep -v "^== \|^rc=" "$OUT/diag.txt" ;;
  *) echo "session15-hires-check.sh: PART must be check, ab, lanes or val"; exit 2 ;;
esac
