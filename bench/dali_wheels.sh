#!/usr/bin/env bash
# bench/dali_wheels.sh: fetches NVIDIA DALI (nvidia-dali-cuda130) and the packages it needs that
# the GPU machine lacks, as Python 3.12 manylinux x86_64 wheels, for the peer comparison in
# bench/peers.py. DALI is never a dependency of stoker. Not on a hot path; runs here (PyPI).
#
# A device call carries at most 64 MiB, so the wheels are packed into .whl-parts/callNN/ folders
# of at most PART_MB (48) MiB each (wheels bigger than that are cut with `split -b`), one folder per call,
# with .whl-parts/MANIFEST (sha256 and parts of each wheel). On the GPU machine, while it stays
# warm between calls, bench/dali_install.sh stashes each carried folder and finally re-joins,
# checks and installs the wheels into /tmp/site:
#   call k (k = 1..N):  carry [".whl-parts/callNN"]  command: bash bench/dali_install.sh stash
#   last call:          export PYTHONPATH=/tmp/site; bash bench/dali_install.sh install && ...
# usage: bench/dali_wheels.sh            (downloads into .whl/, packs into .whl-parts/)
set -euo pipefail
cd "$(dirname "$0")/.."
part_mb=${PART_MB:-48}  # + the working tree (a few MB) must stay under 64 MiB a call
# DALI and what its METADATA requires that the GPU image does not already hold (six, packaging,
# numpy, pyyaml, typing-extensions are there). nvidia-nvimgcodec-cu13[all] also names nvjpeg2k and
# nvtiff: left out (JPEG only); nvJPEG itself is fetched because nothing guarantees its wheel there.
packages=(
  nvidia-dali-cuda130
  'nvidia-nvimgcodec-cu13>=0.9.0,<0.10.0'
  'nvidia-libnvcomp-cu13==5.3.0.16'
  'nvidia-nvjpeg>=13,<14'
  'astunparse<=1.6.3,>=1.6.0'
  'gast<=0.7.0,>=0.3.3'
  optree
  nvtx
  makefun
  'libcst~=1.8'
)
platforms=()
for p in manylinux_2_28_x86_64 manylinux_2_27_x86_64 manylinux_2_17_x86_64 manylinux2014_x86_64 manylinux1_x86_64; do
  platforms+=(--platform "$p")
done
mkdir -p .whl
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
  "${platforms[@]}" -d .whl "${packages[@]}"

rm -rf .whl-parts && mkdir -p .whl-parts/pieces
manifest=.whl-parts/MANIFEST
echo "# wheel sha256 bytes part..." >"$manifest"
for wheel in .whl/*.whl; do
  name=$(basename "$wheel")
  size=$(stat -c %s "$wheel")
  if [ "$size" -gt $((part_mb * 1024 * 1024)) ]; then
    split -b "${part_mb}m" -d -a 2 "$wheel" ".whl-parts/pieces/$name.part"
  else
    cp "$wheel" ".whl-parts/pieces/$name.part00"
  fi
  echo "$name $(sha256sum "$wheel" | cut -d' ' -f1) $size $(cd .whl-parts/pieces && ls "$name".part* | tr '\n' ' ')" >>"$manifest"
done

# First-fit packing of the pieces into per-call folders of at most part_mb (largest first).
limit=$((part_mb * 1024 * 1024))
declare -a fill=()
for piece in $(ls -S .whl-parts/pieces); do
  size=$(stat -c %s ".whl-parts/pieces/$piece")
  call=0
  while [ "$call" -lt "${#fill[@]}" ] && [ $((fill[call] + size)) -gt "$limit" ]; do call=$((call + 1)); done
  [ "$call" -lt "${#fill[@]}" ] || fill+=(0)
  fill[call]=$((fill[call] + size))
  dir=$(printf '.whl-parts/call%02d' $((call + 1)))
  mkdir -p "$dir" && mv ".whl-parts/pieces/$piece" "$dir/"
done
rmdir .whl-parts/pieces
cp "$manifest" .whl-parts/call01/MANIFEST

echo "wheels in .whl/:"
ls -l .whl | awk 'NR > 1 {printf "  %8.1f MB  %s\n", $5 / 1048576, $9}'
echo "total: $(du -sm .whl | cut -f1) MB; carried in ${#fill[@]} calls of <= $part_mb MB:"
for dir in .whl-parts/call*; do echo "  $dir $(du -sm "$dir" | cut -f1) MB"; done
