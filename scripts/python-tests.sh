#!/usr/bin/env bash
# The Python clients' tests against `dst serve` (tests/python): a virtual environment
# with the pinned `openai`, `anthropic`, `ollama` and `pytest` packages under
# target/pyenv (created once, refreshed when requirements.txt changes), the `dst`
# binary built, then pytest. Part of `make test`.
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON="${PYTHON:-python3}"
if ! command -v "$PYTHON" >/dev/null 2>&1; then
  echo "python-tests: $PYTHON not found; install Python 3.9 or later (or set PYTHON)" >&2
  exit 1
fi
venv=target/pyenv
stamp="$venv/.requirements"
if [ ! -x "$venv/bin/python" ] || ! cmp -s tests/python/requirements.txt "$stamp"; then
  echo "== python-tests: creating $venv"
  rm -rf "$venv"
  "$PYTHON" -m venv "$venv"
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r tests/python/requirements.txt
  cp tests/python/requirements.txt "$stamp"
fi
cargo build --quiet -p umi-scenarios --bin dst
UMI_DST="${CARGO_TARGET_DIR:-$(pwd)/target}/debug/dst" "$venv/bin/python" -m pytest -q tests/python examples/python-agent "$@"
