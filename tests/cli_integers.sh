#!/usr/bin/env bash
# tests/cli_integers.sh: `stoker bench`'s numeric options go through one strict parser (src/cli/
# main.c): a value that does not fit the option's type is an error naming the option and the
# range, never truncated (--batch 4294967298 once ran with batch 2) or saturated (--seed -1 and
# 23-digit seeds once became 2^64-1); the largest seed is accepted. Exit status 2 for a usage error.
set -u
. "$(dirname "$0")/cli_lib.sh"

"$cli" datagen "$tmp/data" --count 8 --classes 2 >/dev/null || { echo "FAIL datagen"; exit 1; }
refused() { # OPTION VALUE WORDS: exit 2, the option and WORDS in the message, nothing run
  "$cli" bench --data "$tmp/data" --seconds 0.01 --warmup 0 "$1" "$2" >"$tmp/out" 2>"$tmp/err"
  local rc=$?
  [ $rc = 2 ] && grep -q -- "$1" "$tmp/err" && grep -q -- "$3" "$tmp/err" && ! grep -q images/s "$tmp/out"
}
for opt in --batch --threads --epochs --checkpoint-every --prefetch; do
  check "$opt 4294967298 is out of range" 'refused '"$opt"' 4294967298 "out of range"'
  check "$opt 99999999999999999999999 is out of range" 'refused '"$opt"' 99999999999999999999999 "out of range"'
  check "$opt 3x is not an integer" 'refused '"$opt"' 3x "not an integer"'
done
check "--batch 0 is out of range" 'refused --batch 0 "out of range (1 to"'
check "--checkpoint-every -1 is out of range" 'refused --checkpoint-every -1 "out of range"'
check "--seed -1 is refused, naming the range" 'refused --seed -1 "0 to 18446744073709551615"'
check "--seed of 23 digits is out of range" 'refused --seed 12345678901234567890123 "out of range"'
check "--seed 18446744073709551616 is out of range" 'refused --seed 18446744073709551616 "out of range"'
check "--seed +5 is refused" 'refused --seed +5 "not an unsigned integer"'
check "--seconds nan is refused" 'refused --seconds nan "not a number"'
check "--warmup inf is refused" 'refused --warmup inf "not a number"'
"$cli" bench --data "$tmp/data" --seconds 0.01 --warmup 0 --batch 2 --threads 1 --seed 18446744073709551615 \
  >"$tmp/out" 2>&1
check "--seed 18446744073709551615 runs with that seed" 'grep -q "seed 18446744073709551615" "$tmp/out"'
exit $fail
