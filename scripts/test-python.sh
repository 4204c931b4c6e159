#!/usr/bin/env bash
# scripts/test-python.sh: builds and installs the Python package into .venv (pip install .) and
# runs its pytest suite. Part of `make test`.
# torch: the PyTorch iterators' tests, the torchrun tests of test_distributed.py and its run of the
# training example need torch (with torch.distributed, gloo and torchrun) and torchvision. Without
# them those tests skip, saying why. A torch already there is used: in .venv, or the system
# Python's (then .venv is made with --system-site-packages). STOKER_TEST_TORCH=1 installs them from
# PyPI into .venv when missing: PyPI's Linux x86_64 torch is CUDA-built and does not import without
# its nvidia-* runtime wheels, so that is ~3.5 GB to download and ~5 GB in .venv (pip shows its
# progress; --no-cache-dir keeps nothing outside .venv). STOKER_TEST_TORCH=0: never install it.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -f pyproject.toml ]; then
  echo "test-python: no Python package yet (pyproject.toml missing)"; exit 0
fi
has_torch='import torchvision, torch.distributed as d; assert d.is_gloo_available()'
if [ ! -x .venv/bin/python ]; then
  if python3 -c "$has_torch" 2>/dev/null; then
    echo "test-python: making .venv on top of the system Python's torch (--system-site-packages)"
    python3 -m venv --system-site-packages .venv
  else
    python3 -m venv .venv
  fi
fi
.venv/bin/python -m pip install -q --upgrade pip >/dev/null
.venv/bin/python -m pip install -q numpy pytest pillow scikit-build-core >/dev/null
# Without a GPU (CI) the package is built with CUDA off: `make build` has already compiled the CUDA
# code, its tests need a GPU, and a second CUDA compile would cost CI ~10 minutes on 2 cores. With
# a GPU (nvidia-smi lists one) the package is built as users get it, with CUDA.
cuda_flag=()
nvidia-smi -L >/dev/null 2>&1 || cuda_flag=(--config-settings=cmake.define.STOKER_CUDA=OFF)
.venv/bin/python -m pip install -q --no-build-isolation "${cuda_flag[@]}" . >/dev/null
if .venv/bin/python -c "$has_torch" 2>/dev/null; then
  echo "test-python: torch $(.venv/bin/python -c 'import torch; print(torch.__version__)') found: the torch tests run"
elif [ "${STOKER_TEST_TORCH:-}" = 1 ]; then
  echo "test-python: STOKER_TEST_TORCH=1: installing torch and torchvision from PyPI into .venv:"
  echo "test-python:   ~3.5 GB to download (CUDA-built, with its nvidia-* wheels), ~5 GB in .venv"
  .venv/bin/python -m pip install --progress-bar on --no-cache-dir torch torchvision ||
    echo "test-python: torch could not be installed from PyPI; the torch and torchrun tests will skip"
else
  echo "test-python: no torch: the torch and torchrun tests skip. STOKER_TEST_TORCH=1 installs torch and"
  echo "test-python:   torchvision into .venv (~3.5 GB download, ~5 GB on disk), or install them yourself."
fi
cd tests/python && ../../.venv/bin/python -m pytest -q
