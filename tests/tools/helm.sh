#!/usr/bin/env bash
# helm/llmprobe: `helm lint --strict`, `helm template` for the default values and every
# ci/*-values.yaml, the core objects validated offline against the Kubernetes schemas
# (kubernetes-validate, strict), the CRD objects and cross-object rules checked by
# lib/chart_checks.py, the rendered PrometheusRule passed through promtool, values the
# schema must reject rejected, the opt-in engine headless Service checked (headless, its
# selector and port, unseen by the ServiceMonitor), the daemon's shapes (shards 1 and 3,
# with and without highAvailability: Deployment or StatefulSets, --shard, POD_INDEX,
# anti-affinity, PodDisruptionBudget, the ServiceMonitor's pod label, --location; by
# lib/shard_checks.py, shown able to fail on altered manifests), and `helm package`
# shipping the rule and dashboard files.
source "$(dirname "$0")/lib/common.bash"
need_tool LLMPROBE_HELM helm
need_tool LLMPROBE_KUBERNETES_VALIDATE kubernetes-validate
need_tool LLMPROBE_PROMTOOL promtool
helm=$LLMPROBE_HELM kv=$LLMPROBE_KUBERNETES_VALIDATE promtool=$LLMPROBE_PROMTOOL
# chart_checks.py needs PyYAML: the kubernetes-validate virtualenv has it.
py=$(dirname "$kv")/python
[ -x "$py" ] || py=python3
"$py" -c 'import yaml' 2>/dev/null || skip_or_fail "PyYAML not found for $py"
chart=$repo_root/helm/llmprobe
checks=$repo_root/tests/tools/lib/chart_checks.py
# The oldest Kubernetes the chart supports (Chart.yaml kubeVersion) and a current one.
kube_versions=(1.27.0 1.35.0)
# The daemon validates each rendered config (`--config.check`) when it is available.
bin=${LLMPROBE_BIN:-$repo_root/target/debug/llmprobe}
daemon_check=0
if "$bin" daemon --help >/dev/null 2>&1; then daemon_check=1; fi
make_scratch
export HELM_CACHE_HOME=$scratch/helm-cache HELM_CONFIG_HOME=$scratch/helm-config HELM_DATA_HOME=$scratch/helm-data
quiet_symlinks() { grep -v 'found symbolic link in path' >&2 || true; }

say "$("$helm" version --short 2>/dev/null)"
"$helm" lint --strict "$chart" > "$scratch/lint.log" 2> >(quiet_symlinks) \
  || { cat "$scratch/lint.log" >&2; fail "helm lint --strict (default values)"; }

