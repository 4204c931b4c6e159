#!/usr/bin/env bash
# bench/fetch_photos.sh: fetches the real photographs the benchmark data sets are cut from.
# Not on any hot path; runs once on a Debian 12 host with apt (not on the GPU machine, which has
# no network). `apt-get download`s the wallpaper packages named in bench/photos.list, extracts
# them with `dpkg -x` into a cache, and packs the listed photographs (abstract art left out by the
# curated list) downscaled to LONG_SIDE pixels into bench/.photos (ignored by git, carried to the
# GPU machine: ~25-35 MB). Needs Pillow: PYTHON=/path/to/venv/python if python3 has none.
#   usage: bench/fetch_photos.sh [OUT_DIR=bench/.photos]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-$here/.photos}
cache=${CACHE:-$here/.cache/photos}
long_side=${LONG_SIDE:-2048}
max_mb=${MAX_MB:-40}
python=${PYTHON:-python3}

"$python" -c 'import PIL' 2>/dev/null || { echo "fetch_photos: $python has no Pillow (set PYTHON=...)" >&2; exit 1; }
mkdir -p "$cache/debs" "$cache/root" "$out"
packages=$(grep -v '^#' "$here/photos.list" | awk 'NF {print $1}' | sort -u)
for pkg in $packages; do
  if ! ls "$cache/debs/${pkg}_"*.deb >/dev/null 2>&1; then
    (cd "$cache/debs" && apt-get download "$pkg" 2>&1 | grep -v '^W: Download is performed unsandboxed' || true)
  fi
  deb=$(ls "$cache/debs/${pkg}_"*.deb 2>/dev/null | head -1) || true
  [ -n "$deb" ] || { echo "fetch_photos: could not download $pkg (apt-get update?)" >&2; exit 1; }
  dpkg -x "$deb" "$cache/root"
done

"$python" - "$here/photos.list" "$cache/root" "$out" "$long_side" <<'EOF'
import os, sys
from PIL import Image
listing, root, out, long_side = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
for line in open(listing):
    if not line.strip() or line.startswith('#'):
        continue
    pkg, rel = line.split()
    path = os.path.join(root, rel)
    if os.path.isdir(path):  # Plasma wallpapers: one JPEG per screen size; take the largest
        jpegs = [os.path.join(path, f) for f in os.listdir(path) if f.lower().endswith('.jpg')]
        path = max(jpegs, key=lambda p: Image.open(p).size[0] * Image.open(p).size[1])
        name = rel.split('/')[3]
    else:
        name = os.path.splitext(os.path.basename(rel))[0]
    im = Image.open(path)
    im.draft('RGB', (long_side, long_side))  # DCT-domain downscale where possible
    im = im.convert('RGB')
    scale = long_side / max(im.size)
    if scale < 1:
        im = im.resize((round(im.width * scale), round(im.height * scale)), Image.LANCZOS)
    dest = os.path.join(out, name + '.jpg')
    im.save(dest, quality=93, subsampling=0)
    print(f'{name:40s} {im.width}x{im.height} {os.path.getsize(dest) // 1024} KB  ({pkg})')
EOF
total_mb=$(du -sm "$out" | cut -f1)
count=$(ls "$out"/*.jpg | wc -l)
echo "fetch_photos: $count photographs, $total_mb MB in $out"
[ "$total_mb" -le "$max_mb" ] || { echo "fetch_photos: $total_mb MB is over $max_mb MB (lower LONG_SIDE)" >&2; exit 1; }
