#!/usr/bin/env bash
# tests/cli_plan.sh: `stoker plan` on generated trees: table, JSON, --gpu, --allowed-cpus,
# failing ranks (exit 1, "error" in JSON) and bad input (one-line error, exit 2).
source "$STOKER_SOURCE_DIR/tests/fixtures/lib.sh"
DGX="$FX/dgx-2s20c2t-8gpu"

run_cli plan --nproc-per-node 8 --sysfs-root "$DGX"
expect_eq "plan rc" "$RC" 0
expect_contains "header" "$OUT" "plan: 8 rank(s) per node, mode socket_unique_contiguous, cores all_logical, balanced, allowed CPUs 0-79"
expect_contains "rank 0" "$OUT" "0     0000:07:00.0   0     10     0-4,40-44"
expect_contains "rank 7" "$OUT" "7     0000:bd:00.0   1     10     35-39,75-79"

run_cli plan --nproc-per-node 8 --mode socket_unique_interleaved --cores single_logical --json --sysfs-root "$DGX"
expect_eq "interleaved json" "$OUT" '{"nproc_per_node":8,"mode":"socket_unique_interleaved","cores":"single_logical","balanced":true,"ranks":[{"gpu":0,"cpus":[0,4,8,12,16]},{"gpu":1,"cpus":[1,5,9,13,17]},{"gpu":2,"cpus":[2,6,10,14,18]},{"gpu":3,"cpus":[3,7,11,15,19]},{"gpu":4,"cpus":[20,24,28,32,36]},{"gpu":5,"cpus":[21,25,29,33,37]},{"gpu":6,"cpus":[22,26,30,34,38]},{"gpu":7,"cpus":[23,27,31,35,39]}]}'

run_cli plan --nproc-per-node=8 --gpu=5 --mode socket_single --json --sysfs-root "$DGX"
expect_eq "one gpu" "$OUT" '{"nproc_per_node":8,"mode":"socket_single","cores":"all_logical","balanced":true,"ranks":[{"gpu":5,"cpus":[20,60]}]}'

run_cli plan --nproc-per-node 8 --unbalanced --json --sysfs-root "$FX/restricted-dgx"
expect_eq "restricted unbalanced" "$OUT" '{"nproc_per_node":8,"mode":"socket_unique_contiguous","cores":"all_logical","balanced":false,"ranks":[{"gpu":0,"cpus":[0,1,40,41]},{"gpu":1,"cpus":[2,3,42,43]},{"gpu":2,"cpus":[4,5,44,45]},{"gpu":3,"cpus":[6,7,46,47]},{"gpu":4,"cpus":[20,60]},{"gpu":5,"cpus":[21,61]},{"gpu":6,"cpus":[22,62]},{"gpu":7,"cpus":[23,63]}]}'

run_cli plan --nproc-per-node 2 --mode none --allowed-cpus 3-5 --json --sysfs-root "$DGX"
expect_eq "mode none" "$OUT" '{"nproc_per_node":2,"mode":"none","cores":"all_logical","balanced":true,"ranks":[{"gpu":0,"cpus":[3,4,5]},{"gpu":1,"cpus":[3,4,5]}]}'

# A rank that cannot be planned: error in the JSON, exit 1; the other ranks keep their plan.
run_cli plan --nproc-per-node 8 --allowed-cpus 0-19,40-59 --json --sysfs-root "$DGX"
expect_eq "failing rank rc" "$RC" 1
expect_contains "failing rank json" "$OUT" '{"gpu":0,"cpus":[0,1,2,3,4,40,41,42,43,44]}'
expect_contains "failing rank json" "$OUT" '{"gpu":4,"error":"GPU 4: none of its local CPUs (20-39,60-79) is in the allowed set (0-19,40-59)"}'
run_cli plan --nproc-per-node 8 --allowed-cpus 0-19,40-59 --sysfs-root "$DGX"
expect_eq "failing rank table rc" "$RC" 1
expect_contains "failing rank table" "$OUT" "error: GPU 6: none of its local CPUs"

run_cli plan --nproc-per-node 3 --json --sysfs-root "$FX/smt4-2s4c4t-3gpu"
expect_eq "smt4" "$OUT" '{"nproc_per_node":3,"mode":"socket_unique_contiguous","cores":"all_logical","balanced":true,"ranks":[{"gpu":0,"cpus":[0,1,2,3,4,5,6,7]},{"gpu":1,"cpus":[8,9,10,11,12,13,14,15]},{"gpu":2,"cpus":[16,17,18,19,20,21,22,23]}]}'

