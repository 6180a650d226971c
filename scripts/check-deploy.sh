#!/usr/bin/env bash
# The deployment files users copy, checked by real validators (part of `make lint`):
#   1. the GitHub workflows (.github/workflows/*.yml): actionlint (expressions, actions'
#      inputs, job graph), with shellcheck on every `run:` script, and the SchemaStore
#      workflow schema (check-jsonschema);
#   2. the Kubernetes manifests (docs/k8s/*.yaml): kubernetes-validate --strict against
#      the Kubernetes JSON schemas it bundles (no cluster, no network);
#   3. the shard count is said once: the Job's completions and parallelism are the N of
#      `--shard auto/N`, the workflow's shard matrix is 1..SHARDS;
#   3b. the shard counts are enough for the seeds and budgets (`dst size`, the measured
#      rates in scenarios/throughput.toml);
#   4. the Indexed Job printed in docs/guide.md is the very file docs/k8s/sweep-job.yaml;
#   4b. the release workflow (.github/workflows/release.yml) builds what the READMEs
#      promise: maturin wheels on Linux and macOS, and the npm package of ts/;
#   4c. the nightly sweeps with the PGO build of `dst` (scripts/build-dst-pgo.sh), whose
#      rates scenarios/throughput.toml holds;
#   5. each validator fails on a deliberately broken copy, so a validator that checks
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

# 3. What no schema knows: the shard count is said once. The Job's completions and
# parallelism are the N of `--shard auto/N` and its mode is Indexed; the workflow's shard
# matrix is 1..SHARDS.
shard_counts() {
  "$bin/python" - "$@" <<'PY'
import re, sys, yaml
problems = []
def say(path, text):
    problems.append(f"{path}: {text}")
for path in sys.argv[1:]:
    with open(path) as f:
        docs = [d for d in yaml.safe_load_all(f) if d]
    for doc in docs:
        if doc.get("kind") == "Job":
            spec = doc.get("spec", {})
            words = [w for c in spec.get("template", {}).get("spec", {}).get("containers", [])
                     for w in c.get("command", []) + c.get("args", [])]
            counts = [int(m.group(1)) for before, w in zip(words, words[1:])
                      if before == "--shard" and (m := re.fullmatch(r"auto/(\d+)", w))]
            if len(counts) != 1:
                say(path, "the Job runs no `--shard auto/N`"); continue
            n = counts[0]
            if spec.get("completionMode") != "Indexed":
                say(path, "completionMode must be Indexed (--shard auto reads JOB_COMPLETION_INDEX)")
            for key in ("completions", "parallelism"):
                if spec.get(key) != n:
                    say(path, f"spec.{key} is {spec.get(key)}, not the {n} of --shard auto/{n}")
        elif "jobs" in doc:
            shards = doc.get("env", {}).get("SHARDS")
            for name, job in doc["jobs"].items():
                matrix = job.get("strategy", {}).get("matrix", {})
                if "shard" in matrix and shards is not None and matrix["shard"] != list(range(1, int(shards) + 1)):
                    say(path, f"jobs.{name}: matrix.shard is {matrix['shard']}, not 1..{shards} (env SHARDS)")
for p in problems:
    print(p, file=sys.stderr)
sys.exit(1 if problems else 0)
PY
}
shard_counts "${workflows[@]}" "${manifests[@]}" || status=1

