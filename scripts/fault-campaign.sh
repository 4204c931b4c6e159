#!/usr/bin/env bash
# scripts/fault-campaign.sh: the bad-input campaign of issue 14, run against stoker's CLI built
# with ASan+UBSan (`make sanitize` builds build-asan/; STOKER_CLI=PATH picks another binary).
# It makes each kind of bad input in a scratch folder, runs the CLI on it with a timeout, and
# classifies every run:
#   crash   a sanitizer report (ASan, LeakSanitizer, UBSan "runtime error:") or an exit by a signal
#   hang    the run passed its timeout (killed)
#   ok      exit 0 (bad files skipped and logged, or the input was accepted)
#   error   a non-zero exit with a message on stderr ("stoker CMD: ..."); for a single bad JPEG
#           the message must name the file, for a pipeline file a line or an argument
#   unclear a non-zero exit with no such message (counted as a defect)
# It prints a markdown table (one row per kind: inputs, runs, crashes, hangs, ok, errors, unclear,
# bad files skipped, peak RSS) and the commit/machine it ran on. Sized for ~10-15 minutes on a
# 2-core machine; SCALE=2 doubles the generated inputs. Exit status 1 when any crash, hang or
# unclear error was seen. The webdataset kinds are in scripts/fault-campaign-shards.sh (sourced).
# Usage: scripts/fault-campaign.sh [OUT.md]
set -uo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
cli=${STOKER_CLI:-$repo/build-asan/stoker}
[ -x "$cli" ] || { echo "fault-campaign: $cli not found (run make sanitize, or set STOKER_CLI)" >&2; exit 2; }
command -v python3 >/dev/null || { echo "fault-campaign: python3 is needed to mutate inputs" >&2; exit 2; }
scale=${SCALE:-1}
out=${1:-/dev/stdout}
work=$(mktemp -d /tmp/stoker-faults.XXXXXX)
trap 'rm -rf "$work"' EXIT
export ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1 UBSAN_OPTIONS=print_stacktrace=1
started=$(date +%s)
RANDOM=14 # the signal delays and lifecycle settings: the same on every run
# what is tested, recorded before the run (the tree may move on while it runs)
provenance="commit $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- src include || echo ' + uncommitted changes'), binary built $(date -u -r "$cli" '+%Y-%m-%d %H:%M UTC')"

declare -A inputs runs crash hang ok err unclear skipped rss
kinds=()
kind() { kinds+=("$1"); inputs[$1]=0 runs[$1]=0 crash[$1]=0 hang[$1]=0 ok[$1]=0 err[$1]=0 unclear[$1]=0 skipped[$1]=0 rss[$1]=0; }
failures=$work/failures.txt
: >"$failures"

# run KIND TIMEOUT NEEDLE CMD...: runs CMD (the CLI) under timeout and /usr/bin/time and files the
# result. NEEDLE (a fixed string, may be empty) must appear in stderr for an error to count as clear.
# Leaves stdout in $work/last.out and stderr in $work/last.err.
run() {
  local k=$1 limit=$2 needle=$3
  shift 3
  runs[$k]=$((runs[$k] + 1))
  /usr/bin/time -o "$work/rss" -f %M timeout -k 5 "$limit" "$@" >"$work/last.out" 2>"$work/last.err"
  local rc=$?
  classify "$k" "$rc" "$needle" "$*"
}

