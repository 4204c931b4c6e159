#!/usr/bin/env bash
# tests/cli_launch.sh: `stoker launch` on this 2-CPU host (live-2cpu-2gpu): each child reports
# its own affinity and torchrun-style environment; first failure stops the others; signals are
# forwarded; bad input.
source "$STOKER_SOURCE_DIR/tests/fixtures/lib.sh"
LIVE="$FX/live-2cpu-2gpu"
if [[ $(nproc) -lt 2 ]]; then
  echo "SKIP: this host has fewer than 2 usable CPUs; launch binds ranks to CPUs 0 and 1"
  exit 77
fi

run_cli launch --nproc-per-node 2 --sysfs-root "$LIVE" -- sh -c \
  'echo "rank=$RANK local=$LOCAL_RANK world=$WORLD_SIZE lws=$LOCAL_WORLD_SIZE addr=$MASTER_ADDR port=$MASTER_PORT $(grep Cpus_allowed_list: /proc/self/status | tr -d "\t")"'
expect_eq "launch rc" "$RC" 0
SORTED=$(printf '%s\n' "$OUT" | sort | sed 's/port=[0-9]*/port=P/')
expect_eq "children" "$SORTED" "$(printf 'rank=0 local=0 world=2 lws=2 addr=127.0.0.1 port=P Cpus_allowed_list:0\nrank=1 local=1 world=2 lws=2 addr=127.0.0.1 port=P Cpus_allowed_list:1')"
PORTS=$(printf '%s\n' "$OUT" | grep -o 'port=[0-9]*' | sort -u | wc -l)
expect_eq "one MASTER_PORT for all" "$PORTS" 1
expect_contains "per-rank line" "$ERR" "stoker launch: rank 1: GPU 1 (0000:02:00.0, node 0): CPUs 1"

# The first failure stops the others (which would otherwise sleep 60 s) and names the rank.
START=$(date +%s)
run_cli launch --quiet --nproc-per-node 2 --sysfs-root "$LIVE" -- sh -c 'if [ "$RANK" = 1 ]; then exit 3; fi; exec sleep 60'
ELAPSED=$(($(date +%s) - START))
expect_eq "failure rc" "$RC" 3
expect_contains "failure message" "$ERR" "rank 1 (GPU 1) exited with status 3; stopping the others"
CHECKS=$((CHECKS + 1))
[[ $ELAPSED -lt 20 ]] || fail "the surviving rank was not stopped (took ${ELAPSED}s)"

# A rank killed by a signal: 128 + signal.
run_cli launch --quiet --nproc-per-node 1 --sysfs-root "$LIVE" -- sh -c 'kill -9 $$'
expect_eq "signal rc" "$RC" 137
expect_contains "signal message" "$ERR" "rank 0 (GPU 0) was killed by signal 9"

# SIGTERM to launch reaches the children.
"$STOKER" launch --quiet --nproc-per-node 2 --sysfs-root "$LIVE" -- sh -c 'trap "echo got-term-\$RANK >>'"$FX"'/terms; kill \$!; exit 0" TERM; sleep 60 & wait' &
LAUNCH_PID=$!
for _ in $(seq 50); do
  [[ $(pgrep -c -P "$LAUNCH_PID" 2>/dev/null || echo 0) -ge 2 ]] && break
  sleep 0.1
done
sleep 0.3
kill -TERM "$LAUNCH_PID"
wait "$LAUNCH_PID"
expect_eq "forwarded rc" "$?" 0
expect_eq "children got SIGTERM" "$(sort "$FX/terms" 2>/dev/null | tr '\n' ' ')" "got-term-0 got-term-1 "

run_cli launch --help
expect_eq "help rc" "$RC" 0
expect_contains "help" "$OUT" "MASTER_ADDR=127.0.0.1"

expect_error "nproc missing" "--nproc-per-node N is required" launch --sysfs-root "$LIVE" -- true
expect_error "no command" "no command" launch --nproc-per-node 2 --sysfs-root "$LIVE"
expect_error "too many" "nproc_per_node 3 is larger than the GPU count 2" launch --nproc-per-node 3 --sysfs-root "$LIVE" -- true
expect_error "gpu option" "--gpu is not a launch option" launch --nproc-per-node 2 --gpu 1 --sysfs-root "$LIVE" -- true
expect_error "unplannable" "GPU 1: none of its local CPUs (1) is in the allowed set (0)" launch --nproc-per-node 2 --allowed-cpus 0 --sysfs-root "$LIVE" -- true
expect_error "unknown argument" "unknown argument 'true'" launch --nproc-per-node 2 --sysfs-root "$LIVE" true
run_cli launch --quiet --nproc-per-node 1 --sysfs-root "$LIVE" -- no-such-program-xyz
expect_eq "missing program rc" "$RC" 127
expect_contains "missing program" "$ERR" "cannot run 'no-such-program-xyz'"
finish
