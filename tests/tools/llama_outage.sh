#!/usr/bin/env bash
# A real engine's outage as the daemon logs it: llama.cpp's `llama-server` (Gemma 3 270M,
# as in llama_cpp.sh) on 127.0.0.1, probed at 2/s with engine_metrics_url on its own
# /metrics, is killed (SIGKILL) for LLMPROBE_OUTAGE_SECS and restarted on the same port.
# Checked in the daemon's JSON log, for the scenario's probes and for the engine
# scraper alike: one WARN at the first failure (and one more only when the reason
# changes, e.g. connect -> http_5xx while the restarted server loads its model),
# summaries at least failure_summary_interval apart, one recovery line after the last
# failure — not one line per failed probe; and on /metrics every failed probe counted
# (the recovery's count of failures equals the failure counters).
#
# A busy shared machine makes the CPU engine slow, not wrong: probe timeouts are minutes
# and every wait polls for what must happen, bounded at ten minutes.
#
# Environment: LLMPROBE_BIN (the release binary), LLMPROBE_LLAMA_SERVER, LLMPROBE_GGUF
# (written to tools.env by scripts/install-tools), LLMPROBE_OUTAGE_SECS (default 12).
source "$(dirname "$0")/lib/common.bash"
cd "$repo_root"

need_tool LLMPROBE_LLAMA_SERVER llama-server
server_bin=$LLMPROBE_LLAMA_SERVER
model=${LLMPROBE_GGUF:-}
[ -n "$model" ] && [ -f "$model" ] ||
  skip_or_fail "LLMPROBE_GGUF (the Gemma 3 270M GGUF) is not set or missing"
bin=${LLMPROBE_BIN:-$repo_root/target/release/llmprobe}
[ -x "$bin" ] || fail "llmprobe binary $bin not found (build it or set LLMPROBE_BIN)"
outage_secs=${LLMPROBE_OUTAGE_SECS:-12}
summary_secs=4

make_scratch

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
base=http://127.0.0.1:$port

# start_server: llama-server on $port, ready within 600 s.
start_server() {
  "$server_bin" --model "$model" --host 127.0.0.1 --port "$port" --ctx-size 2048 \
    --parallel 2 --threads 2 --metrics --alias gemma-3-270m >>"$scratch/llama.log" 2>&1 &
  server_pid=$!
  stop_on_exit "$server_pid"
  local _
  for _ in $(seq 1 1200); do
    kill -0 "$server_pid" 2>/dev/null || { tail -30 "$scratch/llama.log" >&2; fail "llama-server exited while starting"; }
    curl -sf "$base/health" >/dev/null 2>&1 && return 0
    sleep 0.5
  done
  tail -30 "$scratch/llama.log" >&2
  fail "llama-server not ready after 600 s"
}

say "starting llama-server on $base ($(basename "$model"))"
start_server

cat >"$scratch/daemon.yaml" <<EOF
listen: 127.0.0.1:0
engine_scrape_interval: 1s
failure_summary_interval: ${summary_secs}s
self_check: {enabled: false}
targets:
  - name: llama
    base_url: $base
    model: gemma-3-270m
    rate: 2/s
    max_inflight: 2
    timeouts: {connect: 10s, first_token: 300s, idle: 60s, total: 600s}
    engine_metrics_url: $base/metrics
    scenarios:
      - {name: short, input_tokens: 16, output_tokens: 4}
EOF
"$bin" --log-format json daemon --config "$scratch/daemon.yaml" \
  >"$scratch/daemon.out" 2>"$scratch/daemon.log" &
daemon_pid=$!
stop_on_exit "$daemon_pid"
wait_for_daemon "$daemon_pid" "$scratch/daemon.out" "$scratch/daemon.log" 6000

# metric NAME: the sum of NAME{target="llama",...} on /metrics.
metric() {
  curl -sf "$url/metrics" | python3 -c '
import re, sys
name = sys.argv[1]
total = 0.0
for line in sys.stdin:
    m = re.match(r"^(\w+)\{([^}]*)\} (\S+)$", line.strip())
    if m and m.group(1) == name and "target=\"llama\"" in m.group(2):
        total += float(m.group(3))
print(int(total))' "$1"
}

say "daemon on $url; waiting for 4 good probes and a good engine scrape"
for _ in $(seq 1 1200); do
  [ "$(metric llmprobe_requests_total)" -ge 4 ] && [ "$(metric llmprobe_engine_scrape_success)" -eq 1 ] && break
  sleep 0.5
done
[ "$(metric llmprobe_requests_total)" -ge 4 ] || { cat "$scratch/daemon.log" >&2; fail "fewer than 4 probes in 600 s"; }
before=$(metric llmprobe_request_failures_total)
[ "$before" -eq 0 ] || { cat "$scratch/daemon.log" >&2; fail "$before probes failed before the outage"; }

say "killing llama-server for ${outage_secs}s"
kill -KILL "$server_pid"
wait "$server_pid" 2>/dev/null || true
sleep "$outage_secs"
say "restarting llama-server on the same port"
start_server

say "waiting for the daemon to log both recoveries"
for _ in $(seq 1 1200); do
  grep -q '"probe recovered after' "$scratch/daemon.log" &&
    grep -q '"engine scrape recovered after' "$scratch/daemon.log" && break
  sleep 0.5
