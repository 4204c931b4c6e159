#!/usr/bin/env bash
# bench/session9-check.sh: session 9's check call on the GPU machine (after bench/unpack-carry.sh).
# 1. the GPU tests (bench/gpu-check.sh) with the video test's frames dumped (STOKER_TEST_VIDEO_DUMP)
#    for offline analysis of issue 17's NVDEC/CPU mismatch (bench/video_dump_analyze.py);
#    compute-sanitizer on the video test;
# 2. the Python suite with a CUDA build of the package (the torch CUDA cases of issue 16), from the
#    wheel carried in .carry-py/ (abi3) and pytest's wheels, installed under /tmp/stkpy;
# 3. issue 14's decoder agreement on damaged JPEGs (bench/bad-jpeg-gpu.sh);
# 4. diagnostic A/B rows (bench/diag-mixed.sh) of bench/diag-configs-s9.txt when DIAG=1.
# Files under $OUT. Not on a hot path.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/s9}; mkdir -p "$OUT"
export LD_LIBRARY_PATH=$PWD/.carry/build/lib:$PWD/.carry/build/ffmpeg STOKER_CLI=$PWD/.carry/build/stoker STOKER_SOURCE_DIR=$PWD
export STOKER_TEST_VIDEO_CLIPS=$PWD/.carry-video/test
mkdir -p /tmp/vdump
STOKER_TEST_VIDEO_DUMP=/tmp/vdump \
GPU_TESTS="${GPU_TESTS:-test_gpu_video test_gpu_backend test_gpu_ops test_gpu_decoder test_gpu_pipeline test_gpu_checkpoint test_gpu_external_source test_gpu_external_gpu}" \
GPU_SANITIZED="${GPU_SANITIZED:-test_gpu_video}" OUT=$OUT/gpu timeout 300 bash bench/gpu-check.sh .carry/build > $OUT/gpu-check.log 2>&1
echo "gpu-check rc=$?"; tail -22 $OUT/gpu/summary.txt 2>/dev/null
grep -h "frames" $OUT/gpu/test_gpu_video.log | head -40
tar -C /tmp -czf $OUT/vdump.tgz vdump; du -h $OUT/vdump.tgz
if [ -d .carry-py ]; then
  rm -rf /tmp/stkpy && python3 -m pip install -q --no-deps --no-index --target /tmp/stkpy .carry-py/*.whl > $OUT/pip.log 2>&1
  rc=$?; echo "pip rc=$rc"
  if [ $rc != 0 ]; then  # no pip: a wheel is a zip
    for w in .carry-py/*.whl; do python3 -m zipfile -e "$w" /tmp/stkpy; done
    chmod +x /tmp/stkpy/stoker/bin/* 2>/dev/null
  fi
  (cd tests/python && PYTHONPATH=/tmp/stkpy timeout ${PY_TIMEOUT:-240} python3 -m pytest -q -rs -p no:cacheprovider . > $OUT/pytest.log 2>&1)
  echo "pytest rc=$?"; tail -25 $OUT/pytest.log
fi
OUT=$OUT/badjpeg timeout 240 bash bench/bad-jpeg-gpu.sh > $OUT/bad-jpeg.log 2>&1
echo "bad-jpeg rc=$?"; grep -v "^    " $OUT/bad-jpeg.log
if [ "${DIAG:-0}" = 1 ]; then
  OUT=$OUT/diag CONFIGS_FILE=bench/diag-configs-s9.txt TESTS=none bash bench/diag-mixed.sh > $OUT/diag-run.log 2>&1
  grep -v "^== \|^rc=" $OUT/diag/diag.txt | tail -12
fi
tar -C $OUT -czf $OUT/gpu-logs.tgz gpu badjpeg 2>/dev/null; rm -rf $OUT/gpu $OUT/badjpeg
