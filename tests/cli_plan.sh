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
finish
