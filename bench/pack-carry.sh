#!/usr/bin/env bash
# bench/pack-carry.sh: packs what a device call needs from this machine's CUDA build into .carry/
# (the GPU machine has no Debian dev packages and builds nothing): the CLI and the GPU test
# binaries (xz, to fit a call's 64 MiB with a DALI wheel part beside them), the shared libraries
# they need that a bare CUDA image lacks (libcurl and its dependencies, from ldd), and the commit.
# On the device: bench/unpack-carry.sh. Not on a hot path.
# usage: bench/pack-carry.sh [BUILD_DIR]   (default build)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
[ -x "$build/stoker" ] || { echo "pack-carry: no $build/stoker (make build first)" >&2; exit 2; }
rm -rf .carry && mkdir -p .carry/stage/bin .carry/stage/lib
cp "$build/stoker" .carry/stage/bin/
for t in "$build"/tests/test_gpu_*; do [ -x "$t" ] && cp "$t" .carry/stage/bin/; done
# libraries outside the C library's own set (a CUDA base image has libc, libm, libdl, libpthread, librt)
ldd "$build/stoker" | awk '/=> \// {print $3}' | grep -Ev '/(libc|libm|libdl|libpthread|librt|ld-linux[^/]*)\.so' |
  while read -r lib; do cp -L "$lib" .carry/stage/lib/; done
git rev-parse HEAD > .carry/COMMIT
tar -C .carry/stage -cJf .carry/build.tar.xz bin lib
rm -rf .carry/stage
echo "pack-carry: .carry/build.tar.xz $(du -m .carry/build.tar.xz | cut -f1) MB for commit $(cut -c1-12 .carry/COMMIT)"
