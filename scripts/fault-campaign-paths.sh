# scripts/fault-campaign-paths.sh: the path and list classes of scripts/fault-campaign.sh (sourced
# by it; uses its run, kind, classify, $cli, $work, $scale and the good JPEGs in $work/good):
#   paths-not-files  a FIFO, /dev/zero, /dev/urandom or a directory everywhere a path is read: the
#                    --shards list or a FIFO among --shards DIR, --resume, --pipeline,
#                    --bad-files-log (a FIFO without a reader, /dev/full: a write error fails the
#                    run), file_list of readers.file/numpy/video, files of readers.numpy,
#                    filenames of readers.video, paths and index_paths of readers.webdataset.
#                    Each must end at once with an error naming the path (a FIFO blocked open()
#                    for ever, /dev/zero was read for ever).
#   unbounded-lists  a 2 GiB sparse file (no newline) as every list and text: refused after its
#                    line or size bound, peak RSS small (17 GB of RSS before).
#   npy-lies         .npy headers that lie (a decoy 'shape', a shape past 2^63, a header length
#                    past the file, extra keys) and valid ones past 4 KiB (versions 1, 2, 3), and
#                    ROI arguments past 2^63: clear errors naming the file, the valid ones read.
#   symlink-layouts  class_a/up -> .., a link from one class to another's file, a link out of
#                    file_root: each file delivered once, no hang (labels: tests/test_reader_faults).
#   budget-bypass    (with the Python package) an external_source sample of 3 GiB under the default
#                    256 MiB budget: refused before it is copied, peak RSS small (a 0-stride
#                    broadcast sample is still made contiguous by NumPy first: a known gap).

fc_pipe() { printf '%s\n' "$@" >"$work/fc_pipe.txt"; }
fc_bench_pipe() { # KIND TIMEOUT NEEDLE: runs bench on $work/fc_pipe.txt
  run "$1" "$2" "$3" "$cli" bench --data "$work/fc/tiny" --pipeline "$work/fc_pipe.txt" --batch 1 --threads 1 --epochs 1
}
mkdir -p "$work/fc/tiny/c" "$work/fc/dir"
cp "${good[@]:0:2}" "$work/fc/tiny/c/"
mkfifo "$work/fc/fifo"
"$cli" datagen "$work/fc/shards-src" --count 8 --classes 2 --shards 2 >/dev/null
mkfifo "$work/fc/shards-src/shards/zz-fifo.tar"

k=paths-not-files; kind $k
for p in "$work/fc/fifo" /dev/zero /dev/urandom "$work/fc/dir"; do
  inputs[$k]=$((inputs[$k] + 1))
  run $k 30 "$p" "$cli" bench --shards "$p" --batch 2 --threads 1 --epochs 1
  run $k 30 "$p" "$cli" bench --data "$work/fc/tiny" --resume "$p" --batch 1 --threads 1 --epochs 1
  run $k 30 "$p" "$cli" bench --data "$work/fc/tiny" --pipeline "$p" --batch 1 --threads 1 --epochs 1
  fc_pipe "j, l = readers.file(file_list=\"$p\")" 'outputs(j, l)'; fc_bench_pipe $k 30 "$p"
  fc_pipe "a = readers.numpy(file_list=\"$p\")" 'outputs(a)'; fc_bench_pipe $k 30 "$p"
  fc_pipe "a = readers.numpy(files=[\"$p\"])" 'outputs(a)'; fc_bench_pipe $k 30 "$p"
  fc_pipe "v, l = readers.video(file_list=\"$p\", sequence_length=2)" 'outputs(v, l)'; fc_bench_pipe $k 30 "$p"
  fc_pipe "v, l = readers.video(filenames=[\"$p\"], sequence_length=2)" 'outputs(v, l)'; fc_bench_pipe $k 30 "$p"
  fc_pipe "j, l = readers.webdataset(paths=[\"$p\"], ext=[\"jpg\", \"cls\"])" 'outputs(j, l)'; fc_bench_pipe $k 30 "$p"
  fc_pipe "j, l = readers.webdataset(paths=[\"$work/fc/shards-src/shards/shard-00000.tar\"], index_paths=[\"$p\"], ext=[\"jpg\", \"cls\"])" \
    'outputs(j, l)'; fc_bench_pipe $k 30 "$p"