# 3b. The shard counts are enough: each file's seeds, determinism check, cores and time
# budget, sized by `dst size` with the measured rates (scenarios/throughput.toml), need
# no more shards than the file runs. The workflow's runners are GitHub's ubuntu-latest
# as private repositories get them: 2 cores (public ones get 4; 2 is the safe side). A
# Job's pods have the cores their container requests.
RUNNER_CORES=2
sizing_args() {
  "$bin/python" - "$RUNNER_CORES" "$@" <<'PY'
import re, sys, yaml
runner_cores, paths = sys.argv[1], sys.argv[2:]
def flag(words, name):
    return next((b for a, b in zip(words, words[1:]) if a == name), None)
for path in paths:
    with open(path) as f:
        docs = [d for d in yaml.safe_load_all(f) if d]
    for doc in docs:
        if doc.get("kind") == "Job":
            spec = doc["spec"]
            for c in spec["template"]["spec"]["containers"]:
                words = c.get("command", []) + c.get("args", [])
                if "--shard" not in words:
                    continue
                cores = str(c["resources"]["requests"]["cpu"])
                args = ["--seeds", flag(words, "--seeds"), "--cores", cores,
                        "--time-budget", flag(words, "--time-budget")]
                if "--check-determinism" in words:
                    args.append("--check-determinism")
                print(path, spec["completions"], *args)
        elif "jobs" in doc and "SHARDS" in doc.get("env", {}):
            for step in (s for j in doc["jobs"].values() for s in j.get("steps", [])):
                script = step.get("run", "")
                if "dst sweep" not in script:
                    continue
                seeds = int(re.search(r"'(\d+)'", step["env"]["SEEDS"]).group(1))
                swarm = seeds // int(re.search(r"SEEDS=\$\(\(SEEDS / (\d+)\)\)", script).group(1))
                budget = re.search(r"--time-budget (\S+)", script).group(1)
                args = ["--seeds", str(seeds), "--swarm-seeds", str(swarm), "--cores", runner_cores,
                        "--time-budget", budget]
                if "--check-determinism" in script:
                    args.append("--check-determinism")
                print(path, doc["env"]["SHARDS"], *args)
PY
}
shards_enough() {
  local lines
  lines=$(sizing_args "$@") || return 1
  [ -n "$lines" ] || { echo "check-deploy: no sweep to size in $*" >&2; return 1; }
  local ok=0 path shards args file
  # Every file given must have a sweep the rule sized: a workflow whose step no longer
  # reads as expected must fail here, not pass on the Job's line alone.
  for file in "$@"; do
    if grep -q -e "dst sweep" -e "--shard" "$file" && ! grep -q "^$file " <<<"$lines"; then
      echo "check-deploy: $file: no sweep found to size (its dst sweep step, SHARDS or --shard)" >&2
      ok=1
    fi
  done
  while read -r path shards args; do
    # shellcheck disable=SC2086 # the sizing flags, one word each
    if ! cargo run -q -p umi-scenarios --bin dst -- size $args --shards "$shards" >"$scratch_sizing" 2>&1; then
      echo "$path: $shards shards are too few for its sweep (dst size $args):" >&2
      cat "$scratch_sizing" >&2
      ok=1
    fi
  done <<<"$lines"
  return "$ok"
}
scratch_sizing=$(mktemp)
shards_enough "${workflows[@]}" "${manifests[@]}" || status=1

# 4. The guide's YAML block that starts with the file's first line is the file.
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

# 4b. The release workflow builds the wheels on Linux and macOS (maturin, with python/
# as its directory) and packs ts/ (npm pack), and runs on version tags.
RELEASE=.github/workflows/release.yml
release_builds() {
  "$bin/python" - "$@" <<'PY'
import sys, yaml
problems = []
for path in sys.argv[1:]:
    with open(path) as f:
        doc = yaml.safe_load(f)
    # YAML reads the key `on` as True.
    tags = (doc.get(True) or doc.get("on") or {}).get("push", {}).get("tags", [])
    if not any(t.startswith("v") for t in tags):
        problems.append(f"{path}: not run on version tags (on.push.tags: v*)")
    systems, packed = set(), False
    for name, job in doc.get("jobs", {}).items():
        steps = job.get("steps", [])
        maturin = [s for s in steps if str(s.get("uses", "")).startswith("PyO3/maturin-action@")]
        if maturin:
            if any(s.get("with", {}).get("working-directory") != "python" for s in maturin):
                problems.append(f"{path}: jobs.{name}: maturin must build python/ (working-directory: python)")
            runners = [row.get("os", "") for row in job.get("strategy", {}).get("matrix", {}).get("include", [])]
            runners.append(str(job.get("runs-on", "")))
            systems |= {system for system in ("ubuntu", "macos") for runner in runners if runner.startswith(system)}
        workdir = job.get("defaults", {}).get("run", {}).get("working-directory")
        if workdir == "ts" and any("npm pack" in str(s.get("run", "")) for s in steps):
            packed = True
    for system in ("ubuntu", "macos"):
        if system not in systems:
            problems.append(f"{path}: no maturin wheel built on {system}")
    if not packed:
        problems.append(f"{path}: no job packs the npm package (npm pack in ts/)")
for p in problems:
    print(p, file=sys.stderr)
sys.exit(1 if problems else 0)
PY
}
release_builds "$RELEASE" || status=1

