#!/usr/bin/env bash
# tests/cli_bind.sh: `stoker bind`: ranks from --gpu, torchrun, Slurm and Open MPI variables;
# a real bind on this machine (live-2cpu-2gpu describes a 2-CPU host) checked by a child that
# reports its own Cpus_allowed_list; dry runs on the big trees; bad input.
source "$STOKER_SOURCE_DIR/tests/fixtures/lib.sh"
DGX="$FX/dgx-2s20c2t-8gpu"
LIVE="$FX/live-2cpu-2gpu"
REPORT=(sh -c 'grep Cpus_allowed_list: /proc/self/status | tr -d "\t" ; echo "args=$*"' reporter a1 a2)

# Dry runs: which rank each launcher's variables select.
run_cli bind --gpu 3 --dry-run --sysfs-root "$DGX" -- python train.py
expect_eq "dry run rc" "$RC" 0
expect_contains "dry run line" "$ERR" "[dry run] GPU 3 (0000:4e:00.0, node 0): CPUs 15-19,55-59 (socket_unique_contiguous, all_logical), memory preferred on node 0 (rank 3 of 8 from --gpu) -> python"
OUT=$(LOCAL_RANK=5 LOCAL_WORLD_SIZE=8 "$STOKER" bind --dry-run --sysfs-root "$DGX" -- python 2>&1)
expect_contains "torchrun" "$OUT" "GPU 5 (0000:90:00.0, node 1): CPUs 25-29,65-69"
expect_contains "torchrun source" "$OUT" "(rank 5 of 8 from LOCAL_RANK)"
OUT=$(SLURM_LOCALID=2 SLURM_NTASKS_PER_NODE=4 "$STOKER" bind --dry-run --membind --sysfs-root "$DGX" -- python 2>&1)
expect_contains "slurm" "$OUT" "GPU 2 (0000:47:00.0, node 0): CPUs 10-14,50-54"
expect_contains "slurm membind" "$OUT" "memory bound to node 0 (rank 2 of 4 from SLURM_LOCALID)"
OUT=$(SLURM_LOCALID=1 SLURM_TASKS_PER_NODE="2(x4)" "$STOKER" bind --dry-run --sysfs-root "$DGX" -- python 2>&1)
expect_contains "slurm tasks per node" "$OUT" "GPU 1 (0000:0f:00.0, node 0): CPUs 10-19,50-59 (socket_unique_contiguous, all_logical), memory preferred on node 0 (rank 1 of 2 from SLURM_LOCALID)"
OUT=$(OMPI_COMM_WORLD_LOCAL_RANK=7 OMPI_COMM_WORLD_LOCAL_SIZE=8 "$STOKER" bind --dry-run --mode socket --cores single_logical --sysfs-root "$DGX" -- python 2>&1)
expect_contains "open mpi" "$OUT" "GPU 7 (0000:bd:00.0, node 1): CPUs 20-39 (socket, single_logical)"
run_cli bind --gpu 0 --dry-run --sysfs-root "$FX/vm-1s16-1gpu" -- python
expect_contains "unknown node: no memory guess" "$ERR" "memory policy left alone (GPU NUMA node unknown)"

# Real binds here: the child reports its own affinity.
if [[ $(nproc) -lt 2 ]]; then
  echo "SKIP: this host has fewer than 2 usable CPUs; the real-bind checks need CPUs 0 and 1"
  finish || exit 1
  exit 77
