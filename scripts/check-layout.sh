#!/usr/bin/env bash
# scripts/check-layout.sh: the layout limits of STYLE.md / issue 13, checked on the tree:
#   - no source file under src/ or python/src/ over 600 lines;
#   - no function over 120 lines (a function: from a line that opens a top-level brace block at
#     column 0 after a signature, to the `}` at column 0 that closes it);
#   - nothing under src/core includes a header from src/ops.
# Prints one line per breach and exits 1 when there is any, 0 otherwise. Usage:
# scripts/check-layout.sh [MAX_FILE_LINES [MAX_FUNCTION_LINES]]
set -u
cd "$(dirname "$0")/.."
max_file=${1:-600}
max_fn=${2:-120}
bad=0
files=$(git ls-files 'src/*.c' 'src/*.h' 'src/*.cu' 'src/*.cuh' 'python/src/*.c' 'python/src/*.h' 2>/dev/null)
[ -n "$files" ] || files=$(find src python/src -name '*.c' -o -name '*.h' -o -name '*.cu' -o -name '*.cuh')
for f in $files; do
  n=$(wc -l <"$f")
  if [ "$n" -gt "$max_file" ]; then
    echo "$f: $n lines (limit $max_file)"
    bad=1
  fi
done
# Functions: outside any body, a line ending in `) {` (the signature's last line) opens one, unless
# the signature is a struct/enum/union/initializer or an extern "C" block; the next `}` in
# column 0 closes it (the tree's formatting; STYLE.md).
out=$(awk -v max="$max_fn" '
  FNR == 1 { start = 0 }
  /^[A-Za-z_]/ && start == 0 { sig = $0 }
  start == 0 && /\)[^;=]*\{[ \t]*$/ && sig !~ /^(typedef|struct|enum|union|extern|static const|const)/ {
    start = FNR; name = sig; sub(/\(.*/, "", name); n = split(name, w, /[ *]+/); name = w[n]; next
  }
  start > 0 && /^\}/ {
    len = FNR - start + 1
    if (len > max) printf "%s:%d: function %s is %d lines (limit %d)\n", FILENAME, start, name, len, max
    start = 0
  }' $files)
if [ -n "$out" ]; then
  echo "$out"
  bad=1
fi
inc=$(grep -nE '#include[[:space:]]+"ops/' $(echo "$files" | grep '^src/core/') 2>/dev/null)
if [ -n "$inc" ]; then
  echo "$inc" | sed 's/$/  (src\/core includes src\/ops)/'
  bad=1
fi
[ "$bad" -eq 0 ] && echo "layout: ok (files <= $max_file lines, functions <= $max_fn lines, core includes no ops/)"
exit "$bad"
