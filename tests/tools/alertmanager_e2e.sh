#!/usr/bin/env bash
# One incident, one page, end to end with the real pieces on 127.0.0.1: `llmprobe mock`
# targets probed by `llmprobe daemon`, the real Prometheus with the rules rendered by the
# Helm chart at prometheusRule.timeCompression=60 (one test second per production minute),
# the real Alertmanager (Debian prometheus-alertmanager) with alertmanager/llmprobe.yml,
# and a webhook receiver recording every notification (tests/alertmanager_e2e/run.py has
# the scenarios and checks); then three daemons in two locations, one of them an HA pair,
# with the five many-probers scenarios (tests/alertmanager_e2e/many_probers.py). First,
# offline: `amtool check-config` and the routing of
# every alert severity with `amtool config routes test`, and docs/deploy.md's
# detection-time table against the model of the rules (tests/alertmanager_e2e/detection.py).
#
# Environment: LLMPROBE_BIN (the llmprobe binary), LLMPROBE_PROMETHEUS, LLMPROBE_ALERTMANAGER,
# LLMPROBE_AMTOOL, LLMPROBE_HELM; LLMPROBE_AM_E2E_ARGS (extra run.py arguments).
source "$(dirname "$0")/lib/common.bash"
cd "$repo_root"
need_tool LLMPROBE_AMTOOL amtool
amtool=$LLMPROBE_AMTOOL
config=alertmanager/llmprobe.yml

say "amtool check-config $config"
"$amtool" check-config "$config" >/dev/null || { "$amtool" check-config "$config"; fail "amtool check-config $config"; }
route() { # expected receiver, labels...
  local want=$1 got; shift
  got=$("$amtool" config routes test --config.file="$config" "$@" 2>/dev/null) || true
  [ "$got" = "$want" ] || fail "route of {$*}: '$got', expected '$want'"
}
for alert in $(sed -n 's/^ *- alert: *//p' alerts/*.yaml | sort -u); do
  route llmprobe-page alertname="$alert" severity=page
  route llmprobe-ticket alertname="$alert" severity=ticket
  route llmprobe-ticket alertname="$alert" severity=warning
done
say "routes: page -> llmprobe-page, ticket and warning -> llmprobe-ticket"

need_tool LLMPROBE_PROMETHEUS prometheus
need_tool LLMPROBE_ALERTMANAGER prometheus-alertmanager
need_tool LLMPROBE_HELM helm
bin=${LLMPROBE_BIN:-$repo_root/target/debug/llmprobe}
[ -x "$bin" ] || fail "no llmprobe binary at $bin (set LLMPROBE_BIN)"
# PyYAML: the kubernetes-validate virtualenv has it, else the system Python.
py=python3
if [ -n "${LLMPROBE_KUBERNETES_VALIDATE:-}" ] && [ -x "$(dirname "$LLMPROBE_KUBERNETES_VALIDATE")/python" ]; then
  py=$(dirname "$LLMPROBE_KUBERNETES_VALIDATE")/python
fi
"$py" -c 'import yaml' 2>/dev/null || skip_or_fail "PyYAML not found for $py"
make_scratch

# docs/deploy.md's detection-time table is what the rules give (detection.py simulates them).
"$py" tests/alertmanager_e2e/detection.py --check docs/deploy.md \
  || fail "docs/deploy.md: detection-time table out of date (tests/alertmanager_e2e/detection.py --table)"

# The rules as the chart renders them with every window divided by 60.
compression=60
"$LLMPROBE_HELM" template llmprobe helm/llmprobe --set prometheusRule.enabled=true \
  --set prometheusRule.timeCompression=$compression --show-only templates/prometheusrule.yaml \
  2> >(grep -v 'found symbolic link in path' >&2 || true) > "$scratch/prometheusrule.yaml" \
  || fail "helm template with prometheusRule.timeCompression=$compression"
"$py" -c 'import sys, yaml; yaml.safe_dump(yaml.safe_load(open(sys.argv[1]))["spec"], open(sys.argv[2], "w"))' \
  "$scratch/prometheusrule.yaml" "$scratch/rules.yaml" || fail "extracting the rule groups"
promtool=${LLMPROBE_PROMTOOL:-$(command -v promtool || true)}
if [ -n "$promtool" ]; then "$promtool" check rules "$scratch/rules.yaml" >/dev/null || fail "promtool check rules (compressed)"; fi

say "end to end (about 2.5 minutes): daemon + mocks, Prometheus, Alertmanager, webhook"
start=$(date +%s)
# shellcheck disable=SC2086 # extra arguments are a list of words
if ! "$py" tests/alertmanager_e2e/run.py --bin "$bin" --prometheus "$LLMPROBE_PROMETHEUS" \
    --alertmanager "$LLMPROBE_ALERTMANAGER" --amtool "$amtool" --rules "$scratch/rules.yaml" \
    --am-config "$config" --scratch "$scratch" --compression $compression ${LLMPROBE_AM_E2E_ARGS:-}; then
  for f in alertmanager control control-keep prometheus prometheus-control daemon; do
    say "$f log (tail):"; tail -n 20 "$scratch/$f.log" >&2 || true
  done
  fail "one page per incident: see above"
fi
say "one incident, one page: ok ($(( $(date +%s) - start )) s)"

say "many probers (about 3 minutes): three daemons in two locations, one HA pair"
start=$(date +%s)
if ! "$py" tests/alertmanager_e2e/many_probers.py --bin "$bin" --prometheus "$LLMPROBE_PROMETHEUS" \
    --alertmanager "$LLMPROBE_ALERTMANAGER" --amtool "$amtool" --rules "$scratch/rules.yaml" \
    --am-config "$config" --scratch "$scratch" --compression $compression; then
  for f in mp-alertmanager mp-prometheus mp-daemon-eu mp-daemon-us-a mp-daemon-us-b; do
    say "$f log (tail):"; tail -n 20 "$scratch/$f.log" >&2 || true
  done
  fail "many probers: see above"
fi
say "many probers: ok ($(( $(date +%s) - start )) s)"
