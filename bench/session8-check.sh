#!/usr/bin/env bash
# bench/session8-check.sh: session 8's check call on the GPU machine (after bench/unpack-carry.sh):
# 1. the GPU tests of the merged tree (bench/gpu-check.sh; the video test on carried clips with the
#    carried minimal FFmpeg), 2. output digests of the mixed decoder with and without the prepare
#    task (STOKER_MIXED_TUNING early=0/1: the same seed must give the same bytes), 3. the A/B rows
#    of bench/diag-configs-s8d.txt (bench/diag-mixed.sh; not protocol rows). Files under $OUT.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/s8}; mkdir -p "$OUT"
export LD_LIBRARY_PATH=$PWD/.carry/build/lib:$PWD/.carry/build/ffmpeg STOKER_CLI=$PWD/.carry/build/stoker STOKER_SOURCE_DIR=$PWD
export STOKER_TEST_VIDEO_CLIPS=$PWD/.carry-video/test
cli=$PWD/.carry/build/stoker
GPU_TESTS="test_gpu_backend test_gpu_ops test_gpu_decoder test_gpu_pipeline test_gpu_checkpoint test_gpu_external_source test_gpu_external_gpu test_gpu_video" \
GPU_SANITIZED="test_gpu_decoder test_gpu_external_gpu" OUT=$OUT/gpu timeout 240 bash bench/gpu-check.sh .carry/build > $OUT/gpu-check.log 2>&1
echo "gpu-check rc=$?"; cat $OUT/gpu/summary.txt 2>/dev/null | tail -20
"$cli" datagen /tmp/dig --count 3000 --classes 30 --seed 3 > /dev/null 2>&1
for p in rn50-train rn50-val; do
  for e in 0 1; do
    d=$(STOKER_MIXED_TUNING=early=$e "$cli" bench --data /tmp/dig --pipeline $p --device gpu --decoder mixed --threads 16 --epochs 1 --json 2>/dev/null | python3 -c 'import json,sys; r=json.loads(sys.stdin.read().strip().splitlines()[-1]); print(r["output_digest"], r["images"])')
    echo "digest $p early=$e: $d"
  done
done
OUT=$OUT CONFIGS_FILE=bench/diag-configs-s8d.txt TESTS=none bash bench/diag-mixed.sh > $OUT/diag-run.log 2>&1
grep -v "^== \|^rc=" $OUT/diag.txt
tar -C $OUT -czf $OUT/gpu-logs.tgz gpu 2>/dev/null; rm -rf $OUT/gpu
