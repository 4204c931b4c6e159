# stoker: the two commands of the README are `make demo` and `make test`. `make` builds.
# Everything goes through one CMake build in build/ (CLI at build/stoker).
BUILD ?= build
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?= -DCMAKE_BUILD_TYPE=Release

.PHONY: all deps build demo test test-c test-python sanitize tsan fuzz-video clean

all: build

deps:
	@bash scripts/install-deps.sh

build: deps
	@cmake -S . -B $(BUILD) $(CMAKE_FLAGS) >/dev/null
	@cmake --build $(BUILD) -j $(JOBS)

# The main job: sample data, topology, then the pipeline with live progress and a summary
# (on the GPU when there is one, else on the CPU).
demo: build
	@bash scripts/demo.sh $(BUILD)/stoker

test: build
	@$(MAKE) --no-print-directory test-c
	@$(MAKE) --no-print-directory test-python

test-c:
	@cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

test-python:
	@bash scripts/test-python.sh

# ASan + UBSan build of the library and C tests (a CI step).
sanitize: deps
	@cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DSTOKER_SANITIZE=ON >/dev/null
	@cmake --build build-asan -j $(JOBS)
	@cd build-asan && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 ctest --output-on-failure -j $(JOBS)

# ThreadSanitizer build for the thread pool and executor tests (a CI step).
tsan: deps
	@cmake -S . -B build-tsan -DCMAKE_BUILD_TYPE=Debug -DSTOKER_TSAN=ON >/dev/null
	@cmake --build build-tsan -j $(JOBS)
	@cd build-tsan && TSAN_OPTIONS=halt_on_error=1 ctest --output-on-failure -j $(JOBS) -R '$(TSAN_TESTS)'

TSAN_TESTS ?= pipeline|executor|threadpool|determinism

# libFuzzer + ASan on readers.video's demux entry (tests/fuzz/fuzz_video_demux.c), clang only:
# replays the seed corpus, then fuzzes for FUZZ_SECONDS. The rest of the library comes from the
# CUDA-off build in build-nocuda/ (its video_demux.o is replaced by the instrumented one).
FUZZ_SECONDS ?= 60
FUZZ_LIBS = $$(pkg-config --libs libavformat libavcodec libavutil libswscale) -ljpeg -lpthread -lm -ldl
fuzz-video: deps
	@cmake -S . -B build-nocuda -DSTOKER_CUDA=OFF -DCMAKE_BUILD_TYPE=Release >/dev/null
	@cmake --build build-nocuda -j $(JOBS) --target stoker_static
	@mkdir -p build-fuzz/corpus_video_demux
	clang -g -O1 -fsanitize=fuzzer,address,undefined -D_GNU_SOURCE -Iinclude -Isrc \
	  tests/fuzz/fuzz_video_demux.c src/ops/cpu/video_demux.c build-nocuda/libstoker.a $(FUZZ_LIBS) \
	  -o build-fuzz/fuzz_video_demux
	build-fuzz/fuzz_video_demux -max_total_time=$(FUZZ_SECONDS) -timeout=10 \
	  build-fuzz/corpus_video_demux tests/fuzz/corpus_video_demux

clean:
	rm -rf $(BUILD) build-asan build-tsan build-fuzz
