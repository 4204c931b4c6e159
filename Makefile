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

# ThreadSanitizer build of every C test that starts threads (a CI step).
tsan: deps
	@cmake -S . -B build-tsan -DCMAKE_BUILD_TYPE=Debug -DSTOKER_TSAN=ON >/dev/null
	@cmake --build build-tsan -j $(JOBS)
	@echo "tsan: $(TSAN_TESTS)"
	@cd build-tsan && TSAN_OPTIONS=halt_on_error=1 ctest --output-on-failure -j $(JOBS) -R '^($(TSAN_TESTS))(\..+)?$$'

# The C tests that start threads, found from their sources so a new one is covered without
# editing a list: those that build a pipeline (the executor's workers, scheduler and GPU stage;
# directly or through tests/pipeline_fake_ops.h's fake_pipeline), run `stoker datagen` (its
# encoder threads), hold a GPU stream with a watchdog thread (gpu_gate_close), open a reader
# that starts its own threads (readers.video's indexing workers, readers.webdataset's stream
# lanes, also through tests/wds_testutil.h), or call pthread_create themselves. Each file's named
# cases (test_x.case) are all run. Override with TSAN_TESTS='test_a|test_b'.
TSAN_TESTS ?= $(shell grep -lE 'stk_pipeline_build|fake_pipeline|datagen|gpu_gate_close|pthread_create|readers\.(video|webdataset)|wds_testutil\.h' tests/test_*.c $$(find src/ops -name 'test_*.c') | sed 's|^.*/||; s|\.c$$||' | paste -sd '|' -)

# libFuzzer targets (tests/fuzz), each run FUZZ_SECONDS from its seed corpus (a CI step).
fuzz:
	@bash scripts/install-deps.sh fuzz
	@bash scripts/fuzz.sh

clean:
	rm -rf $(BUILD) build-asan build-tsan build-fuzz
