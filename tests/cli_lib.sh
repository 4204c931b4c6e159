# tests/cli_lib.sh: the shared start of the CLI test scripts (sourced, not run): $cli (the stoker
# binary, from STOKER_CLI), $tmp (a scratch folder removed on exit), $fail and check NAME EXPR,
# which prints "ok   NAME" or "FAIL NAME" and sets fail=1; each script ends with `exit $fail`.
cli=${STOKER_CLI:?set STOKER_CLI to the stoker binary}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
check() { if eval "$2"; then echo "ok   $1"; else echo "FAIL $1"; fail=1; fi; }
