#!/usr/bin/env bash
# scripts/install-deps.sh: installs what building and testing stoker needs on a fresh Debian or
# Ubuntu machine (compiler, CMake, libjpeg-turbo, libpng, libwebp, libtiff and xxHash headers, FFmpeg's
# libraries and CLI, Python venv), only what is missing.
# Used by `make`, `make demo`, `make test` and .ci/run. Needs root (or sudo) only to install.
set -euo pipefail
need=()
command -v cc >/dev/null || need+=(gcc)
command -v make >/dev/null || need+=(make)
command -v cmake >/dev/null || need+=(cmake)
command -v python3 >/dev/null || need+=(python3)
[ -f /usr/include/jpeglib.h ] || [ -f /usr/include/x86_64-linux-gnu/jpeglib.h ] || need+=(libjpeg62-turbo-dev)
python3 -c 'import venv, ensurepip' 2>/dev/null || need+=(python3-venv)
# Video (readers.video): FFmpeg's demux/decode/scale libraries and pkg-config to find them; the
# ffmpeg CLI makes the test clips and `stoker datagen --video`.
command -v pkg-config >/dev/null || need+=(pkg-config)
for lib in libavformat libavcodec libavutil libswscale; do
  [ -f "/usr/include/x86_64-linux-gnu/$lib/version.h" ] || [ -f "/usr/include/$lib/version.h" ] ||
    [ -f "/usr/include/aarch64-linux-gnu/$lib/version.h" ] || need+=("$lib-dev")
done
command -v ffmpeg >/dev/null || need+=(ffmpeg)
# Image formats (decoders.image): libpng, libwebp and libtiff headers at build time (the libraries
# are loaded with dlopen at run time).
inc_any() { for d in /usr/include "/usr/include/$(uname -m)-linux-gnu" /usr/include/libpng16; do [ -f "$d/$1" ] && return 0; done; return 1; }
inc_any png.h || need+=(libpng-dev)
inc_any webp/decode.h || need+=(libwebp-dev)
inc_any tiffio.h || need+=(libtiff-dev)
# xxHash's header (the fingerprint of JPEG files already checked; header only, nothing loaded).
inc_any xxhash.h || need+=(libxxhash-dev)
# `scripts/install-deps.sh fuzz`: clang with libFuzzer for the fuzz targets (make fuzz).
if [ "${1:-}" = fuzz ]; then
  command -v clang >/dev/null || need+=(clang)
  ls /usr/lib/llvm-*/lib/clang/*/lib/linux/libclang_rt.fuzzer-x86_64.a >/dev/null 2>&1 || need+=(libclang-rt-dev)
fi
if [ ${#need[@]} -gt 0 ]; then
  echo "install-deps: installing ${need[*]}"
  sudo=""
  [ "$(id -u)" = 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${need[@]}"
fi
# libcurl headers: readers.webdataset streams http:// and https:// shards through libcurl.
if [ ! -f /usr/include/x86_64-linux-gnu/curl/curl.h ] && [ ! -f /usr/include/curl/curl.h ] && \
   [ ! -f "/usr/include/$(uname -m)-linux-gnu/curl/curl.h" ]; then
  echo "install-deps: installing libcurl4-openssl-dev"
  sudo=""
  [ "$(id -u)" = 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq libcurl4-openssl-dev
fi
