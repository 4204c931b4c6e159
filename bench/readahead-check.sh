#!/usr/bin/env bash
# bench/readahead-check.sh: readers.file's read_ahead, off against on, from a cold page cache:
# each run evicts the set's pages with bench/pagecache.py (os.sync + posix_fadvise DONTNEED on every
# file, no root; its mincore check is printed with the row; a tmpfs cannot be evicted), then times one whole epoch with `stoker bench
# --epochs 1` (from the first batch to the last, synchronized); rows interleaved off/on, ROUNDS
# rounds. Not protocol rows (cold epochs are their own category, docs/benchmarks.md); a check of
# whether the hint helps on a machine's storage before measuring it against a peer.
# usage: STOKER_CLI=build/stoker DATA=dir [MODE=read|mixed] [THREADS="2 8"] [BATCH=32] [ROUNDS=3]
#        [HW=0.6 CUDA=1 (MODE=mixed)] [WARM=1 [WARMUP=3 WINDOW=10]] bash bench/readahead-check.sh
# WARM=1: the hint's cost with a warm page cache instead: nothing evicted (one untimed epoch first
# makes the set resident), each row `stoker bench --warmup WARMUP --seconds WINDOW`.
# MODE=read: the reader alone (outputs the bytes); MODE=mixed: + decoders.image device="mixed".
set -euo pipefail
cli=${STOKER_CLI:?set STOKER_CLI}; data=${DATA:?set DATA}
mode=${MODE:-read}; batch=${BATCH:-32}; rounds=${ROUNDS:-3}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for ra in False True; do
  if [ "$mode" = mixed ]; then
    printf 'files, labels = readers.file(file_root="%s", random_shuffle=True, read_ahead=%s)\nimages = decoders.image(files, device="mixed", output_type="RGB", hw_decoder_load=%s, cuda_decoder_load=%s)\noutputs(images, labels)\n' \
      "$data" "$ra" "${HW:-0.6}" "${CUDA:-1}" > "$work/$ra.pipe"
  else
    printf 'files, labels = readers.file(file_root="%s", random_shuffle=True, read_ahead=%s)\noutputs(files, labels)\n' \
      "$data" "$ra" > "$work/$ra.pipe"
  fi
done
device=cpu; [ "$mode" = mixed ] && device=gpu
pagecache="$(dirname "$0")/pagecache.py" # the cold rows' eviction (bench/compare.py --cold), checked with mincore
fs=$(df -T "$data" | awk 'NR==2 {print $2}')
echo "readahead-check: $("$cli" --version 2>/dev/null | head -1); commit $(git rev-parse --short HEAD 2>/dev/null || cat .carry/COMMIT 2>/dev/null || echo unknown); data $data ($(du -sh "$data" | cut -f1)), mode $mode, batch $batch; $fs file system; $(nproc) CPUs"
[ "$fs" = tmpfs ] && echo "readahead-check: $data is on a tmpfs: nothing can be evicted, the rows are warm"
clock=(--epochs 1)
if [ "${WARM:-0}" = 1 ]; then
  clock=(--warmup "${WARMUP:-3}" --seconds "${WINDOW:-10}")
  find "$data" -type f -exec cat {} + > /dev/null # resident before the first row
fi
for threads in ${THREADS:-2 8}; do
  for round in $(seq "$rounds"); do
    for ra in False True; do
      if [ "${WARM:-0}" = 1 ]; then
        evicted="warm: $(python3 "$pagecache" "$data" | tail -1)"
      else
        evicted=$(python3 "$pagecache" "$data" --evict)
      fi
      json=$("$cli" bench --data "$data" --pipeline "$work/$ra.pipe" --device $device --threads "$threads" --batch "$batch" \
        "${clock[@]}" --json --no-digest 2>/dev/null)
      echo "$json" | python3 -c "import json, sys; d = json.load(sys.stdin); print(f'threads $threads round $round read_ahead=$ra: {d[\"images_per_second\"]:8.0f} img/s  {d[\"seconds\"]:.3f} s  {d[\"cpu_cores_busy\"]:.2f} cores  ({d[\"images\"]} images; ${evicted#pagecache: })')"
    done
  done
done
