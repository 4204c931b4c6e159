#!/usr/bin/env bash
# bench/compare.sh: one device call: stoker's CLI against DALI on rn50-train under
# the project's protocol (bench/compare.py: a short equal-tuning sweep, then each loader at its
# best setting, REPEATS runs each, shuffled, WARMUP s excluded, WINDOW s ended by a device
# synchronize). Builds nothing: stoker's CLI comes carried ($STOKER_CLI), DALI from /tmp/site
# (bench/dali_install.sh install, in an earlier call on the same warm machine). Not on a hot path.
# Steps: provenance to the log; the data set (bench/make_dataset.py from bench/.photos when the
# photographs are carried and python3 has Pillow and numpy, else `stoker datagen`; DATASET=photos
# or datagen forces one; DATASET=hires makes the high-resolution set, make_dataset.py --kind hires
# --seed 2, labelled hires); bench/compare.py under a deadline of TOTAL_S from the start; the chart;
# the short tables again at the end (rows, stoker against each peer, cold rows).
# Output under $OUT: run.json, results-section.md, chart.png (when matplotlib is there), log.txt.
# KEEP_DATA=1 keeps the set (DATA_DIR) after the call and reuses it in a later call on the same warm
# machine when DATA_DIR.stamp says it was made with the same kind, count, seed and make_dataset.py;
# STEP=data only makes (or checks) the set and exits. The data note in the results carries the
# statistics make_dataset.py prints. STEP=sweep runs the sweep alone (compare.py --sweep-only);
# CHOSEN_FROM=RUN.json runs the protocol phase with the settings an earlier sweep chose (no sweep;
# with KEEP_DATA=1 a STEP=sweep call leaves its run.json in DATA_DIR.sweep.json for that);
# COLD=1 adds one cold-cache row per loader after the protocol phase (its first epoch, timed from the
# loader's creation); COLD_READ_AHEAD=1 with it adds a second with readers.file read_ahead=1 for the
# loaders that have it (stoker's and DALI's decode rows).
# Settings (environment): STOKER_CLI (required; its folder goes on LD_LIBRARY_PATH), COMMIT (git
# rev-parse HEAD of the build, else .carry/COMMIT, else git: the device copy may lack .git), COUNT (10000), DATASET (auto), LOADERS (stoker-cli-mixed,dali-mixed),
# DEFAULTS (loaders run at their own defaults, not swept: compare.py --defaults), MODE (train), SWEEP (compare.py's default; tuples THREADS,PREFETCH[,HW_LOAD[,CUDA_LOAD]]: the
# optional 4th field is stoker's cuda_decoder_load and, for DALI, hybrid_huffman_threshold=0 when
# > 0 (DALI's default when 0 or absent): the mapping is in bench/compare.py's header), SWEEP_WARMUP (3), SWEEP_SECONDS (8), WARMUP (10),
# WINDOW (30), REPEATS (3), KEEP_DATA (0), STEP (all | data | sweep), CHOSEN_FROM, COLD (0), ORDER_SEED (from the clock), TOTAL_S (530: the sweep plans for the
# whole call to end by then), HARD_S (575: no protocol row starts that would end later), DATA_DIR (/tmp/stoker-cmp),
# DEVICE (cuda when nvidia-smi is found; cpu for a local dry run), EXTRA_PYTHONPATH (/tmp/site).
set -uo pipefail
cd "$(dirname "$0")/.."
start=$(date +%s)
out=${OUT:-bench/out/compare-$(date +%Y%m%d-%H%M%S)}
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
label=imagenet
[ "$kind" = hires ] && label=hires
stamp="$kind count=$count seed=$([ "$kind" = hires ] && echo 2 || echo 1) $(sha1sum bench/make_dataset.py | cut -c1-12)"
if [ "${KEEP_DATA:-0}" = 1 ] && [ -d "$data" ] && [ -f "$data.stats" ] && [ "$(cat "$data.stamp" 2>/dev/null)" = "$stamp" ]; then
  echo "compare.sh: reusing $data ($stamp)"
  note="$(cat "$data.note"); the set made by an earlier call on this machine (KEEP_DATA)"
