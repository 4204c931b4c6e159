#!/usr/bin/env bash
# bench/session18-lease.sh: the next device session's GPU work on issue 15 as ONE background job
# on a warm machine, so the lease's minutes go to measuring rather than to the gaps between
# 10-minute calls. Builds nothing (the carried build, .carry/COMMIT). Not on a hot path.
#
# Use (calls on one warm lease; each call starts with `bash bench/unpack-carry.sh >/dev/null`):
#   call 1 (carry .carry .whl-parts/call05 bench/.photos):
#     bash bench/dali_install.sh stash
#     (OUT=/tmp/s18 setsid nohup bash bench/session18-lease.sh > /tmp/s18.log 2>&1 < /dev/null &
#      echo $! > /tmp/s18.pid)
#   calls 2-5 (carry .whl-parts/call01..04): bash bench/dali_install.sh stash; call 5 also
#     `bash bench/dali_install.sh install` (the job's DALI steps wait for it)
#   then short calls: `cat /tmp/s18/STEPS; tail -5 /tmp/s18.log`; when the pid is gone (or the
#   lease nears its end), `cp -r /tmp/s18/. $OUT/` to bring the results back.
#
# Steps, in order; each appends "step rc seconds" to $OUT/STEPS and keeps its output in $OUT/<step>:
#   gputests  bench/gpu-check.sh: test_gpu_ops, test_gpu_pipeline, test_gpu_decoder,
#             test_gpu_backend, test_gpu_weight_tables; memcheck+racecheck of test_gpu_ops and
#             test_gpu_backend. The job stops here when they fail: nothing is measured on a red build.
#   data      the ImageNet-like set, COUNT (20000) images (compare.sh STEP=data, MODE=val,
#             KEEP_DATA=1: /tmp/stoker-cmp, reused by the later steps)
#   ab        stoker alone, A B A B (bench/diag-configs-s18-val.txt): the weight tables on the pool
#             and shared by key against STOKER_GPU_SERIAL_WEIGHTS=1, rn50-val and rn50-train
#   dali      waits (up to DALI_WAIT_S, 900) for DALI 2.4 to import from /tmp/site
#   valsweep  compare.sh MODE=val STEP=sweep (stoker vs DALI, equal tuning)
#   val       compare.sh MODE=val CHOSEN_FROM=the sweep COLD=1 COLD_READ_AHEAD=1 (protocol + cold rows)
# STEPS_TO_RUN (default all of them, space-separated) picks a subset.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/s18}
mkdir -p "$OUT"
export STOKER_CLI=$PWD/.carry/build/stoker STOKER_SOURCE_DIR=$PWD
export COUNT=${COUNT:-20000} # the ImageNet-like set: issue 15's "at least 20,000 images"
export LD_LIBRARY_PATH=$PWD/.carry/build/lib:$PWD/.carry/build/ffmpeg${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
steps=${STEPS_TO_RUN:-gputests data ab dali valsweep val}
echo "session18-lease: commit $(cat .carry/COMMIT 2>/dev/null || echo unknown); steps: $steps; $(date -u +%FT%TZ)"

# step NAME COMMAND...: runs it with its output in $OUT/NAME/log.txt (OUT for the command is $OUT/NAME).
step() {
  local name=$1
  shift
  case " $steps " in *" $name "*) ;; *) return 0 ;; esac
  mkdir -p "$OUT/$name"
  echo "$name" > "$OUT/STEP"
  local start
  start=$(date +%s)
  OUT=$OUT/$name "$@" > "$OUT/$name/log.txt" 2>&1
  local rc=$?
  echo "$name $rc $(($(date +%s) - start))" >> "$OUT/STEPS"
  echo "session18-lease: $name rc=$rc in $(($(date +%s) - start)) s"
  tail -15 "$OUT/$name/log.txt"
  return $rc
}

wait_for_dali() {
  local deadline=$(($(date +%s) + ${DALI_WAIT_S:-900}))
  while [ "$(date +%s)" -lt "$deadline" ]; do
    if PYTHONPATH=/tmp/site python3 -c 'import nvidia.dali as d; print("DALI", d.__version__)' 2>/dev/null; then
      return 0
    fi
    sleep 5
  done
  echo "DALI did not become importable from /tmp/site within ${DALI_WAIT_S:-900} s"
  return 1
}

export GPU_TESTS="test_gpu_ops test_gpu_pipeline test_gpu_decoder test_gpu_backend test_gpu_weight_tables"
export GPU_SANITIZED="test_gpu_ops test_gpu_backend"
step gputests bash bench/gpu-check.sh .carry/build || { echo "session18-lease: GPU tests failed: stopping"; exit 1; }
step data env MODE=val KEEP_DATA=1 STEP=data bash bench/compare.sh
step ab env PART=val CONFIGS=bench/diag-configs-s18-val.txt VAL_DATA=/tmp/stoker-cmp bash bench/session15-hires-check.sh
step dali wait_for_dali || { echo "session18-lease: no DALI: stopping before its rows"; exit 1; }
export PYTHONPATH=/tmp/site
step valsweep env MODE=val KEEP_DATA=1 STEP=sweep bash bench/compare.sh
step val env MODE=val KEEP_DATA=1 CHOSEN_FROM=/tmp/stoker-cmp.sweep.json COLD=1 COLD_READ_AHEAD=1 bash bench/compare.sh
echo "done" > "$OUT/STEP"
echo "session18-lease: done $(date -u +%FT%TZ)"
