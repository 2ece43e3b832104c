#!/usr/bin/env bash
# A fleet of real engines behind DNS: two llama.cpp `llama-server`s (Gemma 3 270M) on
# 127.0.0.2:PORT and 127.0.0.3:PORT with 2 and 3 slots, one name for both in a real
# dnsmasq, and the daemon discovering them with `replicas_from: {dns: …}`.
# Checked: both replicas probed with no failure under their own `replica` label; each
# replica's engine gauges are that server's own (`llamacpp:` metrics and /props slots)
# and the fleet gauges are their exact sums in one scrape round (max sequences 2 + 3);
# then one server leaves the name (dnsmasq reload) and its series go.
#
# Environment: LLMPROBE_BIN, LLMPROBE_LLAMA_SERVER, LLMPROBE_GGUF, LLMPROBE_DNSMASQ
# (written to tools.env by scripts/install-tools).
source "$(dirname "$0")/lib/common.bash"
cd "$repo_root"

need_tool LLMPROBE_LLAMA_SERVER llama-server
model=${LLMPROBE_GGUF:-}
[ -n "$model" ] && [ -f "$model" ] ||
  skip_or_fail "LLMPROBE_GGUF (the Gemma 3 270M GGUF) is not set or missing"
dnsmasq=${LLMPROBE_DNSMASQ:-dnsmasq}
"$dnsmasq" --version >/dev/null 2>&1 || skip_or_fail "dnsmasq not found (LLMPROBE_DNSMASQ)"
bin=${LLMPROBE_BIN:-$repo_root/target/release/llmprobe}
[ -x "$bin" ] || fail "llmprobe binary $bin not found (build it or set LLMPROBE_BIN)"

make_scratch

# One port free on both addresses (DNS A records carry no port).
port=$(python3 - <<'PY'
import socket
for _ in range(50):
    a = socket.socket(); a.bind(("127.0.0.2", 0)); p = a.getsockname()[1]
    b = socket.socket()
    try:
        b.bind(("127.0.0.3", p))
    except OSError:
        continue
    print(p)
    break
PY
)
[ -n "$port" ] || fail "no port free on 127.0.0.2 and 127.0.0.3 at once"
# dnsmasq binds UDP and TCP: a port free for both.
dns_port=$(python3 - <<'PY'
import socket
while True:
    u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); u.bind(("127.0.0.1", 0))
    p = u.getsockname()[1]
    t = socket.socket()
    try:
        t.bind(("127.0.0.1", p))
    except OSError:
        continue
    print(p)
    break
PY
)

start_server() { # IP SLOTS
  "$LLMPROBE_LLAMA_SERVER" --model "$model" --host "$1" --port "$port" --ctx-size 2048 \
    --parallel "$2" --threads 1 --metrics --alias gemma-3-270m >"$scratch/llama-$1.log" 2>&1 &
  stop_on_exit "$!"
}
start_server 127.0.0.2 2
start_server 127.0.0.3 3
for ip in 127.0.0.2 127.0.0.3; do
  for _ in $(seq 1 480); do
    curl -sf "http://$ip:$port/health" >/dev/null 2>&1 && break
    sleep 0.5
  done
  curl -sf "http://$ip:$port/health" >/dev/null || { tail -20 "$scratch/llama-$ip.log" >&2; fail "llama-server on $ip not ready"; }
done
say "two llama-servers on 127.0.0.2:$port (2 slots) and 127.0.0.3:$port (3 slots)"

printf '127.0.0.2 llama.test\n127.0.0.3 llama.test\n' >"$scratch/hosts"
user=(); [ "$(id -u)" = 0 ] && user=(--user=root)
"$dnsmasq" --no-daemon --no-resolv --no-hosts --conf-file=/dev/null --listen-address=127.0.0.1 \
  --bind-interfaces --pid-file= --port="$dns_port" --addn-hosts="$scratch/hosts" "${user[@]}" \
  >/dev/null 2>&1 &
dns_pid=$!
stop_on_exit "$dns_pid"
sleep 0.3
kill -0 "$dns_pid" 2>/dev/null || fail "dnsmasq exited at start (port $dns_port taken?)"

