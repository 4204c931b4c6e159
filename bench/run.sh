#!/usr/bin/env bash
# bench/run.sh: the benchmark harness's one entry point (docs/benchmarks.md). Each benchmark runs
# stoker and its peers under the project's protocol (bench/protocol.py: warm-up >= 10 s excluded,
# window >= 30 s ended by a device synchronize, >= 3 repeats per row in one shuffled order, median
# and range; a win only where the ranges are apart) and writes run.json + results-section.md to
# $OUT (default bench/out/NAME-DATE, ignored by git). Builds nothing: STOKER_CLI (default
# build/stoker) must exist. Not on a hot path.
#   usage: bench/run.sh BENCHMARK        (settings through the environment; see each script's header)
set -uo pipefail
cd "$(dirname "$0")/.."
usage() {
  cat <<'USAGE'
usage: bench/run.sh BENCHMARK

  train      rn50-train: stoker against DALI (and other LOADERS) with equal tuning: a short sweep,
             then each loader at its best setting under the protocol (bench/compare.sh MODE=train)
  val        rn50-val, the same (bench/compare.sh MODE=val)
  cpu        rn50-train on the CPU alone, stoker's CLI (the README's CPU row; no GPU, no peers):
             bench/compare.sh with DEVICE=cpu LOADERS=stoker-cli-cpu on a `stoker datagen` set
  hires      2-3 MP camera-like photographs, decode only (bench/hires-compare.sh)
  view       the loader-bound training view, ResNet-18 at 160 px (bench/train-view.sh)
  shards     folder vs tar shards vs HTTP, and .npy into GPU memory (bench/shards-compare.sh)
  video      readers.video against PyAV/TorchCodec/DALI (bench/video-compare.sh)
  numpy      readers.numpy into host batches, GB/s (bench/numpy-host.sh)
  suite      every loader of bench/peers.py within a time budget (bench/suite.sh)
  selftest   the harness's own checks, no GPU needed (bench/selftest.sh)
  table      the README's results table from bench/results/ (bench/readme_table.py)

Stoker alone on your own data: `stoker bench --data DIR --pipeline rn50-train` (same clock).
USAGE
}
export STOKER_CLI=${STOKER_CLI:-$PWD/build/stoker}
case "${1:-}" in
  train) MODE=train exec bash bench/compare.sh ;;
  val) MODE=val exec bash bench/compare.sh ;;
  cpu)
    out=${OUT:-bench/out/cpu-$(date +%Y%m%d-%H%M%S)}
    DEVICE=cpu LOADERS=stoker-cli-cpu MODE=train DATASET=${DATASET:-datagen} COUNT=${COUNT:-2000} \
      SWEEP=${SWEEP:-"$(nproc),2"} OUT=$out exec bash bench/compare.sh ;;
  hires) exec bash bench/hires-compare.sh ;;
  view) exec bash bench/train-view.sh ;;
  shards) exec bash bench/shards-compare.sh ;;
  video) exec bash bench/video-compare.sh ;;
  numpy) exec bash bench/numpy-host.sh ;;
  suite) exec bash bench/suite.sh ;;
  selftest) exec bash bench/selftest.sh ;;
  table) exec python3 bench/readme_table.py "${@:2}" ;;
  -h|--help|help) usage ;;
  *) usage >&2; [ -n "${1:-}" ] && echo "bench/run.sh: no benchmark named '$1'" >&2; exit 2 ;;
esac
