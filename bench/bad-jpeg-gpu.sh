#!/usr/bin/env bash
# bench/bad-jpeg-gpu.sh: the decoder-agreement check on the GPU machine: which damaged JPEGs
# the mixed (nvJPEG) decoder refuses vs the CPU decoder, under --bad-files-log, on both built-in
# pipelines. Corpora made here from `stoker datagen` images (the mutations of scripts/fault-campaign.sh:
# truncated anywhere, garbage in the entropy-coded data with EOI kept, random byte flips), each kind
# 200 damaged files among 64 good ones. Prints one row per kind x pipeline x decoder (files refused,
# images delivered) and the files on which the decoders disagree; then, per kind, a decode-only row
# of the mixed decoder with validate_entropy=True (a pipeline file) against the CPU decoder's, where
# the refusals should be equal. Not on a hot path.
# usage: STOKER_CLI=... OUT=DIR bash bench/bad-jpeg-gpu.sh
set -uo pipefail
cli=${STOKER_CLI:?STOKER_CLI: the stoker CLI}
OUT=${OUT:-/tmp/badjpeg}
work=$(mktemp -d /tmp/badjpeg.XXXXXX)
mkdir -p "$OUT"
"$cli" datagen "$work/good" --count 64 --classes 2 --seed 11 >/dev/null || exit 2
python3 - "$work" <<'PY'
import glob, os, random, sys, zlib
work = sys.argv[1]
good = sorted(glob.glob(work + "/good/**/*.jpg", recursive=True))
for mode in ("truncated", "huffman", "mutated"):
    rng = random.Random(zlib.crc32(mode.encode()))
    d = "%s/%s/c" % (work, mode)
    os.makedirs(d, exist_ok=True)
    for i, g in enumerate(good):
        open("%s/good%03d.jpg" % (d, i), "wb").write(open(g, "rb").read())
    for i in range(200):
        data = bytearray(open(good[i % len(good)], "rb").read())
        sos = data.find(b"\xff\xda")
        if mode == "mutated":
            for _ in range(rng.randint(1, 16)):
                data[rng.randrange(len(data))] = rng.randrange(256)
        elif mode == "truncated":
            data = data[: rng.randrange(2, len(data) - 2)]
        else:
            for _ in range(rng.randint(1, 8)):
                p = rng.randrange(sos + 20, len(data) - 2)
                data[p] = rng.choice([0x00, 0xFF, rng.randrange(256)]) if data[p - 1] != 0xFF else data[p]
        open("%s/bad%03d.jpg" % (d, i), "wb").write(bytes(data))
PY
printf '%-10s %-10s %-6s %8s %9s %s\n' kind pipeline decoder refused delivered rc | tee "$OUT/bad-jpeg.txt"
for kind in truncated huffman mutated; do
  for pipe in rn50-train rn50-val; do
    for dec in cpu mixed; do
      log=$OUT/$kind-$pipe-$dec.jsonl
      rm -f "$log"
      timeout 300 "$cli" bench --data "$work/$kind" --pipeline $pipe --device ${DEVICE:-gpu} --decoder $dec --batch 16 \
        --threads 8 --epochs 1 --json --bad-files-log "$log" > "$OUT/$kind-$pipe-$dec.json" 2> "$OUT/$kind-$pipe-$dec.err"
      rc=$?
      n=$( [ -f "$log" ] && wc -l < "$log" || echo 0)
      img=$(python3 -c 'import json,sys
try: print(json.loads(open(sys.argv[1]).read().strip().splitlines()[-1])["images"])
except Exception: print("-")' "$OUT/$kind-$pipe-$dec.json")
      printf '%-10s %-10s %-6s %8s %9s %s\n' $kind $pipe $dec "$n" "$img" $rc | tee -a "$OUT/bad-jpeg.txt"
    done
    python3 - "$OUT/$kind-$pipe-cpu.jsonl" "$OUT/$kind-$pipe-mixed.jsonl" <<'PY' | tee -a "$OUT/bad-jpeg.txt"
import json, os, sys
def load(p):
    out = {}
    if os.path.exists(p):
        for line in open(p):
            r = json.loads(line)
            out[os.path.basename(r["file"])] = r["reason"]
    return out
c, m = load(sys.argv[1]), load(sys.argv[2])
only_c = sorted(set(c) - set(m)); only_m = sorted(set(m) - set(c))
print("  agree on %d; refused by cpu only: %d %s; by mixed only: %d %s" % (
    len(set(c) & set(m)), len(only_c), only_c[:6], len(only_m), only_m[:6]))
for f in only_c[:3]: print("    cpu-only %s: %s" % (f, c[f][:150]))
for f in only_m[:3]: print("    mixed-only %s: %s" % (f, m[f][:150]))
PY
  done
done
# decode-only: readers.file + decoders.image, the mixed decoder with and without the entropy check
printf '%-10s %-16s %8s %9s %s\n' kind decoder refused delivered rc | tee -a "$OUT/bad-jpeg.txt"
for kind in truncated huffman mutated; do
  for dec in cpu:false mixed:false mixed:true; do
    device=${dec%%:*}; check=${dec#*:}
    printf 'files, labels = readers.file(file_root="%s")\nimages = decoders.image(files, device="%s", validate_entropy=%s)\noutputs(images, labels)\n' \
      "$work/$kind" "$device" "$( [ "$check" = true ] && echo True || echo False)" > "$work/decode.pipe"
    log=$OUT/$kind-decode-$device-$check.jsonl
    rm -f "$log"
    timeout 300 "$cli" bench --data "$work/$kind" --pipeline "$work/decode.pipe" --device ${DEVICE:-gpu} --batch 16 \
      --threads 8 --epochs 1 --json --bad-files-log "$log" > "$OUT/$kind-decode-$device-$check.json" 2>&1
    rc=$?
    n=$( [ -f "$log" ] && wc -l < "$log" || echo 0)
    img=$(python3 -c 'import json,sys
try: print(json.loads(open(sys.argv[1]).read().strip().splitlines()[-1])["images"])
except Exception: print("-")' "$OUT/$kind-decode-$device-$check.json")
    printf '%-10s %-16s %8s %9s %s\n' $kind "$device validate=$check" "$n" "$img" $rc | tee -a "$OUT/bad-jpeg.txt"
  done
done
rm -rf "$work"
