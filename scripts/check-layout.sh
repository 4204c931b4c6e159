#!/usr/bin/env bash
# scripts/check-layout.sh: the layout rules of DEVELOPERS.md (Layout and layering), checked on the tree (a ctest):
#   - no source file under src/ or python/src/ over 600 lines;
#   - no function over 120 lines (a function: from a line that opens a top-level brace block at
#     column 0 after a signature, to the `}` at column 0 that closes it);
#   - no folder-level arrow runs back up the floors of DEVELOPERS.md: base <- (device, topo) <- ops
#     <- core <- (cli, python); a file includes only its own floor's headers and lower ones
#     (src/core/op.h, the operator contract, is the one core header that ops stand on), and
#     nothing under src/core includes a header from src/ops;
#   - no include circle among the headers under src/.
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
# column 0 closes it (the tree's formatting; .clang-format).
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
# Floors: a file under src/X may include "Y/..." only when Y's floor is at or below X's.
floor() { case "$1" in base) echo 0 ;; device|topo) echo 1 ;; ops) echo 2 ;; core) echo 3 ;; *) echo 9 ;; esac; }
for f in $(echo "$files" | grep '^src/'); do
  from=$(echo "$f" | cut -d/ -f2)
  fl=$(floor "$from")
  [ "$fl" -eq 9 ] && continue
  case "${f##*/}" in test_*) continue ;; esac  # a test stands above everything it tests
  grep -oE '^#include[[:space:]]+"[a-z_]+/[^"]+"' "$f" | sed -E 's/.*"([^"]+)"/\1/' | while read -r h; do
    to=${h%%/*}
    [ "$to" = stoker ] && continue
    [ "$h" = core/op.h ] && [ "$from" = ops ] && continue
    tl=$(floor "$to")
    if [ "$tl" -gt "$fl" ] && [ "$tl" -ne 9 ]; then
      echo "$f: includes $h (src/$from stands below src/$to)"
    fi
    if [ "$from" != "$to" ] && [ "$fl" -eq "$tl" ]; then
      echo "$f: includes $h (src/$from and src/$to share a floor and stay apart)"
    fi
  done
done > /tmp/check-layout.$$
if [ -s /tmp/check-layout.$$ ]; then cat /tmp/check-layout.$$; bad=1; fi
rm -f /tmp/check-layout.$$
# Include circles among src/ headers (a depth-first walk of the header graph).
cyc=$(python3 - <<'PY'
import os, re, sys
graph = {}
for root, _, names in os.walk('src'):
    for n in names:
        if n.endswith(('.h', '.cuh')):
            p = os.path.join(root, n)
            inc = re.findall(r'^#include\s+"([a-z_]+/[^"]+)"', open(p, errors='replace').read(), re.M)
            graph[p[4:]] = [i for i in inc if os.path.exists('src/' + i)]
state, out = {}, []
def walk(n, stack):
    state[n] = 1
    for m in graph.get(n, []):
        if state.get(m) == 1:
            out.append(' -> '.join(stack[stack.index(m):] + [m]) if m in stack else m)
        elif not state.get(m):
            walk(m, stack + [m])
    state[n] = 2
for n in sorted(graph):
    if not state.get(n):
        walk(n, [n])
print('\n'.join('include circle: ' + c for c in out))
PY
)
if [ -n "$cyc" ]; then echo "$cyc"; bad=1; fi
[ "$bad" -eq 0 ] && echo "layout: ok (files <= $max_file lines, functions <= $max_fn lines, no arrow back up, no include circle)"
exit "$bad"
