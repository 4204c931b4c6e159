#!/usr/bin/env bash
# bench/jpeg-check-cost.sh: CPU cost of the JPEG corrupt-data rule, one thread, no GPU. Builds
# bench/jpeg_check_cost.c against BUILD/libstoker.a (a CPU or CUDA build of this tree) and times
# the CPU decoder (stk__jpeg_decode) and the mixed decoder's validate_entropy pass
# (stk__jpeg_check_entropy) over DIR's JPEGs (default: `stoker datagen` images, made once), and
# with HINT=N the decode at the DCT scale that keeps both sides >= N (hint_size).
# Run it in a worktree of the commit before and of the commit after: the rows compare.
#   [HINT=256] bash bench/jpeg-check-cost.sh [BUILD=build] [DIR] [ROUNDS=3]
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
    "$root/$build/libstoker.a" $(sed -e 's/ libstoker\.a//' -e 's/"//g' "$root/$build/CMakeFiles/stoker.dir/linkLibs.rsp") \
    -L/usr/local/cuda/targets/x86_64-linux/lib -lstdc++ -o "$bin"  # a CUDA build: its link line's libraries
echo "$(git -C "$root" rev-parse --short HEAD) $(find "$dir" -name '*.jpg' | wc -l) files in $dir"
find "$dir" -name '*.jpg' | sort | xargs "$bin" --rounds "$rounds" ${HINT:+--hint "$HINT"}
