#!/usr/bin/env bash
# bench/nd-copy-cost.sh: CPU cost of the geometry operators' copy, this tree against REF's, one
# thread, no GPU. Builds bench/nd_copy_cost.c twice against BUILD/libstoker.a (a CPU or CUDA build
# of this tree): with this tree's src/ops/common/nd_copy.c (from the library) and with REF's copy of
# that file compiled in its place (default REF: be28f1a, before the dimensions were merged and fill
# runs doubled), then runs each ROUNDS rounds. Not on a hot path.
#   bash bench/nd-copy-cost.sh [BUILD=build] [REF=be28f1a] [ROUNDS=5]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-build}
ref=${2:-be28f1a}
rounds=${3:-5}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
flags=(-O2 -std=c11 -I"$root/src" -I"$root/include")
libs=("$root/$build/libstoker.a" -lm -lpthread -ldl)
cc "${flags[@]}" "$root/bench/nd_copy_cost.c" "${libs[@]}" -o "$tmp/here"
git -C "$root" show "$ref:src/ops/common/nd_copy.c" > "$tmp/nd_copy_ref.c"
no_coalesce=()
git -C "$root" show "$ref:src/ops/common/nd_copy.h" | grep -q stk__nd_coalesce || no_coalesce=(-DSTK_NO_COALESCE)
cc "${flags[@]}" "${no_coalesce[@]}" "$root/bench/nd_copy_cost.c" "$tmp/nd_copy_ref.c" "${libs[@]}" -o "$tmp/ref"
echo "$ref (src/ops/common/nd_copy.c of that commit):"
"$tmp/ref" "$rounds"
echo "$(git -C "$root" rev-parse --short HEAD) (this tree):"
"$tmp/here" "$rounds"
