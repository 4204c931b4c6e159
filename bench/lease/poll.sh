#!/usr/bin/env bash
# bench/lease/poll.sh: one polling call of a background lease job (bench/lease/headline-job.sh,
# lease-job.sh). Waits until DONE exists or SECONDS pass, then prints JOB's STEPS and the log's tail.
# It stops at once, exit 3, when JOB is not there: the tool gave this call a fresh machine (the
# warm one went back after 30 s with no call in flight) and waiting on a job that is not running
# spends the lease's minutes for nothing (session of 2026-11-29: 9 minutes). Seen twice, both times
# right after the FIRST long poll of a lease (540-555 s, the reply bringing job.tgz back), though the
# next call was sent at once; polls of 450 s and 170 s after it kept the machine: keep polls at
# <= 450 s and tar what a step finished into $OUT in every poll. Not on a hot path.
# usage: bash bench/lease/poll.sh JOB DONE [SECONDS] [LOG]
#   e.g. bash bench/lease/poll.sh /tmp/job /tmp/ALLDONE 555 /tmp/job.log
set -uo pipefail
job=${1:?usage: poll.sh JOB DONE [SECONDS] [LOG]} done=${2:?usage: poll.sh JOB DONE [SECONDS] [LOG]}
secs=${3:-555} log=${4:-}
if [ ! -d "$job" ]; then
  echo "poll: no $job on this machine: a fresh one (the warm machine went back); nothing to wait for" >&2
  exit 3
fi
t=0
while [ "$t" -lt "$secs" ] && [ ! -e "$done" ]; do sleep 5; t=$((t + 5)); done
[ -e "$done" ] && echo "poll: done after ${t} s" || echo "poll: still running after ${t} s"
cat "$job/STEPS" 2>/dev/null
if [ -n "$log" ]; then tail -5 "$log"; fi
exit 0
