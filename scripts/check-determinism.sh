#!/usr/bin/env bash
# Determinism checks clippy cannot express (see docs/adr/0001-determinism.md):
#   1. every `select!` is `biased;` (an unbiased select polls branches in a random order);
#   2. no `HashMap`/`HashSet` in code that runs inside simulations, even via a full path
#      that clippy.toml's disallowed-types would also catch (belt and braces for macros).
set -euo pipefail
cd "$(dirname "$0")/.."

status=0
dirs=(umi-core/src umi-dst/src umi-sweep/src scenarios/src examples)
existing=()
for dir in "${dirs[@]}"; do [ -d "$dir" ] && existing+=("$dir"); done

# 1. select! must be followed (within two lines) by `biased;`.
while IFS=: read -r file line _; do
  window=$(sed -n "${line},$((line + 2))p" "$file")
  if ! grep -q 'biased;' <<<"$window"; then
    echo "$file:$line: select! without \`biased;\` (branch order would be random)"
    status=1
  fi
done < <(grep -rn --include='*.rs' -E '\bselect!\s*\{' "${existing[@]}" | grep -vE '^\S+:[0-9]+:\s*//' || true)

# 2. Hash-ordered collections. A line marked `// determinism: allowed (<reason>)` is
#    exempt: a third-party trait whose signature takes a HashMap (rmcp's
#    StreamableHttpClient), where the code sorts it before anything reads its order.
if grep -rn --include='*.rs' -E '\b(HashMap|HashSet)\b' "${existing[@]}" | grep -vE '^\S+:[0-9]+:\s*(//|\*)' \
  | grep -vE '// determinism: allowed \(.+\)'; then
  echo "^ HashMap/HashSet in simulated code: iteration order is seeded per process; use BTreeMap/BTreeSet/Vec"
  status=1
fi

if [ "$status" -eq 0 ]; then
  echo "determinism checks: ok"
fi
exit "$status"
