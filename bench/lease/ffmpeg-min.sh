#!/usr/bin/env bash
# bench/lease/ffmpeg-min.sh: builds a minimal FFmpeg of the SAME version as this machine's Debian FFmpeg
# (5.1.x: libavcodec 59, libavformat 59, libavutil 57, libswscale 6, ...), from Debian's own source
# package (with Debian's patches), as shared libraries with Debian's sonames, for the GPU machine,
# which has no FFmpeg at all: stoker dlopen()s these sonames (src/ops/video/video_ffmpeg.c) and
# TorchCodec links them (its libtorchcodec_core5.so). Debian's FFmpeg with its codec libraries is
# ~165 MB; this is a few MB. Not on a hot path; runs here, never on the device.
#
# What is in it, and nothing else (no external codec library, no network, no autodetection):
#   demuxers   mov/mp4, matroska/webm, avi, mpegts, raw h264/hevc/m4v, hls (a playlist must be
#              recognised to be refused), ivf
#   decoders   h264, hevc, vp9, vp8, mpeg4 (software), h264_cuvid, hevc_cuvid, vp9_cuvid
#   hwaccels   h264/hevc/vp9/vp8/mpeg4 NVDEC (CUDA hwcontext), loaded at run time through
#              nv-codec-headers (Debian's libffmpeg-nvenc-dev): no link dependency on the driver
#   parsers    h264, hevc, vp9, vp8, mpeg4video, aac;  bitstream filters: h264/hevc_mp4toannexb,
#              vp9_superframe(_split), extract_extradata, null
#   libraries  libavutil libavcodec libavformat libswscale libswresample libavfilter (buffer,
#              buffersink, format, scale, crop, transpose, flips, hwupload/download, copy, null;
#              audio: abuffer, abuffersink, aformat, aresample) libavdevice (no devices):
#              TorchCodec's core links all seven
#
# Output: bench/.cache/ffmpeg-min/lib/*.so.N (+ include/, lib/pkgconfig/), with a STAMP of the
# version and configuration: a second run with the same version and configuration does nothing.
# (bench/lease/pack-carry.sh copies the libraries into the carried build's lib/.)
# Needs: dpkg-source (dpkg-dev), nasm, libffmpeg-nvenc-dev, gcc, make; installs what is missing
# with apt-get. The source comes from Debian's deb-src through a private apt configuration (the
# system's sources stay as they are; apt checks the files against the signed index; dpkg-source's
# warning that it cannot check the .dsc's own signature is only for want of debian-keyring).
# ~10 minutes on 2 busy cores (JOBS, default 2).
# usage: bench/lease/ffmpeg-min.sh [--check]   (--check: also run stoker's CPU video tests against it)
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
cache=$root/bench/.cache
prefix=$cache/ffmpeg-min
jobs=${JOBS:-2}

