#!/usr/bin/env bash
# scripts/fuzz.sh: builds the libFuzzer targets (tests/fuzz/fuzz_*.c) with clang into build-fuzz/
# and runs each for FUZZ_SECONDS (default 30) from a copy of its seed corpus
# (tests/fuzz/corpus/NAME/, never written to). A crash, leak, sanitizer report or timeout of one
# input (FUZZ_INPUT_TIMEOUT, 10 s) fails the run; the reproducer is kept in build-fuzz/artifacts/.
# Used by `make fuzz` and .ci/run. Needs clang (scripts/install-deps.sh fuzz installs it).
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${FUZZ_SECONDS:-30}
build=build-fuzz
CC=clang cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Debug -DSTOKER_FUZZ=ON -DBUILD_TESTING=OFF >/dev/null
cmake --build "$build" -j "$(nproc)" >/dev/null
mkdir -p "$build/artifacts"
status=0
for target in "$build"/fuzz/fuzz_*; do
  name=$(basename "$target")
  corpus=$(mktemp -d)
  seeds="tests/fuzz/corpus/${name#fuzz_}"
  [ -d "$seeds" ] && cp -r "$seeds"/. "$corpus"/
  printf 'fuzz: %-24s %3s s ... ' "$name" "$seconds"
  if "$target" -max_total_time="$seconds" -timeout="${FUZZ_INPUT_TIMEOUT:-10}" -rss_limit_mb=4096 \
      -artifact_prefix="$build/artifacts/$name-" -print_final_stats=1 "$corpus" >"$build/$name.log" 2>&1; then
    echo "ok ($(grep -m1 -o 'stat::number_of_executed_units: *[0-9]*' "$build/$name.log" | grep -o '[0-9]*$') inputs)"
  else
    echo "FAILED (log: $build/$name.log)"
    tail -30 "$build/$name.log"
    status=1
  fi
  rm -rf "$corpus"
done
exit $status
