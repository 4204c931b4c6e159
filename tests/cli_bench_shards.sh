#!/usr/bin/env bash
# tests/cli_bench_shards.sh: `stoker bench --shards`: rn50-train and rn50-val read the tar shards
# `stoker datagen --shards` writes (a directory, or a list file mixing local paths and pipe:
# commands) and deliver every sample once per epoch, as the folder does; bad uses are one-line
# errors (exit 2 for arguments, 1 for data).
set -u
source "$(dirname "$0")/cli_lib.sh"

"$cli" datagen "$tmp/data" --count 60 --classes 3 --seed 5 --shards 4 >/dev/null || { echo "FAIL datagen"; exit 1; }
field() { python3 -c "import json, sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])" "$1" "$2"; }

"$cli" bench --data "$tmp/data" --epochs 1 --batch 10 --threads 2 --json > "$tmp/folder.json"
check "folder: 60 images in an epoch" '[ "$(field "$tmp/folder.json" images)" = 60 ]'
"$cli" bench --shards "$tmp/data/shards" --epochs 2 --batch 10 --threads 2 --json > "$tmp/dir.json"
check "shard directory: 120 images in 2 epochs" '[ "$(field "$tmp/dir.json" images)" = 120 ]'
check "shard directory: reported as shards" '[ "$(field "$tmp/dir.json" shards)" = True ]'
check "shard directory: a time to first batch" \
  'python3 -c "import sys; assert 0 < float(sys.argv[1]) < 60" "$(field "$tmp/dir.json" time_to_first_batch_s)"'

# A list: two local paths (one with blanks around it), a comment, and two shards through pipe:cat.
{
  echo "# the four shards of $tmp/data"
  echo "$tmp/data/shards/shard-00000.tar"
  echo "   $tmp/data/shards/shard-00001.tar  "
  echo ""
  echo "pipe:cat $tmp/data/shards/shard-00002.tar"
  echo "pipe:cat $tmp/data/shards/shard-00003.tar"
} > "$tmp/list.txt"
"$cli" bench --shards "$tmp/list.txt" --pipeline rn50-val --epochs 1 --batch 10 --threads 2 --json > "$tmp/list.json"
check "shard list (paths and pipe:), rn50-val: 60 images" '[ "$(field "$tmp/list.json" images)" = 60 ]'

out=$("$cli" bench --shards "$tmp/nowhere" --epochs 1 2>&1); rc=$?
check "missing shards: exit 1 naming it ($out)" '[ $rc = 1 ] && [[ "$out" == *"--shards $tmp/nowhere"* ]]'
mkdir "$tmp/empty"
out=$("$cli" bench --shards "$tmp/empty" --epochs 1 2>&1); rc=$?
check "no *.tar in the directory: exit 1 ($out)" '[ $rc = 1 ] && [[ "$out" == *"no *.tar files"* ]]'
echo 'outputs(x)' > "$tmp/p.pipe"
out=$("$cli" bench --shards "$tmp/data/shards" --pipeline "$tmp/p.pipe" 2>&1); rc=$?
check "--shards with a pipeline file: exit 2 ($out)" '[ $rc = 2 ] && [[ "$out" == *"built-in pipelines"* ]]'
check "--help documents --shards" '"$cli" bench --help | grep -q -- "--shards DIR|LIST"'
exit $fail
