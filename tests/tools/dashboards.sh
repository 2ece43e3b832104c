#!/usr/bin/env bash
# dashboards/: up to date with dashboards/generate.py, structural rules (lint.py), and
# type-checked against @grafana/schema's Dashboard with TypeScript (tests/dashboards/).
# A deliberately wrong dashboard (tests/dashboards/fixtures/wrong-dashboard.json) must fail
# the type check, so the check can fail.
source "$(dirname "$0")/lib/common.bash"
cd "$repo_root"

python3 dashboards/generate.py --check || fail "dashboards/*.json differ from dashboards/generate.py"
python3 tests/dashboards/lint.py || fail "dashboard lint"
python3 tests/dashboards/lint.py --selftest || fail "dashboard lint selftest"

node_tools=${LLMPROBE_NODE_TOOLS:-}
if [ -z "$node_tools" ] || [ ! -x "$node_tools/node_modules/.bin/tsc" ]; then
  skip_or_fail "TypeScript not found (\$LLMPROBE_NODE_TOOLS unset; run scripts/install-tools)"
fi
[ -d "$node_tools/node_modules/@grafana/schema" ] \
  || skip_or_fail "@grafana/schema not installed in $node_tools"
tsc=$node_tools/node_modules/.bin/tsc
say "tsc $("$tsc" --version), @grafana/schema $(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["version"])' "$node_tools/node_modules/@grafana/schema/package.json")"

make_scratch
project=$scratch/project
mkdir -p "$project"
cp tests/dashboards/tsconfig.json tests/dashboards/schema.ts "$project/"
ln -s "$node_tools/node_modules" "$project/node_modules"

# wrap NAME JSON: a TS module holding the dashboard as a fresh object literal.
wrap() {
  { echo "import type { DashboardJson } from './schema.js';"
    printf 'export const dashboard: DashboardJson = '
    cat "$2"
    echo ';'
  } > "$project/$1.ts"
}
shopt -s nullglob
dashboards=(dashboards/*.json)
[ ${#dashboards[@]} -gt 0 ] || fail "no dashboards/*.json"
for d in "${dashboards[@]}"; do wrap "$(basename "$d" .json)" "$d"; done

say "tsc --noEmit: ${dashboards[*]}"
(cd "$project" && "$tsc" -p .) || fail "dashboards do not type-check against @grafana/schema"

wrap wrong-dashboard tests/dashboards/fixtures/wrong-dashboard.json
if (cd "$project" && "$tsc" -p .) >"$scratch/wrong.out" 2>&1; then
  fail "the deliberately wrong dashboard type-checked: the check cannot fail"
fi
# Each planted mistake is reported, and nothing else is.
for want in "TS2322: Type 'string' is not assignable to type 'number'" \
            "'\"dropdown\"' is not assignable to type 'VariableType'" \
            "'\"fieldConfg\"' does not exist"; do
  grep -qF "$want" "$scratch/wrong.out" || { cat "$scratch/wrong.out" >&2; fail "wrong dashboard: expected error missing: $want"; }
done
if grep -v '^wrong-dashboard\.ts' "$scratch/wrong.out" | grep -q 'error TS'; then
  cat "$scratch/wrong.out" >&2; fail "errors outside the wrong dashboard"
fi
say "ok (wrong dashboard rejected with $(grep -c 'error TS' "$scratch/wrong.out") errors)"
