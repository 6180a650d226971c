#!/usr/bin/env bash
# Where a seed's time goes, per scenario (`make profile`, issue 26's cost table).
#
#   scripts/profile-seed.sh [SEEDS] [SCENARIO...]
#
# Builds `dst` in the sim profile (what sweeps run), records each scenario's sweep of
# SEEDS seeds (default 300) on one worker process under `perf record` with DWARF call
# stacks (the sim profile keeps line tables), and prints the share of samples in each
# part of a run and whose work they are, the agent's or the harness's
# (scripts/profile-categories.py). Over every scenario it then prints the floor: each
# scenario's rate, and the nightly's core-hours, if the harness cost nothing
# (scripts/profile-floor.py, from scenarios/throughput.toml). The folded stacks are left in
# target/profile/<scenario>.folded for a flame graph:
#   inferno-flamegraph < target/profile/wire_shapes.folded > wire_shapes.svg
# Needs Linux `perf` with permission to record (perf_event_paranoid <= 1, or root).
set -euo pipefail
cd "$(dirname "$0")/.."

SEEDS="${1:-300}"
shift || true
OUT=target/profile
FREQUENCY_HZ=1999

if ! command -v perf >/dev/null 2>&1; then
  echo "profile-seed: perf not found (Debian/Ubuntu: apt install linux-perf)" >&2
  exit 1
fi
cargo build --quiet --profile sim -p umi-scenarios --bin dst
DST=target/sim/dst
mkdir -p "$OUT"
if [ "$#" -eq 0 ]; then
  # `dst list` starts a line with each scenario's name (a canary's is followed by
  # "(canary)", a planted crash's by "(planted; runs only with --scenario)": those are
  # not part of a sweep and are left out), its details indented.
  mapfile -t scenarios < <("$DST" list | grep -v "^ " | grep -v "(planted" | cut -d" " -f1)
else
  scenarios=("$@")
fi
# Address-space randomization off (`setarch -R`; nothing a seed means reads an address):
# with it on, 10 of 25 recordings here came back with not one stack unwound past its
# leaf (every sample "other"); with it off, none did. A sandbox may refuse it.
no_randomization=(setarch "$(uname -m)" -R)
if ! "${no_randomization[@]}" true 2>/dev/null; then
  echo "profile-seed: setarch -R is refused here; recording with address-space randomization on, where a recording may unwind no stack" >&2
  no_randomization=()
fi
if [ "$#" -eq 0 ]; then
  rm -f "$OUT"/*.whose.json # the floor below is this run's, not an older subset's
fi
for scenario in "${scenarios[@]}"; do
  # A sweep that fails (a regression, a canary not found) is still profiled: its exit
  # status is reported, not fatal.
  # The largest stack copy perf takes (65528 bytes): with 16384, mixed_formats' samples
  # inside a run were 67% of its samples instead of 93%, the rest having lost the frames
  # that say whose they are.
  "${no_randomization[@]}" perf record --quiet -F "$FREQUENCY_HZ" --call-graph dwarf,65528 -o "$OUT/$scenario.data" \
    "$DST" sweep --scenario "$scenario" --seeds "$SEEDS" --jobs 1 --no-record --quiet \
    > "$OUT/$scenario.sweep.txt" 2>&1 || echo "$scenario: the sweep exited $? (see $OUT/$scenario.sweep.txt)"
  perf script -i "$OUT/$scenario.data" 2>/dev/null > "$OUT/$scenario.script"
  python3 scripts/profile-categories.py "$OUT/$scenario.script" "$OUT/$scenario.folded" "$scenario"
  rm -f "$OUT/$scenario.data" "$OUT/$scenario.script"
done
if [ "$#" -eq 0 ]; then
  # Every scenario profiled: the floor no harness work can lower, from each run's share of
  # the agent's own work and the rates `dst size` uses.
  python3 scripts/profile-floor.py "$OUT" scenarios/throughput.toml
fi
