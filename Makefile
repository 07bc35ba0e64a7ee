# Thin wrapper over CMake for the README's two commands. `make deps` installs the Debian packages that are
# missing (apt-get; sudo when not root), `make search` builds and runs the main job, `make test` runs every test.
BUILD ?= build
JOBS ?= 2
WERROR ?= ON
PKGS := cmake g++ make python3 python3-yaml libcli11-dev nlohmann-json3-dev libeigen3-dev libyaml-cpp-dev doctest-dev \
        libopenmpi-dev openmpi-bin libbenchmark-dev

.PHONY: deps deps-sanitize configure build test search bench tables serving-tables clean

# clang and its runtime (libFuzzer, sanitizers) for the sanitizer + fuzz stage of .ci/run (docs/fuzzing.md).
SANITIZE_PKGS := clang libclang-rt-dev

# Installs the packages of $(1) that dpkg does not list as installed.
define install_missing
	@missing=$$(for p in $(1); do dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q 'install ok installed' || echo $$p; done); \
	if [ -n "$$missing" ]; then \
	  sudo=$$([ "$$(id -u)" -eq 0 ] || echo sudo); \
	  echo "installing: $$missing"; \
	  $$sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$sudo apt-get install -y -qq $$missing; \
	fi
endef

deps:
	$(call install_missing,$(PKGS))

deps-sanitize:
	$(call install_missing,$(SANITIZE_PKGS))

configure:
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release -DSHARDPLAN_WERROR=$(WERROR)

build: configure
	cmake --build $(BUILD) -j$(JOBS)

test: build
	cd $(BUILD) && ctest --output-on-failure -j$(JOBS)

search: build
	./$(BUILD)/shardplan search --model llama-3-70b --system dgx-h100 --gpus 256 --gbs 1024 --seq 8192 --top 10

# Regenerates hwprofiles/tables/ (the measured GEMM, attention and scale-up collective tables of the shipped GPUs)
# from hwprofiles/measured/ through `shardplan calibrate import-aic` and `calibrate fit --gpu-tables`.
tables: build
	calibrate/make_tables.sh ./$(BUILD)/shardplan hwprofiles/tables $(BUILD)/tables-raw

# Regenerates the serving model's measured-kernel rows (modeler/serving/*_rows.inc: decode and prefill GEMMs, decode
# attention, MoE layers, custom all-reduce) from hwprofiles/measured/serving/ (calibrate/serving_tables.py).
serving-tables:
	python3 calibrate/serving_tables.py hwprofiles/measured modeler/serving

bench: build
	./$(BUILD)/bench/shardplan_bench

clean:
	rm -rf $(BUILD)
