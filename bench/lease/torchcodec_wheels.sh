#!/usr/bin/env bash
# bench/lease/torchcodec_wheels.sh: stages TorchCodec wheels from PyPI for the GPU machine (no internet
# there) into .carry-tc/torch<MAJOR.MINOR>/<N>/, for each torch version it may meet one or more
# candidates in order of preference, plus nvidia-ml-py (NVML for the NVDEC utilisation samples) in
# .carry-tc/common/. bench/lease/video-gpu.sh takes the folder of the torch it finds and installs the
# first candidate that imports and decodes on CUDA (else the first that imports). TorchCodec links FFmpeg
# 4-8 by soname (its libtorchcodec_core5.so needs libavcodec.so.59 ...): on the GPU machine the
# minimal FFmpeg 5.1 of bench/lease/ffmpeg-min.sh, carried by bench/lease/pack-carry.sh, gives them.
# Not on a hot path; runs here (PyPI).
#
# PyPI's TorchCodec wheels up to 0.13 are CPU-only builds ('0.11.1+cpu'); from 0.14 they are CUDA
# builds ('0.14.0+cu130', needing libnvrtc.so.13 and torch's CUDA libraries) on torch's stable ABI,
# for torch >= 2.11 (TorchCodec's own table). So for torch 2.11-2.13 the candidates are 0.14.0
# first, then the matching 0.N (CPU only: the torchcodec-cuda row then says it cannot run).
#
# usage: bench/lease/torchcodec_wheels.sh [TORCH_VERSION...]   (default 2.11: the GPU machine's torch,
#        2.11.0+cu130 in bench/runs/*; PYTHON_VERSION=3.12 its Python)
set -euo pipefail
cd "$(dirname "$0")/../.."
py=${PYTHON_VERSION:-3.12}
out=.carry-tc
platforms=()
for p in manylinux_2_28_x86_64 manylinux_2_27_x86_64 manylinux_2_17_x86_64 manylinux2014_x86_64; do
  platforms+=(--platform "$p")
done
fetch() {  # fetch DIR SPEC...
  local dir=$1
  shift
  mkdir -p "$dir"
  python3 -m pip download -q --no-deps --only-binary=:all: --python-version "$py" --implementation cp \
    "${platforms[@]}" -d "$dir" "$@"
}
# TorchCodec's own compatibility table (its README): torchcodec 0.N goes with torch 2.N from 0.10
# on; before that 0.9/0.8 -> 2.9, 0.7/0.6 -> 2.8, 0.5-0.3 -> 2.7, 0.2 -> 2.6, 0.1 -> 2.5.
for torch in "${@:-2.11}"; do
  [[ $torch =~ ^2\.([0-9]+)$ ]] || { echo "torchcodec_wheels: '$torch' is not a torch MAJOR.MINOR such as 2.11" >&2; exit 2; }
  minor=${BASH_REMATCH[1]}
  case $minor in
    5) specs=('torchcodec==0.1.*') ;; 6) specs=('torchcodec==0.2.*') ;; 7) specs=('torchcodec==0.5.*') ;;
    8) specs=('torchcodec==0.7.*') ;; 9) specs=('torchcodec==0.9.*') ;; 10) specs=('torchcodec==0.10.*') ;;
    11 | 12 | 13) specs=('torchcodec==0.14.0' "torchcodec==0.$minor.*") ;;
    *) [ "$minor" -ge 14 ] || { echo "torchcodec_wheels: no TorchCodec for torch $torch" >&2; exit 2; }
       specs=("torchcodec==0.$minor.*") ;;
  esac
  rm -rf "$out/torch$torch"
  n=0
  for spec in "${specs[@]}"; do
    n=$((n + 1))
    fetch "$out/torch$torch/$n" "$spec"
  done
done
rm -rf "$out/common"
fetch "$out/common" nvidia-ml-py
echo "torchcodec_wheels: $(du -sh "$out" | cut -f1) in $out:"
find "$out" -name '*.whl' -printf '  %p %s bytes\n' | sort
