#!/usr/bin/env bash
# bench/session12-final.sh: session 12's last device call (what the remaining budget allowed), on the
# GPU machine after bench/unpack-carry.sh, carrying .carry and .carry-py (the CUDA wheel):
#   1. GPU tests of the session's last changes: test_gpu_pinned_outputs, test_gpu_pipeline (its
#      cuda_decoder_load split case), test_gpu_decoder, test_gpu_decoder_strict (the lanes changed);
#   2. .npy into GPU memory, stoker only, pinned host outputs (default) vs STOKER_PINNED_OUTPUTS=0
#      (bench/shards-compare.sh PART=numpy, 2,000 files of 2 MB; the DALI rows fail: not installed);
#   3. rn50-val diagnostic rows (NOT protocol rows: 4 s warm-up, 10 s window, one run per setting)
#      of the mixed decoder's cuda_decoder_load: stoker bench on the rn50-val graph written out
#      with hw_decoder_load / cuda_decoder_load, 10,000 `stoker datagen` images, batch 256, 16
#      threads, prefetch 4. Prints img/s, cores and the decoders' route counts.
# Not on a hot path. Output under $OUT.
set -uo pipefail
cd "$(dirname "$0")/.."
export LD_LIBRARY_PATH=$PWD/.carry/build/lib:$PWD/.carry/build/ffmpeg
cli=$PWD/.carry/build/stoker
out=${OUT:-/tmp/session12-final}
mkdir -p "$out"
echo "commit $(cat .carry/COMMIT)"; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
STOKER_CLI=$cli STOKER_SOURCE_DIR=$PWD GPU_TESTS="test_gpu_pinned_outputs test_gpu_pipeline test_gpu_decoder test_gpu_decoder_strict" \
  GPU_SANITIZED="test_gpu_pinned_outputs" OUT=$out/tests timeout 150 bash bench/gpu-check.sh .carry/build >/dev/null 2>&1
cat "$out/tests/summary.txt"
python3 -m pip install -q --no-index --no-deps --target /tmp/stk .carry-py/wheel2/*.whl
for pinned in 1 0; do
  STOKER_PINNED_OUTPUTS=$pinned STOKER_CLI=$cli EXTRA_PYTHONPATH=/tmp/stk PART=numpy NPY_FILES=2000 HARD_S=60 \
    OUT=$out/numpy-pinned$pinned timeout 80 bash bench/shards-compare.sh 2>&1 | grep -E '^\| (np|stoker)' |
    sed "s/^/STOKER_PINNED_OUTPUTS=$pinned /"
done
data=/tmp/val-data
"$cli" datagen "$data" --count 10000 --classes 100 --seed 1 | tail -1
for setting in 0.8,0 0.8,0.3 0.8,0.6 0.8,0 1.0,0.5; do
  IFS=, read -r hw cuda <<<"$setting"
  cat > /tmp/val.pipe <<PIPE
jpegs, labels = readers.file(random_shuffle=False, name="Reader")
decoded = decoders.image(jpegs, device="mixed", output_type="RGB", hw_decoder_load=$hw, cuda_decoder_load=$cuda)
resized = resize(decoded, device="gpu", resize_shorter=256)
images = crop_mirror_normalize(resized, device="gpu", dtype="float", output_layout="CHW", crop=[224, 224], mean=[123.675, 116.28, 103.53], std=[58.395, 57.12, 57.375])
outputs(images, labels)
PIPE
  "$cli" bench --data "$data" --pipeline /tmp/val.pipe --device gpu --batch 256 --threads 16 --prefetch 4 --warmup 4 \
    --seconds 10 --json --no-digest > "$out/val-hw$hw-cuda$cuda.json" 2> "$out/val-hw$hw-cuda$cuda.err"
  python3 - "$out/val-hw$hw-cuda$cuda.json" "$hw" "$cuda" <<'PY'
import json, sys
try:
    r = json.load(open(sys.argv[1]))
except Exception as e:
    print("hw %s cuda %s: no result (%s)" % (sys.argv[2], sys.argv[3], e)); sys.exit()
flat = {}
def walk(p, v):
    if isinstance(v, dict):
        for k, x in v.items(): walk(p + k + ".", x)
    else: flat[p[:-1]] = v
walk("", r)
keys = [k for k in flat if any(w in k for w in ("images_per_second", "cpu_cores_busy", "decoded_", "allocations_after_warmup"))]
print("hw %s cuda %s: " % (sys.argv[2], sys.argv[3]) + ", ".join("%s=%s" % (k, flat[k]) for k in sorted(keys)))
PY
done