classify() {
  local k=$1 rc=$2 needle=$3 what=$4 kb
  kb=$(tail -1 "$work/rss" 2>/dev/null | tr -dc 0-9)
  [ -n "$kb" ] && [ "$kb" -gt "${rss[$k]}" ] && rss[$k]=$kb
  if grep -qE 'ERROR: (Address|Leak)Sanitizer|runtime error:' "$work/last.err"; then
    crash[$k]=$((crash[$k] + 1)); echo "[$k] crash (sanitizer): $what" >>"$failures"
    grep -m3 -E 'ERROR|runtime error|#[0-3] ' "$work/last.err" >>"$failures"
  elif [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
    hang[$k]=$((hang[$k] + 1)); echo "[$k] hang: $what" >>"$failures"
  elif [ "$rc" = 0 ]; then
    ok[$k]=$((ok[$k] + 1))
  elif [ "$rc" -gt 128 ] && [ "${expect_signal_exit:-}" != "$rc" ]; then
    crash[$k]=$((crash[$k] + 1)); echo "[$k] crash (exit $rc): $what" >>"$failures"
  elif [ "${expect_signal_exit:-}" = "$rc" ] || { grep -q '^stoker' "$work/last.err" && { [ -z "$needle" ] || grep -qF -- "$needle" "$work/last.err"; }; }; then
    err[$k]=$((err[$k] + 1))
  else
    unclear[$k]=$((unclear[$k] + 1)); echo "[$k] unclear error (exit $rc, wanted '$needle'): $what" >>"$failures"
    head -3 "$work/last.err" >>"$failures"
  fi
}

json_field() { python3 -c 'import json,sys
try: print(json.loads(open(sys.argv[1]).read())[sys.argv[2]])
except Exception: print(0)' "$1" "$2"; }

# --- the corpora -------------------------------------------------------------------------------
"$cli" datagen "$work/good" --count 24 --classes 2 --seed 7 >/dev/null || { echo "datagen failed" >&2; exit 2; }
mapfile -t good < <(find "$work/good" -name '*.jpg' | sort)
mutate_jpegs() { # MODE COUNT OUTDIR: mutated copies of the good JPEGs (python: byte flips, cuts)
  python3 - "$1" "$2" "$3" "${good[@]}" <<'PY'
import os, random, sys, zlib
mode, count, outdir, srcs = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4:]
rng = random.Random(zlib.crc32(mode.encode()))  # not hash(): str hashes differ per process
os.makedirs(outdir, exist_ok=True)
for i in range(count):
    data = bytearray(open(srcs[i % len(srcs)], "rb").read())
    sos = data.find(b"\xff\xda")
    if mode == "mutated":            # 1-16 random bytes anywhere (headers included)
        for _ in range(rng.randint(1, 16)):
            data[rng.randrange(len(data))] = rng.randrange(256)
    elif mode == "truncated":        # cut anywhere, headers included
        data = data[: rng.randrange(2, len(data) - 2)]
    elif mode == "huffman":          # garbage in the entropy-coded data only, EOI kept
        for _ in range(rng.randint(1, 8)):
            p = rng.randrange(sos + 20, len(data) - 2)
            data[p] = rng.choice([0x00, 0xff, rng.randrange(256)]) if data[p - 1] != 0xff else data[p]
    open(os.path.join(outdir, "m%05d.jpg" % i), "wb").write(bytes(data))
PY
}

# JPEG corpora: grouped runs (folders of 50 mutated files among 4 good ones, --bad-files-log, both
# built-in pipelines) count skips; single-file runs without --skip-bad-files check that the error
# names the file.
jpeg_kind() { # KIND MODE COUNT SINGLES
  local k=$1 mode=$2 count=$(($3 * scale)) singles=$(($4 * scale)) dir=$work/$1 g=0
  kind "$k"; inputs[$k]=$count
  mutate_jpegs "$mode" "$count" "$dir/all"
  local files=("$dir"/all/*.jpg)
  for ((start = 0; start < count; start += 50)); do
    local d=$dir/g$g; mkdir -p "$d/c"; g=$((g + 1))
    cp "${files[@]:start:50}" "$d/c/"; cp "${good[@]:0:4}" "$d/c/"
    local pipe=rn50-val; [ $((g % 2)) = 0 ] && pipe=rn50-train
    run "$k" 120 "" "$cli" bench --data "$d" --pipeline $pipe --batch 4 --threads 2 --epochs 1 --json \
      --bad-files-log "$d/bad.jsonl"
    [ -f "$d/bad.jsonl" ] && skipped[$k]=$((skipped[$k] + $(wc -l <"$d/bad.jsonl")))
  done
  for ((i = 0; i < singles; i++)); do
    local d=$dir/s$i; mkdir -p "$d/c"; cp "${files[$((i * 7 % count))]}" "$d/c/x$i.jpg"
    run "$k" 60 "x$i.jpg" "$cli" bench --data "$d" --pipeline rn50-val --batch 1 --threads 1 --epochs 1 --json
  done
}
jpeg_kind mutated-jpeg mutated 300 20
jpeg_kind truncated-jpeg truncated 200 20
jpeg_kind corrupt-huffman-jpeg huffman 200 20

# Bombs among good files: SOF dimensions patched to 11585x11585 (a 100 KB file claiming 134
# Mpixel) and real arithmetic-coded bombs made by cjpeg (a flat 8000x8000 image, ~30 KB).
k=bombs; kind $k; d=$work/bombs/c; mkdir -p "$d"; cp "${good[@]:0:16}" "$d/"
python3 - "$d" "${good[@]:0:8}" <<'PY'
import struct, sys
for i, src in enumerate(sys.argv[2:]):
    data = bytearray(open(src, "rb").read())
    p = data.find(b"\xff\xc0")
    if p < 0: p = data.find(b"\xff\xc2")
    data[p + 5:p + 9] = struct.pack(">HH", 11585, 11585)
    open("%s/bomb_%d.jpg" % (sys.argv[1], i), "wb").write(bytes(data))
PY
if command -v cjpeg >/dev/null && { cjpeg -help 2>&1 || true; } | grep -q arithmetic; then
  python3 -c 'import sys; sys.stdout.buffer.write(b"P5 8000 8000 255\n" + bytes(8000 * 8000))' >"$work/flat.pgm"
  for i in 0 1; do cjpeg -arithmetic -quality $((50 + i * 40)) "$work/flat.pgm" >"$d/arith_bomb_$i.jpg"; done
fi
inputs[$k]=$(find "$d" -name '*bomb*' | wc -l)
for pipe in rn50-val rn50-train; do for t in 1 2; do
  run $k 300 "" "$cli" bench --data "$work/bombs" --pipeline $pipe --batch 8 --threads $t --epochs 1 --json \
    --bad-files-log "$work/bombs/bad.jsonl"
  skipped[$k]=$((skipped[$k] + $(wc -l <"$work/bombs/bad.jsonl")))
done; done

k=empty-files; kind $k; d=$work/empty/c; mkdir -p "$d"; cp "${good[@]:0:10}" "$d/"
for i in $(seq 1 $((300 * scale))); do : >"$d/zz_$i.jpg"; done
inputs[$k]=$((300 * scale))
run $k 120 "" "$cli" bench --data "$work/empty" --pipeline rn50-val --batch 4 --threads 2 --epochs 2 --json \
  --bad-files-log "$work/empty/bad.jsonl"
skipped[$k]=$(wc -l <"$work/empty/bad.jsonl")
[ "$(json_field "$work/last.out" images)" = 20 ] || echo "[$k] expected 20 images over 2 epochs: $(cat "$work/last.out")" >>"$failures"
run $k 60 "zz_" "$cli" bench --data "$work/empty" --pipeline rn50-val --batch 4 --threads 2 --epochs 1

# FIFOs named *.jpg in the data folder and in a sysfs tree: never opened for reading.
k=fifos; kind $k; d=$work/fifo/c; mkdir -p "$d"; cp "${good[@]:0:6}" "$d/"
for i in 1 2 3; do mkfifo "$d/fifo_$i.jpg"; done
bash tests/fixtures/make_fixtures.sh "$work/fx" >/dev/null
cp -r "$work/fx/dgx-2s20c2t-8gpu" "$work/fifo-sys"
rm "$work/fifo-sys/sys/devices/system/cpu/online"; mkfifo "$work/fifo-sys/sys/devices/system/cpu/online"
inputs[$k]=4
run $k 60 "" "$cli" bench --data "$work/fifo" --batch 2 --threads 2 --epochs 1 --skip-bad-files --json
run $k 60 "fifo_" "$cli" bench --data "$work/fifo" --batch 2 --threads 2 --epochs 1
run $k 30 "online" "$cli" topo --sysfs-root "$work/fifo-sys"
run $k 30 "online" "$cli" plan --nproc-per-node 2 --sysfs-root "$work/fifo-sys"

# Symlink loops: a directory link to its parent, to the root, and a two-link cycle.
k=symlink-loops; kind $k; inputs[$k]=3
for v in parent root cycle; do
  d=$work/loop-$v; mkdir -p "$d/c"; cp "${good[@]:0:5}" "$d/c/"
  case $v in parent) ln -s .. "$d/c/up" ;; root) ln -s "$d" "$d/c/top" ;; cycle) mkdir "$d/a" "$d/b"; ln -s ../b "$d/a/to_b"; ln -s ../a "$d/b/to_a" ;; esac
  run $k 60 "" "$cli" bench --data "$d" --pipeline rn50-val --batch 5 --threads 2 --epochs 1 --json
  [ "$(json_field "$work/last.out" images)" = 5 ] || echo "[$k] $v: expected each of 5 files once: $(head -c 300 "$work/last.out")" >>"$failures"
done

# Mutated pipeline files: byte flips, dropped/duplicated/swapped lines, hostile tokens.
k=pipeline-files; kind $k; n=$((150 * scale)); inputs[$k]=$n; mkdir -p "$work/pipes" "$work/tiny/c"
cp "${good[@]:0:4}" "$work/tiny/c/"
python3 - "$work/pipes" "$n" tests/fuzz/corpus/pipeline_text/* <<'PY'
import os, random, sys
outdir, n, srcs = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
texts = [open(s, "rb").read() for s in srcs if b"outputs" in open(s, "rb").read()]
tokens = [b"-inf", b"nan", b"1e309", b"60000", b"-1", b"0", b"9223372036854775808", b'"/dev/zero"',
          b"images", b",", b"=", b"(", b")", b"[", b"]", b"\xef\xbb\xbf", b"\n", b"\x00", b"\xff",
          b"x" * 5000, b'file_list="/dev/zero"', b"mirror=images", b"resize_x=60000, resize_y=60000",
          b"std=[0.5]", b"a, b, c = ", b"\\\n", b"#", b'"']
rng = random.Random(14)
for i in range(n):
    t = bytearray(rng.choice(texts))
    lines = t.split(b"\n")
    op = rng.randrange(6)
    if op == 0:
        for _ in range(rng.randint(1, 6)): t[rng.randrange(len(t))] = rng.randrange(256)
    elif op == 1 and len(lines) > 1: del lines[rng.randrange(len(lines))]; t = b"\n".join(lines)
    elif op == 2: j = rng.randrange(len(lines)); lines.insert(j, lines[j]); t = b"\n".join(lines)
    elif op == 3 and len(lines) > 1:
        a, b = rng.randrange(len(lines)), rng.randrange(len(lines)); lines[a], lines[b] = lines[b], lines[a]; t = b"\n".join(lines)
    elif op == 4: p = rng.randrange(len(t)); t[p:p] = rng.choice(tokens)
    else: t = t[: rng.randrange(len(t))]
    open(os.path.join(outdir, "p%04d.txt" % i), "wb").write(bytes(t))
PY
for f in "$work"/pipes/*.txt; do
  run $k 60 "" "$cli" bench --data "$work/tiny" --pipeline "$f" --batch 2 --threads 1 --epochs 1 --no-digest
done

# Garbage sysfs trees: one recorded tree per run with files emptied, filled with random bytes,
# huge or negative numbers, replaced by a directory, a FIFO-free dangling link or a self link.
k=sysfs-trees; kind $k; n=$((80 * scale)); inputs[$k]=$n
for ((i = 0; i < n; i++)); do
  shapes=("$work"/fx/*); src=${shapes[$((i % ${#shapes[@]}))]}; t=$work/sys$i
  cp -r "$src" "$t"
  python3 - "$t" "$i" <<'PY'
import os, random, sys
root, seed = sys.argv[1], int(sys.argv[2])
rng = random.Random(seed)
files = sorted(os.path.join(d, f) for d, _, fs in os.walk(root) for f in fs)
for path in rng.sample(files, min(len(files), rng.randint(1, 12))):
    how = rng.randrange(7)
    if os.path.islink(path): continue
    if how == 0: open(path, "wb").close()
    elif how == 1: open(path, "wb").write(bytes(rng.randrange(256) for _ in range(rng.randint(1, 300))))
    elif how == 2: open(path, "w").write(rng.choice(["4096", "-7", "99999999999999999999", "0-", "3-1", ",", "0-4095", "ffffffff,ffffffff"]) + "\n")
    elif how == 3: os.remove(path); os.mkdir(path)
    elif how == 4: os.remove(path); os.symlink(path, path)
    elif how == 5: os.remove(path)
    else: open(path, "w").write("0-1000000\n")
PY
  run $k 30 "" "$cli" topo --json --sysfs-root "$t"
  run $k 30 "" "$cli" plan --nproc-per-node 4 --sysfs-root "$t"
  rm -rf "$t"
done

# Configuration that asks for too much.
k=huge-config; kind $k; inputs[$k]=7
cfg() { printf '%s\n' "$@" >"$work/cfg.txt"; run $k 60 "line" "$cli" bench --data "$work/tiny" --pipeline "$work/cfg.txt" --batch 2 --threads 1 --epochs 1; }
cfg 'j, l = readers.file(file_list="/dev/zero")' 'outputs(j, l)'
cfg 'j, l = readers.file(file_list="/dev/urandom")' 'outputs(j, l)'
cfg 'j, l = readers.file()' 'd = decoders.image(j)' 'r = resize(d, resize_x=60000, resize_y=60000)' 'outputs(r, l)'
cfg 'j, l = readers.file()' 'd = decoders.image(j)' 'r = resize(d, resize_x=1e12)' 'outputs(r, l)'
cfg 'j, l = readers.file()' 'd = decoders.image(j)' 'c = crop_mirror_normalize(d, crop=[100000, 100000])' 'outputs(c, l)'
run $k 60 "batch_size" "$cli" bench --data "$work/tiny" --batch 2000000000 --threads 1 --epochs 1
run $k 60 "prefetch" "$cli" bench --data "$work/tiny" --batch 2 --prefetch 100000000 --threads 1 --epochs 1

# Signals: SIGINT/SIGTERM to a running bench at a random moment: exit 128+signal, partial summary.
k=signals; kind $k; n=$((8 * scale)); inputs[$k]=$((2 * n))
for sig in INT TERM; do
  num=$(kill -l $sig)
  for ((i = 0; i < n; i++)); do
    runs[$k]=$((runs[$k] + 1))
    /usr/bin/time -o "$work/rss" -f %M timeout -k 5 60 "$cli" bench --data "$work/good" --batch 4 --threads 2 \
      --seconds 30 --warmup 0 --json >"$work/last.out" 2>"$work/last.err" &
    tpid=$!
    sleep "0.$((RANDOM % 9 + 1))$((i % 3))"
    spid=$(pgrep -P "$(pgrep -P $tpid)" 2>/dev/null | head -1)
    [ -n "$spid" ] && kill -$sig "$spid"
    wait $tpid; rc=$?
    expect_signal_exit=$((128 + num)) classify $k $rc "" "bench killed with SIG$sig after a random delay"
    if [ "$rc" = $((128 + num)) ]; then
      [ "$(json_field "$work/last.out" interrupted)" = True ] || echo "[$k] SIG$sig: no partial JSON summary" >>"$failures"
    elif [ "$rc" != 124 ]; then echo "[$k] SIG$sig: exit $rc, wanted $((128 + num))" >>"$failures"; fi
  done
done

# Lifecycles: short runs with random batch/threads/prefetch, checkpoint every batch, resume from it,
# and mutated checkpoint files (each a clear error or an exact resume). Peak RSS per run stays flat.
k=lifecycles; kind $k; n=$((25 * scale)); inputs[$k]=$n
for ((i = 0; i < n; i++)); do
  b=$((RANDOM % 6 + 1)) t=$((RANDOM % 4 + 1)) p=$((RANDOM % 4 + 1))
  run $k 60 "" "$cli" bench --data "$work/good" --batch $b --threads $t --prefetch $p --epochs 1 --json \
    --checkpoint-every 2 --checkpoint-file "$work/ck$i"
  [ -f "$work/ck$i" ] && run $k 60 "" "$cli" bench --data "$work/good" --batch $b --threads $t --prefetch $p \
    --epochs 1 --json --resume "$work/ck$i"
done
k=checkpoint-files; kind $k; n=$((60 * scale)); inputs[$k]=$n; mkdir -p "$work/cks"
python3 - "$work/cks" "$n" "$work"/ck0 <<'PY'
import os, random, sys
outdir, n, src = sys.argv[1], int(sys.argv[2]), open(sys.argv[3], "rb").read()
rng = random.Random(3)
for i in range(n):
    t = bytearray(src)
    for _ in range(rng.randint(1, 4)):
        how = rng.randrange(3)
        if how == 0 and t: t[rng.randrange(len(t))] = rng.randrange(256)
        elif how == 1: t = t[: rng.randrange(len(t) + 1)]
        else: p = rng.randrange(len(t) + 1); t[p:p] = rng.choice([b"9" * 30, b"-1", b"\n", b" ", b"\x00"])
    open(os.path.join(outdir, "ck%03d" % i), "wb").write(bytes(t))
PY
for f in "$work"/cks/*; do run $k 60 "" "$cli" bench --data "$work/good" --batch 1 --threads 2 --epochs 1 --resume "$f"; done

# WebDataset shards: index and tar lies, truncated shards, /dev/zero, HTTP errors and stalls, pipe:.
source scripts/fault-campaign-shards.sh
# FIFOs, devices and unbounded lists everywhere a path or a list is read, .npy lies, symlink layouts
# and budget bypasses: scripts/fault-campaign-paths.sh.
. "$repo/scripts/fault-campaign-paths.sh"
# Kinds with a right answer per run (desynchronising JPEG flips checked against djpeg, forged
# checkpoints, CLI integers), counted as pass/fail: scripts/fault-campaign-checked.sh.
STOKER_CLI=$cli SCALE=$scale scripts/fault-campaign-checked.sh "$work/checked.md"
checked_rc=$?

# --- the table ---------------------------------------------------------------------------------
elapsed=$(($(date +%s) - started))
{
  echo "| kind | inputs | runs | crashes | hangs | ok (exit 0) | clear errors | unclear errors | bad files skipped | peak RSS (MB) |"
  echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
  for k in "${kinds[@]}"; do
    echo "| $k | ${inputs[$k]} | ${runs[$k]} | ${crash[$k]} | ${hang[$k]} | ${ok[$k]} | ${err[$k]} | ${unclear[$k]} | ${skipped[$k]} | $((rss[$k] / 1024)) |"
  done
  echo
  echo "$provenance, $(uname -m), $(nproc) CPUs, $(awk '/MemTotal/ {printf "%.0f GB", $2 / 1048576}' /proc/meminfo),"\
    "binary $(basename "$(dirname "$cli")")/$(basename "$cli") (ASAN_OPTIONS=$ASAN_OPTIONS), SCALE=$scale, ${elapsed} s."
  echo "Command: \`make sanitize && scripts/fault-campaign.sh\`"
  if [ -s "$failures" ]; then echo; echo "Findings:"; echo '```'; cat "$failures"; echo '```'; fi
  echo; echo "Checked kinds (pass/fail per case):"; echo; cat "$work/checked.md"
} >"$out"
[ -s "$failures" ] || [ "$checked_rc" != 0 ] && exit 1
exit 0
