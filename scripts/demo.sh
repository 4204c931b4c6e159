#!/usr/bin/env bash
# scripts/demo.sh: the README's main job. Makes a small sample data set, prints the topology and
# runs the rn50-train pipeline with live progress and a throughput summary, on the GPU when there
# is one, else on the CPU; then shorter runs of the same pipeline from WebDataset tar shards and of
# a video pipeline (readers.video on sample clips; skipped, saying why, without the ffmpeg CLI that
# makes the clips).
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

shards=${STOKER_DEMO_SHARDS:-build/demo-shards}
if [ ! -d "$shards/shards" ]; then
  rm -rf "$shards"
  "$stoker" datagen "$shards" --count 512 --classes 8 --seed 1 --shards 4
fi
echo
echo "== rn50-train on $device from 4 tar shards (readers.webdataset, no index) =="
"$stoker" bench --shards "$shards/shards" --pipeline rn50-train --device "$device" --batch 64 --warmup 2 --seconds 5

echo
if ! command -v ffmpeg >/dev/null 2>&1; then
  echo "== video: skipped (no ffmpeg CLI to make the sample clips: make demo installs it, or apt install ffmpeg) =="
  exit 0
fi
clips=${STOKER_DEMO_CLIPS:-build/demo-clips}
if [ ! -d "$clips" ]; then
  "$stoker" datagen --video "$clips" --count 8 --frames 48 --size 320x180
fi
pipe=$clips.pipe # kept beside the clips: stoker bench --data $clips --pipeline $pipe runs it again
cat >"$pipe" <<PIPE
frames, labels, first_frame, timestamps = readers.video(device="$device", sequence_length=16, stride=2, random_shuffle=True)
outputs(frames, labels)
PIPE
echo "== video on $device: readers.video, 16-frame sequences of 320x180 clips =="
"$stoker" bench --data "$clips" --pipeline "$pipe" --device "$device" --batch 8 --threads 2 --warmup 2 --seconds 5
