#!/usr/bin/env bash
# tests/cli_checkpoint.sh: `stoker bench --checkpoint-every N --checkpoint-file FILE` and
# `--resume FILE`: the file holds the position after the last multiple of N batches, a resumed run
# delivers only the rest of the epoch, and a mismatched or corrupt checkpoint is a clear error.
# (Byte-for-byte equality of resumed batches is tested in tests/test_checkpoint.c.)
set -u
. "$(dirname "$0")/cli_lib.sh"
command -v python3 >/dev/null || { echo "skip: python3 is needed to read the JSON"; exit 77; }

"$cli" datagen "$tmp/data" --count 48 --classes 3 >/dev/null || { echo "FAIL datagen"; exit 1; }
field() { python3 -c 'import json,sys; print(json.loads(open(sys.argv[1]).read())[sys.argv[2]])' "$1" "$2"; }
run() { "$cli" bench --data "$tmp/data" --batch 16 --epochs 1 --threads 2 --json "$@"; }

run --checkpoint-every 2 --checkpoint-file "$tmp/ck" >"$tmp/a.json"
check "bench with --checkpoint-every exits 0" '[ $? = 0 ]'
check "the checkpoint is at epoch 0, batch 2" 'grep -qx "epoch=0" "$tmp/ck" && grep -qx "position=2" "$tmp/ck"'
check "no temporary file is left" '[ ! -e "$tmp/ck.tmp" ]'
check "the checkpoint is small" '[ "$(wc -c <"$tmp/ck")" -lt 1024 ]'
run --resume "$tmp/ck" >"$tmp/r.json"
check "a resumed run exits 0" '[ $? = 0 ]'
check "it delivers only the rest of the epoch (16 of 48 images)" '[ "$(field "$tmp/r.json" images)" = 16 ]'

"$cli" bench --data "$tmp/data" --batch 16 --epochs 1 --seed 5 --resume "$tmp/ck" >/dev/null 2>"$tmp/err"
check "another seed is refused, naming it" '[ $? = 1 ] && grep -q "seed 42, this pipeline has seed 5" "$tmp/err"'
"$cli" bench --data "$tmp/data" --batch 8 --epochs 1 --resume "$tmp/ck" >/dev/null 2>"$tmp/err"
check "another batch size is refused, naming it" '[ $? = 1 ] && grep -q "batch_size 16" "$tmp/err"'
"$cli" bench --data "$tmp/data" --pipeline rn50-val --batch 16 --epochs 1 --resume "$tmp/ck" >/dev/null 2>"$tmp/err"
check "another pipeline is refused" '[ $? = 1 ] && grep -q "another pipeline graph" "$tmp/err"'
sed 's/stoker-checkpoint [0-9]*/stoker-checkpoint 9/' "$tmp/ck" >"$tmp/v9"
"$cli" bench --data "$tmp/data" --batch 16 --epochs 1 --resume "$tmp/v9" >/dev/null 2>"$tmp/err"
check "another format version is refused" '[ $? = 1 ] && grep -q "version 9" "$tmp/err"'
"$cli" bench --data "$tmp/data" --epochs 1 --resume "$tmp/missing" >/dev/null 2>"$tmp/err"
check "a missing checkpoint file is named" '[ $? = 1 ] && grep -q "cannot read checkpoint $tmp/missing" "$tmp/err"'
"$cli" bench --data "$tmp/data" --epochs 1 --checkpoint-every 2 >/dev/null 2>"$tmp/err"
check "--checkpoint-every without --checkpoint-file is a usage error" '[ $? = 2 ]'
exit $fail
