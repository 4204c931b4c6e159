# scripts/fault-campaign-shards.sh: the webdataset part of scripts/fault-campaign.sh (sourced by
# it, not run alone: it uses its run/kind/classify, $cli, $work, $scale and $failures). Kinds:
#   shard-index-lies   index files with wrong counts, offsets, extra or missing lines, 2^61 samples
#   shard-tar-lies     headers that lie: sizes up to 2^40 (octal, base-256, pax), flipped bytes
#   shard-truncated    shards cut at random bytes and at member boundaries (local, pipe:, HTTP)
#   shard-dev-zero     /dev/zero as --shards, in a list, as a shard path and through pipe:
#   shard-http         HTTP 500/503/429 and a stalled server stopped by SIGTERM
#   shard-pipe         pipe: commands that fail, are killed, do not exist or print garbage
# Beyond crashes and hangs, a run that exits 0 must not have lost samples silently: its images
# plus its skipped_files must cover the shard (8 samples each), or it is filed as a finding.
shard_pipeline() { # FILE SKIP PATH... : a pipeline text reading the shards (index when IDX is set)
  local f=$1 skip=$2 list="" ilist="" p
  shift 2
  for p in "$@"; do list+="${list:+, }\"$p\""; done
  for p in ${IDX:-}; do ilist+="${ilist:+, }\"$p\""; done
  {
    echo "j, l = readers.webdataset(paths=[$list]${ilist:+, index_paths=[$ilist]}, ext=[\"jpg\", \"cls\"], label_ext=\"cls\", skip_bad_files=$skip, stall_timeout=2, http_retries=1)"
    echo "outputs(j, l)"
  } >"$f"
}
# shard_run KIND WANT SKIP PATH...: one epoch; on exit 0, images + skipped_files must reach WANT
# (a skip may stand for several samples, never for none) and without SKIP images must be WANT.
shard_run() {
  local k=$1 want=$2 skip=$3
  shift 3
  shard_pipeline "$work/shard.pipe" "$skip" "$@"
  run "$k" 60 "" "$cli" bench --data "$work/wds" --pipeline "$work/shard.pipe" --batch 2 --threads 2 --epochs 1 \
    --json --no-digest
  grep -q '"exit_status": 0' "$work/last.out" 2>/dev/null || return 0
  local images nskip
  images=$(json_field "$work/last.out" images) nskip=$(json_field "$work/last.out" skipped_files)
  skipped[$k]=$((skipped[$k] + nskip))
  if { [ "$skip" = False ] && [ "$images" != "$want" ]; } || { [ "$images" -lt "$want" ] && [ "$nskip" = 0 ]; } ||
    [ "$images" -gt "$want" ]; then
    echo "[$k] silent loss or gain: $images images, $nskip skipped, $want samples ($*; skip=$skip)" >>"$failures"
  fi
}

mkdir -p "$work/wds"
python3 tests/wds_fault_shards.py --out "$work/wds" || { echo "wds_fault_shards.py failed" >&2; exit 2; }
wds=$work/wds

k=shard-index-lies; kind $k; n=$((40 * scale)); inputs[$k]=$((n + 3)); mkdir -p "$wds/idx"
python3 - "$wds/full.idx" "$wds/idx" "$n" <<'PY'
import os, random, sys
src, outdir, n = open(sys.argv[1]).read().splitlines(), sys.argv[2], int(sys.argv[3])
rng = random.Random(42)
for i in range(n):
    head, lines = src[0].split(), src[1:]
    how = i % 6
    if how == 0: head[1] = str(rng.choice([0, 1, 7, 9, 12, 2**31, 2**61, 2**63 - 1, 2**64 - 1, 10**30]))
    elif how == 1 and lines: del lines[rng.randrange(len(lines))]
    elif how == 2: lines.insert(rng.randrange(len(lines) + 1), rng.choice(lines))
    elif how == 3:
        j = rng.randrange(len(lines)); t = lines[j].split()
        t[rng.choice([1, 2, 5, 6])] = str(rng.choice([0, 511, 513, 10**12, 2**63, 2**64 - 1, -1]))
        lines[j] = " ".join(t)
    elif how == 4: rng.shuffle(lines)
    else:
        text = bytearray(("\n".join([" ".join(head)] + lines) + "\n").encode())
        for _ in range(rng.randint(1, 5)): text[rng.randrange(len(text))] = rng.randrange(256)
        open(os.path.join(outdir, "i%03d.idx" % i), "wb").write(bytes(text)); continue
    open(os.path.join(outdir, "i%03d.idx" % i), "w").write("\n".join([" ".join(head)] + lines) + "\n")
