# trainwatch — the two commands (see README.md): `make run` and `make test`.
BUILD_DIR ?= build
BUILD_TYPE ?= Release
DATA_DIR ?= ./data
LISTEN ?= 127.0.0.1:8080
DEMO ?= 1
JOBS ?= $(shell nproc)
PYTHON ?= /usr/bin/python3

FUZZ_SECONDS ?= 120

.PHONY: all deps configure build run cluster cluster-down test test-cpp test-integration bench fuzz clean

all: build

deps:
	./scripts/install-deps.sh

configure: deps
	@if [ ! -f $(BUILD_DIR)/build.ninja ]; then \
	  cmake -S . -B $(BUILD_DIR) -G Ninja -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) \
	    -DPython3_EXECUTABLE=$(PYTHON); \
	fi

build: configure
	cmake --build $(BUILD_DIR) -j $(JOBS)

run: build
	./scripts/run.sh $(BUILD_DIR)/bin/trainwatch "$(DATA_DIR)" "$(LISTEN)" "$(DEMO)"

# Three nats-server (JetStream R3) and three trainwatch nodes on 127.0.0.1, data in ./cluster-data,
# and the demo run writing to them (docs/cluster.md; settings at the top of scripts/cluster.sh).
cluster: build
	TRAINWATCH_BIN=$(BUILD_DIR)/bin/trainwatch BUILD_DIR=$(BUILD_DIR) DEMO=$(DEMO) ./scripts/cluster.sh up

cluster-down:
	./scripts/cluster.sh down

test: build
	./scripts/test.sh $(BUILD_DIR)

test-cpp: build
	cd $(BUILD_DIR) && ctest --output-on-failure -j $(JOBS)

test-integration: build
	TRAINWATCH_BIN=$(abspath $(BUILD_DIR))/bin/trainwatch $(PYTHON) -m pytest -q tests/integration

# Long-running benchmarks; they print figures (see bench/README.md).
bench: build
	./bench/run_all.sh $(BUILD_DIR)

# libFuzzer targets in build-fuzz (clang, ASan + UBSan), FUZZ_SECONDS each (docs/fuzzing.md).
fuzz: deps
	FUZZ_SECONDS=$(FUZZ_SECONDS) ./scripts/fuzz.sh

clean:
	rm -rf $(BUILD_DIR)
