#!/usr/bin/env bash
# tests/cli_bad_files.sh: `stoker bench --bad-files-log FILE` on a folder with empty "JPEGs", one
# of them named with a newline, a quote and a byte that is not UTF-8: every good image is delivered
# once per epoch (refill, docs/pipeline.md), each bad file is in the log once (not once per epoch)
# as a JSON line that parses and gives back the exact name bytes, the count in --json matches, and
# the output digest is the same with 1 and 3 threads.
set -u
. "$(dirname "$0")/cli_lib.sh"
command -v python3 >/dev/null || { echo "skip: python3 is needed to read the JSON"; exit 77; }

"$cli" datagen "$tmp/data" --count 20 --classes 2 >/dev/null || { echo "FAIL datagen"; exit 1; }
for i in $(seq 1 25); do : >"$tmp/data/class_000/zz_bad_$i.jpg"; done
: >"$tmp/data/class_001/$(printf 'we"ird\nname\xff.jpg')"
field() { python3 -c 'import json,sys; print(json.loads(open(sys.argv[1]).read())[sys.argv[2]])' "$1" "$2"; }
run() { "$cli" bench --data "$tmp/data" --batch 4 --epochs 2 --json --bad-files-log "$@"; }

run "$tmp/log1.jsonl" --threads 1 >"$tmp/t1.json"; check "bench with 26 bad files of 46 exits 0" '[ $? = 0 ]'
run "$tmp/log3.jsonl" --threads 3 >"$tmp/t3.json"
check "2 epochs deliver the 20 good images twice" '[ "$(field "$tmp/t1.json" images)" = 40 ]'
check "skipped_files counts 26 distinct bad files" '[ "$(field "$tmp/t1.json" skipped_files)" = 26 ]'
check "same output digest with 1 and 3 threads" '[ "$(field "$tmp/t1.json" output_digest)" = "$(field "$tmp/t3.json" output_digest)" ]'
check "the log: 26 JSON lines, each bad file once, exact name bytes, a reason" \
  'python3 - "$tmp/log1.jsonl" "$tmp/data" <<"PY"
import json, os, sys
raw = open(sys.argv[1], "rb").read()
lines = raw.split(b"\n")
assert lines[-1] == b"", "the log ends with a newline"
recs = [json.loads(l) for l in lines[:-1]]
names = [os.fsencode(r["file"]) for r in recs]
assert len(recs) == 26 and len(set(names)) == 26, len(recs)
assert all(os.path.exists(n) for n in names), names
assert any(n.endswith(b"we\"ird\nname\xff.jpg") for n in names)
assert all(r["reason"] and isinstance(r["sample"], int) and r["epoch"] == 0 for r in recs)
PY'
exit $fail
