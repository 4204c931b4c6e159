#!/usr/bin/env bash
# tests/cli_io_fifo.sh: no path the CLI is given can hang it or be read for ever. A FIFO among
# the shards of --shards DIR, a FIFO or /dev/zero as the --shards list, a FIFO or a directory as
# --resume, a FIFO as --pipeline and a FIFO without a reader as --bad-files-log each end the run
# at once with a one-line error naming the path and what it is (each blocked in open() for ever,
# or looped, before the one guarded open). A bad files' log that cannot be written (/dev/full)
# fails the run instead of losing the record and exiting 0. Every run is under `timeout`, so a
# regression fails (exit 124) instead of hanging the suite.
set -u
. "$(dirname "$0")/cli_lib.sh"
[ -e /dev/full ] || { echo "skip: no /dev/full"; exit 77; }

"$cli" datagen "$tmp/data" --count 20 --classes 2 --shards 2 >/dev/null || { echo "FAIL datagen"; exit 1; }
for i in 1 2 3; do : >"$tmp/data/class_000/zz_bad_$i.jpg"; done
mkfifo "$tmp/fifo" "$tmp/data/shards/zz-fifo.tar"
mkdir "$tmp/adir"
run() { out=$(timeout 30 "$cli" bench --epochs 1 --batch 4 --threads 2 "$@" 2>&1); rc=$?; out=${out%%$'\n'*}; }

run --shards "$tmp/data/shards"
check "a FIFO among --shards DIR ends the run at once, named ($rc: $out)" \
  '[ $rc != 124 ] && [ $rc != 0 ] && [[ "$out" == *"zz-fifo.tar is a FIFO"* ]]'
run --shards "$tmp/data/shards" --skip-bad-files
check "... also with --skip-bad-files: no hang ($rc)" '[ $rc != 124 ]'
run --shards "$tmp/fifo"
check "a FIFO as the --shards list: exit 1, named ($out)" '[ $rc = 1 ] && [[ "$out" == *"$tmp/fifo is a FIFO"* ]]'
run --shards /dev/zero
check "/dev/zero as the --shards list: exit 1 ($out)" '[ $rc = 1 ] && [[ "$out" == *"/dev/zero is a character device"* ]]'
run --data "$tmp/data" --resume "$tmp/fifo"
check "a FIFO as --resume: exit 1, named ($out)" '[ $rc = 1 ] && [[ "$out" == *"checkpoint $tmp/fifo is a FIFO"* ]]'
run --data "$tmp/data" --resume "$tmp/adir"
check "a directory as --resume: says so ($out)" '[ $rc = 1 ] && [[ "$out" == *"$tmp/adir is a directory"* ]]'
run --data "$tmp/data" --pipeline "$tmp/fifo"
check "a FIFO as --pipeline: exit 1, named ($out)" '[ $rc = 1 ] && [[ "$out" == *"pipeline file $tmp/fifo is a FIFO"* ]]'
run --data "$tmp/data" --bad-files-log "$tmp/fifo"
check "a FIFO without a reader as --bad-files-log: exit 1 ($out)" \
  '[ $rc = 1 ] && [[ "$out" == *"$tmp/fifo is a FIFO with no reader"* ]]'
run --data "$tmp/data" --bad-files-log /dev/full
check "--bad-files-log /dev/full: the run fails, naming the log ($rc: $out)" \
  '[ $rc = 1 ] && [[ "$out" == *"bad_files_log /dev/full: cannot write"* ]]'
run --data "$tmp/data" --bad-files-log /dev/null
check "--bad-files-log /dev/null (a stream) still runs ($rc)" '[ $rc = 0 ]'
exit $fail
