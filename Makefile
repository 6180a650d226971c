# Umi's everyday commands. `make help` lists them.
#
#   make sweep                 the main job: every scenario over the default seeds, with the report
#                              (SEEDS=1000 SEED_START=1 JOBS=<cores> SCENARIO="a b" SWARM=1 DETERMINISM=0
#                              PRICES=scenarios/prices.toml TRIALS=k for pass^k)
#   make test                  every test (simulations replay their seed corpus and default seeds),
#                              umi-dst's again in a build with rig and rmcp (seeds must mean
#                              the same there), then the Python clients and the TypeScript SDKs
#                              against `dst serve` (needs python3 and node 20; see tests/python, ts/)
#   make serve                 `dst serve` on 127.0.0.1:8080 (ARGS="--seed 7 --endpoint anthropic ...")
#   make wheel                 the umi-dst Python wheel (dst and the pytest plugin) into target/wheels/,
#                              built by the pinned maturin (python/requirements-build.txt); from
#                              anywhere: make -C /path/to/umi wheel
#   make lint                  fmt, clippy, rustdoc and the determinism checks, warnings as errors;
#                              the nightly workflow and docs/k8s/ checked by pinned validators (needs python3)
#   make dst SCENARIO=.. SEED=N           replay one seed of one scenario, whole trace printed
#   make dst PKG=.. TEST=.. SEED=N [BIN=main]   replay one seed of one simulation test
#   make minimize SCENARIO=.. SEED=N      the smallest fault schedule under which the seed still fails
#   make sweep-tests           every simulation test over SEEDS seeds, determinism check on; under
#                              cargo-nextest when installed (PARTITION=K/N runs part K of N; NEXTEST=0: cargo test)
#   make bench                 the benchmarks (each figure printed next to its baseline)
#   make bench-sim-profile     what the sim profile's assertions cost against release (SEEDS=300)
#   make profile               where a seed's time goes, per scenario, under perf (SCENARIO=.. PROFILE_SEEDS=300)
#   make dst-pgo               `dst` built with profile-guided optimisation, as the nightly runs it
#                              (target/pgo-use/sim/dst; needs `rustup component add llvm-tools`)

SHELL := /bin/bash
CARGO ?= cargo

# sweep: how many seeds, from where, on how many workers, which scenarios.
SEEDS ?= 1000
SEED_START ?= 1
JOBS ?=
SCENARIO ?=
SWARM ?=
DETERMINISM ?= 1
PRICES ?= scenarios/prices.toml
TRIALS ?=
REPORT ?= target/dst/report.json

DST := $(CARGO) run --quiet --profile sim -p umi-scenarios --bin dst --

.PHONY: help test lint fmt dst dst-pgo sweep sweep-tests minimize bench bench-sim-profile profile doc serve wheel

help:
	@sed -n 's/^#   //p' Makefile

# The rig and rmcp adapters' tests build on their own (rig-core is slow to compile, so
# `rig` is never unified into the workspace build; rmcp rides along in the same build).
# rig-core turns on serde_json's `preserve_order`; seeded paths go through
# umi_core::canonical_json, so a seed must mean the same in that build: the whole umi-dst
# binary runs there too, golden files included.
RIG := -p umi-dst --features rig,rmcp

test:
	$(CARGO) test --workspace
	$(CARGO) test $(RIG) --test main
	$(CARGO) test $(RIG) --doc adapters::rig
	$(CARGO) test $(RIG) --doc adapters::rmcp
	scripts/python-tests.sh --wheel
	scripts/ts-tests.sh

lint:
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --workspace --all-targets -- -D warnings
	$(CARGO) clippy $(RIG) --all-targets -- -D warnings
	RUSTDOCFLAGS="-D warnings" $(CARGO) doc --workspace --no-deps
	RUSTDOCFLAGS="-D warnings" $(CARGO) doc $(RIG) --no-deps
	scripts/check-determinism.sh
	scripts/check-deploy.sh

fmt:
	$(CARGO) fmt --all

doc:
	$(CARGO) doc --workspace --no-deps --open

# The sweep engine over every scenario (or SCENARIO's): a table per scenario, the JSON
# report in $(REPORT), failing seeds recorded in seeds/, the exit code by failure class.
sweep:
	@mkdir -p $(dir $(REPORT))
	$(DST) sweep --seeds $(SEEDS) --seed-start $(SEED_START) --report $(REPORT) \
	  $(if $(PRICES),--prices $(PRICES),) $(if $(TRIALS),--trials $(TRIALS),) \
	  $(if $(JOBS),--jobs $(JOBS),) $(foreach s,$(SCENARIO),--scenario $(s)) \
	  $(if $(filter 1,$(SWARM)),--swarm,) $(if $(filter 1,$(DETERMINISM)),--check-determinism,)

