#!/usr/bin/env bash
# Session 13, call 10 (lease 2, first call) (device): the GPU tests of the lane-retry and HEVC CRA-start commits.
set -u
export LD_LIBRARY_PATH=$PWD/.carry/build/lib:$PWD/.carry/build/ffmpeg STOKER_CLI=$PWD/.carry/build/stoker \
  STOKER_SOURCE_DIR=$PWD STOKER_TEST_VIDEO_CLIPS=$PWD/.carry-video/test
logs=$(mktemp -d)
OUT=$logs GPU_TESTS="test_gpu_pipeline test_gpu_video" GPU_SANITIZED=" " bash bench/gpu-check.sh .carry/build
echo "gpu-check rc=$?"
{ cat "$logs/summary.txt"; for f in "$logs"/*.log; do echo "==== $(basename "$f")"; tail -n 80 "$f"; done; } > "$OUT/gpu-tests.txt"
for f in "$logs"/*.log; do grep -H -E "FAIL|CHECK failed|out of memory|HEVC with" "$f"; done | head -30
