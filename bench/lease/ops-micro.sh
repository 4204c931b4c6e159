#!/usr/bin/env bash
# bench/lease/ops-micro.sh: issue 45's per-operator micro-benchmark on the GPU machine: every GPU
# operator stoker and DALI both have, one at a time on the same batch of 256 ImageNet-sized images
# (bench/ops_micro.py; its docstring says what a row is). Builds nothing: stoker's CUDA wheel from
# /tmp/stkpy (installed there from .carry-py/wheel2 when missing, as bench/lease/headline-job.sh's
# pytests step does), DALI from /tmp/site (bench/dali_install.sh), torch from the machine.
# Environment (all optional):
#   OUT       folder for run.json, results-section.md and log.txt (default /tmp/ops-micro)
#   OPS       operators or presets, comma-separated (default all; `python3 bench/ops_micro.py --list`):
#             all     every operator (~168 GPU minutes at the protocol clock: 35 operators x 2
#                     libraries x 3 repeats x (10 + 30 + ~8 s start-up); run it in subsets, OPS=a,b,..)
#             effnet  the operators of an EfficientNet / ResNet-50 training pipeline plus the feed
#                     alone (12 x 2 runs): without OPS_WARMUP/OPS_SECONDS/OPS_REPEATS it runs a shorter clock,
#                     warm-up 2 s, window 8 s, 1 repeat, BUDGET 480 s (~7 minutes): NOT protocol rows
#   OPS_WARMUP OPS_SECONDS OPS_REPEATS   the clock (default the protocol's 10, 30, 3); named apart from
#             compare.sh's WARMUP so that a short operator clock cannot reach a headline step of the same job
#   THREADS PREFETCH BATCH   num_threads, prefetch_queue_depth and batch of both libraries (4, 2, 256)
#   BUDGET    seconds after which no run starts (default 0 = none); ORDER_SEED (default from the clock)
#   STKPY DALI_SITE PYTHON DEVICE   where stoker and DALI are (/tmp/stkpy, /tmp/site), the interpreter
#             (python3) and the device (cuda; cpu: the same operators on the CPU, a smoke test off the GPU)
# usage (after bash bench/lease/unpack-carry.sh): OUT=/tmp/ops OPS=effnet bash bench/lease/ops-micro.sh
#   or in the background: (OUT=/tmp/ops setsid nohup bash bench/lease/ops-micro.sh > /tmp/ops.log 2>&1 < /dev/null &)
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/ops-micro}
OPS=${OPS:-all}
mkdir -p "$OUT"
warmup=${OPS_WARMUP:-} window=${OPS_SECONDS:-} repeats=${OPS_REPEATS:-}
if [ "$OPS" = effnet ] && [ -z "$warmup$window$repeats" ]; then
  warmup=2 window=8 repeats=1 BUDGET=${BUDGET:-480}
fi
stkpy=${STKPY:-/tmp/stkpy} site=${DALI_SITE:-/tmp/site} python=${PYTHON:-python3}
[ -x .carry/build/stoker ] && export STOKER_CLI=$PWD/.carry/build/stoker  # its version in the provenance
if ! PYTHONPATH=$stkpy "$python" -c 'import stoker' 2> /dev/null; then
  "$python" -m pip install -q --no-deps --no-index --target "$stkpy" .carry-py/wheel2/*.whl ||
    { echo "ops-micro: no stoker at $stkpy and no wheel in .carry-py/wheel2" >&2; exit 2; }
fi
export PYTHONPATH=$stkpy:$site${PYTHONPATH:+:$PYTHONPATH}
"$python" -c 'import nvidia.dali as d; print("ops-micro: DALI", d.__version__)' ||
  echo "ops-micro: DALI not importable from $site: its rows will say skipped (bench/dali_install.sh)" >&2
"$python" bench/ops_micro.py --device "${DEVICE:-cuda}" --ops "$OPS" --warmup "${warmup:-10}" --seconds "${window:-30}" \
  --repeats "${repeats:-3}" --threads "${THREADS:-4}" --prefetch "${PREFETCH:-2}" --batch "${BATCH:-256}" \
  --budget "${BUDGET:-0}" ${ORDER_SEED:+--order-seed "$ORDER_SEED"} --out "$OUT" 2>&1 | tee "$OUT/log.txt"
