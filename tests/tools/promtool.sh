#!/usr/bin/env bash
# alerts/: `promtool check rules` clean, `promtool test rules` pass, and the tests can fail:
# the same tests run against mutated rule files (guard off or fixed, objective loosened, an
# SLI reading the wrong counter or ignoring the threshold gate, ProbeDown at a fixed 600 s,
# LlmprobeAbsent blind to up == 0, latency SLIs or their guard counting failed probes, the
# composite page as quick as the cause's, pages without keep_firing_for; the fleet
# headroom without its single-engine fallback or preferring it, per-replica rules summed
# without `replica` or per scenario, the replica failure ratio without its 0 fallback) must
# fail: those are what the tests check; so must the many-probers mutants (a location quorum
# ignored, not capped, or of one; SLIs merged across locations or split per HA twin; an
# absent prober covered by anyone or by nobody; the outlier's margin, factor, replica
# minimum, probe guard, goodput margin or page dropped); so must the golden-accuracy mutants
# (its answer guard off, the point estimate or the lower bound compared instead of the
# upper bound, no patience); so must the busy-GPUs mutants (any utilisation, tokens
# ignored, no patience, stale figures trusted, replicas joined without `replica`, one HA
# twin enough); so must the prefix-cache mutants (a comparison flipped, a fixed objective
# instead of the configured one, no patience, one HA twin enough, locations merged, the
# cause told at the wrong same-endpoint ratio). Every alert carries the hierarchy's labels
# (severity, layer).
source "$(dirname "$0")/lib/common.bash"
need_tool LLMPROBE_PROMTOOL promtool
promtool=$LLMPROBE_PROMTOOL
cd "$repo_root"
shopt -s nullglob
rules=(alerts/*.yaml)
tests=(alerts/tests/*.test.yaml)
[ ${#rules[@]} -gt 0 ] || fail "no rule files in alerts/"
[ ${#tests[@]} -gt 0 ] || fail "no promtool tests in alerts/tests/"

say "promtool check rules ${rules[*]}"
"$promtool" check rules "${rules[@]}" || fail "promtool check rules"

say "promtool test rules ${tests[*]}"
"$promtool" test rules "${tests[@]}" || fail "promtool test rules"

# Every alert has a firing and a silent case in the tests.
for alert in $(sed -n 's/^ *- alert: *//p' alerts/*.yaml | sort -u); do
  grep -q "alertname: $alert\$" "${tests[@]}" || fail "alert $alert has no promtool test"
  # Read whole, then matched: `grep -q` in a pipe would close it early, and pipefail
  # would then count the writer's SIGPIPE as a failure.
  cases=$(grep -h -A3 "alertname: $alert\$" "${tests[@]}")
  grep -q 'exp_alerts: \[\]' <<<"$cases" || fail "alert $alert has no not-firing test"
  grep -q 'exp_alerts:$' <<<"$cases" || fail "alert $alert has no firing test"
done

# Every alert carries a severity and a layer from the hierarchy (docs/deploy.md, "Alert
# hierarchy"; alertmanager/llmprobe.yml inhibits by them).
n_alerts=$(grep -c '^ *- alert:' alerts/*.yaml | awk -F: '{s+=$2} END {print s}')
for key in "severity: \(page\|ticket\|warning\)" "layer: \(prober\|availability\|correctness\|latency\|composite\|capacity\|location\|replica\)"; do
  n_key=$(grep -c "^ *$key\$" alerts/*.yaml | awk -F: '{s+=$2} END {print s}')
  [ "$n_alerts" = "$n_key" ] || fail "$n_alerts alerts but $n_key labels matching '$key'"
done

# Every runbook_url points at a runbook section of docs/deploy.md.
for anchor in $(sed -n 's/^ *runbook_url: *"docs\/deploy.md#\([a-z0-9-]*\)"$/\1/p' alerts/*.yaml | sort -u); do
  grep -qi "^### $anchor\$" docs/deploy.md || fail "runbook anchor #$anchor has no '### ' section in docs/deploy.md"
done
[ "$(grep -c 'runbook_url: "docs/deploy.md#' alerts/*.yaml | awk -F: '{s+=$2} END {print s}')" -gt 0 ] \
  || fail "no runbook_url points at docs/deploy.md"

# Every alert carries the three annotations.
for key in summary description runbook_url; do
  n_alerts=$(grep -c '^ *- alert:' alerts/*.yaml | awk -F: '{s+=$2} END {print s}')
  n_key=$(grep -c "^ *$key:" alerts/*.yaml | awk -F: '{s+=$2} END {print s}')
  [ "$n_alerts" = "$n_key" ] || fail "$n_alerts alerts but $n_key '$key' annotations"
done

# Mutants: the tests must catch a broken guard and a wrong objective.
make_scratch
mutate() { # name sed-expression [test file: only that one runs]
  local dir="$scratch/$1"
  mkdir -p "$dir/tests"
  for f in "${rules[@]}"; do sed "$2" "$f" > "$dir/$(basename "$f")"; done
  if [ -n "${3:-}" ]; then cp "$3" "$dir/tests/"; else cp "${tests[@]}" "$dir/tests/"; fi
  if "$promtool" test rules "$dir"/tests/*.test.yaml >"$dir/out" 2>&1; then
    fail "mutant '$1' passed the rule tests: they cannot catch it"
  fi
  grep -q FAILED "$dir/out" || { cat "$dir/out" >&2; fail "mutant '$1' broke the rules instead of failing a test"; }
  say "mutant '$1' caught"
}
mutate guard-off 's/vector(\(10\|20\|50\))$/vector(0)/'
mutate guard-fixed-20 '/window: 1h/{n;s/vector(10)/vector(20)/}'
mutate objective-90 's/vector(0.99)/vector(0.9)/'
mutate ttft-reads-tpot 's/sli="ttft"}\[/sli="tpot"}[/'
mutate sli-without-threshold 's/^\( *\)llmprobe_slo_\(ttft\|tpot\|e2e\)_seconds$/\1llmprobe_requests_total/'
mutate probedown-fixed-600 's|clamp_min(5 / max by (target, model, scenario) (llmprobe_probe_rate_per_second), 600)|600 + 0 * max by (target, model, scenario) (llmprobe_probe_rate_per_second)|'
mutate probedown-no-fallback 's|0 \* max by (target, model, scenario) (llmprobe_last_success_timestamp_seconds) + 600|max by (target, model, scenario) (llmprobe_probe_rate_per_second)|'
mutate absent-ignores-up 's/(up unless on (job, instance)/(up^0 unless on (job, instance)/'
mutate latency-over-all-probes 's/^\( *\)llmprobe:requests_succeeded:rate\([0-9mhd]*\)$/\1sum by (target, model, scenario) (rate(llmprobe_requests_total[\2]))/' alerts/tests/hierarchy.test.yaml
mutate latency-guard-all-probes 's/llmprobe:requests_succeeded:increase/llmprobe:requests:increase/' alerts/tests/hierarchy.test.yaml
mutate composite-pages-at-2m '/alert: LlmprobeGoodputBudgetBurn/,/for:/s/for: 5m/for: 2m/' alerts/tests/hierarchy.test.yaml
mutate no-keep-firing '/keep_firing_for:/d' alerts/tests/hierarchy.test.yaml
mutate check-guard-off 's/llmprobe:check_runs:increase15m >= 3/llmprobe:check_runs:increase15m >= 0/' alerts/tests/answer-checks.test.yaml
mutate check-threshold-low 's/ratio_rate15m >= 0.5/ratio_rate15m >= 0.1/' alerts/tests/answer-checks.test.yaml
g=alerts/tests/golden.test.yaml
mutate golden-guard-off 's/(llmprobe_golden_window_answers) >= 50$/(llmprobe_golden_window_answers) >= 0/' $g
mutate golden-point-estimate 's/(llmprobe_golden_accuracy_upper_ratio)$/(llmprobe_golden_accuracy_ratio)/' $g
mutate golden-lower-bound 's/(llmprobe_golden_accuracy_upper_ratio)$/(llmprobe_golden_accuracy_lower_ratio)/' $g
mutate golden-no-patience '/alert: LlmprobeGoldenAccuracyDrop/,/for:/s/for: 15m/for: 1m/' $g
mutate self-check-guard-off 's/llmprobe:self_check_probes:increase10m >= 5/llmprobe:self_check_probes:increase10m >= 0/' alerts/tests/self-check.test.yaml
mutate self-check-ignores-throttling 's/llmprobe:cgroup_throttled_periods:ratio_rate10m > 0.25/llmprobe:cgroup_throttled_periods:ratio_rate10m > 1/' alerts/tests/self-check.test.yaml
mutate self-check-median 's/histogram_quantile(0.99,/histogram_quantile(0.5,/' alerts/tests/self-check.test.yaml
mutate fleet-headroom-no-fallback 's/ or min by (target, model) (llmprobe_capacity_headroom_ratio)$//' alerts/tests/fleet.test.yaml
mutate fleet-headroom-single-engine-first 's/min by (target, model) (llmprobe_fleet_headroom_ratio) or min by (target, model) (llmprobe_capacity_headroom_ratio)/min by (target, model) (llmprobe_capacity_headroom_ratio) or min by (target, model) (llmprobe_fleet_headroom_ratio)/' alerts/tests/fleet.test.yaml
mutate fleet-headroom-best-instance 's/min by (target, model) (llmprobe_fleet_headroom_ratio)/max by (target, model) (llmprobe_fleet_headroom_ratio)/' alerts/tests/fleet.test.yaml
mutate replica-ttft-without-replica 's/sum by (target, model, replica, le)/sum by (target, model, le)/' alerts/tests/fleet.test.yaml
mutate replica-ttft-per-scenario 's/sum by (target, model, replica, le)/sum by (target, model, scenario, replica, le)/' alerts/tests/fleet.test.yaml
mutate replica-goodput-per-scenario 's/sum by (target, model, replica) (rate(llmprobe_replica_goodput_requests_total/sum by (target, model, scenario, replica) (rate(llmprobe_replica_goodput_requests_total/' alerts/tests/fleet.test.yaml
mutate replica-failure-no-fallback 's/0 \* sum by (target, model, replica) (rate(llmprobe_replica_requests_total/0 * sum by (target, model, replica) (rate(llmprobe_replica_request_failures_total/' alerts/tests/fleet.test.yaml
mutate drift-one-run '/alert: LlmprobeModelDrift/,/for:/s/for: 15m/for: 0m/' alerts/tests/model-drift.test.yaml
mutate drift-always 's/(llmprobe_fingerprint_drift) == 1/(llmprobe_fingerprint_drift) >= 0/' alerts/tests/model-drift.test.yaml
# GPUs busy while no token is generated (alerts/tests/energy.test.yaml).
e=alerts/tests/energy.test.yaml
mutate gpus-busy-any-utilisation 's/(llmprobe_\(engine\|replica\)_gpu_utilization_ratio) > 0.5$/(llmprobe_\1_gpu_utilization_ratio) > 0/' $e
mutate gpus-busy-tokens-ignored 's/_generation_tokens_per_second) == 0$/_generation_tokens_per_second) >= 0/' $e
mutate gpus-busy-no-patience '/alert: LlmprobeGpusBusyNoTokens/,/for:/s/for: 10m/for: 0m/' $e
mutate gpus-busy-stale-figures 's/_gpu_scrape_success) == 1$/_gpu_scrape_success) >= 0/' $e
mutate gpus-busy-replica-join-without-replica '/alert: LlmprobeGpusBusyNoTokens/,/for:/s/and on (target, model, replica)$/and on (target, model)/' $e
mutate gpus-busy-one-twin 's/min by (target, model) (llmprobe_engine_gpu_utilization_ratio)/max by (target, model) (llmprobe_engine_gpu_utilization_ratio)/' $e
# Prefix cache ineffective (alerts/tests/prefix-cache.test.yaml).
pc=alerts/tests/prefix-cache.test.yaml
mutate prefix-hit-comparison-flipped 's/^\( *\)< on (target, model, scenario, location)$/\1> on (target, model, scenario, location)/' $pc
mutate prefix-ttft-comparison-flipped 's/^\( *\)> on (target, model, scenario, location)$/\1< on (target, model, scenario, location)/' $pc
mutate prefix-hit-objective-fixed 's/min by (target, model, scenario, location) (llmprobe_prefix_cache_objective_hit_ratio)$/0 * max by (target, model, scenario, location) (llmprobe_prefix_cache_hit_ratio) + 0.8/' $pc
mutate prefix-ttft-objective-fixed 's/max by (target, model, scenario, location) (llmprobe_prefix_cache_objective_ttft_ratio)$/0 * min by (target, model, scenario, location) (llmprobe_prefix_cache_ttft_ratio) + 0.3/' $pc
mutate prefix-no-patience '/alert: LlmprobePrefixCacheIneffective/,/for:/s/for: 30m/for: 0m/' $pc
mutate prefix-hit-one-twin 's/max by (target, model, scenario, location) (llmprobe_prefix_cache_hit_ratio)$/min by (target, model, scenario, location) (llmprobe_prefix_cache_hit_ratio)/' $pc
mutate prefix-ttft-one-twin 's/min by (target, model, scenario, location) (llmprobe_prefix_cache_ttft_ratio)$/max by (target, model, scenario, location) (llmprobe_prefix_cache_ttft_ratio)/' $pc
mutate prefix-across-locations 's/by (target, model, scenario, location) (llmprobe_prefix_cache_\(hit\|ttft\)_ratio)$/by (target, model, scenario) (llmprobe_prefix_cache_\1_ratio)/' $pc
mutate prefix-cause-threshold 's/{{ if lt \$same 0.9 -}}/{{ if lt $same 0.4 -}}/' $pc
# Many probers (alerts/tests/many-probers.test.yaml).
mp=alerts/tests/many-probers.test.yaml
mutate quorum-ignored 's/>= on (target, model, scenario) llmprobe:slo_locations_needed:count$/>= on (target, model, scenario) 0 * llmprobe:slo_locations_needed:count + 1/' $mp
mutate quorum-of-one 's/^\( *\)expr: vector(2)$/\1expr: vector(1)/' $mp
mutate quorum-not-capped 's/scalar(llmprobe:slo_min_failing_locations:count)$/scalar(llmprobe:slo_min_failing_locations:count) + 1/' $mp
mutate sli-across-locations 's/sum by (target, model, scenario, location) (/sum by (target, model, scenario) (/' $mp
mutate sli-per-ha-twin 's/sum by (target, model, scenario, location) (/sum by (target, model, scenario, location, instance) (/' $mp
mutate location-ticket-always 's/^\( *\)unless on (target, model, scenario, sli)$/\1and on (target, model, scenario, sli)/' $mp
mutate absent-twin-ignored 's/unless on (location, shard)$/unless on (location, shard, instance)/' $mp
mutate absent-twin-other-shard 's/unless on (location, shard)$/unless on (location)/' $mp
mutate absent-ignores-stall 's/(increase(llmprobe_self_check_probes_total\[10m\]) == 0)/(increase(llmprobe_self_check_probes_total[10m]) == -1)/' $mp
mutate outlier-no-margin 's/llmprobe:replica_ttft_p90:median_rate15m + 0.25$/llmprobe:replica_ttft_p90:median_rate15m + 0/' $mp
mutate outlier-no-factor 's/2 \* llmprobe:replica_ttft_p90:median_rate15m,$/0 * llmprobe:replica_ttft_p90:median_rate15m,/' $mp
mutate outlier-two-replicas 's/llmprobe:replicas_probed:count15m >= 3$/llmprobe:replicas_probed:count15m >= 2/' $mp
mutate outlier-guard-off 's/llmprobe:replica_requests:increase15m >= 10/llmprobe:replica_requests:increase15m >= 0/' $mp
mutate outlier-goodput-margin 's/llmprobe:replica_goodput:median_rate15m - 0.2,$/llmprobe:replica_goodput:median_rate15m - 0.6,/' $mp
mutate outlier-never-pages 's/^\( *\)and on (target, model) llmprobe:slo_fast_burn:ratio$/\1unless on (target, model) llmprobe:slo_fast_burn:ratio/' $mp
say "ok"
