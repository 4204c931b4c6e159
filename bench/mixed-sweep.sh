#!/usr/bin/env bash
# bench/mixed-sweep.sh: stoker's mixed rn50-train on one data set over a grid of hw_decoder_load,
# worker threads and prefetch depth, one `stoker bench --json` run each: how the default split is
# tuned, and how a user tunes it for their machine and data. Not on a hot path; builds nothing.
# Usage: bench/mixed-sweep.sh DATA_DIR [STOKER_CLI]   (STOKER_CLI default: build/stoker)
# Environment: LOADS ("1.0 0.9 0.8 0.7 0.6"), THREADS ("16"), PREFETCH ("2 3"), SWEEP_SECONDS (8),
# BATCH (256), OUT (where sweep.jsonl and sweep.txt go; default /tmp/mixed-sweep).
# Prints one line per run: load, threads, prefetch, img/s, CPU cores busy, the decoder split,
# time to first batch, device memory held and allocations per batch after warm-up.
set -uo pipefail
data=${1:?usage: bench/mixed-sweep.sh DATA_DIR [STOKER_CLI]}
cli=${2:-build/stoker}
out=${OUT:-/tmp/mixed-sweep}
mkdir -p "$out"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
jsonl="$out/sweep.jsonl"
: > "$jsonl"
printf '%-5s %-7s %-8s %9s %6s %-26s %7s %8s %7s\n' load threads prefetch "img/s" cores "split hw/cuda/hybrid/cpu %" "ttfb s" "dev MiB" "alloc/b" \
  | tee "$out/sweep.txt"
for load in ${LOADS:-1.0 0.9 0.8 0.7 0.6}; do
  pipe="$tmp/rn50-train-hw$load.pipe"
  cat > "$pipe" <<EOF
jpegs, labels = readers.file(random_shuffle=True, name="Reader")
decoded = decoders.image_random_crop(jpegs, device="mixed", output_type="RGB", hw_decoder_load=$load)
resized = resize(decoded, device="gpu", resize_x=224, resize_y=224)
coin = random.coin_flip(probability=0.5)
images = crop_mirror_normalize(resized, device="gpu", dtype="float", output_layout="CHW", crop=[224, 224], mean=[123.675, 116.28, 103.53], std=[58.395, 57.12, 57.375], mirror=coin)
outputs(images, labels)
EOF
  for threads in ${THREADS:-16}; do
    for prefetch in ${PREFETCH:-2 3}; do
      line=$("$cli" bench --data "$data" --pipeline "$pipe" --device gpu --threads "$threads" --prefetch "$prefetch" \
        --batch "${BATCH:-256}" --seconds "${SWEEP_SECONDS:-8}" --no-digest --json 2>"$tmp/err")
      if [ -z "$line" ]; then
        echo "load $load threads $threads prefetch $prefetch: failed: $(tail -2 "$tmp/err")" | tee -a "$out/sweep.txt"
        continue
      fi
      echo "{\"hw_decoder_load\": $load, \"run\": $line}" >> "$jsonl"
      python3 - "$load" "$line" <<'PY' | tee -a "$out/sweep.txt"
import json, sys
load, r = sys.argv[1], json.loads(sys.argv[2])
n = max(1, r["decoded_hw"] + r["decoded_cuda"] + r["decoded_hybrid"] + r["decoded_cpu"])
split = "/".join("%.0f" % (100.0 * r[k] / n) for k in ("decoded_hw", "decoded_cuda", "decoded_hybrid", "decoded_cpu"))
print("%-5s %-7d %-8d %9.0f %6.1f %-26s %7.3f %8.0f %7.3f" % (
    load, r["threads"], r["prefetch"], r["images_per_second"], r["cpu_seconds"] / max(r["seconds"], 1e-9), split,
    r["time_to_first_batch_s"], r["device_bytes_held"] / 1048576.0, r["allocations_per_batch_after_warmup"]))
PY
    done
  done
done