cat >"$scratch/daemon.yaml" <<EOF
engine_scrape_interval: 1s
targets:
  - name: llama-fleet
    base_url: http://127.0.0.2:$port
    model: gemma-3-270m
    rate: 1/h
    timeouts: {connect: 10s, first_token: 120s, idle: 120s, total: 300s}
    scenarios:
      - {name: chat, input_tokens: 32, output_tokens: 4}
    replica_rate: 6/min
    replicas_from:
      dns: {name: llama.test, port: $port, interval: 1s}
      resolver: 127.0.0.1:$dns_port
EOF
"$bin" daemon --config "$scratch/daemon.yaml" >"$scratch/daemon.out" 2>"$scratch/daemon.err" &
daemon_pid=$!
stop_on_exit "$daemon_pid"
wait_for_daemon "$daemon_pid" "$scratch/daemon.out" "$scratch/daemon.err"

# Polls until one daemon scrape, taken between two identical reads of both servers,
# shows each replica's engine as that server's own and the fleet as their sums.
python3 - "$url" "127.0.0.2:$port" "127.0.0.3:$port" <<'PY' || { tail -30 "$scratch/daemon.err" >&2; fail "fleet gauges"; }
import json, re, sys, time, urllib.request
url, replicas = sys.argv[1], sys.argv[2:]
slots = {replicas[0]: 2.0, replicas[1]: 3.0}

def get(u):
    with urllib.request.urlopen(u, timeout=30) as r:
        return r.read().decode()

def parse(text):
    out = []
    for line in text.splitlines():
        m = re.match(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$', line)
        if m:
            labels = dict(re.findall(r'(\w+)="([^"]*)"', m.group(2) or ""))
            out.append((m.group(1), labels, float(m.group(3))))
    return out

def val(s, name, **want):
    hits = [v for n, l, v in s if n == name and all(l.get(k) == w for k, w in want.items())]
    return hits[0] if hits else None

def server(r):
    s = parse(get(f"http://{r}/metrics"))
    return (val(s, "llamacpp:requests_processing"), val(s, "llamacpp:requests_deferred"))

deadline = time.time() + 600
last = None
while time.time() < deadline:
    before = {r: server(r) for r in replicas}
    s = parse(get(url + "/metrics"))
    after = {r: server(r) for r in replicas}
    fleet = lambda n: val(s, "llmprobe_fleet_" + n, target="llama-fleet")
    own = lambda n, r: val(s, "llmprobe_replica_engine_" + n, target="llama-fleet", replica=r)
    probed = all((val(s, "llmprobe_replica_requests_total", replica=r) or 0) >= 1 for r in replicas)
    failed = sum(v for n, l, v in s if n == "llmprobe_replica_request_failures_total")
    last = (fleet("scraped_replicas"), fleet("max_concurrent_sequences"), fleet("running_requests"),
            {r: (own("running_requests", r), own("max_concurrent_sequences", r)) for r in replicas}, failed)
    ok = (fleet("scraped_replicas") == 2 and probed and failed == 0
          and before == after
          and all(own("max_concurrent_sequences", r) == slots[r] for r in replicas)
          and all(own("running_requests", r) == before[r][0] for r in replicas)
          and fleet("max_concurrent_sequences") == sum(slots.values())
          and fleet("running_requests") == sum(before[r][0] for r in replicas)
          and fleet("waiting_requests") == sum(before[r][1] for r in replicas))
    if ok:
        print(f"fleet: 2 replicas, max sequences {fleet('max_concurrent_sequences'):.0f} = 2 + 3, "
              f"running {fleet('running_requests'):.0f}, each replica probed, 0 failures")
        sys.exit(0)
    time.sleep(0.5)
print(f"never consistent; last: {last}", file=sys.stderr)
sys.exit(1)
PY

# 127.0.0.3 leaves the name: its series go, the fleet is one replica.
printf '127.0.0.2 llama.test\n' >"$scratch/hosts"
kill -HUP "$dns_pid"
python3 - "$url" "127.0.0.3:$port" <<'PY' || fail "the replica that left kept its series"
import sys, time, urllib.request
url, gone = sys.argv[1], sys.argv[2]
for _ in range(600):
    text = urllib.request.urlopen(url + "/metrics", timeout=30).read().decode()
    if f'replica="{gone}"' not in text and 'llmprobe_fleet_replicas{model="gemma-3-270m",target="llama-fleet"} 1' in text:
        print(f"{gone} left: its series are gone, the fleet has 1 replica")
        sys.exit(0)
    time.sleep(0.2)
sys.exit(1)
PY
kill "$daemon_pid"
wait "$daemon_pid" || fail "daemon exited non-zero on SIGTERM"
say "PASS"
