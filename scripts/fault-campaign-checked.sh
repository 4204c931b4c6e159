#!/usr/bin/env bash
# scripts/fault-campaign-checked.sh: the fault campaign's kinds whose every run has a known right
# answer, each counted as pass or fail (scripts/fault-campaign.sh runs it last and appends its
# table; it also runs alone). Kinds:
#   desync-jpeg         bytes flipped in the entropy-coded data of good JPEGs (never creating a
#                       marker); stoker must refuse every file that djpeg (libjpeg-turbo's own
#                       tool) reports as corrupt, naming the file; one djpeg decodes cleanly must
#                       decode. Without djpeg each refusal still has to name the file.
#   forged-checkpoints  a real mid-epoch checkpoint (with and without --skip-bad-files) with
#                       forged positions, counts and shard numbers (checksum line recomputed), and
#                       with single bits flipped (checksum left as written): each must be refused,
#                       a flip as "corrupt"; the unforged text must resume.
#   cli-integers        --batch 4294967298, --seed -1, 23-digit seeds, --threads 0, ...: a usage
#                       error (exit 2) naming the option, never a run.
# Also a crash (sanitizer report, signal) or a hang is a fail. Usage:
#   STOKER_CLI=build/stoker scripts/fault-campaign-checked.sh [OUT.md]
# Exit status 1 when any case failed.
set -uo pipefail
cd "$(dirname "$0")/.."
cli=${STOKER_CLI:-$PWD/build-asan/stoker}
[ -x "$cli" ] || { echo "fault-campaign-checked: $cli not found (make sanitize, or set STOKER_CLI)" >&2; exit 2; }
command -v python3 >/dev/null || { echo "fault-campaign-checked: python3 is needed" >&2; exit 2; }
out=${1:-/dev/stdout}
scale=${SCALE:-1}
work=$(mktemp -d /tmp/stoker-checked.XXXXXX)
trap 'rm -rf "$work"' EXIT
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=1} UBSAN_OPTIONS=print_stacktrace=1
started=$(date +%s)
declare -A cases pass fail
kinds=()
failures=$work/failures.txt
: >"$failures"
kind() { kinds+=("$1"); cases[$1]=0 pass[$1]=0 fail[$1]=0; }
verdict() { # KIND OK(0/1) WHAT
  cases[$1]=$((cases[$1] + 1))
  if [ "$2" = 1 ]; then pass[$1]=$((pass[$1] + 1)); else fail[$1]=$((fail[$1] + 1)); echo "[$1] FAIL $3" >>"$failures"; head -2 "$work/err" >>"$failures"; fi
}
# go CMD...: runs the CLI (60 s limit); sets rc; a crash or hang is rc 999.
go() {
  timeout -k 5 60 "$@" >"$work/out" 2>"$work/err"
  rc=$?
  if grep -qE 'ERROR: (Address|Leak)Sanitizer|runtime error:' "$work/err" || [ $rc = 124 ] || [ $rc = 137 ] ||
    { [ $rc -gt 128 ] && [ $rc != 255 ]; }; then rc=999; fi
}

"$cli" datagen "$work/good" --count 12 --classes 2 --seed 11 >/dev/null || { echo "datagen failed" >&2; exit 2; }
mapfile -t good < <(find "$work/good" -name '*.jpg' | sort)

# --- desync-jpeg ---------------------------------------------------------------------------------
k=desync-jpeg; kind $k; n=$((120 * scale)); mkdir -p "$work/desync"
python3 - "$work/desync" "$n" "${good[@]}" <<'PY'
import os, random, sys
outdir, n, srcs = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
rng = random.Random(42)
for i in range(n):
    data = bytearray(open(srcs[i % len(srcs)], "rb").read())
    sos = data.find(b"\xff\xda")
    start = sos + 2 + (data[sos + 2] << 8 | data[sos + 3])  # first entropy-coded byte
    end = data.rfind(b"\xff\xd9")
    for _ in range(rng.randint(1, 3)):  # 1-3 flips of 1-2 bits, never next to an 0xff (no marker made or broken)
        while True:
            p = rng.randrange(start, end)
            new = data[p] ^ (1 << rng.randrange(8)) ^ (rng.randrange(2) << rng.randrange(8))
            if data[p] != 0xff and data[p - 1] != 0xff and new != 0xff and new != data[p]:
                data[p] = new
                break
    open(os.path.join(outdir, "d%03d.jpg" % i), "wb").write(bytes(data))