PY
for f in "$wds"/idx/*.idx; do IDX=$f shard_run $k 8 False "$wds/full.tar"; done
IDX=$wds/huge.idx shard_run $k 8 False "$wds/full.tar"
IDX=$wds/promise12.idx shard_run $k 8 True "$wds/full.tar"
IDX=$wds/full.idx shard_run $k 3 True "$wds/cut.tar"

k=shard-tar-lies; kind $k; n=$((40 * scale)); inputs[$k]=$((n + 3)); mkdir -p "$wds/lies"
python3 - "$wds/full.tar" "$wds/lies" "$n" <<'PY'
import os, random, sys
data, outdir, n = open(sys.argv[1], "rb").read(), sys.argv[2], int(sys.argv[3])
rng = random.Random(7)
headers = [o for o in range(0, len(data), 512) if data[o + 257:o + 262] == b"ustar"]
def checksum(b, o):
    b[o + 148:o + 156] = b" " * 8
    b[o + 148:o + 155] = b"%06o\0" % sum(b[o:o + 512]) + b" "
for i in range(n):
    b = bytearray(data); o = rng.choice(headers); how = i % 4
    if how == 0: b[o + 124:o + 136] = b"%011o\0" % rng.choice([0, 1, 511, 4096, 8**11 - 1])
    elif how == 1: b[o + 124:o + 136] = bytes([0x80]) + rng.choice([1 << 40, 1 << 62, 1 << 63, 2**88 - 1]).to_bytes(11, "big")
    elif how == 2: b[o + rng.randrange(512)] = rng.randrange(256)
    else: b[o + 156] = ord(rng.choice("0125LKxg7"))
    if how != 2 or rng.random() < 0.5: checksum(b, o)
    open(os.path.join(outdir, "t%03d.tar" % i), "wb").write(bytes(b))
PY
for f in "$wds"/lies/*.tar; do shard_run $k 8 True "$f"; shard_run $k 8 False "$f"; done
for f in huge256 hugepax damaged; do shard_run $k 8 True "$wds/$f.tar"; done

k=shard-truncated; kind $k; n=$((30 * scale)); inputs[$k]=$n; mkdir -p "$wds/cut"
python3 - "$wds/full.tar" "$wds/cut" "$n" <<'PY'
import os, random, sys
data, outdir, n = open(sys.argv[1], "rb").read(), sys.argv[2], int(sys.argv[3])
rng = random.Random(9)
for i in range(n):
    end = rng.randrange(1, 8 * 2048) if i % 2 else 512 * rng.randrange(1, 8 * 4)  # any byte, or a block boundary
    open(os.path.join(outdir, "c%03d.tar" % i), "wb").write(data[:end])
PY
for f in "$wds"/cut/*.tar; do
  shard_run $k 8 False "$f"; shard_run $k 8 True "$f"; shard_run $k 8 True "pipe:cat $f"
done

k=shard-dev-zero; kind $k; inputs[$k]=4
echo /dev/zero >"$wds/zero.list"
run $k 30 "/dev/zero" "$cli" bench --shards /dev/zero --epochs 1
run $k 30 "" "$cli" bench --shards "$wds/zero.list" --epochs 1 --batch 2
shard_run $k 8 False /dev/zero
shard_run $k 8 False "pipe:cat /dev/zero"

k=shard-pipe; kind $k; inputs[$k]=6
shard_run $k 8 False "pipe:cat $wds/full.tar; exit 3"
shard_run $k 8 True "pipe:cat $wds/full.tar; exit 3"
shard_run $k 8 False "pipe:kill -9 \$\$"
shard_run $k 8 False "pipe:no-such-command-$$"
shard_run $k 8 False "pipe:head -c 100000 /dev/urandom"
shard_run $k 8 False "pipe:false"

k=shard-http; kind $k; inputs[$k]=6
python3 tests/wds_http_server.py --root "$wds" --port-file "$work/wds-port" --lifetime 600 --stall 300 \
  >/dev/null 2>&1 &
http_server=$!
for _ in $(seq 100); do [ -s "$work/wds-port" ] && break; sleep 0.1; done
port=$(cat "$work/wds-port" 2>/dev/null)
for code in 500 503 429; do
  echo "http://127.0.0.1:$port/e$code/full.tar" >"$wds/http.list"
  run $k 60 "HTTP $code" "$cli" bench --shards "$wds/http.list" --epochs 1 --batch 2
done
shard_run $k 8 False "http://127.0.0.1:$port/close/cut.tar"
shard_run $k 8 True "http://127.0.0.1:$port/close/cut.tar"
# SIGTERM during a stall (30 s stall timeout by default): the run must end within 2 s of it.
echo "http://127.0.0.1:$port/deadstall/full.tar" >"$wds/http.list"
runs[$k]=$((runs[$k] + 1))
/usr/bin/time -o "$work/rss" -f %M timeout -k 5 60 "$cli" bench --shards "$wds/http.list" --epochs 1 --batch 2 \
  --json >"$work/last.out" 2>"$work/last.err" &
tpid=$!
sleep 2
spid=$(pgrep -P "$(pgrep -P $tpid)" 2>/dev/null | head -1)
t0=$(date +%s%N)
[ -n "$spid" ] && kill -TERM "$spid"
wait $tpid; rc=$?
ms=$((($(date +%s%N) - t0) / 1000000))
expect_signal_exit=143 classify $k $rc "" "bench on a stalled HTTP shard, SIGTERM"
[ "$rc" = 143 ] && [ "$ms" -lt 2000 ] || echo "[$k] SIGTERM during an HTTP stall: exit $rc after $ms ms" >>"$failures"
kill $http_server 2>/dev/null