done
inputs[$k]=$((inputs[$k] + 3))
run $k 30 "zz-fifo.tar" "$cli" bench --shards "$work/fc/shards-src/shards" --batch 2 --threads 1 --epochs 1
run $k 30 "" "$cli" bench --shards "$work/fc/shards-src/shards" --batch 2 --threads 1 --epochs 1 --skip-bad-files
run $k 30 "no reader" "$cli" bench --data "$work/fc/tiny" --bad-files-log "$work/fc/fifo" --batch 1 --epochs 1
: >"$work/fc/tiny/c/zz_empty.jpg"
run $k 30 "/dev/full" "$cli" bench --data "$work/fc/tiny" --bad-files-log /dev/full --batch 1 --epochs 1
[ "$(tail -1 "$work/rss")" ] && grep -q "cannot write" "$work/last.err" ||
  echo "[$k] --bad-files-log /dev/full: the run did not fail on the lost log" >>"$failures"
rm "$work/fc/tiny/c/zz_empty.jpg"

k=unbounded-lists; kind $k; inputs[$k]=1
truncate -s 2G "$work/fc/sparse" # zeros, no newline: every bound must stop the read early
run $k 60 "" "$cli" bench --shards "$work/fc/sparse" --batch 2 --threads 1 --epochs 1
run $k 60 "" "$cli" bench --data "$work/fc/tiny" --resume "$work/fc/sparse" --batch 1 --epochs 1
run $k 60 "" "$cli" bench --data "$work/fc/tiny" --pipeline "$work/fc/sparse" --batch 1 --epochs 1
for reader in 'j, l = readers.file(file_list="F")|outputs(j, l)' 'a = readers.numpy(file_list="F")|outputs(a)' \
  'v, l = readers.video(file_list="F", sequence_length=2)|outputs(v, l)'; do
  fc_pipe "${reader%%|*}" "${reader#*|}"; sed -i "s|\"F\"|\"$work/fc/sparse\"|" "$work/fc_pipe.txt"
  fc_bench_pipe $k 60 "sparse"
done
[ "${rss[$k]}" -lt 1048576 ] || echo "[$k] peak RSS ${rss[$k]} KB reading a 2 GiB list" >>"$failures"
rm -f "$work/fc/sparse"

k=npy-lies; kind $k; mkdir -p "$work/fc/npy"
python3 - "$work/fc/npy" <<'PY'
import struct, sys
d = sys.argv[1]
def npy(major, text, pad_to=64, data=struct.pack("<6f", *range(6)), length=None):
    pre = 10 if major == 1 else 12
    total = max(pre + len(text) + 1, pad_to)
    total = (total + 63) // 64 * 64
    hl = (total - pre) if length is None else length
    head = b"\x93NUMPY" + bytes([major, 0]) + (struct.pack("<H", hl) if major == 1 else struct.pack("<I", hl))
    return head + text.encode() + b" " * (total - pre - len(text) - 1) + b"\n" + data
ok = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }"
files = {
    "ok_v1_long.npy": npy(1, ok, 6144), "ok_v2.npy": npy(2, ok), "ok_v3_long.npy": npy(3, ok, 70000),
    "bad_decoy.npy": npy(1, "{'descr': '<f4', 'x': \"'shape': (2, 3),\", 'fortran_order': False, 'shape': (9,), }"),
    "bad_huge.npy": npy(1, "{'descr': '<f8', 'fortran_order': False, 'shape': (4294967296, 4294967296), }"),
    "bad_hlen.npy": npy(2, ok, length=0xFFFFFFF0), "bad_dup.npy": npy(1, ok[:-3] + ", 'shape': (6,)}"),
    "bad_short.npy": npy(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (1000,), }"),
}
for name, data in files.items():
    open("%s/%s" % (d, name), "wb").write(data)
