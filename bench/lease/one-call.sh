#!/usr/bin/env bash
# bench/lease/one-call.sh: issue 15's whole results section from ONE device call, on a machine of several
# GPUs: the section's parts run at once, each on a GPU of its own with 16 CPUs of its own next to
# that GPU (the issue's "H100 + 16 cores", one per part), under the project's protocol. One GPU's
# 30 minutes of device time cannot hold every row in sequence (~65 minutes of runs); six parts side
# by side take ~15 minutes of one call on 8 GPUs. On 4 (two parts on two of them) ~24 minutes of
# parts, ~22 with R50_DIAG=0, plus the sets, the GPU tests and DALI's transfer: a session whose
# device time counts a multi-GPU machine in full (30 minutes, also the longest a machine is held)
# fits it only with R50_DIAG=0 and every poll back to back. VIEW_LOADERS=stoker,dali,pytorch (the
# loader-bound views without their synthetic ceiling, which no target of the issue compares with;
# session 14's view calls had none either) takes the longest GPU's parts from ~22 to ~19.5 minutes.
#
# Parts (PARTS picks; the default is all of them):
#   train   rn50-train, stoker mixed against DALI mixed: compare.sh's equal-tuning sweep, then the
#           protocol rows at each loader's choice, with cold-cache rows (COLD=1 COLD_READ_AHEAD=1)
#   val     rn50-val, the same
#   hires   the camera-like set (20,000 2-3 MP 4:2:0 photographs), decode only: stoker mixed, DALI
#           mixed, torchvision's batched GPU decode (hires-compare.sh: sweep, protocol, cold rows)
#   view16  the loader-bound training view (ResNet-18 at 160 px): synthetic, stoker, DALI and the
#           DataLoader with its side-stream prefetcher, 16 CPUs (train-view.sh)
#   view8   the same limited to 8 of the part's CPUs (the issue's "also at 8 cores")
#   r50     the ResNet-50 view (224 px): a one-run sweep of each loader's decoder (mixed, CPU; stoker's
#           CPU decoder also at the library's high priority in one launch, the example's way before
#           session 26 made normal priority and 8 launches its defaults), then the protocol rows at
#           each loader's best (lease-job.sh's r50diag, r50view).
#           R50_DIAG=0: the protocol rows alone, at R50_LOADERS (synthetic and both CPU decoders, each
#           loader's best in the protocol calls of sessions 22-24), ~8.5 minutes instead of ~13-15
# Before them, while the sets are made, the GPU tests on the first GPU (gpu-check.sh): a red build
# stops the call.
# Every part that reads the ImageNet-like set reads a copy of its own (one set's cold-cache row
# evicts only its own pages), and the hires part its own set. What the parts share, and a
# skeptic should weigh: the host's memory bandwidth, PCIe root complexes and disks (the sets sit
# in the page cache); the loaders of one part are interleaved, so they share it alike.
#
# Run on the GPU machine after bench/lease/unpack-carry.sh, with DALI being installed from the carried
# parts in later calls (bench/dali_install.sh install: the parts wait for it, DALI_WAIT_S 900).
# Output under $OUT (/tmp/onecall): plan.txt (GPUs, CPUs, parts), data/, one folder per part
# (its scripts' outputs), STEPS ("part rc seconds"), and section.md + chart.png + readme-table.md
# from bench/lease/one_call_merge.py at the end. Settings: PARTS, COUNT (20000), HIRES_COUNT (20000),
# CORES_PER (16), DEVICE (cuda; cpu: a dry run on a machine without a GPU, with GPU_SLOTS slots of
# its CPUs, e.g. in tests), MAX_MINUTES (below), WARMUP/WINDOW/REPEATS (10/30/3), SWEEP_SECONDS (8), VIEW_LOADERS (the
# views' loaders; default train-view.sh's synthetic,stoker,pytorch,dali), and the settings
# of compare.sh, hires-compare.sh and train-view.sh they pass through; DATA_ROOT (/tmp/onecall: the
# sets are DATA_ROOT-imagenet, a copy of it per part, and DATA_ROOT-hires).
# Not on a hot path.
set -uo pipefail
cd "$(dirname "$0")/../.."
export OUT=${OUT:-/tmp/onecall}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
export STOKER_CLI=${STOKER_CLI:-$PWD/.carry/build/stoker} STOKER_SOURCE_DIR=$PWD
export LD_LIBRARY_PATH=$(dirname "$STOKER_CLI")/lib:$(dirname "$STOKER_CLI")/ffmpeg${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export COMMIT=${COMMIT:-$(cat .carry/COMMIT 2>/dev/null || git rev-parse HEAD 2>/dev/null || echo unknown)}
export DEVICE=${DEVICE:-cuda}
export CUDA_DEVICE_ORDER=PCI_BUS_ID # CUDA's GPU numbers = nvidia-smi's and NVML's (peers.py samples that GPU)
parts=${PARTS:-train val hires view16 view8 r50}
count=${COUNT:-20000}
cores_per=${CORES_PER:-16}
data_root=${DATA_ROOT:-/tmp/onecall} # the sets: DATA_ROOT-imagenet (and a copy per part), DATA_ROOT-hires
imagenet=$data_root-imagenet hires=$data_root-hires
start=$(date +%s)

# copy_set PART: the part's own copy of the ImageNet-like set (real copies: hard links would share
# the page cache, and a cold-cache row of one part would evict another's)
copy_set() {
  local dst=$imagenet-$1
  rm -rf "$dst" && cp -r "$imagenet" "$dst" || return 1
  for f in stamp stats note; do [ -f "$imagenet.$f" ] && cp "$imagenet.$f" "$dst.$f"; done
  echo "$dst"
}
# view VAR=VALUE...: train-view.sh with those settings, its deadlines VIEW_S (1500) from now.
view() { env CALL_START="$(date +%s)" HARD_S="${VIEW_S:-1500}" KILL_S="$((${VIEW_S:-1500} + 20))" "$@" bash bench/train-view.sh; }
# run_part PART CPUS: its scripts (the caller runs this under taskset on CPUS, its GPU alone visible).
run_part() {
  local part=$1 cpus=$2 o=$OUT/$1 set
  mkdir -p "$o"
  case $part in
    train | val)
      set=$(copy_set "$part") || return 1
      # COUNT as the set was made: compare.sh remakes a kept set whose stamp differs
      DATA_DIR=$set KEEP_DATA=1 COUNT=$count MODE=$part STEP=sweep OUT=$o/sweep bash bench/compare.sh || return 1
      DATA_DIR=$set KEEP_DATA=1 COUNT=$count MODE=$part CHOSEN_FROM=$o/sweep/run.json COLD=1 COLD_READ_AHEAD=1 \
        OUT=$o/protocol bash bench/compare.sh
      ;;
    hires)
      DATA_DIR=$hires KEEP_DATA=1 COUNT=${HIRES_COUNT:-20000} STEP=sweep OUT=$o/sweep bash bench/hires-compare.sh || return 1
      DATA_DIR=$hires KEEP_DATA=1 COUNT=${HIRES_COUNT:-20000} CHOSEN_FROM=$o/sweep/run.json COLD=1 OUT=$o/protocol \
        bash bench/hires-compare.sh
      ;;
    view16 | view8)
      local n=${part#view} list
      set=$(copy_set "$part") || return 1
      list=$(python3 bench/lease/one_call_plan.py --first "$n" --of "$cpus") || return 1 # fewer CPUs than the view wants
      view CORES=$n CPUS=$list ARCH=resnet18 SIZE=160 DATA=$set ${VIEW_LOADERS:+LOADERS=$VIEW_LOADERS} OUT=$o
      ;;
    r50)
      set=$(copy_set "$part") || return 1
      if [ "${R50_DIAG:-1}" = 0 ]; then # the protocol rows alone, each loader at R50_LOADERS' variant
        view CORES=$cores_per CPUS=$cpus ARCH=resnet50 SIZE=224 DATA=$set \
          LOADERS=${R50_LOADERS:-synthetic,stoker+decode=cpu,dali+decode=cpu} OUT=$o/protocol
        return
      fi
      view CORES=$cores_per CPUS=$cpus ARCH=resnet50 SIZE=224 DATA=$set REPEATS=1 WINDOW=15 PROFILE=20 \
        LOADERS=${R50_VARIANTS:-synthetic,stoker,stoker+decode=cpu,stoker+decode=cpu+priority=high+fusedsplit=1,dali,dali+decode=cpu} \
        OUT=$o/diag || return 1
      view CORES=$cores_per CPUS=$cpus ARCH=resnet50 SIZE=224 DATA=$set LOADERS_FROM=$o/diag/run.json PROFILE=0 \
        OUT=$o/protocol
      ;;
    *) echo "one-call: unknown part $part"; return 2 ;;
  esac
}
if [ "${1:-}" = --part ]; then # bench/lease/one-call.sh --part PART CPUS: one part (the driver's child)
  run_part "$2" "$3"
  exit $?
