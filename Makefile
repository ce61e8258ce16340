# The two commands of the README. Both work on a fresh Debian bookworm machine as root.
#   make demo  - install deps, build the `phalanx` CLI only (Release), run the main job and print its
#                report (then the two-team queue example, sim/data/two-team-*)
#   make test  - install deps, build everything (tests + benchmarks), run every test, the benchmark
#                gate (bench/check) among them, and a few-second smoke of every fuzz target (ctest -L fuzz)
#   make fuzz  - build the libFuzzer targets with clang++ in build-fuzz/ and run each for FUZZ_SECONDS
#                (default 60); docs/development.md "Fuzzing"
#   make asan  - the whole suite (no benchmarks, no fuzz smoke) built with g++ -fsanitize=address,undefined
#                in build-asan/ and run; docs/hardening.md "Sanitizers". Nightly-style: too long for CI
#   make tsan  - the concurrency-heavy tests (ctest label `tsan`) built with -fsanitize=thread in build-tsan/
BUILD_DIR ?= build
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?= -DCMAKE_BUILD_TYPE=Release -DPHALANX_WERROR=ON
# ccache where the machine has it (Debian package `ccache`): a rebuild after a pull recompiles only
# what changed. Not installed by deps: a fresh machine's first build gains nothing from it.
ifneq ($(shell command -v ccache 2>/dev/null),)
CMAKE_FLAGS += -DCMAKE_CXX_COMPILER_LAUNCHER=ccache
endif

.PHONY: all deps configure build build-cli demo test fuzz asan tsan clean

all: build

deps:
	./scripts/install-deps.sh

configure: deps
	cmake -S . -B $(BUILD_DIR) $(CMAKE_FLAGS)

build: configure
	cmake --build $(BUILD_DIR) -j $(JOBS)

# The demo runs one binary: build its link closure only (bench/check's demo.compile_units gate
# fails if a test or benchmark target ever joins it).
build-cli: configure
	cmake --build $(BUILD_DIR) -j $(JOBS) --target phalanx

demo: build-cli
	./scripts/demo.sh $(BUILD_DIR)
	@echo
	@echo "== Two teams, one quota each (team-a floods, team-b is bursty; sim/data/README.md) =="
	@mkdir -p $(BUILD_DIR)/demo
	$(BUILD_DIR)/cli/phalanx simulate --cluster sim/data/two-team-cluster.yaml --trace sim/data/two-team-mix.csv \
	  --policy phalanx,gang-binpack --seed 1 --report $(BUILD_DIR)/demo/two-team.json --html $(BUILD_DIR)/demo/two-team.html
	@echo
	@echo "== The same two teams without queues (phalanx; compare utilisation and fairness) =="
	$(BUILD_DIR)/cli/phalanx simulate --cluster sim/data/two-team-cluster.yaml --trace sim/data/two-team-mix.csv \
	  --policy phalanx --no-queues --seed 1 --quiet --report $(BUILD_DIR)/demo/two-team-no-queues.json
	@python3 -c "import json,sys; a=json.load(open('$(BUILD_DIR)/demo/two-team.json'))['policies'][0]; \
	  b=json.load(open('$(BUILD_DIR)/demo/two-team-no-queues.json'))['policies'][0]; \
	  print('phalanx with queues: utilisation %.1f%% = %.1f%% of the run without queues (%.1f%%)' % \
	  (100*a['gpuUtilisation'], 100*a['gpuUtilisation']/b['gpuUtilisation'], 100*b['gpuUtilisation']))"

test: build
	cd $(BUILD_DIR) && ctest --output-on-failure -j $(JOBS) --timeout 600

# Not part of `make test`: a separate clang build (ASan + UBSan + libFuzzer). FUZZ_SECONDS per target;
# FUZZ_TARGETS="a b" for a subset; FUZZ_MERGE=1 merges new inputs into fuzz/corpus/ to commit.
FUZZ_SECONDS ?= 60
fuzz:
	./scripts/install-deps.sh --fuzz
	FUZZ_SECONDS=$(FUZZ_SECONDS) FUZZ_JOBS=$(JOBS) ./scripts/fuzz.sh

# Sanitizer builds (docs/hardening.md "Sanitizers"), each in a build directory of its own. Not part of
# `make test`: the ASan suite takes longer than CI's budget on 2 cores (last result in bench/RESULTS.md).
# scripts/sanitizer-test.sh sets the *_OPTIONS; tests/sanitizers/ holds the commented suppressions.
SANITIZE_FLAGS = -DCMAKE_BUILD_TYPE=Release -DPHALANX_WERROR=OFF -DPHALANX_BUILD_BENCH=OFF
ifneq ($(shell command -v ccache 2>/dev/null),)
SANITIZE_FLAGS += -DCMAKE_CXX_COMPILER_LAUNCHER=ccache
endif
asan: deps
	cmake -S . -B build-asan $(SANITIZE_FLAGS) -DPHALANX_SANITIZE=address,undefined
	cmake --build build-asan -j $(JOBS)
	./scripts/sanitizer-test.sh asan build-asan -j $(JOBS)

tsan: deps
	cmake -S . -B build-tsan $(SANITIZE_FLAGS) -DPHALANX_SANITIZE=thread
	cmake --build build-tsan -j $(JOBS) --target tsan_tests
	./scripts/sanitizer-test.sh tsan build-tsan -L tsan -j $(JOBS)

clean:
	rm -rf $(BUILD_DIR) build-asan build-tsan
