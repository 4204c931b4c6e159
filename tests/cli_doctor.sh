#!/usr/bin/env bash
# tests/cli_doctor.sh: `stoker doctor` on recorded trees (NUMA balancing on, low memlock,
# restricted cpuset, GPU numa_node -1, CPUs vs GPU) and on this live host, plus bad input.
source "$STOKER_SOURCE_DIR/tests/fixtures/lib.sh"

run_cli doctor --sysfs-root "$FX/restricted-dgx" --gpu 4
expect_eq "doctor rc" "$RC" 0
expect_contains "nodes" "$OUT" "OK    numa_nodes      2 NUMA nodes"
expect_contains "gpu nodes known" "$OUT" "OK    gpu_numa_node   8 GPU(s), every one with a known NUMA node"
expect_contains "balancing" "$OUT" "WARN  numa_balancing  kernel NUMA auto-balancing is on"
expect_contains "memlock" "$OUT" "WARN  memlock         locked-memory limit (ulimit -l) is 64 KiB"
expect_contains "cpuset" "$OUT" "INFO  cpuset          the process may use CPUs 0-9,20-24,40-49,60-64 (30 of 80 online)"
expect_contains "gpu cpus" "$OUT" "WARN  gpu_cpus        only 10 of the process's 30 CPUs (0-9,20-24,40-49,60-64) are local to GPU 4"

run_cli doctor --sysfs-root "$FX/vm-1s16-1gpu"
expect_contains "single node" "$OUT" "INFO  numa_nodes      single NUMA node"
expect_contains "numa -1" "$OUT" "WARN  gpu_numa_node   GPU 0 (0000:00:05.0): sysfs numa_node is -1"

OUT=$(LOCAL_RANK=0 "$STOKER" doctor --sysfs-root "$FX/dgx-2s20c2t-8gpu" --json)
expect_contains "json" "$OUT" '{"pid":0,"gpu":0,"checks":[{"level":"OK","check":"numa_nodes"'
expect_contains "json gpu from LOCAL_RANK" "$OUT" '"level":"WARN","check":"gpu_cpus","message":"only 40 of the process'"'"'s 80 CPUs'
if command -v python3 >/dev/null; then
  CHECKS=$((CHECKS + 1))
  python3 -c 'import json,sys; d=json.load(sys.stdin); assert all(c["level"] in ("OK","WARN","INFO") for c in d["checks"])' <<<"$OUT" || fail "doctor json does not parse"
fi

# Live: this process, then another process bound to CPU 0 (checked through --pid).
run_cli doctor
expect_eq "live rc" "$RC" 0
expect_contains "live cpuset" "$OUT" "cpuset"
expect_contains "live pages" "$OUT" "memory_pages"
if [[ $(nproc) -ge 2 ]]; then
  "$STOKER" bind --quiet --gpu 0 --sysfs-root "$FX/live-2cpu-2gpu" -- sleep 30 &
  BOUND=$!
  sleep 0.5
  run_cli doctor --pid "$BOUND"
  expect_contains "bound pid cpuset" "$OUT" "the process may use CPUs 0 (1 of"
  kill "$BOUND"
  wait "$BOUND" 2>/dev/null
fi

# --all-ranks: two ranks of one torchrun job started here, rank 0 on its GPU's CPU, rank 1 bound
# to the wrong CPU (GPU 0's); a process of another job and a rank's own child are not listed.
if [[ $(nproc) -ge 2 ]]; then
  LIVE="$FX/live-2cpu-2gpu"
  JOB="stoker-test-$$"
  TORCHELASTIC_RUN_ID=$JOB LOCAL_RANK=0 "$STOKER" bind --quiet --gpu 0 --sysfs-root "$LIVE" -- sleep 30 &
  RANK0=$!
  TORCHELASTIC_RUN_ID=$JOB LOCAL_RANK=1 "$STOKER" bind --quiet --gpu 0 --sysfs-root "$LIVE" -- sh -c 'sleep 30 & wait' &
  RANK1=$!
  TORCHELASTIC_RUN_ID=other-$$ LOCAL_RANK=0 sleep 30 &
  OTHER=$!
  sleep 1
  OUT=$(TORCHELASTIC_RUN_ID=$JOB "$STOKER" doctor --all-ranks --sysfs-root "$LIVE")
  expect_contains "rank 0 on node" "$OUT" "OK    rank 0 (pid $RANK0, GPU 0 0000:01:00.0, node 0): CPUs allowed 0 (node 0); 1 thread(s) last ran on 0"
  expect_contains "rank 1 off node" "$OUT" "WARN  rank 1 (pid $RANK1, 1 worker process(es), GPU 1 0000:02:00.0, node 0): CPUs allowed 0"
  expect_contains "rank 1 verdict" "$OUT" "runs off GPU 1's CPUs 1"
  expect_contains "summary" "$OUT" "WARN  2 rank(s), 1 off their GPU's node"
  [[ "$OUT" == *"pid $OTHER"* ]] && fail "another job's process listed as a rank"
  run_cli doctor --all-ranks --job "torchelastic:$JOB" --json --sysfs-root "$LIVE"
  expect_contains "json rank" "$OUT" "{\"pid\":$RANK0,\"local_rank\":0,\"gpu\":0,\"pci_bus_id\":\"0000:01:00.0\",\"gpu_node\":0,\"cpus_allowed\":\"0\""
  expect_contains "json off node" "$OUT" '"off_node":true'
  if command -v python3 >/dev/null; then
    CHECKS=$((CHECKS + 1))
    python3 -c 'import json,sys; d=json.load(sys.stdin); assert len(d["ranks"]) == 2' <<<"$OUT" || fail "all-ranks json"
  fi
  # Under a launcher pid every descendant with a local rank counts, whatever its job: the test
  # shell started all three (OTHER has all CPUs, so it runs off GPU 0's CPU 0 too).
  run_cli doctor --all-ranks --launcher-pid $$ --sysfs-root "$LIVE"
  expect_contains "launcher pid" "$OUT" "3 rank(s), 2 off their GPU's node"
  expect_contains "launcher pid lists other" "$OUT" "pid $OTHER,"
  WORKER=$(cat /proc/"$RANK1"/task/*/children 2>/dev/null)
  # shellcheck disable=SC2086
  kill "$RANK0" "$RANK1" "$OTHER" $WORKER 2>/dev/null
  wait 2>/dev/null
fi
run_cli doctor --all-ranks --job torchelastic:nobody-$$
expect_contains "no ranks" "$OUT" "INFO  no running rank of job torchelastic:nobody-$$ found"
expect_error "all-ranks without job" "--all-ranks: no job here" doctor --all-ranks
expect_error "job without all-ranks" "--job and --launcher-pid go with --all-ranks" doctor --job x

run_cli doctor --help
expect_eq "help rc" "$RC" 0
expect_contains "help" "$OUT" "usage: stoker doctor"

expect_error "gpu out of range" "GPU 9 (from --gpu) is out of range: 8 GPU(s)" doctor --gpu 9 --sysfs-root "$FX/dgx-2s20c2t-8gpu"
expect_error "no such pid" "no process 2147483" doctor --pid 2147483
expect_error "bad pid" "--pid wants a non-negative integer, got 'abc'" doctor --pid abc
expect_error "bad root" "cannot open sysfs root" doctor --sysfs-root "$FX/missing"
expect_error "unknown arg" "unknown argument '--all'" doctor --all
finish
