#!/usr/bin/env bash
# scripts/demo.sh: the README's main job. Makes a small sample data set, prints the topology and
# runs the rn50-train pipeline with live progress and a throughput summary, on the GPU when there
# is one, else on the CPU.
set -euo pipefail
stoker=${1:-build/stoker}
data=${STOKER_DEMO_DATA:-build/demo-data}
if [ ! -d "$data" ]; then
  "$stoker" datagen "$data" --count 512 --classes 8 --seed 1
fi
"$stoker" topo
device=cpu
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then device=gpu; fi
echo
echo "== rn50-train on $device =="
"$stoker" bench --data "$data" --pipeline rn50-train --device "$device" --batch 64 --warmup 3 --seconds 10
