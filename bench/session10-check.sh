#!/usr/bin/env bash
# bench/session10-check.sh: session 10's check call on the GPU machine (after bench/unpack-carry.sh).
# 1. every GPU test (bench/gpu-check.sh), test_gpu_decoder_strict (issue 14's validate_entropy on
#    the mixed decoder) among them, compute-sanitizer on it and on the video test;
# 2. the Python suite with a CUDA build of the package (.carry-py wheel; resharding's tests among
#    them), installed under /tmp/stkpy;
# 3. issue 14's decoder agreement on damaged JPEGs and the decode-only validate_entropy rows
#    (bench/bad-jpeg-gpu.sh).
# Files under $OUT. Not on a hot path.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/s10}; mkdir -p "$OUT"
export LD_LIBRARY_PATH=$PWD/.carry/build/lib:$PWD/.carry/build/ffmpeg STOKER_CLI=$PWD/.carry/build/stoker STOKER_SOURCE_DIR=$PWD
export STOKER_TEST_VIDEO_CLIPS=$PWD/.carry-video/test
echo "commit $(cat .carry/COMMIT 2>/dev/null)"; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
GPU_TESTS="${GPU_TESTS:-test_gpu_decoder_strict test_gpu_video test_gpu_backend test_gpu_ops test_gpu_decoder test_gpu_pipeline test_gpu_checkpoint test_gpu_external_source test_gpu_external_gpu}" \
GPU_SANITIZED="${GPU_SANITIZED:-test_gpu_decoder_strict test_gpu_video}" OUT=$OUT/gpu timeout 330 bash bench/gpu-check.sh .carry/build > $OUT/gpu-check.log 2>&1
echo "gpu-check rc=$?"; tail -24 $OUT/gpu/summary.txt 2>/dev/null
if [ -d .carry-py ]; then
  rm -rf /tmp/stkpy && python3 -m pip install -q --no-deps --no-index --target /tmp/stkpy .carry-py/*.whl > $OUT/pip.log 2>&1
  echo "pip rc=$?"
  (cd tests/python && PYTHONPATH=/tmp/stkpy timeout ${PY_TIMEOUT:-240} python3 -m pytest -q -rs -p no:cacheprovider . > $OUT/pytest.log 2>&1)
  echo "pytest rc=$?"; tail -20 $OUT/pytest.log
fi
OUT=$OUT/badjpeg timeout 240 bash bench/bad-jpeg-gpu.sh > $OUT/bad-jpeg.log 2>&1
echo "bad-jpeg rc=$?"; grep -v "^    " $OUT/bad-jpeg.log
tar -C $OUT -czf $OUT/gpu-logs.tgz gpu badjpeg 2>/dev/null; rm -rf $OUT/gpu $OUT/badjpeg
# The entropy check's cost (issue 14; informal rows, not the protocol: 4 s warm-up, 12 s windows,
# alternated twice): decode-only, readers.file + decoders.image mixed with validate_entropy off/on, on
# 4,000 `stoker datagen` images (ImageNet-like), 16 threads, batch 256, no digest.
if [ "${COST:-1}" = 1 ]; then
  d=/tmp/s10cost; rm -rf $d; "$STOKER_CLI" datagen $d --count 4000 --classes 10 --seed 3 >/dev/null
  printf '%-9s %-6s %10s %8s\n' validate round img_s cores | tee $OUT/validate-cost.txt
  for round in 1 2; do
    for check in False True; do
      printf 'files, labels = readers.file(file_root="%s", random_shuffle=True)\nimages = decoders.image(files, device="mixed", validate_entropy=%s)\noutputs(images, labels)\n' $d $check > $d.pipe
      "$STOKER_CLI" bench --data $d --pipeline $d.pipe --device gpu --batch 256 --threads 16 --warmup 4 --seconds 12 \
        --no-digest --json > $OUT/cost-$check-$round.json 2> $OUT/cost-$check-$round.err
      python3 - $OUT/cost-$check-$round.json $check $round <<'PY' | tee -a $OUT/validate-cost.txt
import json, sys
try:
    r = json.loads(open(sys.argv[1]).read().strip().splitlines()[-1])
    print("%-9s %-6s %10.0f %8.1f" % (sys.argv[2], sys.argv[3], r["images_per_second"], r["cpu_cores_busy"]))
except Exception as e:
    print("%-9s %-6s failed: %s" % (sys.argv[2], sys.argv[3], e))
PY
    done
  done
fi
# Diagnostic A/B rows (not protocol rows): hardware-backend handles for the engine submissions
# (STOKER_MIXED_TUNING handles=N) on rn50-val and decode-only, with the per-batch trace; the decoder
# test with handles=2 first (same bytes).
if [ "${DIAG:-1}" = 1 ]; then
  OUT=$OUT/diag TESTS=test_gpu_decoder TUNINGS="handles=2" CONFIGS_FILE=bench/diag-configs-s10.txt \
    timeout ${DIAG_S:-300} bash bench/diag-mixed.sh > $OUT/diag-run.log 2>&1
  grep -v "^rc=" $OUT/diag/diag.txt | tail -40
fi
