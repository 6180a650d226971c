#!/usr/bin/env bash
# The Python side against `dst serve`: the pinned third-party clients (tests/python), the
# agent frameworks on them (tests/python/frameworks), the example agent, and the umi
# pytest plugin's own tests (python/tests). A virtual environment with the pinned
# packages of tests/python/requirements.txt under target/pyenv (created once, refreshed
# when requirements.txt changes), the `dst` binary built (unless UMI_DST names one), the
# plugin loaded from python/src, Debian's chromium installed if missing (apt-get, as root
# or through `sudo -n`), then pytest. Part of `make test`.
#
#   scripts/python-tests.sh [--wheel] [pytest args...]
#   --wheel   also build the umi-dst wheel with maturin and install it into a fresh venv
#             (python/tests/test_wheel.py; a cargo build, so opt-in)
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "${1:-}" = "--wheel" ]; then
  shift
  export UMI_TEST_WHEEL=1
fi

PYTHON="${PYTHON:-python3}"
if ! command -v "$PYTHON" >/dev/null 2>&1; then
  echo "python-tests: $PYTHON not found; install Python 3.11 or later (or set PYTHON)" >&2
  exit 1
fi
if ! "$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 11))'; then
  echo "python-tests: $("$PYTHON" --version) is too old; pydantic-ai needs Python 3.11 or later (or set PYTHON)" >&2
  exit 1
fi
# Debian's Chromium for the HTML report pages' browser test (tests/python/
# test_html_report.py drives it through playwright; never `playwright install`, which
# downloads a browser). Installed here when missing; the test fails, naming the path,
# if it still is.
CHROMIUM=/usr/bin/chromium
if [ ! -x "$CHROMIUM" ]; then
  echo "== python-tests: installing chromium (for tests/python/test_html_report.py)"
  if [ "$(id -u)" = 0 ]; then apt=(apt-get); else apt=(sudo -n apt-get); fi
  "${apt[@]}" install -y --no-install-recommends chromium \
    || { "${apt[@]}" update && "${apt[@]}" install -y --no-install-recommends chromium; } \
    || echo "python-tests: could not install chromium; test_html_report.py will fail" >&2
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
if [ -z "${UMI_DST:-}" ]; then
  cargo build --quiet -p umi-scenarios --bin dst
  target="${CARGO_TARGET_DIR:-target}"
  case "$target" in /*) ;; *) target="$(pwd)/$target" ;; esac
  UMI_DST="$target/debug/dst"
fi
# Absolute: the plugin's own tests run inner sessions from other directories.
case "$UMI_DST" in /*) ;; *) UMI_DST="$(pwd)/$UMI_DST" ;; esac
export UMI_DST
export PYTHONPATH="$(pwd)/python/src${PYTHONPATH:+:$PYTHONPATH}"
"$venv/bin/python" -m pytest -p umi_dst.plugin -q --rootdir . \
  tests/python examples/python-agent examples/python-mcp-agent examples/python-cassette python/tests "$@"