fi

exec > >(tee -a "$OUT/log.txt") 2>&1
echo "one-call: commit $COMMIT; parts: $parts; $(date -u +%FT%TZ)"
# The command as run, for the log and for the section's provenance alike.
call_command="PARTS=\"$parts\" COUNT=$count HIRES_COUNT=${HIRES_COUNT:-20000} CORES_PER=$cores_per R50_DIAG=${R50_DIAG:-1}"
call_command="$call_command ${VIEW_LOADERS:+VIEW_LOADERS=$VIEW_LOADERS }bash bench/lease/one-call.sh"
echo "one-call: command: $call_command"

# ---- GPUs and the CPUs next to each ------------------------------------------------------------
# plan: one line per part, "part gpu cpulist" (bench/lease/one_call_plan.py: with more parts than GPUs
# the longest go first, each to the least loaded GPU, whose parts then run one after the other).
minutes=
[ "${R50_DIAG:-1}" = 0 ] && minutes=r50=8.5 # without its one-run sweep
case ",${VIEW_LOADERS:-synthetic}," in # the views without their synthetic ceiling: 9 runs, not 12
  *,synthetic,*) ;;
  *) minutes=${minutes:+$minutes,}view8=10,view16=9.5 ;;
esac
# MAX_MINUTES (on a GPU machine 22, else none): the most loaded GPU's parts may take that long at most;
# with the start, the sets, the tests and DALI's transfer that is a held machine's 30 minutes (a
# plan over it stops here, before any device time goes on a call that cannot finish)
max_minutes=${MAX_MINUTES:-}
[ "$DEVICE" = cuda ] && max_minutes=${max_minutes:-22}
python3 bench/lease/one_call_plan.py --parts "$parts" --cores "$cores_per" --device "$DEVICE" \
  ${GPU_SLOTS:+--slots "$GPU_SLOTS"} ${minutes:+--minutes "$minutes"} ${max_minutes:+--max-minutes "$max_minutes"} \
  > "$OUT/plan.txt" || {
  echo "one-call: no plan"
  exit 2
}
cat "$OUT/plan.txt"

