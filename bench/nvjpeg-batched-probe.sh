#!/usr/bin/env bash
# bench/nvjpeg-batched-probe.sh: builds bench/nvjpeg_batched_probe.c against BUILD/libstoker.a (a
# CUDA build of this tree) into OUT (default .carry-py/nvjpeg_batched_probe), to be carried to a
# GPU machine. A diagnostic (not protocol rows): see the source's header for what it measures.
#   bash bench/nvjpeg-batched-probe.sh [BUILD=build] [OUT]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-build}
out=${2:-$root/.carry-py/nvjpeg_batched_probe}
cuda=$(dirname "$(dirname "$(command -v nvcc)")")
obj=$(mktemp -d)/probe.o
cc -O2 -std=c11 -Wall -Wextra -I"$root/src" -I"$root/include" -I"$cuda/include" -c "$root/bench/nvjpeg_batched_probe.c" -o "$obj"
# the CLI's own link line (libjpeg-turbo static, the CUDA runtime static), with the probe for its main
libs=$(sed "s|libstoker.a|$root/$build/libstoker.a|" "$root/$build/CMakeFiles/stoker.dir/linkLibs.rsp")
eval g++ -o "\"$out\"" "\"$obj\"" "$libs" -L"$cuda/targets/x86_64-linux/lib"
echo "$out"
