#!/usr/bin/env bash
# Footprint benchmark of `llmprobe daemon` (not a timed test): 10 targets at 1 probe/s
# each against a separately started `llmprobe mock`, for N minutes (default 10),
# sampling the daemon's RSS and CPU time from /proc every SAMPLE seconds.
#
#   benches/daemon_footprint.sh [MINUTES]
#
# Environment: LLMPROBE_BIN (default: build and use target/release/llmprobe),
# SAMPLE (seconds between samples, default 10), TARGETS (default 10),
# RATE (per target, default 1/s). Linux only (/proc).
# Goal (issue 5): under 20 MiB RSS and under 1 % of one core.
set -euo pipefail
cd "$(dirname "$0")/.."

minutes="${1:-10}"
sample="${SAMPLE:-10}"
targets="${TARGETS:-10}"
rate="${RATE:-1/s}"

if [[ -z "${LLMPROBE_BIN:-}" ]]; then
    cargo build --release --quiet
    LLMPROBE_BIN="${CARGO_TARGET_DIR:-target}/release/llmprobe"
fi

work="$(mktemp -d)"
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT

# Reads the "... listening on http://ADDR" line a server prints once bound.
wait_for_addr() {
    local file="$1"
    for _ in $(seq 1 100); do
        if grep -q "listening on http://" "$file" 2>/dev/null; then
            grep -o "http://[0-9.:]*" "$file" | head -1
            return 0
        fi
        sleep 0.1
    done
    echo "server did not start; its output:" >&2
    cat "$file" >&2
    return 1
}

"$LLMPROBE_BIN" --log-level warn mock --listen 127.0.0.1:0 >"$work/mock.out" 2>"$work/mock.err" &
pids+=($!)
mock_url="$(wait_for_addr "$work/mock.out")"

{
    echo "targets:"
    for i in $(seq 1 "$targets"); do
        cat <<YAML
  - name: target-$i
    base_url: $mock_url
    model: mock-llm
    rate: $rate
    scenarios:
      - {name: short, input_tokens: 128, output_tokens: 32, slo: {ttft: 500ms, tpot: 50ms, e2e: 5s}}
    capacity: {preset: llama-3.1-8b, gpu: h100, gpu_hourly: 2.5}
    engine_metrics_url: $mock_url/metrics
YAML
    done
} >"$work/daemon.yaml"

"$LLMPROBE_BIN" --log-level warn daemon --config "$work/daemon.yaml" --listen 127.0.0.1:0 \
    >"$work/daemon.out" 2>"$work/daemon.err" &
daemon_pid=$!
pids+=("$daemon_pid")
daemon_url="$(wait_for_addr "$work/daemon.out")"

clk_tck="$(getconf CLK_TCK)"
cpu_ticks() { awk '{print $14 + $15}' "/proc/$daemon_pid/stat"; }
rss_kib() { awk '/^VmRSS:/ {print $2}' "/proc/$daemon_pid/status"; }

echo "daemon pid $daemon_pid at $daemon_url, mock at $mock_url"
echo "$targets targets at $rate for $minutes min, a sample every ${sample}s"
printf '%8s %10s %10s\n' "t(s)" "RSS(MiB)" "CPU(%)"

start_ticks="$(cpu_ticks)"
start_ns="$(date +%s%N)"
prev_ticks="$start_ticks"
prev_ns="$start_ns"
end=$(( $(date +%s) + $(awk -v m="$minutes" 'BEGIN {printf "%d", m * 60}') ))
max_rss=0
sum_rss=0
n=0
while (( $(date +%s) < end )); do
    sleep "$sample"
    kill -0 "$daemon_pid" 2>/dev/null || { echo "the daemon died:" >&2; cat "$work/daemon.err" >&2; exit 1; }
    now_ns="$(date +%s%N)"
    ticks="$(cpu_ticks)"
    rss="$(rss_kib)"
    cpu="$(awk -v dt="$((ticks - prev_ticks))" -v ns="$((now_ns - prev_ns))" -v hz="$clk_tck" \
        'BEGIN {printf "%.3f", 100 * dt / hz / (ns / 1e9)}')"
    printf '%8d %10.2f %10s\n' $(( (now_ns - start_ns) / 1000000000 )) "$(awk -v k="$rss" 'BEGIN {print k / 1024}')" "$cpu"
    (( rss > max_rss )) && max_rss=$rss
    sum_rss=$(( sum_rss + rss ))
    n=$(( n + 1 ))
    prev_ticks="$ticks"
    prev_ns="$now_ns"
done

end_ns="$(date +%s%N)"
end_ticks="$(cpu_ticks)"
metrics="$(curl -fsS "$daemon_url/metrics" 2>/dev/null || true)"
probes="$(awk '/^llmprobe_requests_total\{/ {s += $2} END {print s + 0}' <<<"$metrics")"
failures="$(awk '/^llmprobe_request_failures_total\{/ {s += $2} END {print s + 0}' <<<"$metrics")"
echo
echo "summary over $(( (end_ns - start_ns) / 1000000000 )) s:"
awk -v m="$max_rss" -v s="$sum_rss" -v n="$n" 'BEGIN {printf "  RSS: max %.2f MiB, mean %.2f MiB\n", m / 1024, s / n / 1024}'
awk -v dt="$((end_ticks - start_ticks))" -v ns="$((end_ns - start_ns))" -v hz="$clk_tck" \
    'BEGIN {printf "  CPU: %.3f %% of one core (%.2f s CPU)\n", 100 * dt / hz / (ns / 1e9), dt / hz}'
echo "  probes completed: $probes, failed: $failures"
