#!/usr/bin/env bash
# bench/lease/lease-job.sh (session18-lease.sh until session 18): a device session's GPU work on issue 15
# as ONE background job on a warm machine, so the lease's minutes go to measuring rather than to the
# gaps between 10-minute calls. Builds nothing (the carried build, .carry/COMMIT; the carried wheel,
# .carry-py/wheel2, for the training view). Not on a hot path.
#
# Use (calls on one warm lease; the tool carries at most 64 MiB a call, the tracked tree (~11 MB)
# included; what an earlier call carried stays on the warm machine, which goes back after 30 s
# with no call in flight: session 21 lost two machines, and a job each, to gaps between calls, so
# every poll is one long call, up to ~590 s, and the next follows at once):
#   call 1 (carry .carry .carry-py bench/.photos): bash bench/lease/unpack-carry.sh >/dev/null;
#     (OUT=/tmp/job STEPS_TO_RUN="..." setsid nohup bash bench/lease/lease-job.sh > /tmp/job.log 2>&1 < /dev/null &
#      echo $! > /tmp/job.pid)
#   calls 2-7 (carry .whl-parts/call01..06, 48 MiB parts): bash bench/dali_install.sh stash; the
#     last also `bash bench/dali_install.sh install` (the job's DALI steps wait for it)
#   to stop a job (a wrong step list): kill -- -$(cat /tmp/job.pid); never `pkill -f PATTERN` with the
#     pattern in the call's own command line (session 22: it killed the call itself)
#   then calls that wait on the pid (`kill -0 $(cat /tmp/job.pid)`) up to ~9.8 min each, printing
#   `cat /tmp/job/STEPS; tail -5 /tmp/job.log`, and EVERY such call ends with
#   `tar -C /tmp -czf $OUT/job.tgz --exclude='*.trace.json*' job job.log` (the tool returns only a few
#   files a call: one tarball; a few hundred KB): session 25 lost a machine, and the A/B rows it had
#   finished, to a gap between two calls, because only the last call was to bring the results back.
#
# Before a lease: bench/lease/prepare-lease.sh (builds and packs all of the below from HEAD, skipping
# what is there). On a fresh build machine (session 21's was: ~15 min, all here, none on the device):
#   make build && bash bench/lease/ffmpeg-min.sh; python3 -m venv .venv and pip install numpy pytest pillow
#   scikit-build-core; PYTHON=.venv/bin/python bash bench/fetch_photos.sh; bash bench/dali_wheels.sh;
#   pip download --only-binary=:all: --python-version 3.12 -d .carry-py/pytest pytest;
#   pip wheel --no-build-isolation --no-deps --config-settings=cmake.define.STOKER_CUDA=ON . into
#   .carry-py/wheel2 (with COMMIT.txt); bench/fused_kernel_cost.cu's nvcc line; bench/lease/pack-carry.sh.
#
# Steps, in the order run (STEPS_TO_RUN picks; the default is all but ab and the val pair);
# each appends "step rc seconds" to $OUT/STEPS and keeps its output in $OUT/<step>:
#   gputests   bench/gpu-check.sh (GPU_TESTS, GPU_SANITIZED below). The job stops here when they
#              fail: nothing is measured on a red build.
#   pytests    the Python package's GPU tests from the carried wheel (pytests() below); the job stops
#              when they fail
#   tunetests  test_gpu_ops, test_gpu_sequence_ops (the fused kernel against the CPU), test_gpu_decoder
#              (memcheck too) and test_gpu_pipeline with the A/B knobs on (STOKER_MIXED_TUNING
#              alloc=1,pin_reserve=512; STOKER_FUSED_BLOCKS=66) and the old ways back (the pinned
#              lists' list-wide sizing, STOKER_PINNED_SHRINK=0; per-sample uploads,
#              STOKER_PACKED_UPLOAD=0; a device upload copy per slot, STOKER_SHARED_UPLOAD=0;
#              whole-image output rooms, crop_rooms=0); reported only
#   roitests   test_gpu_decoder (memcheck too) and test_gpu_pipeline with the mixed decoder's old
#              way back: whole images decoded by the engines into a scratch and cut, the engine sets
#              in turn (STOKER_MIXED_TUNING=roi=0,lowest=0; roi=1,lowest=1 are the defaults since
#              session 26, after they passed here on the H100 in sessions 25-26); reported only
#              (session 22's crop_rooms=1 failure was the engines' scratch spaced by the largest
#              window, not the largest image, mended in session 23)
#   packtests  the same with the engines' whole images back to back in their scratch
#              (STOKER_MIXED_TUNING=roi=0,scratch_packed=1, session 23; passed on the H100 in session 24)
#   data       the ImageNet-like set, COUNT (20000: issue 15's "at least 20,000") images
#              (compare.sh STEP=data, KEEP_DATA=1: DATA_DIR, /tmp/stoker-cmp, reused by every later step)
#   ab         stoker alone, rows of CONFIGS on that set, on the protocol's clock since session 26
#              (AB_WARMUP 10 s, AB_WINDOW 30 s; before, 4 s + 10 s diagnostic rows) (default
#              bench/lease/ab-train.txt: rn50-train stand-alone, 3 runs each interleaved, at
#              session 19's best setting, by default, with window decodes on the engines (roi=1: the
#              mixed decoder's device memory at DALI's in the view; session 8 found it no faster) and
#              with whole-image rooms (crop_rooms=0, the old default), and with the engines'
#              scratch packed (scratch_packed=1): whether roi=1 or scratch_packed=1 can be the
#              default without costing the rn50-train target; bench/lease/ab-train-lowest.txt
#              adds roi=1,lowest=1, the mixed decoder's least device memory: CONFIGS picks it; its
#              session 26 rows made roi=1,lowest=1 the defaults, so an empty tune= is that way since,
#              and tune=roi=0,lowest=0 the old one)
#   dali       waits (up to DALI_WAIT_S, 900) for DALI 2.4 to import from /tmp/site
#   valsweep   compare.sh MODE=val STEP=sweep (stoker vs DALI, equal tuning, its own step so the
#              protocol phase's budget does not cut it short)
#   val        compare.sh MODE=val CHOSEN_FROM=the sweep COLD=1 COLD_READ_AHEAD=1
#   trainsweep, train   the same for rn50-train. CHOSEN_FROM_VAL / CHOSEN_FROM_TRAIN=RUN.json: the
#              protocol step at an earlier call's sweep (its run.json, carried; compare.sh marks its
#              rows as from that call) instead of DATA_DIR.sweep.json, which the data step removes
#              when it makes the set afresh (session 27: a machine went back after trainsweep, and
#              the next machine's train step needed the first one's choices)
#   fusedcost  the fused resize/crop/normalize kernel alone on a ResNet-50-view batch (ms, GB/s:
#              bench/fused_kernel_cost.cu, carried built as .carry-py/fused_kernel_cost), at the
#              default grid (auto: 4 looping blocks per SM since session 22), one block a tile and
#              528 blocks, and the batch in 4, 8 or 32 launches (STOKER_FUSED_SPLIT; auto/N, 0/8),
#              each output compared bit for bit with the first (the step fails when one differs)
#   r50diag    the ResNet-50 view's variants, one run each (10 s + 15 s, profiled; NOT protocol rows):
#              R50_VARIANTS (synthetic; stoker and dali at their defaults, mixed and CPU decoder;
#              the mixed decoder's way before session 26, whole images on the engines and the sets in
#              turn (tuning=roi=0/lowest=0), and that way with the engines' scratch packed
#              (tuning=roi=0/scratch_packed=1); these rows run only when their tests step (roitests,
#              packtests) passed in the same job, so r50view never picks a variant whose output was
#              wrong; the CPU decoder at the library's high priority in one launch (the example's
#              way before session 26) and in 32 launches (fusedsplit=N).
#              Session 26 made roi=1,lowest=1 the mixed decoder's defaults (ResNet-50 view, protocol:
#              14,576 MB against DALI mixed's 14,604-14,670; 14,774 with roi=1 alone in session 23's
#              one run, 14,678 with lowest=1 too in session 25's) and normal priority + 8 launches
#              the example's. Session 24 dropped torchupload=clone (its protocol rows: 3,938 against 3,940),
#              fusedblocks=132 (3,933 at normal priority, one run, beside the default's 3,922) and
#              the A/Bs of session 23's new defaults (crop_rooms=0: 17,372 MB against 16,888;
#              sharedupload=off: 14,438 against 14,112, same speed). Session 23 dropped the fused
#              kernel's one-block-a-tile grid (fusedblocks=0; fusedcost times it alone) and
#              per-sample uploads (packed=off: 3,780 against 3,938 in session 22's one run).
#              Session 22 dropped session 21's stoker+pinshrink=off mixed (3,634 against 3,721),
#              fusedblocks=132 (3,740 mixed; its CPU decoder's 3,644 was void: a one-step warm-up,
#              RESULTS.md session 23), packed=off + pinshrink=off (3,940) and the CPU decoder at
#              normal priority.
#              Session 21's runs (bench/runs/2026-11-27-h100-session21) had 1 GiB pinned chunks pinned
#              5-30 s into every stoker run, the training thread's next() held up to 570 ms; session 20's
#              workers=6/4, pin=off, prefetch=5, pin_reserve=2048 and session 19's alloc=1,
#              sets=2/lowest=1, hw=1.0 moved nothing beyond one run's noise. Each
#              profile prints the training stream's
#              timeline (its stops: loader's work running vs GPU idle) and keeps the Chrome trace
#              (TRACES=1: runs/*.trace.json.gz); stoker's runs log each allocation it makes
#              (STOKER_TRACE_ALLOC=1: size, ms, when)
#   r50view    bench/train-view.sh ARCH=resnet50 SIZE=224 (issue 15's ResNet-50 view: the shortfall
#              from the synthetic ceiling, same call) under the protocol, each loader at its best
#              variant of r50diag (LOADERS_FROM; without that step's run.json, R50_LOADERS:
#              synthetic,stoker,dali). Each view step has its own deadline (R50_S, 900 s) and trains on the
#              data step's set (R50_DATA, default DATA_DIR; its own datagen set when absent)
#   lbview     (not by default) the loader-bound view (ARCH resnet18, SIZE 160) under the protocol for
#              LB_LOADERS (default: stoker at the example's defaults and at the library's, high
#              priority and one launch)
#   dalimem    (last: what time is left) rn50-val's DALI row with and without its example's preallocation
#              hints (peers.py prealloc=0), beside stoker's, one run each of 10 s + 15 s: how much of
#              DALI's device memory the hints are (NOT protocol rows)
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/job}
mkdir -p "$OUT"
export STOKER_CLI=$PWD/.carry/build/stoker STOKER_SOURCE_DIR=$PWD
export COUNT=${COUNT:-20000}
set_dir=${DATA_DIR:-/tmp/stoker-cmp} # the data step's set, every later step's (compare.sh's DATA_DIR)
export LD_LIBRARY_PATH=$PWD/.carry/build/lib:$PWD/.carry/build/ffmpeg${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
steps=${STEPS_TO_RUN:-gputests pytests tunetests data dali trainsweep train fusedcost r50diag r50view dalimem}
# One job at a time: two at once share the GPU and every number of both is void (session 19: a
# job whose data step failed went on waiting for DALI, then measured beside its replacement).
exec 9> /tmp/lease-job.lock
flock -n 9 || { echo "lease-job: another lease-job holds /tmp/lease-job.lock: not starting" >&2; exit 3; }
echo "lease-job: commit $(cat .carry/COMMIT 2>/dev/null || echo unknown); steps: $steps; COUNT $COUNT; $(date -u +%FT%TZ)"

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
  echo "lease-job: $name rc=$rc in $(($(date +%s) - start)) s"
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

# compare MODE: the equal-tuning sweep, then the protocol phase at its choices with the cold rows.
compare() { env DATA_DIR="$set_dir" KEEP_DATA=1 "$@" bash bench/compare.sh; }
sweep() { compare MODE="$1" STEP=sweep; }
protocol() {
  local from=$set_dir.sweep.json
  case $1 in val) from=${CHOSEN_FROM_VAL:-$from} ;; train) from=${CHOSEN_FROM_TRAIN:-$from} ;; esac
  compare MODE="$1" CHOSEN_FROM="$from" COLD=1 COLD_READ_AHEAD=1
}
# The view trains on the data step's 20,000 ImageNet-like images when they are there (train-view.sh
# then prints their statistics), else on its own `stoker datagen` set.
view() {
  local data=${R50_DATA:-$set_dir}
  [ -d "$data" ] || data=
  CALL_START=$(date +%s) HARD_S=$((${R50_S:-900} - 15)) KILL_S=${R50_S:-900} ARCH=${R50_ARCH:-resnet50} \
    SIZE=${R50_SIZE:-224} DATA=$data "$@"
}
dalimem() {
  local setting=prefetch=2,hw_load=0.8 # DALI's choice in session 18's rn50-val sweep
  python3 bench/peers.py --data "$set_dir" --stoker "$STOKER_CLI" --warmup 10 --seconds 15 --repeats 1 \
    --runs stoker-cli-mixed@16:val,prefetch=3,hw_load=0.8 "dali-mixed@16:val,$setting" \
    "dali-mixed@16:val,$setting,prealloc=0" --out "$OUT/run.json"
}
# The package's GPU tests (test_torch.py's CUDA cases: zero copy, consumer streams, .gpu() labels on
# a side stream) and the iterators' epoch tests, from the carried CUDA wheel (.carry-py/wheel2) with
# pytest's wheels (.carry-py/pytest: pip download pytest), installed under /tmp/stkpy.
pytests() {
  rm -rf /tmp/stkpy
  python3 -m pip install -q --no-deps --no-index --target /tmp/stkpy .carry-py/wheel2/*.whl .carry-py/pytest/*.whl ||
    return 1
  (cd tests/python && PYTHONPATH=/tmp/stkpy timeout "${PYTESTS_S:-300}" python3 -m pytest -q -rs -p no:cacheprovider \
    test_torch.py test_iterator_epochs.py test_iterator.py)
}
# The fused resize/crop/normalize kernel alone (bench/fused_kernel_cost.cu, built and carried as
# .carry-py/fused_kernel_cost): ms per ResNet-50-view batch, the baseline for kernel variants.
fusedcost() {
  [ -x .carry-py/fused_kernel_cost ] || { echo "fusedcost: .carry-py/fused_kernel_cost not carried"; return 1; }
  .carry-py/fused_kernel_cost 200 256 auto,0,528,auto/4,auto/8,auto/32,0/8
}
# passed NAME: 0 when step NAME ran in this job and passed (called inside a step: OUT is its folder).
passed() { grep -q "^$1 0 " "${OUT%/*}/STEPS" 2>/dev/null; }
r50diag() {
  local variants=synthetic,stoker
  # A knob's row only where its GPU tests passed in this job (a row r50view may pick must be right).
  # The mixed decoder's defaults since session 26 (roi=1,lowest=1) against its old way, whole images
  # on the engines and the sets in turn (2.4 GB more in rn50-train), and that way with the scratch packed.
  if passed roitests; then variants=$variants,stoker+tuning=roi=0/lowest=0; fi
  if passed packtests; then variants=$variants,stoker+tuning=roi=0/scratch_packed=1; fi
  variants=$variants,stoker+decode=cpu
  # The example's defaults since session 26: normal priority, the fused kernel in 8 launches (session
  # 24's profiles: in one launch at high priority the training stream stood still for the whole
  # kernel, 0.53-0.62 ms); the library's way (high, one launch) and 32 launches beside them.
  variants=$variants,stoker+decode=cpu+priority=high+fusedsplit=1,stoker+decode=cpu+fusedsplit=32
  variants=$variants,dali,dali+decode=cpu
  echo "r50diag: variants $variants"
  view env REPEATS=1 WINDOW=15 TRACES=1 STOKER_TRACE_ALLOC=1 LOADERS="${R50_VARIANTS:-$variants}" \
    bash bench/train-view.sh
}
r50view() {
  local diag=${OUT%/*}/r50diag/run.json # OUT is this step's folder; r50diag's is beside it
  if [ -f "$diag" ]; then
    view env -u LOADERS LOADERS_FROM="$diag" PROFILE=0 bash bench/train-view.sh # r50diag profiled them
  else
    view env LOADERS=${R50_LOADERS:-synthetic,stoker,dali} bash bench/train-view.sh
  fi
}

# The loader-bound view (ResNet-18 at 160 px, issue 15's "where the loader matters") for one knob's
# A/B: whether a setting that helps the ResNet-50 view costs the view where the loader is the
# bottleneck (session 26: the example's normal priority and 8 launches, 12,776 img/s against high and
# one launch's 12,764, before they became its defaults). LB_LOADERS picks the rows.
lbview() {
  view env ARCH=${LB_ARCH:-resnet18} SIZE=${LB_SIZE:-160} \
    LOADERS=${LB_LOADERS:-stoker,stoker+priority=high+fusedsplit=1} bash bench/train-view.sh
}

export GPU_TESTS=${GPU_TESTS:-"test_gpu_ops test_gpu_pipeline test_gpu_decoder test_gpu_backend test_gpu_weight_tables test_gpu_pinned_outputs"}
export GPU_SANITIZED=${GPU_SANITIZED:-"test_gpu_ops test_gpu_backend"}
step gputests bash bench/gpu-check.sh .carry/build || { echo "lease-job: GPU tests failed: stopping"; exit 1; }
step pytests pytests || { echo "lease-job: the package's GPU tests failed: stopping"; exit 1; }
# The decoder's A/B knobs r50diag tries, checked first against the CPU reference (test_gpu_decoder,
# memcheck, test_gpu_pipeline) with the knobs on: a failure is reported, r50diag still runs.
step tunetests env STOKER_MIXED_ALLOC=1 STOKER_MIXED_PIN_RESERVE=512 STOKER_PINNED_SHRINK=0 STOKER_FUSED_BLOCKS=66 \
  STOKER_PACKED_UPLOAD=0 STOKER_SHARED_UPLOAD=0 GPU_TESTS="test_gpu_ops test_gpu_sequence_ops test_gpu_decoder test_gpu_pipeline" \
  GPU_SANITIZED=test_gpu_decoder bash bench/gpu-check.sh .carry/build
# The mixed decoder's way before session 26 (whole images on the engines, sets in turn:
# STOKER_MIXED_TUNING=roi=0,lowest=0, r50diag's stoker+tuning=roi=0/lowest=0) against the CPU
# reference, memcheck too: reported only; r50diag runs its row only when they pass.
step roitests env STOKER_MIXED_TUNING=roi=0,lowest=0 GPU_TESTS="test_gpu_decoder test_gpu_pipeline" \
  GPU_SANITIZED=test_gpu_decoder bash bench/gpu-check.sh .carry/build
# The engines' whole images packed in their scratch (roi=0,scratch_packed=1, r50diag's
# stoker+tuning=roi=0/scratch_packed=1), memcheck too: reported only; r50diag runs its row only when they pass.
step packtests env STOKER_MIXED_TUNING=roi=0,scratch_packed=1 GPU_TESTS="test_gpu_decoder test_gpu_pipeline" \
  GPU_SANITIZED=test_gpu_decoder bash bench/gpu-check.sh .carry/build
step data compare MODE=val STEP=data || { echo "lease-job: no data set: stopping"; exit 1; }
# The protocol's clock (>= 10 s warm-up, >= 30 s window) since session 26, whose A/B behind the roi/lowest
# defaults ran 4 s + 10 s rows: a number in RESULTS.md follows the protocol (~43 s a row).
step ab env PART=val CONFIGS=${CONFIGS:-bench/lease/ab-train.txt} VAL_DATA="$set_dir" \
  WARMUP=${AB_WARMUP:-10} SECONDS_=${AB_WINDOW:-30} bash bench/lease/mixed-ab.sh
step dali wait_for_dali || { echo "lease-job: no DALI: stopping before its rows"; exit 1; }
export PYTHONPATH=/tmp/site
step valsweep sweep val
step val protocol val
step trainsweep sweep train
step train protocol train
step fusedcost fusedcost
step r50diag r50diag
step r50view r50view
step lbview lbview
step dalimem dalimem
echo "done" > "$OUT/STEP"
echo "lease-job: done $(date -u +%FT%TZ)"
