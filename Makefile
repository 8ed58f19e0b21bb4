# Makefile - the README's commands; CMake does the real build.
#   make demo    install what is missing, build, run a real rush on examples/demo
#   make check   install what the tests need, build with ASan+UBSan, run all
#   make         build (release) into build/
#   make fuzz    libFuzzer on the config and graph loaders (FUZZ_SECONDS=60)
#   make image   build the zerg-worker container image locally
#   make bench   run the benchmarks, write docs/wiki/Performance.md figures
#   make chaos   the long randomized chaos suite
#   make mutate  break each core invariant once; the suite must notice
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
FUZZ_SECONDS ?= 60
CHAOS_SECONDS ?= 300

.PHONY: all deps build demo check test fuzz image bench chaos mutate format clean

all: build

deps:
	@scripts/install-deps.sh build

build: deps
	@cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DZERG_TESTS=OFF >/dev/null
	@cmake --build build -j $(JOBS)

demo: build
	@scripts/demo.sh build/zerg

check:
	@scripts/install-deps.sh container
	@scripts/check-format.sh
	@python3 scripts/check-layers.py
	@cmake -S . -B build-check -DCMAKE_BUILD_TYPE=Debug -DZERG_SANITIZE=ON >/dev/null
	@cmake --build build-check -j $(JOBS)
	@build-check/zerg validate -C examples/demo --check-wiring
	@for cli in claude codex gemini; do \
	    sh scripts/install-agent.sh $$cli >/dev/null || exit 1; done
	@cd build-check && ctest --output-on-failure -j $(JOBS)
	@python3 tests/mutate.py $${CHECK_MUTATIONS:---ci $${MUTATIONS_PER_RUN:-9}}
	@$(MAKE) --no-print-directory fuzz FUZZ_SECONDS=$${FUZZ_SECONDS:-15}

test: check

fuzz:
	@scripts/install-deps.sh test
	@CC=clang cmake -S . -B build-fuzz -DZERG_FUZZ=ON -DZERG_TESTS=OFF \
	    -DCMAKE_BUILD_TYPE=Debug >/dev/null
	@cmake --build build-fuzz -j $(JOBS) --target fuzz_config fuzz_graph
	@scripts/fuzz.sh build-fuzz $(FUZZ_SECONDS)

image: build
	@scripts/install-deps.sh container
	@scripts/build-image.sh build/zerg

bench: build
	@bench/run.sh build/zerg

chaos:
	@cmake -S . -B build-check -DCMAKE_BUILD_TYPE=Debug -DZERG_SANITIZE=ON >/dev/null
	@cmake --build build-check -j $(JOBS)
	@ZERG=build-check/zerg CHAOS_SECONDS=$(CHAOS_SECONDS) tests/chaos/chaos.sh

# MUTATIONS=name... picks some (tests/mutate.py --list shows them).
mutate:
	@scripts/install-deps.sh test
	@python3 tests/mutate.py $(MUTATIONS)

format:
	@git ls-files '*.c' '*.h' | xargs clang-format -i

clean:
	rm -rf build build-check build-fuzz build-mutate
