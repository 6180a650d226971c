#!/usr/bin/env bash
# The TypeScript side against `dst serve` (ts/): @umi-dst/node's own tests and the
# pinned openai, @anthropic-ai/sdk and AI SDK clients over it, under node's test runner.
# Installs ts/package-lock.json with `npm ci` (once, again when the lock changes), checks
# the type declarations with tsc, builds `dst` unless UMI_DST names one, then runs
# `node --test`. Part of `make test`. Extra arguments are options of node --test
# (`scripts/ts-tests.sh --test-name-pattern cut`).
set -euo pipefail
cd "$(dirname "$0")/.."

NODE="${NODE:-node}"
if ! command -v "$NODE" >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  echo "ts-tests: node and npm not found; install Node.js 20 or later (or set NODE)" >&2
  exit 1
fi
major="$("$NODE" -p 'process.versions.node.split(".")[0]')"
if [ "$major" -lt 20 ]; then
  echo "ts-tests: node $("$NODE" --version) is too old; the tests need Node.js 20 or later" >&2
  exit 1
fi

if [ -z "${UMI_DST:-}" ]; then
  cargo build --quiet -p umi-scenarios --bin dst
  target="${CARGO_TARGET_DIR:-target}"
  case "$target" in /*) ;; *) target="$(pwd)/$target" ;; esac
  export UMI_DST="$target/debug/dst"
fi

cd ts
stamp=node_modules/.umi-package-lock.json
if [ ! -f "$stamp" ] || ! cmp -s package-lock.json "$stamp"; then
  echo "== ts-tests: npm ci in ts/"
  npm ci --no-audit --no-fund --loglevel=error
  cp package-lock.json "$stamp"
fi
echo "== ts-tests: tsc (declarations)"
node_modules/.bin/tsc -p .
echo "== ts-tests: node --test (dst: $UMI_DST)"
"$NODE" --test --test-timeout=120000 "$@" test/*.test.mjs
