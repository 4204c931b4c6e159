#!/usr/bin/env bash
# bench/unpack-carry.sh: the device side of bench/pack-carry.sh. Unpacks .carry/build.tar.xz into
# .carry/build (bin/: stoker and the GPU tests; lib/: their shared libraries) and lays out a build
# directory bench/gpu-check.sh accepts (.carry/build/tests/test_gpu_*). The unpacked copy stays for
# later calls while the machine is warm. Not on a hot path.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -f .carry/build.tar.xz ] || { echo "unpack-carry: no .carry/build.tar.xz (bench/pack-carry.sh, then carry .carry)" >&2; exit 2; }
rm -rf .carry/build && mkdir -p .carry/build/tests
tar -C .carry/build -xJf .carry/build.tar.xz
mv .carry/build/bin/test_gpu_* .carry/build/tests/ 2>/dev/null || true
cp .carry/build/bin/stoker .carry/build/stoker
echo "unpack-carry: .carry/build ready (commit $(cut -c1-12 .carry/COMMIT 2>/dev/null)); LD_LIBRARY_PATH=$PWD/.carry/build/lib"
