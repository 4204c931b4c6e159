#!/usr/bin/env bash
# bench/video-compare.sh: the video measurement on this machine in one command: makes the clips
# with `stoker datagen --video` (cached under bench/.cache/video/, same seed = same clips, with a
# clips.json index), a Python with PyAV (bench/.cache/video-venv, pip install av numpy) unless
# PYTHON is given, then runs bench/video_peers.py (stoker readers.video CPU path vs PyAV
# threads/processes, TorchCodec CPU when it imports; the GPU rows are skipped rows, with the
# reason, where there is no GPU) under the protocol and writes run.json + results-section.md to
# OUT. On the GPU machine use bench/lease/video-gpu.sh (it carries its clips). Not on stoker's hot path.
#
# Settings (environment): THREADS (2), WARMUP (10), WINDOW (30), REPEATS (3), SWEEP_S (3: the
# short run that picks PyAV's pool kind; 0 = both kinds as protocol rows), SIZES ("1280x720"),
# CODECS ("h264"; "h264 hevc" adds HEVC sets, labelled 720p-hevc),
# COUNT (8 clips), FRAMES (96 frames: 6 sequences of 16 a clip), STOKER_CLI (build-nocuda/stoker,
# else build/stoker), PYTHON, OUT (bench/out/video-DATE), LOADERS (all).
# Smoke test: WARMUP=1 WINDOW=3 REPEATS=2 SWEEP_S=2 COUNT=4 FRAMES=48 bash bench/video-compare.sh
set -euo pipefail
cd "$(dirname "$0")/.."
THREADS=${THREADS:-2} WARMUP=${WARMUP:-10} WINDOW=${WINDOW:-30} REPEATS=${REPEATS:-3} SWEEP_S=${SWEEP_S:-3}
SIZES=${SIZES:-1280x720} CODECS=${CODECS:-h264} COUNT=${COUNT:-8} FRAMES=${FRAMES:-96}
export THREADS WARMUP WINDOW REPEATS SWEEP_S SIZES COUNT FRAMES
export VIDEO_COMPARE_COMMAND="THREADS=$THREADS WARMUP=$WARMUP WINDOW=$WINDOW REPEATS=$REPEATS SWEEP_S=$SWEEP_S SIZES='$SIZES' CODECS='$CODECS' COUNT=$COUNT FRAMES=$FRAMES${LOADERS:+ LOADERS=$LOADERS} bash bench/video-compare.sh"
OUT=${OUT:-bench/out/video-$(date -u +%Y%m%d-%H%M%S)}
if [ -z "${STOKER_CLI:-}" ]; then
  for c in build-nocuda/stoker build/stoker; do [ -x "$c" ] && STOKER_CLI=$c && break; done
fi
[ -x "${STOKER_CLI:-}" ] || { echo "video-compare: no stoker CLI (build it, or set STOKER_CLI)" >&2; exit 2; }

if [ -z "${PYTHON:-}" ]; then
  PYTHON=bench/.cache/video-venv/bin/python
  if ! "$PYTHON" -c 'import av, numpy' 2>/dev/null; then
    python3 -m venv bench/.cache/video-venv
    "$PYTHON" -m pip install -q av numpy
  fi
fi
"$PYTHON" -c 'import av, numpy' || { echo "video-compare: $PYTHON cannot import av and numpy" >&2; exit 2; }

data=()
for size in $SIZES; do
  [[ $size =~ ^[0-9]+x([0-9]+)$ ]] || { echo "video-compare: SIZES: '$size' is not WxH" >&2; exit 2; }
  for codec in $CODECS; do
    dir=bench/.cache/video/$size-c$COUNT-f$FRAMES  # the H.264 sets keep their earlier names
    [ "$codec" = h264 ] || dir=bench/.cache/video/$size-$codec-c$COUNT-f$FRAMES
    if [ ! -f "$dir/.done" ]; then
      rm -rf "$dir"
      t0=$(date +%s)
      mkdir -p "$(dirname "$dir")"
      "$STOKER_CLI" datagen --video "$dir" --count "$COUNT" --frames "$FRAMES" --size "$size" --codec "$codec"
      touch "$dir/.done"
      echo "video-compare: made $dir in $(( $(date +%s) - t0 )) s"
    fi
    [ -f "$dir/clips.json" ] || "$PYTHON" bench/video_peers.py --write-index --data "$dir"
    label=${BASH_REMATCH[1]}p
    [ "$codec" = h264 ] || label=$label-$codec
    data+=(--data "$label=$dir")
  done
done

mkdir -p "$OUT"
"$PYTHON" bench/video_peers.py --stoker "$STOKER_CLI" "${data[@]}" --out "$OUT" \
  ${LOADERS:+--loaders "$LOADERS"} 2>&1 | tee "$OUT/log.txt"
echo "video-compare: $OUT/run.json, $OUT/results-section.md"