# ---- Data: made once with every CPU, then copied per part --------------------------------------
mkdir -p "$OUT/data"
data_made() { # DIR: compare.sh's stamp files beside it, so a copy is reused as it is
  [ -d "$1" ] && [ -f "$1.stamp" ] && [ -f "$1.stats" ]
}
# (`wait` is always given the pids: a bare one would also wait for the log's tee.) The GPU tests
# run meanwhile on the first GPU: nothing is measured on a red build.
if [ "$DEVICE" = cuda ]; then
  (CUDA_VISIBLE_DEVICES=$(awk 'NR == 1 {print $2}' "$OUT/plan.txt") OUT=$OUT/gputests \
    GPU_TESTS=${GPU_TESTS:-"test_gpu_ops test_gpu_pipeline test_gpu_decoder test_gpu_backend"} \
    GPU_SANITIZED=${GPU_SANITIZED:-" "} bash bench/gpu-check.sh .carry/build > /dev/null 2>&1) &
  tests_pid=$!
fi
(DATA_DIR=$imagenet KEEP_DATA=1 COUNT=$count MODE=val STEP=data OUT=$OUT/data/imagenet bash bench/compare.sh \
  > /dev/null 2>&1) &
pids=$!
case " $parts " in
  *" hires "*)
    (DATA_DIR=$hires KEEP_DATA=1 COUNT=${HIRES_COUNT:-20000} STEP=data OUT=$OUT/data/hires \
      bash bench/hires-compare.sh > /dev/null 2>&1) &
    pids="$pids $!"
    ;;
