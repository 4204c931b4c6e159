#!/usr/bin/env bash
# bench/lease/video-gpu.sh: issue 17's GPU video call, the one script the lead runs on the GPU machine
# (after bash bench/lease/unpack-carry.sh): the GPU video tests, then the comparison of bench/video_peers.py
# (stoker readers.video on NVDEC and on the CPU, DALI fn.readers.video on the GPU, TorchCodec CUDA
# and CPU) under the protocol, with NVDEC utilisation. Fails soft: without a GPU the GPU tests skip,
# the GPU rows are skipped rows with the reason and the CPU rows still run. Not on a hot path.
#
# Here, on the build machine, first (makes what the call carries; see docs/operators-video.md):
#   bash bench/lease/ffmpeg-min.sh && bash bench/lease/pack-carry.sh    # .carry: stoker, GPU tests, FFmpeg 5.1
#   bash bench/lease/torchcodec_wheels.sh                         # .carry-tc: TorchCodec for torch 2.11
#   bash bench/lease/video-gpu.sh --prepare                       # .carry-video: clip sets + test clips
# On the GPU machine, one clip set a call (a call carries at most 64 MiB): carry .carry .carry-tc
# .carry-video/test .carry-video/<SET> (4.5 MB at 720p H.264, 8.8 MB at 1080p) and, for DALI,
# .whl-parts/call05 after stashing call01-04 with `bash bench/dali_install.sh stash` in earlier calls:
#   bash bench/lease/unpack-carry.sh && SETS=720p-h264 bash bench/lease/video-gpu.sh
#
# $OUT gets four files: gpu-tests.txt, run.json, results-section.md, log.txt.
# Settings (environment): SETS (clip sets this call measures; default "720p-h264"; made by
# --prepare: 720p-h264 1080p-h264 720p-hevc 1080p-hevc), LOADERS (stoker-gpu,dali-gpu,
# torchcodec-cuda,stoker-cpu,torchcodec-cpu), THREADS (2, DALI's video example), BATCH (8),
# WARMUP (10), WINDOW (30), REPEATS (3), QUICK=1 (WARMUP=3 WINDOW=10: a smoke test, not protocol
# numbers), BUDGET_S (seconds for the measured runs; default: what is left of CALL_S=560 after the
# tests and installs; the lowest-priority rows are dropped, and say so), SKIP_TESTS=1, GPU_TESTS
# (test_gpu_video), GPU_SANITIZED (none). --prepare: COUNT (8 clips a set), FRAMES (96).
# One full-protocol set with four GPU-machine rows is ~8 minutes: one set per call.
set -uo pipefail
cd "$(dirname "$0")/../.."
ALL_SETS="720p-h264 1080p-h264 720p-hevc 1080p-hevc"

set_args() {  # 1080p-hevc -> 1920x1080 hevc
  local h=${1%%p-*} codec=${1#*-}
  case $h in 720) echo "1280x720 $codec" ;; 1080) echo "1920x1080 $codec" ;; *) return 1 ;; esac
}