version=$(dpkg-query -W -f='${Version}' libavcodec59 2>/dev/null || true)
[ -n "$version" ] || { echo "ffmpeg-min: Debian's libavcodec59 is not installed: no version to match" >&2; exit 2; }
upstream=${version#*:}        # 7:5.1.9-0+deb12u1 -> 5.1.9-0+deb12u1
upstream=${upstream%%-*}      # -> 5.1.9

config=(
  --prefix="$prefix" --enable-shared --disable-static --disable-programs --disable-doc
  --disable-debug --enable-stripping --disable-autodetect --disable-network --disable-everything
  --enable-avdevice --enable-avfilter --enable-swresample --enable-swscale --disable-postproc
  --enable-ffnvcodec --enable-cuda --enable-cuvid --enable-nvdec
  --enable-protocol=file,pipe
  --enable-demuxer=mov,matroska,avi,mpegts,h264,hevc,m4v,hls,ivf
  --enable-decoder=h264,hevc,vp9,vp8,mpeg4,h264_cuvid,hevc_cuvid,vp9_cuvid
  --enable-hwaccel=h264_nvdec,hevc_nvdec,vp9_nvdec,vp8_nvdec,mpeg4_nvdec
  --enable-parser=h264,hevc,vp9,vp8,mpeg4video,aac
  --enable-bsf=h264_mp4toannexb,hevc_mp4toannexb,vp9_superframe,vp9_superframe_split,extract_extradata,null
  --enable-filter=buffer,buffersink,format,scale,crop,transpose,hflip,vflip,hwupload,hwdownload,copy,null
  --enable-filter=abuffer,abuffersink,aformat,aresample,anull
)
# (the prefix left out: a copy of the folder into another checkout stays valid)
stamp="$version $(printf '%s\n' "${config[@]:1}" | sha256sum | cut -c1-16)"
if [ -f "$prefix/STAMP" ] && [ "$(cat "$prefix/STAMP")" = "$stamp" ] && [ -e "$prefix/lib/libavcodec.so.59" ]; then
  echo "ffmpeg-min: $prefix already built for $stamp"
else
  missing=()
  command -v nasm >/dev/null || missing+=(nasm)
  command -v dpkg-source >/dev/null || missing+=(dpkg-dev)
  [ -f /usr/include/ffnvcodec/dynlink_loader.h ] || missing+=(libffmpeg-nvenc-dev)
  if [ ${#missing[@]} -gt 0 ]; then
    echo "ffmpeg-min: installing ${missing[*]}"
    apt-get install -y "${missing[@]}" >/dev/null || { apt-get update -qq && apt-get install -y "${missing[@]}" >/dev/null; }
  fi
  # Debian's source package of exactly the installed version, through a private apt configuration.
  src=$cache/ffmpeg-src
  mkdir -p "$src/sources.d" "$src/lists/partial" "$src/apt/archives/partial"
  if [ ! -f "$src/ffmpeg_$upstream.orig.tar.xz" ]; then
    sed -n '/^Types:/,$p' /etc/apt/sources.list.d/debian.sources | sed 's/^Types: deb$/Types: deb-src/' >"$src/sources.d/debian.sources"
    apt_o=(-o Dir::Etc::SourceList=/dev/null -o Dir::Etc::SourceParts="$src/sources.d"
      -o Dir::State::Lists="$src/lists" -o Dir::Cache="$src/apt")
    apt-get "${apt_o[@]}" update -qq
    (cd "$src" && apt-get "${apt_o[@]}" source --download-only "ffmpeg=$version")
  fi
  tree=$src/ffmpeg-$upstream
  if [ ! -f "$tree/configure" ]; then
    rm -rf "$tree"
    (cd "$src" && dpkg-source -x "ffmpeg_${version#*:}.dsc" "ffmpeg-$upstream" >/dev/null)
  fi
  rm -rf "$src/build" "$prefix" && mkdir -p "$src/build"
  t0=$(date +%s)
  (cd "$src/build" && "$tree/configure" "${config[@]}" >configure.log) ||
    { tail -20 "$src/build/config.log" >&2; echo "ffmpeg-min: configure failed ($src/build/config.log)" >&2; exit 1; }
  make -C "$src/build" -j"$jobs" >"$src/build/make.log" 2>&1 ||
    { tail -30 "$src/build/make.log" >&2; echo "ffmpeg-min: make failed ($src/build/make.log)" >&2; exit 1; }
  make -C "$src/build" install >/dev/null
  echo "$stamp" >"$prefix/STAMP"
  echo "ffmpeg-min: built FFmpeg $upstream into $prefix in $(( $(date +%s) - t0 )) s"
fi
# The sonames must be Debian's, or stoker's dlopen() and TorchCodec's links find nothing.
for so in libavutil.so.57 libavcodec.so.59 libavformat.so.59 libswscale.so.6 libswresample.so.4 \
  libavfilter.so.8 libavdevice.so.59; do
  [ -e "$prefix/lib/$so" ] || { echo "ffmpeg-min: $prefix/lib/$so missing (not FFmpeg 5.1's sonames?)" >&2; exit 1; }
done
echo "ffmpeg-min: $(du -shL "$prefix"/lib/*.so.* | awk '{s = s $2 "=" $1 " "} END {print s}' | sed "s|$prefix/lib/||g")"

if [ "${1:-}" = "--check" ]; then
  # stoker's CPU video tests with the minimal libraries (proves the ABI and the configuration).
  # The ffmpeg CLI the tests call to make clips stays Debian's (it needs libx264, lavfi, ...): a
  # wrapper earlier on PATH runs it without the minimal libraries.
  build=${BUILD_DIR:-build-nocuda}
  [ -d "$build" ] || { echo "ffmpeg-min: --check needs a CUDA-off build in $build (BUILD_DIR=...)" >&2; exit 2; }
  wrap=$(mktemp -d)
  for tool in ffmpeg ffprobe; do
    printf '#!/bin/sh\nunset LD_LIBRARY_PATH\nexec /usr/bin/%s "$@"\n' "$tool" >"$wrap/$tool"
    chmod +x "$wrap/$tool"
  done
  rc=0
  (cd "$build" && PATH="$wrap:$PATH" LD_LIBRARY_PATH="$prefix/lib" ctest -R video --output-on-failure -j"$jobs") || rc=$?
  rm -rf "$wrap"
  exit $rc
fi
