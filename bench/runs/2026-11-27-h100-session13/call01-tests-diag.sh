#!/usr/bin/env bash
# Session 13, call 1 (device): the GPU tests of session 12's changes, then the rn50-val A/B
# (default vs STOKER_DENSE_IN_PLACE=0 vs STOKER_PINNED_OUTPUTS=0, diagnostic rows).
# Run from the repository root after bench/unpack-carry.sh. Summaries on stdout, logs under $OUT.
set -u
export LD_LIBRARY_PATH=$PWD/.carry/build/lib:$PWD/.carry/build/ffmpeg STOKER_CLI=$PWD/.carry/build/stoker \
  STOKER_SOURCE_DIR=$PWD STOKER_TEST_VIDEO_CLIPS=$PWD/.carry-video/test
logs=$(mktemp -d)
OUT=$logs GPU_TESTS="test_gpu_pipeline test_gpu_pinned_outputs test_gpu_video test_gpu_decoder test_gpu_decoder_strict test_gpu_sequence_ops" \
  GPU_SANITIZED="test_gpu_pinned_outputs" bash bench/gpu-check.sh .carry/build
echo "gpu-check rc=$?"
cat "$logs/summary.txt"
STOKER_HEVC_CRA_START=1 timeout 300 .carry/build/tests/test_gpu_video > "$logs/test_gpu_video-cra.log" 2>&1
echo "test_gpu_video STOKER_HEVC_CRA_START=1 rc=$? $(tail -1 "$logs/test_gpu_video-cra.log")"
{ cat "$logs/summary.txt"; for f in "$logs"/*.log; do echo "==== $(basename "$f")"; tail -n 60 "$f"; done; } > "$OUT/gpu-tests.txt"
for f in "$logs"/*.log; do grep -H -m5 -E "FAIL|fail:|ERROR SUMMARY|Assert|abort" "$f"; done | head -40
CONFIGS_FILE=bench/diag-configs-s13.txt TESTS=none OUT=$OUT/diag bash bench/diag-mixed.sh | tail -15