# Replay one seed: of a scenario (SCENARIO=), or of a simulation test (PKG= TEST=).
dst:
	@if [ -n "$(SCENARIO)" ] && [ -n "$(SEED)" ]; then \
	  $(DST) replay --scenario $(SCENARIO) --seed $(SEED) --trace $(if $(filter 1,$(SWARM)),--swarm,); \
	elif [ -n "$(PKG)" ] && [ -n "$(TEST)" ] && [ -n "$(SEED)" ]; then \
	  DST_SEED=$(SEED) DST_TRACE=1 $(CARGO) test -p $(PKG) $(if $(BIN),--test $(BIN),) -- '$(TEST)' --exact --nocapture; \
	else \
	  echo "usage: make dst SCENARIO=<scenario> SEED=<seed> [SWARM=1]"; \
	  echo "   or: make dst PKG=<package> TEST=<test name> SEED=<seed> [BIN=<test binary>]"; exit 2; \
	fi

minimize:
	@test -n "$(SCENARIO)" -a -n "$(SEED)" || { echo "usage: make minimize SCENARIO=<scenario> SEED=<seed> [SWARM=1]"; exit 2; }
	$(DST) minimize --scenario $(SCENARIO) --seed $(SEED) $(if $(filter 1,$(SWARM)),--swarm,)

# Every simulation test over SEEDS seeds from SEED_START (tests built with
# `Simulation::from_env` read DST_SEEDS / DST_SEED_START), with the determinism check on.
# Under cargo-nextest (when installed, unless NEXTEST=0) each test is its own process, the
# `sweep` profile of .config/nextest.toml runs them all and repeats the failures' reports
# at the end, and PARTITION=K/N runs the K-th of N parts (`--partition count:K/N`), so N
# machines share the tests. Without nextest, PARTITION is refused rather than ignored.
NEXTEST ?= $(if $(shell $(CARGO) nextest --version 2>/dev/null),1,0)
PARTITION ?=
SWEEP_TESTS_ENV = DST_SEEDS=$(SEEDS) DST_SEED_START=$(SEED_START) DST_CHECK_DETERMINISM=1

sweep-tests:
ifeq ($(NEXTEST),1)
	$(SWEEP_TESTS_ENV) $(CARGO) nextest run --workspace --cargo-profile sim-tests --profile sweep \
	  $(if $(PARTITION),--partition count:$(PARTITION),)
else
	@if [ -n "$(PARTITION)" ]; then \
	  echo "sweep-tests: PARTITION=$(PARTITION) needs cargo-nextest (cargo install cargo-nextest --locked)" >&2; \
	  exit 2; \
	fi
	$(SWEEP_TESTS_ENV) $(CARGO) test --workspace --profile sim-tests --tests
endif

bench:
	$(CARGO) bench --workspace --all-features

# `dst` with profile-guided optimisation: the same seeds, the same trace hashes, about 11%
# fewer core-hours than the plain sim build (issue 41); PGO_TRAINING_SEEDS per scenario train it.
PGO_TRAINING_SEEDS ?= 300
dst-pgo:
	scripts/build-dst-pgo.sh $(PGO_TRAINING_SEEDS)

bench-sim-profile:
	scripts/bench-sim-profile.sh $(if $(filter-out 1000,$(SEEDS)),$(SEEDS),300)

serve:
	$(DST) serve $(ARGS)

# The wheel users install (`pip install target/wheels/umi_dst-*.whl`; `pip install python/`
# builds the same one). maturin from a venv of its own, pinned, created once.
WHEEL_VENV := target/wheelenv
wheel:
	@if [ ! -x $(WHEEL_VENV)/bin/maturin ] || ! cmp -s python/requirements-build.txt $(WHEEL_VENV)/.requirements; then \
	  rm -rf $(WHEEL_VENV) && python3 -m venv $(WHEEL_VENV) && \
	  $(WHEEL_VENV)/bin/python -m pip install --quiet --disable-pip-version-check -r python/requirements-build.txt && \
	  cp python/requirements-build.txt $(WHEEL_VENV)/.requirements; \
	fi
	cd python && CARGO_TARGET_DIR=$(CURDIR)/target ../$(WHEEL_VENV)/bin/maturin build --release --out $(CURDIR)/target/wheels

# Where a seed's time goes: each scenario (or SCENARIO's) swept under `perf record`, the
# samples sorted into the parts of a run and into the agent's own work and the harness's,
# the folded stacks left in target/profile/ for a flame graph; over every scenario, the
# floor a free harness would leave (scripts/profile-seed.sh; Linux, needs perf).
profile:
	scripts/profile-seed.sh $(or $(PROFILE_SEEDS),300) $(SCENARIO)
