#!/usr/bin/env bash
# scripts/install-deps.sh: installs what building and testing stoker needs on a fresh Debian or
# Ubuntu machine (compiler, CMake, libjpeg-turbo headers, Python venv), only what is missing.
# Used by `make`, `make demo`, `make test` and .ci/run. Needs root (or sudo) only to install.
set -euo pipefail
need=()
command -v cc >/dev/null || need+=(gcc)
command -v make >/dev/null || need+=(make)
command -v cmake >/dev/null || need+=(cmake)
command -v python3 >/dev/null || need+=(python3)
[ -f /usr/include/jpeglib.h ] || [ -f /usr/include/x86_64-linux-gnu/jpeglib.h ] || need+=(libjpeg62-turbo-dev)
python3 -c 'import venv, ensurepip' 2>/dev/null || need+=(python3-venv)
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