# torchrun's modes: stoker's rules by default, torch's on request; CUDA_VISIBLE_DEVICES remaps.
NPS1="$FX/epyc-nps1-2s64c2t-8gpu"
run_cli plan --nproc-per-node 2 --numa-binding exclusive --json --sysfs-root "$NPS1"
expect_eq "numa exclusive" "$OUT" '{"nproc_per_node":2,"numa_binding":"exclusive","rules":"stoker","ranks":[{"rank":0,"gpu":0,"cpus":[0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31,128,129,130,131,132,133,134,135,136,137,138,139,140,141,142,143,144,145,146,147,148,149,150,151,152,153,154,155,156,157,158,159],"memory_node":0},{"rank":1,"gpu":1,"cpus":[32,33,34,35,36,37,38,39,40,41,42,43,44,45,46,47,48,49,50,51,52,53,54,55,56,57,58,59,60,61,62,63,160,161,162,163,164,165,166,167,168,169,170,171,172,173,174,175,176,177,178,179,180,181,182,183,184,185,186,187,188,189,190,191],"memory_node":0}]}'
run_cli plan --nproc-per-node 2 --numa-binding exclusive --numa-rules torch --sysfs-root "$NPS1"
expect_contains "numa torch header" "$OUT" "plan: 2 rank(s) per node, numa-binding exclusive, torch rules, allowed CPUs 0-255"
expect_contains "numa torch rank 1" "$OUT" "1    1    0000:02:00.0   0     32     16-31,144-159 (memory node 0)"
OUT=$(CUDA_VISIBLE_DEVICES=7,0 "$STOKER" plan --nproc-per-node 2 --numa-binding core-complex --sysfs-root "$NPS1" 2>&1)
expect_contains "visible remap rank 0" "$OUT" "0    7    0000:e1:00.0   1     16     64-71,192-199 (memory node 1)"
expect_contains "visible remap rank 1" "$OUT" "1    0    0000:01:00.0   0     16     0-7,128-135 (memory node 0)"
OUT=$(CUDA_VISIBLE_DEVICES=GPU-3e5c0d13 "$STOKER" plan --nproc-per-node 1 --numa-binding node --json --sysfs-root "$NPS1" 2>&1)
expect_contains "visible uuid" "$OUT" '{"rank":0,"gpu":3,'
run_cli plan --nproc-per-node 4 --numa-binding node --sysfs-root "$FX/gb200-2s72c-4gpu"
expect_contains "gb200 memory-only node" "$OUT" "3    3    0019:01:00.0   5     72     72-143 (memory node 1)"
expect_contains "gb200 note" "$OUT" "note: node 5 has no allowed CPUs (memory-only, or outside the cpuset): CPUs of the nearest node 1"
run_cli plan --nproc-per-node 4 --numa-binding socket --numa-rules torch --sysfs-root "$FX/gb200-2s72c-4gpu"
expect_eq "torch socket fails rc" "$RC" 1
expect_contains "torch socket fails" "$OUT" "error: GPU 0: possible node 2 has no allowed CPUs"
expect_error "numa and mode" "--mode and --numa-binding exclude each other" plan --nproc-per-node 1 --mode socket --numa-binding node --sysfs-root "$NPS1"
expect_error "unknown numa mode" "unknown --numa-binding 'sockets' (node, socket, exclusive, core-complex)" plan --nproc-per-node 1 --numa-binding sockets
expect_error "unknown rules" "unknown --numa-rules 'numactl'" plan --nproc-per-node 1 --numa-binding node --numa-rules numactl
OUT=$(CUDA_VISIBLE_DEVICES=MIG-abc "$STOKER" plan --nproc-per-node 1 --numa-binding node --sysfs-root "$NPS1" 2>&1)
expect_contains "mig refused" "$OUT" "is a MIG instance"

run_cli plan --help
expect_eq "help rc" "$RC" 0
expect_contains "help" "$OUT" "usage: stoker plan --nproc-per-node N"

expect_error "unknown mode" "unknown mode 'sockets'" plan --nproc-per-node 2 --mode sockets --sysfs-root "$DGX"
expect_error "unknown cores" "unknown --cores 'all'" plan --nproc-per-node 2 --cores all --sysfs-root "$DGX"
expect_error "gpu out of range" "--gpu 4 is out of range" plan --nproc-per-node 4 --gpu 4 --sysfs-root "$DGX"
expect_error "nproc too big" "nproc_per_node 9 is larger than the GPU count 8" plan --nproc-per-node 9 --sysfs-root "$DGX"
expect_error "nproc missing" "--nproc-per-node N is required" plan --sysfs-root "$DGX"
expect_error "nproc zero" "--nproc-per-node must be at least 1" plan --nproc-per-node 0 --sysfs-root "$DGX"
expect_error "nproc text" "--nproc-per-node wants a non-negative integer, got 'eight'" plan --nproc-per-node eight --sysfs-root "$DGX"
expect_error "no gpu" "no GPU found" plan --nproc-per-node 1 --sysfs-root "$FX/nonuma-4cpu-nogpu"
expect_error "bad sysfs root" "cannot open sysfs root" plan --nproc-per-node 1 --sysfs-root "$FX/missing"
expect_error "bad cpulist" "malformed cpulist \"3-x\"" plan --nproc-per-node 1 --allowed-cpus 3-x --sysfs-root "$DGX"
expect_error "backwards cpulist" "\"5-1\"" plan --nproc-per-node 1 --allowed-cpus 5-1 --sysfs-root "$DGX"
expect_error "offline allowed" "none of the allowed CPUs (100-120) is online" plan --nproc-per-node 1 --allowed-cpus 100-120 --sysfs-root "$DGX"
expect_error "missing value" "--mode needs a value" plan --nproc-per-node 1 --mode

# Recorded machines shipped in the binary: plan and topo work on any machine with --example.
run_cli plan --nproc-per-node 8 --example dgx-h100
expect_eq "example dgx-h100 rc" "$RC" 0
expect_contains "example dgx-h100 rank 7" "$OUT" "98-111,210-223"
run_cli plan --nproc-per-node 8 --numa-binding node --example epyc-nps4
expect_eq "example epyc-nps4 rc" "$RC" 0
expect_contains "example epyc-nps4 node 7" "$OUT" "112-127,240-255"
run_cli topo --example vm-2gpu
expect_eq "example topo rc" "$RC" 0
expect_error "unknown example" "no recorded machine 'dgx-a1'; the examples are" plan --nproc-per-node 1 --example dgx-a1
finish
