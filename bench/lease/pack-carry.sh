#!/usr/bin/env bash
# bench/lease/pack-carry.sh: packs what a device call needs from this machine's CUDA build into .carry/
# (the GPU machine has no Debian dev packages and builds nothing): the CLI and the GPU test
# binaries (xz, to fit a call's 64 MiB with a DALI wheel part beside them), the shared libraries
# they need that a bare CUDA image lacks (libcurl and its dependencies, from ldd), the commit, and,
# when bench/lease/ffmpeg-min.sh has built it, the minimal FFmpeg 5.1 (ffmpeg/: the sonames readers.video
# dlopen()s and TorchCodec links; the GPU machine has no FFmpeg). On the device: bench/lease/unpack-carry.sh.
# Not on a hot path.
# usage: bench/lease/pack-carry.sh [BUILD_DIR]   (default build)
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build}
[ -x "$build/stoker" ] || { echo "pack-carry: no $build/stoker (make build first)" >&2; exit 2; }
rm -rf .carry && mkdir -p .carry/stage/bin .carry/stage/lib
cp "$build/stoker" .carry/stage/bin/
for t in "$build"/tests/test_gpu_*; do [ -x "$t" ] && cp "$t" .carry/stage/bin/; done
# libraries outside the C and C++ runtimes (a CUDA base image has libc, libm, libdl, libpthread, librt,
# libstdc++, libgcc_s: ours could be older than what torch or DALI there need)
ldd "$build/stoker" | awk '/=> \// {print $3}' | grep -Ev '/(libc|libm|libdl|libpthread|librt|libstdc\+\+|libgcc_s|ld-linux[^/]*)\.so' |
  while read -r lib; do cp -L "$lib" .carry/stage/lib/; done || true # none: the CLI needs only the C runtime
git rev-parse HEAD > .carry/COMMIT
parts=(bin lib)
ffmpeg=bench/.cache/ffmpeg-min
if [ -f "$ffmpeg/STAMP" ]; then
  # by soname (what dlopen() and the links ask for), each one file
  mkdir -p .carry/stage/ffmpeg
  for so in "$ffmpeg"/lib/lib*.so.[0-9]*; do
    name=$(basename "$so")
    if [[ $name =~ ^lib[a-z]+\.so\.[0-9]+$ ]]; then cp -L "$so" .carry/stage/ffmpeg/; fi
  done
  cp "$ffmpeg/STAMP" .carry/stage/ffmpeg/STAMP
  parts+=(ffmpeg)
else
  echo "pack-carry: no minimal FFmpeg (bench/lease/ffmpeg-min.sh): readers.video will not load on the GPU machine" >&2
fi
tar -C .carry/stage -cJf .carry/build.tar.xz "${parts[@]}"
rm -rf .carry/stage
echo "pack-carry: .carry/build.tar.xz $(du -k .carry/build.tar.xz | awk '{printf "%.1f", $1 / 1024}') MB (${parts[*]}) for commit $(cut -c1-12 .carry/COMMIT)"