fi
run_cli bind --gpu 1 --sysfs-root "$LIVE" -- "${REPORT[@]}"
expect_eq "bind gpu 1 rc" "$RC" 0
expect_eq "bind gpu 1" "$OUT" "$(printf 'Cpus_allowed_list:1\nargs=a1 a2')"
expect_contains "one line on stderr" "$ERR" "GPU 1 (0000:02:00.0, node 0): CPUs 1"
expect_eq "bind stderr lines" "$(printf '%s\n' "$ERR" | wc -l)" 1
OUT=$(LOCAL_RANK=0 LOCAL_WORLD_SIZE=2 "$STOKER" bind --quiet --membind --sysfs-root "$LIVE" -- "${REPORT[@]}" 2>"$FX/quiet.err")
expect_eq "bind via LOCAL_RANK" "$OUT" "$(printf 'Cpus_allowed_list:0\nargs=a1 a2')"
expect_eq "quiet" "$(cat "$FX/quiet.err")" ""
OUT=$("$STOKER" bind --gpu 0 --mode none --quiet --sysfs-root "$LIVE" -- "${REPORT[@]}" 2>&1)
expect_eq "mode none leaves affinity" "$OUT" "$(printf 'Cpus_allowed_list:%s\nargs=a1 a2' "$(grep Cpus_allowed_list: /proc/self/status | cut -f2)")"
run_cli bind --gpu 0 --quiet --sysfs-root "$LIVE" -- sh -c 'exit 7'
expect_eq "exit status of the command" "$RC" 7

# --numa-binding under a launcher: LOCAL_RANK through CUDA_VISIBLE_DEVICES, bound for real.
if [[ $(nproc) -ge 2 ]]; then
  OUT=$(LOCAL_RANK=1 LOCAL_WORLD_SIZE=2 CUDA_VISIBLE_DEVICES=1,0 "$STOKER" bind --numa-binding exclusive --quiet \
    --sysfs-root "$LIVE" -- grep Cpus_allowed_list: /proc/self/status 2>&1)
  expect_eq "numa exclusive binds rank 1" "$OUT" "$(printf 'Cpus_allowed_list:\t1')"
fi
OUT=$(LOCAL_RANK=0 CUDA_VISIBLE_DEVICES=1 "$STOKER" bind --numa-binding node --dry-run --sysfs-root "$LIVE" -- true 2>&1)
expect_contains "numa dry run" "$OUT" "stoker bind: [dry run] GPU 1 (0000:02:00.0, node 0): CPUs 0-1 (numa-binding node, stoker rules), memory preferred on node 0 (rank 0 of 1 from LOCAL_RANK)"
OUT=$(LOCAL_RANK=3 CUDA_VISIBLE_DEVICES=0,1 "$STOKER" bind --numa-binding node --sysfs-root "$LIVE" -- true 2>&1)
expect_contains "numa rank out of range" "$OUT" "local rank 3 (from LOCAL_RANK) is out of range: 2 process(es) per node, 2 visible GPU(s)"

run_cli bind --help
expect_eq "help rc" "$RC" 0
expect_contains "help" "$OUT" "LOCAL_RANK / LOCAL_WORLD_SIZE"

expect_error "no command" "no command" bind --gpu 0 --sysfs-root "$LIVE"
expect_error "no command after --" "no command" bind --gpu 0 --sysfs-root "$LIVE" --
expect_error "no rank" "no --gpu and no launcher rank" bind --sysfs-root "$LIVE" -- true
expect_error "gpu out of range" "GPU 2 (from --gpu) is out of range" bind --gpu 2 --sysfs-root "$LIVE" -- true
expect_error "unknown mode" "unknown mode 'fast'" bind --gpu 0 --mode fast --sysfs-root "$LIVE" -- true
expect_error "policy conflict" "exclude each other" bind --gpu 0 --membind --no-membind --sysfs-root "$LIVE" -- true
expect_error "unplannable" "none of its local CPUs (1) is in the allowed set (0)" bind --gpu 1 --allowed-cpus 0 --sysfs-root "$LIVE" -- true
expect_error "no gpu" "no GPU found" bind --gpu 0 --sysfs-root "$FX/nonuma-4cpu-nogpu" -- true
expect_error "missing program" "cannot run 'no-such-program-xyz'" bind --gpu 0 --quiet --sysfs-root "$LIVE" -- no-such-program-xyz
expect_eq "missing program rc" "$RC" 127
expect_error "cpus not on this host" "cannot set CPU affinity to 35-39,75-79" bind --gpu 7 --sysfs-root "$DGX" -- true
finish
