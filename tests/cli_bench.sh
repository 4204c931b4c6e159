#!/usr/bin/env bash
# tests/cli_bench.sh: `stoker bench` as the benchmark protocol and scripts rely on it: the output
# digest does not depend on the thread count, the decode-size hint is off unless asked for, --json
# is valid JSON for any data path (quotes, newlines, bytes that are not UTF-8), and SIGINT stops a
# run with a partial summary and exit status 130; --host-memory-budget reaches the pipeline; --epochs
# runs whole epochs and reports seconds_since_build (cold rows time a first epoch from the build).
set -u
. "$(dirname "$0")/cli_lib.sh"
command -v python3 >/dev/null || { echo "skip: python3 is needed to read the JSON"; exit 77; }

"$cli" datagen "$tmp/data" --count 48 --classes 3 >/dev/null || { echo "FAIL datagen"; exit 1; }
field() { python3 -c 'import json,sys; print(json.loads(open(sys.argv[1]).read())[sys.argv[2]])' "$1" "$2"; }
run() { "$cli" bench --data "$tmp/data" --batch 16 --epochs 1 --json "$@"; }

run --threads 1 >"$tmp/t1.json"; check "bench --epochs 1 --threads 1 exits 0" '[ $? = 0 ]'
run --threads 3 >"$tmp/t3.json"
check "same output digest with 1 and 3 threads" '[ "$(field "$tmp/t1.json" output_digest)" = "$(field "$tmp/t3.json" output_digest)" ]'
check "an epoch of 48 images counts 48" '[ "$(field "$tmp/t1.json" images)" = 48 ]'
check "no warm-up with --epochs" '[ "$(field "$tmp/t1.json" warmup_images)" = 0 ]'
check "an image pipeline's unit is images" '[ "$(field "$tmp/t1.json" unit)" = images ]'
check "seconds_since_build covers the build and the window" \
  'python3 -c "import json,sys; d=json.load(open(sys.argv[1])); sys.exit(not d[\"seconds_since_build\"] >= d[\"seconds\"] > 0)" "$tmp/t1.json"'
run --threads 2 --epochs 2 >"$tmp/e2.json"
check "two epochs count 96, each batch handed back (the last one synchronized, then released)" \
  '[ "$(field "$tmp/e2.json" images)" = 96 ] && [ "$(field "$tmp/e2.json" epochs_completed)" = 2 ]'
run --threads 2 --decode-size-hint >"$tmp/hint.json"
check "decode_size_hint is off by default and reported when asked for" \
  '[ "$(field "$tmp/t1.json" decode_size_hint)" = False ] && [ "$(field "$tmp/hint.json" decode_size_hint)" = True ]'

odd="$tmp/$(printf 'we"ird\nname\xff')"
cp -r "$tmp/data" "$odd"
"$cli" bench --data "$odd" --batch 16 --epochs 1 --json --threads 2 >"$tmp/odd.json"
check "--json is valid JSON and gives back the exact path bytes" \
  'python3 -c "import json,os,sys; d=json.loads(open(sys.argv[1]).read()); sys.exit(os.fsencode(d[\"data\"]) != os.fsencode(sys.argv[2]))" "$tmp/odd.json" "$odd"'

"$cli" bench --data "$tmp/data" --batch 16 --warmup 0 --seconds 120 --json --threads 1 >"$tmp/int.json" &
pid=$!
sleep 2
kill -INT $pid
wait $pid
status=$?
check "SIGINT: exit status 130" '[ $status = 130 ]'
check "SIGINT: the partial summary is printed and marked" '[ "$(field "$tmp/int.json" interrupted)" = True ]'

"$cli" bench --data "$tmp/data" --warmup -1 >/dev/null 2>"$tmp/err.txt"
check "a negative --warmup is refused with a message" 'grep -q -- "--warmup" "$tmp/err.txt"'

"$cli" bench --data "$tmp/data" --host-memory-budget 0.5 >/dev/null 2>"$tmp/err.txt"
check "--host-memory-budget below 1 MB is refused naming the option" \
  '[ $? = 2 ] && grep -q -- "--host-memory-budget" "$tmp/err.txt"'
run --threads 1 --host-memory-budget 1 >/dev/null 2>"$tmp/err.txt"
check "a 1 MB --host-memory-budget reaches the pipeline: the run fails naming the budget" \
  '[ $? != 0 ] && grep -qi "budget" "$tmp/err.txt"'
run --threads 1 --host-memory-budget 4096 >"$tmp/big.json"
check "a large --host-memory-budget runs the epoch" '[ "$(field "$tmp/big.json" images)" = 48 ]'
exit $fail