else
  rm -rf "$data" "$data.stamp" "$data.note" "$data.sweep.json"
  t0=$(date +%s)
  case "$kind" in
    photos)
      python3 bench/make_dataset.py --kind imagenet --out "$data" --count "$count" --seed 1 --sources bench/.photos \
        > "$data.stats" 2>&1 || { cat "$data.stats"; echo "compare.sh: the ImageNet-like set failed its checks"; exit 1; }
      note="bench/make_dataset.py --kind imagenet --count $count --seed 1 --sources bench/.photos (ImageNet-like crops of real photographs)" ;;
    hires)
      python3 bench/make_dataset.py --kind hires --out "$data" --count "$count" --seed 2 --sources bench/.photos \
        > "$data.stats" 2>&1 || { cat "$data.stats"; echo "compare.sh: the high-resolution set failed its checks"; exit 1; }
      note="bench/make_dataset.py --kind hires --count $count --seed 2 --sources bench/.photos (camera-like: 2-3 MP, 4:2:0, quality 85-92)" ;;
    datagen)
      "$cli" datagen "$data" --count "$count" --classes 100 --seed 1 > "$data.stats" 2>&1 \
        || { cat "$data.stats"; echo "compare.sh: stoker datagen failed"; exit 1; }
      note="stoker datagen --count $count --classes 100 --seed 1 (synthetic ImageNet-like JPEGs; bench/.photos was not used)" ;;
    *) echo "compare.sh: DATASET must be auto, photos, datagen or hires, not '$kind'"; exit 2 ;;
  esac
  files=$(find "$data" -name '*.jpg' | wc -l)
  mean_kb=$(find "$data" -name '*.jpg' -printf '%s\n' | awk '{s+=$1} END {if (NR) printf "%.0f", s/NR/1024}')
  # every statistics line make_dataset.py printed (stoker datagen: its last line), one line
  stats=$(if [ "$kind" = datagen ]; then tail -1 "$data.stats"; else grep -v '^  problem' "$data.stats"; fi | tr -s ' ' | paste -sd ';' | cut -c1-900)
  note="$note; $files files, mean $mean_kb KB; made in $(( $(date +%s) - t0 )) s on $(nproc) CPUs; $stats"
  echo "$note" > "$data.note"
  echo "$stamp" > "$data.stamp"
fi
cat "$data.stats"
echo "compare.sh: data: $note"
echo "compare.sh: $data is on $(df -PT "$data" | awk 'NR == 2 {print $2 " (" $1 ")"}') (tmpfs cannot be evicted: cold rows say so)"
if [ "${STEP:-all}" = data ]; then
  echo "compare.sh: STEP=data: $data ready in $(( $(date +%s) - start )) s$([ "${KEEP_DATA:-0}" = 1 ] && echo ", kept for a later call")"
  [ "${KEEP_DATA:-0}" = 1 ] || rm -rf "$data" "$data.stats" "$data.stamp" "$data.note"
  exit 0
fi

seed=${ORDER_SEED:-$(( $(date +%s) % 100000 ))}
deadline=$(( start + ${TOTAL_S:-530} ))
hard=$(( start + ${HARD_S:-575} ))  # protocol rows are never started past this (the device command's limit is 600 s)
device=()
[ -n "${DEVICE:-}" ] && device=(--device "$DEVICE")
phase=()
case "${STEP:-all}" in
  all) [ -n "${CHOSEN_FROM:-}" ] && phase=(--chosen-from "$CHOSEN_FROM") ;;
  sweep) phase=(--sweep-only) ;;
  *) echo "compare.sh: STEP must be all, data or sweep, not '$STEP'"; exit 2 ;;
esac
[ "${COLD:-0}" = 1 ] && phase+=(--cold)
[ "${COLD:-0}" = 1 ] && [ "${COLD_READ_AHEAD:-0}" = 1 ] && phase+=(--cold-read-ahead)
python3 bench/compare.py --data "$data" --data-note "$note" --data-label "$label" "${phase[@]}" \
  --loaders "${LOADERS:-stoker-cli-mixed,dali-mixed}" --defaults "${DEFAULTS:-}" \
  --mode "${MODE:-train}" ${SWEEP+--sweep "$SWEEP"} --sweep-warmup "${SWEEP_WARMUP:-3}" \
  --sweep-seconds "${SWEEP_SECONDS:-8}" --warmup "${WARMUP:-10}" --seconds "${WINDOW:-30}" --repeats "${REPEATS:-3}" \
  --order-seed "$seed" --deadline "$deadline" --hard-deadline "$hard" --stoker "$cli" "${device[@]}" --out "$out"
status=$?
if [ -f "$out/run.json" ]; then
  python3 bench/report.py "$out/run.json" --chart "$out/chart.png" >/dev/null || true
fi
if [ "${STEP:-all}" = sweep ] && [ "${KEEP_DATA:-0}" = 1 ] && [ -f "$out/run.json" ]; then
  cp "$out/run.json" "$data.sweep.json"  # for CHOSEN_FROM in the next call on this warm machine
  echo "compare.sh: the sweep's run.json also in $data.sweep.json (CHOSEN_FROM=$data.sweep.json next)"
fi
[ "${KEEP_DATA:-0}" = 1 ] || rm -rf "$data" "$data.stats" "$data.stamp" "$data.note"
if [ -f "$out/results-section.md" ]; then  # the short tables once more, last in the output
  echo; echo "compare.sh: summary ($out/results-section.md)"
  awk '/^### Rows/,/^device MB/ {if (!/^device MB/) print} /^### stoker against/,/^ranges:/ {if (!/^ranges:/) print}
       /^### Cold cache/,/^Eviction:/ {if (!/^Eviction:/) print}' "$out/results-section.md"
fi
echo "compare.sh: done in $(( $(date +%s) - start )) s (exit $status); results in $out: $(ls "$out" | tr '\n' ' ')"
exit $status
