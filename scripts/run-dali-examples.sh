#!/usr/bin/env bash
# scripts/run-dali-examples.sh DALI_DIR DATA_DIR [cpu|gpu]: runs the data loading of DALI's own
# examples with only the import lines changed (nvidia.dali -> stoker), from a copy of DALI's
# repository the caller fetched (DALI_DIR; this script fetches nothing and the project keeps no
# DALI file). Each example file found is copied to a temporary directory, its imports swapped by
# sed and nothing else, and its pipelines run for a few batches by scripts/dali_examples.py on
# DATA_DIR (an ImageFolder tree, e.g. `stoker datagen` or bench/make_dataset.py output) and, for
# the video tutorial, on VIDEO_DIR's clips (`stoker datagen --video`; made here when unset and
# ffmpeg is there). "cpu" maps the GPU requests DALI's code makes without offering a CPU choice
# (`.gpu()`, device="mixed") to the CPU; "gpu" runs the code as written. Skips cleanly (exit 0, a printed reason) when
# DALI_DIR or DATA_DIR is absent. docs/porting.md, "DALI's own examples, run unchanged", records
# the runs.
set -u
dali=${1:-}
data=${2:-}
device=${3:-cpu}
if [ -z "$dali" ] || [ ! -d "$dali" ]; then
  echo "run-dali-examples: skipped: no DALI checkout at '${dali}' (give its directory as the first argument)"
  exit 0
fi
if [ -z "$data" ] || [ ! -d "$data" ]; then
  echo "run-dali-examples: skipped: no data set at '${data}' (an ImageFolder tree as the second argument)"
  exit 0
fi
python=${PYTHON:-python3}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
swap() { # copy $1 to $work/$2 with the import swap only
  sed -e 's/nvidia\.dali\.plugin\.pytorch/stoker.plugin.pytorch/g' -e 's/from nvidia\.dali/from stoker/g' \
      -e 's/import nvidia\.dali\./import stoker./g' -e 's/nvidia\.dali/stoker/g' "$1" > "$work/$2"
}
status=0
here=$(cd "$(dirname "$0")" && pwd)
video=${VIDEO_DIR:-}
if [ -z "$video" ] && command -v ffmpeg >/dev/null 2>&1 && command -v stoker >/dev/null 2>&1; then
  video="$work/clips"
  stoker datagen --video "$video" --count 4 --classes 2 --frames 24 --size 64x48 >/dev/null 2>&1 || video=""
fi
run() { # run NAME DALI_PATH: one example, import-swapped, through scripts/dali_examples.py
  local name=$1 file="$dali/$2"
  if [ ! -f "$file" ]; then
    echo "== $name: $2 not found in $dali, skipped"
    return
  fi
  swap "$file" "$(basename "$file")"
  echo "== $name ($device): $2"
  (cd "$work" && VIDEO_DIR="$video" "$python" "$here/dali_examples.py" "$name" "$(basename "$file")" "$data" \
      "$device") || { echo "== $name: FAILED"; status=1; }
}
run resnet50 docs/examples/use_cases/pytorch/resnet50/main.py
run efficientnet docs/examples/use_cases/pytorch/efficientnet/image_classification/dali.py
run webdataset docs/examples/general/data_loading/dataloading_webdataset.ipynb
if [ -n "$video" ]; then
  run video docs/examples/sequence_processing/video/video_reader_simple_example.ipynb
else
  echo "== video: skipped: no VIDEO_DIR and no ffmpeg + stoker CLI to make clips"
fi
exit $status
