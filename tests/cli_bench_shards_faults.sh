#!/usr/bin/env bash
# tests/cli_bench_shards_faults.sh: `stoker bench --shards` on bad shards and bad sources: a device
# or a binary file given as the shard list is refused at once; a bad JPEG inside a shard is
# recorded as shard:key; a damaged header keeps the sample before it and counts the skip; a
# failing pipe: command is an error; an HTTP 503 says its status and URL; SIGTERM during a stalled
# HTTP shard ends the run within a second or two (not after the 30 s stall timeout).
set -u
source "$(dirname "$0")/cli_lib.sh"
here=$(cd "$(dirname "$0")" && pwd)

"$cli" datagen "$tmp/data" --count 24 --classes 3 --seed 5 --shards 2 >/dev/null || { echo "FAIL datagen"; exit 1; }
field() { python3 -c "import json, sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])" "$1" "$2"; }
shards=$tmp/data/shards
run() { timeout 60 "$cli" bench --epochs 1 --batch 4 --threads 2 --pipeline rn50-val "$@"; }

out=$(timeout 20 "$cli" bench --shards /dev/zero --epochs 1 2>&1); rc=$?
check "/dev/zero as --shards: exit 1 at once, naming it ($out)" '[ $rc = 1 ] && [[ "$out" == *"/dev/zero"* ]]'
out=$(timeout 20 "$cli" bench --shards "$shards/shard-00000.tar" --epochs 1 2>&1); rc=$?
check "a tar as the list: exit 1, not a text list ($out)" '[ $rc = 1 ] && [[ "$out" == *"NUL"* ]]'

# Copies of the two shards: in the first, one JPEG's bytes are garbage; in the second, the header
# of the 5th member is damaged. Prints the bad JPEG's key and the key of the sample before the header.
mkdir -p "$tmp/bad"
keys=$(python3 - "$shards" "$tmp/bad" <<'PY'
import shutil, sys, tarfile
src, dst = sys.argv[1], sys.argv[2]
names = sorted(n for n in __import__("os").listdir(src) if n.endswith(".tar"))
for n in names:
    shutil.copy(f"{src}/{n}", f"{dst}/{n}")
with tarfile.open(f"{dst}/{names[0]}") as t:
    jpg = [m for m in t.getmembers() if m.name.endswith(".jpg")][1]
with open(f"{dst}/{names[0]}", "r+b") as f:
    f.seek(jpg.offset_data + 2)
    f.write(bytes((i * 37) & 255 for i in range(jpg.size - 4)))
with tarfile.open(f"{dst}/{names[1]}") as t:
    members = t.getmembers()
with open(f"{dst}/{names[1]}", "r+b") as f:
    f.seek(members[4].offset + 2)
    f.write(b"\x55")
print(jpg.name.split(".")[0], members[3].name.split(".")[0])
PY
)
read -r bad_key before_key <<< "$keys"
run --shards "$shards" --json > "$tmp/good.json" 2>/dev/null
run --shards "$tmp/bad" --json --bad-files-log "$tmp/bad.log" > "$tmp/bad.json" 2>"$tmp/bad.err"; rc=$?
good=$(field "$tmp/good.json" images)
check "bad JPEG and damaged header under --skip-bad-files: exit 0 ($(tail -2 "$tmp/bad.err"))" '[ $rc = 0 ]'
check "the bad JPEG is logged as shard:key ($(cat "$tmp/bad.log"))" \
  'grep -q "shard-00000.tar:$bad_key" "$tmp/bad.log" && ! grep -q unnamed "$tmp/bad.log"'
check "the damaged header is logged naming its shard" 'grep -q "shard-00001.tar" "$tmp/bad.log"'
check "skipped_files counts both" '[ "$(field "$tmp/bad.json" skipped_files)" -ge 2 ]'
# what the damaged header cost: the samples after it in shard-00001; the one before it is kept
lost=$(python3 -c "
import tarfile, sys
t = tarfile.open(sys.argv[1]); keys = []
for m in t.getmembers():
    k = m.name.split('.')[0]
    if not keys or keys[-1] != k: keys.append(k)
print(len(keys) - keys.index(sys.argv[2]) - 1)" "$shards/shard-00001.tar" "$before_key")
check "the sample before the damaged header is kept: $good - 1 - $lost images" \
  '[ "$(field "$tmp/bad.json" images)" = $((good - 1 - lost)) ]'

echo "pipe:cat $shards/shard-00000.tar; exit 4" > "$tmp/pipe.list"
out=$(run --shards "$tmp/pipe.list" 2>&1); rc=$?
check "a pipe: command exiting 4: exit 1 naming the status ($out)" '[ $rc = 1 ] && [[ "$out" == *"status 4"* ]]'

# HTTP: a 503 server, and a server that stalls for ever after half a shard.
python3 "$here/wds_http_server.py" --root "$shards" --port-file "$tmp/port" --lifetime 100 --stall 90 \
  >/dev/null 2>&1 & server=$!
for _ in $(seq 100); do [ -s "$tmp/port" ] && break; sleep 0.1; done
port=$(cat "$tmp/port" 2>/dev/null)
echo "http://127.0.0.1:$port/e503/shard-00000.tar" > "$tmp/503.list"
out=$(run --shards "$tmp/503.list" 2>&1); rc=$?
check "HTTP 503: exit 1 with the status and URL ($out)" \
  '[ $rc = 1 ] && [[ "$out" == *"HTTP 503"* ]] && [[ "$out" == *"/e503/shard-00000.tar"* ]] && [[ "$out" != *"Failure writing"* ]]'
echo "http://127.0.0.1:$port/deadstall/shard-00000.tar" > "$tmp/stall.list"
"$cli" bench --shards "$tmp/stall.list" --epochs 1 --batch 4 --threads 2 --pipeline rn50-val >/dev/null 2>&1 & bench=$!
sleep 2
start=$(date +%s.%N)
kill -TERM $bench
wait $bench; rc=$?
took=$(python3 -c "import sys, time; print(round(time.time() - float(sys.argv[1]), 2))" "$start")
check "SIGTERM during a stalled HTTP shard: exit 143 within 3 s (took $took s, rc $rc)" \
  '[ $rc = 143 ] && python3 -c "import sys; assert float(sys.argv[1]) < 3" "$took"'
kill $server 2>/dev/null
exit $fail
