#!/usr/bin/env bash
# scripts/test-python.sh: builds and installs the Python package into .venv (pip install .) and
# runs its pytest suite. Part of `make test`.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -f pyproject.toml ]; then
  echo "test-python: no Python package yet (pyproject.toml missing)"; exit 0
fi
[ -x .venv/bin/python ] || python3 -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip >/dev/null
.venv/bin/python -m pip install -q numpy pytest pillow scikit-build-core >/dev/null
.venv/bin/python -m pip install -q --no-build-isolation . >/dev/null
cd tests/python && ../../.venv/bin/python -m pytest -q
