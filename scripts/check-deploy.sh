#!/usr/bin/env bash
# The deployment files users copy, checked by real validators (part of `make lint`):
#   1. the GitHub workflows (.github/workflows/*.yml): actionlint (expressions, actions'
#      inputs, job graph), with shellcheck on every `run:` script, and the SchemaStore
#      workflow schema (check-jsonschema);
#   2. the Kubernetes manifests (docs/k8s/*.yaml): kubernetes-validate --strict against
#      the Kubernetes JSON schemas it bundles (no cluster, no network);
#   3. the Indexed Job printed in docs/guide.md is the very file docs/k8s/sweep-job.yaml;
#   4. each validator fails on a deliberately broken copy, so a validator that checks
#      nothing (a wrong flag, an empty file list) cannot pass silently.
# The validators are pinned in scripts/deploy-requirements.txt and installed as wheels
# into a virtual environment under target/deployenv (created once, refreshed when the
# requirements change), as scripts/python-tests.sh does for the Python clients.
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON="${PYTHON:-python3}"
KUBERNETES_VERSION=1.37.0
GUIDE=docs/guide.md
GUIDE_JOB=docs/k8s/sweep-job.yaml
requirements=scripts/deploy-requirements.txt

if ! command -v "$PYTHON" >/dev/null 2>&1; then
  echo "check-deploy: $PYTHON not found; install Python 3.9 or later (or set PYTHON)" >&2
  exit 1
fi
venv=target/deployenv
stamp="$venv/.requirements"
if [ ! -x "$venv/bin/python" ] || ! cmp -s "$requirements" "$stamp"; then
  echo "== check-deploy: creating $venv"
  rm -rf "$venv"
  "$PYTHON" -m venv "$venv"
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check --only-binary=:all: \
    -r "$requirements"
  cp "$requirements" "$stamp"
fi
bin="$venv/bin"

shopt -s nullglob
workflows=(.github/workflows/*.yml .github/workflows/*.yaml)
manifests=(docs/k8s/*.yaml)
shopt -u nullglob
if [ "${#workflows[@]}" -eq 0 ] || [ "${#manifests[@]}" -eq 0 ]; then
  echo "check-deploy: no workflow or no manifest found (looked in .github/workflows, docs/k8s)" >&2
  exit 1
fi

# Validators, each exiting non-zero on a finding. actionlint gets the pinned shellcheck
# and no pyflakes, so what it reports does not depend on what else is installed.
lint_workflows() { "$bin/actionlint" -no-color -shellcheck="$bin/shellcheck" -pyflakes= "$@"; }
schema_workflows() { "$bin/check-jsonschema" --builtin-schema vendor.github-workflows "$@"; }
validate_manifests() {
  "$bin/kubernetes-validate" --strict --quiet --kubernetes-version "$KUBERNETES_VERSION" "$@"
}

status=0
lint_workflows "${workflows[@]}" || status=1
schema_workflows "${workflows[@]}" >/dev/null || {
  schema_workflows "${workflows[@]}" || true
  status=1
}
validate_manifests "${manifests[@]}" || status=1

# 3. The guide's YAML block that starts with the file's first line is the file.
first_line=$(head -n 1 "$GUIDE_JOB")
guide_copy=$(awk -v first="$first_line" '
  $0 == first && previous == "```yaml" { copying = 1 }
  copying && $0 == "```" { exit }
  copying { print }
  { previous = $0 }' "$GUIDE")
if [ -z "$guide_copy" ]; then
  echo "$GUIDE: no \`\`\`yaml block starting with \"$first_line\" (the copy of $GUIDE_JOB)" >&2
  status=1
elif ! diff -u --label "$GUIDE_JOB" --label "$GUIDE (its copy)" "$GUIDE_JOB" - <<<"$guide_copy"; then
  echo "^ $GUIDE shows a different Job than $GUIDE_JOB; copy the file into the guide" >&2
  status=1
fi

# 4. Each validator must fail on a broken copy. `break_copy FROM TO SED` writes TO and
# fails if SED changed nothing (then this self-check itself would be broken).
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
break_copy() {
  sed -e "$3" "$1" >"$2"
  if cmp -s "$1" "$2"; then
    echo "check-deploy: the breakage '$3' does not apply to $1; update this script" >&2
    exit 1
  fi
}
must_fail() {
  local what=$1
  shift
  if "$@" >/dev/null 2>&1; then
    echo "check-deploy: $what passed a broken file; the check checks nothing" >&2
    status=1
  fi
}
workflow=.github/workflows/nightly-dst.yml
break_copy "$workflow" "$scratch/expression.yml" 's/matrix\.shard }}/matrix.shards }}/'
must_fail "actionlint (an undefined matrix key)" lint_workflows "$scratch/expression.yml"
break_copy "$workflow" "$scratch/script.yml" 's/"\${swarm\[@\]}"/$swarm/'
must_fail "actionlint's shellcheck (an unquoted variable)" lint_workflows "$scratch/script.yml"
break_copy "$workflow" "$scratch/key.yml" '0,/runs-on:/s//runs_on:/'
must_fail "check-jsonschema (a misspelt key)" schema_workflows "$scratch/key.yml"
break_copy "$GUIDE_JOB" "$scratch/field.yaml" 's/^\( *\)restartPolicy: Never$/&\n\1restartPolicyy: Never/'
must_fail "kubernetes-validate (an unknown field)" validate_manifests "$scratch/field.yaml"
break_copy "$GUIDE_JOB" "$scratch/type.yaml" 's/^\( *\)completions: [0-9]*/\1completions: "all"/'
must_fail "kubernetes-validate (a string for a count)" validate_manifests "$scratch/type.yaml"

if [ "$status" -eq 0 ]; then
  echo "deploy checks: ok (${#workflows[@]} workflow(s), ${#manifests[@]} manifest(s); each validator fails a broken copy)"
fi
exit "$status"
