#!/usr/bin/env bash
# Soak test of `llmprobe daemon` (issue 7 §4): the daemon probes a separately started
# `llmprobe mock` that injects a mix of faults, at 20 probes/s in total, for N minutes,
# and the daemon's RSS, open file descriptors and threads are sampled from /proc every
# SAMPLE seconds into a CSV. At the end benches/soak_plot.py prints a summary, draws the
# curves (SVG) and, with CHECK=1, fails when RSS or fds grew beyond the bounds after
# warm-up.
#
#   benches/soak.sh [MINUTES]          # default 30
#
# Environment: LLMPROBE_BIN (default: build and use target/release/llmprobe),
# SAMPLE (seconds, default 10), OUT (CSV path, default benches/soak-results.csv),
# SVG (plot path, default: none), CHECK=1 (enforce bounds), WARMUP (seconds left out of
# the bounds, default 60), RSS_BOUND_KIB (default 4096), FD_BOUND (default 16),
# TARGETS (default 4; the 20 probes/s are split evenly). Linux only (/proc).
set -euo pipefail
cd "$(dirname "$0")/.."

minutes="${1:-30}"
sample="${SAMPLE:-10}"
out="${OUT:-benches/soak-results.csv}"
targets="${TARGETS:-4}"
total_rate=20
# Every fault kind of docs/mock.md but huge_line (its 16 MiB lines would dominate the
# run's bandwidth; the line limit is covered by tests/it/faults_client.rs), about 12 % of
# probes in all. Stalls last 3 s, longer than the targets' 1 s idle timeout.
faults=(
  http_500:0.02 http_503:0.01 http_429:0.02 close_before_response:0.01
  reset_mid_stream:0.01 stall_before_headers:0.005 stall_after_tokens:0.01
  malformed_json:0.01 no_done:0.01 invalid_utf8:0.005 trickle:0.002
  wrong_content_type:0.005 json_instead_of_sse:0.005 error_event:0.01
  empty_completion:0.005
)

if [[ -z "${LLMPROBE_BIN:-}" ]]; then
  cargo build --release --quiet
  LLMPROBE_BIN="${CARGO_TARGET_DIR:-target}/release/llmprobe"
fi

work="$(mktemp -d)"
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
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

fault_args=()
for f in "${faults[@]}"; do fault_args+=(--fault "$f"); done
"$LLMPROBE_BIN" --log-level error mock --listen 127.0.0.1:0 --stall-ms 3000 --seed 1 \
  "${fault_args[@]}" >"$work/mock.out" 2>"$work/mock.err" &
pids+=($!)
mock_url="$(wait_for_addr "$work/mock.out")"

per_target=$(python3 -c "print($total_rate / $targets)")
{
  echo "listen: 127.0.0.1:0"
  echo "targets:"
  for i in $(seq 1 "$targets"); do
    cat <<YAML
  - name: soak-$i
    base_url: $mock_url
    model: mock-llm
    rate: $per_target/s
    max_inflight: 32
    timeouts: {connect: 1s, first_token: 2s, idle: 1s, total: 5s}
    scenarios:
      - {name: short, input_tokens: 64, output_tokens: 16, slo: {ttft: 500ms, tpot: 50ms, e2e: 5s}}
YAML
  done
} >"$work/daemon.yaml"

"$LLMPROBE_BIN" --log-level error daemon --config "$work/daemon.yaml" \
  >"$work/daemon.out" 2>"$work/daemon.err" &
daemon_pid=$!
pids+=("$daemon_pid")
daemon_url="$(wait_for_addr "$work/daemon.out")"

rss_kib() { awk '/^VmRSS:/ {print $2}' "/proc/$daemon_pid/status"; }
threads() { awk '/^Threads:/ {print $2}' "/proc/$daemon_pid/status"; }
fds() { find "/proc/$daemon_pid/fd" -mindepth 1 -maxdepth 1 2>/dev/null | wc -l; }
# Sums of daemon counters/gauges (all targets) from /metrics; "" when absent.
metric_sum() {
  awk -v n="$1" '$0 !~ /^#/ { split($1, a, "{"); if (a[1] == n) { s += $2; f = 1 } }
    END { if (f) printf "%d", s }' "$work/metrics.txt"
}

echo "soak: daemon pid $daemon_pid at $daemon_url, mock at $mock_url" >&2
echo "soak: $targets targets, $total_rate probes/s in all, ${#faults[@]} fault kinds, $minutes min, a sample every ${sample}s -> $out" >&2
mkdir -p "$(dirname "$out")"
echo "t_s,rss_kib,fds,threads,tasks,probes,failures,inflight" >"$out"
start=$(date +%s)
end=$((start + $(awk -v m="$minutes" 'BEGIN { printf "%d", m * 60 }')))
while :; do
  now=$(date +%s)
  kill -0 "$daemon_pid" 2>/dev/null || { cat "$work/daemon.err" >&2; echo "soak: daemon died" >&2; exit 1; }
  curl -sf "$daemon_url/metrics" >"$work/metrics.txt" || : >"$work/metrics.txt"
  # The daemon exports no tokio task count; the column stays empty unless it does.
  echo "$((now - start)),$(rss_kib),$(fds),$(threads),$(metric_sum llmprobe_tokio_alive_tasks),$(metric_sum llmprobe_requests_total),$(metric_sum llmprobe_request_failures_total),$(metric_sum llmprobe_inflight_requests)" >>"$out"
  [ "$now" -ge "$end" ] && break
  sleep "$sample"
done

check_args=()
[ "${CHECK:-}" = 1 ] && check_args+=(--check)
[ -n "${SVG:-}" ] && check_args+=(--svg "$SVG")
python3 benches/soak_plot.py "$out" --warmup "${WARMUP:-60}" \
  --rss-bound-kib "${RSS_BOUND_KIB:-4096}" --fd-bound "${FD_BOUND:-16}" "${check_args[@]}"
