#!/usr/bin/env bash
# Builds `dst` in the sim profile with profile-guided optimisation (`make dst-pgo`): what
# the nightly sweeps run (issue 41; docs/guide.md, "What it costs").
#
#   scripts/build-dst-pgo.sh [TRAINING_SEEDS]
#
# Three steps, each in a target directory of its own under target/pgo/ (RUSTFLAGS differ,
# so they would otherwise rebuild target/sim from scratch every time):
#   1. an instrumented `dst` (rustc's -Cprofile-generate);
#   2. a training sweep with it: TRAINING_SEEDS seeds (default 300) of every scenario a
#      sweep runs by default, and a quarter as many under --swarm, on threads in one
#      process (worker processes would each write a profile of their own), then the
#      counts merged by llvm-profdata;
#   3. `dst` built again with -Cprofile-use: target/pgo/use/sim/dst.
# PGO changes which code the compiler lays out and inlines, never what the code does: the
# per-seed trace hashes of every scenario are the same as the plain sim build's (checked
# when it was adopted, 300 seeds of every scenario). A seed's failure in the training
# sweep is not the build's business (the sweeps report it); a training sweep that left no
# profile is, and stops the build.
# Needs rustup's llvm-tools (`rustup component add llvm-tools`): llvm-profdata must be
# the LLVM of the rustc that builds, which a system llvm-profdata rarely is.
set -euo pipefail
cd "$(dirname "$0")/.."

TRAINING_SEEDS="${1:-300}"
if ! [[ "$TRAINING_SEEDS" =~ ^[1-9][0-9]{0,6}$ ]]; then
  echo "build-dst-pgo: TRAINING_SEEDS must be a whole number from 1 to 9999999, not '$TRAINING_SEEDS'" >&2
  exit 2
fi
SWARM_SEEDS=$(( (TRAINING_SEEDS + 3) / 4 ))
OUT=target/pgo
HOST="$(rustc -vV | sed -n 's/^host: //p')"
PROFDATA="$(rustc --print sysroot)/lib/rustlib/$HOST/bin/llvm-profdata"
if [ ! -x "$PROFDATA" ]; then
  echo "build-dst-pgo: $PROFDATA not found; install it with: rustup component add llvm-tools" >&2
  exit 2
fi

rm -rf "$OUT/profiles" "$OUT/merged.profdata"
mkdir -p "$OUT/profiles"
PROFILES="$(pwd)/$OUT/profiles"

echo "build-dst-pgo: 1/3 the instrumented build" >&2
RUSTFLAGS="${RUSTFLAGS:-} -Cprofile-generate=$PROFILES" \
  cargo build --quiet --profile sim -p umi-scenarios --bin dst --target-dir "$OUT/generate"

echo "build-dst-pgo: 2/3 training: $TRAINING_SEEDS seeds of every scenario, $SWARM_SEEDS under --swarm" >&2
for mode in default swarm; do
  args=(--seeds "$TRAINING_SEEDS")
  if [ "$mode" = swarm ]; then args=(--seeds "$SWARM_SEEDS" --swarm); fi
  status=0
  "$OUT/generate/sim/dst" sweep "${args[@]}" --jobs 1 --in-process --no-record --quiet \
    > "$OUT/training-$mode.txt" 2>&1 || status=$?
  if [ "$status" -ne 0 ]; then
    echo "build-dst-pgo: the $mode training sweep exited $status (see $OUT/training-$mode.txt); its counts are used all the same" >&2
  fi
done
if ! compgen -G "$PROFILES/*.profraw" > /dev/null; then
  echo "build-dst-pgo: the training sweeps wrote no profile under $PROFILES" >&2
  exit 1
fi
"$PROFDATA" merge -o "$OUT/merged.profdata" "$PROFILES"

echo "build-dst-pgo: 3/3 the optimised build" >&2
RUSTFLAGS="${RUSTFLAGS:-} -Cprofile-use=$(pwd)/$OUT/merged.profdata" \
  cargo build --quiet --profile sim -p umi-scenarios --bin dst --target-dir "$OUT/use"
echo "$OUT/use/sim/dst"
