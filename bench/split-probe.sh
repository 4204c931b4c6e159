#!/usr/bin/env bash
# bench/split-probe.sh: a quick look (NOT protocol rows) at the fused kernel's batch in several
# launches (STOKER_FUSED_SPLIT) in the ResNet-50 view, for a lease with only minutes left: a small
# ImageNet-like set (COUNT, 3000), then one run per variant of examples/train_resnet50.py (stoker's
# CPU decoder; 10 s warm-up, WINDOW s, a 20-step profile whose timeline says how long the training
# stream stood still while stoker's kernels ran). Run on the GPU machine after bench/unpack-carry.sh;
# output under $OUT. Variants: VARIANTS, ';'-separated sets of the example's flags.
set -u
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/split-probe}
mkdir -p "$OUT"
export LD_LIBRARY_PATH=$PWD/.carry/build/lib:$PWD/.carry/build/ffmpeg${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
python3 -m pip install -q --no-index --no-deps --upgrade --target /tmp/stk .carry-py/wheel2/*.whl || exit 1
export PYTHONPATH=/tmp/stk
data=/tmp/split-probe-data
[ -d "$data" ] || python3 bench/make_dataset.py --kind imagenet --count "${COUNT:-3000}" --seed 1 --sources bench/.photos \
  --out "$data" > "$OUT/data.txt" 2>&1 || { echo "split-probe: no data (see data.txt)"; exit 1; }
echo "split-probe: commit $(cat .carry/COMMIT 2>/dev/null); $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)"
IFS=';' read -r -a variants <<< "${VARIANTS:---stream-priority high --fused-split 1;--stream-priority normal --fused-split 8}"
i=0
for v in "${variants[@]}"; do
  # shellcheck disable=SC2086 # a variant is a list of flags
  timeout "${RUN_S:-70}" python3 examples/train_resnet50.py --data "$data" --loader stoker --decode cpu --arch resnet50 \
    --image-size 224 --batch-size 256 --workers 14 --warmup-seconds 10 --seconds "${WINDOW:-15}" --steps 100000000 \
    --profile 20 $v > "$OUT/run$i.log" 2>&1
  echo "split-probe: [$v] rc=$? $(grep -h '^train_resnet50: loader' "$OUT/run$i.log" | grep -o 'img/s=[0-9.]*')"
  grep -h "^timeline: training\|^timeline:   stop" "$OUT/run$i.log" | head -4
  i=$((i + 1))
done
