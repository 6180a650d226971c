# Umi's everyday commands. `make help` lists them.
#
#   make sweep                 the main job: every simulation over a range of seeds
#   make test                  every test (simulations replay the default seeds)
#   make lint                  fmt, clippy, rustdoc and the determinism checks, warnings as errors
#   make dst PKG=.. TEST=.. SEED=N [BIN=main]   replay one seed of one simulation test
#   make bench                 the benchmarks (each figure printed next to its baseline)

SHELL := /bin/bash
CARGO ?= cargo

# sweep: how many seeds, from where.
SEEDS ?= 200
SEED_START ?= 1

.PHONY: help test lint fmt dst sweep bench doc

help:
	@sed -n 's/^#   //p' Makefile

test:
	$(CARGO) test --workspace

lint:
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --workspace --all-targets -- -D warnings
	RUSTDOCFLAGS="-D warnings" $(CARGO) doc --workspace --no-deps
	scripts/check-determinism.sh

fmt:
	$(CARGO) fmt --all

doc:
	$(CARGO) doc --workspace --no-deps --open

# Replay one seed of one simulation test, with its whole trace printed.
dst:
	@test -n "$(PKG)" -a -n "$(TEST)" -a -n "$(SEED)" || \
	  { echo "usage: make dst PKG=<package> TEST=<test name> SEED=<seed> [BIN=<test binary>]"; exit 2; }
	DST_SEED=$(SEED) DST_TRACE=1 $(CARGO) test -p $(PKG) $(if $(BIN),--test $(BIN),) -- '$(TEST)' --exact --nocapture

# Every simulation test over SEEDS seeds from SEED_START (tests built with
# `Simulation::from_env` read DST_SEEDS / DST_SEED_START), with the determinism check on.
sweep:
	DST_SEEDS=$(SEEDS) DST_SEED_START=$(SEED_START) DST_CHECK_DETERMINISM=1 \
	  $(CARGO) test --workspace --release --tests

bench:
	$(CARGO) bench --workspace
