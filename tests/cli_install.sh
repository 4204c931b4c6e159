#!/usr/bin/env bash
# tests/cli_install.sh: `cmake --install` of this build into a temporary prefix gives what a C user
# links against: a program built through `pkg-config --cflags --libs stoker` and a CMake project
# using find_package(stoker) (stoker::stoker, the shared library; stoker::stoker_static, the archive)
# compile, link and run, printing the library's version.
set -euo pipefail
. "$(dirname "$0")/cli_lib.sh"
command -v pkg-config >/dev/null || { echo "skip: no pkg-config"; exit 77; }
# A sanitizer build's library needs its runtime loaded first: an outside program is not one to link it.
if grep -qE '^STOKER_(SANITIZE|TSAN):BOOL=ON' "$STOKER_BINARY_DIR/CMakeCache.txt" 2>/dev/null; then
  echo "skip: a sanitizer build (make install is checked on the release build)"
  exit 77
fi
work=$tmp
cmake --install "$STOKER_BINARY_DIR" --prefix "$work/prefix" >"$work/install.log"
for f in include/stoker/pipeline.h bin/stoker; do
  [ -e "$work/prefix/$f" ] || { echo "FAIL: $f not installed"; exit 1; }
done
libdir=$(dirname "$(find "$work/prefix" -name libstoker.so -print -quit)")
[ -f "$libdir/libstoker.a" ] || { echo "FAIL: libstoker.a not installed"; exit 1; }
# libcurl is loaded at run time (src/device/curl_loader.c), never linked: nothing installed needs it.
if command -v readelf >/dev/null; then
  for f in "$libdir/libstoker.so" "$work/prefix/bin/stoker"; do
    if readelf -d "$f" | grep -q 'NEEDED.*libcurl'; then echo "FAIL: $f links libcurl"; exit 1; fi
  done
fi
cat >"$work/prog.c" <<'C'
#include <stdio.h>
#include <string.h>
#include "stoker/stoker.h"
int main(void) {
  stk_pipeline_options opts;
  stk_pipeline_options_default(&opts);
  opts.device_id = -1;
  stk_pipeline *p = NULL;
  if (stk_pipeline_new(&opts, &p) != STK_OK) return 1;
  stk_pipeline_destroy(p);
  printf("stoker %s\n", stk_version_string());
  return strcmp(stk_version_string(), STK_VERSION_STRING) != 0;
}
C
export PKG_CONFIG_PATH="$libdir/pkgconfig"
# shellcheck disable=SC2046
cc -o "$work/prog_pc" "$work/prog.c" $(pkg-config --cflags --libs stoker) -Wl,-rpath,"$libdir"
out=$("$work/prog_pc")
echo "pkg-config: $out"
case "$out" in "stoker "*) ;; *) echo "FAIL: pkg-config program printed '$out'"; exit 1 ;; esac
mkdir -p "$work/proj"
cp "$work/prog.c" "$work/proj/prog.c"
cat >"$work/proj/CMakeLists.txt" <<'CM'
cmake_minimum_required(VERSION 3.20)
project(stoker_user C)
find_package(stoker REQUIRED)
add_executable(prog_shared prog.c)
target_link_libraries(prog_shared PRIVATE stoker::stoker)
add_executable(prog_static prog.c)
target_link_libraries(prog_static PRIVATE stoker::stoker_static)
if(TARGET CUDA::cudart_static)
  set_target_properties(prog_static PROPERTIES LINKER_LANGUAGE CXX)
  enable_language(CXX)
endif()
CM
cmake -S "$work/proj" -B "$work/proj/build" -DCMAKE_PREFIX_PATH="$work/prefix" >"$work/cmake.log" 2>&1 ||
  { cat "$work/cmake.log"; echo "FAIL: find_package(stoker) project did not configure"; exit 1; }
cmake --build "$work/proj/build" >"$work/build.log" 2>&1 || { cat "$work/build.log"; echo "FAIL: link"; exit 1; }
for prog in prog_shared prog_static; do
  out=$("$work/proj/build/$prog")
  echo "find_package $prog: $out"
  case "$out" in "stoker "*) ;; *) echo "FAIL: $prog printed '$out'"; exit 1 ;; esac
done
echo "install: ok"
exit $fail
