# The two commands of README.md: `make demo` and `make test`. Both install what is
# missing (scripts/install-deps.sh), configure once, and build incrementally.

BUILD ?= build
CMAKE_FLAGS ?=
CTEST_FLAGS ?= --output-on-failure -j2

.PHONY: all deps configure build test demo clean

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

clean:
	rm -rf $(BUILD)
