#!/usr/bin/env bash
# tests/cli_topo.sh: `stoker topo` on generated trees: the table, the JSON, bad input.
source "$STOKER_SOURCE_DIR/tests/fixtures/lib.sh"

run_cli topo --sysfs-root "$FX/dgx-2s20c2t-8gpu"
expect_eq "topo rc" "$RC" 0
expect_contains "gpu line" "$OUT" "  0    0000:07:00.0   0     0-19,40-59"
expect_contains "gpu line" "$OUT" "  7    0000:bd:00.0   1     20-39,60-79"
expect_contains "nodes" "$OUT" "node 1   CPUs 20-39,60-79"
expect_contains "sockets" "$OUT" "socket 0   CPUs 0-19,40-59"
expect_contains "cores" "$OUT" "Cores: 40 physical x 2 threads = 80 CPUs online (0-79)"
expect_contains "allowed" "$OUT" "Allowed CPUs: 0-79 (all online CPUs)"

run_cli topo --sysfs-root "$FX/restricted-dgx"
expect_contains "restricted" "$OUT" "Allowed CPUs: 0-9,20-24,40-49,60-64 (30 of 80"

run_cli topo --sysfs-root "$FX/smt4-2s4c4t-3gpu"
expect_contains "smt4 cores" "$OUT" "Cores: 8 physical x 4 threads = 32 CPUs online"
expect_contains "smt4 node 8" "$OUT" "node 8   CPUs 16-31"

run_cli topo --sysfs-root "$FX/vm-1s16-1gpu"
expect_contains "unknown node marked" "$OUT" "0000:00:05.0   0?"
expect_contains "unknown node explained" "$OUT" "numa_node is -1"

run_cli topo --json --sysfs-root "$FX/mixed-unknown-2s8c"
expect_eq "topo json rc" "$RC" 0
expect_eq "topo json" "$OUT" '{"cpus_online":[0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15],"allowed_cpus":[0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15],"numa_nodes":[{"id":0,"cpus":[0,1,2,3,8,9,10,11]},{"id":1,"cpus":[4,5,6,7,12,13,14,15]}],"sockets":[{"id":0,"cpus":[0,1,2,3,8,9,10,11]},{"id":1,"cpus":[4,5,6,7,12,13,14,15]}],"gpus":[{"index":0,"pci_bus_id":"0000:17:00.0","numa_node_raw":0,"numa_node":0,"local_cpus":[0,1,2,3,8,9,10,11]},{"index":1,"pci_bus_id":"0000:65:00.0","numa_node_raw":-1,"numa_node":0,"local_cpus":[0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15]},{"index":2,"pci_bus_id":"0000:b3:00.0","numa_node_raw":1,"numa_node":1,"local_cpus":[4,5,6,7,12,13,14,15]}]}'
if command -v python3 >/dev/null; then
  run_cli topo --json --sysfs-root "$FX/nps4-2s64c2t-8gpu"
  CHECKS=$((CHECKS + 1))
  python3 -c 'import json,sys; d=json.load(sys.stdin); assert len(d["gpus"])==8 and len(d["numa_nodes"])==8 and len(d["cpus_online"])==256' <<<"$OUT" || fail "nps4 json does not parse or has the wrong shape"
fi

# The live machine: works, whatever it has.
run_cli topo
expect_eq "live topo rc" "$RC" 0
expect_contains "live topo" "$OUT" "Allowed CPUs:"
run_cli topo --json
expect_contains "live json" "$OUT" '"cpus_online":['

run_cli topo --help
expect_eq "help rc" "$RC" 0
expect_contains "help" "$OUT" "usage: stoker topo"

expect_error "missing root" "cannot open sysfs root $FX/nope" topo --sysfs-root "$FX/nope"
mkdir -p "$FX/empty"
expect_error "empty root" "sys/devices/system/cpu/online" topo --sysfs-root "$FX/empty"
expect_error "no value" "--sysfs-root needs a directory" topo --sysfs-root
expect_error "unknown arg" "unknown argument '--frobnicate'" topo --frobnicate
finish
