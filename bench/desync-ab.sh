#!/usr/bin/env bash
# bench/desync-ab.sh: what the CPU decoder's corrupt-JPEG rule costs (a Huffman decoder that lost step
# and ended early is refused: bytes left before EOI must be zero padding). Runs two `stoker bench`
# builds -- BEFORE (the commit before the rule, 91a1ede^) and AFTER (91a1ede) -- on one decode-only CPU
# pipeline (readers.file + decoders.image device="cpu"), one worker thread, the protocol's clock (10 s
# warm-up, 30 s window), REPEATS runs each interleaved in a shuffled order; prints img/s and CPU
# microseconds per image (cpu_seconds / images: the rule's cost per image, less sensitive to other
# load than throughput) as median and range. Artefacts under OUT.
# usage: bench/desync-ab.sh BEFORE_STOKER AFTER_STOKER DATA_DIR [OUT]
set -euo pipefail
before=$1 after=$2 data=$3 out=${4:-/tmp/desync-ab}
mkdir -p "$out"
printf 'jpegs, labels = readers.file(name="Reader")\nimages = decoders.image(jpegs, device="cpu", output_type="RGB")\noutputs(images, labels)\n' > "$out/decode.txt"
order=$(for r in $(seq "${REPEATS:-3}"); do echo before; echo after; done | shuf --random-source=<(yes "${ORDER_SEED:-1}"))
echo "order: $(echo $order)" | tee "$out/order.txt"
for row in $order; do
  bin=$before
  [ "$row" = after ] && bin=$after
  "$bin" bench --device cpu --pipeline "$out/decode.txt" --data "$data" --threads 1 --warmup 10 --seconds 30 \
    --no-digest --json 2> "$out/$row.stderr.$RANDOM" | tail -1 | sed "s/^/$row /" | tee -a "$out/rows.txt"
done
python3 - "$out/rows.txt" <<'PY' | tee "$out/summary.txt"
import json, statistics, sys
rows = {}
for line in open(sys.argv[1]):
    name, _, text = line.partition(' ')
    rows.setdefault(name, []).append(json.loads(text))
for name in ('before', 'after'):
    rs = rows.get(name, [])
    v = [r['images_per_second'] for r in rs]
    us = [1e6 * r['cpu_seconds'] / r['images'] for r in rs]
    print(f"{name:6s} n={len(rs)}  img/s median {statistics.median(v):7.1f} ({min(v):.1f}-{max(v):.1f})  "
          f"CPU us/image median {statistics.median(us):7.1f} ({min(us):.1f}-{max(us):.1f})")
PY
