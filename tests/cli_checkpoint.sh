#!/usr/bin/env bash
# tests/cli_checkpoint.sh: `stoker bench --checkpoint-every N --checkpoint-file FILE` and
# `--resume FILE`: the file holds the position after the last multiple of N batches, a resumed run
# delivers only the rest of the epoch, and a mismatched or corrupt checkpoint is a clear error.
# Resharding: a pipeline file's readers.file on 2 shards checkpointed mid-epoch resumes on 3
# shards (and then on 1, inside the remainder) and the new ranks deliver exactly the rest of the
# epoch between them; under --skip-bad-files that is refused, naming why.
# (Byte-for-byte equality of resumed batches and exactly-once delivery are tested in
# tests/test_checkpoint.c and tests/test_checkpoint_reshard.c.)
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
ckpt_reseal "$tmp/v9"
"$cli" bench --data "$tmp/data" --batch 16 --epochs 1 --resume "$tmp/v9" >/dev/null 2>"$tmp/err"
check "another format version is refused" '[ $? = 1 ] && grep -q "version 9" "$tmp/err"'
sed 's/^position=2$/position=3/' "$tmp/ck" >"$tmp/flip" # one bit: '2' is 0x32, '3' 0x33
"$cli" bench --data "$tmp/data" --batch 16 --epochs 1 --resume "$tmp/flip" >/dev/null 2>"$tmp/err"
check "a bit flip is refused as corruption, naming the file" \
  '[ $? = 1 ] && grep -q "resuming from $tmp/flip" "$tmp/err" && grep -q "corrupt: checksum [0-9a-f]* does not match" "$tmp/err"'
"$cli" bench --data "$tmp/data" --epochs 1 --resume "$tmp/missing" >/dev/null 2>"$tmp/err"
check "a missing checkpoint file is named" '[ $? = 1 ] && grep -q "cannot read checkpoint $tmp/missing" "$tmp/err"'
"$cli" bench --data "$tmp/data" --epochs 1 --checkpoint-every 2 >/dev/null 2>"$tmp/err"
check "--checkpoint-every without --checkpoint-file is a usage error" '[ $? = 2 ]'
# Resharding mid-epoch (docs/checkpoint.md): 48 images on 2 shards of 24, batch 4, checkpoint at
# batch 4 (16 images a rank read, 16 left); the rest split on 3 shards is 5 + 5 + 6 images.
pipe_file() { # FILE NUM_SHARDS SHARD_ID
  printf 'jpegs, labels = readers.file(num_shards=%d, shard_id=%d)\nimages = decoders.image(jpegs)\n' "$2" "$3" >"$1"
  printf 'images = resize(images, resize_x=32, resize_y=32)\noutputs(images, labels)\n' >>"$1"
}
pb() { "$cli" bench --data "$tmp/data" --batch 4 --epochs 1 --threads 1 --json "$@"; }
for i in 0 1; do pipe_file "$tmp/p2_$i" 2 "$i"; done
for i in 0 1 2; do pipe_file "$tmp/p3_$i" 3 "$i"; done
pipe_file "$tmp/p1" 1 0
pb --pipeline "$tmp/p2_0" --checkpoint-every 4 --checkpoint-file "$tmp/ck2" >/dev/null
check "a 2-shard checkpoint at batch 4" 'grep -qx "position=4" "$tmp/ck2" && grep -qx "shard=0/2" "$tmp/ck2"'
total=0 ok=1
for i in 0 1 2; do
  pb --pipeline "$tmp/p3_$i" --resume "$tmp/ck2" >"$tmp/s$i.json" || ok=0
  total=$((total + $(field "$tmp/s$i.json" images)))
  [ "$(field "$tmp/s$i.json" batches)" = 2 ] || ok=0
done
check "resumed on 3 shards: every rank 2 batches, 16 images in all" '[ $ok = 1 ] && [ $total = 16 ]'
pb --pipeline "$tmp/p1" --resume "$tmp/ck2" --checkpoint-every 3 --checkpoint-file "$tmp/ck1" >"$tmp/one.json"
check "resumed on 1 shard: the 16 images left" '[ "$(field "$tmp/one.json" images)" = 16 ]'
check "its checkpoint inside the remainder carries reshard=2/4" \
  'grep -qx "reshard=2/4" "$tmp/ck1" && grep -qx "position=7" "$tmp/ck1"'
pb --pipeline "$tmp/p1" --resume "$tmp/ck1" >"$tmp/one2.json"
check "which resumes with the last batch" '[ "$(field "$tmp/one2.json" images)" = 4 ]'
pb --pipeline "$tmp/p2_0" --skip-bad-files --checkpoint-every 4 --checkpoint-file "$tmp/ckb" >/dev/null
pb --pipeline "$tmp/p3_0" --skip-bad-files --resume "$tmp/ckb" >/dev/null 2>"$tmp/err"
check "under --skip-bad-files resharding mid-epoch is refused, naming why" \
  '[ $? = 1 ] && grep -q "refused under skip_bad_files" "$tmp/err"'
exit $fail
