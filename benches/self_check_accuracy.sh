#!/usr/bin/env bash
# The daemon self-check's own accuracy at one self-probe rate (not a timed test):
# runs the release daemon with only its self-check busy (its one target is down and
# probed once an hour), for MINUTES, then reads the self-check histograms and prints
# the TTFT and ITL error quantiles (bucket upper bounds, so "p99 <= 1 ms"), the mean,
# the count and the load average.
#   benches/self_check_accuracy.sh BIN RATE MINUTES    e.g. target/release/llmprobe 1/s 10
set -euo pipefail
bin=${1:?usage: self_check_accuracy.sh BIN RATE MINUTES}
rate=${2:?rate, e.g. 1/min}
minutes=${3:?minutes}
dir=$(mktemp -d)
trap 'kill "$pid" 2>/dev/null; rm -rf "$dir"' EXIT
cat >"$dir/daemon.yaml" <<YAML
self_check: {rate: "$rate"}
targets:
  - {name: down, base_url: "http://127.0.0.1:9", model: m, rate: 1/h}
YAML
"$bin" daemon --config "$dir/daemon.yaml" --listen 127.0.0.1:0 >"$dir/out" 2>/dev/null &
pid=$!
for _ in $(seq 100); do
  url=$(sed -n 's/^llmprobe daemon listening on //p' "$dir/out")
  [ -n "$url" ] && break
  sleep 0.1
done
load0=$(cut -d' ' -f1 /proc/loadavg)
sleep $((minutes * 60))
curl -sf "$url/metrics" >"$dir/metrics"
python3 - "$dir/metrics" "$rate" "$minutes" "$load0" "$(cut -d' ' -f1 /proc/loadavg)" <<'PY'
import sys
path, rate, minutes, load0, load1 = sys.argv[1:]
s = {}
for line in open(path):
    if line.startswith("llmprobe_self_check_"):
        k, v = line.rsplit(" ", 1)
        s[k] = float(v)
def summary(name):
    n = s[f"{name}_count"]
    if not n:
        return f"{name}: no samples"
    buckets = sorted((float(k.split('le="')[1].split('"')[0]), v) for k, v in s.items()
                     if k.startswith(f"{name}_bucket") and "+Inf" not in k)
    def q(p):
        return next((f"<= {le * 1e3:g} ms" for le, c in buckets if c >= p * n), "> 1 s")
    return (f"{name.removeprefix('llmprobe_self_check_')}: n={n:.0f} mean {s[name + '_sum'] / n * 1e3:.2f} ms, "
            f"p50 {q(0.5)}, p90 {q(0.9)}, p99 {q(0.99)}")
print(f"self_check rate {rate}, {minutes} min, load average {load0} -> {load1}")
print(summary("llmprobe_self_check_ttft_error_seconds"))
print(summary("llmprobe_self_check_itl_error_seconds"))
print(summary("llmprobe_self_check_dispatch_lag_seconds"))
print(f"failures {s.get('llmprobe_self_check_failures_total', 0):.0f}")
PY