# 4c. The nightly sweeps run the `dst` that scenarios/throughput.toml's rates were
# measured with, the one scripts/build-dst-pgo.sh builds (3b sizes the shards from those
# rates): a job builds it with the script and every job that sweeps needs that job.
nightly_builds_pgo() {
  "$bin/python" - "$@" <<'PY'
import sys, yaml
problems = []
for path in sys.argv[1:]:
    with open(path) as f:
        jobs = yaml.safe_load(f).get("jobs", {})
    runs = lambda job: " ".join(str(s.get("run", "")) for s in job.get("steps", []))
    def artifacts(job, action):
        return {str(s.get("with", {}).get("name")) for s in job.get("steps", [])
                if str(s.get("uses", "")).startswith(f"actions/{action}-artifact@")}
    # A builder runs the script and uploads what it built.
    builders = {name: artifacts(job, "upload") for name, job in jobs.items()
                if "scripts/build-dst-pgo.sh" in runs(job) and artifacts(job, "upload")}
    if not builders:
        problems.append(f"{path}: no job builds dst with scripts/build-dst-pgo.sh and uploads it")
    for name, job in jobs.items():
        if "dst sweep" not in runs(job) and "--bin dst -- sweep" not in runs(job):
            continue
        needs = job.get("needs", [])
        needs = [needs] if isinstance(needs, str) else needs
        built = set().union(*(builders[n] for n in needs if n in builders))
        if not built & artifacts(job, "download"):
            problems.append(f"{path}: jobs.{name} sweeps without downloading the PGO build of a job it needs")
        if "cargo build" in runs(job) or "cargo run" in runs(job):
            problems.append(f"{path}: jobs.{name} builds a dst of its own to sweep with")
for p in problems:
    print(p, file=sys.stderr)
sys.exit(1 if problems else 0)
PY
}
nightly_builds_pgo .github/workflows/nightly-dst.yml || status=1

# 5. Each validator must fail on a broken copy. `break_copy FROM TO SED` writes TO and
# fails if SED changed nothing (then this self-check itself would be broken).
scratch=$(mktemp -d)
trap 'rm -rf "$scratch" "$scratch_sizing"' EXIT
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
break_copy "$workflow" "$scratch/plain.yml" 's|dst="$(scripts/build-dst-pgo.sh)"|dst=target/sim/dst; cargo build --profile sim -p umi-scenarios --bin dst|'
must_fail "the PGO build check (a nightly built without it)" nightly_builds_pgo "$scratch/plain.yml"
break_copy "$workflow" "$scratch/unneeded.yml" 's/^    needs: build$/    needs: []/'
must_fail "the PGO build check (a sweep that does not wait for it)" nightly_builds_pgo "$scratch/unneeded.yml"
break_copy "$GUIDE_JOB" "$scratch/field.yaml" 's/^\( *\)restartPolicy: Never$/&\n\1restartPolicyy: Never/'
must_fail "kubernetes-validate (an unknown field)" validate_manifests "$scratch/field.yaml"
break_copy "$GUIDE_JOB" "$scratch/type.yaml" 's/^\( *\)completions: [0-9]*/\1completions: "all"/'
must_fail "kubernetes-validate (a string for a count)" validate_manifests "$scratch/type.yaml"
break_copy "$GUIDE_JOB" "$scratch/count.yaml" 's/^\( *\)parallelism: [0-9]*/\1parallelism: 31/'
must_fail "the shard-count check (parallelism is not N)" shard_counts "$scratch/count.yaml"
break_copy "$workflow" "$scratch/matrix.yml" 's/shard: \[\(.*\), [0-9]*\]/shard: [\1]/'
must_fail "the shard-count check (a shard missing from the matrix)" shard_counts "$scratch/matrix.yml"
break_copy "$GUIDE_JOB" "$scratch/few.yaml" 's/"--seeds", "1000000"/"--seeds", "9000000"/'
must_fail "the sizing check (the Job's shards too few for its seeds)" shards_enough "$scratch/few.yaml"
break_copy "$workflow" "$scratch/few.yml" "s/'400000'/'4000000'/"
must_fail "the sizing check (the workflow's shards too few for its seeds)" shards_enough "$scratch/few.yml"
break_copy "$RELEASE" "$scratch/release-key.yml" '0,/runs-on:/s//runs_on:/'
must_fail "check-jsonschema (a misspelt key in the release workflow)" schema_workflows "$scratch/release-key.yml"
break_copy "$RELEASE" "$scratch/release-macos.yml" 's/os: macos-latest/os: windows-latest/'
must_fail "the release check (no macOS wheel)" release_builds "$scratch/release-macos.yml"
break_copy "$RELEASE" "$scratch/release-npm.yml" 's/npm pack --pack-destination dist/npm install/'
must_fail "the release check (no npm package)" release_builds "$scratch/release-npm.yml"

if [ "$status" -eq 0 ]; then
  echo "deploy checks: ok (${#workflows[@]} workflow(s), ${#manifests[@]} manifest(s); each validator fails a broken copy)"
fi
exit "$status"