PY
for f in "$work"/fc/npy/*.npy; do
  inputs[$k]=$((inputs[$k] + 1)); name=$(basename "$f")
  fc_pipe "a = readers.numpy(files=[\"$f\"])" 'outputs(a)'
  fc_bench_pipe $k 30 "$name"
  case $name in ok_*) [ "$(grep -c . "$work/last.err")" = 0 ] || echo "[$k] $name: a valid .npy was refused: $(head -1 "$work/last.err")" >>"$failures" ;; esac
done
for roi in 'roi_start=[9223372036854775806], roi_shape=[10]' 'roi_start=[-4611686018427387904], roi_shape=[9223372036854775807], out_of_bounds_policy="pad"' \
  'rel_roi_start=[1e300]'; do
  inputs[$k]=$((inputs[$k] + 1))
  fc_pipe "a = readers.numpy(files=[\"$work/fc/npy/ok_v2.npy\"], $roi)" 'outputs(a)'
  fc_bench_pipe $k 30 "ok_v2.npy"
done

k=symlink-layouts; kind $k; inputs[$k]=3
for v in up cross out; do
  d=$work/fc/links-$v; mkdir -p "$d/a" "$d/b" "$work/fc/outside-$v"
  cp "${good[@]:0:3}" "$d/a/"; cp "${good[@]:3:2}" "$d/b/"; want=5
  case $v in
    up) ln -s .. "$d/a/up" ;;
    cross) ln -s "../b/$(basename "${good[3]}")" "$d/a/zz_link.jpg" ;;
    out) cp "${good[5]}" "$work/fc/outside-$v/far.jpg"; ln -s "$work/fc/outside-$v" "$d/b/ext"; want=6 ;;
  esac
  run $k 60 "" "$cli" bench --data "$d" --pipeline rn50-val --batch 1 --threads 2 --epochs 1 --json
  [ "$(json_field "$work/last.out" images)" = $want ] ||
    echo "[$k] $v: expected each of $want files once: $(head -c 300 "$work/last.out")" >>"$failures"
done

k=budget-bypass; kind $k
if python3 -c 'import stoker, numpy' 2>/dev/null; then
  inputs[$k]=2
  for layout in zeros broadcast; do
    runs[$k]=$((runs[$k] + 1))
    /usr/bin/time -o "$work/rss" -f %M timeout -k 5 120 python3 - "$layout" >"$work/last.out" 2>"$work/last.err" <<'PY'
import sys, numpy as np, stoker
from stoker import fn
# zeros: calloc'd pages never touched (a copy would touch them); broadcast: a 0-stride view that
# must be made contiguous before C can read it
big = (np.broadcast_to(np.zeros(1, np.uint8), (3 << 30,)) if sys.argv[1] == "broadcast"
       else np.zeros(3 << 30, np.uint8))
pipe = stoker.Pipeline(batch_size=1, num_threads=1)  # the default budget: 256 MiB at batch 1
with pipe:
    pipe.set_outputs(fn.external_source(name="src", dtype="uint8"))
pipe.build()
try:
    pipe.feed_input("src", [big])
    pipe.run()
except Exception as e:
    print("stoker refused:", e, file=sys.stderr)
    sys.exit(1)
PY
    rc=$?
    [ $rc = 1 ] && grep -q "budget" "$work/last.err" && echo "stoker python: budget" >>"$work/last.err"
    classify $k $rc "budget" "external_source fed a 3 GiB $layout sample under a 256 MiB budget"
  done
  [ "${rss[$k]}" -lt 1048576 ] || echo "[$k] peak RSS ${rss[$k]} KB refusing a 3 GiB sample" >>"$failures"
fi
