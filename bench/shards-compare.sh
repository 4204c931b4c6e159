#!/usr/bin/env bash
# bench/shards-compare.sh: one device call: rn50-train on the ImageNet-like
# set as a folder vs as ~64 MB tar shards (local) vs the same shards over HTTP from a local server
# (python3 -m http.server, started and stopped here), images/s and time to first batch, DALI's
# fn.readers.webdataset on the local shards in the same call when nvidia.dali imports; and .npy
# files into GPU memory (GB/s): stoker's readers.numpy vs np.load + torch.from_numpy(...).cuda()
# vs DALI's readers.numpy. Builds nothing: stoker's CLI comes carried ($STOKER_CLI), DALI from
# /tmp/site (bench/dali_install.sh install, earlier on the same warm machine). Not a hot path.
#
# The protocol (bench/protocol.py: warm-up >= 10 s excluded, window >= 30 s ended by a device
# synchronize, >= 3 repeats in one shuffled order, median and range) costs ~42 s a run, so one
# 9-minute call holds about 4 rows x 3 repeats: PART and MODE pick what one call measures.
#   PART=rn50 MODE=mixed  (default) stoker:folder, stoker:shards, stoker:http, dali:shards, GPU decode
#   PART=rn50 MODE=cpu    the same rows decoding on the CPU (normalize on the GPU when there is one)
#   PART=numpy            the three .npy loaders, NPY_FILES files of NPY_MB MB, REPEATS epochs each
#   PART=all QUICK=1      everything in one call with short, non-protocol settings (a smoke test)
# Rows that would end past HARD_S seconds from the start are recorded as skipped, not run.
# Output under $OUT (a few files): rows-<mode>.json, numpy.json, summary.md, log.txt.
# Settings (environment): STOKER_CLI (required), COMMIT, COUNT (6000 images), SHARD_MB (64),
# ROWS (stoker:folder,stoker:shards,stoker:http,dali:shards), BATCH (256), THREADS (nproc, at most
# 16), WARMUP (10), WINDOW (30), REPEATS (3), ORDER_SEED (from the clock), HARD_S (530),
# DATA_DIR (/tmp/stoker-shards-cmp), PORT (8765), NPY_FILES (400), NPY_MB (2), EXTRA_PYTHONPATH
# (/tmp/site).
set -uo pipefail
cd "$(dirname "$0")/.."
start=$(date +%s)
out=${OUT:-bench/out/shards-$(date +%Y%m%d-%H%M%S)}
data=${DATA_DIR:-/tmp/stoker-shards-cmp}
mkdir -p "$out"
exec > >(tee "$out/log.txt") 2>&1
export PYTHONUNBUFFERED=1
cli=${STOKER_CLI:?shards-compare.sh: set STOKER_CLI to the stoker binary}
[ -x "$cli" ] || { echo "shards-compare.sh: STOKER_CLI=$cli is not an executable file"; exit 2; }
cli=$(cd "$(dirname "$cli")" && pwd)/$(basename "$cli")
export LD_LIBRARY_PATH="$(dirname "$cli")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export COMMIT=${COMMIT:-$(cat .carry/COMMIT 2>/dev/null || git rev-parse HEAD 2>/dev/null || echo unknown)}
extra=""
# EXTRA_PYTHONPATH: ':'-separated; the source tree's python/ only when it holds a built extension (else
# it would shadow an installed stoker package with one that cannot import _stoker)
for d in $(echo "${EXTRA_PYTHONPATH:-/tmp/site}" | tr ':' ' ') build/python python; do
  [ "$d" = python ] && ! ls python/stoker/_stoker*.so >/dev/null 2>&1 && continue
  [ -d "$d" ] && extra="$extra:$(cd "$d" && pwd)"
done
export PYTHONPATH="${extra#:}${PYTHONPATH:+:$PYTHONPATH}"

part=${PART:-rn50}; mode=${MODE:-mixed}
quick=${QUICK:-0}
warmup=${WARMUP:-10}; window=${WINDOW:-30}; repeats=${REPEATS:-3}; count=${COUNT:-6000}
if [ "$quick" = 1 ]; then warmup=${WARMUP:-1}; window=${WINDOW:-3}; repeats=${REPEATS:-1}; count=${COUNT:-400}; fi
threads=${THREADS:-$(( $(nproc) < 16 ? $(nproc) : 16 ))}
hard=$(( start + ${HARD_S:-530} ))
seed=${ORDER_SEED:-$(( $(date +%s) % 100000 ))}
port=${PORT:-8765}
has_gpu=0; nvidia-smi -L >/dev/null 2>&1 && has_gpu=1

