#!/usr/bin/env bash
# bench/lease/router-probe.sh: a short look at the automatic router on the GPU machine before the
# protocol's rows are spent on it: makes the ImageNet-like set (compare.sh STEP=data, from
# bench/.photos), then runs `stoker bench` once per row -- the automatic split and fixed
# hw_decoder_load 1.0 / 0.95 / 0.8, at 8 and at 16 CPUs (taskset; PROBE_ROWS, PROBE_CORES; a row
# LOAD:P also sets --prefetch P) -- with a short clock
# (PROBE_WARMUP, PROBE_SECONDS; default 5 s and 15 s). NOT protocol rows (one run each, short
# windows): they say which split the router picks and roughly what each split gives, nothing more.
# Prints one line per row (img/s, busy cores, images on the engines / CPU, the router's record)
# and keeps each row's JSON and stderr under $OUT. Needs bench/lease/unpack-carry.sh first.
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/probe}
mkdir -p "$OUT"
export STOKER_CLI=$PWD/.carry/build/stoker STOKER_SOURCE_DIR=$PWD COUNT=${COUNT:-10000}
set_dir=/tmp/stoker-cmp
# made once per warm machine (KEEP_DATA: a later call, or headline-job.sh's data step, reuses it)
env DATA_DIR="$set_dir" KEEP_DATA=1 MODE=val STEP=data DATASET=photos OUT="$OUT/data" bash bench/compare.sh > "$OUT/data.log" 2>&1 ||
  { tail -20 "$OUT/data.log"; exit 1; }
text='jpegs, labels = readers.file(random_shuffle=True, name="Reader")
decoded = decoders.image_random_crop(jpegs, device="mixed", output_type="RGB"KNOBS)
resized = resize(decoded, device="gpu", resize_x=224, resize_y=224)
coin = random.coin_flip(probability=0.5)
images = crop_mirror_normalize(resized, device="gpu", dtype="float", output_layout="CHW", crop=[224, 224], mean=[123.675, 116.28, 103.53], std=[58.395, 57.12, 57.375], mirror=coin)
outputs(images, labels)'
for cores in ${PROBE_CORES:-8 16}; do
  for row in ${PROBE_ROWS:-auto 1.0 0.95 0.8}; do
    load=${row%%:*} prefetch=2 knobs=""
    [ "$load" = "$row" ] || prefetch=${row#*:}
    [ "$load" = auto ] || knobs=", hw_decoder_load=$load"
    printf '%s\n' "${text/KNOBS/$knobs}" > "$OUT/$row.txt"
    taskset -c 0-$((cores - 1)) "$STOKER_CLI" bench --device gpu --pipeline "$OUT/$row.txt" --data "$set_dir" \
      --threads "$cores" --prefetch "$prefetch" --warmup "${PROBE_WARMUP:-5}" --seconds "${PROBE_SECONDS:-15}" --no-digest --json \
      > "$OUT/$cores-$row.json" 2> "$OUT/$cores-$row.stderr"
    python3 - "$OUT/$cores-$row.json" "$OUT/$cores-$row.stderr" "$cores" "$row" <<'PY'
import json, sys
try:
    r = json.loads(open(sys.argv[1]).read().strip().splitlines()[-1])
except (ValueError, IndexError):
    print(f"{sys.argv[3]:>2} CPUs {sys.argv[4]:>5}: no result; " + open(sys.argv[2]).read()[-300:]); sys.exit()
route = [l.split(': ', 2)[-1] for l in open(sys.argv[2]) if 'hw_decoder_load' in l]
print(f"{sys.argv[3]:>2} CPUs {sys.argv[4]:>5}: {r['images_per_second']:8.0f} img/s  {r['cpu_cores_busy']:4.1f} cores  "
      f"hw {r['decoded_hw']} cpu {r['decoded_cpu']}  {route[-1] if route else ''}")
PY
  done
done
