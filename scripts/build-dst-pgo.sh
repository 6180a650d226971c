#!/usr/bin/env bash
# Builds `dst` in the sim profile with profile-guided optimisation (`make dst-pgo`): what
# the nightly sweeps run (issue 41; docs/adr/0028-dst-build.md). Prints the binary's
# absolute path on stdout (target/pgo-use/sim/dst), and nothing else there.
#
#   scripts/build-dst-pgo.sh [TRAINING_SEEDS]
#
# Three steps, each build in a target directory of its own (their RUSTFLAGS differ, so
# sharing target/sim would rebuild it from scratch each time; each is a direct child of
# target/, which is what CI caches such as Swatinem/rust-cache keep):
#   1. an instrumented `dst` (rustc's -Cprofile-generate), in target/pgo-generate;
#   2. a training sweep with it: TRAINING_SEEDS seeds (default 300) of every scenario a
#      sweep runs by default, and a quarter as many under --swarm, on threads in one
#      process (trained in worker processes, the counts of the workers' runs were lost
#      and the build came out slower than none), then merged by llvm-profdata. The
#      sweeps write their counts to files of their own (LLVM_PROFILE_FILE): the
#      instrumented build also ran instrumented build scripts, whose counts are not a
#      sweep's and are left out;
#   3. `dst` built again with -Cprofile-use, in target/pgo-use.
# PGO changes which code the compiler lays out and inlines, never what the code does: the
# per-seed trace hashes of every scenario are the same as the plain sim build's (checked
# when it was adopted, 300 seeds of every scenario). A seed's failure in a training sweep
# is not the build's business (the sweeps report it); a training sweep that left no
# counts is, and stops the build.
# Needs rustup's llvm-tools (`rustup component add llvm-tools`): llvm-profdata must be
# the LLVM of the rustc that builds, which a system llvm-profdata rarely is.
set -euo pipefail
cd "$(dirname "$0")/.." >/dev/null

TRAINING_SEEDS="${1:-300}"
if ! [[ "$TRAINING_SEEDS" =~ ^[1-9][0-9]{0,6}$ ]]; then
  echo "build-dst-pgo: TRAINING_SEEDS must be a whole number from 1 to 9999999, not '$TRAINING_SEEDS'" >&2
  exit 2
fi
ROOT="$(pwd)"
if [[ "$ROOT" =~ [[:space:]] ]]; then
  # RUSTFLAGS is split on whitespace: a profile path with a space would be two flags.
  echo "build-dst-pgo: the repository's path '$ROOT' holds whitespace; move it, or build by hand with CARGO_ENCODED_RUSTFLAGS" >&2
  exit 2
fi
if [ -n "${CARGO_ENCODED_RUSTFLAGS:-}" ]; then
  echo "build-dst-pgo: CARGO_ENCODED_RUSTFLAGS is set and would replace the PGO flags; unset it (RUSTFLAGS is kept)" >&2
  exit 2
fi
RUSTC="${RUSTC:-rustc}"
HOST="$("$RUSTC" -vV | sed -n 's/^host: //p')"
PROFDATA="$("$RUSTC" --print sysroot)/lib/rustlib/$HOST/bin/llvm-profdata"
if [ ! -x "$PROFDATA" ]; then
  echo "build-dst-pgo: $PROFDATA not found; install it with: rustup component add llvm-tools" >&2
  exit 2
fi
SWARM_SEEDS=$(( (TRAINING_SEEDS + 3) / 4 ))
GENERATE="$ROOT/target/pgo-generate"
USE="$ROOT/target/pgo-use"
BUILD_COUNTS="$GENERATE/build-counts"   # the instrumented build scripts' own
SWEEP_COUNTS="$GENERATE/sweep-counts"   # the training sweeps'
MERGED="$GENERATE/merged.profdata"

rm -rf "$BUILD_COUNTS" "$SWEEP_COUNTS" "$MERGED" "$GENERATE"/merged-*.profdata
mkdir -p "$BUILD_COUNTS" "$SWEEP_COUNTS"

echo "build-dst-pgo: 1/3 the instrumented build" >&2
RUSTFLAGS="${RUSTFLAGS:-} -Cprofile-generate=$BUILD_COUNTS" \
  cargo build --quiet --profile sim -p umi-scenarios --bin dst --target-dir "$GENERATE"

echo "build-dst-pgo: 2/3 training: $TRAINING_SEEDS seeds of every scenario, $SWARM_SEEDS under --swarm" >&2
for mode in default swarm; do
  args=(--seeds "$TRAINING_SEEDS")
  if [ "$mode" = swarm ]; then args=(--seeds "$SWARM_SEEDS" --swarm); fi
  log="$GENERATE/training-$mode.txt"
  status=0
  LLVM_PROFILE_FILE="$SWEEP_COUNTS/$mode-%m.profraw" \
    "$GENERATE/sim/dst" sweep "${args[@]}" --jobs 1 --in-process --no-record --quiet \
    > "$log" 2>&1 || status=$?
  if [ "$status" -ne 0 ]; then
    # 10 to 20 are seeds that failed (the sweep ran to its end and wrote its counts);
    # anything else may have ended it early.
    echo "build-dst-pgo: the $mode training sweep exited $status ($log); its end:" >&2
    tail -n 5 "$log" >&2
  fi
done
for mode in default swarm; do
  if ! compgen -G "$SWEEP_COUNTS/$mode-*.profraw" > /dev/null; then
    echo "build-dst-pgo: the $mode training sweep wrote no counts under $SWEEP_COUNTS ($GENERATE/training-$mode.txt)" >&2
    exit 1
  fi
done
"$PROFDATA" merge -o "$MERGED" "$SWEEP_COUNTS" >&2
# The profile is named by its content: cargo rebuilds a dependency when its RUSTFLAGS
# change, not when the file they name does, so under one name a cached target/pgo-use
# (CI's cache, or an earlier run here) would keep the dependencies of an old profile.
NAMED="$GENERATE/merged-$(sha256sum "$MERGED" | cut -c1-16).profdata"
mv "$MERGED" "$NAMED"

echo "build-dst-pgo: 3/3 the optimised build" >&2
RUSTFLAGS="${RUSTFLAGS:-} -Cprofile-use=$NAMED" \
  cargo build --quiet --profile sim -p umi-scenarios --bin dst --target-dir "$USE"
echo "$USE/sim/dst"
