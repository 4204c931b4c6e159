#!/usr/bin/env bash
# tests/cli_datagen.sh: `stoker datagen` -- file count and layout, JPEG signatures and sizes,
# determinism by seed (same seed: identical bytes; other seed: different), the summary line, and
# bad arguments. The decode side of these files is covered by src/ops/decode/test_decoders.c.
set -u
CLI="${STOKER_CLI:?STOKER_CLI not set}"
tmp=$(mktemp -d /tmp/stoker-datagen-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail=0
check() { if ! eval "$1"; then echo "FAIL: $2"; fail=1; fi; }

out=$("$CLI" datagen "$tmp/a" --count 40 --classes 4 --seed 7) || { echo "FAIL: datagen exited $?"; exit 1; }
echo "$out"
check '[[ "$out" == "datagen: 40 files in 4 classes under $tmp/a, mean size "*"bytes, "*" s" ]]' "summary line: $out"
check '[ "$(find "$tmp/a" -name "*.jpg" | wc -l)" -eq 40 ]' "40 files"
check '[ "$(ls "$tmp/a")" = "$(printf "class_000\nclass_001\nclass_002\nclass_003")" ]' "class folders"
check '[ "$(ls "$tmp/a/class_001" | wc -l)" -eq 10 ]' "10 files per class"
for f in "$tmp"/a/class_00*/*.jpg; do
  sig=$(od -An -tx1 -N3 "$f" | tr -d ' ')
  size=$(stat -c %s "$f")
  check '[ "$sig" = "ffd8ff" ]' "JPEG signature of $f"
  check '[ "$size" -gt 20000 ] && [ "$size" -lt 600000 ]' "size of $f ($size bytes): structured content, not flat"
done
# Dimensions from the SOF marker of a few files: long side 320..640, both orientations occur.
landscape=0; portrait=0
for f in "$tmp"/a/class_00*/*.jpg; do
  dims=$(python3 - "$f" <<'PY'
import sys
d = open(sys.argv[1], 'rb').read()
i = 2
while i < len(d):
    m = d[i + 1]
    if m in (0xC0, 0xC1, 0xC2):
        print(int.from_bytes(d[i+7:i+9], 'big'), int.from_bytes(d[i+5:i+7], 'big'))
        break
    i += 2 + int.from_bytes(d[i+2:i+4], 'big')
PY
)
  w=${dims% *}; h=${dims#* }
  check '[ "$w" -ge 179 ] && [ "$w" -le 640 ] && [ "$h" -ge 179 ] && [ "$h" -le 640 ]' "dimensions $w x $h of $f"
  if [ "$w" -gt "$h" ]; then landscape=$((landscape+1)); else portrait=$((portrait+1)); fi
done
check '[ $landscape -gt 0 ] && [ $portrait -gt 0 ]' "both orientations ($landscape landscape, $portrait portrait)"

"$CLI" datagen "$tmp/b" --count 40 --classes 4 --seed 7 >/dev/null
check 'diff -r "$tmp/a" "$tmp/b" >/dev/null' "same seed gives identical files"
"$CLI" datagen "$tmp/c" --count 40 --classes 4 --seed 8 >/dev/null
check '! cmp -s "$tmp/a/class_000/img_00000000.jpg" "$tmp/c/class_000/img_00000000.jpg"' "another seed gives other files"
"$CLI" datagen "$tmp/q" --count 4 --classes 2 --quality 50 >/dev/null
check '[ "$(stat -c %s "$tmp/q/class_000/img_00000000.jpg")" -lt "$(stat -c %s "$tmp/a/class_000/img_00000000.jpg")" ]' "--quality 50 makes smaller files"

# Progress: a counter on stderr when it is a terminal, none into a file, --[no-]progress overrides.
"$CLI" datagen "$tmp/p1" --count 4 --classes 2 >/dev/null 2>"$tmp/p1.err"
check '! grep -q "datagen: 4/4" "$tmp/p1.err"' "no progress counter when stderr is a file"
"$CLI" datagen "$tmp/p2" --count 4 --classes 2 --progress >/dev/null 2>"$tmp/p2.err"
check 'grep -q "datagen: 4/4" "$tmp/p2.err"' "--progress writes the counter into a file too"
if command -v script >/dev/null; then
  script -qec "\"$CLI\" datagen \"$tmp/p3\" --count 4 --classes 2" /dev/null >"$tmp/p3.tty" 2>&1
  check 'grep -q "datagen: 4/4" "$tmp/p3.tty"' "progress by default on a terminal"
  script -qec "\"$CLI\" datagen \"$tmp/p4\" --count 4 --classes 2 --no-progress" /dev/null >"$tmp/p4.tty" 2>&1
  check '! grep -q "datagen: 4/4" "$tmp/p4.tty"' "--no-progress silences it on a terminal"
else
  echo "note: no script(1): the terminal cases are not checked"
fi

"$CLI" datagen "$tmp/x" --count 0 >/dev/null 2>&1; check '[ $? -eq 2 ]' "--count 0 is rejected"
"$CLI" datagen "$tmp/x" --quality 101 >/dev/null 2>&1; check '[ $? -eq 2 ]' "--quality 101 is rejected"
"$CLI" datagen "$tmp/x" --bogus >/dev/null 2>&1; check '[ $? -eq 2 ]' "unknown option is rejected"
"$CLI" datagen >/dev/null 2>&1; check '[ $? -eq 2 ]' "missing DIR is rejected"
touch "$tmp/file"
err=$("$CLI" datagen "$tmp/file/sub" --count 2 2>&1 >/dev/null); rc=$?
check '[ $rc -eq 1 ] && [[ "$err" == *"$tmp/file/sub"* ]]' "unwritable directory names the path ($rc: $err)"
exit $fail
