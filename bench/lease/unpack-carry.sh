#!/usr/bin/env bash
# bench/lease/unpack-carry.sh: the device side of bench/lease/pack-carry.sh. Unpacks .carry/build.tar.xz into
# .carry/build (bin/: stoker and the GPU tests; lib/: their shared libraries; ffmpeg/: the minimal
# FFmpeg 5.1 of bench/lease/ffmpeg-min.sh, when packed) and lays out a build directory bench/gpu-check.sh
# accepts (.carry/build/tests/test_gpu_*; run them with LD_LIBRARY_PATH=.carry/build/lib:.carry/build/ffmpeg)
# and .carry/build/stoker, a wrapper that sets it for the CLI alone. FFmpeg is a folder of its own so
# a Python peer (TorchCodec) can be given FFmpeg alone, not our libcurl, libssl, ... The unpacked
# copy stays for later calls while the machine is warm. Not on a hot path.
set -euo pipefail
cd "$(dirname "$0")/../.."
[ -f .carry/build.tar.xz ] || { echo "unpack-carry: no .carry/build.tar.xz (bench/lease/pack-carry.sh, then carry .carry)" >&2; exit 2; }
rm -rf .carry/build && mkdir -p .carry/build/tests
tar -C .carry/build -xJf .carry/build.tar.xz
mv .carry/build/bin/test_gpu_* .carry/build/tests/ 2>/dev/null || true
# The CLI through a wrapper that puts the carried libraries on the path for itself only, so a
# Python peer started by the same script keeps the machine's own libssl, libz, ...
libs=$PWD/.carry/build/lib
[ -d .carry/build/ffmpeg ] && libs=$libs:$PWD/.carry/build/ffmpeg
printf '#!/bin/sh\nLD_LIBRARY_PATH="%s${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" exec "%s/bin/stoker" "$@"\n' \
  "$libs" "$PWD/.carry/build" > .carry/build/stoker
chmod +x .carry/build/stoker
echo "unpack-carry: .carry/build ready (commit $(cut -c1-12 .carry/COMMIT 2>/dev/null)); LD_LIBRARY_PATH=$libs"
[ -d .carry/build/ffmpeg ] || echo "unpack-carry: no FFmpeg carried (bench/lease/ffmpeg-min.sh before bench/lease/pack-carry.sh): readers.video cannot run here" >&2
