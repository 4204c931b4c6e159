#!/usr/bin/env bash
# scripts/run-dali-examples.sh DALI_DIR DATA_DIR [cpu|gpu]: runs the data loading of DALI's own
# examples with only the import lines changed (nvidia.dali -> stoker), from a copy of DALI's
# repository the caller fetched (DALI_DIR; this script fetches nothing and the project keeps no
# DALI file). Each example file found is copied to a temporary directory, its imports swapped by
# sed, and its pipeline function run for a few batches on DATA_DIR (an ImageFolder tree, e.g.
# `stoker datagen` or bench/make_dataset.py output). Skips cleanly (exit 0, a printed reason) when
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
resnet="$dali/docs/examples/use_cases/pytorch/resnet50/main.py"
if [ -f "$resnet" ]; then
  swap "$resnet" resnet50_main.py
  echo "== ResNet-50 create_dali_pipeline ($device)"
  (cd "$work" && "$python" - "$data" "$device" <<'PY') || status=1
import sys
import resnet50_main as m
from stoker.plugin.pytorch import DALIClassificationIterator, LastBatchPolicy
data, device = sys.argv[1], sys.argv[2]
pipe = m.create_dali_pipeline(batch_size=8, num_threads=2, device_id=0 if device == "gpu" else None, seed=12,
                              data_dir=data, crop=224, size=256, dali_cpu=device == "cpu", shard_id=0,
                              num_shards=1, is_training=True)
pipe.build()
it = DALIClassificationIterator(pipe, reader_name="Reader", last_batch_policy=LastBatchPolicy.PARTIAL)
for i, batch in enumerate(it):
    print("batch", i, tuple(batch[0]["data"].shape), tuple(batch[0]["label"].shape))
    if i == 2:
        break
PY
else
  echo "== ResNet-50: $resnet not found, skipped"
fi
exit $status
