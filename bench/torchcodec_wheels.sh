#!/usr/bin/env bash
# bench/torchcodec_wheels.sh: stages TorchCodec wheels from PyPI for the GPU machine (no internet
# there) into .carry-tc/torch<MAJOR.MINOR>/, one folder per torch version it may meet, plus
# nvidia-ml-py (NVML for the NVDEC utilisation samples) in .carry-tc/common/. bench/video-gpu.sh
# picks the folder of the torch it finds and installs it into /tmp/tc-site. TorchCodec links FFmpeg
# 4-8 by soname (its libtorchcodec_core5.so needs libavcodec.so.59 ...): on the GPU machine the
# minimal FFmpeg 5.1 of bench/ffmpeg-min.sh, carried by bench/pack-carry.sh, gives them.
# Not on a hot path; runs here (PyPI).
#
# Note: PyPI's torchcodec wheels are CPU-only builds (CUDA builds are published on
# download.pytorch.org, which cannot be reached from here); the torchcodec-cuda row then says so.
#
# usage: bench/torchcodec_wheels.sh [TORCH_VERSION...]   (default 2.11: the GPU machine's torch,
#        2.11.0+cu130 in bench/runs/*; PYTHON_VERSION=3.12 its Python)
set -euo pipefail
cd "$(dirname "$0")/.."
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
    5) spec='torchcodec==0.1.*' ;; 6) spec='torchcodec==0.2.*' ;; 7) spec='torchcodec==0.5.*' ;;
    8) spec='torchcodec==0.7.*' ;; 9) spec='torchcodec==0.9.*' ;;
    *) [ "$minor" -ge 10 ] || { echo "torchcodec_wheels: no TorchCodec for torch $torch" >&2; exit 2; }
       spec="torchcodec==0.$minor.*" ;;
  esac
  rm -rf "$out/torch$torch"
  fetch "$out/torch$torch" "$spec"
done
rm -rf "$out/common"
fetch "$out/common" nvidia-ml-py
echo "torchcodec_wheels: $(du -sh "$out" | cut -f1) in $out:"
find "$out" -name '*.whl' -printf '  %p %s bytes\n' | sort
