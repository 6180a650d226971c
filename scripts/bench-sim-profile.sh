#!/usr/bin/env bash
# What keeping assertions on where seeds run costs: the same sweep (every scenario, the
# same seeds, one job, nothing recorded) with `dst` built in the `sim` profile (release
# plus debug assertions and overflow checks, one optimisation unit) and in `release` built
# as one optimisation unit too, three times each,
# each run's wall time printed with its ratio to the release run of the same round.
#
#   scripts/bench-sim-profile.sh [SEEDS]     (default 300)
set -euo pipefail
cd "$(dirname "$0")/.."
seeds="${1:-300}"
cargo build --quiet --profile sim -p umi-scenarios --bin dst
# Release compiled as the sim profile is (one optimisation unit: fat LTO, one codegen unit,
# Cargo.toml), so the ratio prices the assertions and overflow checks alone, not the
# whole-program step; in a target directory of its own, not to rebuild target/release.
CARGO_PROFILE_RELEASE_LTO=fat CARGO_PROFILE_RELEASE_CODEGEN_UNITS=1 \
  cargo build --quiet --release -p umi-scenarios --bin dst --target-dir target/bench-release
report_dir="$(mktemp -d)"
trap 'rm -rf "$report_dir"' EXIT
binary() { # profile -> its dst
  if [ "$1" = release ]; then echo target/bench-release/release/dst; else echo "target/$1/dst"; fi
}
wall_ms() { # profile round -> wall ms of that sweep
  "$(binary "$1")" sweep --seeds "$seeds" --jobs 1 --no-record --quiet --allow-no-debug-assertions \
    --report "$report_dir/$1-$2.json" >/dev/null || true
  python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["wall_ms"])' "$report_dir/$1-$2.json"
}
echo "sweep of $seeds seeds per scenario, 1 job; ratio = sim / release (same round)"
for round in 1 2 3; do
  release="$(wall_ms release "$round")"
  sim="$(wall_ms sim "$round")"
  python3 -c 'import sys; r,s=map(int,sys.argv[1:3]); print(f"round {sys.argv[3]}: release {r} ms, sim {s} ms, ratio {s/max(r,1):.2f}x")' "$release" "$sim" "$round"
done