done
metrics_file=$scratch/metrics.txt
curl -sf "$url/metrics" >"$metrics_file" || fail "GET $url/metrics"
kill -TERM "$daemon_pid"
wait "$daemon_pid" || fail "daemon exited non-zero on SIGTERM"

python3 - "$scratch/daemon.log" "$metrics_file" "$summary_secs" "$outage_secs" <<'EOF' || { cat "$scratch/daemon.log" >&2; fail "the outage's log"; }
import json, re, sys
log_path, metrics_path, interval, outage = sys.argv[1], sys.argv[2], float(sys.argv[3]), float(sys.argv[4])
raw = open(log_path, "rb").read()
errors = []
if b"\x1b" in raw:
    errors.append("an escape byte in the redirected log")
lines = [json.loads(l) for l in raw.decode().splitlines() if l.strip()]
failures = 0.0
for line in open(metrics_path):
    m = re.match(r'^llmprobe_request_failures_total\{([^}]*)\} (\S+)$', line.strip())
    if m and 'target="llama"' in m.group(1):
        failures += float(m.group(2))

def summary(o):
    return o["level"] == "WARN" and "over_seconds" in o

def stream(failed, recovered, scenario):
    """The failure log of one stream, checked; returns its lines and its recovery."""
    mine = [o for o in lines if o.get("target") == "llama" and o.get("scenario") == scenario
            and (o["message"] == failed or summary(o) or o["message"].startswith(recovered))]
    for o in mine:
        print(f'  {o["timestamp"]} {o["level"]:5} {o["message"]}'
              + (f' reason={o["reason"]}' if "reason" in o else "")
              + (f' previous_reason={o["previous_reason"]}' if "previous_reason" in o else "")
              + (f' probe_id={o["probe_id"]}' if "probe_id" in o else "")
              + (f' error={o["error"][:90]!r}' if o["message"] == failed else ""))
    warns = [o for o in mine if o["message"] == failed]
    reasons = [o["reason"] for o in warns]
    if not 1 <= len(warns) <= 4:
        errors.append(f"{failed}: {len(warns)} WARN lines, want one per state (reasons {reasons})")
    if any(a == b for a, b in zip(reasons, reasons[1:])):
        errors.append(f"{failed}: a WARN repeats its reason: {reasons}")
    if any(o["level"] != "WARN" or not o.get("error") for o in warns):
        errors.append(f"{failed}: a first failure not at WARN or without its error")
    for a, b in zip(warns, warns[1:]):
        if b.get("previous_reason") != a["reason"]:
            errors.append(f"{failed}: reason change {a['reason']} -> {b['reason']} says previous {b.get('previous_reason')}")
    recoveries = [o for o in mine if o["message"].startswith(recovered)]
    if len(recoveries) != 1 or mine[-1] is not recoveries[0] or recoveries[0]["level"] != "INFO":
        errors.append(f"{failed}: {len(recoveries)} recovery lines, want one INFO line after every failure line")
        return mine, None
    rec = recoveries[0]
    # Summaries come an interval apart; one may come sooner only to close a reason,
    # right before the WARN of the next one.
    summaries = 0
    for i, o in enumerate(mine):
        if not summary(o):
            continue
        closes = i + 1 < len(mine) and mine[i + 1]["message"] == failed \
            and mine[i + 1].get("previous_reason") == o["reason"]
        if not closes:
            summaries += 1
            if o["over_seconds"] < interval:
                errors.append(f"{failed}: a summary over {o['over_seconds']:.2f} s < {interval} s: {o['message']}")
    most = int(rec["over_seconds"] // interval) + 1
    if summaries > most:
        errors.append(f"{failed}: {summaries} summaries over {rec['over_seconds']:.1f} s, at most {most}")
    return mine, rec

print("probes (target=llama, scenario=short):")
probe_lines, probe_rec = stream("probe failed", "probe recovered after", "short")
print("engine scrapes (target=llama):")
scrape_lines, scrape_rec = stream("engine scrape failed", "engine scrape recovered after", None)
if probe_rec is not None:
    if probe_rec["failures"] != failures:
        errors.append(f"the recovery counts {probe_rec['failures']} failures, /metrics {failures:.0f}")
    # Poisson at 2/s over an outage longer than outage_secs: far more than outage/2.
    if failures < outage / 2:
        errors.append(f"only {failures:.0f} failed probes over a {outage:.0f} s outage at 2/s")
    if len(probe_lines) * 2 > failures:
        errors.append(f"{len(probe_lines)} log lines for {failures:.0f} failed probes")
    print(f"{failures:.0f} failed probes on /metrics (reasons: "
          + ", ".join(f"{m.group(1)} {float(m.group(2)):.0f}" for m in
                      (re.search(r'reason="(\w+)".* (\S+)$', l) for l in open(metrics_path)
                       if l.startswith("llmprobe_request_failures_total") and 'target="llama"' in l)
                      if m and float(m.group(2)) > 0)
          + f"), {len(probe_lines)} probe log lines; "
          f"{scrape_rec['failures'] if scrape_rec else '?'} failed engine scrapes, "
          f"{len(scrape_lines)} scrape log lines")
if errors:
    print("\n".join(errors), file=sys.stderr)
    sys.exit(1)
EOF
say "PASS"
