# stoker: the two commands of the README are `make demo` and `make test`. `make` builds.
# Everything goes through one CMake build in build/ (CLI at build/stoker).
BUILD ?= build
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?= -DCMAKE_BUILD_TYPE=Release

.PHONY: all deps build demo test test-c test-python sanitize tsan fuzz clean

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

# libFuzzer targets for the tar header and .npy header parsers (clang only): builds the library
# instrumented in build-fuzz/, then runs each target for FUZZ_SECONDS on its seed corpus.
FUZZ_SECONDS ?= 60
fuzz: deps
	@command -v clang >/dev/null || { echo "make fuzz: clang is not installed"; exit 1; }
	@CC=clang cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=Debug -DSTOKER_CUDA=OFF -DBUILD_TESTING=OFF \
	  -DCMAKE_C_FLAGS="-fsanitize=fuzzer-no-link,address,undefined" >/dev/null
	@cmake --build build-fuzz -j $(JOBS) --target stoker_static
	@for t in tar npy; do \
	  clang -g -fsanitize=fuzzer,address,undefined -D_GNU_SOURCE -Iinclude -Isrc tests/fuzz/fuzz_$$t.c \
	    build-fuzz/libstoker.a -lcurl -lpthread -ldl -lm -o build-fuzz/fuzz_$$t || exit 1; \
	  mkdir -p build-fuzz/corpus_$$t && cp tests/fuzz/corpus_$$t/* build-fuzz/corpus_$$t/ && \
	  build-fuzz/fuzz_$$t -max_total_time=$(FUZZ_SECONDS) build-fuzz/corpus_$$t || exit 1; \
	done

clean:
	rm -rf $(BUILD) build-asan build-tsan build-fuzz