echo "shards-compare.sh: commit $COMMIT; part $part, mode $mode, quick $quick; warm-up $warmup s, window $window s," \
     "$repeats repeats, order seed $seed, $threads threads"
echo "shards-compare.sh: stoker CLI $cli: $("$cli" --version 2>&1 | head -1)"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null || echo "shards-compare.sh: no GPU"
echo "shards-compare.sh: $(nproc) CPUs; $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-)"
python3 -c 'import nvidia.dali as d; print("shards-compare.sh: DALI", d.__version__)' 2>/dev/null \
  || echo "shards-compare.sh: nvidia.dali does not import: DALI rows report the error"

server=""
cleanup() { [ -n "$server" ] && kill "$server" 2>/dev/null && wait "$server" 2>/dev/null; rm -rf "$data"; }
trap cleanup EXIT

if [ "$part" = rn50 ] || [ "$part" = all ]; then
  rm -rf "$data"
  # ~64 MB shards: datagen's images average ~95 KB (checked below against the shards written)
  shards=$(( count * 95 / 1024 / ${SHARD_MB:-64} )); [ "$shards" -lt 1 ] && shards=1
  t0=$(date +%s)
  "$cli" datagen "$data" --count "$count" --classes 100 --seed 1 --shards "$shards" > "$data.stats" 2>&1 \
    || { cat "$data.stats"; echo "shards-compare.sh: stoker datagen failed"; exit 1; }
  cat "$data.stats"; rm -f "$data.stats"
  mean_mb=$(find "$data/shards" -name '*.tar' -printf '%s\n' | awk '{s+=$1} END {if (NR) printf "%.1f", s/NR/1e6}')
  echo "shards-compare.sh: data: $count images, 100 classes, seed 1, $shards shards of mean $mean_mb MB, made in" \
       "$(( $(date +%s) - t0 )) s"
  python3 -m http.server "$port" --bind 127.0.0.1 --directory "$data/shards" >/dev/null 2>&1 &
  server=$!
  for _ in $(seq 50); do python3 -c "import urllib.request as u; u.urlopen('http://127.0.0.1:$port/')" 2>/dev/null && break; sleep 0.1; done
  for t in "$data"/shards/*.tar; do echo "http://127.0.0.1:$port/$(basename "$t")"; done > "$data/http.list"
  modes=$mode; [ "$part" = all ] && modes="cpu mixed"
  [ "$has_gpu" = 0 ] && modes=cpu && echo "shards-compare.sh: no GPU: CPU rows only, no DALI rows"
  rows_default=stoker:folder,stoker:shards,stoker:http,dali:shards
  [ "$has_gpu" = 0 ] && rows_default=stoker:folder,stoker:shards,stoker:http
  for m in $modes; do
    python3 bench/shards_compare.py rows --stoker "$cli" --folder "$data" --shards "$data/shards" \
      --http-list "$data/http.list" --rows "${ROWS:-$rows_default}" --mode "$m" --batch "${BATCH:-256}" \
      --threads "$threads" --warmup "$warmup" --seconds "$window" --repeats "$repeats" --order-seed "$seed" \
      --hard-deadline "$hard" --out "$out/rows-$m.json"
  done
fi

if { [ "$part" = numpy ] || [ "$part" = all ]; } && [ "$has_gpu" = 1 ]; then
  npy="$data/npy"; mkdir -p "$npy"
  python3 - "$npy" "${NPY_FILES:-400}" "${NPY_MB:-2}" <<'PY'
import sys, numpy as np
root, files, mb = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
rows = int(mb * 1e6 / 4 / 1024)
rng = np.random.default_rng(1)
for i in range(files):
    np.save(f"{root}/x_{i:05d}.npy", rng.standard_normal((rows, 1024), dtype=np.float32))
print(f"shards-compare.sh: {files} .npy files of {rows}x1024 float32 ({rows * 4096 / 1e6:.1f} MB each)")
PY
  python3 bench/shards_compare.py numpy --npy "$npy" --threads "$threads" --repeats "$repeats" --out "$out/numpy.json"
elif [ "$part" = numpy ] || [ "$part" = all ]; then
  echo "shards-compare.sh: no GPU: the numpy-into-GPU-memory part is not run"
fi

python3 bench/shards_compare.py report "$out"/rows-*.json "$out/numpy.json" > "$out/summary.md" 2>/dev/null
cat "$out/summary.md"
echo "shards-compare.sh: done in $(( $(date +%s) - start )) s; results in $out: $(ls "$out" | tr '\n' ' ')"