: > "$scratch/empty-values.yaml"
value_files=("$scratch/empty-values.yaml" "$chart"/ci/*-values.yaml)
[ ${#value_files[@]} -ge 4 ] || fail "expected at least 3 ci/*-values.yaml files"
for values in "${value_files[@]}"; do
  name=$(basename "$values" .yaml)
  out=$scratch/$name
  mkdir -p "$out"
  say "values: ${values#"$repo_root"/}"
  "$helm" lint --strict "$chart" -f "$values" > "$out/lint.log" 2> >(quiet_symlinks) \
    || { cat "$out/lint.log" >&2; fail "helm lint --strict -f $name"; }
  "$helm" template llmprobe "$chart" --namespace probes -f "$values" > "$out/rendered.yaml" \
    2> >(quiet_symlinks) || fail "helm template -f $name"
  "$py" "$checks" split "$out/rendered.yaml" "$out/core.yaml" "$out/crds.yaml" || fail "split $name"
  for k in "${kube_versions[@]}"; do
    "$kv" --strict --quiet -k "$k" "$out/core.yaml" || fail "kubernetes-validate $k: $name"
  done
  "$py" "$checks" check "$out/rendered.yaml" "$values" "$repo_root" "$out/rules.yaml" \
    || fail "chart checks: $name"
  if [ "$daemon_check" = 1 ]; then
    mkdir -p "$out/secrets"
    rc=0
    "$py" "$checks" config "$out/rendered.yaml" "$out/secrets" "$out/config.yaml" || rc=$?
    if [ "$rc" = 0 ]; then
      "$bin" daemon --config.check --config "$out/config.yaml" \
        || fail "llmprobe daemon --config.check rejects the ConfigMap of $name"
      say "  llmprobe daemon --config.check: ok"
    elif [ "$rc" = 3 ]; then
      say "  no target in config (the daemon would refuse to start; NOTES.txt warns)"
    else
      fail "extracting the daemon config of $name"
    fi
  fi
  if [ -s "$out/rules.yaml" ]; then
    "$promtool" check rules "$out/rules.yaml" >/dev/null || fail "promtool check rules: PrometheusRule of $name"
  fi
  say "  $(grep -c '^kind:' "$out/rendered.yaml") objects: $(grep '^kind:' "$out/rendered.yaml" | sort | uniq -c | awk '{printf "%s %s, ", $1, $3}')"
done

# The sweep Job's bench flags exist in `llmprobe bench` (when the binary has it).
if "$bin" bench --help > "$scratch/bench-help.txt" 2>&1; then
  flags=$("$py" -c 'import sys, yaml
for d in yaml.safe_load_all(open(sys.argv[1])):
    if d and d["kind"] == "Job":
        print("\n".join(a for a in d["spec"]["template"]["spec"]["containers"][0]["args"] if a.startswith("--")))' \
    "$scratch/sweep-values/rendered.yaml" | sort -u)
  [ -n "$flags" ] || fail "no flags found in the sweep Job's args"
  for flag in $flags; do
    grep -qE -- "(^|[ ,])$flag([ =,]|\$)" "$scratch/bench-help.txt" \
      || fail "sweep Job passes $flag, which 'llmprobe bench --help' does not list"
  done
  say "sweep Job flags known to llmprobe bench: $(echo $flags | tr '\n' ' ')"
else
  say "SKIP: '$bin bench --help' failed: sweep Job flags not checked against the binary"
fi

# The schema and the templates refuse bad values with a message.
reject() { # what, helm args...
  local what=$1; shift
  if "$helm" template llmprobe "$chart" "$@" > /dev/null 2> "$scratch/reject.log"; then
    fail "accepted $what"
  fi
  say "rejected $what: $(grep -v 'symbolic link' "$scratch/reject.log" | head -n 2 | tr '\n' ' ' | cut -c1-160)"
}
reject "an objective of 1.5" --set prometheusRule.objectives.goodput=1.5
reject "a single minRequests number" --set prometheusRule.minRequests=20
reject "a minRequests window the rules do not have" --set prometheusRule.minRequests.2h=5
reject "a quorum of no location" --set prometheusRule.minFailingLocations=0
reject "an unknown top-level value" --set replicas=2
reject "config.listen without a port" --set config.listen=localhost
reject "a sweep without a model" --set sweep.enabled=true
reject "an engine headless Service without a selector" --set engineHeadlessService.enabled=true
reject "an engine headless Service with a bad name" --set engineHeadlessService.name=Vllm_Headless
reject "an AlertmanagerConfig without the route's receivers" --set alertmanagerConfig.enabled=true
reject "a timeCompression that does not divide the rule windows" \
  --set prometheusRule.enabled=true --set prometheusRule.timeCompression=7

# timeCompression divides every range window, for and keep_firing_for, and nothing else.
"$helm" template llmprobe "$chart" --set prometheusRule.enabled=true --set prometheusRule.timeCompression=60 \
  --show-only templates/prometheusrule.yaml > "$scratch/compressed.yaml" 2> >(quiet_symlinks) \
  || fail "helm template with prometheusRule.timeCompression=60"
"$py" - "$scratch/compressed.yaml" "$repo_root" <<'PY' || fail "prometheusRule.timeCompression=60 does not scale the rules as documented"
import re, sys, yaml
from pathlib import Path
got = yaml.safe_load(open(sys.argv[1]))["spec"]["groups"]
want = []
for p in sorted(Path(sys.argv[2], "alerts").glob("*.yaml")):
    want += yaml.safe_load(p.read_text())["groups"]
secs = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
def scale(d):
    return f"{int(d[:-1]) * secs[d[-1]] // 60}s"
for g, w in zip(got, want, strict=True):
    for r, x in zip(g["rules"], w["rules"], strict=True):
        x = dict(x)
        x["expr"] = re.sub(r"\[(\d+[smhdw])\]", lambda m: f"[{scale(m.group(1))}]", x["expr"])
        for k in ("for", "keep_firing_for"):
            if k in x:
                x[k] = scale(x[k])
        assert r == x, (r, x)
assert any("[60s]" in r["expr"] for g in got for r in g["rules"])
PY
say "prometheusRule.timeCompression=60: windows, for and keep_firing_for divided by 60"

reject "shards: 0" --set shards=0
reject "replicaCount 2 with shards" --set shards=3 --set replicaCount=2
reject "shards on Kubernetes 1.27 (no pod-index label)" --set shards=3 --kube-version 1.27.0
reject "highAvailability on Kubernetes 1.27" --set highAvailability=true --kube-version 1.27.0
reject "a location of 129 characters" --set location="$(printf 'x%.0s' {1..129})"
reject "web.tls off with a tls_server_config" --set web.config.tls_server_config.cert_file=/x
reject "a plaintext password as a web user" --set web.config.basic_auth_users.prometheus=hunter2

# The chart checks can fail: a chart rendered with a writable root filesystem, and one
# whose secret value leaks into a ConfigMap, must be reported.
caught() { # what, values file for the check, helm args...
  local what=$1 vals=$2; shift 2
  "$helm" template llmprobe "$chart" "$@" > "$scratch/mutant.yaml" 2> >(quiet_symlinks) \
    || fail "helm template ($what)"
  if "$py" "$checks" check "$scratch/mutant.yaml" "$vals" "$repo_root" "$scratch/mutant-rules.yaml" 2>/dev/null; then
    fail "chart checks missed: $what"
  fi
  say "chart checks caught: $what"
}
# ... and an AlertmanagerConfig that lost an inhibit rule of alertmanager/llmprobe.yml.
mkdir -p "$scratch/repo-lost-rule/helm/llmprobe" "$scratch/repo-lost-rule/alertmanager"
cp -r "$repo_root/alerts" "$repo_root/dashboards" "$scratch/repo-lost-rule/"
cp "$chart/values.yaml" "$scratch/repo-lost-rule/helm/llmprobe/"
head -n -3 "$repo_root/alertmanager/llmprobe.yml" > "$scratch/repo-lost-rule/alertmanager/llmprobe.yml"
if "$py" "$checks" check "$scratch/alerting-values/rendered.yaml" "$chart/ci/alerting-values.yaml" \
    "$scratch/repo-lost-rule" "$scratch/lost-rule-rules.yaml" 2>/dev/null; then
  fail "chart checks missed: an AlertmanagerConfig with an inhibit rule the repository's file lacks"
fi
say "chart checks caught: an AlertmanagerConfig differing from alertmanager/llmprobe.yml"
caught "an engine headless Service the ServiceMonitor selects" "$chart/ci/fleet-values.yaml" \
  -f "$chart/ci/fleet-values.yaml" --set engineHeadlessService.name=llmprobe \
  --set engineHeadlessService.namespace=default --namespace default
caught "readOnlyRootFilesystem=false" "$scratch/empty-values.yaml" --set securityContext.readOnlyRootFilesystem=false
printf 'secrets:\n  k: leaked-key-value\n' > "$scratch/leak-values.yaml"
caught "an API key in the config" "$scratch/leak-values.yaml" -f "$scratch/leak-values.yaml" \
  --set config.defaults.note=leaked-key-value

# ... and sharded or highly available probers that lost what makes them so: the rendered
# ci/ha-shards-values.yaml with its twin anti-affinity removed, with --shard counting 2
# shards of 3, without its PodDisruptionBudget, without the POD_INDEX env; a
# ServiceMonitor relabeling that drops the pod label.
mutate() { # what, python statement on `docs` (the rendered objects)
  "$py" - "$scratch/ha-shards-values/rendered.yaml" "$scratch/mutant.yaml" "$2" <<'PY' || fail "mutating: $1"
import sys, yaml
docs = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d]
sets = [d for d in docs if d["kind"] == "StatefulSet"]
pods = [s["spec"]["template"]["spec"] for s in sets]
exec(sys.argv[3])
yaml.safe_dump_all(docs, open(sys.argv[2], "w"))
PY
}
# The unaltered objects, after the same load and dump, pass.
mutate "nothing" 'pass'
"$py" "$checks" check "$scratch/mutant.yaml" "$chart/ci/ha-shards-values.yaml" "$repo_root" \
  "$scratch/mutant-rules.yaml" || fail "chart checks refuse the reloaded ha-shards-values manifest"
mutant_caught() { # what, python statement on `docs`
  mutate "$@"
  if "$py" "$checks" check "$scratch/mutant.yaml" "$chart/ci/ha-shards-values.yaml" "$repo_root" \
      "$scratch/mutant-rules.yaml" 2>/dev/null; then
    fail "chart checks missed: $1"
  fi
  say "chart checks caught: $1"
}
mutant_caught "an HA StatefulSet without its anti-affinity" \
  'del pods[1]["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]'
mutant_caught "both HA sets avoiding their own pods" \
  'pods[0]["affinity"] = pods[1]["affinity"]'
mutant_caught "--shard \$(POD_INDEX)/2 with 3 shards" \
  'a = pods[0]["containers"][0]["args"]; a[a.index("--shard") + 1] = "$(POD_INDEX)/2"'
mutant_caught "POD_INDEX from the pod name" \
  'pods[1]["containers"][0]["env"][0]["valueFrom"]["fieldRef"]["fieldPath"] = "metadata.name"'
mutant_caught "no PodDisruptionBudget" \
  'docs[:] = [d for d in docs if d["kind"] != "PodDisruptionBudget"]'
mutant_caught "a PodDisruptionBudget covering set -a only" \
  'p = [d for d in docs if d["kind"] == "PodDisruptionBudget"][0]; p["spec"]["selector"]["matchLabels"]["llmprobe/twin"] = "a"'
mutant_caught "a missing --location" \
  'a = pods[0]["containers"][0]["args"]; del a[a.index("--location"):a.index("--location") + 2]'
caught "a ServiceMonitor relabeling dropping the pod label" "$chart/ci/ha-values.yaml" \
  -f "$chart/ci/ha-values.yaml" --set-json 'serviceMonitor.relabelings=[{"action":"labeldrop","regex":"pod"}]'

# helm package follows the files/ symlinks: the rules and dashboards are inside the
# archive (not their tests or generator), and the archive renders the same objects.
"$helm" package "$chart" --destination "$scratch/pkg" > /dev/null 2> >(quiet_symlinks) || fail "helm package"
tgz=$(ls "$scratch"/pkg/llmprobe-*.tgz)
tar tzf "$tgz" > "$scratch/pkg/list"
for f in llmprobe/files/alerts/llmprobe-alerts.yaml llmprobe/files/alerts/llmprobe-recording.yaml \
         llmprobe/files/alertmanager/llmprobe.yml \
         llmprobe/files/dashboards/llmprobe-slo.json llmprobe/files/dashboards/llmprobe-capacity.json \
         llmprobe/values.schema.json llmprobe/templates/NOTES.txt; do
  grep -qx "$f" "$scratch/pkg/list" || fail "helm package: $f missing from $(basename "$tgz")"
done
if grep -Eq 'files/alerts/tests/|files/dashboards/.*\.py$' "$scratch/pkg/list"; then
  fail "helm package ships the rule tests or the dashboard generator"
fi
"$helm" template llmprobe "$tgz" --namespace probes -f "$chart/ci/monitoring-values.yaml" \
  > "$scratch/pkg/rendered.yaml" 2> >(quiet_symlinks) || fail "helm template of the package"
cmp -s "$scratch/pkg/rendered.yaml" "$scratch/monitoring-values/rendered.yaml" \
  || fail "the packaged chart renders differently from the chart directory"
[ "$daemon_check" = 1 ] || say "SKIP: '$bin daemon --help' failed: rendered configs not checked by the daemon"
say "ok ($(basename "$tgz"), $(wc -l < "$scratch/pkg/list") files)"
