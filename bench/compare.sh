#!/usr/bin/env bash
# bench/compare.sh: one device call, issue 15 Part 1: stoker's CLI against DALI on rn50-train under
# the project's protocol (bench/compare.py: a short equal-tuning sweep, then each loader at its
# best setting, REPEATS runs each, shuffled, WARMUP s excluded, WINDOW s ended by a device
# synchronize). Builds nothing: stoker's CLI comes carried ($STOKER_CLI), DALI from /tmp/site
# (bench/dali_install.sh install, in an earlier call on the same warm machine). Not on a hot path.
# Steps: provenance to the log; the data set (bench/make_dataset.py from bench/.photos when the
# photographs are carried and python3 has Pillow and numpy, else `stoker datagen`; DATASET=photos
# or datagen forces one); bench/compare.py under a deadline of TOTAL_S from the start; the chart.
# Output under $OUT: run.json, results-section.md, chart.png (when matplotlib is there), log.txt.
# Settings (environment): STOKER_CLI (required; its folder goes on LD_LIBRARY_PATH), COMMIT (git
# rev-parse HEAD of the build, else .carry/COMMIT, else git: the device copy may lack .git), COUNT (10000), DATASET (auto), LOADERS (stoker-cli-mixed,dali-mixed),
# MODE (train), SWEEP (compare.py's default; tuples THREADS,PREFETCH[,HW_LOAD[,CUDA_LOAD]]: the
# optional 4th field is stoker's cuda_decoder_load and, for DALI, hybrid_huffman_threshold=0 when
# > 0 (DALI's default when 0 or absent): the mapping is in bench/compare.py's header), SWEEP_WARMUP (3), SWEEP_SECONDS (8), WARMUP (10),
# WINDOW (30), REPEATS (3), ORDER_SEED (from the clock), TOTAL_S (530: the sweep plans for the
# whole call to end by then), HARD_S (575: no protocol row starts that would end later), DATA_DIR (/tmp/stoker-cmp),
# DEVICE (cuda when nvidia-smi is found; cpu for a local dry run), EXTRA_PYTHONPATH (/tmp/site).
set -uo pipefail
cd "$(dirname "$0")/.."
start=$(date +%s)
out=${OUT:-bench/results/compare-$(date +%Y%m%d-%H%M%S)}
data=${DATA_DIR:-/tmp/stoker-cmp}
mkdir -p "$out"
exec > >(tee "$out/log.txt") 2>&1
export PYTHONUNBUFFERED=1
cli=${STOKER_CLI:?compare.sh: set STOKER_CLI to the stoker binary}
[ -x "$cli" ] || { echo "compare.sh: STOKER_CLI=$cli is not an executable file"; exit 2; }
cli=$(cd "$(dirname "$cli")" && pwd)/$(basename "$cli")
export COMMIT=${COMMIT:-$(cat .carry/COMMIT 2>/dev/null || git rev-parse HEAD 2>/dev/null || echo unknown)}
export LD_LIBRARY_PATH="$(dirname "$cli")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"  # shared libraries carried beside it

extra=""
for d in ${EXTRA_PYTHONPATH:-/tmp/site} build/python python; do [ -d "$d" ] && extra="$extra:$(cd "$d" && pwd)"; done
export PYTHONPATH="${extra#:}${PYTHONPATH:+:$PYTHONPATH}"
echo "compare.sh: commit $COMMIT; PYTHONPATH=$PYTHONPATH"
echo "compare.sh: stoker CLI $cli: $("$cli" --version 2>&1 | head -1)"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null || echo "compare.sh: no nvidia-smi"
echo "compare.sh: $(nproc) CPUs; $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-)"

count=${COUNT:-10000}
kind=${DATASET:-auto}
if [ "$kind" = auto ]; then
  kind=datagen
  ls bench/.photos/*.jpg >/dev/null 2>&1 && python3 -c 'import PIL, numpy' 2>/dev/null && kind=photos
fi
rm -rf "$data"
t0=$(date +%s)
case "$kind" in
  photos)
    python3 bench/make_dataset.py --kind imagenet --out "$data" --count "$count" --seed 1 --sources bench/.photos \
      > "$data.stats" 2>&1 || { cat "$data.stats"; echo "compare.sh: the ImageNet-like set failed its checks"; exit 1; }
    note="bench/make_dataset.py --kind imagenet --count $count --seed 1 --sources bench/.photos (ImageNet-like crops of real photographs)" ;;
  datagen)
    "$cli" datagen "$data" --count "$count" --classes 100 --seed 1 > "$data.stats" 2>&1 \
      || { cat "$data.stats"; echo "compare.sh: stoker datagen failed"; exit 1; }
    note="stoker datagen --count $count --classes 100 --seed 1 (synthetic ImageNet-like JPEGs; bench/.photos was not used)" ;;
  *) echo "compare.sh: DATASET must be auto, photos or datagen, not '$kind'"; exit 2 ;;
esac
cat "$data.stats"
files=$(find "$data" -name '*.jpg' | wc -l)
mean_kb=$(find "$data" -name '*.jpg' -printf '%s\n' | awk '{s+=$1} END {if (NR) printf "%.0f", s/NR/1024}')
note="$note; $files files, mean $mean_kb KB; made in $(( $(date +%s) - t0 )) s; $(tail -1 "$data.stats" | cut -c1-200)"
echo "compare.sh: data: $note"

seed=${ORDER_SEED:-$(( $(date +%s) % 100000 ))}
deadline=$(( start + ${TOTAL_S:-530} ))
hard=$(( start + ${HARD_S:-575} ))  # protocol rows are never started past this (the device command's limit is 600 s)
device=()
[ -n "${DEVICE:-}" ] && device=(--device "$DEVICE")
python3 bench/compare.py --data "$data" --data-note "$note" --loaders "${LOADERS:-stoker-cli-mixed,dali-mixed}" \
  --mode "${MODE:-train}" ${SWEEP+--sweep "$SWEEP"} --sweep-warmup "${SWEEP_WARMUP:-3}" \
  --sweep-seconds "${SWEEP_SECONDS:-8}" --warmup "${WARMUP:-10}" --seconds "${WINDOW:-30}" --repeats "${REPEATS:-3}" \
  --order-seed "$seed" --deadline "$deadline" --hard-deadline "$hard" --stoker "$cli" "${device[@]}" --out "$out"
status=$?
if [ -f "$out/run.json" ]; then
  python3 bench/report.py "$out/run.json" --chart "$out/chart.png" >/dev/null || true
fi
rm -rf "$data" "$data.stats"
echo "compare.sh: done in $(( $(date +%s) - start )) s (exit $status); results in $out: $(ls "$out" | tr '\n' ' ')"
exit $status
