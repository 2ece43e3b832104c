#!/usr/bin/env bash
# End to end: a real Prometheus scrapes `llmprobe daemon --mock` every second with alerts/
# loaded; once data flows, every dashboard panel query and every recording rule must return
# data and every alert expression must evaluate (tests/prometheus_e2e/harness.py), and a
# misspelt copy of a query must come back empty. Prometheus stores exemplars, so it scrapes
# OpenMetrics: the series must be those of the classic format (the same harness passes),
# and the TTFT exemplars must resolve to the daemon's probe pages (exemplars.py).
#
# Environment: LLMPROBE_BIN (the llmprobe binary), LLMPROBE_PROMETHEUS,
# LLMPROBE_E2E_DAEMON_ARGS (extra daemon arguments; default injects HTTP 500s so the
# failure panels and rules have data),
# LLMPROBE_E2E_WAIT (seconds to wait for data, default 120),
# LLMPROBE_E2E_EXPORTER=fake to scrape tests/prometheus_e2e/fake_exporter.py instead.
source "$(dirname "$0")/lib/common.bash"
cd "$repo_root"
harness=tests/prometheus_e2e/harness.py

# Offline first: the extraction is right, names are documented, failures are reported.
python3 -m unittest -q tests/prometheus_e2e/test_queries.py || fail "tests/prometheus_e2e unit tests"
python3 "$harness" --static || fail "dashboard/rule names vs docs/metrics.md"
python3 "$harness" --selftest || fail "harness selftest"

need_tool LLMPROBE_PROMETHEUS prometheus
prometheus=$LLMPROBE_PROMETHEUS
exporter=${LLMPROBE_E2E_EXPORTER:-daemon}
bin=${LLMPROBE_BIN:-$repo_root/target/debug/llmprobe}
make_scratch

free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
exporter_port=$(free_port)
prom_port=$(free_port)

if [ "$exporter" = fake ]; then
  python3 tests/prometheus_e2e/fake_exporter.py --listen "127.0.0.1:$exporter_port" \
    >"$scratch/exporter.log" 2>&1 &
else
  # shellcheck disable=SC2086 # daemon_args is a list of words
  daemon_args=${LLMPROBE_E2E_DAEMON_ARGS-"--mock-fault http_500:0.1"}
  "$bin" daemon --mock --listen "127.0.0.1:$exporter_port" $daemon_args \
    >"$scratch/exporter.log" 2>&1 &
fi
stop_on_exit "$!"

cat >"$scratch/prometheus.yml" <<YAML
global:
  scrape_interval: 1s
  scrape_timeout: 1s
  evaluation_interval: 1s
rule_files:
  - $repo_root/alerts/*.yaml
scrape_configs:
  - job_name: llmprobe
    static_configs:
      - targets: ["127.0.0.1:$exporter_port"]
YAML
"$prometheus" --config.file "$scratch/prometheus.yml" --storage.tsdb.path "$scratch/tsdb" \
  --enable-feature=exemplar-storage --web.listen-address "127.0.0.1:$prom_port" >"$scratch/prometheus.log" 2>&1 &
stop_on_exit "$!"

# Bounded wait for Prometheus to answer; the harness then waits for data itself.
base="http://127.0.0.1:$prom_port"
ready() {
  python3 -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=2)' \
    "$base/-/ready" >/dev/null 2>&1
}
for _ in $(seq 1 60); do
  ready && break
  sleep 0.5
done
if ! ready; then
  tail -n 30 "$scratch/prometheus.log" >&2
  fail "Prometheus did not become ready on $base"
fi

say "harness against $base (exporter: $exporter on 127.0.0.1:$exporter_port)"
# Strict: the daemon pre-resolves its label sets, so every panel has data. Only rules that
# hold a condition, not a figure, may be empty on a healthy-enough demo: the burn-rate
# conditions (10% errors may or may not burn within two minutes) and the replica medians,
# which need 10 probes per replica in 15 minutes (alerts/tests/ tests them with data).
allow=(--allow-empty "llmprobe:slo_fast_burn:ratio" --allow-empty "llmprobe:slo_slow_burn:ratio"
       --allow-empty "llmprobe:replicas_probed:count15m"
       --allow-empty "llmprobe:replica_ttft_p90:median_rate15m"
       --allow-empty "llmprobe:replica_goodput:median_rate15m")
if ! python3 "$harness" --prometheus "$base" --wait "${LLMPROBE_E2E_WAIT:-120}" "${allow[@]}"; then
  say "exporter log:"; tail -n 30 "$scratch/exporter.log" >&2 || true
  say "prometheus log:"; tail -n 30 "$scratch/prometheus.log" >&2 || true
  fail "queries failed against a live Prometheus ($exporter exporter)"
fi
if [ "$exporter" = daemon ]; then
  # Prometheus asked for OpenMetrics: the latency buckets' exemplars name probe pages.
  python3 tests/prometheus_e2e/exemplars.py --prometheus "$base" \
    --daemon "http://127.0.0.1:$exporter_port" --wait 60 \
    || fail "exemplars did not resolve to probe pages"
fi
say "ok ($exporter exporter)"
