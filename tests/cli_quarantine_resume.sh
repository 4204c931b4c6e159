#!/usr/bin/env bash
# tests/cli_quarantine_resume.sh: a checkpoint taken after bad files were quarantined carries the
# record (docs/checkpoint.md, "The quarantine record across a resume"): the checkpoint text holds
# the count and the files' sample ids (format version 3), and a run resumed from it with the same
# --bad-files-log reports none of them again -- not when it meets them in the next epoch either --
# appends to the log instead of truncating it, and counts skipped_files on from the original; with
# more bad files than it carries (300 separate ones) it keeps 256 ranges and the exact count.
set -u
. "$(dirname "$0")/cli_lib.sh"
command -v python3 >/dev/null || { echo "skip: python3 is needed to read the JSON"; exit 77; }

"$cli" datagen "$tmp/data" --count 20 --classes 2 >/dev/null || { echo "FAIL datagen"; exit 1; }
for i in 1 2 3 4 5 6; do : >"$tmp/data/class_000/a_bad_$i.jpg"; done # the first 6 of the listing
field() { python3 -c 'import json,sys; print(json.loads(open(sys.argv[1]).read())[sys.argv[2]])' "$1" "$2"; }
run() { "$cli" bench --data "$tmp/data" --pipeline rn50-val --batch 4 --threads 2 --json --bad-files-log "$tmp/bad.jsonl" "$@"; }

run --epochs 1 --checkpoint-every 3 --checkpoint-file "$tmp/ck" >"$tmp/a.json"
check "the original run exits 0 and logs the 6 bad files" '[ $? = 0 ] && [ "$(wc -l <"$tmp/bad.jsonl")" = 6 ]'
cp "$tmp/bad.jsonl" "$tmp/bad_before.jsonl"
check "the checkpoint carries the record: quarantine=6:<ids>" 'grep -qE "^quarantine=6:[0-9]" "$tmp/ck"'
check "the checkpoint stays small" '[ "$(wc -c <"$tmp/ck")" -lt 1024 ]'
run --epochs 2 --resume "$tmp/ck" >"$tmp/r.json"
check "the resumed run (rest of epoch 0, then epoch 1 with the same bad files) exits 0" '[ $? = 0 ]'
check "it delivers 8 + 20 good images" '[ "$(field "$tmp/r.json" images)" = 28 ]'
check "skipped_files counts each bad file once over both runs" '[ "$(field "$tmp/r.json" skipped_files)" = 6 ]'
check "the log is neither truncated nor duplicated" 'cmp -s "$tmp/bad.jsonl" "$tmp/bad_before.jsonl"'
sed 's/^stoker-checkpoint 5/stoker-checkpoint 2/; /^checksum=/d' "$tmp/ck" >"$tmp/v2"
"$cli" bench --data "$tmp/data" --pipeline rn50-val --batch 4 --epochs 1 --skip-bad-files --resume "$tmp/v2" \
  >/dev/null 2>"$tmp/err"
check "a version-2 text with a quarantine list is refused, naming the key" '[ $? = 1 ] && grep -q "quarantine" "$tmp/err"'

# A forged position under skip_bad_files is refused (it was neither checked nor used: the reader
# seeks by the refill cursor), as it is without skip_bad_files.
for p in 0 51 1000000000000000000; do
  sed "s/^position=.*/position=$p/" "$tmp/ck" >"$tmp/forged"
  ckpt_reseal "$tmp/forged"
  "$cli" bench --data "$tmp/data" --pipeline rn50-val --batch 4 --epochs 1 --skip-bad-files --resume "$tmp/forged" \
    >/dev/null 2>"$tmp/err"
  check "position=$p forged under skip_bad_files is refused" '[ $? = 1 ] && grep -q "position" "$tmp/err"'
done
"$cli" bench --data "$tmp/data" --pipeline rn50-val --batch 4 --epochs 1 --resume "$tmp" >/dev/null 2>"$tmp/err"
check "--resume DIR says it is a directory" '[ $? != 0 ] && grep -q "is a directory" "$tmp/err"'

# More bad files than the record carries: 300 single bad files between good ones (300 ranges of
# sample ids). The checkpoint carries the first 256 ranges and the exact count, stays well under
# the 16 KB limit, and resumes.
mkdir -p "$tmp/many/c"
one=$(ls "$tmp/data/class_001" | head -1)
for i in $(seq -w 0 299); do cp "$tmp/data/class_001/$one" "$tmp/many/c/f${i}_a.jpg"; : >"$tmp/many/c/f${i}_b.jpg"; done
"$cli" bench --data "$tmp/many" --pipeline rn50-val --batch 16 --threads 2 --epochs 1 --skip-bad-files \
  --checkpoint-every 18 --checkpoint-file "$tmp/ck_many" >/dev/null
check "a run with 300 separate bad files exits 0" '[ $? = 0 ]'
check "its checkpoint carries 256 ranges, the count of more than 256 files, in under 16 KB" \
  'python3 - "$tmp/ck_many" <<"PY"
import sys
text = open(sys.argv[1]).read()
line = [l for l in text.split("\n") if l.startswith("quarantine=")][0]
count, ranges = line[len("quarantine="):].split(":")
assert int(count) > 256 and len(ranges.split(",")) == 256, (count, len(ranges.split(",")))
assert len(text) < 16384
PY'
"$cli" bench --data "$tmp/many" --pipeline rn50-val --batch 16 --threads 2 --epochs 1 --skip-bad-files \
  --resume "$tmp/ck_many" --json >"$tmp/many.json"
check "and resumes" '[ $? = 0 ] && [ "$(field "$tmp/many.json" images)" = 12 ]'
exit $fail