if [ "${1:-}" = "--prepare" ]; then
  set -e
  cli=${STOKER_CLI:-}
  [ -n "$cli" ] || for c in build-nocuda/stoker build/stoker; do [ -x "$c" ] && cli=$c && break; done
  [ -x "$cli" ] || { echo "video-gpu: no stoker CLI to make the clips (build it, or STOKER_CLI=)" >&2; exit 2; }
  py=bench/.cache/video-venv/bin/python
  if ! "$py" -c 'import av, numpy' 2>/dev/null; then
    python3 -m venv bench/.cache/video-venv && "$py" -m pip install -q av numpy
  fi
  count=${COUNT:-8} frames=${FRAMES:-96}
  for s in ${SETS:-$ALL_SETS}; do
    read -r size codec <<<"$(set_args "$s")" || { echo "video-gpu: SETS: '$s' is not 720p-h264 / 1080p-hevc / ..." >&2; exit 2; }
    dir=.carry-video/$s
    stamp="$size $codec $count $frames"
    [ "$(cat "$dir/.stamp" 2>/dev/null)" = "$stamp" ] && continue
    rm -rf "$dir" && mkdir -p .carry-video
    t0=$(date +%s)
    "$cli" datagen --video "$dir" --count "$count" --frames "$frames" --size "$size" --codec "$codec"
    "$py" bench/video_peers.py --write-index --data "$dir"
    echo "$stamp" >"$dir/.stamp"
    echo "video-gpu: made $dir ($(du -sh "$dir" | cut -f1)) in $(( $(date +%s) - t0 )) s"
  done
  # test_gpu_video's own clips (it makes them where ffmpeg is, before it looks for a GPU)
  # (any build's binary will do: it makes them before it looks for a GPU)
  for test in ${TEST_BIN:-build/tests/test_gpu_video build-nocuda/tests/test_gpu_video}; do
    [ -x "$test" ] || continue
    STOKER_TEST_VIDEO_CLIPS=$PWD/.carry-video/test "$test" >/dev/null 2>&1 || true
    break
  done
  ls .carry-video/test/h264.mp4 .carry-video/test/hevc.mp4 >/dev/null ||
    echo "video-gpu: test clips missing in .carry-video/test (build tests/test_gpu_video, then --prepare again)" >&2
  echo "video-gpu: .carry-video $(du -sh .carry-video | cut -f1)"
  exit 0
fi

if [ "${QUICK:-0}" = 1 ]; then WARMUP=${WARMUP:-3} WINDOW=${WINDOW:-10}; fi
# the build's commit (the device copy's git may be stale): what pack-carry recorded
[ -z "${COMMIT:-}" ] && [ -f .carry/COMMIT ] && export COMMIT=$(cat .carry/COMMIT)
export WARMUP=${WARMUP:-10} WINDOW=${WINDOW:-30} REPEATS=${REPEATS:-3} THREADS=${THREADS:-2}
SETS=${SETS:-720p-h264}
LOADERS=${LOADERS:-stoker-gpu,dali-gpu,torchcodec-cuda,stoker-cpu,torchcodec-cpu}
OUT=${OUT:-bench/out/video-gpu-$(date -u +%Y%m%d-%H%M%S)}
mkdir -p "$OUT"
exec > >(tee -a "$OUT/log.txt") 2>&1
t0=$(date +%s)
build=.carry/build
if [ ! -x "$build/stoker" ] && [ -f .carry/build.tar.xz ]; then bash bench/lease/unpack-carry.sh; fi
cli=${STOKER_CLI:-$build/stoker}
[ -x "$cli" ] || for c in build/stoker build-nocuda/stoker; do [ -x "$c" ] && cli=$c && break; done
[ -x "$cli" ] || { echo "video-gpu: no stoker CLI (.carry/build from bench/lease/pack-carry.sh + unpack-carry.sh)" >&2; exit 2; }
echo "video-gpu: stoker $("$cli" --version 2>&1 | head -1) ($cli); GPU: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null || echo none)"
ffmpeg_dir=$PWD/$build/ffmpeg
[ -d "$ffmpeg_dir" ] || ffmpeg_dir=
export FFMPEG_LIB_DIR=$ffmpeg_dir
export STOKER_FFMPEG=${ffmpeg_dir:+"minimal FFmpeg $(cat "$ffmpeg_dir/STAMP" 2>/dev/null) (bench/lease/ffmpeg-min.sh, carried)"}

