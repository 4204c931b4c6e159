#!/usr/bin/env bash
# bench/dali_install.sh: the GPU-machine side of bench/dali_wheels.sh. Not on a hot path.
#   stash    copies the carried .whl-parts/callNN folder(s) into /tmp/dali-parts (kept while the
#            machine stays warm between calls)
#   install  re-joins the wheels listed in MANIFEST, checks their sha256 and installs them into
#            /tmp/site (then: export PYTHONPATH=/tmp/site). Says which parts are missing, if any.
set -euo pipefail
cd "$(dirname "$0")/.."
stash=/tmp/dali-parts
mkdir -p "$stash"
case "${1:-}" in
  stash)
    found=0
    for dir in .whl-parts/call*; do [ -d "$dir" ] && cp "$dir"/* "$stash"/ && found=1; done
    [ "$found" = 1 ] || { echo "dali_install: no .whl-parts/callNN carried" >&2; exit 1; }
    echo "dali_install: stashed; $stash holds $(du -sm "$stash" | cut -f1) MB" ;;
  install)
    [ -f "$stash/MANIFEST" ] || { echo "dali_install: MANIFEST not stashed (call01 missing)" >&2; exit 1; }
    mkdir -p /tmp/dali-wheels
    grep -v '^#' "$stash/MANIFEST" | while read -r wheel sha size parts; do
      for part in $parts; do
        [ -f "$stash/$part" ] || { echo "dali_install: missing $part" >&2; exit 1; }
      done
      (cd "$stash" && cat $parts) >"/tmp/dali-wheels/$wheel"
      echo "$sha  /tmp/dali-wheels/$wheel" | sha256sum -c --quiet - || { echo "dali_install: $wheel corrupt" >&2; exit 1; }
    done
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
      --target /tmp/site /tmp/dali-wheels/*.whl
    PYTHONPATH=/tmp/site python3 -c 'import nvidia.dali as d; print("dali_install: DALI", d.__version__)' ;;
  *) echo "usage: $0 stash|install" >&2; exit 2 ;;
esac
