#!/usr/bin/env bash
# bench/numpy-host.sh: readers.numpy into host batches, GB/s, on any machine (no GPU needed).
# Makes NPY_FILES .npy files of NPY_MB MB (float32, rows x 1024, the same set as
# bench/shards-compare.sh's PART=numpy), reads them once to warm the page cache, then runs
# `stoker bench` on the pipeline `outputs(readers.numpy(file_root=DIR))` for each binary given
# (BINARIES, default build/stoker) at each of THREADS, REPEATS times, interleaved (binary-major
# inside each repeat), and prints the median and range per (binary, threads) in GB/s of payload
# (images/s x payload bytes; --no-digest, so the consumer reads nothing).
# Env: BINARIES ("build/stoker"), THREADS ("1 2"), REPEATS (3), BATCH (16), PREFETCH (2),
# WARMUP (2 s), SECONDS_RUN (8 s), NPY_FILES (400), NPY_MB (2), DATA_DIR (/tmp/stoker-numpy-host).
# A/B of one build: STOKER_DENSE_IN_PLACE=0 in the environment turns the in-place path off.
set -euo pipefail
binaries=${BINARIES:-build/stoker}
threads_list=${THREADS:-"1 2"}
repeats=${REPEATS:-3}
data=${DATA_DIR:-/tmp/stoker-numpy-host}
files=${NPY_FILES:-400}
mb=${NPY_MB:-2}
mkdir -p "$data/npy"
python3 - "$data/npy" "$files" "$mb" <<'PY'
import os, sys
root, files, mb = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
rows = int(mb * 1e6 / 4 / 1024)
payload = rows * 1024 * 4
head = "{'descr': '<f4', 'fortran_order': False, 'shape': (%d, 1024), }" % rows
head += " " * (64 - (10 + len(head) + 1) % 64) + "\n"
pre = b"\x93NUMPY\x01\x00" + len(head).to_bytes(2, "little") + head.encode()
for i in range(files):
    path = f"{root}/x_{i:05d}.npy"
    if os.path.exists(path) and os.path.getsize(path) == len(pre) + payload:
        continue
    with open(path, "wb") as f:  # float32 bits from a counter: contents do not matter for speed
        f.write(pre + os.urandom(payload))
print(f"numpy-host.sh: {files} .npy files of {rows}x1024 float32 ({payload / 1e6:.2f} MB each) in {root}")
PY
cat "$data"/npy/*.npy > /dev/null  # page cache warm
printf 'arrays = readers.numpy(file_root="%s")\noutputs(arrays)\n' "$data/npy" > "$data/numpy.pipe"
payload=$(python3 -c "print(int($mb * 1e6 / 4 / 1024) * 4096)")
results="$data/results.txt"; : > "$results"
for r in $(seq 1 "$repeats"); do
  for t in $threads_list; do
    for bin in $binaries; do
      ips=$("$bin" bench --pipeline "$data/numpy.pipe" --data "$data/npy" --batch "${BATCH:-16}" --threads "$t" \
            --prefetch "${PREFETCH:-2}" --warmup "${WARMUP:-2}" --seconds "${SECONDS_RUN:-8}" --no-digest --json |
            python3 -c 'import json,sys; print(json.load(sys.stdin)["images_per_second"])')
      gbs=$(python3 -c "print(round($ips * $payload / 1e9, 3))")
      echo "$bin $t $gbs" | tee -a "$results"
    done
  done
done
python3 - "$results" <<'PY'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    b, t, g = line.split()
    rows.setdefault((b, int(t)), []).append(float(g))
print("| binary | threads | GB/s median (range) |\n|---|---|---|")
for (b, t), g in rows.items():
    print(f"| {b} | {t} | {statistics.median(g):.2f} ({min(g):.2f}-{max(g):.2f}) |")
PY
