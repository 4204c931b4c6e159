#!/usr/bin/env bash
# tests/cli_datagen_video.sh: `stoker datagen --video` -- clip count, layout, frame count and size
# (ffprobe), determinism by seed, bad arguments; then the clips through readers.video in a pipeline
# file run by `stoker bench` (CPU decode). Skips (77) without the ffmpeg CLI.
set -u
CLI="${STOKER_CLI:?STOKER_CLI not set}"
command -v ffmpeg >/dev/null && command -v ffprobe >/dev/null || { echo "SKIP: no ffmpeg CLI"; exit 77; }
tmp=$(mktemp -d /tmp/stoker-datagen-video-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail=0
check() { if ! eval "$1"; then echo "FAIL: $2"; fail=1; fi; }

out=$("$CLI" datagen --video "$tmp/a" --count 5 --classes 2 --frames 20 --size 128x72 --gop 8 --seed 3) ||
  { echo "FAIL: datagen exited $?"; exit 1; }
echo "$out"
check '[ "$out" = "wrote 5 clips (20 frames of 128x72, h264) into 2 classes under $tmp/a" ]' "summary line"
check '[ "$(find "$tmp/a" -name "*.mp4" | wc -l)" -eq 5 ]' "5 clips"
check '[ "$(ls "$tmp/a/class_000")" = "$(printf "clip_0000.mp4\nclip_0002.mp4\nclip_0004.mp4")" ]' "class layout"
probe=$(ffprobe -v error -count_frames -show_entries stream=nb_read_frames,width,height -of csv=p=0 "$tmp/a/class_001/clip_0001.mp4")
check '[ "$probe" = "128,72,20" ]' "frames and size: $probe"
"$CLI" datagen --video "$tmp/b" --count 2 --classes 2 --frames 20 --size 128x72 --gop 8 --seed 3 >/dev/null
check 'cmp -s "$tmp/a/class_001/clip_0001.mp4" "$tmp/b/class_001/clip_0001.mp4"' "same seed, same clip"
check '! "$CLI" datagen --video "$tmp/c" --codec vp8 2>/dev/null' "unknown codec refused"
check '! "$CLI" datagen --video "$tmp/c" --size 13x9 2>/dev/null' "odd size refused"
check '! "$CLI" datagen --video "$tmp/c" --sources "$tmp/nothing" 2>/dev/null' "missing sources refused"

printf 'video, label, frame, ts = readers.video(sequence_length=8, step=4, random_shuffle=True)\noutputs(video, label, frame)\n' >"$tmp/video.pipe"
# 20 frames: starts 0, 4, 8, 12 (12 + 7 < 20) = 4 sequences per clip, 20 in all
bench=$("$CLI" bench --data "$tmp/a" --pipeline "$tmp/video.pipe" --batch 4 --threads 2 --epochs 1 2>&1)
echo "$bench"
check '[[ "$bench" == *"(20 sequences, 5 batches"* ]]' "bench reads 20 sequences in 5 batches"
check '[[ "$bench" == *"sequences/s "* && "$bench" != *"images/s"* ]]' "a video pipeline is measured in sequences/s"
json=$("$CLI" bench --data "$tmp/a" --pipeline "$tmp/video.pipe" --batch 4 --threads 2 --epochs 1 --json 2>/dev/null | tail -1)
check '[[ "$json" == *"\"unit\": \"sequences\""* ]]' "--json names the unit: $json"
check '[[ "$bench" == *"skipped files       0"* ]]' "nothing skipped"
exit $fail