esac
wait $pids
data_made "$imagenet" || { echo "one-call: the ImageNet-like set was not made (see $OUT/data/imagenet/log.txt)"; exit 1; }
tail -3 "$OUT/data/imagenet/log.txt"
[ -f "$OUT/data/hires/log.txt" ] && tail -3 "$OUT/data/hires/log.txt"
echo "one-call: data ready at +$(($(date +%s) - start)) s"
if [ "$DEVICE" = cuda ]; then
  wait "$tests_pid"
  rc=$?
  cat "$OUT/gputests/summary.txt" 2>/dev/null
  echo "gputests $rc 0" >> "$OUT/STEPS"
  [ "$rc" = 0 ] || { echo "one-call: the GPU tests failed: nothing measured"; exit 1; }
fi

# ---- DALI and the stoker wheel, once for every part --------------------------------------------
if [ "$DEVICE" = cuda ]; then
  deadline=$(($(date +%s) + ${DALI_WAIT_S:-900}))
  until PYTHONPATH=/tmp/site python3 -c 'import nvidia.dali' 2>/dev/null; do
    [ "$(date +%s)" -lt "$deadline" ] || { echo "one-call: DALI did not become importable from /tmp/site"; exit 1; }
    sleep 5
  done
fi
wheel=$(ls ${STOKER_WHEEL:-.carry-py/wheel2/*.whl} 2>/dev/null | head -1)
[ -n "$wheel" ] && python3 -m pip install -q --no-index --no-deps --upgrade --target /tmp/stk "$wheel"
export STOKER_WHEEL=/nonexistent # the parts use /tmp/stk as it is (no installs racing)
echo "one-call: DALI and the wheel ready at +$(($(date +%s) - start)) s"

# ---- The parts -----------------------------------------------------------------------------------
# A GPU's parts one after the other; the GPUs at once.
pids=
for gpu in $(awk '{print $2}' "$OUT/plan.txt" | sort -un); do
  (
    awk -v g="$gpu" '$2 == g {print $1, $3}' "$OUT/plan.txt" | while read -r part cpus; do
      t0=$(date +%s)
      echo "one-call: $part on GPU $gpu, CPUs $cpus, from +$((t0 - start)) s"
      if [ "$DEVICE" = cuda ]; then
        CUDA_VISIBLE_DEVICES=$gpu taskset -c "$cpus" bash bench/lease/one-call.sh --part "$part" "$cpus" > "$OUT/$part.log" 2>&1
      else
        taskset -c "$cpus" bash bench/lease/one-call.sh --part "$part" "$cpus" > "$OUT/$part.log" 2>&1
      fi
      rc=$?
      echo "$part $rc $(($(date +%s) - t0))" >> "$OUT/STEPS"
      echo "one-call: $part rc=$rc in $(($(date +%s) - t0)) s"
    done
  ) &
  pids="$pids $!"
done
wait $pids
echo "one-call: parts done at +$(($(date +%s) - start)) s"
cat "$OUT/STEPS"

# ---- One section, one chart, the README's table, from this call's results -----------------------
python3 bench/lease/one_call_merge.py "$OUT" --command "$call_command" ||
  echo "one-call: the merge failed"
echo "one-call: done at +$(($(date +%s) - start)) s"
