#!/usr/bin/env bash
# bench/lease/prepare-lease.sh: everything a device lease carries, built here from HEAD (the GPU machine
# has no Debian dev packages and builds nothing), each part skipped when it is already there for
# this commit. Session 21's build machine came up empty (no .venv, carry, DALI parts or photos);
# this is the list bench/lease/lease-job.sh's header gives, as one command. Not on a hot path.
#   - `make build` (CUDA build in build/) and the minimal FFmpeg (bench/lease/ffmpeg-min.sh)
#   - .venv with numpy, pytest, pillow, scikit-build-core (the wheel's build and bench/ scripts)
#   - bench/.photos (bench/fetch_photos.sh), .whl-parts (bench/dali_wheels.sh, DALI in 48 MiB parts)
#   - .carry-py/pytest (pytest's wheels for the device's Python 3.12), .carry-py/wheel2 (the CUDA
#     wheel of HEAD, with COMMIT.txt), .carry-py/fused_kernel_cost (sm_90)
#   - .carry (bench/lease/pack-carry.sh: the CLI, the GPU tests, their libraries, FFmpeg; COMMIT)
# usage: bench/lease/prepare-lease.sh      then the calls in bench/lease/lease-job.sh's header
set -euo pipefail
cd "$(dirname "$0")/../.."
head=$(git rev-parse HEAD)
step() { echo "prepare-lease: $*"; }

make build
[ -f bench/.cache/ffmpeg-min/STAMP ] || bash bench/lease/ffmpeg-min.sh
if [ ! -x .venv/bin/python ]; then
  step "venv"
  python3 -m venv .venv
  .venv/bin/python -m pip install -q --upgrade pip
fi
.venv/bin/python -c 'import numpy, pytest, PIL, scikit_build_core' 2>/dev/null ||
  .venv/bin/python -m pip install -q numpy pytest pillow scikit-build-core
ls bench/.photos/*.jpg > /dev/null 2>&1 || PYTHON=$PWD/.venv/bin/python bash bench/fetch_photos.sh
[ -f .whl-parts/MANIFEST ] || bash bench/dali_wheels.sh
if ! ls .carry-py/pytest/pytest-*.whl > /dev/null 2>&1; then
  step "pytest wheels for Python 3.12"
  mkdir -p .carry-py/pytest
  .venv/bin/python -m pip download -q --only-binary=:all: --python-version 3.12 -d .carry-py/pytest pytest
fi
if [ "$(cat .carry-py/wheel2/COMMIT.txt 2>/dev/null)" != "$head" ]; then
  step "the CUDA wheel of $head"
  rm -rf /tmp/prepare-lease-wheel .carry-py/wheel2 && mkdir -p .carry-py/wheel2
  .venv/bin/python -m pip wheel -q --no-build-isolation --no-deps -w /tmp/prepare-lease-wheel \
    --config-settings=cmake.define.STOKER_CUDA=ON .
  cp /tmp/prepare-lease-wheel/*.whl .carry-py/wheel2/
  echo "$head" > .carry-py/wheel2/COMMIT.txt
fi
step "bench/fused_kernel_cost.cu (sm_90)"
gcc -O2 -std=c11 -Isrc -Iinclude -c src/ops/augment/resize/resample.c -o /tmp/prepare-lease-resample.o
nvcc -O3 -std=c++17 -arch=sm_90 -Isrc -Iinclude bench/fused_kernel_cost.cu src/ops/augment/crop_mirror_normalize/cmn_kernels.cu \
  /tmp/prepare-lease-resample.o -o .carry-py/fused_kernel_cost
if [ "$(cat .carry/COMMIT 2>/dev/null)" != "$head" ]; then
  rm -rf .carry
  bash bench/lease/pack-carry.sh
fi
du -sh .carry .carry-py bench/.photos .whl-parts/call* | sed 's/^/prepare-lease: /'
step "ready for $head: call 1 carries .carry .carry-py bench/.photos (bench/lease/lease-job.sh on one GPU, or bench/lease/one-call.sh on several: docs/benchmarks.md)"
