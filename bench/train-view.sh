#!/usr/bin/env bash
# bench/train-view.sh: one device call, the training view: ResNet-18 training throughput
# (examples/train_resnet50.py --arch resnet18, AMP, channels-last) fed by stoker, DALI and the
# PyTorch DataLoader (its side-stream prefetcher), and by the synthetic loader (the step's
# ceiling), at one CPU budget per call (CORES=16 or CORES=8: below the machine's CPUs every run
# goes under `taskset -c 0-(CORES-1)`, its whole process tree, since a worker count alone limits
# none of the loaders' other threads). Under the project's protocol (bench/train_view.py: a fresh
# process per run, warm-up >= WARMUP s excluded, window >= WINDOW s ended by a device
# synchronize, REPEATS runs per loader in shuffled blocks, seeded; median and range; the same
# batch size and worker count for every loader; DALI and stoker at their default hw_decoder_load).
# Builds nothing: stoker's CLI comes carried ($STOKER_CLI, default .carry/build/stoker: it makes
# the data with `stoker datagen`), the stoker Python package as a carried wheel installed into
# /tmp/stk (STOKER_WHEEL, default .carry-py/wheel2/*.whl; none carried: /tmp/stk as it is),
# DALI from /tmp/site (bench/dali_install.sh install, earlier on the same warm machine), torch and
# torchvision from the machine's python3. Output under $OUT: table.md, run.json, log.txt, runs/.
# Settings (environment): CORES (16: the whole job's CPUs), GPUS (1; 2 or more: every run under torchrun,
# one rank per GPU, DDP, each loader on its rank's shard: bench/train_view.py --gpus), CPUS (the taskset list, default 0-(CORES-1); e.g. the GPU's
# NUMA node), WORKERS (CORES/GPUS-2 per rank, the example's own rule), LOADERS (synthetic,stoker,pytorch,dali; a loader
# may name its variant, NAME+KEY=VALUE: decode=mixed|cpu and hw=F for stoker and dali, priority=high|normal
# and tuning=KEY=N[/KEY=N] (STOKER_MIXED_TUNING) and pin=on|off for stoker, workers=N for stoker, dali and
# pytorch: bench/train_view.py), LOADERS_FROM (an earlier run.json of variants: synthetic and each
# loader's best variant there, instead of LOADERS),
# REPEATS (3), WARMUP (10), WINDOW (30), BATCH (256), ARCH (resnet18; resnet50 with SIZE=224 is the
# ResNet-50 view, where the shortfall from the synthetic ceiling is what is compared), SIZE (160: the README's cheap ResNet-18 step,
# so the loader, not the model, is what can fall short), PROFILE (20: steps profiled after each
# loader's first run, outside the window; skipped where the runs left fit the deadline only without
# it; 0: never), TRACES (1: keep each profiled run's Chrome trace, runs/*.trace.json.gz), ORDER_SEED (from the clock), COUNT (10000 images), DATA_DIR (/tmp/stoker-trainview:
# kept, and reused by a later call with the same COUNT), DATA (a folder of class folders, used as
# is), DATA_ONLY (1: make the data and stop, e.g. in the call that installs DALI, so the measuring
# calls keep their time for runs), HARD_S (575: no run starts that would end later, counted from
# CALL_START, else this script's start), KILL_S (590: a run still going is killed, its whole
# process tree), CALL_START (epoch seconds the device call began: export CALL_START=$(date +%s)
# first when other steps run before this script in the same call), DEVICE (cuda; cpu for a dry run),
# PYTHON (python3), EXTRA_PYTHONPATH (/tmp/stk:/tmp/site). Budget: a run is about 10 + 30 s plus
# its start-up and teardown (measured by the driver as it goes; ~14 s on an H100:
# 54 s a run), so 12 runs (4 loaders x 3) do not fit the 575 s and the driver drops what would
# overrun, last block first, and the table says so. Fits: the synthetic ceiling in one call
# (LOADERS=synthetic), then LOADERS=stoker,pytorch,dali CEILING_FROM=<that call's run.json> (9
# runs; the table names the borrowed ceiling). SCALING_FROM (with GPUS=2 or more: the run.json of the
# same view on one GPU, e.g. the call's GPUS=1 step: each loader's scaling, its img/s over GPUS times
# the one-GPU row's, in the table and run.json).
# Not on a hot path.
set -uo pipefail
cd "$(dirname "$0")/.."
start=${CALL_START:-$(date +%s)}  # the device call's start when given (deadlines count from it)
out=${OUT:-bench/out/train-view-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$out"
exec > >(tee "$out/log.txt") 2>&1
export PYTHONUNBUFFERED=1
py=${PYTHON:-python3}
cores=${CORES:-16}
gpus=${GPUS:-1}
per_rank=$(( cores / gpus ))
workers=${WORKERS:-$(( per_rank > 2 ? per_rank - 2 : 1 ))}
commit=${COMMIT:-$(cat .carry/COMMIT 2>/dev/null || git rev-parse HEAD 2>/dev/null || echo unknown)}
cli=${STOKER_CLI:-$PWD/.carry/build/stoker}
cli_libs="$(dirname "$cli"):$(dirname "$cli")/lib:$(dirname "$cli")/ffmpeg"  # for datagen only: the runs use the wheel's

wheel=$(ls ${STOKER_WHEEL:-.carry-py/wheel2/*.whl} 2>/dev/null | head -1)
if [ -n "$wheel" ]; then  # --upgrade: a warm machine may hold an older call's wheel
  "$py" -m pip install -q --no-index --no-deps --upgrade --target /tmp/stk "$wheel" \
    || echo "train-view.sh: the wheel $wheel did not install"
fi
extra=""
for d in $(echo "${EXTRA_PYTHONPATH:-/tmp/stk:/tmp/site}" | tr ':' ' '); do [ -d "$d" ] && extra="$extra:$d"; done
export PYTHONPATH="${extra#:}${PYTHONPATH:+:$PYTHONPATH}"

gpu=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1)
versions=$("$py" - <<'PY' 2>&1 | tail -1
import importlib
out = []
for mod, name in (("torch", "torch"), ("torchvision", "torchvision"), ("nvidia.dali", "DALI"), ("stoker", "stoker")):
    try:
        m = importlib.import_module(mod)
        out.append("%s %s" % (name, getattr(m, "__version__", "?")))
    except Exception as e:
        out.append("%s not importable (%s)" % (name, type(e).__name__))
print(", ".join(out))
PY
)
cpu="$(nproc) CPUs ($(lscpu 2>/dev/null | awk -F: '/^Thread\(s\) per core/ {gsub(/ /,"",$2); print $2 " threads per core"}'))"
provenance="commit $commit; ${gpu:-no GPU}; $cpu; $versions"
echo "train-view.sh: $provenance; PYTHONPATH=$PYTHONPATH"

data=${DATA:-}
count=${COUNT:-10000}
if [ -n "$data" ]; then
  [ -d "$data" ] || { echo "train-view.sh: DATA=$data is not a folder"; exit 2; }
  note="$data as given"
  [ -s "$data.note" ] && note="$data: $(cat "$data.note")"  # the set's own statistics (compare.sh KEEP_DATA)
else
  data=${DATA_DIR:-/tmp/stoker-trainview}
  if [ "$(cat "$data.made" 2>/dev/null)" != "$count" ]; then
    [ -x "$cli" ] || { echo "train-view.sh: no stoker CLI at $cli (set STOKER_CLI, or DATA)"; exit 2; }
    rm -rf "$data" "$data.made"
    t0=$(date +%s)
    LD_LIBRARY_PATH="$cli_libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$cli" datagen "$data" --count "$count" --classes 100 --seed 1 > "$data.stats" 2>&1 \
      || { cat "$data.stats"; echo "train-view.sh: stoker datagen failed"; exit 1; }
    echo "$count" > "$data.made"
    echo "train-view.sh: datagen took $(( $(date +%s) - t0 )) s"
  fi
  note="stoker datagen --count $count --classes 100 --seed 1 (synthetic ImageNet-like JPEGs)"
fi
[ "${DATA_ONLY:-0}" = 1 ] && { echo "train-view.sh: DATA_ONLY=1: data ready in $data ($(( $(date +%s) - start )) s)"; exit 0; }
files=$(find "$data" -name '*.jpg' | wc -l)
mean_kb=$(find "$data" -name '*.jpg' -printf '%s\n' | awk '{s+=$1} END {if (NR) printf "%.0f", s/NR/1024}')
note="$note; $files files, mean $mean_kb KB"
echo "train-view.sh: data: $note"

seed=${ORDER_SEED:-$(( $(date +%s) % 100000 ))}
loaders="LOADERS=${LOADERS:-synthetic,stoker,pytorch,dali}"
[ -n "${LOADERS_FROM:-}" ] && loaders="LOADERS_FROM=$LOADERS_FROM"
command="CORES=$cores GPUS=$gpus${CPUS:+ CPUS=$CPUS} WORKERS=$workers $loaders REPEATS=${REPEATS:-3} WARMUP=${WARMUP:-10} WINDOW=${WINDOW:-30} BATCH=${BATCH:-256} ARCH=${ARCH:-resnet18} SIZE=${SIZE:-160} PROFILE=${PROFILE:-20}${TRACES:+ TRACES=$TRACES} ORDER_SEED=$seed COUNT=$count${CEILING_FROM:+ CEILING_FROM=$CEILING_FROM}${SCALING_FROM:+ SCALING_FROM=$SCALING_FROM} bash bench/train-view.sh"
"$py" bench/train_view.py --data "$data" --data-note "$note" --loaders "${LOADERS:-synthetic,stoker,pytorch,dali}" \
  --cores "$cores" --gpus "$gpus" ${CPUS:+--cpus "$CPUS"} --workers "$workers" --repeats "${REPEATS:-3}" --warmup-seconds "${WARMUP:-10}" \
  --window "${WINDOW:-30}" --batch-size "${BATCH:-256}" --arch "${ARCH:-resnet18}" --size "${SIZE:-160}" --profile "${PROFILE:-20}" \
  ${TRACES:+--traces} --order-seed "$seed" --hard-deadline $(( start + ${HARD_S:-575} )) --kill-deadline $(( start + ${KILL_S:-590} )) \
  --device "${DEVICE:-cuda}" --python "$py" --command "$command" --provenance "$provenance" \
  ${CEILING_FROM:+--ceiling-from "$CEILING_FROM"} ${SCALING_FROM:+--scaling-from "$SCALING_FROM"} ${LOADERS_FROM:+--loaders-from "$LOADERS_FROM"} --out "$out"
status=$?
echo "train-view.sh: done in $(( $(date +%s) - start )) s (exit $status); results in $out: $(ls "$out" | tr '\n' ' ')"
exit $status
