#!/usr/bin/env bash
# bench/jpeg-check-cost.sh: CPU cost of the JPEG corrupt-data rule, one thread, no GPU. Builds
# bench/jpeg_check_cost.c against BUILD/libstoker.a (a CPU or CUDA build of this tree) and times
# the CPU decoder (stk__jpeg_decode) and the mixed decoder's validate_entropy pass
# (stk__jpeg_check_entropy) over DIR's JPEGs (default: `stoker datagen` images, made once).
# Run it in a worktree of the commit before and of the commit after: the rows compare.
#   bash bench/jpeg-check-cost.sh [BUILD=build] [DIR] [ROUNDS=3]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-build}
dir=${2:-${TMPDIR:-/tmp}/stoker-check-cost-data}
rounds=${3:-3}
[[ -d $dir ]] || "$root/$build/stoker" datagen "$dir" --count 400 >/dev/null
bin=$(mktemp -d)/jpeg_check_cost
cc -O2 -std=c11 -D_GNU_SOURCE -I"$root/src" -I"$root/include" "$root/bench/jpeg_check_cost.c" \
  "$root/$build/libstoker.a" -ljpeg -lm -lpthread -ldl -o "$bin" 2>/dev/null ||
  cc -O2 -std=c11 -D_GNU_SOURCE -I"$root/src" -I"$root/include" "$root/bench/jpeg_check_cost.c" \
    "$root/$build/libstoker.a" $(grep -o '\-l[a-z0-9_+]*' "$root/$build/CMakeFiles/stoker.dir/link.txt" | sort -u) \
    -o "$bin"
echo "$(git -C "$root" rev-parse --short HEAD) $(find "$dir" -name '*.jpg' | wc -l) files in $dir"
find "$dir" -name '*.jpg' | sort | xargs "$bin" --rounds "$rounds"
