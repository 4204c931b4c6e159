#!/usr/bin/env bash
# bench/lease/headline-job.sh: the GPU machine's checks and headline rows in ONE background job on a
# warm machine (bench/lease/unpack-carry.sh first; DALI's wheels stashed by the calls that follow,
# bench/dali_install.sh). Builds nothing. Each step appends "step rc seconds" to $OUT/STEPS and
# keeps its output in $OUT/<step>/. Steps (STEPS_TO_RUN picks; default all, in this order):
#   gputests   bench/gpu-check.sh on the carried build (GPU_TESTS, GPU_SANITIZED: the tests of what
#              the headline rows run -- decoder, resize, normalize, pipeline); the job stops when
#              they fail: nothing is measured on a red build
#   gpuops     the other GPU tests (every test_gpu_* of the build not in GPU_TESTS: the operators
#              the headline rows do not use), no sanitizer unless GPU_OPS_SANITIZED; recorded, the
#              job goes on
#   pytests    the package's torch/GPU tests from the carried CUDA wheel
#   data       the ImageNet-like set (COUNT images, compare.sh STEP=data) at /tmp/stoker-cmp
#   waitset    instead of data, in a second job on the same machine: wait for the first job's set
#              (FIRST_STEPS=<its OUT>/STEPS; two jobs side by side, each on a GPU of its own: CUDA_VISIBLE_DEVICES=1 CPU0=16 for the
#              second, its rows under taskset on CPUs 16.. -- e.g. the training rows in one, the
#              validation rows in the other, of one call on nvidia-h200-x2)
#   routerab   stoker alone (`stoker bench`, the protocol's clock, 3 runs each interleaved) at
#              ROUTER_CORES CPUs (taskset), rows ROUTER_ROWS (default all): the router deciding in
#              every run (auto, hw_decoder_load=-1) against the default (the router with its decisions
#              kept per machine), the engines first (hw1) and fixed 0.8 / 0.95, the
#              router with validate_entropy=false, the default with validate_entropy=true (validate: what the
#              corrupt-JPEG check costs once each file is checked once per run), and the engines' share
#              lowered with nvJPEG's CUDA decoder taking the rest on the SMs instead of the CPUs
#              (hw0.85-cuda1, hw0.7-cuda1: cuda_decoder_load=1; hw0.9, hw0.6-cuda1, hw0.8-cuda1 too);
#              ROUTER_PIPE=val runs bench/peers.py's rn50-val graph instead of rn50-train; router rows
#              run with STOKER_ROUTER_CACHE=off (each run decides), auto-notrial without the trial;
#              calls1: the default with one engine call in flight at a time (STOKER_ENGINE_CALLS=1);
#              auto-calls1, hw1-calls1, hw0.7-cuda1-calls1: those rows so
#   train<N>   for N in HEADLINE_CORES (each ~8.5 min: HEADLINE_S, 480 s, the step's budget, fits the
#              sweep and 3 runs a row): rn50-train, stoker through its PyTorch iterator at its
#              defaults (stoker-py-mixed, not swept) against DALI through its own at the best of a
#              sweep of hw_decoder_load (HEADLINE_SWEEP_LOADS) x prefetch depth
#              (HEADLINE_SWEEP_PREFETCH, default 2) (dali-mixed), whole process tree under taskset -c 0..N-1
#   effnet     DALI's EfficientNet training shape (random-resized crop, flip, AutoAugment ImageNet
#              policy, normalize; bench/peers.py effnet_graph) at 16 CPUs, stoker at its defaults
#              against DALI's sweep
#   val16      the same as train<N> for rn50-val at 16 CPUs
#   prefetch8  rn50-train at 8 CPUs with BOTH loaders swept over prefetch 2/3 and hw_decoder_load
#              1.0/0.99 (PREFETCH_SWEEP), each at its best: whether a third batch in flight is worth
#              stoker's default (equal tuning; not in the default list of steps)
#   hidata     the camera-like set (HIRES_COUNT images, default 1200, 2-3 MP 4:2:0: compare.sh
#              DATASET=hires) at /tmp/stoker-hires; not in the default list of steps
#   hires<N>   for N in HIRES_CORES (16 8): the val row of train<N>'s shape on that set
#   routerhi   routerab's rows on the camera-like set (after hidata), at ROUTERHI_CORES CPUs (16),
#              rows ROUTERHI_ROWS (default auto), the val graph (ROUTERHI_PIPE): where the router's choice differs from the
#              engines-only default; not in the default list of steps
#   view<G>    for G in VIEW_GPUS (1 2): the loader-bound training view (bench/train-view.sh, ResNet-18
#              at 160 px, VIEW_ARCH/VIEW_SIZE for the ResNet-50 one) on G GPUs under torchrun (DDP) with
#              VIEW_CORES_PER (16) CPUs a GPU, on the data step's photographs, loaders VIEW_LOADERS
#              (stoker,pytorch,dali: the DataLoader with its side-stream prefetcher), no profile; its
#              deadline VIEW_S (660: 9 runs under torchrun) from the step's start; view2 and up give each loader's scaling
#              from view1 when it ran; after dali, not in the default list of steps
#   daliex     DALI's own examples, import-swapped, on the GPU as DALI wrote them
#              (scripts/run-dali-examples.sh DALI_EXAMPLES_DIR DALI_EXAMPLES_DATA gpu; the caller carries
#              a fetched copy of DALI's example files: the project keeps none)
#   opsmicro   bench/lease/ops-micro.sh: each GPU operator against DALI's on a batch of 256 images
#              (OPS, OPS_WARMUP, OPS_SECONDS, OPS_REPEATS from the environment; a short clock is labelled NOT
#              protocol rows by the driver)
#   nvprobe    bench/nvjpeg_batched_probe.c (carried as .carry-py/nvjpeg_batched_probe; NOT protocol
#              rows): whether nvJPEG's batched GPU decoder adds images per second beside the engines,
#              and its CPU per image, on the ImageNet-like set and (after hidata) the camera-like one;
#              NVPROBE_ROWS / NVPROBE_HI_ROWS (worker lists), NVPROBE_S seconds each
#   probe      bench/lease/router-probe.sh (NOT protocol rows; PROBE_ROWS): whether a deeper prefetch
#              feeds the engines better at load 1 (8 CPUs)
# SET_DIR: the ImageNet-like set's folder (/tmp/stoker-cmp).
# usage (one call): OUT=$OUT/job JOB_TGZ=$OUT/job.tgz STEPS_TO_RUN=... bash bench/lease/headline-job.sh
# usage (call 1): bash bench/lease/unpack-carry.sh; (OUT=/tmp/job setsid nohup bash
#   bench/lease/headline-job.sh > /tmp/job.log 2>&1 < /dev/null &); later calls poll it with
#   bench/lease/poll.sh /tmp/job /tmp/job/DONE 555 /tmp/job.log (exit 3 at once on a fresh machine).
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/job}
mkdir -p "$OUT"
export STOKER_CLI=$PWD/.carry/build/stoker STOKER_SOURCE_DIR=$PWD COUNT=${COUNT:-10000}
export LD_LIBRARY_PATH=$PWD/.carry/build/lib:$PWD/.carry/build/ffmpeg${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
set_dir=${SET_DIR:-/tmp/stoker-cmp} # the ImageNet-like set (the data step makes it)
steps=${STEPS_TO_RUN:-gputests gpuops pytests photos data dali daliex train8 train16 opsmicro effnet val16 probe}
echo "headline-job: commit $(cat .carry/COMMIT 2>/dev/null); steps: $steps; $(nproc) CPUs; $(date -u +%FT%TZ)"

# cpu_range N: the N CPUs a row runs on, from CPU0 (0; e.g. 16 for a second job on a machine's
# second GPU, CUDA_VISIBLE_DEVICES=1, beside a first on CPUs 0-15 and GPU 0)
cpu_range() { echo "${CPU0:-0}-$((${CPU0:-0} + $1 - 1))"; }

step() {
  local name=$1
  shift
  case " $steps " in *" $name "*) ;; *) return 0 ;; esac
  mkdir -p "$OUT/$name"
  echo "$name" > "$OUT/STEP"
  local start=$(date +%s)
  OUT=$OUT/$name "$@" > "$OUT/$name/log.txt" 2>&1
  local rc=$?
  echo "$name $rc $(($(date +%s) - start))" >> "$OUT/STEPS"
  tail -12 "$OUT/$name/log.txt"
  return $rc
}