PY
have_djpeg=0 desync_corrupt=0; command -v djpeg >/dev/null && have_djpeg=1
for f in "$work"/desync/*.jpg; do
  name=$(basename "$f"); d=$work/one/$name; mkdir -p "$d/c"; cp "$f" "$d/c/"
  go "$cli" bench --data "$d" --pipeline rn50-val --batch 1 --threads 1 --epochs 1 --json
  refused=0; [ $rc = 1 ] && grep -q "$name" "$work/err" && refused=1
  if [ $rc = 999 ]; then verdict $k 0 "$name: crash or hang"
  elif [ $have_djpeg = 1 ]; then
    djpeg -outfile /dev/null "$f" 2>"$work/djpeg.err"; drc=$?
    corrupt=0; { [ $drc != 0 ] || [ -s "$work/djpeg.err" ]; } && corrupt=1
    desync_corrupt=$((desync_corrupt + corrupt))
    if [ $corrupt = 1 ]; then verdict $k $refused "$name: djpeg says '$(head -c 80 "$work/djpeg.err")', stoker exit $rc"
    else verdict $k $([ $rc = 0 ] && echo 1 || echo 0) "$name: djpeg decodes it cleanly, stoker exit $rc"; fi
  else verdict $k $([ $rc = 0 ] || [ $refused = 1 ] && echo 1 || echo 0) "$name: exit $rc without naming the file"
  fi
done

# --- forged-checkpoints ----------------------------------------------------------------------------
k=forged-checkpoints; kind $k
reseal() { python3 - "$1" <<'PY'
import sys
t = open(sys.argv[1]).read()
body = t[: t.rfind("\nchecksum=") + 1]
h = 0xCBF29CE484222325
for b in body.encode():
    h = ((h ^ b) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
open(sys.argv[1], "w").write(body + "checksum=%016x\n" % h)
PY
}
mkdir -p "$work/ck/plain/c" "$work/ck/skip/c"; cp "${good[@]}" "$work/ck/plain/c/"; cp "${good[@]}" "$work/ck/skip/c/"
touch "$work/ck/skip/c/empty_0.jpg" "$work/ck/skip/c/empty_1.jpg" # bad files: a refill cursor and a quarantine record
for skip in "" --skip-bad-files; do
  tag=plain; [ -n "$skip" ] && tag=skip
  bench() { go "$cli" bench --data "$work/ck/$tag" --batch 2 --threads 2 --epochs 1 $skip "$@"; }
  bench --checkpoint-every 3 --checkpoint-file "$work/ck.$tag"
  [ -s "$work/ck.$tag" ] || { verdict $k 0 "$tag: no checkpoint written (exit $rc)"; continue; }
  bench --resume "$work/ck.$tag"
  verdict $k $([ $rc = 0 ] && echo 1 || echo 0) "$tag: the unforged checkpoint does not resume (exit $rc)"
  while IFS='|' read -r key value needle; do
    sed "s|^$key=.*|$key=$value|" "$work/ck.$tag" >"$work/forged"; reseal "$work/forged"
    bench --resume "$work/forged"
    verdict $k $([ $rc = 1 ] && grep -qE -- "$needle" "$work/err" && echo 1 || echo 0) \
      "$tag: $key=$value (wanted exit 1 with '$needle', got $rc)"
  done <<EOF
position|51|position|outside epoch
position|1000000000000000000|position|outside epoch
epoch|18446744073709551615|bad value for epoch
epoch|9223372036854775808|bad value for epoch
shard|0/4294967298|bad value for shard
batch_size|4294967298|batch_size
data|0000000000000000/99999999999999999999|bad value for data
quarantine|1:9223372036854775807|quarantine
refill|1:9223372036854775807:|refill
EOF
  if [ -n "$skip" ]; then # position 0 is an epoch's start, which carries no refill cursor
    sed "s|^position=.*|position=0|" "$work/ck.$tag" >"$work/forged"; reseal "$work/forged"
    bench --resume "$work/forged"
    verdict $k $([ $rc = 1 ] && grep -q position "$work/err" && echo 1 || echo 0) "$tag: position=0 with a cursor (exit $rc)"
  fi
  len=$(($(grep -b '^checksum=' "$work/ck.$tag" | cut -d: -f1) - 1)) # bytes before the checksum line's newline
  for ((i = 0; i < 12 * scale; i++)); do
    pos=$(((i * 37 + 5) % len)) bit=$((i % 8))
    python3 -c 'import sys; t = bytearray(open(sys.argv[1], "rb").read()); t[int(sys.argv[2])] ^= 1 << int(sys.argv[3]); open(sys.argv[4], "wb").write(t)' \
      "$work/ck.$tag" $pos $bit "$work/flipped"
    bench --resume "$work/flipped"
    verdict $k $([ $rc = 1 ] && grep -q "corrupt" "$work/err" && echo 1 || echo 0) "$tag: bit $bit of byte $pos flipped (exit $rc)"
  done
done

# --- cli-integers ----------------------------------------------------------------------------------
k=cli-integers; kind $k
while read -r opt value; do
  go "$cli" bench --data "$work/good" --seconds 0.01 --warmup 0 "$opt" "$value"
  verdict $k $([ $rc = 2 ] && grep -q -- "$opt" "$work/err" && ! grep -q images/s "$work/out" && echo 1 || echo 0) \
    "$opt $value (wanted a usage error naming it, got exit $rc)"
done <<'EOF'
--batch 4294967298
--batch 0
--batch -1
--threads 0
--threads 4294967297
--epochs 4294967297
--checkpoint-every 4294967298
--prefetch 4294967298
--seed -1
--seed 12345678901234567890123
--seed 18446744073709551616
--seed 0x10
EOF

# --- the table -------------------------------------------------------------------------------------
{
  echo "| kind | cases | pass | fail |"
  echo "|---|---:|---:|---:|"
  for k in "${kinds[@]}"; do echo "| $k | ${cases[$k]} | ${pass[$k]} | ${fail[$k]} |"; done
  echo
  [ $have_djpeg = 1 ] && echo "desync-jpeg: djpeg reports $desync_corrupt of ${cases[desync-jpeg]} files as corrupt (each must be refused), the rest decode cleanly (each must decode)."
  echo "$(basename "$cli") at commit $(git rev-parse --short HEAD), djpeg $([ $have_djpeg = 1 ] && echo used || echo 'not installed'), SCALE=$scale, $(($(date +%s) - started)) s."
  if [ -s "$failures" ]; then echo; echo "Failed cases:"; echo '```'; cat "$failures"; echo '```'; fi
} >"$out"
[ -s "$failures" ] && exit 1
exit 0