# 1. the GPU video tests (gpu-check.sh writes many files: kept in a temporary folder, summed up in one)
if [ "${SKIP_TESTS:-0}" != 1 ]; then
  if [ -d "$build/tests" ]; then
    logs=$(mktemp -d)
    STOKER_TEST_VIDEO_CLIPS=$PWD/.carry-video/test LD_LIBRARY_PATH="$build/lib${ffmpeg_dir:+:$ffmpeg_dir}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
      OUT=$logs GPU_TESTS=${GPU_TESTS:-test_gpu_video} GPU_SANITIZED=${GPU_SANITIZED:- } \
      bash bench/gpu-check.sh "$build"
    echo "video-gpu: GPU tests rc=$?"
    { cat "$logs/summary.txt"; for f in "$logs"/*.log; do echo "==== $(basename "$f")"; tail -n 80 "$f"; done; } >"$OUT/gpu-tests.txt"
    rm -rf "$logs"
  else
    echo "video-gpu: no $build/tests (GPU tests not run)" | tee "$OUT/gpu-tests.txt"
  fi
fi

# 2. the peers: DALI (bench/dali_wheels.sh parts, stashed by earlier calls) and TorchCodec
if [ -d .whl-parts ]; then bash bench/dali_install.sh stash || true; fi
if [ -f /tmp/dali-parts/MANIFEST ] && ! PYTHONPATH=/tmp/site python3 -c 'import nvidia.dali' 2>/dev/null; then
  bash bench/dali_install.sh install || echo "video-gpu: DALI not installed (the dali-gpu row says why)"
fi
# TorchCodec: the first staged candidate that imports and decodes a clip on CUDA, else the first
# that imports (bench/lease/torchcodec_wheels.sh stages them in order of preference)
torch_mm=$(python3 -c 'import torch; print(".".join(torch.__version__.split("+")[0].split(".")[:2]))' 2>/dev/null)
probe_clip=$(ls .carry-video/*/class_000/*.mp4 2>/dev/null | head -1)
tc_site=
for cand in .carry-tc/torch"$torch_mm"/*/; do
  [ -n "$torch_mm" ] && [ -d "$cand" ] || continue
  site=/tmp/tc-site-$(basename "$cand")
  [ -d "$site/torchcodec" ] || python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target "$site" \
    "$cand"*.whl .carry-tc/common/*.whl || continue
  check=$(LD_LIBRARY_PATH=${ffmpeg_dir:+$ffmpeg_dir:}${LD_LIBRARY_PATH:-} PYTHONPATH=$site python3 -c '
import sys, torchcodec
from torchcodec.decoders import VideoDecoder
try:
    VideoDecoder(sys.argv[1], device="cuda")[0]
    print("cuda", torchcodec.__version__)
except Exception as e:
    print("cpu", torchcodec.__version__, "(CUDA decode: %s)" % str(e).splitlines()[0][:160])
' "$probe_clip" 2>/dev/null | tail -1)
  echo "video-gpu: TorchCodec candidate $cand: ${check:-does not import}"
  [ -n "$check" ] && [ -z "$tc_site" ] && tc_site=$site
  case $check in cuda*) tc_site=$site; break ;; esac
done
[ -n "$tc_site" ] || echo "video-gpu: no TorchCodec for torch '${torch_mm:-none}' imports (bench/lease/torchcodec_wheels.sh $torch_mm): its rows are skipped"
export PYTHONPATH=${tc_site:+$tc_site:}/tmp/site${PYTHONPATH:+:$PYTHONPATH}

# 3. the comparison, in what is left of the call
data=()
for s in $SETS; do
  if [ -f ".carry-video/$s/clips.json" ]; then data+=(--data "$s=.carry-video/$s")
  else echo "video-gpu: clip set $s not carried (bench/lease/video-gpu.sh --prepare here, carry .carry-video)"; fi
done
[ ${#data[@]} -gt 0 ] || { echo "video-gpu: no clip sets: nothing to measure" >&2; exit 2; }
left=$(( ${CALL_S:-560} - ($(date +%s) - t0) ))
export BUDGET_S=${BUDGET_S:-$left}
export VIDEO_COMPARE_COMMAND="SETS='$SETS' LOADERS=$LOADERS THREADS=$THREADS WARMUP=$WARMUP WINDOW=$WINDOW REPEATS=$REPEATS BUDGET_S=$BUDGET_S bash bench/lease/video-gpu.sh"
py=${PYTHON:-python3}
"$py" -c 'import numpy' 2>/dev/null || py=bench/.cache/video-venv/bin/python
PYTHONUNBUFFERED=1 "$py" bench/video_peers.py --stoker "$cli" "${data[@]}" --loaders "$LOADERS" --threads "$THREADS" \
  --batch "${BATCH:-8}" --sweep-seconds 0 --budget "$BUDGET_S" --out "$OUT"
rc=$?
echo "video-gpu: rc=$rc in $(( $(date +%s) - t0 )) s; $OUT: $(ls "$OUT" | tr '\n' ' ')"
exit $rc