pytests() {
  rm -rf /tmp/stkpy
  python3 -m pip install -q --no-deps --no-index --target /tmp/stkpy .carry-py/wheel2/*.whl .carry-py/pytest/*.whl || return 1
  (cd tests/python && PYTHONPATH=/tmp/stkpy timeout 420 python3 -m pytest -q -rs -p no:cacheprovider \
    test_torch.py test_iterator_epochs.py test_iterator.py test_external_source.py dali_compat test_auto_aug.py test_auto_aug_ops.py \
    test_ops_filters.py ${EXTRA_PYTESTS:-})
}

# stoker bench rows at the protocol's clock, interleaved in a shuffled order.
routerab() {
  local cores=${ROUTER_CORES:-8} dir=$OUT/files
  mkdir -p "$dir"
  local text='jpegs, labels = readers.file(random_shuffle=True, name="Reader")
decoded = decoders.image_random_crop(jpegs, device="mixed", output_type="RGB"KNOBS)
resized = resize(decoded, device="gpu", resize_x=224, resize_y=224)
coin = random.coin_flip(probability=0.5)
images = crop_mirror_normalize(resized, device="gpu", dtype="float", output_layout="CHW", crop=[224, 224], mean=[123.675, 116.28, 103.53], std=[58.395, 57.12, 57.375], mirror=coin)
outputs(images, labels)'
  if [ "${ROUTER_PIPE:-train}" = val ]; then  # bench/peers.py's rn50-val graph
    text='jpegs, labels = readers.file(random_shuffle=False, name="Reader")
decoded = decoders.image(jpegs, device="mixed", output_type="RGB"KNOBS)
resized = resize(decoded, device="gpu", resize_shorter=256)
images = crop_mirror_normalize(resized, device="gpu", dtype="float", output_layout="CHW", crop=[224, 224], mean=[123.675, 116.28, 103.53], std=[58.395, 57.12, 57.375])
outputs(images, labels)'
  fi
  declare -A knobs=([auto]=", hw_decoder_load=-1" [default]="" [hw1]=", hw_decoder_load=1" [hw0.8]=", hw_decoder_load=0.8"
                    [hw0.95]=", hw_decoder_load=0.95" [auto-novalidate]=", hw_decoder_load=-1, validate_entropy=False"
                    [validate]=", validate_entropy=True"
                    [hw0.85-cuda1]=", hw_decoder_load=0.85, cuda_decoder_load=1.0"
                    [hw0.7-cuda1]=", hw_decoder_load=0.7, cuda_decoder_load=1.0"
                    [hw0.9]=", hw_decoder_load=0.9" [hw0.6-cuda1]=", hw_decoder_load=0.6, cuda_decoder_load=1.0"
                    [hw0.8-cuda1]=", hw_decoder_load=0.8, cuda_decoder_load=1.0"
                    [auto-notrial]=", hw_decoder_load=-1" [calls1]="" [auto-calls1]=", hw_decoder_load=-1"
                    [hw1-calls1]=", hw_decoder_load=1" [hw0.7-cuda1-calls1]=", hw_decoder_load=0.7, cuda_decoder_load=1.0")
  # the rows' environment: each run of a router row decides for itself (no decision kept from an
  # earlier run); auto-notrial keeps the model's load without the trial (the router before it);
  # calls1 is the default split with one engine call in flight at a time, each *-calls1 its row so
  declare -A envs=([auto]="STOKER_ROUTER_CACHE=off" [auto-novalidate]="STOKER_ROUTER_CACHE=off"
                   [auto-notrial]="STOKER_ROUTER_CACHE=off STOKER_ROUTER_TRIAL_BATCHES=0"
                   [calls1]="STOKER_ENGINE_CALLS=1" [auto-calls1]="STOKER_ROUTER_CACHE=off STOKER_ENGINE_CALLS=1"
                   [hw1-calls1]="STOKER_ENGINE_CALLS=1" [hw0.7-cuda1-calls1]="STOKER_ENGINE_CALLS=1")
  local rows=${ROUTER_ROWS:-${!knobs[*]}}
  for row in $rows; do printf '%s\n' "${text/KNOBS/${knobs[$row]}}" > "$dir/$row.txt"; done
  local order=$(for r in 1 2 3; do for row in $rows; do echo "$row"; done; done | shuf --random-source=<(yes))
  for row in $order; do
    echo "== $row"
    env ${envs[$row]:-} taskset -c "$(cpu_range "$cores")" "$STOKER_CLI" bench --device gpu --pipeline "$dir/$row.txt" --data "$set_dir" \
      --threads "$cores" --warmup 10 --seconds 30 --no-digest --json 2> "$dir/$row.stderr.$RANDOM" | tail -1 |
      sed "s/^/$row /" | tee -a "$OUT/rows.txt"
  done
  echo "router decisions (count, line):"
  grep -h "hw_decoder_load auto ->" "$dir"/*.stderr.* 2>/dev/null | sed 's/^.*hw_decoder_load auto/auto/' | sort | uniq -c
  python3 - "$OUT/rows.txt" <<'PY'
import json, statistics, sys
rows = {}
for line in open(sys.argv[1]):
    name, _, text = line.partition(' ')
    try: r = json.loads(text)
    except ValueError: continue
    rows.setdefault(name, []).append(r)
for name, rs in sorted(rows.items()):
    v = [r.get('images_per_second', 0) for r in rs]  # stoker bench --json's names
    cores = [r.get('cpu_cores_busy', 0) for r in rs]
    print(f"{name:18s} median {statistics.median(v):8.0f} img/s  range {min(v):.0f}-{max(v):.0f}  n={len(v)}  cores {statistics.median(cores):.1f}")
PY
}

# wait_until SECONDS COMMAND...: COMMAND every 5 s until it succeeds (0) or SECONDS have passed (1).
# What later calls or the other job bring: DALI's wheels, the photographs, the other job's set.
wait_until() {
  local deadline=$(($(date +%s) + $1))
  shift
  until "$@"; do
    [ "$(date +%s)" -lt "$deadline" ] || return 1
    sleep 5
  done
}
dali_importable() { PYTHONPATH=/tmp/site python3 -c 'import nvidia.dali as d; print("DALI", d.__version__)' 2>/dev/null; }

headline() {  # MODE CORES [SWEEP [DEFAULTS]]: stoker at its defaults (DEFAULTS) against DALI's sweep
  local mode=$1 n=$2 sweep=${3:-} defaults=${4-stoker-py-mixed}
  if [ -z "$sweep" ]; then
    for p in ${HEADLINE_SWEEP_PREFETCH:-2}; do
      for hw in ${HEADLINE_SWEEP_LOADS:-0.65 0.8 0.99}; do sweep="$sweep $n,$p,$hw"; done
    done
  fi
  # the carried CUDA wheel (pytests installed it in /tmp/stkpy) before the source tree's python/
  EXTRA_PYTHONPATH="/tmp/stkpy /tmp/site" taskset -c "$(cpu_range "$n")" env DATA_DIR="${HEADLINE_DATA:-$set_dir}" KEEP_DATA=1 MODE="$mode" \
    LOADERS=stoker-py-mixed,dali-mixed DEFAULTS="$defaults" SWEEP="${sweep# }" REPEATS=3 \
    TOTAL_S=${HEADLINE_S:-480} HARD_S=$((${HEADLINE_S:-480} + 40)) bash bench/compare.sh
}

export GPU_TESTS=${GPU_TESTS:-"test_gpu_backend test_gpu_ops test_gpu_decoder test_gpu_decoder_strict test_gpu_pipeline test_gpu_pinned_outputs"}
export GPU_SANITIZED=${GPU_SANITIZED:-"test_gpu_ops"}
step gputests bash bench/gpu-check.sh .carry/build || { echo "headline-job: GPU tests failed: stopping"; exit 1; }
other_gpu_tests() {
  local rest=""
  for t in .carry/build/tests/test_gpu_*; do
    case " $GPU_TESTS " in *" $(basename "$t") "*) ;; *) rest="$rest $(basename "$t")" ;; esac
  done
  GPU_TESTS="${rest# }" GPU_SANITIZED="${GPU_OPS_SANITIZED:-}" bash bench/gpu-check.sh .carry/build
}
step gpuops other_gpu_tests
step pytests pytests
# The photographs may come with a later call than the build (a call carries at most 64 MiB).
photos_here() { ls bench/.photos/*.jpg > /dev/null 2>&1; }
step photos wait_until "${PHOTOS_WAIT_S:-900}" photos_here || { echo "headline-job: bench/.photos never came"; exit 1; }
step data env DATA_DIR="$set_dir" KEEP_DATA=1 MODE=val STEP=data DATASET=photos bash bench/compare.sh ||
  { echo "headline-job: no data set"; exit 1; }
# a second job on the same machine uses the first job's set: it waits for that job's data step to
# have ended well (FIRST_STEPS: its STEPS file; a stamp alone could be an earlier call's, which the
# data step may yet remake)
set_made() { grep -q '^data 0 ' "${FIRST_STEPS:?FIRST_STEPS: the STEPS file of the first job}" 2> /dev/null && [ -f "$set_dir.stamp" ]; }
step waitset wait_until "${SET_WAIT_S:-900}" set_made || { echo "headline-job: the other job's set never came"; exit 1; }
step routerab routerab
step dali wait_until "${DALI_WAIT_S:-900}" dali_importable || { echo "headline-job: no DALI"; exit 1; }
daliex() {
  local dir=${DALI_EXAMPLES_DIR:-$PWD/.dali-ex/DALI} data=${DALI_EXAMPLES_DATA:-$PWD/.dali-ex/data}
  [ -d "$dir" ] || { echo "daliex: no DALI example files at $dir (carry them)"; return 1; }
  PYTHONPATH=/tmp/stkpy PATH=$PWD/.carry/build:$PATH VIDEO_DIR=$data/clips timeout 420 \
    bash scripts/run-dali-examples.sh "$dir" "$data/images" gpu
}
step daliex daliex
view() {  # G: train-view.sh on G GPUs, VIEW_CORES_PER CPUs each
  local g=$1 n=$((${VIEW_CORES_PER:-16} * $1)) s=${VIEW_S:-660}
  local one=""  # the same job's one-GPU view: the scaling of each loader
  [ "$g" -gt 1 ] && [ -f "${OUT%/*}/view1/run.json" ] && one=${OUT%/*}/view1/run.json  # OUT: this step's folder
  CALL_START=$(date +%s) HARD_S=$s KILL_S=$((s + 20)) GPUS=$g CORES=$n SCALING_FROM=$one \
    ARCH=${VIEW_ARCH:-resnet18} SIZE=${VIEW_SIZE:-160} DATA=$set_dir LOADERS=${VIEW_LOADERS:-stoker,pytorch,dali} PROFILE=0 \
    bash bench/train-view.sh
}
for g in ${VIEW_GPUS:-1 2}; do step view$g view "$g"; done
for n in ${HEADLINE_CORES:-8 16}; do step train$n headline train "$n"; done
step opsmicro env PYTHONPATH=/tmp/stkpy:/tmp/site bash bench/lease/ops-micro.sh
# both loaders through the sweep (no DEFAULTS)
step prefetch8 headline train 8 "${PREFETCH_SWEEP:-8,2,1.0 8,3,1.0 8,2,0.99 8,3,0.99}" ""
step effnet headline effnet 16
step val16 headline val 16
# camera-like 2-3 MP photographs (val), the set made once (its own COUNT and seed: compare.sh's stamp)
hires_row() { HEADLINE_DATA=/tmp/stoker-hires DATASET=hires COUNT="${HIRES_COUNT:-1200}" headline val "$1"; }
step hidata env DATA_DIR=/tmp/stoker-hires DATASET=hires COUNT="${HIRES_COUNT:-1200}" KEEP_DATA=1 MODE=val STEP=data \
  bash bench/compare.sh
routerhi() {
  local set_dir=/tmp/stoker-hires
  ROUTER_CORES=${ROUTERHI_CORES:-16} ROUTER_ROWS=${ROUTERHI_ROWS:-default auto} ROUTER_PIPE=${ROUTERHI_PIPE:-val} routerab
}
hires_cores=${HIRES_CORES:-16 8}
for n in $hires_cores; do
  step hires$n hires_row "$n"
  if [ "$n" = "${hires_cores%% *}" ]; then step routerhi routerhi; fi
done
nvprobe() {
  local bin=$PWD/.carry-py/nvjpeg_batched_probe secs=${NVPROBE_S:-6} rows
  [ -x "$bin" ] || { echo "nvprobe: no $bin (bash bench/nvjpeg-batched-probe.sh, then carry .carry-py)"; return 1; }
  for set in "$set_dir" /tmp/stoker-hires; do
    [ -d "$set" ] || continue
    if [ "$set" = "$set_dir" ]; then
      rows=${NVPROBE_ROWS:-hw:256 gpu:128 gpu:256 hw:256,hw:256 hw:256,gpu:128 hw:256,hw:256,gpu:128 gpu:128,gpu:128}
    else
      rows=${NVPROBE_HI_ROWS:-hw:64 gpu:64 hw:64,hw:64 hw:64,gpu:64 hw:64,hw:64,gpu:64}
    fi
    echo "== $set"
    local files=$(find "$set" -name '*.jpg' | sort | head -n "${NVPROBE_FILES:-4000}")
    for row in $rows; do timeout 60 "$bin" "$secs" "$row" $files; done
  done
}
step nvprobe nvprobe
step probe env PROBE_CORES="${PROBE_CORES:-8}" PROBE_ROWS="${PROBE_ROWS:-1.0 1.0:3 1.0:4 auto}" bash bench/lease/router-probe.sh
echo done > "$OUT/STEP"
touch "$OUT/DONE"
echo "headline-job: done $(date -u +%FT%TZ)"
# a call brings back a limited number of files: JOB_TGZ (e.g. $OUT/../job.tgz of the calling
# command's $OUT) packs every step's files into one
if [ -n "${JOB_TGZ:-}" ]; then tar czf "$JOB_TGZ" -C "$(dirname "$OUT")" "$(basename "$OUT")"; fi
