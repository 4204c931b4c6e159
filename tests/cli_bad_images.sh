#!/usr/bin/env bash
# tests/cli_bad_images.sh: one bad-file rule whatever the pipeline (docs/operators-io.md, "Bad
# files"): on a folder where every other file is truncated (90% kept: header intact, the bottom
# rows missing) plus one file with a bad Huffman code, rn50-train (random crop decode, with and
# without DCT scaling) and rn50-val (full decode) skip exactly the same files; without
# --skip-bad-files each stops, naming the file.
set -u
. "$(dirname "$0")/cli_lib.sh"
src=${STOKER_SOURCE_DIR:?}
command -v python3 >/dev/null || { echo "skip: python3 is needed to read the JSON"; exit 77; }

"$cli" datagen "$tmp/data" --count 48 --classes 2 >/dev/null || { echo "FAIL datagen"; exit 1; }
i=0
for f in $(ls "$tmp"/data/*/*.jpg | sort); do
  i=$((i + 1))
  [ $((i % 2)) = 0 ] || continue
  size=$(stat -c %s "$f")
  head -c $((size * 9 / 10)) "$f" >"$tmp/cut" && mv "$tmp/cut" "$f"
done
cp "$src/tests/fixtures/jpeg/bad_huffman_bottom.jpg" "$tmp/data/class_000/img_00000000.jpg"
bad=25

field() { python3 -c 'import json,sys; print(json.loads(open(sys.argv[1]).read())[sys.argv[2]])' "$1" "$2"; }
run() { "$cli" bench --data "$tmp/data" --batch 8 --threads 2 --epochs 1 --json "$@"; }
run --pipeline rn50-train --skip-bad-files >"$tmp/train.json"
run --pipeline rn50-train --skip-bad-files --decode-size-hint >"$tmp/hint.json"
run --pipeline rn50-val --skip-bad-files >"$tmp/val.json"
check "rn50-val skips the $bad bad files" '[ "$(field "$tmp/val.json" skipped_files)" = $bad ]'
check "rn50-train (crop decode) skips the same $bad files" '[ "$(field "$tmp/train.json" skipped_files)" = $bad ]'
check "rn50-train with --decode-size-hint skips the same $bad files" \
  '[ "$(field "$tmp/hint.json" skipped_files)" = $bad ]'

for p in rn50-train rn50-val; do
  "$cli" bench --data "$tmp/data" --pipeline $p --batch 8 --threads 2 --epochs 1 >/dev/null 2>"$tmp/err.txt"
  status=$?
  check "$p without --skip-bad-files fails" '[ $status != 0 ]'
  check "$p names the bad file and why" 'grep -Eq "file .*img_[0-9]{8}\.jpg" "$tmp/err.txt" && grep -Eq "truncated JPEG|corrupt JPEG data" "$tmp/err.txt"'
done
exit $fail
