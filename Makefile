# The commands of README.md: `make demo`, `make test` and `make serve MODEL=path
# PORT=N`. They install what is missing (scripts/install-deps.sh), configure
# once, and build incrementally.

BUILD ?= build
CMAKE_FLAGS ?=
CTEST_FLAGS ?= --output-on-failure -j2

.PHONY: all deps configure build test demo serve clean

all: build

deps:
	@bash scripts/install-deps.sh

$(BUILD)/build.ninja:
	cmake -G Ninja -S . -B $(BUILD) $(CMAKE_FLAGS)

configure: deps $(BUILD)/build.ninja

build: configure
	cmake --build $(BUILD)

test: build
	cd $(BUILD) && ctest $(CTEST_FLAGS)

demo: build
	@bash examples/demo.sh $(BUILD)

# Triton Inference Server in the foreground (scripts/serve.sh).
MODEL ?=
PORT ?= 8000
serve: build
	@test -n "$(MODEL)" || { echo "usage: make serve MODEL=path/to/model.kiln|.so|.onnx PORT=8000"; exit 1; }
	@bash scripts/serve.sh "$(MODEL)" "$(PORT)"

clean:
	rm -rf $(BUILD)
