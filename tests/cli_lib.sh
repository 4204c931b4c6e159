# tests/cli_lib.sh: the shared start of the CLI test scripts (sourced, not run): $cli (the stoker
# binary, from STOKER_CLI), $tmp (a scratch folder removed on exit), $fail and check NAME EXPR,
# which prints "ok   NAME" or "FAIL NAME" and sets fail=1; each script ends with `exit $fail`.
cli=${STOKER_CLI:?set STOKER_CLI to the stoker binary}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
check() { if eval "$2"; then echo "ok   $1"; else echo "FAIL $1"; fail=1; fi; }
# ckpt_reseal FILE: recomputes the checksum line of the checkpoint FILE in place (FNV-1a-64 of
# every byte before it, docs/checkpoint.md), so a test that forges a field reaches that field's
# check rather than the checksum's.
ckpt_reseal() {
  local body h=$((0xcbf29ce484222325)) b
  body=$(grep -v '^checksum=' "$1"; echo x)
  body=${body%x}
  for b in $(printf '%s' "$body" | od -An -v -tu1); do h=$(((h ^ b) * 0x100000001b3)); done
  { printf '%s' "$body"; printf 'checksum=%016x\n' "$h"; } >"$1.sealed" && mv "$1.sealed" "$1"
}
